//! Records → per-cell metrics, paired differences, verdicts, power (DESIGN §9).
//!
//! Rules kept here, all of which the report restates:
//! - Attrition first: every cell says attempted vs valid sessions and why the rest are invalid.
//! - Nulls are never defaulted: a distribution says how many sessions had no value.
//! - Success rate = passed / valid sessions (a "could not score" counts as not passed but is
//!   counted apart from "failed"), with a Wilson 95% interval.
//! - Paired differences (pattern − control) use only (task, rep) pairs valid in both arms, with a
//!   percentile bootstrap 95% interval of the mean difference (fixed seed, SplitMix64).
//! - Oracle sessions are structural floors, never mixed with model results; model ids are never
//!   pooled.

use std::collections::{BTreeMap, BTreeSet};

use records::Verdict as TaskVerdict;
use records::{Provider, Role, SessionRecord};
use serde::{Deserialize, Serialize};

use crate::load::{Loaded, PriceTable};
use crate::stats::{self, Interval};

pub const SUMMARY_SCHEMA: &str = "mcp-pattern-bench/aggregate-summary/v1";

/// Knobs of the analysis; the defaults are the published method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    pub resamples: usize,
    pub seed: u64,
    /// Relative input-token difference the power estimate targets (0.10 = 10%).
    pub power_relative_difference: f64,
    /// Fewer valid pairs than this → "inconclusive" whatever the intervals say (a percentile
    /// bootstrap over a handful of pairs is too optimistic to support a verdict).
    pub min_pairs_for_verdict: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self { resamples: stats::BOOTSTRAP_RESAMPLES, seed: stats::BOOTSTRAP_SEED, power_relative_difference: 0.10, min_pairs_for_verdict: 10 }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    /// Experiment name(s) found in the records.
    pub experiments: Vec<String>,
    pub method: Method,
    pub prices_loaded: bool,
    /// One row per (model, module, server), model sessions and oracle sessions alike.
    pub attrition: Vec<AttritionRow>,
    /// One entry per model (id + provider); never pooled. Oracle excluded.
    pub models: Vec<ModelReport>,
    /// Oracle structural floors per module; empty when no oracle sessions.
    pub oracle_floors: Vec<OracleModule>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Method {
    pub success_interval: String,
    pub difference_interval: String,
    /// How the interval of a relative difference ("−13.4% [−16.0%, −9.1%]") is computed.
    #[serde(default)]
    pub relative_interval: String,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    pub min_pairs_for_verdict: usize,
    pub verdict_rules: String,
    pub power_method: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttritionRow {
    pub model: String,
    pub provider: Provider,
    pub module: String,
    pub server: String,
    pub role: Role,
    pub attempted: usize,
    pub valid: usize,
    /// Invalid reason → count.
    pub invalid: BTreeMap<String, usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelReport {
    pub model: String,
    pub provider: Provider,
    pub modules: Vec<ModuleReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleReport {
    pub module: String,
    pub pattern: Option<ArmMetrics>,
    pub control: Option<ArmMetrics>,
    pub paired: Paired,
    pub verdict: Verdict,
    pub verdict_reason: String,
    pub model_too_strong: bool,
    pub power: Option<Power>,
    pub notices: Vec<String>,
    pub tasks: Vec<TaskRow>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Confirmed,
    Negative,
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "confirmed",
            Self::Negative => "negative",
            Self::Inconclusive => "inconclusive",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmMetrics {
    pub server: String,
    pub role: Role,
    pub attempted: usize,
    pub valid: usize,
    pub invalid: BTreeMap<String, usize>,
    pub passed: usize,
    pub failed: usize,
    pub could_not_score: usize,
    pub turn_cap_hits: usize,
    /// Valid sessions whose conversation outgrew the model's context window (failures).
    #[serde(default)]
    pub context_exceeded: usize,
    pub success: Rate,
    pub turns: Dist,
    pub input_tokens: Dist,
    pub cached_input_tokens: Dist,
    pub output_tokens: Dist,
    /// Tool calls over valid sessions, and how many of them errored (or were refused).
    pub tool_calls: usize,
    pub tool_call_errors: usize,
    /// Per valid session, from the price table; missing when unpriced or usage is null.
    pub cost_usd: Dist,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub successes: usize,
    pub n: usize,
    pub rate: Option<f64>,
    pub wilson95: Option<Interval>,
}

/// A distribution over valid sessions: `n` with a value, `missing` with null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub n: usize,
    pub missing: usize,
    pub median: Option<f64>,
    pub mean: Option<f64>,
    /// Percentile bootstrap 95% interval of the mean.
    pub mean_ci95: Option<Interval>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Distinct (task, rep) keys seen in either arm.
    pub pairs_seen: usize,
    /// Valid in both arms.
    pub pairs_used: usize,
    /// Reason → count of pairs left out.
    pub dropped: BTreeMap<String, usize>,
    pub dropped_pairs: Vec<DroppedPair>,
    pub success: Option<Diff>,
    pub turns: Option<Diff>,
    pub input_tokens: Option<Diff>,
    pub output_tokens: Option<Diff>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DroppedPair {
    pub task: String,
    pub rep: u32,
    pub reason: String,
}

/// Mean paired difference pattern − control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    /// Pairs with a value in both arms.
    pub n: usize,
    /// Used pairs where either arm's value is null (left out of this metric only).
    pub missing: usize,
    pub mean: f64,
    pub ci95: Option<Interval>,
    /// Control mean over the same pairs.
    pub control_mean: f64,
    /// mean / control_mean = Σpattern / Σcontrol − 1 (null when the control mean is 0).
    pub relative: Option<f64>,
    /// Paired percentile bootstrap of Σpattern / Σcontrol − 1 itself (same resamples and seed as
    /// `ci95`), not `ci95` divided by the observed control mean.
    pub relative_ci95: Option<Interval>,
    pub sd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Power {
    pub relative_difference: f64,
    /// The absolute input-token difference that corresponds to.
    pub delta_tokens: f64,
    pub paired_sd: f64,
    pub pairs_needed: u64,
    pub tasks: usize,
    pub reps_per_task_needed: u64,
    pub method: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRow {
    pub task: String,
    pub pattern: TaskArm,
    pub control: TaskArm,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskArm {
    /// Reps attempted.
    pub k: usize,
    pub valid: usize,
    pub passed: usize,
    pub failed: usize,
    pub could_not_score: usize,
    /// Any of the k reps passed; null when none passed and some reps were invalid (unknown).
    pub pass_at_k: Option<bool>,
    /// All k reps passed; null when every valid rep passed but some reps were invalid.
    pub pass_all_k: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OracleModule {
    pub module: String,
    pub rows: Vec<OracleRow>,
    /// Σ over tasks of the per-task median estimated tokens (context at the end), per role;
    /// a role with a task lacking the figure is absent.
    pub total_estimated_tokens: BTreeMap<Role, u64>,
    /// Σ over tasks of the per-task median estimated input tokens (one call per turn), per
    /// role; comparable with model sessions' input tokens. Roles without the figure are absent.
    #[serde(default)]
    pub total_estimated_input_tokens: BTreeMap<Role, u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OracleRow {
    pub task: String,
    pub role: Role,
    pub server: String,
    pub sessions: usize,
    pub valid: usize,
    pub passed: usize,
    /// Medians over valid oracle sessions with a floor.
    pub calls: Option<f64>,
    pub schema_bytes: Option<f64>,
    pub args_bytes: Option<f64>,
    pub result_bytes: Option<f64>,
    /// An estimate, never a measurement: the context at the end of the plan.
    pub estimated_tokens: Option<f64>,
    pub estimate_method: Option<String>,
    /// An estimate, never a measurement: input tokens over the plan's turns, one call per turn.
    #[serde(default)]
    pub estimated_input_tokens: Option<f64>,
    #[serde(default)]
    pub input_estimate_method: Option<String>,
}

fn invalid_reason(r: &SessionRecord) -> Option<String> {
    match &r.validity {
        records::Validity::Valid => None,
        records::Validity::Invalid { reason, .. } => {
            Some(serde_json::to_value(reason).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_else(|| format!("{reason:?}")))
        }
    }
}

fn verdict_of(r: &SessionRecord) -> Option<TaskVerdict> {
    r.verifier.as_ref().map(|o| o.verdict)
}

fn passed(r: &SessionRecord) -> bool {
    verdict_of(r) == Some(TaskVerdict::Passed)
}

fn is_oracle(r: &SessionRecord) -> bool {
    r.model.provider == Provider::Oracle
}

/// Builds the whole summary.
pub fn summarise(sessions: &[Loaded], prices: Option<&PriceTable>, opts: &Options) -> Summary {
    let experiments: BTreeSet<String> = sessions.iter().map(|s| s.record.experiment.clone()).collect();

    // Attrition: (model, provider, module, server, role).
    let mut attr: BTreeMap<(String, Provider, String, String, Role), AttritionRow> = BTreeMap::new();
    for s in sessions {
        let r = &s.record;
        let row = attr.entry((r.model.id.clone(), r.model.provider, r.module.clone(), r.server.clone(), r.role)).or_insert_with(|| AttritionRow {
            model: r.model.id.clone(),
            provider: r.model.provider,
            module: r.module.clone(),
            server: r.server.clone(),
            role: r.role,
            attempted: 0,
            valid: 0,
            invalid: BTreeMap::new(),
        });
        row.attempted += 1;
        match invalid_reason(r) {
            None => row.valid += 1,
            Some(reason) => *row.invalid.entry(reason).or_default() += 1,
        }
    }

    // Model sessions: (model id, provider) → module → records.
    let mut by_model: BTreeMap<(String, Provider), BTreeMap<String, Vec<&SessionRecord>>> = BTreeMap::new();
    let mut oracle: BTreeMap<String, Vec<&SessionRecord>> = BTreeMap::new();
    for s in sessions {
        let r = &s.record;
        if is_oracle(r) {
            oracle.entry(r.module.clone()).or_default().push(r);
        } else {
            by_model.entry((r.model.id.clone(), r.model.provider)).or_default().entry(r.module.clone()).or_default().push(r);
        }
    }

    let models = by_model
        .into_iter()
        .map(|((model, provider), modules)| {
            let modules = modules.into_iter().map(|(module, recs)| module_report(&model, &module, &recs, prices, opts)).collect();
            ModelReport { model, provider, modules }
        })
        .collect();

    let oracle_floors = oracle.into_iter().map(|(module, recs)| oracle_module(module, &recs)).collect();

    Summary {
        schema: SUMMARY_SCHEMA.into(),
        experiments: experiments.into_iter().collect(),
        method: Method {
            success_interval: "Wilson score 95% interval over valid sessions".into(),
            difference_interval: "percentile bootstrap 95% interval of the mean paired difference (pattern − control) over (task, rep) pairs valid in both arms; SplitMix64 resampling".into(),
            relative_interval: RELATIVE_INTERVAL.into(),
            bootstrap_resamples: opts.resamples,
            bootstrap_seed: opts.seed,
            min_pairs_for_verdict: opts.min_pairs_for_verdict,
            verdict_rules: VERDICT_RULES.into(),
            power_method: POWER_METHOD.into(),
        },
        prices_loaded: prices.is_some(),
        attrition: attr.into_values().collect(),
        models,
        oracle_floors,
    }
}

pub const VERDICT_RULES: &str = "Correctness first. negative: the success-rate difference interval lies entirely below 0 (any token saving notwithstanding), or success is not shown worse and the input-token difference interval lies entirely above 0 (the pattern costs more). confirmed: the success-rate difference interval is not entirely below 0 (no detected regression; its upper bound ≥ 0 — this is not a proof of equivalence) AND the input-token difference interval lies entirely below 0. inconclusive: anything else, including fewer valid pairs than the minimum or a missing arm.";

pub const RELATIVE_INTERVAL: &str = "percentile bootstrap 95% interval of Σpattern / Σcontrol − 1 over the same pairs, resampled with the same seed as the difference interval (the ratio is recomputed in every resample, so the control mean's own uncertainty is included)";

pub const POWER_METHOD: &str = "normal approximation for a two-sided paired test, α = 0.05, power 0.80: pairs = ((z0.975 + z0.80) · SD of paired input-token differences / (relative difference · control mean))², reps per task = ceil(pairs / tasks). An approximation from the observed SD, for pre-registering a follow-up.";

fn dist(values: impl Iterator<Item = Option<f64>>, opts: &Options) -> Dist {
    let mut xs = Vec::new();
    let mut missing = 0;
    for v in values {
        match v {
            Some(x) => xs.push(x),
            None => missing += 1,
        }
    }
    Dist { n: xs.len(), missing, median: stats::median(&xs), mean: stats::mean(&xs), mean_ci95: stats::bootstrap_mean_ci(&xs, opts.resamples, opts.seed) }
}

fn arm_metrics(recs: &[&SessionRecord], model: &str, prices: Option<&PriceTable>, opts: &Options) -> ArmMetrics {
    let valid: Vec<&SessionRecord> = recs.iter().copied().filter(|r| r.validity.is_valid()).collect();
    let mut invalid = BTreeMap::new();
    for r in recs {
        if let Some(reason) = invalid_reason(r) {
            *invalid.entry(reason).or_insert(0) += 1;
        }
    }
    let count = |v: TaskVerdict| valid.iter().filter(|r| verdict_of(r) == Some(v)).count();
    let passed_n = count(TaskVerdict::Passed);
    // A valid session without a verifier outcome could not be scored either.
    let could_not_score = valid.iter().filter(|r| matches!(verdict_of(r), None | Some(TaskVerdict::CouldNotScore))).count();
    let u = |f: fn(&SessionRecord) -> Option<u64>| dist(valid.iter().map(|r| f(r).map(|x| x as f64)), opts);
    ArmMetrics {
        server: recs.first().map(|r| r.server.clone()).unwrap_or_default(),
        role: recs.first().map_or(Role::Pattern, |r| r.role),
        attempted: recs.len(),
        valid: valid.len(),
        invalid,
        passed: passed_n,
        failed: count(TaskVerdict::Failed),
        could_not_score,
        turn_cap_hits: valid.iter().filter(|r| r.turn_cap_hit).count(),
        context_exceeded: valid.iter().filter(|r| r.context_exceeded).count(),
        success: Rate {
            successes: passed_n,
            n: valid.len(),
            rate: (!valid.is_empty()).then(|| passed_n as f64 / valid.len() as f64),
            wilson95: stats::wilson(passed_n, valid.len()),
        },
        turns: dist(valid.iter().map(|r| Some(r.turns as f64)), opts),
        input_tokens: u(|r| r.totals.input_tokens),
        cached_input_tokens: u(|r| r.totals.cached_input_tokens),
        output_tokens: u(|r| r.totals.output_tokens),
        tool_calls: valid.iter().map(|r| r.tool_calls.len()).sum(),
        tool_call_errors: valid.iter().map(|r| r.tool_calls.iter().filter(|c| c.is_error || c.invalid_arguments || c.unknown_tool).count()).sum(),
        cost_usd: dist(valid.iter().map(|r| prices.and_then(|p| p.cost(model, &r.totals))), opts),
    }
}

fn diff(pairs: &[(&SessionRecord, &SessionRecord)], f: impl Fn(&SessionRecord) -> Option<f64>, opts: &Options) -> Option<Diff> {
    let mut d = Vec::new();
    let mut p = Vec::new();
    let mut c = Vec::new();
    let mut missing = 0;
    for (pat, ctl) in pairs {
        match (f(pat), f(ctl)) {
            (Some(a), Some(b)) => {
                d.push(a - b);
                p.push(a);
                c.push(b);
            }
            _ => missing += 1,
        }
    }
    let mean = stats::mean(&d)?;
    let control_mean = stats::mean(&c)?;
    let ci95 = stats::bootstrap_mean_ci(&d, opts.resamples, opts.seed);
    let relative = (control_mean != 0.0).then(|| mean / control_mean);
    Some(Diff {
        n: d.len(),
        missing,
        mean,
        ci95,
        control_mean,
        relative,
        relative_ci95: relative.and_then(|_| stats::bootstrap_ratio_ci(&p, &c, opts.resamples, opts.seed)),
        sd: stats::sd(&d),
    })
}

fn task_arm(recs: &[&SessionRecord]) -> TaskArm {
    let valid: Vec<_> = recs.iter().filter(|r| r.validity.is_valid()).collect();
    let k = recs.len();
    let passed_n = valid.iter().filter(|r| passed(r)).count();
    let failed = valid.iter().filter(|r| verdict_of(r) == Some(TaskVerdict::Failed)).count();
    let all_valid = valid.len() == k;
    TaskArm {
        k,
        valid: valid.len(),
        passed: passed_n,
        failed,
        could_not_score: valid.len() - passed_n - failed,
        pass_at_k: if passed_n > 0 {
            Some(true)
        } else if all_valid && k > 0 {
            Some(false)
        } else {
            None
        },
        pass_all_k: if passed_n < valid.len() {
            Some(false)
        } else if all_valid && k > 0 {
            Some(true)
        } else {
            None
        },
    }
}

fn module_report(model: &str, module: &str, recs: &[&SessionRecord], prices: Option<&PriceTable>, opts: &Options) -> ModuleReport {
    let mut notices = Vec::new();
    let mut by_role: BTreeMap<Role, BTreeMap<&str, Vec<&SessionRecord>>> = BTreeMap::new();
    for r in recs {
        by_role.entry(r.role).or_default().entry(r.server.as_str()).or_default().push(r);
    }
    for (role, servers) in &by_role {
        if servers.len() > 1 {
            notices.push(format!("{} servers share role {role}; only {} is compared", servers.len(), servers.keys().next().unwrap()));
        }
    }
    let arm = |role: Role| -> Vec<&SessionRecord> { by_role.get(&role).and_then(|s| s.values().next()).cloned().unwrap_or_default() };
    let (pat, ctl) = (arm(Role::Pattern), arm(Role::Control));

    // Index by (task, rep).
    let pi = index_by_pair(&pat, "pattern", &mut notices);
    let ci = index_by_pair(&ctl, "control", &mut notices);
    let keys: BTreeSet<(String, u32)> = pi.keys().chain(ci.keys()).cloned().collect();
    let mut pairs = Vec::new();
    let mut dropped_pairs = Vec::new();
    for key in &keys {
        let describe = |r: Option<&&SessionRecord>| match r {
            None => Some("missing".to_string()),
            Some(r) => invalid_reason(r).map(|x| format!("invalid ({x})")),
        };
        let (p, c) = (pi.get(key), ci.get(key));
        match (describe(p), describe(c)) {
            (None, None) => pairs.push((*p.unwrap(), *c.unwrap())),
            (a, b) => {
                let reason = match (a, b) {
                    (Some(a), None) => format!("pattern {a}"),
                    (None, Some(b)) => format!("control {b}"),
                    (Some(a), Some(b)) => format!("pattern {a}, control {b}"),
                    (None, None) => unreachable!(),
                };
                dropped_pairs.push(DroppedPair { task: key.0.clone(), rep: key.1, reason });
            }
        }
    }
    let mut dropped = BTreeMap::new();
    for d in &dropped_pairs {
        *dropped.entry(d.reason.clone()).or_insert(0) += 1;
    }
    let paired = Paired {
        pairs_seen: keys.len(),
        pairs_used: pairs.len(),
        dropped,
        dropped_pairs,
        success: diff(&pairs, |r| Some(if passed(r) { 1.0 } else { 0.0 }), opts),
        turns: diff(&pairs, |r| Some(r.turns as f64), opts),
        input_tokens: diff(&pairs, |r| r.totals.input_tokens.map(|x| x as f64), opts),
        output_tokens: diff(&pairs, |r| r.totals.output_tokens.map(|x| x as f64), opts),
    };

    let pattern = (!pat.is_empty()).then(|| arm_metrics(&pat, model, prices, opts));
    let control = (!ctl.is_empty()).then(|| arm_metrics(&ctl, model, prices, opts));

    let model_too_strong = control.as_ref().is_some_and(|c| c.valid > 0 && c.passed == c.valid && c.valid == c.attempted);
    if model_too_strong {
        notices.push("The control passed every task every time: the model may be too strong for these tasks to show a success difference.".into());
    }

    let (verdict, verdict_reason) = decide(&paired, pattern.is_some() && control.is_some(), opts);

    // Power from paired input-token differences.
    let task_set: BTreeSet<&str> = keys.iter().map(|k| k.0.as_str()).collect();
    let power = paired.input_tokens.as_ref().and_then(|d| {
        let sd = d.sd?;
        let delta = opts.power_relative_difference * d.control_mean;
        let needed = stats::pairs_needed(sd, delta)?;
        let tasks = task_set.len().max(1);
        Some(Power {
            relative_difference: opts.power_relative_difference,
            delta_tokens: delta,
            paired_sd: sd,
            pairs_needed: needed,
            tasks,
            reps_per_task_needed: needed.div_ceil(tasks as u64),
            method: POWER_METHOD.into(),
        })
    });

    let tasks = task_set.iter().map(|t| TaskRow { task: t.to_string(), pattern: task_arm(&of_task(&pat, t)), control: task_arm(&of_task(&ctl, t)) }).collect();

    ModuleReport { module: module.into(), pattern, control, paired, verdict, verdict_reason, model_too_strong, power, notices, tasks }
}

fn of_task<'a>(v: &[&'a SessionRecord], task: &str) -> Vec<&'a SessionRecord> {
    v.iter().copied().filter(|r| r.task == task).collect()
}

/// Records by (task, rep); a duplicate is noted and the later file wins.
fn index_by_pair<'a>(v: &[&'a SessionRecord], name: &str, notices: &mut Vec<String>) -> BTreeMap<(String, u32), &'a SessionRecord> {
    let mut m = BTreeMap::new();
    for r in v {
        if m.insert((r.task.clone(), r.rep), *r).is_some() {
            notices.push(format!("duplicate {name} record for task {} rep {}: the later file wins", r.task, r.rep));
        }
    }
    m
}

/// The verdict rules of [`VERDICT_RULES`].
pub fn decide(paired: &Paired, both_arms: bool, opts: &Options) -> (Verdict, String) {
    if !both_arms {
        return (Verdict::Inconclusive, "one arm has no sessions".into());
    }
    if paired.pairs_used < opts.min_pairs_for_verdict {
        return (Verdict::Inconclusive, format!("{} valid pairs; at least {} are needed for a verdict", paired.pairs_used, opts.min_pairs_for_verdict));
    }
    let Some(s) = paired.success.as_ref().and_then(|d| d.ci95) else {
        return (Verdict::Inconclusive, "no success-difference interval".into());
    };
    if s.entirely_below(0.0) {
        return (Verdict::Negative, "success-rate difference interval entirely below 0: the pattern is less correct".into());
    }
    let Some(t) = paired.input_tokens.as_ref().and_then(|d| d.ci95) else {
        return (Verdict::Inconclusive, "no input-token difference interval (usage missing)".into());
    };
    if t.entirely_below(0.0) {
        (Verdict::Confirmed, "no detected success regression and the input-token difference interval is entirely below 0".into())
    } else if t.entirely_above(0.0) {
        (Verdict::Negative, "the input-token difference interval is entirely above 0: the pattern costs more".into())
    } else {
        (Verdict::Inconclusive, "the input-token difference interval includes 0".into())
    }
}

fn oracle_module(module: String, recs: &[&SessionRecord]) -> OracleModule {
    let mut groups: BTreeMap<(String, Role, String), Vec<&SessionRecord>> = BTreeMap::new();
    for r in recs {
        groups.entry((r.task.clone(), r.role, r.server.clone())).or_default().push(r);
    }
    let rows: Vec<OracleRow> = groups
        .into_iter()
        .map(|((task, role, server), v)| {
            let valid: Vec<_> = v.iter().filter(|r| r.validity.is_valid()).collect();
            let floors: Vec<_> = valid.iter().filter_map(|r| r.oracle.as_ref()).collect();
            let med = |f: fn(&records::OracleFloor) -> f64| stats::median(&floors.iter().map(|x| f(x)).collect::<Vec<_>>());
            OracleRow {
                task,
                role,
                server,
                sessions: v.len(),
                valid: valid.len(),
                passed: valid.iter().filter(|r| passed(r)).count(),
                calls: med(|f| f.calls as f64),
                schema_bytes: med(|f| f.schema_bytes as f64),
                args_bytes: med(|f| f.args_bytes as f64),
                result_bytes: med(|f| f.result_bytes as f64),
                estimated_tokens: med(|f| f.estimated_tokens as f64),
                estimate_method: floors.first().map(|f| f.estimate_method.clone()),
                estimated_input_tokens: stats::median(&floors.iter().filter_map(|f| f.estimated_input_tokens.map(|t| t as f64)).collect::<Vec<_>>()),
                input_estimate_method: floors.iter().find_map(|f| f.input_estimate_method.clone()),
            }
        })
        .collect();
    // A role's total is over all its tasks or absent: a partial sum would compare unlike things.
    let total = |figure: fn(&OracleRow) -> Option<f64>| {
        let mut by_role: BTreeMap<Role, Option<u64>> = BTreeMap::new();
        for r in &rows {
            let entry = by_role.entry(r.role).or_insert(Some(0));
            *entry = entry.zip(figure(r)).map(|(sum, t)| sum + t.round() as u64);
        }
        by_role.into_iter().filter_map(|(role, t)| Some((role, t?))).collect::<BTreeMap<_, _>>()
    };
    let total_estimated_tokens = total(|r| r.estimated_tokens);
    let total_estimated_input_tokens = total(|r| r.estimated_input_tokens);
    OracleModule { module, rows, total_estimated_tokens, total_estimated_input_tokens }
}
