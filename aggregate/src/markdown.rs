//! The Markdown report: attrition first, then per model and module the side-by-side table, the
//! paired differences and the verdict, the per-task table, then the oracle floors.

use std::fmt::Write;

use crate::metrics::{ArmMetrics, Diff, Dist, ModuleReport, OracleModule, OraclePerSession, PairOutcomes, Summary, TaskArm, TaskRow};
use crate::stats::Interval;
use records::{Provider, Role};

pub(crate) fn num(x: f64) -> String {
    if x.abs() >= 100.0 || x.fract() == 0.0 { format!("{x:.0}") } else { format!("{x:.1}") }
}

fn opt_num(x: Option<f64>) -> String {
    x.map(num).unwrap_or_else(|| "—".into())
}

fn opt_int(x: Option<u64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_else(|| "—".into())
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn ci(i: Option<Interval>, f: fn(f64) -> String) -> String {
    i.map(|i| format!(" [{}, {}]", f(i.lo), f(i.hi))).unwrap_or_default()
}

fn signed(x: f64) -> String {
    if x > 0.0 { format!("+{}", num(x)) } else { num(x) }
}

fn signed_pct(x: f64) -> String {
    if x > 0.0 { format!("+{:.1}%", x * 100.0) } else { format!("{:.1}%", x * 100.0) }
}

/// "median / mean [ci] (n, k null)".
pub(crate) fn dist_cell(d: &Dist) -> String {
    if d.n == 0 {
        return if d.missing > 0 { format!("— ({} null)", d.missing) } else { "—".into() };
    }
    let mut s = format!("{} / {}{}", opt_num(d.median), opt_num(d.mean), ci(d.mean_ci95, num));
    if d.missing > 0 {
        write!(s, " ({} null)", d.missing).unwrap();
    }
    s
}

fn cost_cell(d: &Dist) -> String {
    if d.n == 0 {
        return if d.missing > 0 { format!("— ({} unpriced/null)", d.missing) } else { "—".into() };
    }
    let f = |x: f64| format!("${x:.4}");
    let mut s = format!("{} / {}", d.median.map(f).unwrap_or_default(), d.mean.map(f).unwrap_or_default());
    if d.missing > 0 {
        write!(s, " ({} unpriced/null)", d.missing).unwrap();
    }
    s
}

fn diff_cell(d: &Option<Diff>, rate: bool) -> String {
    let Some(d) = d else { return "—".into() };
    let mut s = if rate {
        format!("{}{}", signed_pct(d.mean), ci(d.ci95, signed_pct))
    } else {
        let mut s = format!("{}{}", signed(d.mean), ci(d.ci95, signed));
        if let Some(r) = d.relative {
            write!(s, " ({}{})", signed_pct(r), ci(d.relative_ci95, signed_pct)).unwrap();
        }
        s
    };
    write!(s, " · n={}", d.n).unwrap();
    if d.missing > 0 {
        write!(s, ", {} null", d.missing).unwrap();
    }
    s
}

fn invalid_list(m: &std::collections::BTreeMap<String, usize>) -> String {
    if m.is_empty() { "—".into() } else { m.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ") }
}

fn tri(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    }
}

/// One arm's cells of a task row; `expected` is the k its pass@k and pass^k were computed over
/// (the planned k, or without a manifest the most reps any task of the arm has).
fn task_arm(a: &TaskArm, expected: usize) -> String {
    let missing = expected.saturating_sub(a.k);
    if a.k == 0 {
        return match (missing, a.planned_k) {
            (0, _) => "— | — | —".into(),
            (_, Some(_)) => format!("none of {missing} planned recorded | unknown | unknown"),
            (_, None) => "none recorded | unknown | unknown".into(),
        };
    }
    let mut s = format!("{}/{} valid passed", a.passed, a.valid);
    if a.could_not_score > 0 {
        write!(s, ", {} could not score", a.could_not_score).unwrap();
    }
    let mut gaps = Vec::new();
    if a.valid < a.k {
        gaps.push(format!("{} invalid", a.k - a.valid));
    }
    if missing > 0 {
        gaps.push(format!("{missing} missing"));
    }
    if !gaps.is_empty() {
        write!(s, " ({})", gaps.join(", ")).unwrap();
    }
    format!("{s} | {} | {}", tri(a.pass_at_k), tri(a.pass_all_k))
}

/// "3 both passed · 1 pattern only · 0 control only · 8 neither".
pub(crate) fn pair_outcomes(o: &PairOutcomes) -> String {
    format!("{} both passed · {} pattern only · {} control only · {} neither", o.both_passed, o.pattern_only, o.control_only, o.neither)
}

/// The label the all-pairs turn and token differences carry when an arm passed too little: they
/// are then computed over failures and must not read as savings.
pub(crate) fn over_failures(m: &ModuleReport) -> Option<String> {
    if m.few_passes.is_empty() {
        return None;
    }
    let arms: Vec<&str> = m.few_passes.iter().map(|r| r.as_str()).collect();
    Some(format!(
        "computed over failures ({} passed too little; {} of {} pairs passed in neither arm), not a saving",
        arms.join(" and "),
        m.paired.outcomes.neither,
        m.paired.pairs_used
    ))
}

/// An arm's mean over the both-passed pairs (the control's mean plus the mean difference).
fn both_mean(d: &Option<Diff>, role: Role) -> String {
    match d {
        None => "—".into(),
        Some(d) => num(match role {
            Role::Pattern => d.control_mean + d.mean,
            Role::Control => d.control_mean,
        }),
    }
}

fn arm_col(a: &Option<ArmMetrics>, f: impl Fn(&ArmMetrics) -> String) -> String {
    a.as_ref().map(f).unwrap_or_else(|| "no sessions".into())
}

/// The report's parts, in the order [`render`] joins them; the HTML report lays them out with
/// its own headline, chart and session list.
#[derive(Debug, Clone)]
pub struct Sections {
    pub title: String,
    /// How the run went (a stop, a skipped preflight, experiment notices): before any number.
    pub notices: String,
    pub headline: String,
    pub chart: String,
    pub attrition: String,
    pub models: String,
    pub oracle: String,
    pub provenance: String,
    pub method: String,
}

/// The chart's section. Its values are per session, as the tables' are (see `chart::rows`).
const CHART: &str = "## Chart\n\n![Success rate, turns and input tokens per module and arm](chart.svg)\n\nEvery value is per session, as in the tables: the success rate and the means over the arm's valid sessions (the mean columns of the model tables), and the oracle's estimate per session (mean over tasks, the oracle table's est. input tokens / session); nothing is summed over tasks. The same chart as [SVG](chart.svg) and [PNG](chart.png), beside this file.\n\n";

pub fn render(s: &Summary) -> String {
    let p = sections(s);
    [p.title, p.notices, p.headline, p.chart, p.attrition, p.models, p.oracle, p.provenance, p.method].concat()
}

pub fn sections(s: &Summary) -> Sections {
    let exp = if s.experiments.is_empty() { "(none)".to_string() } else { s.experiments.join(", ") };
    Sections {
        title: format!("# mcp-pattern-bench report — {exp}\n\n"),
        notices: notices(s),
        headline: headline(s),
        chart: CHART.into(),
        attrition: attrition(s),
        models: models(s),
        oracle: oracle(s),
        provenance: provenance(s),
        method: method(s),
    }
}

fn notices(s: &Summary) -> String {
    let mut o = String::new();
    // How the run went comes before any number: a stopped run is missing sessions, and a
    // skipped preflight means nothing checked the endpoint could call tools.
    if let Some(stop) = &s.run.stopped {
        writeln!(
            o,
            "> **The run stopped early** ({}, at {}): {}. Sessions it never reached are missing, not failed; resume the run to complete it.\n",
            stop.kind,
            stop.at.to_rfc3339(),
            stop.detail
        )
        .unwrap();
    }
    if s.run.preflight_skipped {
        writeln!(o, "> **The endpoint preflight was skipped** (--skip-preflight): nothing checked before the sessions that the endpoint answers, serves the model id and returns tool calls natively; a broken setup can look like valid failures.\n").unwrap();
    }
    for n in &s.notices {
        writeln!(o, "> {n}\n").unwrap();
    }

    o
}

fn attrition(s: &Summary) -> String {
    let mut o = String::new();
    writeln!(o, "## Attrition (planned, attempted and valid sessions)\n").unwrap();
    writeln!(
        o,
        "| model | module | server | role | planned | attempts | replaced | recorded | valid | invalid (reason: count) | turn-cap hits | context overflows | tool calls as text | unparseable output |"
    )
    .unwrap();
    writeln!(o, "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |").unwrap();
    for r in &s.attrition {
        let model = if r.provider == Provider::Oracle { format!("{} (oracle floor)", r.model) } else { r.model.clone() };
        writeln!(
            o,
            "| {model} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.module,
            r.server,
            r.role,
            r.planned.map_or_else(|| "—".into(), |p| p.to_string()),
            r.attempts,
            r.replaced,
            r.attempted,
            r.valid,
            invalid_list(&r.invalid),
            r.turn_cap_hits,
            r.context_exceeded,
            r.tool_call_as_text,
            r.unparseable_output
        )
        .unwrap();
    }
    writeln!(
        o,
        "\nCounts of sessions, summed over the cell's tasks and reps (a cell: one model, module and server); the last four count valid sessions, each a valid failure. Each column is defined under Method.\n"
    )
    .unwrap();

    o
}

fn models(s: &Summary) -> String {
    let mut o = String::new();
    if s.models.is_empty() {
        writeln!(o, "No model sessions: nothing to compare (oracle floors below are structural, not model results).\n").unwrap();
    }
    for m in &s.models {
        writeln!(o, "## Model `{}` ({})\n", m.model, m.provider).unwrap();
        for module in &m.modules {
            render_module(&mut o, module, s.prices_loaded);
        }
    }

    o
}

fn oracle(s: &Summary) -> String {
    let mut o = String::new();
    if s.oracle_floors.is_empty() {
        return o;
    }
    writeln!(o, "## Oracle structural floors\n").unwrap();
    writeln!(o, "Scripted oracle plans, no model: the minimum calls and bytes each arm needs. Tokens are an **estimate** (bytes / 4), never a measurement, and are never mixed into model results. Input tokens assume one call per turn plus an answer turn, each turn resending the system prompt, task, definitions and all earlier calls and results, as a model session is billed. Every figure is per session: in a module's row the mean over its tasks (as the chart shows it), in a task's row the median over that task's sessions.\n").unwrap();
    writeln!(o, "| module | pattern server | control server | tasks | calls / session: pattern / control | est. input tokens / session: pattern / control | est. input tokens / session: pattern − control |").unwrap();
    writeln!(o, "| --- | --- | --- | ---: | ---: | ---: | ---: |").unwrap();
    for f in &s.oracle_floors {
        oracle_summary_row(&mut o, f);
    }
    writeln!(o).unwrap();
    for f in &s.oracle_floors {
        oracle_tasks(&mut o, f);
    }
    o
}

fn oracle_summary_row(o: &mut String, f: &OracleModule) {
    let show = |role: Role, pick: fn(&OraclePerSession) -> Option<f64>| match f.per_session_of(role, pick) {
        Ok(v) => readable(v),
        Err(why) => format!("— ({why})"),
    };
    let tokens = |m: &OraclePerSession| m.estimated_input_tokens;
    let delta = match (f.per_session_of(Role::Pattern, tokens), f.per_session_of(Role::Control, tokens)) {
        (Ok(p), Ok(c)) if c > 0.0 => format!("{} ({})", signed_readable(p - c), signed_pct(p / c - 1.0)),
        _ => "—".into(),
    };
    let tasks: std::collections::BTreeSet<&str> = f.rows.iter().map(|r| r.task.as_str()).collect();
    writeln!(
        o,
        "| {} | {} | {} | {} | {} / {} | {} / {} | {} |",
        crate::metrics::Comparison::label(&f.module, f.comparison.as_ref()),
        f.server(Role::Pattern),
        f.server(Role::Control),
        tasks.len(),
        show(Role::Pattern, |m| m.calls),
        show(Role::Control, |m| m.calls),
        show(Role::Pattern, tokens),
        show(Role::Control, tokens),
        delta
    )
    .unwrap();
}

fn oracle_tasks(o: &mut String, f: &OracleModule) {
    writeln!(o, "### {}\n", crate::metrics::Comparison::label(&f.module, f.comparison.as_ref())).unwrap();
    writeln!(
        o,
        "| task | role | server | valid/sessions | passed | calls / session | schema bytes / session | args bytes / session | result bytes / session | est. final context tokens / session | est. input tokens / session |"
    )
    .unwrap();
    writeln!(o, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |").unwrap();
    for r in &f.rows {
        writeln!(
            o,
            "| {} | {} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} |",
            r.task,
            r.role,
            r.server,
            r.valid,
            r.sessions,
            r.passed,
            opt_int(r.calls),
            opt_int(r.schema_bytes),
            opt_int(r.args_bytes),
            opt_int(r.result_bytes),
            opt_int(r.estimated_tokens),
            opt_int(r.estimated_input_tokens)
        )
        .unwrap();
    }
    // The sum sweep reports compare; said apart from the table, whose figures are per session.
    let totals: Vec<String> = f
        .per_session
        .keys()
        .map(|role| match f.total_estimated_input_tokens.get(role) {
            Some(t) => format!("{role} {t}"),
            None => format!("{role} — (not every task has the figure)"),
        })
        .collect();
    writeln!(o, "\nest. input tokens Σ over tasks (summed, not per session): {}.\n", if totals.is_empty() { "—".into() } else { totals.join(", ") }).unwrap();
}

fn method(s: &Summary) -> String {
    let mut o = String::new();
    writeln!(o, "## Method\n").unwrap();
    writeln!(o, "- Success: {}; \"could not score\" counts as not passed and is shown apart from \"failed\".", s.method.success_interval).unwrap();
    writeln!(o, "- Differences: {} ({} resamples, seed {}).", s.method.difference_interval, s.method.bootstrap_resamples, s.method.bootstrap_seed).unwrap();
    writeln!(o, "- Relative differences (in parentheses): {}.", s.method.relative_interval).unwrap();
    writeln!(o, "- Distributions are over valid sessions, shown as median / mean [95% CI of the mean]; null usage is counted, never treated as 0.").unwrap();
    writeln!(o, "- Verdict: {}", s.method.verdict_rules).unwrap();
    writeln!(o, "- Paired differences over two sets of pairs: {}", s.method.pair_sets).unwrap();
    match s.run.planned_k {
        Some(k) => writeln!(o, "- pass@k and pass^k use the planned k = {k} from the manifest: a task whose {k} reps are not all recorded and valid has pass^k unknown (and pass@k unknown unless a recorded rep passed).").unwrap(),
        None => writeln!(o, "- pass@k and pass^k use k = the most reps any task of an arm has (no manifest, so the planned k is unknown): a task with fewer has pass^k unknown (and pass@k unknown unless a recorded rep passed).").unwrap(),
    }
    writeln!(o, "- Records are pooled only when their fingerprints agree (within a model: everything but the server manifest and the task's own fields; within a task: world seed and scale, task sha256, turn cap; within a server: its manifest); fingerprints here: {}.", match s.run.fingerprints {
        crate::check::Fingerprints::Checked => "checked",
        crate::check::Fingerprints::Unknown => "absent, not checked",
    }).unwrap();
    writeln!(o, "- Power: {}", s.method.power_method).unwrap();
    definitions(&mut o, &s.method.definitions);
    o
}

/// Every header and row label of the tables, spelled as they are, each with how its figure is
/// aggregated: `- **term** · **term** (per session: over what): meaning.`
fn definitions(o: &mut String, list: &[crate::definitions::Definition]) {
    writeln!(o, "\n### Definitions\n").unwrap();
    writeln!(o, "Every header and row label of the tables above. \"Per session\" is one session's value, then a mean or median over the sessions named; \"summed\" is a count or sum over the set named. A header with \"/ session\" is per session; one with \"Σ\" is summed. The chart shows per-session values only.\n").unwrap();
    for d in list {
        let terms: Vec<String> = d.terms.iter().map(|t| format!("**{t}**")).collect();
        let how = match d.aggregation {
            crate::definitions::Aggregation::Label => String::new(),
            a => format!(" ({}: {})", a.as_str(), d.over),
        };
        writeln!(o, "- {}{how}: {}.", terms.join(" · "), d.meaning).unwrap();
    }
}

fn render_module(o: &mut String, m: &ModuleReport, prices_loaded: bool) {
    writeln!(o, "### {} — verdict: **{}**\n", crate::metrics::Comparison::label(&m.module, m.comparison.as_ref()), m.verdict.as_str()).unwrap();
    writeln!(o, "{}.\n", m.verdict_reason).unwrap();
    for n in &m.notices {
        writeln!(o, "> {n}\n").unwrap();
    }
    let (p, c) = (&m.pattern, &m.control);
    let title = |a: &Option<ArmMetrics>, r: &str| a.as_ref().map(|a| format!("{r}: {}", a.server)).unwrap_or_else(|| r.into());
    writeln!(o, "| metric | {} | {} | paired difference (pattern − control) [95% CI] |", title(p, "pattern"), title(c, "control")).unwrap();
    writeln!(o, "| --- | --- | --- | --- |").unwrap();
    let planned = m.paired.pairs_planned.map(|n| format!(" ({n} planned)")).unwrap_or_default();
    writeln!(
        o,
        "| sessions, valid / attempted | {} | {} | {} pairs used of {}{planned} |",
        arm_col(p, |a| format!("{}/{}", a.valid, a.attempted)),
        arm_col(c, |a| format!("{}/{}", a.valid, a.attempted)),
        m.paired.pairs_used,
        m.paired.pairs_seen
    )
    .unwrap();
    let success = |a: &ArmMetrics| match a.success.rate {
        Some(r) => format!("{} ({}/{}){}", pct(r), a.success.successes, a.success.n, ci(a.success.wilson95, pct)),
        None => "—".into(),
    };
    writeln!(o, "| pair outcomes | | | {} |", pair_outcomes(&m.paired.outcomes)).unwrap();
    writeln!(o, "| success rate [Wilson 95%] | {} | {} | {} |", arm_col(p, success), arm_col(c, success), diff_cell(&m.paired.success, true)).unwrap();
    let outcomes = |a: &ArmMetrics| format!("{} / {} / {}", a.passed, a.failed, a.could_not_score);
    writeln!(o, "| passed / failed / could not score | {} | {} | |", arm_col(p, outcomes), arm_col(c, outcomes)).unwrap();
    let failures = over_failures(m).map(|n| format!(" — {n}")).unwrap_or_default();
    let both = &m.paired.both_passed;
    writeln!(
        o,
        "| turns / session (median / mean [CI]), all pairs | {} | {} | {}{failures} |",
        arm_col(p, |a| dist_cell(&a.turns)),
        arm_col(c, |a| dist_cell(&a.turns)),
        diff_cell(&m.paired.turns, false)
    )
    .unwrap();
    writeln!(
        o,
        "| turns / session (mean), both passed | {} | {} | {} |",
        both_mean(&both.turns, Role::Pattern),
        both_mean(&both.turns, Role::Control),
        diff_cell(&both.turns, false)
    )
    .unwrap();
    writeln!(
        o,
        "| input tokens / session (median / mean [CI]), all pairs | {} | {} | {}{failures} |",
        arm_col(p, |a| dist_cell(&a.input_tokens)),
        arm_col(c, |a| dist_cell(&a.input_tokens)),
        diff_cell(&m.paired.input_tokens, false)
    )
    .unwrap();
    writeln!(
        o,
        "| input tokens / session (mean), both passed | {} | {} | {} |",
        both_mean(&both.input_tokens, Role::Pattern),
        both_mean(&both.input_tokens, Role::Control),
        diff_cell(&both.input_tokens, false)
    )
    .unwrap();
    writeln!(
        o,
        "| cached input tokens / session (median / mean [CI]) | {} | {} | |",
        arm_col(p, |a| dist_cell(&a.cached_input_tokens)),
        arm_col(c, |a| dist_cell(&a.cached_input_tokens))
    )
    .unwrap();
    writeln!(
        o,
        "| output tokens / session (median / mean [CI]), all pairs | {} | {} | {}{failures} |",
        arm_col(p, |a| dist_cell(&a.output_tokens)),
        arm_col(c, |a| dist_cell(&a.output_tokens)),
        diff_cell(&m.paired.output_tokens, false)
    )
    .unwrap();
    writeln!(
        o,
        "| reasoning tokens / session (median / mean [CI]), part of output | {} | {} | |",
        arm_col(p, |a| dist_cell(&a.reasoning_tokens)),
        arm_col(c, |a| dist_cell(&a.reasoning_tokens))
    )
    .unwrap();
    writeln!(
        o,
        "| tool calls Σ over valid sessions (errors) | {} | {} | |",
        arm_col(p, |a| format!("{} ({})", a.tool_calls, a.tool_call_errors)),
        arm_col(c, |a| format!("{} ({})", a.tool_calls, a.tool_call_errors))
    )
    .unwrap();
    writeln!(o, "| turn-cap hits (valid failures) | {} | {} | |", arm_col(p, |a| a.turn_cap_hits.to_string()), arm_col(c, |a| a.turn_cap_hits.to_string()))
        .unwrap();
    writeln!(
        o,
        "| context-window overflows (valid failures) | {} | {} | |",
        arm_col(p, |a| a.context_exceeded.to_string()),
        arm_col(c, |a| a.context_exceeded.to_string())
    )
    .unwrap();
    writeln!(
        o,
        "| tool calls written as text (valid failures) | {} | {} | |",
        arm_col(p, |a| a.tool_call_as_text.to_string()),
        arm_col(c, |a| a.tool_call_as_text.to_string())
    )
    .unwrap();
    writeln!(
        o,
        "| unparseable output (valid failures) | {} | {} | |",
        arm_col(p, |a| a.unparseable_output.to_string()),
        arm_col(c, |a| a.unparseable_output.to_string())
    )
    .unwrap();
    if prices_loaded {
        writeln!(o, "| cost per session, USD (median / mean) | {} | {} | |", arm_col(p, |a| cost_cell(&a.cost_usd)), arm_col(c, |a| cost_cell(&a.cost_usd)))
            .unwrap();
    }
    writeln!(o).unwrap();
    if m.paired.dropped.is_empty() {
        writeln!(o, "Pairs dropped: none.\n").unwrap();
    } else {
        let list: Vec<String> = m.paired.dropped.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        writeln!(o, "Pairs dropped: {} ({}).\n", m.paired.dropped_pairs.len(), list.join("; ")).unwrap();
    }
    match &m.power {
        Some(pw) => writeln!(
            o,
            "Power (normal approximation): detecting a {:.0}% input-token difference ({} tokens) with 80% power at α = 0.05 needs ≈ {} pairs, i.e. {} reps per task over {} tasks (observed paired SD {}).\n",
            pw.relative_difference * 100.0,
            num(pw.delta_tokens),
            pw.pairs_needed,
            pw.reps_per_task_needed,
            pw.tasks,
            num(pw.paired_sd)
        )
        .unwrap(),
        None => writeln!(o, "Power: not estimable (needs ≥ 2 pairs with input tokens in both arms and a non-zero control mean).\n").unwrap(),
    }
    writeln!(o, "| task | pattern: outcome | pattern pass@k | pattern pass^k | control: outcome | control pass@k | control pass^k |").unwrap();
    writeln!(o, "| --- | --- | --- | --- | --- | --- | --- |").unwrap();
    // The k each arm's answers are over: as metrics computes it.
    let found = |arm: fn(&TaskRow) -> &TaskArm| m.tasks.iter().map(|t| arm(t).k).max().unwrap_or(0);
    let (pattern_k, control_k) = (found(|t| &t.pattern), found(|t| &t.control));
    for t in &m.tasks {
        let (k, pk, ck) = match t.pattern.planned_k.or(t.control.planned_k) {
            Some(k) => (format!("k={k} planned"), k as usize, k as usize),
            None => (format!("k={}", pattern_k.max(control_k)), pattern_k, control_k),
        };
        writeln!(o, "| {} ({k}) | {} | {} |", t.task, task_arm(&t.pattern, pk), task_arm(&t.control, ck)).unwrap();
    }
    writeln!(o).unwrap();
    let unknown = m.tasks.iter().flat_map(|t| [&t.pattern, &t.control]).any(|a| a.pass_at_k.is_none() || a.pass_all_k.is_none());
    if unknown {
        writeln!(o, "unknown: some of the k reps are invalid or missing, so the answer is not known (a pass^k of \"unknown\" is never counted as a pass).\n")
            .unwrap();
    }
}

/// `x [lo, hi]` for a rate, a mean or a difference, "—" when there is none.
fn valued(v: Option<f64>, i: Option<Interval>, f: fn(f64) -> String) -> String {
    v.map(|v| format!("{}{}", f(v), ci(i, f))).unwrap_or_else(|| "—".into())
}

fn readable(x: f64) -> String {
    crate::chart::readable(x)
}

fn signed_readable(x: f64) -> String {
    if x > 0.0 { format!("+{}", readable(x)) } else { readable(x) }
}

/// A difference with its interval and relative change, or "—".
fn delta(d: &Option<Diff>) -> String {
    match d {
        None => "—".into(),
        Some(d) => {
            let mut s = valued(Some(d.mean), d.ci95, signed_readable);
            if let Some(r) = d.relative {
                write!(s, " ({}{})", signed_pct(r), ci(d.relative_ci95, signed_pct)).unwrap();
            }
            s
        }
    }
}

fn sessions_line(a: &Option<ArmMetrics>) -> String {
    match a {
        None => "no sessions".into(),
        Some(a) if a.invalid.is_empty() => format!("{}/{}", a.valid, a.attempted),
        Some(a) => format!("{}/{} ({})", a.valid, a.attempted, invalid_list(&a.invalid)),
    }
}

/// What was found, first: per model and module the verdict and the three metrics side by side,
/// with attempted vs valid sessions beside them.
fn headline(s: &Summary) -> String {
    let mut o = String::new();
    writeln!(o, "## Headline\n").unwrap();
    if s.models.is_empty() {
        writeln!(
            o,
            "No model sessions: the oracle's scripted plans only, no model. Calls are counted; tokens are **estimates** (bytes / 4), never measurements.\n"
        )
        .unwrap();
        for f in &s.oracle_floors {
            let mean = |role: Role, pick: fn(&OraclePerSession) -> Option<f64>| f.per_session_of(role, pick).ok();
            let show = |v: Option<f64>| v.map(readable).unwrap_or_else(|| "—".into());
            let tokens = |m: &OraclePerSession| m.estimated_input_tokens;
            let (tp, tc) = (mean(Role::Pattern, tokens), mean(Role::Control, tokens));
            let change = match (tp, tc) {
                (Some(p), Some(c)) if c > 0.0 => format!(" ({})", signed_pct(p / c - 1.0)),
                _ => String::new(),
            };
            let sessions = |role: Role| {
                let rows = || f.rows.iter().filter(move |r| r.role == role);
                format!("{}/{}", rows().map(|r| r.valid).sum::<usize>(), rows().map(|r| r.sessions).sum::<usize>())
            };
            writeln!(
                o,
                "- **{}** (valid / attempted sessions: pattern {} · control {}): tool calls per session, pattern {} {} · control {} {}; estimated input tokens per session (estimate) {} · {}{change}.",
                crate::metrics::Comparison::label(&f.module, f.comparison.as_ref()),
                sessions(Role::Pattern),
                sessions(Role::Control),
                f.server(Role::Pattern),
                show(mean(Role::Pattern, |m| m.calls)),
                f.server(Role::Control),
                show(mean(Role::Control, |m| m.calls)),
                show(tp),
                show(tc)
            )
            .unwrap();
        }
        writeln!(o).unwrap();
        return o;
    }
    for m in &s.models {
        writeln!(o, "### Model `{}` ({})\n", m.model, m.provider).unwrap();
        for x in &m.modules {
            writeln!(o, "**{} — {}.** {}.\n", crate::metrics::Comparison::label(&x.module, x.comparison.as_ref()), x.verdict.as_str(), x.verdict_reason)
                .unwrap();
            let rate = |a: &Option<ArmMetrics>| match a {
                Some(a) => match a.success.rate {
                    Some(r) => format!("{} ({}/{}){}", pct(r), a.success.successes, a.success.n, ci(a.success.wilson95, pct)),
                    None => "—".into(),
                },
                None => "no sessions".into(),
            };
            let mean = |a: &Option<ArmMetrics>, pick: fn(&ArmMetrics) -> &Dist| match a {
                Some(a) => valued(pick(a).mean, pick(a).mean_ci95, readable),
                None => "no sessions".into(),
            };
            let over_failures = over_failures(x).map(|n| format!(", {n}")).unwrap_or_default();
            let both = &x.paired.both_passed;
            let cost_of_success = |d: &Option<Diff>| match d {
                Some(d) => format!("{} over the {} where both passed", delta(&Some(d.clone())), pairs(d.n)),
                None => format!("none over the pairs where both passed ({} such pairs)", both.pairs),
            };
            writeln!(o, "- sessions, valid / attempted: pattern {} · control {}", sessions_line(&x.pattern), sessions_line(&x.control)).unwrap();
            writeln!(
                o,
                "- success rate [Wilson 95%]: pattern {} · control {} · difference {}",
                rate(&x.pattern),
                rate(&x.control),
                x.paired.success.as_ref().map(|d| valued(Some(d.mean), d.ci95, signed_pct)).unwrap_or_else(|| "—".into())
            )
            .unwrap();
            for (name, pick, all, succ) in [
                ("turns per session", (|a: &ArmMetrics| &a.turns) as fn(&ArmMetrics) -> &Dist, &x.paired.turns, &both.turns),
                ("input tokens per session", |a: &ArmMetrics| &a.input_tokens, &x.paired.input_tokens, &both.input_tokens),
            ] {
                writeln!(
                    o,
                    "- {name}, mean [95% CI]: pattern {} · control {} · difference {} over all {}{over_failures}; {}",
                    mean(&x.pattern, pick),
                    mean(&x.control, pick),
                    delta(all),
                    pairs(x.paired.pairs_used),
                    cost_of_success(succ)
                )
                .unwrap();
            }
            writeln!(o).unwrap();
        }
    }
    o
}

/// "1 pair", "3 pairs".
pub(crate) fn pairs(n: usize) -> String {
    if n == 1 { "1 pair".into() } else { format!("{n} pairs") }
}

/// A command line as one string a shell would take back.
pub(crate) fn shell_line(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
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

/// Rows of the provenance table, (what, value), shared by the Markdown and HTML reports.
pub(crate) fn provenance_rows(s: &Summary) -> Vec<(&'static str, String)> {
    let p = &s.provenance;
    let not_recorded = || "not recorded".to_string();
    let time = |t: Option<chrono::DateTime<chrono::Utc>>| t.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    let mut rows = vec![
        ("experiment", if s.experiments.is_empty() { "—".into() } else { s.experiments.join(", ") }),
        ("run command", p.command.as_deref().map(|c| format!("`{}`", shell_line(c))).unwrap_or_else(not_recorded)),
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
        (
            "k (reps per task and arm)",
            match (p.k, p.jobs) {
                (Some(k), Some(j)) => format!("{k} (run with {j} parallel jobs)"),
                (Some(k), None) => k.to_string(),
                _ => "not recorded (no manifest): the reps found per task".into(),
            },
        ),
        ("transport", p.transport.map(|t| t.to_string()).unwrap_or_else(not_recorded)),
    ];
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
    rows.push(("models and parameters", if models.is_empty() { "—".into() } else { models.join("; ") }));
    if let Some(url) = &p.base_url {
        rows.push(("model endpoint", url.clone()));
    }
    let worlds: Vec<String> = p.worlds.iter().map(|w| format!("seed {}, scale {} ({} tasks)", w.seed, w.scale, w.tasks)).collect();
    rows.push(("world seeds", if worlds.is_empty() { "—".into() } else { worlds.join("; ") }));
    rows.push(("bootstrap seed", p.bootstrap_seed.to_string()));
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
        },
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
        if checks.is_empty() { p.preflight.status.as_str().to_string() } else { format!("{} — {}", p.preflight.status.as_str(), checks.join("; ")) },
    ));
    let r = &p.report;
    let mut report = format!("aggregate {}", r.aggregate_version);
    if let Some(g) = &r.generator {
        write!(report, ", via {g}").unwrap();
    }
    if let Some(t) = time(r.generated_at) {
        write!(report, ", generated {t}").unwrap();
    }
    if let Some(c) = &r.command {
        write!(report, ": `{}`", shell_line(c)).unwrap();
    }
    rows.push(("this report", report));
    rows
}

fn provenance(s: &Summary) -> String {
    let mut o = String::new();
    writeln!(o, "## Provenance\n").unwrap();
    writeln!(o, "| what | value |").unwrap();
    writeln!(o, "| --- | --- |").unwrap();
    for (what, value) in provenance_rows(s) {
        writeln!(o, "| {what} | {} |", value.replace('|', "\\|")).unwrap();
    }
    writeln!(o).unwrap();
    o
}
