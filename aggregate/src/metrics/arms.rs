//! One arm's figures over its sessions: counts, success rate, distributions of turns, tokens and
//! cost, and pass@k / pass^k per task.

use std::collections::BTreeMap;

use records::Verdict as TaskVerdict;
use records::{Role, SessionRecord};
use serde::{Deserialize, Serialize};

use super::Options;
use super::select::{invalid_reason, passed, verdict_of};
use crate::load::PriceTable;
use crate::stats::{self, Interval};

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
    /// Valid sessions whose answer held a tool call written as text (failures).
    #[serde(default)]
    pub tool_call_as_text: usize,
    /// Valid sessions the endpoint ended because it could not parse the model's output (failures).
    #[serde(default)]
    pub unparseable_output: usize,
    pub success: Rate,
    pub turns: Dist,
    pub input_tokens: Dist,
    pub cached_input_tokens: Dist,
    pub output_tokens: Dist,
    /// The part of the output tokens the endpoint reported as reasoning (priced as output: it
    /// is inside `output_tokens`). Null where the endpoint does not report it, never 0.
    #[serde(default)]
    pub reasoning_tokens: Dist,
    /// Tool calls over valid sessions, and how many of them errored (or were refused).
    pub tool_calls: usize,
    pub tool_call_errors: usize,
    /// Per valid session, from the price table; missing when unpriced or usage is null.
    pub cost_usd: Dist,
    /// For a module with a tool catalogue: how the valid sessions came by the tools their tasks
    /// need. Absent for every other module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<RetrievalMetrics>,
    /// What kind of outcome each valid, scored session was (correct, partial, wrong but
    /// confident, honest failure, ambiguous, no answer): beside success, never folded into it.
    #[serde(default)]
    pub outcome_classes: super::classes::OutcomeClasses,
    /// Which tools the valid sessions called, how often, how much went to the pattern's own
    /// tools, and how much was wasted: beside the result, never folded into it.
    #[serde(default)]
    pub adoption: super::adoption::Adoption,
    /// Whether the entities the valid, scored sessions' final answers name exist: beside the
    /// result, never folded into it.
    #[serde(default)]
    pub grounding: super::grounding::GroundingMetrics,
    /// What the valid sessions changed outside their task's footprint: beside the result, never
    /// folded into it.
    #[serde(default)]
    pub collateral: super::collateral::CollateralMetrics,
    /// Under an attack (`--attack`): how often the valid sessions did what the planted text
    /// asked. Absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<super::attack::AttackMetrics>,
}

/// Retrieval over an arm's valid sessions (`records::Retrieval`, summed): beside success, never
/// folded into it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievalMetrics {
    /// Valid sessions that carry retrieval data.
    pub sessions: usize,
    /// Σ tools the sessions' tasks needed, and how many of them a search of the session returned.
    pub needed: usize,
    pub found: usize,
    /// found / needed; null for an arm that searched nothing (it lists every tool) or needed none.
    pub recall: Option<f64>,
    /// Mean of the best rank (1 = first) of the tools found; null when none was.
    pub mean_best_rank: Option<f64>,
    pub searches: usize,
    /// Σ calls to tools of systems listed but not connected.
    pub unconnected_calls: usize,
}

fn retrieval_metrics(valid: &[&SessionRecord]) -> Option<RetrievalMetrics> {
    let with: Vec<&records::Retrieval> = valid.iter().filter_map(|r| r.retrieval.as_ref()).collect();
    if with.is_empty() {
        return None;
    }
    let ranks: Vec<f64> = with.iter().flat_map(|r| r.best_rank.iter().flatten().map(|&x| x as f64)).collect();
    let needed: usize = with.iter().map(|r| r.needed.len()).sum();
    let searches: usize = with.iter().map(|r| r.searches as usize).sum();
    Some(RetrievalMetrics {
        sessions: with.len(),
        needed,
        found: ranks.len(),
        recall: (searches > 0 && needed > 0).then(|| ranks.len() as f64 / needed as f64),
        mean_best_rank: stats::mean(&ranks),
        searches,
        unconnected_calls: with.iter().map(|r| r.unconnected_calls as usize).sum(),
    })
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub successes: usize,
    pub n: usize,
    pub rate: Option<f64>,
    pub wilson95: Option<Interval>,
}

/// A distribution over valid sessions: `n` with a value, `missing` with null.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub n: usize,
    pub missing: usize,
    /// The median over sessions.
    pub median: Option<f64>,
    /// The mean over tasks of each task's mean over its sessions (with the same sessions per
    /// task, the mean over sessions).
    pub mean: Option<f64>,
    /// 95% t interval (T − 1 d.f.) of that mean over the per-task means: for the tasks such a set
    /// stands for. Null below 2 tasks.
    pub mean_ci95: Option<Interval>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRow {
    pub task: String,
    pub pattern: TaskArm,
    pub control: TaskArm,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskArm {
    /// Reps recorded (valid or not).
    pub k: usize,
    /// Reps planned (the manifest's k); null without a manifest, when k is the reps recorded.
    #[serde(default)]
    pub planned_k: Option<u32>,
    pub valid: usize,
    pub passed: usize,
    pub failed: usize,
    pub could_not_score: usize,
    /// Any of the k reps passed; null when none passed and some reps were invalid or missing
    /// (unknown).
    pub pass_at_k: Option<bool>,
    /// All k reps passed; null when every valid rep passed but some reps were invalid or missing.
    pub pass_all_k: Option<bool>,
}

/// The distribution of a per-session value over `(task, value)`: the median over sessions, the
/// mean and its interval over tasks (the task is the sampled unit).
fn dist<'a>(values: impl Iterator<Item = (&'a str, Option<f64>)>) -> Dist {
    let mut xs = Vec::new();
    let mut by_task: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
    let mut missing = 0;
    for (task, v) in values {
        match v {
            Some(x) => {
                xs.push(x);
                let t = by_task.entry(task).or_default();
                *t = (t.0 + x, t.1 + 1);
            }
            None => missing += 1,
        }
    }
    let task_means: Vec<f64> = by_task.values().map(|&(sum, n)| sum / n as f64).collect();
    Dist { n: xs.len(), missing, median: stats::median(&xs), mean: stats::mean(&task_means), mean_ci95: stats::cluster_mean_ci(&task_means) }
}

/// `(sessions where `hit`, sessions)` per task: the clusters of a rate's interval.
fn per_task(valid: &[&SessionRecord], hit: impl Fn(&SessionRecord) -> bool) -> Vec<(usize, usize)> {
    let mut by: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in valid {
        let e = by.entry(r.task.as_str()).or_default();
        *e = (e.0 + usize::from(hit(r)), e.1 + 1);
    }
    by.into_values().collect()
}

pub(super) fn arm_metrics(recs: &[&SessionRecord], model: &str, prices: Option<&PriceTable>, opts: &Options) -> ArmMetrics {
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
    let u = |f: fn(&SessionRecord) -> Option<u64>| dist(valid.iter().map(|r| (r.task.as_str(), f(r).map(|x| x as f64))));
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
        tool_call_as_text: valid.iter().filter(|r| r.tool_call_as_text).count(),
        unparseable_output: valid.iter().filter(|r| r.unparseable_output).count(),
        success: Rate {
            successes: passed_n,
            n: valid.len(),
            rate: (!valid.is_empty()).then(|| passed_n as f64 / valid.len() as f64),
            wilson95: stats::wilson_clustered(&per_task(&valid, |r| verdict_of(r) == Some(TaskVerdict::Passed))),
        },
        turns: dist(valid.iter().map(|r| (r.task.as_str(), Some(r.turns as f64)))),
        input_tokens: u(|r| r.totals.input_tokens),
        cached_input_tokens: u(|r| r.totals.cached_input_tokens),
        output_tokens: u(|r| r.totals.output_tokens),
        reasoning_tokens: u(|r| r.totals.reasoning_tokens),
        tool_calls: valid.iter().map(|r| r.tool_calls.len()).sum(),
        tool_call_errors: valid.iter().map(|r| r.tool_calls.iter().filter(|c| c.is_error || c.invalid_arguments || c.unknown_tool).count()).sum(),
        cost_usd: dist(valid.iter().map(|r| (r.task.as_str(), prices.and_then(|p| p.cost(model, &r.totals))))),
        retrieval: retrieval_metrics(&valid),
        outcome_classes: super::classes::outcome_classes(&valid),
        adoption: super::adoption::adoption(&valid),
        grounding: super::grounding::grounding(&valid, opts),
        collateral: super::collateral::collateral(&valid),
        attack: super::attack::attack(&valid),
    }
}

/// pass@k and pass^k over `expected` reps: the planned k when there is a plan (the duplicate and
/// plan checks make the recorded reps distinct and within 1..=k), else the most reps any task of
/// the arm has.
pub(super) fn task_arm(recs: &[&SessionRecord], planned_k: Option<u32>, expected: usize) -> TaskArm {
    let valid: Vec<_> = recs.iter().filter(|r| r.validity.is_valid()).collect();
    let k = recs.len();
    let passed_n = valid.iter().filter(|r| passed(r)).count();
    let failed = valid.iter().filter(|r| verdict_of(r) == Some(TaskVerdict::Failed)).count();
    // Every one of the k reps is there and has an outcome: only then is a "no" for pass@k or a
    // "yes" for pass^k known.
    let complete = expected > 0 && valid.len() == expected;
    TaskArm {
        k,
        planned_k,
        valid: valid.len(),
        passed: passed_n,
        failed,
        could_not_score: valid.len() - passed_n - failed,
        pass_at_k: if passed_n > 0 {
            Some(true)
        } else if complete {
            Some(false)
        } else {
            None
        },
        pass_all_k: if passed_n < valid.len() {
            Some(false)
        } else if complete {
            Some(true)
        } else {
            None
        },
    }
}
