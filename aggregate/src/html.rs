//! A self-contained HTML report: inline CSS, the chart's SVG inline, the Markdown report's
//! tables, and a per-session drill-down with each transcript escaped inline. No scripts, no
//! links, nothing fetched from the network.

use std::fmt::Write;

use crate::load::{Experiment, Loaded};

/// Transcripts larger than this are cut (and say so), to keep the file openable.
const TRANSCRIPT_CAP: usize = 256 * 1024;

pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// Escaped text with `**bold**` and `` `code` `` rendered.
fn inline(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in escape(s).split("**").enumerate() {
        if i % 2 == 1 {
            write!(out, "<strong>{part}</strong>").unwrap();
        } else {
            for (j, p) in part.split('`').enumerate() {
                if j % 2 == 1 { write!(out, "<code>{p}</code>").unwrap() } else { out.push_str(p) }
            }
        }
    }
    out
}

/// Converts the subset of Markdown [`crate::markdown::render`] emits.
pub fn markdown_to_html(md: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = md.lines().collect();
    let mut i = 0;
    let mut in_list = false;
    while i < lines.len() {
        let line = lines[i];
        if !line.starts_with("- ") && in_list {
            out.push_str("</ul>\n");
            in_list = false;
        }
        if let Some(h) = line.strip_prefix("### ") {
            writeln!(out, "<h3>{}</h3>", inline(h)).unwrap();
        } else if let Some(h) = line.strip_prefix("## ") {
            writeln!(out, "<h2>{}</h2>", inline(h)).unwrap();
        } else if let Some(h) = line.strip_prefix("# ") {
            writeln!(out, "<h1>{}</h1>", inline(h)).unwrap();
        } else if let Some(q) = line.strip_prefix("> ") {
            writeln!(out, "<blockquote>{}</blockquote>", inline(q)).unwrap();
        } else if let Some(item) = line.strip_prefix("- ") {
            if !in_list {
                out.push_str("<ul>\n");
                in_list = true;
            }
            writeln!(out, "<li>{}</li>", inline(item)).unwrap();
        } else if line.starts_with('|') {
            let mut rows = Vec::new();
            while i < lines.len() && lines[i].starts_with('|') {
                rows.push(lines[i]);
                i += 1;
            }
            out.push_str("<table>\n");
            for (r, row) in rows.iter().enumerate() {
                if r == 1 && row.contains("---") {
                    continue;
                }
                let cells: Vec<&str> = row.trim().trim_matches('|').split(" | ").map(str::trim).collect();
                let tag = if r == 0 { "th" } else { "td" };
                out.push_str("<tr>");
                for c in cells {
                    write!(out, "<{tag}>{}</{tag}>", inline(c)).unwrap();
                }
                out.push_str("</tr>\n");
            }
            out.push_str("</table>\n");
            continue;
        } else if !line.trim().is_empty() {
            writeln!(out, "<p>{}</p>", inline(line)).unwrap();
        }
        i += 1;
    }
    if in_list {
        out.push_str("</ul>\n");
    }
    out
}

/// Plotters' SVG carries an `xmlns` URL; inline SVG in HTML does not need it.
fn inline_svg(svg: &str) -> String {
    let s = svg.replace(" xmlns=\"http://www.w3.org/2000/svg\"", "").replace(" xmlns:xlink=\"http://www.w3.org/1999/xlink\"", "");
    match s.find("<svg") {
        Some(at) => s[at..].to_string(),
        None => s,
    }
}

const CSS: &str = "body{font-family:sans-serif;margin:2em;max-width:1400px;color:#222}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}th,td{border:1px solid #bbb;padding:4px 8px;text-align:left;font-size:13px}\
th{background:#f0f0f0}blockquote{border-left:4px solid #e0a000;margin:0.5em 0;padding:0.3em 1em;background:#fff8e0}\
code{background:#f4f4f4;padding:0 3px}details{margin:2px 0}summary{cursor:pointer;font-size:13px}\
pre{background:#f7f7f7;padding:8px;overflow:auto;max-height:480px;font-size:12px;white-space:pre-wrap}\
.chart svg{max-width:100%;height:auto}";

pub fn render(markdown: &str, svg: &str, exp: &Experiment) -> String {
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>mcp-pattern-bench report</title>\n");
    writeln!(o, "<style>{CSS}</style>\n</head>\n<body>").unwrap();
    o.push_str(&markdown_to_html(markdown));
    writeln!(o, "<h2>Chart</h2>\n<div class=\"chart\">{}</div>", inline_svg(svg)).unwrap();
    writeln!(o, "<h2>Sessions ({})</h2>", exp.sessions.len()).unwrap();
    for s in &exp.sessions {
        session(&mut o, s);
    }
    if !exp.superseded.is_empty() {
        writeln!(o, "<h2>Replaced attempts ({}), not scored</h2>", exp.superseded.len()).unwrap();
        for s in &exp.superseded {
            session(&mut o, s);
        }
    }
    o.push_str("</body>\n</html>\n");
    o
}

fn session(o: &mut String, s: &Loaded) {
    let r = &s.record;
    let validity = match &r.validity {
        records::Validity::Valid => "valid".to_string(),
        records::Validity::Invalid { reason, detail } => format!("invalid: {reason:?} — {detail}"),
    };
    let verdict = r.verifier.as_ref().map(|v| format!("{:?}", v.verdict)).unwrap_or_else(|| "not scored".into());
    writeln!(
        o,
        "<details><summary>{} · {} · {} ({}) · {} rep {} · {} · {} · turns {} · input tokens {}</summary>",
        escape(&r.model.id),
        escape(&r.module),
        escape(&r.server),
        escape(r.role.as_str()),
        escape(&r.task),
        r.rep,
        escape(&validity),
        escape(&verdict),
        r.turns,
        r.totals.input_tokens.map(|t| t.to_string()).unwrap_or_else(|| "null".into()),
    )
    .unwrap();
    if let Some(v) = &r.verifier
        && !v.reasons.is_empty()
    {
        writeln!(o, "<p>Verifier reasons: {}</p>", escape(&v.reasons.join("; "))).unwrap();
    }
    if let Some(sup) = &r.superseded {
        writeln!(o, "<p>Replaced by a rerun at {}: {}</p>", sup.at.to_rfc3339(), escape(&sup.reason)).unwrap();
    }
    writeln!(o, "<p>Record: <code>{}</code></p>", escape(&s.path.display().to_string())).unwrap();
    match std::fs::read_to_string(s.transcript_path()) {
        Ok(t) => {
            let (shown, cut) = if t.len() > TRANSCRIPT_CAP {
                let mut end = TRANSCRIPT_CAP;
                while !t.is_char_boundary(end) {
                    end -= 1;
                }
                (&t[..end], true)
            } else {
                (t.as_str(), false)
            };
            writeln!(o, "<pre>{}</pre>", escape(shown)).unwrap();
            if cut {
                writeln!(o, "<p>Transcript cut at {TRANSCRIPT_CAP} bytes of {}; the full file is beside the record.</p>", t.len()).unwrap();
            }
        }
        Err(_) => writeln!(o, "<p>No transcript beside this record.</p>").unwrap(),
    }
    o.push_str("</details>\n");
}
