//! The instrument checked against a known truth: many simulated experiments per scenario — a
//! population of tasks with planted arm differences ([`Scenario`]) — each analysed by the same
//! [`crate::summarise`] every report uses, and the rates that matter for trusting a report:
//! how often each interval covers the population's true value, how often each verdict comes
//! out (false verdicts under a null, power under a planted effect), how often two identical
//! experiments disagree, and whether the minimum detectable difference a report states is
//! detected as often as it claims (docs/calibration/).
//!
//! The simulation is at the record level: the records a run would write, drawn from the
//! population, with nothing of a session's transport; so thousands of experiments take
//! seconds.

mod population;
pub mod render;
pub mod sequential;

use serde::{Deserialize, Serialize};

pub use population::{Difficulty, Rng, Scenario, SimPair, Success, Task, Tokens, Truth};

use crate::metrics::{ModuleReport, Options, Verdict};
use crate::stats::{self, Interval};

/// The schema of a study's JSON.
pub const STUDY_SCHEMA: &str = "mcp-pattern-bench/calibration/v1";

/// The one-sided level a "confirmed" verdict holds its false positives to: it needs the 95 %
/// token interval entirely below 0, which a population with no difference gives 2.5 % of the
/// time at most.
pub const CONFIRMED_ALPHA: f64 = 0.025;
/// A "negative" needs the success interval below 0 or the token interval above 0: at most
/// 2.5 % each under a null.
pub const NEGATIVE_ALPHA: f64 = 0.05;
/// Coverage a 95 % interval may not be shown below (beyond the simulation's sampling error).
pub const COVERAGE_FLOOR: f64 = 0.93;
/// The detection rate of a stated MDE (claimed 80 %) may not be shown below this.
pub const MDE_FLOOR: f64 = 0.70;

/// The scenarios committed with the project (aggregate/calibration/*.toml).
pub fn committed_scenarios() -> Vec<Scenario> {
    const FILES: [(&str, &str); 8] = [
        ("null.toml", include_str!("../../calibration/null.toml")),
        ("small.toml", include_str!("../../calibration/small.toml")),
        ("medium.toml", include_str!("../../calibration/medium.toml")),
        ("large.toml", include_str!("../../calibration/large.toml")),
        ("harm.toml", include_str!("../../calibration/harm.toml")),
        ("rare-harm.toml", include_str!("../../calibration/rare-harm.toml")),
        ("correlated.toml", include_str!("../../calibration/correlated.toml")),
        ("uneven.toml", include_str!("../../calibration/uneven.toml")),
    ];
    FILES
        .iter()
        .map(|(name, text)| {
            let s: Scenario = toml::from_str(text).unwrap_or_else(|e| panic!("aggregate/calibration/{name}: {e}"));
            s.check().unwrap_or_else(|e| panic!("aggregate/calibration/{name}: {e}"));
            s
        })
        .collect()
}

/// A design: how many tasks, and how many pairs (reps) per task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Design {
    pub tasks: usize,
    pub k: u32,
}

impl Design {
    pub fn pairs(self) -> usize {
        self.tasks * self.k as usize
    }

    /// `8x3` → 8 tasks, k = 3.
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("design `{s}`: expected TASKSxK, e.g. 8x3 (8 tasks, 3 pairs each)");
        let (t, k) = s.split_once(['x', 'X', '×']).ok_or_else(bad)?;
        let (tasks, k): (usize, u32) = (t.trim().parse().map_err(|_| bad())?, k.trim().parse().map_err(|_| bad())?);
        if tasks < 2 || k < 1 {
            return Err(format!("design `{s}`: needs at least 2 tasks (an interval over tasks needs two) and k ≥ 1"));
        }
        Ok(Self { tasks, k })
    }

    pub fn label(self) -> String {
        format!("{} × {}", self.tasks, self.k)
    }
}

/// The designs the committed study runs: the README's (8 tasks × k = 3) among them, from 8 to 81
/// pairs.
pub fn default_designs() -> Vec<Design> {
    [(8, 1), (8, 3), (8, 5), (16, 3), (27, 3)].into_iter().map(|(tasks, k)| Design { tasks, k }).collect()
}

/// What to run.
#[derive(Debug, Clone)]
pub struct StudyConfig {
    pub scenarios: Vec<Scenario>,
    pub designs: Vec<Design>,
    /// Simulated experiments per scenario and design (each with an identical twin for the flip
    /// rate).
    pub experiments: usize,
    pub seed: u64,
    /// Worker threads (the result does not depend on it).
    pub threads: usize,
}

/// A rate measured over simulated experiments, with its own Wilson 95 % interval (the
/// simulation's sampling error).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub hits: usize,
    /// Experiments the rate is over.
    pub n: usize,
    /// Experiments left out because the report gave no interval there (shown, never counted as
    /// covering or missing).
    #[serde(default)]
    pub absent: usize,
    pub rate: Option<f64>,
    pub ci95: Option<Interval>,
    /// For a coverage: the misses where the truth lay below the interval (for a token saving,
    /// a larger saving than shown) and above it. Zero for other rates.
    #[serde(default)]
    pub truth_below: usize,
    #[serde(default)]
    pub truth_above: usize,
}

/// Where an interval left the truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Inside,
    Below,
    Above,
}

impl Rate {
    fn of(outcomes: impl Iterator<Item = Option<bool>>) -> Self {
        Self::of_sides(outcomes.map(|o| o.map(|hit| if hit { Side::Inside } else { Side::Above }))).without_sides()
    }

    fn of_sides(outcomes: impl Iterator<Item = Option<Side>>) -> Self {
        let (mut hits, mut n, mut absent, mut below, mut above) = (0, 0, 0, 0, 0);
        for o in outcomes {
            match o {
                Some(side) => {
                    n += 1;
                    match side {
                        Side::Inside => hits += 1,
                        Side::Below => below += 1,
                        Side::Above => above += 1,
                    }
                }
                None => absent += 1,
            }
        }
        Self { hits, n, absent, rate: (n > 0).then(|| hits as f64 / n as f64), ci95: stats::wilson(hits, n), truth_below: below, truth_above: above }
    }

    fn without_sides(self) -> Self {
        Self { truth_below: 0, truth_above: 0, ..self }
    }
}

/// How often each interval covered the population's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    pub token_difference: Rate,
    pub relative_token_difference: Rate,
    pub success_difference: Rate,
    pub pattern_pass_rate: Rate,
    pub control_pass_rate: Rate,
}

/// How often each verdict came out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdicts {
    pub confirmed: Rate,
    pub negative: Rate,
    pub inconclusive: Rate,
    pub withheld: Rate,
}

/// One scenario at one design.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub scenario: String,
    pub design: Design,
    pub pairs: usize,
    pub truth: Truth,
    pub coverage: Coverage,
    pub verdicts: Verdicts,
    /// The verdict the scenario should get, and how often it did (the power; for a null, the
    /// rate of no false verdict).
    pub right_verdict: Verdict,
    pub reached_right_verdict: Rate,
    /// Two experiments on the same tasks with fresh sessions gave different verdicts.
    pub flip: Rate,
    /// Median over experiments of the relative input-token difference the report said it could
    /// detect (its minimum detectable difference over the control's mean).
    pub median_relative_token_mde: Option<f64>,
    /// Median of the success-rate difference it said it could detect.
    pub median_success_mde: Option<f64>,
}

/// At a design: plant the relative token effect the report said it could detect (the null
/// scenario's median MDE), and count how often the token interval then excludes 0 — 80 % is
/// what the MDE claims.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MdeCheck {
    pub scenario: String,
    pub design: Design,
    pub planted_relative_effect: f64,
    pub detected: Rate,
    pub claimed_power: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Study {
    pub schema: String,
    pub experiments_per_cell: usize,
    pub seed: u64,
    pub scenarios: Vec<Scenario>,
    pub cells: Vec<Cell>,
    pub mde_checks: Vec<MdeCheck>,
    /// The levels the rates are judged against.
    pub nominal_coverage: f64,
    pub confirmed_alpha: f64,
    pub negative_alpha: f64,
}

/// What one simulated experiment's report said.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    token: Option<Side>,
    relative: Option<Side>,
    success: Option<Side>,
    pattern_rate: Option<Side>,
    control_rate: Option<Side>,
    verdict: Verdict,
    twin_verdict: Verdict,
    relative_mde: Option<f64>,
    success_mde: Option<f64>,
    token_below_zero: bool,
}

fn covers(i: Option<Interval>, truth: f64) -> Option<Side> {
    i.map(|i| {
        if truth < i.lo {
            Side::Below
        } else if truth > i.hi {
            Side::Above
        } else {
            Side::Inside
        }
    })
}

/// The module report the aggregate code writes for one experiment.
fn report(exp: &crate::load::Experiment, opts: &Options) -> ModuleReport {
    let summary = crate::summarise(exp, None, opts).expect("a simulated experiment is well formed");
    summary.models.into_iter().next().and_then(|m| m.modules.into_iter().next()).expect("one model, one module")
}

fn experiment(scenario: &Scenario, truth: &Truth, design: Design, seed: u64, opts: &Options) -> Outcome {
    let mut rng = Rng::new(seed);
    let tasks = scenario.draw_tasks(&mut rng, design.tasks);
    let m = report(&scenario.sessions(&mut rng, &tasks, design.k), opts);
    let twin = report(&scenario.sessions(&mut rng, &tasks, design.k), opts);
    let tokens = m.paired.input_tokens.as_ref();
    let success = m.paired.success.as_ref();
    Outcome {
        token: tokens.map(|d| covers(d.ci95, truth.token_difference)).unwrap_or(None),
        relative: tokens.map(|d| covers(d.relative_ci95, truth.relative_token_difference)).unwrap_or(None),
        success: success.map(|d| covers(d.ci95, truth.success_difference)).unwrap_or(None),
        pattern_rate: m.pattern.as_ref().and_then(|a| covers(a.success.wilson95, truth.pattern_pass_rate)),
        control_rate: m.control.as_ref().and_then(|a| covers(a.success.wilson95, truth.control_pass_rate)),
        verdict: m.verdict,
        twin_verdict: twin.verdict,
        relative_mde: tokens.and_then(|d| d.relative_mde),
        success_mde: success.and_then(|d| d.mde),
        token_below_zero: tokens.and_then(|d| d.ci95).is_some_and(|i| i.entirely_below(0.0)),
    }
}

/// A seed per (study seed, scenario, design, experiment), independent of the order cells run in
/// and of the number of threads.
fn seed_of(seed: u64, scenario: &str, design: Design, i: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in scenario.bytes().chain(design.tasks.to_le_bytes()).chain(design.k.to_le_bytes()).chain(seed.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    stats::SplitMix64::new(h ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).next_u64()
}

/// `f(0..n)` on `threads` threads, in order.
fn parallel<T: Send>(n: usize, threads: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = threads.clamp(1, n.max(1));
    let chunk = n.div_ceil(threads);
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = (0..threads).map(|t| s.spawn(move || (t * chunk..((t + 1) * chunk).min(n)).map(f).collect::<Vec<T>>())).collect();
        handles.into_iter().flat_map(|h| h.join().expect("a calibration worker panicked")).collect()
    })
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    stats::median(&xs)
}

/// Runs one scenario at one design.
pub fn run_cell(scenario: &Scenario, design: Design, experiments: usize, seed: u64, threads: usize) -> Cell {
    let truth = scenario.truth();
    let opts = Options::default();
    let outcomes = parallel(experiments, threads, |i| experiment(scenario, &truth, design, seed_of(seed, &scenario.name, design, i), &opts));
    let verdict_rate = |v: Verdict| Rate::of(outcomes.iter().map(|o| Some(o.verdict == v)));
    Cell {
        scenario: scenario.name.clone(),
        design,
        pairs: design.pairs(),
        truth,
        coverage: Coverage {
            token_difference: Rate::of_sides(outcomes.iter().map(|o| o.token)),
            relative_token_difference: Rate::of_sides(outcomes.iter().map(|o| o.relative)),
            success_difference: Rate::of_sides(outcomes.iter().map(|o| o.success)),
            pattern_pass_rate: Rate::of_sides(outcomes.iter().map(|o| o.pattern_rate)),
            control_pass_rate: Rate::of_sides(outcomes.iter().map(|o| o.control_rate)),
        },
        verdicts: Verdicts {
            confirmed: verdict_rate(Verdict::Confirmed),
            negative: verdict_rate(Verdict::Negative),
            inconclusive: verdict_rate(Verdict::Inconclusive),
            withheld: verdict_rate(Verdict::Withheld),
        },
        right_verdict: scenario.right_verdict,
        reached_right_verdict: verdict_rate(scenario.right_verdict),
        flip: Rate::of(outcomes.iter().map(|o| Some(o.verdict != o.twin_verdict))),
        median_relative_token_mde: median(outcomes.iter().filter_map(|o| o.relative_mde).collect()),
        median_success_mde: median(outcomes.iter().filter_map(|o| o.success_mde).collect()),
    }
}

/// Plants `cell`'s median MDE in `scenario` (a null) and measures how often it is detected.
pub fn check_mde(scenario: &Scenario, cell: &Cell, experiments: usize, seed: u64, threads: usize) -> Option<MdeCheck> {
    let mde = cell.median_relative_token_mde?;
    // A saving of that size (the pattern costs less), as the verdict needs it shown.
    let planted = scenario.with_token_effect(-mde);
    let truth = planted.truth();
    let opts = Options::default();
    let name = format!("{}+mde", scenario.name);
    let outcomes = parallel(experiments, threads, |i| experiment(&planted, &truth, cell.design, seed_of(seed, &name, cell.design, i), &opts));
    Some(MdeCheck {
        scenario: scenario.name.clone(),
        design: cell.design,
        planted_relative_effect: -mde,
        detected: Rate::of(outcomes.iter().map(|o| Some(o.token_below_zero))),
        claimed_power: 0.80,
    })
}

/// The whole study: every scenario at every design, then the MDE check at every design of each
/// null scenario (one whose planted effects are all 0). `progress` is told each cell as it ends.
pub fn run(config: &StudyConfig, mut progress: impl FnMut(&Cell)) -> Study {
    let mut cells = Vec::new();
    let mut mde_checks = Vec::new();
    for scenario in &config.scenarios {
        for &design in &config.designs {
            let cell = run_cell(scenario, design, config.experiments, config.seed, config.threads);
            progress(&cell);
            if is_null(scenario)
                && let Some(check) = check_mde(scenario, &cell, config.experiments, config.seed, config.threads)
            {
                mde_checks.push(check);
            }
            cells.push(cell);
        }
    }
    Study {
        schema: STUDY_SCHEMA.into(),
        experiments_per_cell: config.experiments,
        seed: config.seed,
        scenarios: config.scenarios.clone(),
        cells,
        mde_checks,
        nominal_coverage: 0.95,
        confirmed_alpha: CONFIRMED_ALPHA,
        negative_alpha: NEGATIVE_ALPHA,
    }
}

/// A scenario with no planted difference in either metric.
pub fn is_null(s: &Scenario) -> bool {
    s.tokens.effect == 0.0 && s.success.effect == 0.0 && s.success.effect_spread == 0.0 && s.success.broken_share == 0.0
}

/// What falls short of its stated level, in words (empty when nothing does): a coverage whose
/// Wilson upper bound is below `floor`, a false-confirmed or false-negative rate under a null
/// whose Wilson lower bound is above its α, an MDE check detected less than `mde_floor` of the
/// time at the upper bound.
pub fn shortfalls(study: &Study, floor: f64, mde_floor: f64) -> Vec<String> {
    let mut out = Vec::new();
    for c in &study.cells {
        let at = format!("{} at {} ({} pairs)", c.scenario, c.design.label(), c.pairs);
        let cov = &c.coverage;
        for (what, r) in [
            ("token difference", &cov.token_difference),
            ("relative token difference", &cov.relative_token_difference),
            ("success difference", &cov.success_difference),
            ("pattern pass rate", &cov.pattern_pass_rate),
            ("control pass rate", &cov.control_pass_rate),
        ] {
            if r.ci95.is_some_and(|i| i.hi < floor) {
                out.push(format!("{at}: the {what} interval covered the truth in {} of {} experiments", r.hits, r.n));
            }
        }
        if c.scenario_is_null(study) {
            for (what, r, alpha) in [("confirmed", &c.verdicts.confirmed, CONFIRMED_ALPHA), ("negative", &c.verdicts.negative, NEGATIVE_ALPHA)] {
                if r.ci95.is_some_and(|i| i.lo > alpha) {
                    out.push(format!("{at}: a false \"{what}\" in {} of {} experiments, above α = {alpha}", r.hits, r.n));
                }
            }
        }
    }
    for m in &study.mde_checks {
        if m.detected.ci95.is_some_and(|i| i.hi < mde_floor) {
            out.push(format!(
                "{} at {}: the stated minimum detectable difference ({:.1} %) was detected in {} of {} experiments",
                m.scenario,
                m.design.label(),
                100.0 * m.planted_relative_effect.abs(),
                m.detected.hits,
                m.detected.n
            ));
        }
    }
    out
}

impl Cell {
    fn scenario_is_null(&self, study: &Study) -> bool {
        study.scenarios.iter().any(|s| s.name == self.scenario && is_null(s))
    }
}

/// How often identical experiments disagreed on the verdict at a committed design, over the
/// committed study's scenarios (docs/calibration/study.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlipRate {
    /// The committed design nearest the report's (fewest steps in log tasks and log k), within a
    /// factor of 2 in each (else there is no flip rate to state).
    pub design: Design,
    /// The lowest and highest flip rate over the scenarios at that design, and which scenario.
    pub lowest: f64,
    pub highest: f64,
    pub highest_scenario: String,
    pub scenarios: usize,
    pub experiments_per_scenario: usize,
    pub source: String,
}

/// The committed study, as [`run`] wrote it (`scripts/calibrate.sh`).
pub fn committed_study() -> Option<&'static Study> {
    static STUDY: std::sync::LazyLock<Option<Study>> =
        std::sync::LazyLock::new(|| serde_json::from_str(include_str!("../../../docs/calibration/study.json")).ok());
    STUDY.as_ref()
}

/// The committed study's flip rates at the design nearest `tasks` × `k`.
pub fn committed_flip_rate(tasks: usize, k: u32) -> Option<FlipRate> {
    flip_rate_in(committed_study()?, tasks, k)
}

fn flip_rate_in(study: &Study, tasks: usize, k: u32) -> Option<FlipRate> {
    if tasks == 0 || k == 0 {
        return None;
    }
    let distance = |d: Design| (d.tasks as f64 / tasks as f64).ln().abs() + (f64::from(d.k) / f64::from(k)).ln().abs();
    let design = study.cells.iter().map(|c| c.design).min_by(|a, b| distance(*a).total_cmp(&distance(*b)))?;
    // Only a design within a factor of 2 in tasks and in k says anything about this one.
    let near = |studied: f64, this: f64| (studied / this).ln().abs() <= 2f64.ln() + 1e-9;
    if !near(design.tasks as f64, tasks as f64) || !near(f64::from(design.k), f64::from(k)) {
        return None;
    }
    let at: Vec<(&str, f64)> = study.cells.iter().filter(|c| c.design == design).filter_map(|c| Some((c.scenario.as_str(), c.flip.rate?))).collect();
    let lowest = at.iter().map(|a| a.1).reduce(f64::min)?;
    let (highest_scenario, highest) = at.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(FlipRate {
        design,
        lowest,
        highest,
        highest_scenario: highest_scenario.to_owned(),
        scenarios: at.len(),
        experiments_per_scenario: study.experiments_per_cell,
        source: "docs/calibration/study.json".into(),
    })
}
