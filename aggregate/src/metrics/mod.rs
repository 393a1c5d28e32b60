//! Records → per-cell metrics, paired differences, verdicts, power (rules: `docs/honesty-rules.md` §7).
//!
//! Rules kept here, all of which the report restates:
//! - Attrition first: every cell says attempted vs valid sessions and why the rest are invalid.
//! - Nulls are never defaulted: a distribution says how many sessions had no value.
//! - Intervals are for the population of tasks a set stands for: the task, not the session, is
//!   the sampled unit (docs/adr/0017-intervals-over-tasks.md).
//! - Success rate = passed / valid sessions (a "could not score" counts as not passed but is
//!   counted apart from "failed"), with a Wilson 95% interval at the effective sample size of
//!   sessions clustered by task.
//! - Paired differences (pattern − control) use only (task, rep) pairs valid in both arms: the
//!   mean over tasks of each task's mean difference, with a t interval over those task means
//!   (T − 1 degrees of freedom), and Fieller's interval for the relative difference.
//! - Oracle sessions are structural floors, never mixed with model results; model ids are never
//!   pooled.
//! - With a manifest, k is the planned k: a task whose planned reps are not all recorded and
//!   valid has an unknown pass^k, never a true one. Without one, k is the most reps any task of
//!   the arm has, and a task with fewer is unknown the same way.
//! - Replaced attempts (superseded) are counted per cell, never scored and never silent.

pub mod adoption;
mod arms;
pub mod attack;
mod attrition;
pub mod claims;
pub mod classes;
pub mod collateral;
pub mod grounding;
mod oracle;
pub mod order;
mod paired;
mod select;
pub mod sequential;
pub mod splits;
mod verdict;

use std::collections::{BTreeMap, BTreeSet};

use records::{Provider, SessionRecord, Split};
use serde::{Deserialize, Serialize};

pub use arms::{ArmMetrics, Dist, Rate, TaskArm, TaskRow};
pub use attrition::{AttritionRow, HarnessShare};
pub use oracle::{OracleModule, OraclePerSession, OracleRow};
pub use paired::{BothPassed, Diff, DroppedPair, ModuleReport, POWER_METHOD, PairOutcomes, Paired, Power};
pub use select::Comparison;
pub use verdict::{Cost, Design, Evidence, Verdict, decide, decide_on, few_passes, verdict_rules};

use attrition::{attrition_row, harness_share};
use oracle::oracle_module;
use paired::module_report;
use select::{CellKey, cell, comparisons, invalid_reason, is_oracle, module_plan, planned_splits, superseded_reason};

use crate::check::{self, Fingerprints};
use crate::error::Result;
use crate::load::{Experiment, PriceTable};
use crate::stats;

/// Version 2: counts are integers (oracle medians were floats) and seeds are strings; the shape
/// is `summary.schema.json` beside this crate. Fields added within a version are optional
/// there (`method.definitions`, `oracle_floors[].per_session`): scripts reading older summaries
/// keep working, and no field is renamed or removed without a new version.
pub const SUMMARY_SCHEMA: &str = "mcp-pattern-bench/aggregate-summary/v4";

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
    /// An arm that passed in fewer of the used pairs than this (while failing in at least as
    /// many) passes too little to compare: its turns and tokens are mostly spent failing. The
    /// default, 5, is the usual success–failure condition for comparing two proportions
    /// (n·p ≥ 5); below it a difference in cost says how the arms fail, not what success costs.
    /// The same number of pairs where both arms passed is what a "confirmed" needs.
    #[serde(default = "default_min_passes")]
    pub min_passes_for_verdict: usize,
    /// The non-inferiority margin for success, as a fraction (0.10: 10 points): a "confirmed"
    /// needs the success-difference interval's lower bound at or above −margin, i.e. the pattern shown
    /// not worse than the control by more than this. docs/adr/0019-a-success-margin.md.
    #[serde(default = "default_success_margin")]
    pub success_margin: f64,
}

fn default_min_passes() -> usize {
    5
}

/// 10 points: see [`Options::success_margin`].
pub fn default_success_margin() -> f64 {
    0.10
}

impl Default for Options {
    fn default() -> Self {
        Self {
            resamples: stats::BOOTSTRAP_RESAMPLES,
            seed: stats::BOOTSTRAP_SEED,
            power_relative_difference: 0.10,
            min_pairs_for_verdict: 10,
            min_passes_for_verdict: default_min_passes(),
            success_margin: default_success_margin(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    /// Experiment name(s) found in the records.
    pub experiments: Vec<String>,
    pub method: Method,
    pub prices_loaded: bool,
    /// How the run went and how far the records could be checked; the report starts with it.
    #[serde(default)]
    pub run: RunInfo,
    /// Experiment-level notices, shown before the results.
    #[serde(default)]
    pub notices: Vec<String>,
    /// One row per (model, module, server), model sessions and oracle sessions alike.
    pub attrition: Vec<AttritionRow>,
    /// One entry per model (id + provider); never pooled. Oracle excluded.
    pub models: Vec<ModelReport>,
    /// Oracle structural floors per module; empty when no oracle sessions.
    pub oracle_floors: Vec<OracleModule>,
    /// Modules whose held-out tasks say otherwise than their dev tasks (a verdict, or the
    /// oracle's floor): the report says so above its headline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub split_disagreements: Vec<splits::SplitDisagreement>,
    /// Warm sessions only: per model, module, arm and position in the conversation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<order::OrderRow>,
    /// Where the numbers come from: command, build, dates, k, seeds, model parameters, spec,
    /// preflight, and what wrote the report.
    #[serde(default)]
    pub provenance: crate::provenance::Provenance,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Method {
    /// The experiment's design: fixed (every task k times, read once) or sequential (pairs drawn
    /// until decided, read by confidence sequences), and its rule. Empty in summaries written
    /// before it was stated, and without a manifest.
    #[serde(default)]
    pub design: String,
    /// What every interval of the report is for (see [`ESTIMAND`]). Empty in summaries written
    /// before it was stated.
    #[serde(default)]
    pub estimand: String,
    pub success_interval: String,
    pub difference_interval: String,
    /// How the interval of a relative difference ("−13.4% [−16.0%, −9.1%]") is computed.
    #[serde(default)]
    pub relative_interval: String,
    pub bootstrap_resamples: usize,
    /// A string: the seed is above 2^53, where a JSON number would be read as another value by
    /// JavaScript and most JSON libraries that parse numbers as doubles.
    #[serde(with = "crate::u64_string")]
    pub bootstrap_seed: u64,
    pub min_pairs_for_verdict: usize,
    /// See [`Options::min_passes_for_verdict`].
    #[serde(default = "default_min_passes")]
    pub min_passes_for_verdict: usize,
    /// See [`Options::success_margin`]; null in reports made before the margin existed (their
    /// "confirmed" needed only the interval's upper bound ≥ 0).
    #[serde(default)]
    pub success_margin: Option<f64>,
    /// What "all pairs" and "both passed" differences are computed over.
    #[serde(default)]
    pub pair_sets: String,
    pub verdict_rules: String,
    pub power_method: String,
    /// The graders' measured agreement with hand grades on answers they were never tuned on,
    /// which the outcome and grounding tables are read with. Null in summaries made before it
    /// was stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graders: Option<crate::graders::Agreement>,
    /// The model that judged the outcome classes, with its agreement on the gold set's held-out
    /// part (`pipeline regrade --judge`); null when the rules graded them.
    #[serde(default)]
    pub judge: Option<records::JudgeInfo>,
    /// What every header and row label of the report's tables means, and whether its figure is
    /// per session, per task or summed (and over what).
    #[serde(default)]
    pub definitions: Vec<crate::definitions::Definition>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// A manifest.json was read: the plan (k, tasks, arms) is known.
    pub manifest: bool,
    /// Planned repetitions per task and arm; null without a manifest (k is then the most reps any
    /// task of an arm has).
    pub planned_k: Option<u32>,
    /// The run stopped before every planned session had run (quota, circuit breaker, interrupt).
    pub stopped: Option<records::manifest::RunStop>,
    /// The held-out seal the run was checked against (from the manifest): when and why it last
    /// changed. Null when the run had no held-out tasks, or no manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<records::manifest::ManifestSeal>,
    /// The endpoint preflight was skipped (said by the manifest or by a record's fingerprint).
    pub preflight_skipped: bool,
    /// `checked`: every record has a fingerprint and they agree where they must; `unknown`: no
    /// record has one.
    pub fingerprints: Fingerprints,
    /// Attempts a rerun replaced (kept under `superseded/`, not scored), and why.
    pub superseded: usize,
    pub superseded_reasons: BTreeMap<String, usize>,
    /// Entries of the folder outside the experiment layout, left unread.
    pub ignored: Vec<String>,
    /// The harness's own time per model session, and its share of the session.
    pub harness: HarnessShare,
    /// `--attack NAME`: the attack planted in every session's world (from the manifest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<records::manifest::ManifestAttack>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelReport {
    pub model: String,
    pub provider: Provider,
    pub modules: Vec<ModuleReport>,
}

/// Builds the whole summary, after [`check::check`] has refused anything that cannot be pooled.
pub fn summarise(exp: &Experiment, prices: Option<&PriceTable>, opts: &Options) -> Result<Summary> {
    summarise_with(exp, prices, opts, &crate::provenance::Invocation::default())
}

/// [`summarise`], with what wrote the report recorded in its provenance.
pub fn summarise_with(exp: &Experiment, prices: Option<&PriceTable>, opts: &Options, invocation: &crate::provenance::Invocation) -> Result<Summary> {
    let fingerprints = check::check(exp)?;
    let manifest = exp.manifest.as_ref();
    let sessions = &exp.sessions;
    let experiments: BTreeSet<String> = sessions.iter().map(|s| s.record.experiment.clone()).collect();

    let mut attr: BTreeMap<CellKey, AttritionRow> = BTreeMap::new();
    if let Some(m) = manifest {
        for model in &m.models {
            for server in &m.servers {
                let key = (model.id.clone(), model.provider, server.module.clone(), server.name.clone(), server.role);
                attr.entry(key.clone()).or_insert_with(|| attrition_row(&key)).planned = Some(
                    planned_splits(m, &server.module)
                        .into_iter()
                        .map(|split| {
                            // A sequential experiment planned the pairs it drew.
                            let recs: Vec<&SessionRecord> = sessions
                                .iter()
                                .map(|s| &s.record)
                                .filter(|r| r.model.id == model.id && r.module == server.module && r.split == split)
                                .collect();
                            module_plan(m, &server.module, split).pairs(&recs)
                        })
                        .sum::<usize>(),
                );
            }
        }
    }
    for s in sessions {
        let r = &s.record;
        let key = cell(r);
        let row = attr.entry(key.clone()).or_insert_with(|| attrition_row(&key));
        row.attempts += 1;
        row.attempted += 1;
        match invalid_reason(r) {
            None => {
                row.valid += 1;
                row.turn_cap_hits += r.turn_cap_hit as usize;
                row.context_exceeded += r.context_exceeded as usize;
                row.tool_call_as_text += r.tool_call_as_text as usize;
                row.unparseable_output += r.unparseable_output as usize;
            }
            Some(reason) => *row.invalid.entry(reason).or_default() += 1,
        }
    }
    let mut superseded_reasons: BTreeMap<String, usize> = BTreeMap::new();
    for s in &exp.superseded {
        let key = cell(&s.record);
        let row = attr.entry(key.clone()).or_insert_with(|| attrition_row(&key));
        row.attempts += 1;
        row.replaced += 1;
        *superseded_reasons.entry(superseded_reason(&s.record)).or_default() += 1;
    }

    // Model sessions: (model id, provider) → module → records. A planned module without a record
    // still gets its report, which then says it has no sessions.
    // Dev and held-out tasks are separate cells from here on: never pooled into one verdict.
    type Cells<'r> = BTreeMap<(String, Split), Vec<&'r SessionRecord>>;
    let mut by_model: BTreeMap<(String, Provider), Cells> = BTreeMap::new();
    if let Some(m) = manifest {
        for model in m.models.iter().filter(|x| !x.is_oracle()) {
            for server in &m.servers {
                for split in planned_splits(m, &server.module) {
                    by_model.entry((model.id.clone(), model.provider)).or_default().entry((server.module.clone(), split)).or_default();
                }
            }
        }
    }
    let mut oracle: BTreeMap<(String, Split), Vec<&SessionRecord>> = BTreeMap::new();
    for s in sessions {
        let r = &s.record;
        if is_oracle(r) {
            oracle.entry((r.module.clone(), r.split)).or_default().push(r);
        } else {
            by_model.entry((r.model.id.clone(), r.model.provider)).or_default().entry((r.module.clone(), r.split)).or_default().push(r);
        }
    }

    let models = by_model
        .into_iter()
        .map(|((model, provider), modules)| {
            let modules = modules
                .into_iter()
                .flat_map(|((module, split), recs)| {
                    let plan = manifest.map(|m| module_plan(m, &module, split));
                    comparisons(&recs)
                        .into_iter()
                        .map(|(comparison, cell)| {
                            let (losing_tasks, unjudged_tasks) = splits::losing_model_tasks(&cell);
                            ModuleReport {
                                comparison,
                                split,
                                losing_tasks,
                                unjudged_tasks,
                                ..module_report(&model, &module, &cell, plan.as_ref(), prices, opts)
                            }
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
            ModelReport { model, provider, modules }
        })
        .collect();

    let oracle_floors = oracle
        .into_iter()
        .flat_map(|((module, split), recs)| {
            comparisons(&recs)
                .into_iter()
                .map(|(comparison, cell)| {
                    let mut f = OracleModule { comparison, split, ..oracle_module(module.clone(), &cell) };
                    (f.losing_tasks, f.unjudged_tasks) = splits::losing_oracle_tasks(&f);
                    f
                })
                .collect::<Vec<_>>()
        })
        .collect();

    let preflight_skipped =
        manifest.is_some_and(|m| m.preflight_skipped) || sessions.iter().any(|s| s.record.fingerprint.as_ref().is_some_and(|f| f.preflight_skipped));
    let ignored: Vec<String> = exp.ignored.iter().map(|p| p.strip_prefix(&exp.dir).unwrap_or(p).display().to_string()).collect();
    let mut notices = Vec::new();
    if !exp.missing.is_empty() {
        const SHOWN: usize = 20;
        let more = if exp.missing.len() > SHOWN { format!(", and {} more", exp.missing.len() - SHOWN) } else { String::new() };
        notices.push(format!(
            "Incomplete (--allow-incomplete): {} planned session{} no merged folder holds, so every figure below is over part of the plan — {}{more}.",
            exp.missing.len(),
            if exp.missing.len() == 1 { "" } else { "s" },
            exp.missing.iter().take(SHOWN).cloned().collect::<Vec<_>>().join("; ")
        ));
    }
    if manifest.is_none() {
        notices.push(
            "No manifest.json: the planned k is unknown, so k is taken as the most reps any task of an arm has in the records; a task with fewer has an unknown pass^k, but a rep missing from every task of an arm cannot be seen."
                .to_string(),
        );
    }
    if fingerprints == Fingerprints::Unknown {
        notices.push("No record has a fingerprint (they were written before fingerprints existed): whether all sessions ran under the same model parameters, world, task definitions and build could not be checked.".to_string());
    }
    if !exp.superseded.is_empty() {
        let why: Vec<String> = superseded_reasons.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        notices.push(format!(
            "{} session{} rerun; the replaced attempts are kept under superseded/, counted in the attrition table and not scored. Why: {}.",
            exp.superseded.len(),
            if exp.superseded.len() == 1 { " was" } else { "s were" },
            why.join("; ")
        ));
    }
    if !ignored.is_empty() {
        notices.push(format!("Not part of the experiment layout, left unread: {}.", ignored.join(", ")));
    }
    if sessions.iter().any(|s| s.record.conversation.is_some()) {
        notices.push("Warm sessions: per model, arm and rep one conversation worked through the tasks one after another (the world reset before each). Each task is its own record: its turns, calls and tokens are those of the requests made for it, and every such request carried the conversation's earlier tasks. Never pooled with cold sessions; see Order effects, and compare with a cold run of the same plan (aggregate --compare COLD WARM --along session_mode).".to_string());
    }
    let listed: std::collections::BTreeSet<u32> = sessions.iter().map(|s| s.record.offered.distractors).filter(|n| *n > 0).collect();
    if !listed.is_empty() {
        let n: Vec<String> = listed.iter().map(u32::to_string).collect();
        notices.push(format!(
            "Distractors: beside each arm's own tools the client listed {} tools of other, unconnected servers (--distractors; the same tools, in the same place, for both arms; docs/distractors.md). A call to one never reached the arm: the client refused it, and Adoption counts it. Every token and definitions figure includes them.",
            n.join(" or ")
        ));
    }

    let mut summary = Summary {
        schema: SUMMARY_SCHEMA.into(),
        experiments: experiments.into_iter().collect(),
        method: Method {
            design: match manifest {
                Some(m) => match &m.sequential {
                    Some(seq) => format!(
                        "{}. The intervals below are the fixed design's and are not used: each module gives its confidence sequences instead (docs/sequential.md)",
                        seq.rule
                    ),
                    None => format!(
                        "fixed: every task {} time(s) in both arms, the arm that goes first alternating, read once when the run is done; the intervals below are fixed-sample intervals, valid for one reading at the planned size, not for stopping when they look decided",
                        m.k
                    ),
                },
                None => String::new(),
            },
            estimand: ESTIMAND.into(),
            success_interval: SUCCESS_INTERVAL.into(),
            difference_interval: DIFFERENCE_INTERVAL.into(),
            relative_interval: RELATIVE_INTERVAL.into(),
            bootstrap_resamples: opts.resamples,
            bootstrap_seed: opts.seed,
            min_pairs_for_verdict: opts.min_pairs_for_verdict,
            min_passes_for_verdict: opts.min_passes_for_verdict,
            success_margin: Some(opts.success_margin),
            pair_sets: PAIR_SETS.into(),
            verdict_rules: verdict_rules(opts),
            power_method: POWER_METHOD.into(),
            graders: Some(crate::graders::agreement()),
            judge: exp.sessions.iter().find_map(|s| s.record.verifier.as_ref()?.graded.as_ref()?.judge.clone()),
            definitions: crate::definitions::all(),
        },
        prices_loaded: prices.is_some(),
        run: RunInfo {
            manifest: manifest.is_some(),
            planned_k: manifest.map(|m| m.k),
            stopped: manifest.and_then(|m| m.stopped.clone()),
            seal: manifest.and_then(|m| m.seal.clone()),
            attack: manifest.and_then(|m| m.attack.clone()),
            preflight_skipped,
            fingerprints,
            superseded: exp.superseded.len(),
            superseded_reasons,
            ignored,
            harness: harness_share(exp.sessions.iter().map(|l| &l.record)),
        },
        notices,
        attrition: attr.into_values().collect(),
        models,
        oracle_floors,
        order: order::order_rows(sessions.iter().map(|s| &s.record)),
        provenance: crate::provenance::of(exp, opts.seed, invocation),
        split_disagreements: Vec::new(),
    };
    summary.split_disagreements = splits::disagreements(&summary);
    Ok(summary)
}

pub const PAIR_SETS: &str = "\"all pairs\": every (task, rep) pair valid in both arms, whatever the outcome — what each arm costs as used, failures included. \"both passed\": only the pairs where both arms passed — what success costs in each arm. A saving over all pairs that the both-passed pairs do not show was made by failing differently, and is no saving.";

/// What the intervals estimate, said once: every report states it.
pub const ESTIMAND: &str = "the mean over the tasks such a set stands for (the task, not the session, is the sampled unit: reps of one task are not independent draws), each task weighted equally";

pub const SUCCESS_INTERVAL: &str = "Wilson score 95% interval over valid sessions at the effective sample size of sessions clustered by task (n divided by the design effect 1 + (m − 1)·ρ, ρ the intraclass correlation of passing within a task, m the sessions per task): an interval for the pass rate over the tasks such a set stands for";

pub const DIFFERENCE_INTERVAL: &str = "t 95% interval (T − 1 degrees of freedom, T tasks) over the per-task mean paired differences (pattern − control, over the (task, rep) pairs valid in both arms): an interval for the mean difference over the tasks such a set stands for; it narrows with more tasks, not with more reps of the same tasks";

pub const RELATIVE_INTERVAL: &str = "Fieller's 95% interval of mean(pattern) / mean(control) − 1 over the per-task means, with a t quantile (T − 1 degrees of freedom): the ratios for which the pattern's mean minus that multiple of the control's is not shown different from 0 — the control mean's own uncertainty included, and not symmetric, as a ratio's uncertainty is not";
