//! The session list of the report page: every session as a conversation (messages, each tool
//! call with its arguments and result, errors in red, usage per turn, the verifier's verdict and
//! reasons), with the controls the page's script filters and sorts by. Past
//! [`super::INLINE_BUDGET`] bytes, a session gets a page of its own under [`super::SESSION_DIR`].
//!
//! The markup is in `templates/sessions.html` (the list) and `templates/session.html` (one
//! conversation); this file only gathers what they show — texts, numbers, labels, pretty-printed
//! JSON and percent-encoded links — and askama escapes every value it writes.

use askama::Template;
use records::{OracleFloor, Provider, Role, SessionRecord, Validity};

use super::conversation::{Capped, ConversationView, ItemView, capped, conversation_view};
use super::{INLINE_BUDGET, SESSION_DIR};
use crate::document::format::readable;
use crate::load::{Experiment, Loaded};
use crate::transcript;

const RENDER: &str = "rendering to a String cannot fail";

/// The session list's section; sessions past the budget go to `pages` (file name, page), and
/// where each scored session's conversation ended up goes to `links` (record path, link relative
/// to the report).
pub(super) fn render(
    exp: &Experiment,
    report_dir: &std::path::Path,
    pages: &mut Vec<(String, String)>,
    links: &mut Vec<(std::path::PathBuf, String)>,
) -> String {
    let base = Base { exp, report_dir };
    let mut budget = INLINE_BUDGET;
    let all = &exp.sessions;
    let sessions: Vec<SessionView> = all.iter().enumerate().map(|(i, s)| session(&base, s, i, &mut budget, pages, false)).collect();
    for (s, view) in all.iter().zip(&sessions) {
        let link = match &view.body {
            Placement::Inline(_) => format!("report.html#s{}", view.index),
            Placement::OwnPage { href, .. } => href.clone(),
        };
        links.push((s.path.clone(), link));
    }
    let replaced = exp.superseded.iter().enumerate().map(|(i, s)| session(&base, s, all.len() + i, &mut budget, pages, true)).collect();
    SessionList { filters: filters(all), sessions, replaced }.render().expect(RENDER)
}

/// The experiment and where its report is written.
struct Base<'a> {
    exp: &'a Experiment,
    report_dir: &'a std::path::Path,
}

#[derive(Template)]
#[template(path = "sessions.html")]
struct SessionList<'a> {
    filters: Vec<Filter<'a>>,
    sessions: Vec<SessionView<'a>>,
    /// Attempts a rerun replaced: listed apart, not scored.
    replaced: Vec<SessionView<'a>>,
}

/// A `<select>` the script filters by: the `data-*` attribute it compares and its options
/// (value, text).
struct Filter<'a> {
    key: &'static str,
    label: &'static str,
    options: Vec<(&'a str, &'a str)>,
}

/// A session's outcome, as its filter and badge name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed,
    CouldNotScore,
    Invalid,
}

impl Outcome {
    const ALL: [Self; 4] = [Self::Passed, Self::Failed, Self::CouldNotScore, Self::Invalid];

    fn of(r: &SessionRecord) -> Self {
        match (&r.validity, r.verifier.as_ref().map(|v| v.verdict)) {
            (Validity::Invalid { .. }, _) => Self::Invalid,
            (_, Some(records::Verdict::Passed)) => Self::Passed,
            (_, Some(records::Verdict::Failed)) => Self::Failed,
            _ => Self::CouldNotScore,
        }
    }

    /// The value of `data-outcome` and of the filter's option.
    fn key(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::CouldNotScore => "could_not_score",
            Self::Invalid => "invalid",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::CouldNotScore => "could not score",
            other => other.key(),
        }
    }
}

/// One `<details class="session">`: the attributes the script reads, the summary line, and the
/// conversation or a link to its page.
struct SessionView<'a> {
    index: usize,
    model: &'a str,
    module: &'a str,
    arm: Role,
    server: &'a str,
    task: &'a str,
    rep: u32,
    outcome: Outcome,
    /// The outcome's label, or "replaced".
    badge: &'static str,
    /// What the session is sorted by: a model's input tokens, an oracle's estimate.
    tokens: Option<u64>,
    /// None for an oracle session, which has no turns.
    turns: Option<usize>,
    calls: usize,
    turns_text: String,
    tokens_text: String,
    calls_text: String,
    errors_text: Option<String>,
    body: Placement,
}

enum Placement {
    /// The conversation, rendered from `session.html`.
    Inline(String),
    /// Past the budget: a link (percent-encoded) to its page.
    OwnPage { href: String, inline_mb: usize },
}

/// A session's conversation and metadata; with `page`, the body of a page of its own.
#[derive(Template)]
#[template(path = "session.html")]
struct SessionBody<'a> {
    page: Option<PageHead<'a>>,
    /// What the links to the record and the transcript start with: `../` on a page of its own.
    up: &'static str,
    /// None when there is no transcript beside the record.
    conversation: Option<ConversationView<'a>>,
    meta: MetaView<'a>,
}

/// The heading of a session's own page, with its way back to the report.
struct PageHead<'a> {
    index: usize,
    model: &'a str,
    server: &'a str,
    arm: Role,
    task: &'a str,
    rep: u32,
}

struct MetaView<'a> {
    verdict: Verdict<'a>,
    reasons: &'a [String],
    flags: Vec<&'static str>,
    /// None for an oracle session without a recorded floor.
    usage: Option<UsageView<'a>>,
    /// RFC 3339, to the second.
    started: String,
    seconds: String,
    attempt: Option<u32>,
    /// When a rerun replaced this attempt (RFC 3339), and why.
    replaced: Option<(String, &'a str)>,
    final_answer: Option<Capped<'a>>,
    /// Percent-encoded links, relative to the report.
    record: String,
    transcript: String,
}

enum Verdict<'a> {
    Invalid {
        reason: String,
        detail: &'a str,
    },
    /// `ms`: the verifier's time, rounded.
    Scored {
        outcome: Outcome,
        ms: String,
    },
    NotScored,
}

enum UsageView<'a> {
    Oracle(OracleView<'a>),
    /// Token counts readable, "not reported" where the provider reported none.
    Model {
        turns: usize,
        turn_cap: u32,
        input: String,
        cached: String,
        output: String,
        reasoning: String,
        retries: Option<u32>,
    },
}

struct OracleView<'a> {
    calls: usize,
    schema_bytes: usize,
    args_bytes: usize,
    result_bytes: usize,
    estimate: String,
    method: &'a str,
}

fn filters(all: &[Loaded]) -> Vec<Filter<'_>> {
    let distinct = |f: fn(&SessionRecord) -> &str| {
        let set: std::collections::BTreeSet<&str> = all.iter().map(|s| f(&s.record)).collect();
        set.into_iter().map(|x| (x, x)).collect()
    };
    vec![
        Filter { key: "model", label: "model", options: distinct(|r| &r.model.id) },
        Filter { key: "module", label: "module", options: distinct(|r| &r.module) },
        Filter { key: "arm", label: "arm", options: distinct(|r| r.role.as_str()) },
        Filter { key: "task", label: "task", options: distinct(|r| &r.task) },
        Filter { key: "outcome", label: "outcome", options: Outcome::ALL.iter().map(|o| (o.key(), o.label())).collect() },
    ]
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

/// A percent-encoded link: every byte but unreserved characters and `/` escaped (so each path
/// component of `rel` is encoded and the separators stay).
pub fn href(rel: &str) -> String {
    use std::fmt::Write;
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

fn session<'a>(base: &Base, s: &'a Loaded, index: usize, budget: &mut usize, pages: &mut Vec<(String, String)>, replaced: bool) -> SessionView<'a> {
    let r = &s.record;
    let oracle = r.model.provider == Provider::Oracle;
    let outcome = Outcome::of(r);
    let calls = r.tool_calls.len();
    let errors = r.tool_calls.iter().filter(|c| c.is_error || c.invalid_arguments || c.unknown_tool).count();
    // An oracle session has no usage: it is sorted and shown by its labelled estimate.
    let (tokens, tokens_text) = if oracle {
        match r.oracle.as_ref().and_then(|f| f.estimated_input_tokens) {
            Some(t) => (Some(t), format!("≈{} input tokens (estimate)", readable(t as f64))),
            None => (None, "input tokens: none (oracle, no estimate recorded)".into()),
        }
    } else {
        match r.totals.input_tokens {
            Some(t) => (Some(t), format!("{} input tokens", readable(t as f64))),
            None => (None, "input tokens: not reported".into()),
        }
    };
    let turns_text = if oracle { format!("oracle plan, {}", plural(calls, "call")) } else { plural(r.turns, "turn") };

    let conversation = std::fs::read_to_string(s.transcript_path()).ok().map(|t| transcript::parse(&t));
    let mut body = SessionBody { page: None, up: "", conversation: conversation.as_ref().map(|c| conversation_view(r, c)), meta: meta(base, s) };
    let inline = body.render().expect(RENDER);
    let placement = if inline.len() <= *budget {
        *budget -= inline.len();
        Placement::Inline(inline)
    } else {
        // Past the budget the conversation gets a page of its own, beside the report.
        *budget = 0;
        let file = format!("{}.html", relative(&base.exp.dir, &s.path).trim_end_matches(".json").replace('/', "--"));
        let file: String = file.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
        body.page = Some(PageHead { index, model: &r.model.id, server: &r.server, arm: r.role, task: &r.task, rep: r.rep });
        body.up = "../";
        let title = format!("{} · {} · {} rep {}", r.model.id, r.server, r.task, r.rep);
        let page = super::page(&title, &body.render().expect(RENDER));
        let link = format!("{SESSION_DIR}/{}", href(&file));
        pages.push((file, page));
        Placement::OwnPage { href: link, inline_mb: INLINE_BUDGET / (1024 * 1024) }
    };
    SessionView {
        index,
        model: &r.model.id,
        module: &r.module,
        arm: r.role,
        server: &r.server,
        task: &r.task,
        rep: r.rep,
        outcome,
        badge: if replaced { "replaced" } else { outcome.label() },
        tokens,
        turns: (!oracle).then_some(r.turns),
        calls,
        turns_text,
        tokens_text,
        calls_text: plural(calls, "call"),
        errors_text: (errors > 0).then(|| plural(errors, "error")),
        body: placement,
    }
}

/// "1 call", "2 calls".
pub(super) fn plural(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

fn meta<'a>(base: &Base, s: &'a Loaded) -> MetaView<'a> {
    let r = &s.record;
    let verdict = match (&r.validity, &r.verifier) {
        (Validity::Invalid { reason, detail }, _) => Verdict::Invalid { reason: reason.to_string(), detail },
        (_, Some(v)) => Verdict::Scored { outcome: Outcome::of(r), ms: format!("{:.0}", v.elapsed_ms) },
        (_, None) => Verdict::NotScored,
    };
    let flags = [
        (r.turn_cap_hit, "turn cap hit"),
        (r.context_exceeded, "context window outgrown"),
        (r.tool_call_as_text, "a call written as text"),
        (r.unparseable_output, "the endpoint could not parse the output"),
    ]
    .into_iter()
    .filter_map(|(on, what)| on.then_some(what))
    .collect();
    let usage = if r.model.provider == Provider::Oracle {
        r.oracle.as_ref().map(|f| UsageView::Oracle(oracle_view(f)))
    } else {
        let n = |x: Option<u64>| x.map(|v| readable(v as f64)).unwrap_or_else(|| "not reported".into());
        let t = &r.totals;
        Some(UsageView::Model {
            turns: r.turns,
            turn_cap: r.turn_cap,
            input: n(t.input_tokens),
            cached: n(t.cached_input_tokens),
            output: n(t.output_tokens),
            reasoning: n(t.reasoning_tokens),
            retries: r.provider_retries,
        })
    };
    let secs = (r.ended_at - r.started_at).num_milliseconds() as f64 / 1000.0;
    MetaView {
        verdict,
        reasons: r.verifier.as_ref().map_or(&[][..], |v| &v.reasons),
        flags,
        usage,
        started: r.started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        seconds: format!("{secs:.1}"),
        attempt: r.attempt,
        replaced: r.superseded.as_ref().map(|sup| (sup.at.to_rfc3339(), sup.reason.as_str())),
        final_answer: r.final_answer.as_deref().map(capped),
        record: href(&relative(base.report_dir, &s.path)),
        transcript: href(&relative(base.report_dir, &s.transcript_path())),
    }
}

fn oracle_view(f: &OracleFloor) -> OracleView<'_> {
    OracleView {
        calls: f.calls,
        schema_bytes: f.schema_bytes,
        args_bytes: f.args_bytes,
        result_bytes: f.result_bytes,
        estimate: f.estimated_input_tokens.map(|t| format!("≈{}", readable(t as f64))).unwrap_or_else(|| "not recorded".into()),
        method: f.input_estimate_method.as_deref().unwrap_or(&f.estimate_method),
    }
}
