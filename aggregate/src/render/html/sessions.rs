//! The session list of the report page: every session as a conversation (messages, each tool
//! call with its arguments and result, errors in red, usage per turn, the verifier's verdict and
//! reasons), with the controls the page's script filters and sorts by. Past
//! [`super::INLINE_BUDGET`] bytes, a session gets a page of its own under [`super::SESSION_DIR`].

use std::fmt::Write;

use records::{Provider, SessionRecord, Validity};

use super::{INLINE_BUDGET, SESSION_DIR, escape};
use crate::load::{Experiment, Loaded};
use crate::transcript::{self, CallResult, Item};

/// A single message, argument or result longer than this is cut (the transcript file has it
/// whole).
const BLOCK_CAP: usize = 16 * 1024;

/// The session list's section; sessions past the budget go to `pages` (file name, page).
pub(super) fn render(exp: &Experiment, report_dir: &std::path::Path, pages: &mut Vec<(String, String)>) -> String {
    let mut o = String::new();
    sessions(&mut o, &Base { exp, report_dir }, pages);
    o
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
            Some(t) => (t.to_string(), format!("≈{} input tokens (estimate)", crate::document::format::readable(t as f64))),
            None => (String::new(), "input tokens: none (oracle, no estimate recorded)".into()),
        }
    } else {
        match r.totals.input_tokens {
            Some(t) => (t.to_string(), format!("{} input tokens", crate::document::format::readable(t as f64))),
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
        let title = format!("{} · {} · {} rep {}", r.model.id, r.server, r.task, r.rep);
        let mut body_html = String::new();
        writeln!(
            body_html,
            "<p><a href=\"../report.html#s{index}\">back to the report</a></p><h1>{} · {} ({}) · {} rep {}</h1>",
            escape(&r.model.id),
            escape(&r.server),
            r.role,
            escape(&r.task),
            r.rep
        )
        .unwrap();
        body_html.push_str(&body.replace("href=\"", "href=\"../"));
        let page = super::page(&title, &body_html);
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
    let n = |x: Option<u64>| x.map(|v| crate::document::format::readable(v as f64)).unwrap_or_else(|| "not reported".into());
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
                crate::document::format::readable(*definitions_bytes as f64),
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
                f.estimated_input_tokens.map(|t| format!("≈{}", crate::document::format::readable(t as f64))).unwrap_or_else(|| "not recorded".into()),
                escape(f.input_estimate_method.as_deref().unwrap_or(&f.estimate_method))
            )
            .unwrap();
        }
    } else {
        let n = |x: Option<u64>| x.map(|v| crate::document::format::readable(v as f64)).unwrap_or_else(|| "not reported".into());
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
