//! The report a person reads: one self-contained HTML page. What was found comes first (per
//! module the verdict and the three metrics side by side, with attempted vs valid sessions),
//! then the chart at the size it was drawn, the detailed tables, the provenance, the method, and
//! every session as a conversation — filterable by model, module, arm, task and outcome and
//! sortable by tokens, turns or calls.
//!
//! Inline CSS, the chart's SVG inline, one small inline script; no link, font or script is
//! fetched, so the page reads the same offline. Without scripting every session is listed.
//! Past [`INLINE_BUDGET`] bytes of conversations, the remaining sessions get a page of their own
//! under [`SESSION_DIR`], linked from the list, so a large experiment's report stays a few MB.

use std::fmt::Write;

use records::{Provider, Role, SessionRecord, Validity};

use crate::load::{Experiment, Loaded};
use crate::markdown::{self, Sections};
use crate::metrics::{ArmMetrics, Diff, Dist, ModuleReport, Summary};
use crate::transcript::{self, CallResult, Item};

/// Bytes of rendered conversations kept in report.html; the rest go to linked pages.
pub const INLINE_BUDGET: usize = 3 * 1024 * 1024;
/// The folder (beside report.html) of the sessions' own pages.
pub const SESSION_DIR: &str = "report-sessions";
/// A single message, argument or result longer than this is cut (the transcript file has it
/// whole).
const BLOCK_CAP: usize = 16 * 1024;

/// The page, and the sessions' own pages (file name under [`SESSION_DIR`], HTML).
#[derive(Debug, Clone)]
pub struct Rendered {
    pub page: String,
    pub session_pages: Vec<(String, String)>,
}

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

/// Escaped text with `**bold**`, `` `code` `` and `[text](relative link)` rendered.
fn inline(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in escape(s).split("**").enumerate() {
        if i % 2 == 1 {
            write!(out, "<strong>{part}</strong>").unwrap();
        } else {
            for (j, p) in part.split('`').enumerate() {
                if j % 2 == 1 { write!(out, "<code>{p}</code>").unwrap() } else { out.push_str(&links(p)) }
            }
        }
    }
    out
}

/// `[text](target)` as a link, for targets beside the report (never a URL with a scheme: the
/// page fetches nothing and links nowhere off the machine).
fn links(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](").map(|m| open + m) else { break };
        let Some(close) = rest[mid..].find(')').map(|c| mid + c) else { break };
        let (label, target) = (&rest[open + 1..mid], &rest[mid + 2..close]);
        if target.contains("://") || target.contains(' ') {
            break;
        }
        out.push_str(&rest[..open]);
        write!(out, "<a href=\"{target}\">{label}</a>").unwrap();
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Converts the subset of Markdown [`crate::markdown`] emits. Tables are wrapped so that they
/// scroll sideways on a narrow screen instead of shrinking the page.
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
        } else if line.starts_with("![") {
            // The chart image: the page has the chart inline already.
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
            out.push_str("<div class=\"table-wrap\"><table>\n");
            for (r, row) in rows.iter().enumerate() {
                if r == 1 && row.contains("---") {
                    continue;
                }
                let tag = if r == 0 { "th" } else { "td" };
                out.push_str("<tr>");
                for c in cells(row) {
                    write!(out, "<{tag}>{}</{tag}>", inline(&c)).unwrap();
                }
                out.push_str("</tr>\n");
            }
            out.push_str("</table></div>\n");
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

/// A table row's cells, split at every `|` not escaped as `\|` and unescaped: an empty cell
/// (`| |`) stays a cell, so a row keeps its columns under their headers. Public so the tests read
/// the Markdown tables exactly as the HTML page does.
pub fn cells(row: &str) -> Vec<String> {
    let row = row.trim();
    let inner = row.strip_prefix('|').unwrap_or(row);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => out.last_mut().unwrap().push(chars.next().unwrap()),
            '|' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out.iter().map(|c| c.trim().to_string()).collect()
}

/// Plotters' SVG carries an `xmlns` URL; inline SVG in HTML does not need it, and the page
/// holds no URL at all.
fn inline_svg(svg: &str) -> String {
    let s = svg.replace(" xmlns=\"http://www.w3.org/2000/svg\"", "").replace(" xmlns:xlink=\"http://www.w3.org/1999/xlink\"", "");
    let s = match s.find("<svg") {
        Some(at) => s[at..].to_string(),
        None => s,
    };
    s.replacen("<svg ", "<svg role=\"img\" aria-label=\"Success rate, turns and input tokens per module and arm\" ", 1)
}

const CSS: &str = r#"
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;padding:16px 20px 48px;color:#1d1d1f;line-height:1.45;font-size:15px;max-width:1240px;margin-inline:auto}
h1{font-size:26px;margin:8px 0 4px}h2{font-size:21px;margin:32px 0 10px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:17px;margin:20px 0 8px}
a{color:#0b5cad}
.strip{color:#555;font-size:14px;margin:0 0 12px}
blockquote{border-left:4px solid #d08c00;margin:8px 0;padding:6px 12px;background:#fff7e3}
code{background:#f2f2f2;padding:0 3px;border-radius:3px;font-size:13px;overflow-wrap:anywhere}
.table-wrap{overflow-x:auto;margin:6px 0 18px;max-width:100%}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:5px 8px;text-align:left;font-size:14px;vertical-align:top}th{background:#f1f1f1;white-space:nowrap}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:14px;margin:10px 0 16px}
.card{border:1px solid #ccc;border-radius:8px;padding:12px 14px;background:#fff}
.card>header{display:flex;justify-content:space-between;align-items:baseline;gap:8px}.card h3{margin:0;font-size:18px;overflow-wrap:anywhere}
.badge{font-size:13px;font-weight:600;padding:2px 8px;border-radius:10px;white-space:nowrap;background:#e5e5e5}
.v-confirmed{background:#d8f0d8;color:#145214}.v-negative{background:#fbdada;color:#8a1212}.v-inconclusive{background:#e8e8e8;color:#333}.v-withheld{background:#fde9c8;color:#7a4a00}
.reason{font-size:14px;margin:6px 0 10px}
.metric{border-top:1px solid #eee;padding:6px 0}.metric h4{margin:0 0 2px;font-size:14px;color:#444}
.arm{display:flex;gap:6px;align-items:baseline;flex-wrap:wrap;font-size:14px}.arm .k{width:78px;color:#555;white-space:nowrap}
.arm .v{font-weight:600;font-size:16px}.ci{color:#555;font-size:13px}
.dot{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}.dot.pattern{background:#1f77b4}.dot.control{background:#e06c00}
.delta{font-size:14px;margin-top:2px}.delta.weak{color:#7a4a00}
.note{font-size:13px;color:#7a4a00;margin:6px 0 0}
.sessions-line{font-size:13px;color:#444;margin:8px 0 0}
.estimate{font-style:italic}
.chart{overflow-x:auto;max-width:100%}.chart svg{display:block;width:960px;max-width:none;height:auto}
#session-controls{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:center;margin:8px 0 12px;font-size:14px}
#session-controls select,#session-controls button{font-size:14px;padding:3px 6px}
#session-controls button[aria-pressed=true]{background:#0b5cad;color:#fff;border:1px solid #0b5cad}
details.session{border:1px solid #ccc;border-radius:6px;margin:6px 0;background:#fff}
details.session>summary{cursor:pointer;padding:8px 10px;display:flex;flex-wrap:wrap;gap:4px 12px;font-size:14px;align-items:baseline}
details.session[open]>summary{border-bottom:1px solid #ddd;background:#fafafa}
.o{font-weight:600;border-radius:4px;padding:0 6px}.o-passed{background:#d8f0d8}.o-failed{background:#fbdada}.o-could_not_score{background:#e8e0f5}.o-invalid{background:#ddd}
.sbody{display:grid;grid-template-columns:minmax(0,1fr) 300px;gap:14px;padding:10px}
@media (max-width:800px){.sbody{grid-template-columns:minmax(0,1fr)}body{padding:10px 12px 40px}.cards{grid-template-columns:minmax(0,1fr)}}
.meta{font-size:13px;border-left:3px solid #ddd;padding-left:10px}.meta dt{font-weight:600;margin-top:6px}.meta dd{margin:0;overflow-wrap:anywhere}
.msg{border:1px solid #ddd;border-radius:6px;margin:0 0 8px;padding:6px 10px;background:#fff}
.msg .who{font-size:12px;font-weight:600;color:#555;text-transform:uppercase;letter-spacing:.03em;margin-bottom:2px}
.msg.system{background:#f7f7f7}.msg.user{background:#eef5ff}.msg.assistant{background:#f4fbf2}.msg.tool{background:#fcfcfc;margin-left:18px}
.msg.error{border-color:#d33;background:#fff1f1}.msg.problem{border-color:#d33;background:#fff1f1}
.msg .usage{font-weight:400;text-transform:none;letter-spacing:0;color:#666;margin-left:6px}
.text{white-space:pre-wrap;overflow-wrap:anywhere;font-size:14px}
pre{background:#f6f6f6;padding:6px 8px;overflow:auto;max-height:420px;font-size:12.5px;white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0}
.call{margin:4px 0}.call .name{font-family:ui-monospace,monospace;font-weight:600;font-size:13px}
.err{color:#b00;font-weight:600}
"#;

/// Filters and sorting of the session list. Its state lives in the URL's fragment
/// (`#arm=pattern&outcome=failed&sort=tokens-desc`), so a filtered view can be shared and
/// reloaded.
const SCRIPT: &str = r#"
(function(){
var list=document.getElementById('session-list'),controls=document.getElementById('session-controls');
if(!list||!controls)return;
var items=[].slice.call(list.querySelectorAll('details.session'));
var selects=[].slice.call(controls.querySelectorAll('select[data-filter]'));
var buttons=[].slice.call(controls.querySelectorAll('button[data-sort]'));
var count=document.getElementById('session-count');
var sort={key:'order',desc:false};
function num(el,k){var v=el.getAttribute('data-'+k);return v===null||v===''?null:parseFloat(v);}
function cmp(a,b){
 var d=num(a,'order')-num(b,'order');if(sort.key==='order')return d;
 var x=num(a,sort.key),y=num(b,sort.key);
 if(x===null||y===null)return x===y?d:(x===null?1:-1);
 return (sort.desc?y-x:x-y)||d;}
function apply(){
 var f={},n=0;
 selects.forEach(function(s){if(s.value)f[s.getAttribute('data-filter')]=s.value;});
 items.forEach(function(el){
  var ok=Object.keys(f).every(function(k){return el.getAttribute('data-'+k)===f[k];});
  el.hidden=!ok;if(ok)n++;});
 items.slice().sort(cmp).forEach(function(el){list.appendChild(el);});
 count.textContent=n+' of '+items.length+' sessions shown';
 buttons.forEach(function(b){b.setAttribute('aria-pressed',String(b.getAttribute('data-sort')===sort.key));
  var k=b.getAttribute('data-sort');b.textContent=b.getAttribute('data-label')+(k===sort.key&&k!=='order'?(sort.desc?' \u2193':' \u2191'):'');});
 var parts=Object.keys(f).map(function(k){return k+'='+encodeURIComponent(f[k]);});
 if(sort.key!=='order')parts.push('sort='+sort.key+(sort.desc?'-desc':''));
 try{history.replaceState(null,'',parts.length?'#'+parts.join('&'):location.href.split('#')[0]);}catch(e){}}
location.hash.replace(/^#/,'').split('&').forEach(function(p){
 var kv=p.split('='),k=kv[0],v=decodeURIComponent(kv[1]||'');if(!k)return;
 if(k==='sort'){var m=v.match(/^(\w+?)(-desc)?$/);if(m&&buttons.some(function(b){return b.getAttribute('data-sort')===m[1];})){sort.key=m[1];sort.desc=!!m[2];}return;}
 selects.forEach(function(s){if(s.getAttribute('data-filter')===k&&[].some.call(s.options,function(o){return o.value===v;}))s.value=v;});});
selects.forEach(function(s){s.addEventListener('change',apply);});
buttons.forEach(function(b){b.addEventListener('click',function(){
 var k=b.getAttribute('data-sort');
 if(k===sort.key&&k!=='order')sort.desc=!sort.desc;else{sort.key=k;sort.desc=k!=='order';}
 apply();});});
controls.hidden=false;
apply();
})();
"#;

fn page_head(o: &mut String, title: &str) {
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    // Without it a phone lays the page out ~980 px wide and shrinks every table to unreadable.
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    writeln!(o, "<title>{}</title>\n<style>{CSS}</style>\n</head>", escape(title)).unwrap();
}

/// A page of `body` with the report's head (viewport, styles) and nothing fetched.
pub fn page(title: &str, body: &str) -> String {
    let mut o = String::new();
    page_head(&mut o, title);
    writeln!(o, "<body>\n<main>\n{body}</main>\n</body>\n</html>").unwrap();
    o
}

/// Renders the page; links to records and transcripts are relative to `report_dir`, where the
/// page will be written.
pub fn render(s: &Summary, sections: &Sections, svg: &str, exp: &Experiment, report_dir: &std::path::Path) -> Rendered {
    let base = Base { exp, report_dir };
    let title = format!("mcp-pattern-bench report — {}", s.experiments.join(", "));
    let mut o = String::new();
    page_head(&mut o, &title);
    o.push_str("<body>\n<header>\n");
    writeln!(o, "<h1>{}</h1>", escape(&title)).unwrap();
    writeln!(o, "<p class=\"strip\">{} · <a href=\"#provenance\">provenance</a> · <a href=\"#sessions\">sessions</a></p>", strip(s)).unwrap();
    o.push_str("</header>\n<main>\n");
    o.push_str(&markdown_to_html(&sections.notices));
    o.push_str("<section id=\"headline\">\n<h2>What was found</h2>\n");
    headline(&mut o, s);
    o.push_str("</section>\n<section id=\"chart\">\n<h2>Chart</h2>\n");
    writeln!(o, "<div class=\"chart\">{}</div>", inline_svg(svg)).unwrap();
    o.push_str("<p>The same chart as <a href=\"chart.svg\">SVG</a> and <a href=\"chart.png\">PNG</a>, beside this page.</p>\n</section>\n");
    o.push_str("<section id=\"details\">\n");
    for part in [&sections.attrition, &sections.models, &sections.oracle] {
        o.push_str(&markdown_to_html(part));
    }
    o.push_str("</section>\n<section id=\"provenance\">\n<h2>Provenance</h2>\n<div class=\"table-wrap\"><table>\n");
    for (what, value) in markdown::provenance_rows(s) {
        writeln!(o, "<tr><th>{}</th><td>{}</td></tr>", escape(what), inline(&value)).unwrap();
    }
    o.push_str("</table></div>\n</section>\n<section id=\"method\">\n");
    o.push_str(&markdown_to_html(&sections.method));
    o.push_str("</section>\n");
    let mut pages = Vec::new();
    sessions(&mut o, &base, &mut pages);
    o.push_str("</main>\n");
    writeln!(o, "<script>{SCRIPT}</script>").unwrap();
    o.push_str("</body>\n</html>\n");
    Rendered { page: o, session_pages: pages }
}

/// One line under the title: when, which build, k, which models.
fn strip(s: &Summary) -> String {
    let p = &s.provenance;
    let mut parts = Vec::new();
    match p.started_at.or(p.first_session_at) {
        Some(t) => parts.push(format!("run {}", t.format("%Y-%m-%d %H:%M UTC"))),
        None => parts.push("run date not recorded".into()),
    }
    let commit = p.git_commit.clone().or_else(|| p.binaries.first().and_then(|b| b.commit.clone()));
    let dirty = p.git_dirty.or_else(|| p.binaries.first().and_then(|b| b.dirty));
    parts.push(match (commit, dirty) {
        (Some(c), d) => format!(
            "commit <code>{}</code>{}",
            escape(&c.chars().take(12).collect::<String>()),
            match d {
                Some(true) => " (uncommitted changes)",
                Some(false) => " (clean)",
                None => "",
            }
        ),
        (None, _) => "commit not recorded".into(),
    });
    parts.push(match p.k {
        Some(k) => format!("k = {k}"),
        None => "k not recorded".into(),
    });
    let models: Vec<String> = p.models.iter().map(|m| escape(&m.id)).collect();
    if !models.is_empty() {
        parts.push(format!("models: {}", models.join(", ")));
    }
    parts.push(format!("preflight {}", p.preflight.status.as_str()));
    parts.join(" · ")
}

fn arm_value(a: &Option<ArmMetrics>, value: impl Fn(&ArmMetrics) -> Option<(String, String)>) -> (String, String) {
    match a {
        None => ("no sessions".into(), String::new()),
        Some(a) => value(a).unwrap_or_else(|| ("—".into(), String::new())),
    }
}

fn arm_row(o: &mut String, role: Role, (v, ci): (String, String)) {
    writeln!(
        o,
        "<div class=\"arm\"><span class=\"k\"><span class=\"dot {role}\"></span>{role}</span><span class=\"v\">{}</span><span class=\"ci\">{}</span></div>",
        escape(&v),
        escape(&ci)
    )
    .unwrap();
}

fn diff_text(d: &Option<Diff>, f: fn(f64) -> String, pct: fn(f64) -> String) -> String {
    match d {
        None => "—".into(),
        Some(d) => {
            let mut s = f(d.mean);
            if let Some(i) = d.ci95 {
                write!(s, " [{}, {}]", f(i.lo), f(i.hi)).unwrap();
            }
            if let Some(r) = d.relative {
                write!(s, " ({}", pct(r)).unwrap();
                if let Some(i) = d.relative_ci95 {
                    write!(s, " [{}, {}]", pct(i.lo), pct(i.hi)).unwrap();
                }
                s.push(')');
            }
            s
        }
    }
}

fn signed_pct(x: f64) -> String {
    if x > 0.0 { format!("+{:.1}%", x * 100.0) } else { format!("{:.1}%", x * 100.0) }
}

fn signed(x: f64) -> String {
    let r = crate::chart::readable(x);
    if x > 0.0 { format!("+{r}") } else { r }
}

fn mean_ci(d: &Dist) -> Option<(String, String)> {
    let m = d.mean?;
    let ci = d.mean_ci95.map(|i| format!("[{}, {}]", crate::chart::readable(i.lo), crate::chart::readable(i.hi))).unwrap_or_default();
    let missing = if d.missing > 0 { format!(" ({} null)", d.missing) } else { String::new() };
    Some((crate::chart::readable(m), format!("{ci}{missing}")))
}

fn headline(o: &mut String, s: &Summary) {
    if s.models.is_empty() {
        o.push_str("<p>No model sessions: the oracle's scripted plans only, no model. Calls are counted; tokens are <strong>estimates</strong> (bytes / 4), never measurements.</p>\n<div class=\"cards\">\n");
        for f in &s.oracle_floors {
            // The oracle table's per-session values, as the chart shows them.
            let mean = |role: Role, pick: fn(&crate::metrics::OraclePerSession) -> Option<f64>| f.per_session_of(role, pick).ok();
            let server = |role: Role| f.server(role);
            writeln!(
                o,
                "<article class=\"card\"><header><h3>{}</h3><span class=\"badge\">oracle plan</span></header>",
                escape(&crate::metrics::Comparison::label(&f.module, f.comparison.as_ref()))
            )
            .unwrap();
            writeln!(
                o,
                "<p class=\"reason\">pattern <code>{}</code> vs control <code>{}</code></p>",
                escape(&server(Role::Pattern)),
                escape(&server(Role::Control))
            )
            .unwrap();
            for (title, pick, estimate) in [
                (
                    "tool calls per session (counted)",
                    (|m: &crate::metrics::OraclePerSession| m.calls) as fn(&crate::metrics::OraclePerSession) -> Option<f64>,
                    false,
                ),
                ("input tokens per session — estimate, not a measurement", |m| m.estimated_input_tokens, true),
            ] {
                writeln!(o, "<div class=\"metric{}\"><h4>{title}</h4>", if estimate { " estimate" } else { "" }).unwrap();
                for role in [Role::Pattern, Role::Control] {
                    let v = mean(role, pick).map(|v| format!("{}{}", if estimate { "≈" } else { "" }, crate::chart::readable(v))).unwrap_or_else(|| "—".into());
                    arm_row(o, role, (v, String::new()));
                }
                if let (Some(p), Some(c)) = (mean(Role::Pattern, pick), mean(Role::Control, pick))
                    && c > 0.0
                {
                    writeln!(o, "<div class=\"delta\">pattern − control: {} ({})</div>", signed(p - c), signed_pct(p / c - 1.0)).unwrap();
                }
                o.push_str("</div>\n");
            }
            let sessions: usize = f.rows.iter().map(|r| r.sessions).sum();
            let valid: usize = f.rows.iter().map(|r| r.valid).sum();
            let passed: usize = f.rows.iter().map(|r| r.passed).sum();
            writeln!(o, "<p class=\"sessions-line\">valid / attempted sessions: {valid}/{sessions}, {passed} passed the verifier</p></article>").unwrap();
        }
        o.push_str("</div>\n");
        return;
    }
    for m in &s.models {
        writeln!(o, "<h3>Model <code>{}</code> ({})</h3>\n<div class=\"cards\">", escape(&m.model), m.provider).unwrap();
        for x in &m.modules {
            card(o, x);
        }
        o.push_str("</div>\n");
    }
}

fn card(o: &mut String, x: &ModuleReport) {
    let v = x.verdict.as_str();
    writeln!(
        o,
        "<article class=\"card\" data-module=\"{}\"><header><h3>{}</h3><span class=\"badge v-{v}\">{v}</span></header>",
        escape(&x.module),
        escape(&crate::metrics::Comparison::label(&x.module, x.comparison.as_ref()))
    )
    .unwrap();
    writeln!(o, "<p class=\"reason\">{}.</p>", escape(&x.verdict_reason)).unwrap();
    let weak = markdown::over_failures(x);
    o.push_str("<div class=\"metric\"><h4>success rate [Wilson 95%]</h4>\n");
    for (role, a) in [(Role::Pattern, &x.pattern), (Role::Control, &x.control)] {
        let value = arm_value(a, |a| {
            let r = a.success.rate?;
            let ci = a.success.wilson95.map(|i| format!("[{:.1}%, {:.1}%]", i.lo * 100.0, i.hi * 100.0)).unwrap_or_default();
            Some((format!("{:.1}%", r * 100.0), format!("{} ({}/{})", ci, a.success.successes, a.success.n)))
        });
        arm_row(o, role, value);
    }
    writeln!(
        o,
        "<div class=\"delta\">difference {}</div></div>",
        escape(diff_text(&x.paired.success, signed_pct, signed_pct).split(" (").next().unwrap_or("—"))
    )
    .unwrap();
    for (title, pick, all, both) in [
        ("turns per session, mean [95% CI]", (|a: &ArmMetrics| &a.turns) as fn(&ArmMetrics) -> &Dist, &x.paired.turns, &x.paired.both_passed.turns),
        ("input tokens per session, mean [95% CI]", |a| &a.input_tokens, &x.paired.input_tokens, &x.paired.both_passed.input_tokens),
    ] {
        writeln!(o, "<div class=\"metric\"><h4>{title}</h4>").unwrap();
        for (role, a) in [(Role::Pattern, &x.pattern), (Role::Control, &x.control)] {
            arm_row(o, role, arm_value(a, |a| mean_ci(pick(a))));
        }
        let class = if weak.is_some() { "delta weak" } else { "delta" };
        writeln!(
            o,
            "<div class=\"{class}\">difference, all {} pairs: {}{}</div>",
            x.paired.pairs_used,
            escape(&diff_text(all, signed, signed_pct)),
            if weak.is_some() { " — over failures, not a saving" } else { "" }
        )
        .unwrap();
        let b = &x.paired.both_passed;
        writeln!(o, "<div class=\"delta\">difference, the {} pairs where both passed: {}</div></div>", b.pairs, escape(&diff_text(both, signed, signed_pct)))
            .unwrap();
    }
    let line = |a: &Option<ArmMetrics>| match a {
        None => "no sessions".to_string(),
        Some(a) if a.invalid.is_empty() => format!("{}/{}", a.valid, a.attempted),
        Some(a) => format!("{}/{} ({})", a.valid, a.attempted, a.invalid.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ")),
    };
    writeln!(o, "<p class=\"sessions-line\">valid / attempted sessions: pattern {} · control {}</p>", escape(&line(&x.pattern)), escape(&line(&x.control)))
        .unwrap();
    // The few-passes notices repeat the verdict's reason and the differences' labels; the
    // detailed tables below keep them.
    for n in x.notices.iter().filter(|n| !(n.starts_with("Model too weak") || n.starts_with("The pattern passed in"))) {
        writeln!(o, "<p class=\"note\">{}</p>", escape(n)).unwrap();
    }
    o.push_str("</article>\n");
}

/// The outcome a session's filter and badge use.
fn outcome(r: &SessionRecord) -> &'static str {
    match (&r.validity, r.verifier.as_ref().map(|v| v.verdict)) {
        (Validity::Invalid { .. }, _) => "invalid",
        (_, Some(records::Verdict::Passed)) => "passed",
        (_, Some(records::Verdict::Failed)) => "failed",
        _ => "could_not_score",
    }
}

fn outcome_label(o: &str) -> &'static str {
    match o {
        "passed" => "passed",
        "failed" => "failed",
        "could_not_score" => "could not score",
        _ => "invalid",
    }
}

/// The experiment and where its report is written.
struct Base<'a> {
    exp: &'a Experiment,
    report_dir: &'a std::path::Path,
}

fn sessions(o: &mut String, base: &Base, pages: &mut Vec<(String, String)>) {
    let exp = base.exp;
    let all = &exp.sessions;
    writeln!(o, "<section id=\"sessions\">\n<h2>Sessions ({})</h2>", all.len()).unwrap();
    o.push_str("<p>Every recorded session, as the model (or the oracle) saw it: messages, each tool call with its arguments and result, errors in red, usage per turn, and the verifier's verdict and reasons beside it.</p>\n");
    o.push_str("<noscript><p>Filters and sorting need JavaScript; every session is listed below.</p></noscript>\n");
    let distinct = |f: fn(&SessionRecord) -> String| {
        let set: std::collections::BTreeSet<String> = all.iter().map(|s| f(&s.record)).collect();
        set.into_iter().collect::<Vec<_>>()
    };
    o.push_str("<div id=\"session-controls\" hidden>\n");
    let select = |o: &mut String, key: &str, label: &str, values: Vec<(String, String)>| {
        writeln!(o, "<label>{label} <select data-filter=\"{key}\"><option value=\"\">all</option>").unwrap();
        for (v, text) in values {
            writeln!(o, "<option value=\"{}\">{}</option>", escape(&v), escape(&text)).unwrap();
        }
        o.push_str("</select></label>\n");
    };
    let same = |v: Vec<String>| v.into_iter().map(|x| (x.clone(), x)).collect::<Vec<_>>();
    select(o, "model", "model", same(distinct(|r| r.model.id.clone())));
    select(o, "module", "module", same(distinct(|r| r.module.clone())));
    select(o, "arm", "arm", same(distinct(|r| r.role.as_str().to_string())));
    select(o, "task", "task", same(distinct(|r| r.task.clone())));
    select(o, "outcome", "outcome", ["passed", "failed", "could_not_score", "invalid"].iter().map(|x| (x.to_string(), outcome_label(x).to_string())).collect());
    o.push_str("<span>sort: ");
    for (key, label) in [("order", "as recorded"), ("tokens", "input tokens"), ("turns", "turns"), ("calls", "tool calls")] {
        write!(o, "<button type=\"button\" data-sort=\"{key}\" data-label=\"{label}\" aria-pressed=\"{}\">{label}</button> ", key == "order").unwrap();
    }
    o.push_str("</span>\n<span id=\"session-count\"></span>\n</div>\n<div id=\"session-list\">\n");
    let mut budget = INLINE_BUDGET;
    for (i, s) in all.iter().enumerate() {
        session(o, base, s, i, &mut budget, pages, false);
    }
    o.push_str("</div>\n");
    if !exp.superseded.is_empty() {
        writeln!(o, "<h2>Replaced attempts ({}), not scored</h2>\n<div>", exp.superseded.len()).unwrap();
        for (i, s) in exp.superseded.iter().enumerate() {
            session(o, base, s, all.len() + i, &mut budget, pages, true);
        }
        o.push_str("</div>\n");
    }
    o.push_str("</section>\n");
}

/// `path` relative to `dir` with `/` separators (for links and file names); absolute when it is
/// not under `dir` (a merged report's parts).
fn relative(dir: &std::path::Path, path: &std::path::Path) -> String {
    let (dir, path) = (std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()), std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()));
    match path.strip_prefix(&dir) {
        Ok(rel) => rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/"),
        Err(_) => path.display().to_string(),
    }
}

/// A percent-encoded relative link to a file beside the report.
fn href(rel: &str) -> String {
    let mut out = String::new();
    for b in rel.bytes() {
        if b.is_ascii_alphanumeric() || b"-_./~".contains(&b) {
            out.push(b as char);
        } else {
            write!(out, "%{b:02X}").unwrap();
        }
    }
    out
}

fn session(o: &mut String, base: &Base, s: &Loaded, index: usize, budget: &mut usize, pages: &mut Vec<(String, String)>, replaced: bool) {
    let r = &s.record;
    let oracle = r.model.provider == Provider::Oracle;
    let out = outcome(r);
    let calls = r.tool_calls.len();
    let errors = r.tool_calls.iter().filter(|c| c.is_error || c.invalid_arguments || c.unknown_tool).count();
    // An oracle session has no usage: it is sorted and shown by its labelled estimate.
    let (tokens, tokens_text) = if oracle {
        match r.oracle.as_ref().and_then(|f| f.estimated_input_tokens) {
            Some(t) => (t.to_string(), format!("≈{} input tokens (estimate)", crate::chart::readable(t as f64))),
            None => (String::new(), "input tokens: none (oracle, no estimate recorded)".into()),
        }
    } else {
        match r.totals.input_tokens {
            Some(t) => (t.to_string(), format!("{} input tokens", crate::chart::readable(t as f64))),
            None => (String::new(), "input tokens: not reported".into()),
        }
    };
    let turns_text = if oracle { format!("oracle plan, {}", plural(calls, "call")) } else { plural(r.turns, "turn") };
    let turns = if oracle { String::new() } else { r.turns.to_string() };
    writeln!(
        o,
        "<details class=\"session\" id=\"s{index}\" data-order=\"{index}\" data-model=\"{}\" data-module=\"{}\" data-arm=\"{}\" data-task=\"{}\" data-outcome=\"{out}\" data-tokens=\"{tokens}\" data-turns=\"{turns}\" data-calls=\"{calls}\">",
        escape(&r.model.id),
        escape(&r.module),
        r.role,
        escape(&r.task)
    )
    .unwrap();
    writeln!(
        o,
        "<summary><span class=\"o o-{out}\">{}</span><span>{} · {} ({})</span><span><code>{}</code> rep {}</span><span>{}</span><span>{}</span><span>{}{}</span><span>{}</span></summary>",
        if replaced { "replaced" } else { outcome_label(out) },
        escape(&r.module),
        r.role,
        escape(&r.server),
        escape(&r.task),
        r.rep,
        escape(&turns_text),
        escape(&tokens_text),
        plural(calls, "call"),
        if errors > 0 { format!(", <span class=\"err\">{}</span>", plural(errors, "error")) } else { String::new() },
        escape(&r.model.id)
    )
    .unwrap();
    let body = session_body(base, s);
    if body.len() <= *budget {
        *budget -= body.len();
        o.push_str(&body);
    } else {
        // Past the budget the conversation gets a page of its own, beside the report.
        *budget = 0;
        let file = format!("{}.html", relative(&base.exp.dir, &s.path).trim_end_matches(".json").replace('/', "--"));
        let file: String = file.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
        writeln!(o, "<div class=\"sbody\"><p>This conversation is on a page of its own (the report keeps {} MB of conversations inline): <a href=\"{SESSION_DIR}/{}\">open it</a>.</p></div>", INLINE_BUDGET / (1024 * 1024), href(&file)).unwrap();
        let mut page = String::new();
        page_head(&mut page, &format!("{} · {} · {} rep {}", r.model.id, r.server, r.task, r.rep));
        writeln!(
            page,
            "<body><p><a href=\"../report.html#s{index}\">back to the report</a></p><h1>{} · {} ({}) · {} rep {}</h1>",
            escape(&r.model.id),
            escape(&r.server),
            r.role,
            escape(&r.task),
            r.rep
        )
        .unwrap();
        page.push_str(&body.replace("href=\"", "href=\"../"));
        page.push_str("</body></html>\n");
        pages.push((file, page));
    }
    o.push_str("</details>\n");
}

/// "1 call", "2 calls".
fn plural(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

/// What cuts a long text, and says how much was left out.
fn capped(s: &str) -> String {
    if s.len() <= BLOCK_CAP {
        return escape(s);
    }
    let mut end = BLOCK_CAP;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n<em>… {} more bytes in the transcript file</em>", escape(&s[..end]), s.len() - end)
}

fn session_body(base: &Base, s: &Loaded) -> String {
    let r = &s.record;
    let mut o = String::from("<div class=\"sbody\"><div class=\"conversation\">\n");
    match std::fs::read_to_string(s.transcript_path()) {
        Ok(t) => conversation(&mut o, r, &transcript::parse(&t)),
        Err(_) => o.push_str("<p>No transcript beside this record.</p>\n"),
    }
    o.push_str("</div>\n");
    meta(&mut o, base, s);
    o.push_str("</div>\n");
    o
}

fn usage_of(r: &SessionRecord, turn: u32) -> String {
    let Some(t) = r.turn_records.iter().find(|t| t.index == turn) else { return String::new() };
    let n = |x: Option<u64>| x.map(|v| crate::chart::readable(v as f64)).unwrap_or_else(|| "not reported".into());
    let mut s = format!("input {} (cached {}) · output {}", n(t.usage.prompt_tokens), n(t.usage.cached_prompt_tokens), n(t.usage.completion_tokens));
    write!(s, " · {:.0} ms", t.latency_ms).unwrap();
    if t.retries > 0 {
        write!(s, " · {}", plural(t.retries as usize, "retry").replace("retrys", "retries")).unwrap();
    }
    s
}

fn conversation(o: &mut String, r: &SessionRecord, c: &transcript::Conversation) {
    let oracle = r.model.provider == Provider::Oracle;
    if oracle {
        o.push_str("<p class=\"note\">An oracle session: the task's scripted plan replayed through this arm, no model. It has no turns and no usage; its token figure is an estimate (bytes / 4).</p>\n");
    }
    for item in &c.items {
        match item {
            Item::System(t) => {
                let first = t.lines().next().unwrap_or("");
                writeln!(o, "<div class=\"msg system\"><div class=\"who\">system</div><details><summary>{}</summary><div class=\"text\">{}</div></details></div>", escape(first), capped(t)).unwrap();
            }
            Item::User(t) => writeln!(o, "<div class=\"msg user\"><div class=\"who\">{}</div><div class=\"text\">{}</div></div>", if oracle { "task" } else { "user" }, capped(t)).unwrap(),
            Item::Offered { functions, definitions_bytes } => writeln!(
                o,
                "<div class=\"msg system\"><div class=\"who\">functions offered</div><div class=\"text\">{} functions, {} bytes of definitions (in the transcript file): {}</div></div>",
                functions.len(),
                crate::chart::readable(*definitions_bytes as f64),
                functions.iter().map(|f| format!("<code>{}</code>", escape(f))).collect::<Vec<_>>().join(" ")
            )
            .unwrap(),
            Item::Assistant { turn, text, calls } => {
                writeln!(o, "<div class=\"msg assistant\"><div class=\"who\">assistant · turn {turn}<span class=\"usage\">{}</span></div>", escape(&usage_of(r, *turn))).unwrap();
                if let Some(t) = text.as_deref().filter(|t| !t.is_empty()) {
                    writeln!(o, "<div class=\"text\">{}</div>", capped(t)).unwrap();
                }
                for call in calls {
                    let args = transcript::pretty(&call.arguments);
                    let valid = serde_json::from_str::<serde_json::Value>(&call.arguments).is_ok_and(|v| v.is_object());
                    writeln!(
                        o,
                        "<div class=\"call\">calls <span class=\"name\">{}</span>{}<pre>{}</pre></div>",
                        escape(&call.name),
                        if valid { String::new() } else { " <span class=\"err\">arguments are not a JSON object</span>".into() },
                        capped(&args)
                    )
                    .unwrap();
                }
                o.push_str("</div>\n");
            }
            Item::Call(call) => call_result(o, call, oracle),
            Item::Answer(t) => writeln!(o, "<div class=\"msg assistant\"><div class=\"who\">answer</div><div class=\"text\">{}</div></div>", capped(t)).unwrap(),
            Item::Problem { turn, title, detail } => writeln!(
                o,
                "<div class=\"msg problem\"><div class=\"who\">{}{}</div><div class=\"text\">{}</div></div>",
                escape(title),
                turn.map(|t| format!(" · turn {t}")).unwrap_or_default(),
                capped(detail)
            )
            .unwrap(),
            Item::Other { event, body } => {
                writeln!(o, "<div class=\"msg system\"><div class=\"who\">event {}</div><details><summary>as recorded</summary><pre>{}</pre></details></div>", escape(event), capped(body)).unwrap()
            }
        }
    }
    if let Some(f) = &r.failed_turn {
        writeln!(
            o,
            "<div class=\"msg problem\"><div class=\"who\">turn {} got no answer · {} retries</div><div class=\"text\">{}</div></div>",
            f.index,
            f.retries,
            capped(&f.detail)
        )
        .unwrap();
    }
    if c.unreadable > 0 {
        writeln!(o, "<p class=\"note\">{} lines of the transcript were not JSON and are not shown.</p>", c.unreadable).unwrap();
    }
}

fn call_result(o: &mut String, c: &CallResult, oracle: bool) {
    let error = c.is_error || c.invalid_arguments || c.unknown_tool || c.transport_error.is_some();
    let mut who = if oracle { format!("oracle call · {}", escape(&c.name)) } else { format!("result of {}", escape(&c.name)) };
    if let Some(ms) = c.latency_ms {
        write!(who, " · {ms:.0} ms").unwrap();
    }
    let flag = if c.unknown_tool {
        " · <span class=\"err\">refused: no such function</span>"
    } else if c.invalid_arguments {
        " · <span class=\"err\">refused: arguments not usable</span>"
    } else if c.transport_error.is_some() {
        " · <span class=\"err\">transport failed</span>"
    } else if c.is_error {
        " · <span class=\"err\">error</span>"
    } else {
        ""
    };
    writeln!(o, "<div class=\"msg tool{}\"><div class=\"who\">{who}{flag}</div>", if error { " error" } else { "" }).unwrap();
    if oracle && let Some(args) = &c.arguments {
        writeln!(o, "<div class=\"call\">arguments<pre>{}</pre></div>", capped(&transcript::pretty(args))).unwrap();
    }
    if let Some(t) = &c.transport_error {
        writeln!(o, "<div class=\"text\">{}</div>", capped(t)).unwrap();
    }
    if let Some(res) = &c.result {
        writeln!(o, "<pre>{}</pre>", capped(&transcript::pretty(res))).unwrap();
    }
    o.push_str("</div>\n");
}

fn meta(o: &mut String, base: &Base, s: &Loaded) {
    let r = &s.record;
    o.push_str("<dl class=\"meta\">\n");
    let verdict = match (&r.validity, &r.verifier) {
        (Validity::Invalid { reason, detail }, _) => format!("<span class=\"err\">invalid: {reason}</span> — {}", escape(detail)),
        (_, Some(v)) => escape(outcome_label(outcome(r))).to_string() + &format!(" ({:.0} ms)", v.elapsed_ms),
        (_, None) => "not scored".into(),
    };
    writeln!(o, "<dt>verifier</dt><dd>{verdict}</dd>").unwrap();
    if let Some(v) = &r.verifier
        && !v.reasons.is_empty()
    {
        o.push_str("<dt>verifier's reasons</dt><dd><ul>");
        for reason in &v.reasons {
            write!(o, "<li>{}</li>", escape(reason)).unwrap();
        }
        o.push_str("</ul></dd>\n");
    }
    let flags: Vec<&str> = [
        (r.turn_cap_hit, "turn cap hit"),
        (r.context_exceeded, "context window outgrown"),
        (r.tool_call_as_text, "a call written as text"),
        (r.unparseable_output, "the endpoint could not parse the output"),
    ]
    .into_iter()
    .filter_map(|(on, what)| on.then_some(what))
    .collect();
    if !flags.is_empty() {
        writeln!(o, "<dt>flags (valid failures)</dt><dd class=\"err\">{}</dd>", flags.join(", ")).unwrap();
    }
    if r.model.provider == Provider::Oracle {
        if let Some(f) = &r.oracle {
            writeln!(
                o,
                "<dt>oracle floor</dt><dd>{} calls · {} B definitions · {} B arguments · {} B results</dd><dt>estimated input tokens</dt><dd class=\"estimate\">{} — an estimate ({})</dd>",
                f.calls,
                f.schema_bytes,
                f.args_bytes,
                f.result_bytes,
                f.estimated_input_tokens.map(|t| format!("≈{}", crate::chart::readable(t as f64))).unwrap_or_else(|| "not recorded".into()),
                escape(f.input_estimate_method.as_deref().unwrap_or(&f.estimate_method))
            )
            .unwrap();
        }
    } else {
        let n = |x: Option<u64>| x.map(|v| crate::chart::readable(v as f64)).unwrap_or_else(|| "not reported".into());
        let t = &r.totals;
        writeln!(
            o,
            "<dt>usage</dt><dd>{} turns of {} · input {} (cached {}) · output {} (reasoning {})</dd>",
            r.turns,
            r.turn_cap,
            n(t.input_tokens),
            n(t.cached_input_tokens),
            n(t.output_tokens),
            n(t.reasoning_tokens)
        )
        .unwrap();
        if let Some(retries) = r.provider_retries {
            writeln!(o, "<dt>provider retries</dt><dd>{retries}</dd>").unwrap();
        }
    }
    let secs = (r.ended_at - r.started_at).num_milliseconds() as f64 / 1000.0;
    writeln!(o, "<dt>when</dt><dd>{} · {secs:.1} s</dd>", r.started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)).unwrap();
    if let Some(a) = r.attempt {
        writeln!(o, "<dt>attempt</dt><dd>{a}</dd>").unwrap();
    }
    if let Some(sup) = &r.superseded {
        writeln!(o, "<dt>replaced</dt><dd>by a rerun at {}: {}</dd>", sup.at.to_rfc3339(), escape(&sup.reason)).unwrap();
    }
    if let Some(a) = &r.final_answer {
        writeln!(o, "<dt>final answer</dt><dd>{}</dd>", capped(a)).unwrap();
    }
    let rec = relative(base.report_dir, &s.path);
    let tr = relative(base.report_dir, &s.transcript_path());
    writeln!(o, "<dt>files</dt><dd><a href=\"{}\">record</a> · <a href=\"{}\">transcript</a></dd>", href(&rec), href(&tr)).unwrap();
    o.push_str("</dl>\n");
}
