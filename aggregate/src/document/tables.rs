//! The detailed tables: attrition, per model and module the side-by-side table with the paired
//! differences and the per-task table, and the oracle's structural floors.

use std::collections::BTreeMap;

use records::{Provider, Role};

use super::format::{cost_cell, diff_cell, dist_cell, invalid_list, num, opt_int, pct, readable, signed_pct, signed_readable, tri};
use super::{Align, Block, Cell, Section, SectionKind, Table, TableKind, Text, Unit};
use crate::definitions::{Aggregation, Definition};
use crate::metrics::{ArmMetrics, Comparison, Diff, ModuleReport, OracleModule, OraclePerSession, PairOutcomes, Summary, TaskArm, TaskRow};

/// Every term of [`crate::definitions`], looked up by the text a header or row label shows.
pub(super) struct Terms(BTreeMap<String, String>);

impl Terms {
    pub(super) fn new(list: &[Definition]) -> Self {
        let mut map = BTreeMap::new();
        for d in list {
            let how = match d.aggregation {
                Aggregation::Label => String::new(),
                a => format!(" ({}: {})", a.as_str(), d.over),
            };
            for t in &d.terms {
                map.insert(t.clone(), format!("{}{how}", d.meaning));
            }
        }
        Self(map)
    }

    /// The definition of a header or row label; a column headed with a server's name is looked
    /// up as `pattern: ‹server›`.
    pub(super) fn of(&self, shown: &str) -> Option<String> {
        self.0.get(shown).cloned().or_else(|| {
            let role = ["pattern", "control"].into_iter().find(|r| shown.starts_with(&format!("{r}: ")))?;
            self.0.get(&format!("{role}: ‹server›")).cloned()
        })
    }

    /// A header or row-label cell with its definition.
    pub(super) fn label(&self, shown: impl Into<String>) -> Cell {
        let shown = shown.into();
        let definition = self.of(&shown);
        Cell::text(shown).defined(definition)
    }

    /// A grid whose header cells carry their definitions.
    pub(super) fn grid(&self, header: &[&str], align: &[Align], rows: Vec<Vec<Cell>>) -> Table {
        Table { kind: TableKind::Grid, header: header.iter().map(|h| self.label(*h)).collect(), align: align.to_vec(), rows }
    }
}

use Align::{Left as L, Right as R};

fn count(n: usize, unit: Unit) -> Cell {
    Cell::figure(n.to_string(), Some(n as f64), unit)
}

pub(super) fn attrition(s: &Summary, terms: &Terms) -> Section {
    let header = [
        "model",
        "module",
        "server",
        "role",
        "planned",
        "attempts",
        "replaced",
        "recorded",
        "valid",
        "invalid (reason: count)",
        "turn-cap hits",
        "context overflows",
        "tool calls as text",
        "unparseable output",
    ];
    let rows = s
        .attrition
        .iter()
        .map(|r| {
            let model = if r.provider == Provider::Oracle { format!("{} (oracle floor)", r.model) } else { r.model.clone() };
            let sessions = |n: usize| count(n, Unit::Sessions);
            vec![
                Cell::text(model),
                Cell::text(r.module.clone()),
                Cell::text(r.server.clone()),
                Cell::text(r.role.to_string()),
                Cell::figure(r.planned.map_or_else(|| "—".into(), |p| p.to_string()), r.planned.map(|p| p as f64), Unit::Sessions),
                sessions(r.attempts),
                sessions(r.replaced),
                sessions(r.attempted),
                sessions(r.valid),
                Cell::figure(invalid_list(&r.invalid), Some(r.invalid.values().sum::<usize>() as f64), Unit::Sessions),
                sessions(r.turn_cap_hits),
                sessions(r.context_exceeded),
                sessions(r.tool_call_as_text),
                sessions(r.unparseable_output),
            ]
        })
        .collect();
    Section {
        kind: SectionKind::Attrition,
        heading: Some("Attrition (planned, attempted and valid sessions)".into()),
        blocks: vec![
            Block::Table(terms.grid(&header, &[L, L, L, L, R, R, R, R, R, L, R, R, R, R], rows)),
            Block::Paragraph("Counts of sessions, summed over the cell's tasks and reps (a cell: one model, module and server); the last four count valid sessions, each a valid failure. Each column is defined under Method.".into()),
        ],
    }
}

pub(super) fn models(s: &Summary, terms: &Terms) -> Section {
    let mut blocks = Vec::new();
    if s.models.is_empty() {
        blocks.push(Block::Paragraph("No model sessions: nothing to compare (oracle floors below are structural, not model results).".into()));
    }
    for m in &s.models {
        blocks.push(Block::Heading { level: 2, text: Text::plain("Model ").and_code(&m.model).and(format!(" ({})", m.provider)) });
        for module in &m.modules {
            module_blocks(&mut blocks, module, s.prices_loaded, (s.method.graders.as_ref(), s.method.judge.as_ref()), terms);
        }
    }
    Section { kind: SectionKind::Models, heading: None, blocks }
}

/// "3 both passed · 1 pattern only · 0 control only · 8 neither".
fn pair_outcomes(o: &PairOutcomes) -> String {
    format!("{} both passed · {} pattern only · {} control only · {} neither", o.both_passed, o.pattern_only, o.control_only, o.neither)
}

/// An arm's mean over the both-passed pairs (the control's mean plus the mean difference).
fn both_mean(d: &Option<Diff>, role: Role, unit: Unit) -> Cell {
    let v = d.as_ref().map(|d| match role {
        Role::Pattern => d.control_mean + d.mean,
        Role::Control => d.control_mean,
    });
    Cell::figure(v.map(num).unwrap_or_else(|| "—".into()), v, unit)
}

fn diff(d: &Option<Diff>, rate: bool, suffix: &str, unit: Unit) -> Cell {
    Cell::figure(format!("{}{suffix}", diff_cell(d, rate)), d.as_ref().map(|d| d.mean), unit)
}

fn module_blocks(
    o: &mut Vec<Block>,
    m: &ModuleReport,
    prices_loaded: bool,
    (graders, judge): (Option<&crate::graders::Agreement>, Option<&records::JudgeInfo>),
    terms: &Terms,
) {
    o.push(Block::Heading {
        level: 3,
        text: Text::plain(format!("{} — verdict: ", Comparison::label_in(&m.module, m.comparison.as_ref(), m.split))).strong(m.verdict.as_str()),
    });
    o.push(Block::Paragraph(format!("{}.", m.verdict_reason).into()));
    o.extend(m.notices.iter().map(|n| Block::Notice(n.as_str().into())));
    let (p, c) = (&m.pattern, &m.control);
    // An arm's cell, or "no sessions" when it has none.
    let arm = |a: &Option<ArmMetrics>, f: &dyn Fn(&ArmMetrics) -> Cell| a.as_ref().map(f).unwrap_or_else(|| Cell::text("no sessions"));
    let title = |a: &Option<ArmMetrics>, r: &str| a.as_ref().map(|a| format!("{r}: {}", a.server)).unwrap_or_else(|| r.into());
    let header = [title(p, "pattern"), title(c, "control")];
    let header = ["metric", header[0].as_str(), header[1].as_str(), "paired difference (pattern − control) [95% CI]"];
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    let mut row = |label: &str, pattern: Cell, control: Cell, difference: Cell| rows.push(vec![terms.label(label), pattern, control, difference]);
    let empty = Cell::default;
    let planned = m.paired.pairs_planned.map(|n| format!(" ({n} planned)")).unwrap_or_default();
    let valid = |a: &ArmMetrics| Cell::figure(format!("{}/{}", a.valid, a.attempted), Some(a.valid as f64), Unit::Sessions);
    row(
        "sessions, valid / attempted",
        arm(p, &valid),
        arm(c, &valid),
        Cell::figure(format!("{} pairs used of {}{planned}", m.paired.pairs_used, m.paired.pairs_seen), Some(m.paired.pairs_used as f64), Unit::Pairs),
    );
    row("pair outcomes", empty(), empty(), Cell::text(pair_outcomes(&m.paired.outcomes)));
    let success = |a: &ArmMetrics| match a.success.rate {
        Some(r) => {
            Cell::figure(format!("{} ({}/{}){}", pct(r), a.success.successes, a.success.n, super::format::ci(a.success.wilson95, pct)), Some(r), Unit::Rate)
        }
        None => Cell::figure("—", None, Unit::Rate),
    };
    row("success rate [Wilson 95%]", arm(p, &success), arm(c, &success), diff(&m.paired.success, true, "", Unit::Rate));
    let outcomes = |a: &ArmMetrics| Cell::figure(format!("{} / {} / {}", a.passed, a.failed, a.could_not_score), Some(a.passed as f64), Unit::Sessions);
    row("passed / failed / could not score", arm(p, &outcomes), arm(c, &outcomes), empty());
    let failures = super::headline::over_failures(m).map(|n| format!(" — {n}")).unwrap_or_default();
    let both = &m.paired.both_passed;
    let dist = |pick: fn(&ArmMetrics) -> &crate::metrics::Dist, unit: Unit| move |a: &ArmMetrics| Cell::figure(dist_cell(pick(a)), pick(a).mean, unit);
    let turns = dist(|a| &a.turns, Unit::Turns);
    let input = dist(|a| &a.input_tokens, Unit::Tokens);
    row("turns / session (median / mean [CI]), all pairs", arm(p, &turns), arm(c, &turns), diff(&m.paired.turns, false, &failures, Unit::Turns));
    row(
        "turns / session (mean), both passed",
        both_mean(&both.turns, Role::Pattern, Unit::Turns),
        both_mean(&both.turns, Role::Control, Unit::Turns),
        diff(&both.turns, false, "", Unit::Turns),
    );
    row("input tokens / session (median / mean [CI]), all pairs", arm(p, &input), arm(c, &input), diff(&m.paired.input_tokens, false, &failures, Unit::Tokens));
    row(
        "input tokens / session (mean), both passed",
        both_mean(&both.input_tokens, Role::Pattern, Unit::Tokens),
        both_mean(&both.input_tokens, Role::Control, Unit::Tokens),
        diff(&both.input_tokens, false, "", Unit::Tokens),
    );
    let cached = dist(|a| &a.cached_input_tokens, Unit::Tokens);
    row("cached input tokens / session (median / mean [CI])", arm(p, &cached), arm(c, &cached), empty());
    let output = dist(|a| &a.output_tokens, Unit::Tokens);
    row(
        "output tokens / session (median / mean [CI]), all pairs",
        arm(p, &output),
        arm(c, &output),
        diff(&m.paired.output_tokens, false, &failures, Unit::Tokens),
    );
    let reasoning = dist(|a| &a.reasoning_tokens, Unit::Tokens);
    row("reasoning tokens / session (median / mean [CI]), part of output", arm(p, &reasoning), arm(c, &reasoning), empty());
    let calls = |a: &ArmMetrics| Cell::figure(format!("{} ({})", a.tool_calls, a.tool_call_errors), Some(a.tool_calls as f64), Unit::Calls);
    row("tool calls Σ over valid sessions (errors)", arm(p, &calls), arm(c, &calls), empty());
    for (label, pick) in [
        ("turn-cap hits (valid failures)", (|a: &ArmMetrics| a.turn_cap_hits) as fn(&ArmMetrics) -> usize),
        ("context-window overflows (valid failures)", |a| a.context_exceeded),
        ("tool calls written as text (valid failures)", |a| a.tool_call_as_text),
        ("unparseable output (valid failures)", |a| a.unparseable_output),
    ] {
        let n = |a: &ArmMetrics| count(pick(a), Unit::Sessions);
        row(label, arm(p, &n), arm(c, &n), empty());
    }
    if [p, c].iter().any(|a| a.as_ref().is_some_and(|a| a.retrieval.is_some())) {
        let found = |a: &ArmMetrics| match &a.retrieval {
            Some(r) if r.recall.is_some() => Cell::figure(
                format!(
                    "{}/{} ({}), mean rank {}",
                    r.found,
                    r.needed,
                    r.recall.map_or("—".into(), pct),
                    r.mean_best_rank.map_or("—".into(), |x| format!("{x:.1}"))
                ),
                r.recall,
                Unit::Rate,
            ),
            Some(_) => Cell::text("listed, not searched"),
            None => Cell::text("—"),
        };
        row("needed tools found by a search (recall), mean best rank", arm(p, &found), arm(c, &found), empty());
        let unconnected = |a: &ArmMetrics| match &a.retrieval {
            Some(r) => Cell::figure(format!("{} in {} searches", r.unconnected_calls, r.searches), Some(r.unconnected_calls as f64), Unit::Calls),
            None => Cell::text("—"),
        };
        row("calls to unconnected tools Σ (searches Σ)", arm(p, &unconnected), arm(c, &unconnected), empty());
    }
    if prices_loaded {
        let cost = |a: &ArmMetrics| Cell::figure(cost_cell(&a.cost_usd), a.cost_usd.mean, Unit::Usd);
        row("cost per session, USD (median / mean)", arm(p, &cost), arm(c, &cost), empty());
    }
    o.push(Block::Table(terms.grid(&header, &[L, L, L, L], rows)));
    o.push(Block::Paragraph(if m.paired.dropped.is_empty() {
        "Pairs dropped: none.".into()
    } else {
        let list: Vec<String> = m.paired.dropped.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        format!("Pairs dropped: {} ({}).", m.paired.dropped_pairs.len(), list.join("; ")).into()
    }));
    match &m.sequential {
        Some(seq) => o.extend(sequential_blocks(seq)),
        None => o.push(power_paragraph(m)),
    }
    if [p, c].iter().any(|a| a.as_ref().is_some_and(|a| a.outcome_classes.scored > 0)) {
        o.push(Block::Table(classes_table(p, c, terms)));
        if let Some(j) = judge {
            let c = &j.class;
            let kappa = |k: Option<f64>| k.map_or("undefined".into(), |k| format!("{k:.2}"));
            o.push(Block::Paragraph(
                format!(
                    "These classes are the judge's: the model {} at {} (temperature 0, seed 0; instructions sha256 {}) classed every failed session with an answer; a pass is correct and an empty answer no answer by definition. How far to trust them: on the gold set's sealed part, before it graded anything, it agreed with the hand grade on {} of the {} answers it was asked to class (κ {}), and on {} of all {} with the fixed ones (κ {}; {} it gave no class). Classes it did not give are missing, never the rules'.",
                    j.model,
                    j.base_url,
                    &j.prompt_sha256[..j.prompt_sha256.len().min(12)],
                    c.asked_accuracy.map_or("— (none)".into(), |a| format!("{:.0} %", 100.0 * a)),
                    c.asked,
                    kappa(c.asked_kappa),
                    c.accuracy.map_or("— (none)".into(), |a| format!("{:.0} %", 100.0 * a)),
                    c.items,
                    kappa(c.kappa),
                    c.unanswered
                )
                .into(),
            ));
        } else if let Some(said) = graders.and_then(|g| g.sentence("class", "hand-graded answers").map(|s| (g, s))) {
            o.push(Block::Paragraph(
                format!(
                    "How far to trust these classes: on answers the graders were never tuned on (the gold set's sealed part, hand-graded before the graders ran; graded {}), the class {}.",
                    said.0.measured, said.1
                )
                .into(),
            ));
        }
    }
    o.push(Block::Table(task_table(m, terms)));
    let unknown = m.tasks.iter().flat_map(|t| [&t.pattern, &t.control]).any(|a| a.pass_at_k.is_none() || a.pass_all_k.is_none());
    if unknown {
        o.push(Block::Paragraph(
            "unknown: some of the k reps are invalid or missing, so the answer is not known (a pass^k of \"unknown\" is never counted as a pass).".into(),
        ));
    }
}

/// The power estimate of a fixed design, for pre-registering a follow-up.
fn power_paragraph(m: &ModuleReport) -> Block {
    Block::Paragraph(match &m.power {
        Some(pw) => match pw.tasks_needed {
            Some(tasks) => format!(
                "Power (normal approximation, over tasks): detecting a {:.0}% input-token difference ({} tokens) with 80% power at α = 0.05 needs ≈ {tasks} tasks at {} reps per task ({} pairs; this run had {} tasks). More reps of the same tasks narrow the interval only as far as sessions of one task differ.",
                pw.relative_difference * 100.0,
                num(pw.delta_tokens),
                pw.reps_per_task_needed,
                pw.pairs_needed,
                pw.tasks,
            ),
            None => format!(
                "Power (normal approximation): detecting a {:.0}% input-token difference ({} tokens) with 80% power at α = 0.05 needs ≈ {} pairs, i.e. {} reps per task over {} tasks (observed paired SD {}).",
                pw.relative_difference * 100.0,
                num(pw.delta_tokens),
                pw.pairs_needed,
                pw.reps_per_task_needed,
                pw.tasks,
                num(pw.paired_sd)
            ),
        }
        .into(),
        None => "Power: not estimable (needs ≥ 2 pairs with input tokens in both arms and a non-zero control mean).".into(),
    })
}

/// A sequential experiment's design, stop and sequences, in place of the fixed design's power.
fn sequential_blocks(s: &crate::metrics::sequential::SequentialReport) -> Vec<Block> {
    use crate::sequential::Look;
    let cell = |t: String| Cell::text(t);
    let success = |l: &Look| format!("{} ({} pairs)", super::format::valued(l.success_mean, l.success, signed_pct), l.pairs);
    let share = |v: Option<f64>, i, n: usize| format!("{} ({n} pairs)", super::format::valued(v, i, pct));
    let cheaper = |l: &Look| share(l.cheaper_share, l.cheaper, l.cheaper_pairs);
    let cheaper_both = |l: &Look| share(l.cheaper_both_share, l.cheaper_both, l.cheaper_both_pairs);
    let verdict = |l: &Look| l.verdict.as_str().to_owned();
    type Row<'a> = (&'a str, &'a dyn Fn(&Look) -> String);
    let rows: Vec<Row> = vec![
        ("success-rate difference, pattern − control", &success),
        ("share of pairs in which the pattern used fewer input tokens (ties ½)", &cheaper),
        ("the same, over the pairs where both arms passed", &cheaper_both),
        ("verdict the rules give", &verdict),
    ];
    let mut header = vec![cell("95 % confidence sequence (anytime-valid)".into())];
    if let Some(at) = s.decided_at {
        header.push(cell(format!("at the stop (pair {at})")));
    }
    header.push(cell(format!("over every pair recorded ({} drawn)", s.drawn)));
    let rows = rows
        .into_iter()
        .map(|(what, f)| {
            let mut row = vec![cell(what.into())];
            if let Some(l) = &s.decided_look {
                row.push(cell(f(l)));
            }
            row.push(cell(f(&s.look)));
            row
        })
        .collect::<Vec<_>>();
    vec![
        Block::Paragraph(format!("Design: {}. This comparison {}.", s.rule, s.why).into()),
        Block::Table(Table { kind: TableKind::Grid, align: vec![L; header.len()], header, rows }),
        Block::Paragraph(
            "Each sequence covers its true value at every pair at once with probability 95 %, so it stays valid however the run stopped; the true value is the mean over this task set, drawn uniformly (a task drawn again is its next rep). Power and minimum detectable differences belong to a fixed design and are not given."
                .into(),
        ),
    ]
}

/// What kind of outcome each arm's scored sessions were, class by class, with Wilson intervals.
fn classes_table(p: &Option<ArmMetrics>, c: &Option<ArmMetrics>, terms: &Terms) -> Table {
    use crate::metrics::classes::OutcomeClass;
    let title = |a: &Option<ArmMetrics>, r: &str| a.as_ref().map(|a| format!("{r}: {}", a.server)).unwrap_or_else(|| r.into());
    let header = [title(p, "pattern"), title(c, "control")];
    let header = ["outcome class", header[0].as_str(), header[1].as_str()];
    let cell = |a: &Option<ArmMetrics>, class: OutcomeClass| match a.as_ref().and_then(|a| a.outcome_classes.classes.iter().find(|k| k.class == class)) {
        Some(k) => Cell::figure(
            format!(
                "{} / {}{}",
                k.n,
                a.as_ref().map_or(0, |a| a.outcome_classes.scored),
                k.rate.map(|r| format!(" ({}){}", pct(r), super::format::ci(k.wilson95, pct))).unwrap_or_default()
            ),
            k.rate,
            Unit::Rate,
        ),
        None => Cell::text("—"),
    };
    let mut rows: Vec<Vec<Cell>> = OutcomeClass::ALL.iter().map(|&k| vec![terms.label(k.label()), cell(p, k), cell(c, k)]).collect();
    let held = |a: &Option<ArmMetrics>| match a.as_ref().and_then(|a| a.outcome_classes.partial_checks_held_mean) {
        Some(x) => Cell::figure(pct(x), Some(x), Unit::Rate),
        None => Cell::text("—"),
    };
    rows.push(vec![terms.label("checks held by partial sessions (mean)"), held(p), held(c)]);
    terms.grid(&header, &[L, R, R], rows)
}

fn task_table(m: &ModuleReport, terms: &Terms) -> Table {
    let header = ["task", "pattern: outcome", "pattern pass@k", "pattern pass^k", "control: outcome", "control pass@k", "control pass^k"];
    // The k each arm's answers are over: as metrics computes it.
    let found = |arm: fn(&TaskRow) -> &TaskArm| m.tasks.iter().map(|t| arm(t).k).max().unwrap_or(0);
    let (pattern_k, control_k) = (found(|t| &t.pattern), found(|t| &t.control));
    let rows = m
        .tasks
        .iter()
        .map(|t| {
            let (k, pk, ck) = match t.pattern.planned_k.or(t.control.planned_k) {
                Some(k) => (format!("k={k} planned"), k as usize, k as usize),
                None => (format!("k={}", pattern_k.max(control_k)), pattern_k, control_k),
            };
            let mut row = vec![Cell::text(format!("{} ({k})", t.task))];
            row.extend(task_arm(&t.pattern, pk));
            row.extend(task_arm(&t.control, ck));
            row
        })
        .collect();
    terms.grid(&header, &[L; 7], rows)
}

/// One arm's cells of a task row; `expected` is the k its pass@k and pass^k were computed over
/// (the planned k, or without a manifest the most reps any task of the arm has).
fn task_arm(a: &TaskArm, expected: usize) -> [Cell; 3] {
    let missing = expected.saturating_sub(a.k);
    let answer = |b: Option<bool>| Cell::text(tri(b));
    if a.k == 0 {
        let outcome = match (missing, a.planned_k) {
            (0, _) => return [Cell::text("—"), Cell::text("—"), Cell::text("—")],
            (_, Some(_)) => format!("none of {missing} planned recorded"),
            (_, None) => "none recorded".into(),
        };
        return [Cell::text(outcome), answer(None), answer(None)];
    }
    let mut s = format!("{}/{} valid passed", a.passed, a.valid);
    if a.could_not_score > 0 {
        s.push_str(&format!(", {} could not score", a.could_not_score));
    }
    let mut gaps = Vec::new();
    if a.valid < a.k {
        gaps.push(format!("{} invalid", a.k - a.valid));
    }
    if missing > 0 {
        gaps.push(format!("{missing} missing"));
    }
    if !gaps.is_empty() {
        s.push_str(&format!(" ({})", gaps.join(", ")));
    }
    [Cell::figure(s, Some(a.passed as f64), Unit::Sessions), answer(a.pass_at_k), answer(a.pass_all_k)]
}

pub(super) fn oracle(s: &Summary, terms: &Terms) -> Option<Section> {
    if s.oracle_floors.is_empty() {
        return None;
    }
    let header = [
        "module",
        "pattern server",
        "control server",
        "tasks",
        "calls / session: pattern / control",
        "est. input tokens / session: pattern / control",
        "est. input tokens / session: pattern − control",
        "est. output tokens / session: pattern / control",
    ];
    let mut blocks = vec![
        Block::Paragraph(
            Text::plain("Scripted oracle plans, no model: the minimum calls and bytes each arm needs. Tokens are an ")
                .strong("estimate")
                .and(" (bytes / 4), never a measurement, and are never mixed into model results. Input tokens assume one call per turn plus an answer turn, each turn resending the system prompt, task, definitions and all earlier calls and results, as a model session is billed; output tokens are what the model would write: every call's arguments (a whole program, where an arm runs one) and the answer. Every figure is per session: in a module's row the mean over its tasks (as the chart shows it), in a task's row the median over that task's sessions."),
        ),
        Block::Table(terms.grid(&header, &[L, L, L, R, R, R, R, R], s.oracle_floors.iter().map(oracle_summary_row).collect())),
    ];
    footprint(&mut blocks, s, terms);
    for f in &s.oracle_floors {
        oracle_tasks(&mut blocks, f, terms);
    }
    Some(Section { kind: SectionKind::Oracle, heading: Some("Oracle structural floors".into()), blocks })
}

/// Each arm's tool-list footprint — its definitions in bytes, and counted in the run's tokenizer
/// where it knew one — with the floors counted in it beside the estimates above.
fn footprint(o: &mut Vec<Block>, s: &Summary, terms: &Terms) {
    let counted: Vec<&str> = s.oracle_floors.iter().filter_map(|f| f.tokenizer.as_deref()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let said = match counted[..] {
        [] => Text::plain("No tokenizer was known for these runs: every token figure above is the ")
            .strong("estimate")
            .and(" (bytes / 4), and no count is shown. A run whose models are OpenAI models of one encoding, or one given ")
            .and_code("--tokens")
            .and(", counts them."),
        _ => Text::plain("Counted, not estimated, where the run knew the tokenizer (")
            .and(counted.join(", "))
            .and("): each piece a model following the plan is sent — system prompt, task, each definition's JSON, every call's arguments and result — in tokens of that tokenizer, over the same turns as the estimate. The chat format's own tokens, and a provider's rendering of the definitions, are in neither figure. A module without a tokenizer shows none."),
    };
    let mut intro = Text::plain("Each arm's tool-list footprint: the definitions it offers a model. ");
    intro.0.extend(said.0);
    let listed: std::collections::BTreeSet<(u32, u64)> = s.oracle_floors.iter().filter_map(|f| f.distractors.zip(f.distractors_bytes)).collect();
    if !listed.is_empty() {
        let n: Vec<String> = listed.iter().map(|(n, bytes)| format!("{n} distractors ({} bytes of definitions)", readable(*bytes as f64))).collect();
        intro = intro
            .and(format!(
                " Every figure here includes the {} the client listed beside both arms' own tools (the same definitions in both arms); ",
                n.join(" or ")
            ))
            .and_code("pipeline servers --tokens ENCODING")
            .and(" gives each arm without them, and with ")
            .and_code("--distractors N")
            .and(" with them.");
    }
    o.push(Block::Paragraph(intro));
    let header = [
        "module",
        "role",
        "server",
        "definitions bytes",
        "definitions tokens (counted)",
        "input tokens / session (counted)",
        "output tokens / session (counted)",
        "tokenizer",
    ];
    let rows = s
        .oracle_floors
        .iter()
        .flat_map(|f| {
            f.per_session.iter().map(move |(role, m)| {
                let tokens = |v: Option<f64>| Cell::figure(v.map_or("—".to_string(), readable), v, Unit::Tokens);
                vec![
                    Cell::text(Comparison::label_in(&f.module, f.comparison.as_ref(), f.split)),
                    Cell::text(role.to_string()),
                    Cell::text(f.server(*role)),
                    Cell::figure(m.definitions_bytes.map_or("—".to_string(), readable), m.definitions_bytes, Unit::Bytes),
                    tokens(m.definitions_tokens),
                    tokens(m.input_tokens),
                    tokens(m.output_tokens),
                    Cell::text(f.tokenizer.clone().unwrap_or_else(|| "none: estimates only".into())),
                ]
            })
        })
        .collect();
    o.push(Block::Table(terms.grid(&header, &[L, L, L, R, R, R, R, L], rows)));
}

fn oracle_summary_row(f: &OracleModule) -> Vec<Cell> {
    let show = |role: Role, pick: fn(&OraclePerSession) -> Option<f64>| match f.per_session_of(role, pick) {
        Ok(v) => readable(v),
        Err(why) => format!("— ({why})"),
    };
    let tokens = |m: &OraclePerSession| m.estimated_input_tokens;
    let (tp, tc) = (f.per_session_of(Role::Pattern, tokens), f.per_session_of(Role::Control, tokens));
    let delta = match (&tp, &tc) {
        (Ok(p), Ok(c)) if *c > 0.0 => Cell::figure(format!("{} ({})", signed_readable(p - c), signed_pct(p / c - 1.0)), Some(p - c), Unit::EstimatedTokens),
        _ => Cell::figure("—", None, Unit::EstimatedTokens),
    };
    let tasks: std::collections::BTreeSet<&str> = f.rows.iter().map(|r| r.task.as_str()).collect();
    vec![
        Cell::text(Comparison::label_in(&f.module, f.comparison.as_ref(), f.split)),
        Cell::text(f.server(Role::Pattern)),
        Cell::text(f.server(Role::Control)),
        count(tasks.len(), Unit::Tasks),
        Cell::text(format!("{} / {}", show(Role::Pattern, |m| m.calls), show(Role::Control, |m| m.calls))),
        Cell::text(format!("{} / {}", show(Role::Pattern, tokens), show(Role::Control, tokens))),
        delta,
        Cell::text(format!("{} / {}", show(Role::Pattern, |m| m.estimated_output_tokens), show(Role::Control, |m| m.estimated_output_tokens))),
    ]
}

fn oracle_tasks(o: &mut Vec<Block>, f: &OracleModule, terms: &Terms) {
    o.push(Block::Heading { level: 3, text: Comparison::label_in(&f.module, f.comparison.as_ref(), f.split).into() });
    let header = [
        "task",
        "role",
        "server",
        "valid/sessions",
        "passed",
        "calls / session",
        "schema bytes / session",
        "args bytes / session",
        "result bytes / session",
        "est. final context tokens / session",
        "est. input tokens / session",
        "est. output tokens / session",
    ];
    let int = |v: Option<u64>, unit: Unit| Cell::figure(opt_int(v), v.map(|v| v as f64), unit);
    let rows = f
        .rows
        .iter()
        .map(|r| {
            vec![
                Cell::text(r.task.clone()),
                Cell::text(r.role.to_string()),
                Cell::text(r.server.clone()),
                Cell::figure(format!("{}/{}", r.valid, r.sessions), Some(r.valid as f64), Unit::Sessions),
                count(r.passed, Unit::Sessions),
                int(r.calls, Unit::Calls),
                int(r.schema_bytes, Unit::Bytes),
                int(r.args_bytes, Unit::Bytes),
                int(r.result_bytes, Unit::Bytes),
                int(r.estimated_tokens, Unit::EstimatedTokens),
                int(r.estimated_input_tokens, Unit::EstimatedTokens),
                int(r.estimated_output_tokens, Unit::EstimatedTokens),
            ]
        })
        .collect();
    o.push(Block::Table(terms.grid(&header, &[L, L, L, R, R, R, R, R, R, R, R, R], rows)));
    // The sum sweep reports compare; said apart from the table, whose figures are per session.
    let totals: Vec<String> = f
        .per_session
        .keys()
        .map(|role| match f.total_estimated_input_tokens.get(role) {
            Some(t) => format!("{role} {t}"),
            None => format!("{role} — (not every task has the figure)"),
        })
        .collect();
    o.push(Block::Paragraph(
        format!("est. input tokens Σ over tasks (summed, not per session): {}.", if totals.is_empty() { "—".into() } else { totals.join(", ") }).into(),
    ));
}
