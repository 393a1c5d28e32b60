//! One module's report: the (task, rep) pairs valid in both arms, their differences with
//! intervals, the notices and verdict, and the power estimate.

use std::collections::{BTreeMap, BTreeSet};

use records::{Role, SessionRecord};
use serde::{Deserialize, Serialize};

use super::arms::{arm_metrics, task_arm};
use super::select::{ModulePlan, index_by_pair, invalid_reason, of_task, passed};
use super::{ArmMetrics, Comparison, Options, TaskRow, Verdict, decide, few_passes};
use crate::load::PriceTable;
use crate::stats::{self, Interval};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleReport {
    pub module: String,
    /// Set when the module's records hold more than one server on a side (an external arm
    /// beside the built-in one): this report compares exactly these two, and the module has
    /// one report per (pattern, control) pair. Absent for an ordinary two-arm module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// `held_out` for the module's held-out tasks, reported apart from its dev tasks (absent for
    /// dev): a module with both has two reports, never one pooled verdict.
    #[serde(default, skip_serializing_if = "records::Split::is_dev")]
    pub split: records::Split,
    pub pattern: Option<ArmMetrics>,
    pub control: Option<ArmMetrics>,
    pub paired: Paired,
    pub verdict: Verdict,
    pub verdict_reason: String,
    pub model_too_strong: bool,
    /// The control passed too little to compare (see [`Options::min_passes_for_verdict`]): the
    /// mirror of [`Self::model_too_strong`], except that it withholds the verdict.
    #[serde(default)]
    pub model_too_weak: bool,
    /// Arms that passed in fewer than the minimum of the used pairs while failing in at least as
    /// many: their turn and token differences over all pairs are mostly failures, never savings.
    #[serde(default)]
    pub few_passes: Vec<Role>,
    pub power: Option<Power>,
    /// How often identical experiments of about this design disagreed on the verdict in the
    /// committed calibration study: how much a single run's verdict can be trusted to repeat.
    /// Absent below 2 tasks, and in summaries written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flip_rate: Option<crate::calibrate::FlipRate>,
    pub notices: Vec<String>,
    pub tasks: Vec<TaskRow>,
    /// The tasks on which the pattern did worse: a lower pass rate, or as often passed with more
    /// input tokens per valid session.
    #[serde(default)]
    pub losing_tasks: Vec<super::splits::LosingTask>,
    /// The tasks the losing rule could not judge, with why (absent when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unjudged_tasks: Vec<super::splits::UnjudgedTask>,
    /// A sequential experiment's design, stop and sequences (`--until-decided`); its verdict is
    /// read from them, and no fixed-sample interval is given. Absent for a fixed design.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<super::sequential::SequentialReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Distinct (task, rep) keys seen in either arm.
    pub pairs_seen: usize,
    /// Valid in both arms.
    pub pairs_used: usize,
    /// k × tasks from the manifest; null without one.
    #[serde(default)]
    pub pairs_planned: Option<usize>,
    /// Reason → count of pairs left out.
    pub dropped: BTreeMap<String, usize>,
    pub dropped_pairs: Vec<DroppedPair>,
    pub success: Option<Diff>,
    /// Over all used pairs, whatever their outcome (see [`Self::both_passed`] for the cost of
    /// success).
    pub turns: Option<Diff>,
    pub input_tokens: Option<Diff>,
    pub output_tokens: Option<Diff>,
    /// How the used pairs ended.
    #[serde(default)]
    pub outcomes: PairOutcomes,
    /// The same differences over the pairs where both arms passed: what success costs in each
    /// arm. A design that saves tokens by failing faster shows a saving over all pairs only.
    #[serde(default)]
    pub both_passed: BothPassed,
    /// The share of sessions with a collateral write (side effects outside the task's
    /// footprint), pattern − control, over the used pairs whose changes were both read; a rate
    /// difference like success's. Null when no pair had both.
    #[serde(default)]
    pub collateral: Option<Diff>,
    /// Under an attack: the share of sessions the attack succeeded in, pattern − control, over
    /// the used pairs whose attack verdict was read in both arms (a rate difference like
    /// success's), and those pairs by where it succeeded. Absent without an attack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<Diff>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack_pairs: Option<super::attack::AttackPairs>,
}

/// Used pairs by outcome; "passed" is the verifier's pass (a could-not-score is not one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairOutcomes {
    pub both_passed: usize,
    pub pattern_only: usize,
    pub control_only: usize,
    pub neither: usize,
}

impl PairOutcomes {
    /// Counts a pair by which arms passed.
    pub fn add(&mut self, pattern: bool, control: bool) {
        match (pattern, control) {
            (true, true) => self.both_passed += 1,
            (true, false) => self.pattern_only += 1,
            (false, true) => self.control_only += 1,
            (false, false) => self.neither += 1,
        }
    }

    pub fn passes(&self, role: Role) -> usize {
        self.both_passed
            + match role {
                Role::Pattern => self.pattern_only,
                Role::Control => self.control_only,
            }
    }

    pub fn total(&self) -> usize {
        self.both_passed + self.pattern_only + self.control_only + self.neither
    }
}

/// Paired differences over the pairs where both arms passed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BothPassed {
    pub pairs: usize,
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

/// Mean paired difference pattern − control, over the tasks: each task's mean over its pairs, then
/// the mean over tasks (the task is the sampled unit; docs/adr/0017-intervals-over-tasks.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    /// Pairs with a value in both arms.
    pub n: usize,
    /// Tasks those pairs come from: the clusters the intervals are taken over. Absent in
    /// summaries written before intervals were taken over tasks.
    #[serde(default)]
    pub tasks: usize,
    /// Used pairs where either arm's value is null (left out of this metric only).
    pub missing: usize,
    /// The mean over tasks of each task's mean paired difference (with the same number of pairs
    /// per task, the mean over pairs).
    pub mean: f64,
    /// 95% t interval (T − 1 degrees of freedom) over the per-task mean differences (for a pass
    /// rate, with pseudo-tasks added to the spread: [`stats::rate_difference_ci`]): for the mean
    /// difference over the tasks such a set stands for. Null below 2 tasks.
    pub ci95: Option<Interval>,
    /// Control mean over the same tasks (each task's mean over the same pairs).
    pub control_mean: f64,
    /// mean / control_mean (null when the control mean is 0).
    pub relative: Option<f64>,
    /// 95% interval of the relative difference over tasks (Fieller's, with a t quantile), not
    /// `ci95` divided by the observed control mean.
    pub relative_ci95: Option<Interval>,
    /// SD of the paired differences over pairs (what the power estimate reads).
    pub sd: Option<f64>,
    /// SD of the per-task mean differences. Absent below 2 tasks.
    #[serde(default)]
    pub task_sd: Option<f64>,
    /// The minimum detectable difference at this design: the true mean difference (in this
    /// metric's units) that an interval like `ci95` would exclude 0 for 80 % of the time, from
    /// the observed spread over tasks ([`stats::cluster_mde`]). What an inconclusive verdict
    /// could not have seen. Absent below 2 tasks.
    #[serde(default)]
    pub mde: Option<f64>,
    /// `mde` over the control's mean (null when that is 0).
    #[serde(default)]
    pub relative_mde: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Power {
    pub relative_difference: f64,
    /// Tasks needed at this design's reps per task (the task is the unit the interval is over:
    /// more reps of the same tasks narrow it only as far as sessions of a task differ). Absent
    /// in summaries written before.
    #[serde(default)]
    pub tasks_needed: Option<u64>,
    /// The absolute input-token difference that corresponds to.
    pub delta_tokens: f64,
    pub paired_sd: f64,
    pub pairs_needed: u64,
    pub tasks: usize,
    pub reps_per_task_needed: u64,
    pub method: String,
}

pub const POWER_METHOD: &str = "normal approximation for a two-sided test over tasks, α = 0.05, power 0.80: tasks = ((z0.975 + z0.80) · SD of the per-task mean input-token differences / (relative difference · control mean))², at this design's reps per task; pairs = tasks × reps per task. An approximation from the observed spread over tasks, for pre-registering a follow-up: more tasks narrow the interval, more reps of the same tasks only as far as sessions of one task differ.";

fn diff(pairs: &[(&SessionRecord, &SessionRecord)], f: impl Fn(&SessionRecord) -> Option<f64>) -> Option<Diff> {
    diff_of(pairs, f, false)
}

/// The paired difference of two pass rates: its interval and MDE from the pseudo-count-adjusted
/// spread over tasks ([`stats::rate_difference_ci`]), within [−1, 1].
fn rate_diff(pairs: &[(&SessionRecord, &SessionRecord)]) -> Option<Diff> {
    diff_of(pairs, |r| Some(if passed(r) { 1.0 } else { 0.0 }), true)
}

fn diff_of(pairs: &[(&SessionRecord, &SessionRecord)], f: impl Fn(&SessionRecord) -> Option<f64>, rate: bool) -> Option<Diff> {
    let mut d = Vec::new();
    // task → (Σ pattern, Σ control, pairs)
    let mut by_task: BTreeMap<&str, (f64, f64, usize)> = BTreeMap::new();
    let mut missing = 0;
    for (pat, ctl) in pairs {
        match (f(pat), f(ctl)) {
            (Some(a), Some(b)) => {
                d.push(a - b);
                let t = by_task.entry(pat.task.as_str()).or_default();
                *t = (t.0 + a, t.1 + b, t.2 + 1);
            }
            _ => missing += 1,
        }
    }
    let p: Vec<f64> = by_task.values().map(|&(a, _, n)| a / n as f64).collect();
    let c: Vec<f64> = by_task.values().map(|&(_, b, n)| b / n as f64).collect();
    let task_d: Vec<f64> = p.iter().zip(&c).map(|(a, b)| a - b).collect();
    let mean = stats::mean(&task_d)?;
    let control_mean = stats::mean(&c)?;
    let relative = (control_mean != 0.0).then(|| mean / control_mean);
    Some(Diff {
        n: d.len(),
        tasks: task_d.len(),
        missing,
        mean,
        ci95: if rate { stats::rate_difference_ci(&task_d) } else { stats::cluster_mean_ci(&task_d) },
        control_mean,
        relative,
        // Every figure compared is ≥ 0 (turns, tokens, passes), so the ratio is too: R ≥ −1.
        relative_ci95: relative.and_then(|_| stats::cluster_ratio_ci(&p, &c)).map(|i| Interval { lo: i.lo.max(-1.0), hi: i.hi }),
        sd: stats::sd(&d),
        task_sd: stats::sd(&task_d),
        mde: if rate { stats::rate_difference_mde(&task_d) } else { stats::cluster_mde(&task_d) },
        relative_mde: stats::cluster_mde(&task_d).filter(|_| control_mean != 0.0).map(|m| m / control_mean.abs()),
    })
}

pub(super) fn module_report(
    model: &str,
    module: &str,
    recs: &[&SessionRecord],
    plan: Option<&ModulePlan>,
    prices: Option<&PriceTable>,
    opts: &Options,
) -> ModuleReport {
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

    // Index by (task, rep); the duplicate check has made the keys unique.
    let pi = index_by_pair(&pat);
    let ci = index_by_pair(&ctl);
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
    let mut outcomes = PairOutcomes::default();
    for (p, c) in &pairs {
        outcomes.add(passed(p), passed(c));
    }
    let succeeded: Vec<(&SessionRecord, &SessionRecord)> = pairs.iter().copied().filter(|(p, c)| passed(p) && passed(c)).collect();
    let turns = |r: &SessionRecord| Some(r.turns as f64);
    let input = |r: &SessionRecord| r.totals.input_tokens.map(|x| x as f64);
    let output = |r: &SessionRecord| r.totals.output_tokens.map(|x| x as f64);
    let paired = Paired {
        pairs_seen: keys.len(),
        pairs_used: pairs.len(),
        pairs_planned: plan.map(|p| p.pairs(recs)),
        dropped,
        dropped_pairs,
        success: rate_diff(&pairs),
        turns: diff(&pairs, turns),
        input_tokens: diff(&pairs, input),
        output_tokens: diff(&pairs, output),
        outcomes,
        both_passed: BothPassed {
            pairs: succeeded.len(),
            turns: diff(&succeeded, turns),
            input_tokens: diff(&succeeded, input),
            output_tokens: diff(&succeeded, output),
        },
        collateral: diff_of(&pairs, super::collateral::had_collateral, true),
        attack: diff_of(&pairs, super::attack::compromised, true),
        attack_pairs: super::attack::pairs(&pairs),
    };
    if let Some(d) = &paired.collateral
        && d.ci95.is_some_and(|i| i.lo > 0.0)
    {
        notices.push(format!(
            "Side effects: the pattern raises collateral writes (changes outside the task's footprint) by {:+.0} points of sessions [{:+.0}, {:+.0}] over {} pairs — see Side effects. Never folded into success.",
            100.0 * d.mean,
            100.0 * d.ci95.map_or(0.0, |i| i.lo),
            100.0 * d.ci95.map_or(0.0, |i| i.hi),
            d.n
        ));
    }

    let mut pattern = (!pat.is_empty()).then(|| arm_metrics(&pat, model, prices, opts));
    if let Some(p) = pattern.as_mut() {
        let (vp, vc): (Vec<&SessionRecord>, Vec<&SessionRecord>) =
            (pat.iter().copied().filter(|r| r.validity.is_valid()).collect(), ctl.iter().copied().filter(|r| r.validity.is_valid()).collect());
        super::adoption::distinctive(&mut p.adoption, &vp, &vc);
    }
    let control = (!ctl.is_empty()).then(|| arm_metrics(&ctl, model, prices, opts));

    // "Every time" needs every planned session: a missing one might have failed.
    let all_planned = |c: &ArmMetrics| plan.is_none_or(|p| c.attempted == p.pairs(recs));
    let model_too_strong = control.as_ref().is_some_and(|c| c.valid > 0 && c.passed == c.valid && c.valid == c.attempted && all_planned(c));
    if model_too_strong {
        notices.push("The control passed every task every time: the model may be too strong for these tasks to show a success difference.".into());
    }
    let few_passes = few_passes(&paired.outcomes, opts);
    let model_too_weak = few_passes.contains(&Role::Control);
    let (n, m) = (paired.pairs_used, opts.min_passes_for_verdict);
    for role in &few_passes {
        let passes = paired.outcomes.passes(*role);
        notices.push(match role {
            Role::Control => format!(
                "Model too weak to show a difference: the control passed in {passes} of {n} valid pairs (fewer than {m}). The turn and token differences over all pairs are computed over failures, not savings."
            ),
            Role::Pattern => format!(
                "The pattern passed in {passes} of {n} valid pairs (fewer than {m}): its turn and token differences over all pairs are mostly over failures, not savings."
            ),
        });
    }

    let (mut verdict, mut verdict_reason) = decide(&paired, pattern.is_some() && control.is_some(), opts);
    let as_text: Vec<&ArmMetrics> = [&pattern, &control].into_iter().flatten().filter(|a| a.valid > 0 && 2 * a.tool_call_as_text > a.valid).collect();
    let endpoint_fault = !as_text.is_empty();
    if endpoint_fault {
        for a in &as_text {
            notices.push(format!(
                "{} arm: the endpoint is probably not parsing tool calls ({} of {} sessions wrote their calls as text); see the preflight",
                a.role, a.tool_call_as_text, a.valid
            ));
        }
        let arms: Vec<&str> = as_text.iter().map(|a| a.role.as_str()).collect();
        verdict = Verdict::Withheld;
        verdict_reason = format!("verdict withheld: more than half of the valid sessions of the {} arm wrote their tool calls as text", arms.join(" and "));
    }

    // Power from paired input-token differences.
    let mut task_set: BTreeSet<&str> = keys.iter().map(|k| k.0.as_str()).collect();
    task_set.extend(plan.iter().flat_map(|p| p.tasks.iter().map(String::as_str)));
    let power = paired.input_tokens.as_ref().and_then(|d| {
        let sd = d.sd?;
        let delta = opts.power_relative_difference * d.control_mean;
        let tasks_needed = stats::pairs_needed(d.task_sd?, delta)?;
        let k = d.n.div_ceil(d.tasks.max(1)).max(1) as u64;
        Some(Power {
            relative_difference: opts.power_relative_difference,
            tasks_needed: Some(tasks_needed),
            delta_tokens: delta,
            paired_sd: sd,
            pairs_needed: tasks_needed * k,
            tasks: task_set.len().max(1),
            reps_per_task_needed: k,
            method: POWER_METHOD.into(),
        })
    });
    if let (Some(t), Some(s)) = (paired.input_tokens.as_ref(), paired.success.as_ref())
        && let (Some(token_mde), Some(success_mde)) = (t.mde, s.mde)
    {
        notices.push(format!(
            "What this design could detect (80 % power, two-sided 5 %, from the spread over its {} tasks): an input-token difference of {:.0} per session{}, a success-rate difference of {:.0} points. A smaller true difference would most often read as inconclusive.",
            t.tasks,
            token_mde,
            t.relative_mde.map_or(String::new(), |r| format!(" ({:.0} % of the control's mean)", 100.0 * r)),
            100.0 * success_mde.min(1.0)
        ));
    }

    let flip_rate =
        paired.input_tokens.as_ref().filter(|d| d.tasks >= 2).and_then(|d| crate::calibrate::committed_flip_rate(d.tasks, d.n.div_ceil(d.tasks) as u32));
    if let Some(f) = &flip_rate {
        notices.push(format!(
            "How repeatable a verdict is at about this design: in the calibration study, two identical experiments of {} tasks × k = {} (the studied design nearest this one) reached different verdicts in {:.0}–{:.0} % of {} simulated reruns per scenario, most often when the planted effect was `{}` ({}).",
            f.design.tasks,
            f.design.k,
            100.0 * f.lowest,
            100.0 * f.highest,
            f.experiments_per_scenario,
            f.highest_scenario,
            f.source
        ));
    }
    // A sequential experiment drew each task as often as chance had it: no k was planned.
    let planned_k = plan.filter(|p| p.sequential.is_none()).map(|p| p.k);
    // Without a plan, k is the most reps any task of the arm has: a task with fewer is missing
    // some, and the report already says the planned k is unknown, so it must not claim them.
    let k_of = |arm: &[&SessionRecord]| planned_k.map_or_else(|| task_set.iter().map(|t| of_task(arm, t).len()).max().unwrap_or(0), |k| k as usize);
    let (pattern_k, control_k) = (k_of(&pat), k_of(&ctl));
    let tasks = task_set
        .iter()
        .map(|t| TaskRow {
            task: t.to_string(),
            pattern: task_arm(&of_task(&pat, t), planned_k, pattern_k),
            control: task_arm(&of_task(&ctl, t), planned_k, control_k),
        })
        .collect();

    let sequential = plan.and_then(|p| {
        let (rule, text) = p.sequential.as_ref()?;
        super::sequential::report(&pat, &ctl, *rule, text, p.stopped.as_deref(), opts)
    });
    let mut report = ModuleReport {
        sequential: None,
        split: records::Split::Dev,
        losing_tasks: Vec::new(),
        unjudged_tasks: Vec::new(),
        module: module.into(),
        comparison: None,
        pattern,
        control,
        paired,
        verdict,
        verdict_reason,
        model_too_strong,
        model_too_weak,
        few_passes,
        power,
        flip_rate,
        notices,
        tasks,
    };
    if let Some(s) = sequential {
        let kept = (report.verdict, report.verdict_reason.clone());
        super::sequential::apply(&mut report, s);
        // The endpoint fault overrides any verdict, sequential or fixed.
        if endpoint_fault {
            (report.verdict, report.verdict_reason) = kept;
        }
    }
    report
}
