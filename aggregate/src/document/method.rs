//! Where the numbers come from (the provenance table) and how they were taken (the Method
//! section, with every table term's definition).

use std::fmt::Write;

use records::Provider;

use super::format::shell_line;
use super::tables::Terms;
use super::{Block, Cell, Section, SectionKind, Table, TableKind, Text};
use crate::definitions::{Aggregation, Definition};
use crate::metrics::Summary;

pub(super) fn provenance(s: &Summary, terms: &Terms) -> Section {
    let rows = provenance_rows(s).into_iter().map(|(what, value)| vec![terms.label(what), Cell::text(value)]).collect();
    let table = Table { kind: TableKind::KeyValue, header: vec![terms.label("what"), terms.label("value")], align: vec![super::Align::Left; 2], rows };
    Section { kind: SectionKind::Provenance, heading: Some("Provenance".into()), blocks: vec![Block::Table(table)] }
}

pub(super) fn method(s: &Summary) -> Section {
    let m = &s.method;
    let mut items: Vec<Text> = Vec::new();
    if !m.design.is_empty() {
        items.push(format!("Design: {}.", m.design).into());
    }
    items.extend([
        format!("What the intervals estimate: {}.", m.estimand).into(),
        format!("Success: {}; \"could not score\" counts as not passed and is shown apart from \"failed\".", m.success_interval).into(),
        format!("Differences: {}.", m.difference_interval).into(),
        format!("Relative differences (in parentheses): {}.", m.relative_interval).into(),
        "Distributions are over valid sessions, shown as median (over sessions) / mean (over tasks of each task's mean) [its 95% t interval over tasks]; null usage is counted, never treated as 0.".into(),
        format!("Verdict: {}", m.verdict_rules).into(),
        format!("Paired differences over two sets of pairs: {}", m.pair_sets).into(),
    ]);
    items.push(match s.run.planned_k {
        Some(k) => format!("pass@k and pass^k use the planned k = {k} from the manifest: a task whose {k} reps are not all recorded and valid has pass^k unknown (and pass@k unknown unless a recorded rep passed).").into(),
        None => "pass@k and pass^k use k = the most reps any task of an arm has (no manifest, so the planned k is unknown): a task with fewer has pass^k unknown (and pass@k unknown unless a recorded rep passed).".into(),
    });
    items.push(
        format!(
            "Records are pooled only when their fingerprints agree (within a model: everything but the server manifest and the task's own fields; within a task: world seed and scale, task sha256, turn cap; within a server: its manifest); fingerprints here: {}.",
            match s.run.fingerprints {
                crate::check::Fingerprints::Checked => "checked",
                crate::check::Fingerprints::Unknown => "absent, not checked",
            }
        )
        .into(),
    );
    items.push(format!("Power: {}", m.power_method).into());
    let mut blocks = vec![Block::List(items)];
    definitions(&mut blocks, &m.definitions);
    Section { kind: SectionKind::Method, heading: Some("Method".into()), blocks }
}

/// Every header and row label of the tables, spelled as they are, each with how its figure is
/// aggregated: `**term** · **term** (per session: over what): meaning.`
fn definitions(o: &mut Vec<Block>, list: &[Definition]) {
    o.push(Block::Heading { level: 3, text: "Definitions".into() });
    o.push(Block::Paragraph("Every header and row label of the tables above. \"Per session\" is one session's value, then a mean or median over the sessions named; \"summed\" is a count or sum over the set named. A header with \"/ session\" is per session; one with \"Σ\" is summed. The chart shows per-session values only.".into()));
    let items = list
        .iter()
        .map(|d| {
            let mut t = Text::default();
            for (i, term) in d.terms.iter().enumerate() {
                if i > 0 {
                    t = t.and(" · ");
                }
                t = t.strong(term.clone());
            }
            let how = match d.aggregation {
                Aggregation::Label => String::new(),
                a => format!(" ({}: {})", a.as_str(), d.over),
            };
            t.and(format!("{how}: {}.", d.meaning))
        })
        .collect();
    o.push(Block::List(items));
}

fn build(commit: &Option<String>, dirty: Option<bool>) -> String {
    if commit.is_none() && dirty.is_none() {
        return "not recorded".into();
    }
    let commit = commit.as_deref().unwrap_or("commit not recorded");
    match dirty {
        Some(false) => format!("{commit} (clean)"),
        Some(true) => format!("{commit} (with uncommitted changes)"),
        None => format!("{commit} (dirty flag not recorded)"),
    }
}

/// Rows of the provenance table, (what, value).
fn provenance_rows(s: &Summary) -> Vec<(&'static str, Text)> {
    let p = &s.provenance;
    let not_recorded = || "not recorded".to_string();
    let time = |t: Option<chrono::DateTime<chrono::Utc>>| t.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    let rows: Vec<(&'static str, String)> = vec![
        ("experiment", if s.experiments.is_empty() { "—".into() } else { s.experiments.join(", ") }),
        (
            "run dates",
            format!(
                "started {}; sessions from {} to {}",
                time(p.started_at).unwrap_or_else(not_recorded),
                time(p.first_session_at).unwrap_or_else(|| "—".into()),
                time(p.last_session_at).unwrap_or_else(|| "—".into())
            ),
        ),
        ("work tree", if p.git_commit.is_none() && p.git_dirty.is_none() { not_recorded() } else { build(&p.git_commit, p.git_dirty) }),
        (
            "binary build",
            if p.binaries.is_empty() {
                not_recorded()
            } else {
                p.binaries.iter().map(|b| format!("{} — {} sessions", build(&b.commit, b.dirty), b.sessions)).collect::<Vec<_>>().join("; ")
            },
        ),
        ("binary version", p.binary_version.clone().unwrap_or_else(|| "not recorded by the run".into())),
        ("Postgres", p.postgres.clone().unwrap_or_else(|| "not recorded by the run".into())),
        (
            "graded by",
            match &p.grading {
                None => not_recorded(),
                Some(g) if g.grader_sha256.is_none() => "versions not recorded (records written before verifier and grader versions were kept)".into(),
                Some(g) => {
                    let regraded = match g.last_regraded_at {
                        Some(at) => format!(
                            "; {} sessions regraded over their kept final states (pipeline regrade), last at {}",
                            g.regraded,
                            at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                        ),
                        None => "; graded as the sessions ran".into(),
                    };
                    format!(
                        "grader {} (the rules' source hash) with {} task verifier version(s){regraded}",
                        g.grader_sha256.as_deref().map_or("—", |h| &h[..h.len().min(12)]),
                        g.verifiers
                    )
                }
            },
        ),
        ("harness overhead", {
            let h = &s.run.harness;
            match (h.p50_ms, h.share_p50) {
                (Some(ms), Some(share)) => format!(
                    "p50 {ms:.1} ms per model session ({:.2}% of the session; max {:.2}%), over {} sessions whose records separate it ({} left out: a request of theirs failed)",
                    share * 100.0,
                    h.share_max.unwrap_or(share) * 100.0,
                    h.sessions,
                    h.left_out
                ),
                _ => format!("not measured: no valid model session whose records separate it ({} left out)", h.left_out),
            }
        }),
        ("server start-up", {
            let h = &s.run.harness;
            match (h.server_start_p50_ms, h.server_start_max_ms) {
                (Some(p50), Some(max)) => format!(
                    "p50 {p50:.1} ms, max {max:.1} ms per model session that started its arm's server (starting it, the MCP handshake and the listings, over {} sessions): the arm's own cost, outside the harness overhead above",
                    h.server_start_sessions
                ),
                _ => "not measured: no record kept it".into(),
            }
        }),
        (
            "k (reps per task and arm)",
            match (p.k, p.jobs) {
                (Some(k), Some(j)) => format!("{k} (run with {j} parallel jobs)"),
                (Some(k), None) => k.to_string(),
                _ => "not recorded (no manifest): the reps found per task".into(),
            },
        ),
        ("transport", p.transport.map(|t| t.to_string()).unwrap_or_else(not_recorded)),
        (
            "MCP revision spoken",
            if p.protocols.is_empty() {
                not_recorded()
            } else {
                p.protocols.iter().map(|(v, n)| format!("{v} ({n} session{})", if *n == 1 { "" } else { "s" })).collect::<Vec<_>>().join(", ")
            },
        ),
    ];
    let mut rows: Vec<(&'static str, Text)> = rows.into_iter().map(|(what, v)| (what, Text::plain(v))).collect();
    rows.insert(1, ("run command", p.command.as_deref().map(|c| Text::code(shell_line(c))).unwrap_or_else(|| not_recorded().into())));
    let opt = |v: Option<String>| v.unwrap_or_else(|| "unset".into());
    let models: Vec<String> = p
        .models
        .iter()
        .map(|m| {
            if m.provider == Provider::Oracle {
                format!("{} (oracle: no model, no sampling parameters)", m.id)
            } else {
                let max_tokens = match (m.max_tokens, m.max_tokens_param) {
                    (Some(n), Some(param)) => format!("{n} (as {param})"),
                    (n, _) => opt(n.map(|t| t.to_string())),
                };
                format!(
                    "{} ({}{}): temperature {}, max tokens {}, seed {}, reasoning effort {}",
                    m.id,
                    m.provider,
                    m.dialect.map_or(String::new(), |d| format!(", dialect {d}")),
                    opt(m.temperature.map(|t| t.to_string())),
                    max_tokens,
                    opt(m.seed.map(|t| t.to_string())),
                    m.reasoning_effort.clone().unwrap_or_else(|| "not sent".into())
                )
            }
        })
        .collect();
    rows.push(("models and parameters", Text::plain(if models.is_empty() { "—".into() } else { models.join("; ") })));
    if let Some(url) = &p.base_url {
        rows.push(("model endpoint", Text::plain(url.clone())));
    }
    let worlds: Vec<String> = p.worlds.iter().map(|w| format!("seed {}, scale {} ({} tasks)", w.seed, w.scale, w.tasks)).collect();
    rows.push(("world seeds", Text::plain(if worlds.is_empty() { "—".into() } else { worlds.join("; ") })));
    rows.push(("bootstrap seed", Text::plain(p.bootstrap_seed.to_string())));
    rows.push((
        "spec",
        match &p.spec {
            Some(sp) => format!(
                "sha256 {}{}{}",
                sp.sha256.as_deref().unwrap_or("not recorded"),
                sp.path.as_deref().map(|x| format!(", {x}")).unwrap_or_default(),
                sp.status.as_deref().map(|x| format!(", check {x}")).unwrap_or_default()
            ),
            None if p.command.is_some() => "none: a run from flags, not from a spec".into(),
            None => not_recorded(),
        }
        .into(),
    ));
    let checks: Vec<String> = p
        .preflight
        .models
        .iter()
        .map(|m| {
            let cs: Vec<String> = m.checks.iter().map(|c| format!("{} {}", c.name, if c.passed { "passed" } else { "failed" })).collect();
            format!("{}: {}", m.model, if cs.is_empty() { "no checks recorded".into() } else { cs.join(", ") })
        })
        .collect();
    rows.push((
        "endpoint preflight",
        if checks.is_empty() { p.preflight.status.as_str().to_string() } else { format!("{} — {}", p.preflight.status.as_str(), checks.join("; ")) }.into(),
    ));
    let r = &p.report;
    let mut report = format!("aggregate {}", r.aggregate_version);
    if let Some(g) = &r.generator {
        write!(report, ", via {g}").unwrap();
    }
    if let Some(t) = time(r.generated_at) {
        write!(report, ", generated {t}").unwrap();
    }
    let report = match &r.command {
        Some(c) => Text::plain(format!("{report}: ")).and_code(shell_line(c)),
        None => Text::plain(report),
    };
    rows.push(("this report", report));
    rows
}
