//! The document of a comparison of two experiments: the declared difference, each compared
//! cell's figures side by side (each experiment's own numbers; nothing is paired across them),
//! what could not be compared, and both provenances.

use records::Role;

use super::format::{pct, readable, shell_line, signed_pct};
use super::{Align, Block, Cell as DocCell, Document, Section, SectionKind, Table, TableKind, Text};
use crate::compare::{CellMetrics, Comparison, Side};
use crate::metrics::{ArmMetrics, Diff, Dist, ModuleReport, OracleModule};
use crate::provenance::Provenance;
use crate::stats::Interval;

fn signed(x: f64) -> String {
    if x > 0.0 { format!("+{}", readable(x)) } else { readable(x) }
}

fn interval(i: Option<Interval>, f: fn(f64) -> String) -> String {
    i.map(|i| format!(" [{}, {}]", f(i.lo), f(i.hi))).unwrap_or_default()
}

fn diff(d: &Option<Diff>, f: fn(f64) -> String) -> Text {
    match d {
        Some(d) => format!("{}{} (n={})", f(d.mean), interval(d.ci95, f), d.n).into(),
        None => "—".into(),
    }
}

/// The rows a model cell shows, (metric, A, B).
fn model_rows(a: &ModuleReport, b: &ModuleReport) -> Vec<(String, Text, Text)> {
    let arm = |m: &ModuleReport, role: Role| if role == Role::Pattern { m.pattern.clone() } else { m.control.clone() };
    let valid = |x: &Option<ArmMetrics>| x.as_ref().map(|x| format!("{}/{}", x.valid, x.attempted)).unwrap_or_else(|| "no sessions".into()).into();
    let rate = |x: &Option<ArmMetrics>| -> Text {
        x.as_ref()
            .and_then(|x| x.success.rate.map(|r| format!("{} ({}/{}){}", pct(r), x.success.successes, x.success.n, interval(x.success.wilson95, pct))))
            .unwrap_or_else(|| "—".into())
            .into()
    };
    let mean = |x: &Option<ArmMetrics>, pick: fn(&ArmMetrics) -> &Dist| -> Text {
        x.as_ref().and_then(|x| pick(x).mean.map(|m| format!("{}{}", readable(m), interval(pick(x).mean_ci95, readable)))).unwrap_or_else(|| "—".into()).into()
    };
    let verdict = |m: &ModuleReport| Text::default().strong(m.verdict.as_str()).and(format!(": {}", m.verdict_reason));
    let mut rows = vec![("verdict".to_string(), verdict(a), verdict(b))];
    for role in [Role::Pattern, Role::Control] {
        let (xa, xb) = (arm(a, role), arm(b, role));
        rows.push((format!("{role}: valid / attempted"), valid(&xa), valid(&xb)));
        rows.push((format!("{role}: success rate [Wilson 95%]"), rate(&xa), rate(&xb)));
        rows.push((format!("{role}: turns, mean [95% CI]"), mean(&xa, |x| &x.turns), mean(&xb, |x| &x.turns)));
        rows.push((format!("{role}: input tokens, mean [95% CI]"), mean(&xa, |x| &x.input_tokens), mean(&xb, |x| &x.input_tokens)));
    }
    rows.push(("success difference (paired)".into(), diff(&a.paired.success, signed_pct), diff(&b.paired.success, signed_pct)));
    rows.push(("turns difference, all pairs".into(), diff(&a.paired.turns, signed), diff(&b.paired.turns, signed)));
    rows.push(("turns difference, both passed".into(), diff(&a.paired.both_passed.turns, signed), diff(&b.paired.both_passed.turns, signed)));
    rows.push(("input-token difference, all pairs".into(), diff(&a.paired.input_tokens, signed), diff(&b.paired.input_tokens, signed)));
    rows.push((
        "input-token difference, both passed".into(),
        diff(&a.paired.both_passed.input_tokens, signed),
        diff(&b.paired.both_passed.input_tokens, signed),
    ));
    rows
}

fn oracle_rows(a: &OracleModule, b: &OracleModule) -> Vec<(String, Text, Text)> {
    let calls = |f: &OracleModule, role: Role| -> Text {
        let v: Vec<u64> = f.rows.iter().filter(|r| r.role == role).filter_map(|r| r.calls).collect();
        if v.is_empty() { "—".into() } else { v.iter().sum::<u64>().to_string().into() }
    };
    let tokens = |f: &OracleModule, role: Role| -> Text {
        f.total_estimated_input_tokens.get(&role).map(|t| format!("≈{}", readable(*t as f64))).unwrap_or_else(|| "—".into()).into()
    };
    let mut rows = Vec::new();
    for role in [Role::Pattern, Role::Control] {
        rows.push((format!("{role}: calls Σ over tasks (counted)"), calls(a, role), calls(b, role)));
        rows.push((format!("{role}: input tokens Σ over tasks (estimate)"), tokens(a, role), tokens(b, role)));
    }
    rows
}

fn shell(c: &Option<Vec<String>>) -> Text {
    c.as_deref().map(|c| Text::code(shell_line(c))).unwrap_or_else(|| "not recorded".into())
}

fn grid(header: [String; 3], rows: Vec<(String, Text, Text)>) -> Table {
    Table {
        kind: TableKind::Grid,
        header: header.into_iter().map(DocCell::text).collect(),
        align: vec![Align::Left; 3],
        rows: rows.into_iter().map(|(what, a, b)| vec![DocCell::text(what), DocCell::text(a), DocCell::text(b)]).collect(),
    }
}

/// The document of a comparison.
pub fn of_comparison(c: &Comparison) -> Document {
    let name = |s: &Side| s.experiments.join(", ");
    let mut notices = Vec::new();
    if c.along.is_empty() {
        notices.push(Block::Notice("No declared difference: the compared cells' records have equal fingerprints in both experiments (outside each task's own fields), so A and B are repeats of one measurement.".into()));
    } else {
        let found: Vec<String> = c.differences.iter().map(|d| format!("{} {} (A) vs {} (B)", d.field, d.ours, d.theirs)).collect();
        notices.push(Block::Notice(
            format!(
                "Declared difference (--along): {}. Found in the compared cells: {}. Everything else the records' fingerprints hold is equal.",
                c.along.join(", "),
                if found.is_empty() { "none — the declared fields are equal too".into() } else { found.join("; ") }
            )
            .into(),
        ));
    }
    if c.gaps.is_empty() {
        notices.push(Block::Notice("Each experiment's numbers and intervals are its own. The sessions of two runs are not paired, so no difference across the experiments is computed or tested here.".into()));
    } else {
        notices.push(Block::Notice("Each experiment's numbers and intervals are its own. Along session_mode the gap B − A is computed too (section Session mode gap), paired by task: the two runs' sessions are not pairs, their tasks are.".into()));
    }
    let mut sections = vec![Section { kind: SectionKind::Notices, heading: None, blocks: notices }];

    let mut cells = Vec::new();
    for cell in &c.cells {
        let who = if cell.model_a == cell.model_b {
            Text::plain("model ").and_code(&cell.model_a)
        } else {
            Text::plain("model ").and_code(&cell.model_a).and(" (A) vs ").and_code(&cell.model_b).and(" (B)")
        };
        let mut heading = Text::plain(format!("{}{} — ", cell.module, split_label(cell.split)));
        heading.0.extend(who.0);
        cells.push(Block::Heading { level: 3, text: heading.and(format!(", {} tasks", cell.tasks)) });
        let rows = match (&cell.a, &cell.b) {
            (CellMetrics::Model(a), CellMetrics::Model(b)) => model_rows(a, b),
            (CellMetrics::Oracle(a), CellMetrics::Oracle(b)) => oracle_rows(a, b),
            _ => vec![],
        };
        cells.push(Block::Table(grid(["metric".into(), format!("A: {}", name(&c.a)), format!("B: {}", name(&c.b))], rows)));
    }
    sections.push(Section { kind: SectionKind::Compared, heading: Some("Compared cells".into()), blocks: cells });

    if !c.gaps.is_empty() {
        sections.push(gap_section(c));
    }

    if !c.refused.is_empty() {
        let items = c
            .refused
            .iter()
            .map(|r| {
                let t = Text::default().strong(&r.module);
                let t = match (&r.model_a, &r.model_b) {
                    (Some(a), Some(b)) if a == b => t.and(" (model ").and_code(a).and(")"),
                    (Some(a), Some(b)) => t.and(" (model ").and_code(a).and(" vs ").and_code(b).and(")"),
                    (Some(a), None) | (None, Some(a)) => t.and(" (model ").and_code(a).and(")"),
                    (None, None) => t,
                };
                t.and(format!(": {}", r.reason))
            })
            .collect();
        sections.push(Section { kind: SectionKind::NotCompared, heading: Some("Not compared".into()), blocks: vec![Block::List(items)] });
    }

    let (pa, pb) = (&c.a.provenance, &c.b.provenance);
    let time = |t: Option<chrono::DateTime<chrono::Utc>>| -> Text {
        t.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)).unwrap_or_else(|| "not recorded".into()).into()
    };
    let commit = |p: &Provenance| -> Text {
        match (&p.git_commit, p.git_dirty) {
            (Some(c), Some(true)) => format!("{c} (with uncommitted changes)"),
            (Some(c), _) => c.clone(),
            (None, _) => "not recorded".into(),
        }
        .into()
    };
    let k = |p: &Provenance| -> Text { p.k.map(|k| k.to_string()).unwrap_or_else(|| "not recorded".into()).into() };
    let rows = vec![
        ("folder".to_string(), c.a.dir.clone().into(), c.b.dir.clone().into()),
        ("run command".into(), shell(&pa.command), shell(&pb.command)),
        ("run started".into(), time(pa.started_at), time(pb.started_at)),
        ("work tree".into(), commit(pa), commit(pb)),
        ("k".into(), k(pa), k(pb)),
        ("endpoint preflight".into(), pa.preflight.status.as_str().into(), pb.preflight.status.as_str().into()),
    ];
    sections.push(Section {
        kind: SectionKind::Provenance,
        heading: Some("Provenance".into()),
        blocks: vec![Block::Table(grid(["what".into(), "A".into(), "B".into()], rows))],
    });
    Document { title: format!("mcp-pattern-bench comparison — A: {} · B: {}", name(&c.a), name(&c.b)), sections }
}

/// " · held-out" for a module's held-out tasks, compared apart from its dev tasks; nothing for dev.
fn split_label(split: records::Split) -> &'static str {
    if split.is_dev() { "" } else { " · held-out" }
}

/// A side's session mode as the declared difference shows it (`unset` is cold).
fn mode(c: &Comparison, a: bool) -> &'static str {
    let warm = c.differences.iter().find(|d| d.field == "session_mode").map(|d| if a { &d.ours } else { &d.theirs }).is_some_and(|v| v == "warm");
    if warm { "warm" } else { "cold" }
}

/// B − A per module, model and arm: success, turns and input tokens (the oracle: its estimate).
fn gap_section(c: &Comparison) -> Section {
    let (ma, mb) = (mode(c, true), mode(c, false));
    let intro = Text::plain(format!(
        "A is {ma}, B is {mb}: B − A per arm, paired by task — both runs ran the same tasks, so each task's B − A (of its sessions' means) is the unit — and each side's figure the mean over those tasks of its sessions' mean; the interval is a t interval over the tasks' differences (T − 1 degrees of freedom; for success the report's pass-rate form), a claim about the tasks such a set stands for, as a report's paired differences are. The oracle's figures are estimates, so its gap has no interval. Read the pattern's gap against the control's: where the pattern's is the smaller, its cost amortises over a conversation better than the control's; with few sessions a side the intervals are wide, and they say so."
    ));
    let value = |x: Option<f64>, metric: &str| match (x, metric) {
        (Some(x), "success") => pct(x),
        (Some(x), _) => readable(x),
        (None, _) => "—".into(),
    };
    let gap = |g: &crate::compare::Gap| -> String {
        let f: fn(f64) -> String = if g.metric == "success" { signed_pct } else { signed };
        match g.difference {
            Some(d) => format!("{}{}", f(d), interval(g.ci95, f)),
            None => "—".into(),
        }
    };
    let rows = c
        .gaps
        .iter()
        .map(|g| {
            vec![
                DocCell::text(format!("{}{} · {}", g.module, split_label(g.split), g.model)),
                DocCell::text(format!("{}: {}", g.role, g.server)),
                DocCell::text(g.metric.replace('_', " ")),
                DocCell::text(format!("{} (n={})", value(g.mean_a, &g.metric), g.n_a)),
                DocCell::text(format!("{} (n={})", value(g.mean_b, &g.metric), g.n_b)),
                DocCell::text(match g.tasks {
                    Some(t) => format!("{} · {t} task{}", gap(g), if t == 1 { "" } else { "s" }),
                    None => gap(g),
                }),
            ]
        })
        .collect();
    let header = ["module · model".to_string(), "arm".into(), "metric (per session)".into(), format!("A: {ma}"), format!("B: {mb}"), "B − A [95% CI]".into()];
    let table = Table { kind: TableKind::Grid, header: header.into_iter().map(DocCell::text).collect(), align: vec![Align::Left; 6], rows };
    Section { kind: SectionKind::Compared, heading: Some("Session mode gap".into()), blocks: vec![Block::Paragraph(intro), Block::Table(table)] }
}
