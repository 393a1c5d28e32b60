//! Records → per-cell metrics, paired differences, verdicts, power (rules: `docs/honesty-rules.md` §7).
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
//! - With a manifest, k is the planned k: a task whose planned reps are not all recorded and
//!   valid has an unknown pass^k, never a true one. Without one, k is the most reps any task of
//!   the arm has, and a task with fewer is unknown the same way.
//! - Replaced attempts (superseded) are counted per cell, never scored and never silent.

use std::collections::{BTreeMap, BTreeSet};

use records::Verdict as TaskVerdict;
use records::{Provider, Role, SessionRecord};
use serde::{Deserialize, Serialize};

use crate::check::{self, Fingerprints};
use crate::error::Result;
use crate::load::{Experiment, PriceTable};
use crate::stats::{self, Interval};

/// Version 2: counts are integers (oracle medians were floats) and seeds are strings; the shape
/// is `summary.schema.json` beside this crate. Fields added within a version are optional
/// there (`method.definitions`, `oracle_floors[].per_session`): scripts reading older summaries
/// keep working, and no field is renamed or removed without a new version.
pub const SUMMARY_SCHEMA: &str = "mcp-pattern-bench/aggregate-summary/v2";

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
}

fn default_min_passes() -> usize {
    5
}

impl Default for Options {
    fn default() -> Self {
        Self {
            resamples: stats::BOOTSTRAP_RESAMPLES,
            seed: stats::BOOTSTRAP_SEED,
            power_relative_difference: 0.10,
            min_pairs_for_verdict: 10,
            min_passes_for_verdict: default_min_passes(),
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
    /// Where the numbers come from: command, build, dates, k, seeds, model parameters, spec,
    /// preflight, and what wrote the report.
    #[serde(default)]
    pub provenance: crate::provenance::Provenance,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Method {
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
    /// What "all pairs" and "both passed" differences are computed over.
    #[serde(default)]
    pub pair_sets: String,
    pub verdict_rules: String,
    pub power_method: String,
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
}

/// The harness's own time (reset, verification, record write, and the session minus the model's
/// answered requests and the tool calls) per valid model session, and its share of the session's
/// whole time. Only sessions with no failed model request count: a failed attempt's duration is
/// not in the record, so it could not be told apart from the harness's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessShare {
    pub sessions: usize,
    /// Valid model sessions left out because a request of theirs failed (a retry, an
    /// unparseable output, a failed last turn).
    pub left_out: usize,
    pub p50_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// Median over sessions of harness time / session time (0.0015 is 0.15%).
    pub share_p50: Option<f64>,
    pub share_max: Option<f64>,
}

fn harness_share<'a>(records: impl Iterator<Item = &'a SessionRecord>) -> HarnessShare {
    let mut ms = Vec::new();
    let mut shares = Vec::new();
    let mut left_out = 0;
    for r in records.filter(|r| r.validity.is_valid() && !r.model.is_oracle()) {
        if r.failed_turn.is_some() || r.unparseable_output || r.provider_retries != Some(0) {
            left_out += 1;
            continue;
        }
        let h = &r.harness;
        let model: f64 = r.turn_records.iter().map(|t| t.latency_ms).sum();
        let calls: f64 = r.tool_calls.iter().map(|c| c.latency_ms).sum();
        let own = h.reset_ms + h.verify_ms + h.write_ms + (h.session_ms - model - calls).max(0.0);
        let whole = h.reset_ms + h.session_ms + h.verify_ms + h.write_ms;
        ms.push(own);
        if whole > 0.0 {
            shares.push(own / whole);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| v[(v.len() - 1) / 2])
    };
    let max = |v: &[f64]| v.iter().copied().reduce(f64::max);
    HarnessShare { sessions: ms.len(), left_out, max_ms: max(&ms), share_max: max(&shares), p50_ms: median(&mut ms), share_p50: median(&mut shares) }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttritionRow {
    pub model: String,
    pub provider: Provider,
    pub module: String,
    pub server: String,
    pub role: Role,
    /// k × the module's tasks from the manifest; null without one.
    #[serde(default)]
    pub planned: Option<usize>,
    /// Sessions ever recorded for this cell: the current records plus the replaced attempts.
    #[serde(default)]
    pub attempts: usize,
    /// Attempts a rerun replaced (under `superseded/`): counted here, never scored.
    #[serde(default)]
    pub replaced: usize,
    /// The current records, valid or not.
    pub attempted: usize,
    pub valid: usize,
    /// Invalid reason → count.
    pub invalid: BTreeMap<String, usize>,
    /// Flags over the valid sessions (each a valid failure).
    #[serde(default)]
    pub turn_cap_hits: usize,
    #[serde(default)]
    pub context_exceeded: usize,
    #[serde(default)]
    pub tool_call_as_text: usize,
    #[serde(default)]
    pub unparseable_output: usize,
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
    /// Set when the module's records hold more than one server on a side (an external arm
    /// beside the built-in one): this report compares exactly these two, and the module has
    /// one report per (pattern, control) pair. Absent for an ordinary two-arm module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
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
    pub notices: Vec<String>,
    pub tasks: Vec<TaskRow>,
}

/// The two servers a report compares when a module has more than two.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Comparison {
    pub pattern: String,
    pub control: String,
}

impl Comparison {
    /// `module (pattern vs control)` when set, else the module.
    pub fn label(module: &str, comparison: Option<&Self>) -> String {
        match comparison {
            Some(c) => format!("{module} ({} vs {})", c.pattern, c.control),
            None => module.to_owned(),
        }
    }
}

/// A module's records as the reports compare them: one cell when each side has one server
/// (the ordinary A/B), else one cell per (pattern, control) pair of servers, each holding those
/// two servers' records — an external arm is compared with the other side exactly as the
/// built-in server of its side is, and never pooled with it.
fn comparisons<'a>(recs: &[&'a SessionRecord]) -> Vec<(Option<Comparison>, Vec<&'a SessionRecord>)> {
    let side = |role: Role| -> BTreeSet<&str> { recs.iter().filter(|r| r.role == role).map(|r| r.server.as_str()).collect() };
    let (patterns, controls) = (side(Role::Pattern), side(Role::Control));
    if patterns.len() <= 1 && controls.len() <= 1 {
        return vec![(None, recs.to_vec())];
    }
    let mut out = Vec::new();
    for p in &patterns {
        for c in &controls {
            let cell = recs.iter().copied().filter(|r| r.server == *p || r.server == *c).collect();
            out.push((Some(Comparison { pattern: (*p).to_owned(), control: (*c).to_owned() }), cell));
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Confirmed,
    Negative,
    Inconclusive,
    /// The sessions measure a fault of the endpoint, not the pattern: no verdict whatever the
    /// intervals say (see [`verdict_rules`]).
    Withheld,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "confirmed",
            Self::Negative => "negative",
            Self::Inconclusive => "inconclusive",
            Self::Withheld => "withheld",
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OracleModule {
    pub module: String,
    /// As [`ModuleReport::comparison`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    pub rows: Vec<OracleRow>,
    /// Σ over tasks of the per-task median estimated tokens (context at the end), per role;
    /// a role with a task lacking the figure is absent.
    pub total_estimated_tokens: BTreeMap<Role, u64>,
    /// Σ over tasks of the per-task median estimated input tokens (one call per turn), per
    /// role; comparable with model sessions' input tokens. Roles without the figure are absent.
    #[serde(default)]
    pub total_estimated_input_tokens: BTreeMap<Role, u64>,
    /// What one session of each role takes: the figures the report's tables and chart show.
    #[serde(default)]
    pub per_session: BTreeMap<Role, OraclePerSession>,
}

impl OracleModule {
    /// A role's figure per session (see [`OraclePerSession`]), or why there is none: what the
    /// oracle table, the headline and the chart all show.
    pub fn per_session_of(&self, role: Role, pick: fn(&OraclePerSession) -> Option<f64>) -> std::result::Result<f64, &'static str> {
        match self.per_session.get(&role) {
            None => Err("no sessions"),
            Some(m) => pick(m).ok_or("not every task has it"),
        }
    }

    /// The server of a role, "—" without one.
    pub fn server(&self, role: Role) -> String {
        self.rows.iter().find(|r| r.role == role).map(|r| r.server.clone()).unwrap_or_else(|| "—".into())
    }
}

/// One role's oracle figures per session: the mean over the module's tasks of each task's
/// median. Per session rather than summed because that is what the model results beside them
/// are, and because a sum over tasks grows with a module's task count; each task weighs the
/// same whatever its reps. A figure some task lacks is null: a mean over the other tasks would
/// compare unlike things.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OraclePerSession {
    /// Tasks the means are over.
    pub tasks: usize,
    pub calls: Option<f64>,
    /// An estimate: the context at the end of the plan.
    pub estimated_tokens: Option<f64>,
    /// An estimate: input tokens over the plan's turns, one call per turn.
    pub estimated_input_tokens: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OracleRow {
    pub task: String,
    pub role: Role,
    pub server: String,
    pub sessions: usize,
    pub valid: usize,
    pub passed: usize,
    /// Medians over valid oracle sessions with a floor. Counts stay integers: with an even
    /// number of sessions the median is the lower middle value, one that was observed.
    pub calls: Option<u64>,
    pub schema_bytes: Option<u64>,
    pub args_bytes: Option<u64>,
    pub result_bytes: Option<u64>,
    /// An estimate, never a measurement: the context at the end of the plan.
    pub estimated_tokens: Option<u64>,
    pub estimate_method: Option<String>,
    /// An estimate, never a measurement: input tokens over the plan's turns, one call per turn.
    #[serde(default)]
    pub estimated_input_tokens: Option<u64>,
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

/// What a manifest planned for one module: k reps of each of its tasks.
#[derive(Debug, Clone)]
struct ModulePlan {
    k: u32,
    tasks: Vec<String>,
}

fn module_plan(m: &records::ExperimentManifest, module: &str) -> ModulePlan {
    let tasks = m.tasks.iter().filter_map(|t| t.key.strip_prefix(module)?.strip_prefix('/').map(str::to_owned)).collect();
    ModulePlan { k: m.k, tasks }
}

/// Why a replaced attempt was rerun: the rerun's reason and what the attempt had been.
fn superseded_reason(r: &SessionRecord) -> String {
    let why = r.superseded.as_ref().map_or("no reason recorded", |s| s.reason.as_str());
    match invalid_reason(r) {
        Some(x) => format!("{why} (was invalid: {x})"),
        None => format!("{why} (was valid)"),
    }
}

type CellKey = (String, Provider, String, String, Role);

fn attrition_row(key: &CellKey) -> AttritionRow {
    let (model, provider, module, server, role) = key.clone();
    AttritionRow {
        model,
        provider,
        module,
        server,
        role,
        planned: None,
        attempts: 0,
        replaced: 0,
        attempted: 0,
        valid: 0,
        invalid: BTreeMap::new(),
        turn_cap_hits: 0,
        context_exceeded: 0,
        tool_call_as_text: 0,
        unparseable_output: 0,
    }
}

fn cell(r: &SessionRecord) -> CellKey {
    (r.model.id.clone(), r.model.provider, r.module.clone(), r.server.clone(), r.role)
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
                attr.entry(key.clone()).or_insert_with(|| attrition_row(&key)).planned = Some(m.k as usize * module_plan(m, &server.module).tasks.len());
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
    let mut by_model: BTreeMap<(String, Provider), BTreeMap<String, Vec<&SessionRecord>>> = BTreeMap::new();
    if let Some(m) = manifest {
        for model in m.models.iter().filter(|x| !x.is_oracle()) {
            for server in &m.servers {
                by_model.entry((model.id.clone(), model.provider)).or_default().entry(server.module.clone()).or_default();
            }
        }
    }
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
            let modules = modules
                .into_iter()
                .flat_map(|(module, recs)| {
                    let plan = manifest.map(|m| module_plan(m, &module));
                    comparisons(&recs)
                        .into_iter()
                        .map(|(comparison, cell)| ModuleReport { comparison, ..module_report(&model, &module, &cell, plan.as_ref(), prices, opts) })
                        .collect::<Vec<_>>()
                })
                .collect();
            ModelReport { model, provider, modules }
        })
        .collect();

    let oracle_floors = oracle
        .into_iter()
        .flat_map(|(module, recs)| {
            comparisons(&recs).into_iter().map(|(comparison, cell)| OracleModule { comparison, ..oracle_module(module.clone(), &cell) }).collect::<Vec<_>>()
        })
        .collect();

    let preflight_skipped =
        manifest.is_some_and(|m| m.preflight_skipped) || sessions.iter().any(|s| s.record.fingerprint.as_ref().is_some_and(|f| f.preflight_skipped));
    let ignored: Vec<String> = exp.ignored.iter().map(|p| p.strip_prefix(&exp.dir).unwrap_or(p).display().to_string()).collect();
    let mut notices = Vec::new();
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

    Ok(Summary {
        schema: SUMMARY_SCHEMA.into(),
        experiments: experiments.into_iter().collect(),
        method: Method {
            success_interval: "Wilson score 95% interval over valid sessions".into(),
            difference_interval: "percentile bootstrap 95% interval of the mean paired difference (pattern − control) over (task, rep) pairs valid in both arms; SplitMix64 resampling".into(),
            relative_interval: RELATIVE_INTERVAL.into(),
            bootstrap_resamples: opts.resamples,
            bootstrap_seed: opts.seed,
            min_pairs_for_verdict: opts.min_pairs_for_verdict,
            min_passes_for_verdict: opts.min_passes_for_verdict,
            pair_sets: PAIR_SETS.into(),
            verdict_rules: verdict_rules(opts),
            power_method: POWER_METHOD.into(),
            definitions: crate::definitions::all(),
        },
        prices_loaded: prices.is_some(),
        run: RunInfo {
            manifest: manifest.is_some(),
            planned_k: manifest.map(|m| m.k),
            stopped: manifest.and_then(|m| m.stopped.clone()),
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
        provenance: crate::provenance::of(exp, opts.seed, invocation),
    })
}

/// The verdict rules with this analysis' thresholds, as the report states them.
pub fn verdict_rules(opts: &Options) -> String {
    let (pairs, m) = (opts.min_pairs_for_verdict, opts.min_passes_for_verdict);
    format!(
        "In this order. inconclusive: an arm has no sessions, or fewer than {pairs} pairs are valid in both arms. \
withheld, model too weak: the control passed in fewer than {m} of the valid pairs while failing in at least {m} — its turns and tokens are spent failing, so no difference in cost means anything (below {pairs} pairs this is a notice beside the inconclusive verdict). \
negative: the success-rate difference interval lies entirely below 0 (correctness first: any token saving notwithstanding). \
withheld, too few passes: the pattern passed in fewer than {m} pairs while failing in at least {m}, and its success is not shown worse. \
negative: the input-token difference interval over all pairs lies entirely above 0 (the pattern costs more). \
confirmed: success not shown worse (the success interval's upper bound ≥ 0 — not a proof of equivalence), AND the input-token difference interval lies entirely below 0 over all pairs AND over the pairs where both arms passed, of which there are at least {m}. \
inconclusive: anything else, including a saving over all pairs that the both-passed pairs do not show. \
withheld, overriding all of the above: more than half of either arm's valid sessions wrote their tool calls as text instead of calling them — the endpoint is probably not parsing tool calls, so the sessions measure the endpoint, not the pattern. \
A notice, not a verdict: when the control passed every planned session, the model may be too strong for these tasks to show a success difference. \
{m} is the success–failure condition for comparing two proportions (at least {m} successes and {m} failures)."
    )
}

pub const PAIR_SETS: &str = "\"all pairs\": every (task, rep) pair valid in both arms, whatever the outcome — what each arm costs as used, failures included. \"both passed\": only the pairs where both arms passed — what success costs in each arm. A saving over all pairs that the both-passed pairs do not show was made by failing differently, and is no saving.";

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
        tool_call_as_text: valid.iter().filter(|r| r.tool_call_as_text).count(),
        unparseable_output: valid.iter().filter(|r| r.unparseable_output).count(),
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
        reasoning_tokens: u(|r| r.totals.reasoning_tokens),
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

/// pass@k and pass^k over `expected` reps: the planned k when there is a plan (the duplicate and
/// plan checks make the recorded reps distinct and within 1..=k), else the most reps any task of
/// the arm has.
fn task_arm(recs: &[&SessionRecord], planned_k: Option<u32>, expected: usize) -> TaskArm {
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

fn module_report(model: &str, module: &str, recs: &[&SessionRecord], plan: Option<&ModulePlan>, prices: Option<&PriceTable>, opts: &Options) -> ModuleReport {
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
        match (passed(p), passed(c)) {
            (true, true) => outcomes.both_passed += 1,
            (true, false) => outcomes.pattern_only += 1,
            (false, true) => outcomes.control_only += 1,
            (false, false) => outcomes.neither += 1,
        }
    }
    let succeeded: Vec<(&SessionRecord, &SessionRecord)> = pairs.iter().copied().filter(|(p, c)| passed(p) && passed(c)).collect();
    let turns = |r: &SessionRecord| Some(r.turns as f64);
    let input = |r: &SessionRecord| r.totals.input_tokens.map(|x| x as f64);
    let output = |r: &SessionRecord| r.totals.output_tokens.map(|x| x as f64);
    let paired = Paired {
        pairs_seen: keys.len(),
        pairs_used: pairs.len(),
        pairs_planned: plan.map(|p| p.k as usize * p.tasks.len()),
        dropped,
        dropped_pairs,
        success: diff(&pairs, |r| Some(if passed(r) { 1.0 } else { 0.0 }), opts),
        turns: diff(&pairs, turns, opts),
        input_tokens: diff(&pairs, input, opts),
        output_tokens: diff(&pairs, output, opts),
        outcomes,
        both_passed: BothPassed {
            pairs: succeeded.len(),
            turns: diff(&succeeded, turns, opts),
            input_tokens: diff(&succeeded, input, opts),
            output_tokens: diff(&succeeded, output, opts),
        },
    };

    let pattern = (!pat.is_empty()).then(|| arm_metrics(&pat, model, prices, opts));
    let control = (!ctl.is_empty()).then(|| arm_metrics(&ctl, model, prices, opts));

    // "Every time" needs every planned session: a missing one might have failed.
    let all_planned = |c: &ArmMetrics| plan.is_none_or(|p| c.attempted == p.k as usize * p.tasks.len());
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
    if !as_text.is_empty() {
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

    let planned_k = plan.map(|p| p.k);
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

    ModuleReport {
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
        notices,
        tasks,
    }
}

/// The arms that passed in fewer than the minimum of the used pairs and failed in at least that
/// many (the success–failure condition, [`Options::min_passes_for_verdict`]). Requiring the
/// failures too keeps a handful of pairs that all passed from reading as "too weak".
pub fn few_passes(outcomes: &PairOutcomes, opts: &Options) -> Vec<Role> {
    let (n, m) = (outcomes.total(), opts.min_passes_for_verdict);
    [Role::Control, Role::Pattern]
        .into_iter()
        .filter(|role| {
            let passes = outcomes.passes(*role);
            passes < m && n - passes >= m
        })
        .collect()
}

fn of_task<'a>(v: &[&'a SessionRecord], task: &str) -> Vec<&'a SessionRecord> {
    v.iter().copied().filter(|r| r.task == task).collect()
}

fn index_by_pair<'a>(v: &[&'a SessionRecord]) -> BTreeMap<(String, u32), &'a SessionRecord> {
    v.iter().map(|r| ((r.task.clone(), r.rep), *r)).collect()
}

/// The verdict rules of [`verdict_rules`].
pub fn decide(paired: &Paired, both_arms: bool, opts: &Options) -> (Verdict, String) {
    if !both_arms {
        return (Verdict::Inconclusive, "one arm has no sessions".into());
    }
    if paired.pairs_used < opts.min_pairs_for_verdict {
        let n = paired.pairs_used;
        return (
            Verdict::Inconclusive,
            format!("{n} valid pair{}; at least {} are needed for a verdict", if n == 1 { "" } else { "s" }, opts.min_pairs_for_verdict),
        );
    }
    let (n, m) = (paired.pairs_used, opts.min_passes_for_verdict);
    let few = few_passes(&paired.outcomes, opts);
    if few.contains(&Role::Control) {
        return (
            Verdict::Withheld,
            format!(
                "model too weak to show a difference: the control passed in {} of {n} pairs, fewer than the {m} a comparison needs; the turn and token differences are over failures, not savings",
                paired.outcomes.passes(Role::Control)
            ),
        );
    }
    let Some(s) = paired.success.as_ref().and_then(|d| d.ci95) else {
        return (Verdict::Inconclusive, "no success-difference interval".into());
    };
    if s.entirely_below(0.0) {
        return (Verdict::Negative, "success-rate difference interval entirely below 0: the pattern is less correct".into());
    }
    if few.contains(&Role::Pattern) {
        return (
            Verdict::Withheld,
            format!(
                "too few passes to compare: the pattern passed in {} of {n} pairs, fewer than {m}, and its success is not shown worse; its turn and token differences are mostly over failures, not savings",
                paired.outcomes.passes(Role::Pattern)
            ),
        );
    }
    let Some(t) = paired.input_tokens.as_ref().and_then(|d| d.ci95) else {
        return (Verdict::Inconclusive, "no input-token difference interval (usage missing)".into());
    };
    if t.entirely_below(0.0) {
        let b = &paired.both_passed;
        let success_cost = b.input_tokens.as_ref().and_then(|d| d.ci95);
        if b.pairs >= m && success_cost.is_some_and(|i| i.entirely_below(0.0)) {
            (
                Verdict::Confirmed,
                format!(
                    "no detected success regression, and the input-token difference interval is entirely below 0 over all pairs and over the {} pairs where both arms passed",
                    b.pairs
                ),
            )
        } else {
            (
                Verdict::Inconclusive,
                format!(
                    "input tokens are lower over all pairs, but not shown lower over the {} pairs where both arms passed ({}): a saving made by failing differently is no saving",
                    b.pairs,
                    if b.pairs < m { format!("fewer than {m}") } else { "their interval is not entirely below 0".to_string() }
                ),
            )
        }
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
            let med = |f: fn(&records::OracleFloor) -> u64| lower_median(floors.iter().map(|x| f(x)).collect());
            OracleRow {
                task,
                role,
                server,
                sessions: v.len(),
                valid: valid.len(),
                passed: valid.iter().filter(|r| passed(r)).count(),
                calls: med(|f| f.calls as u64),
                schema_bytes: med(|f| f.schema_bytes as u64),
                args_bytes: med(|f| f.args_bytes as u64),
                result_bytes: med(|f| f.result_bytes as u64),
                estimated_tokens: med(|f| f.estimated_tokens),
                estimate_method: floors.first().map(|f| f.estimate_method.clone()),
                estimated_input_tokens: lower_median(floors.iter().filter_map(|f| f.estimated_input_tokens).collect()),
                input_estimate_method: floors.iter().find_map(|f| f.input_estimate_method.clone()),
            }
        })
        .collect();
    // A role's total is over all its tasks or absent: a partial sum would compare unlike things.
    let total = |figure: fn(&OracleRow) -> Option<u64>| {
        let mut by_role: BTreeMap<Role, Option<u64>> = BTreeMap::new();
        for r in &rows {
            let entry = by_role.entry(r.role).or_insert(Some(0));
            *entry = entry.zip(figure(r)).map(|(sum, t)| sum + t);
        }
        by_role.into_iter().filter_map(|(role, t)| Some((role, t?))).collect::<BTreeMap<_, _>>()
    };
    let total_estimated_tokens = total(|r| r.estimated_tokens);
    let total_estimated_input_tokens = total(|r| r.estimated_input_tokens);
    let per_session = per_session(&rows);
    OracleModule { module, comparison: None, rows, total_estimated_tokens, total_estimated_input_tokens, per_session }
}

/// Each role's [`OraclePerSession`] over its rows (one per task).
fn per_session(rows: &[OracleRow]) -> BTreeMap<Role, OraclePerSession> {
    let roles: BTreeSet<Role> = rows.iter().map(|r| r.role).collect();
    roles
        .into_iter()
        .map(|role| {
            let of_role: Vec<&OracleRow> = rows.iter().filter(|r| r.role == role).collect();
            // `None` as soon as one task lacks the figure.
            let mean = |figure: fn(&OracleRow) -> Option<u64>| {
                let values: Option<Vec<f64>> = of_role.iter().map(|r| figure(r).map(|x| x as f64)).collect();
                stats::mean(&values?)
            };
            let means = OraclePerSession {
                tasks: of_role.iter().map(|r| r.task.as_str()).collect::<BTreeSet<_>>().len(),
                calls: mean(|r| r.calls),
                estimated_tokens: mean(|r| r.estimated_tokens),
                estimated_input_tokens: mean(|r| r.estimated_input_tokens),
            };
            (role, means)
        })
        .collect()
}

/// The lower middle value of `xs` (the median for an odd count): a value some session had.
fn lower_median(mut xs: Vec<u64>) -> Option<u64> {
    xs.sort_unstable();
    xs.get(xs.len().checked_sub(1)? / 2).copied()
}
