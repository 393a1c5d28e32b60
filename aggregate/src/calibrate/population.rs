//! A scenario: a population of tasks with planted arm differences, its true values, and one
//! simulated experiment's session records drawn from it.
//!
//! A task has a size (its control sessions' mean input tokens), a relative effect of the pattern
//! on that size, and a pass probability per arm; a session draws its tokens around its task's
//! mean and passes with its task's probability. Tasks differ (sizes and effects spread), and
//! sessions of one task correlate (they share the task's draws): the structure that makes the
//! task, not the session, the unit a verdict generalises over.

use std::path::PathBuf;

use records::{HarnessTimings, ModelSpec, Offered, Role, SessionRecord, Totals, Validity, Verdict as V, VerifierOutcome};
use serde::{Deserialize, Serialize};

use crate::load::{Experiment, Loaded};
use crate::metrics::Verdict;
use crate::stats::SplitMix64;

/// A population of tasks with planted differences between the arms (a TOML file; the committed
/// ones are [`super::committed_scenarios`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// What a verdict should say of this population: the rate at which experiments reach it is
    /// the power (for a null population, 1 − the rate of false verdicts).
    pub right_verdict: Verdict,
    pub tokens: Tokens,
    pub success: Success,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tokens {
    /// Median over tasks of a task's mean control input tokens per session.
    pub control: f64,
    /// Log-SD of task size: tasks differ in size.
    pub task_spread: f64,
    /// The pattern's mean relative effect on a task's input tokens (−0.15: 15 % fewer); the
    /// population's true relative difference.
    pub effect: f64,
    /// Log-SD of the tasks' effects around it: how much the pattern helps differs by task (the
    /// arm × task interaction).
    pub effect_spread: f64,
    /// Log-SD of a session around its task's mean: small against `task_spread` means sessions of
    /// one task are strongly correlated.
    pub session_noise: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Success {
    /// The tasks' control pass probabilities: which share of tasks passes how often.
    pub difficulty: Vec<Difficulty>,
    /// Added to a task's pass probability in the pattern arm (−0.2: 20 points less likely).
    pub effect: f64,
    /// SD of that shift across tasks; each task's pattern probability is clipped to [0, 1].
    pub effect_spread: f64,
    /// The share of tasks the pattern breaks outright (its pass probability 0 there, whatever
    /// the control's): a harm a few tasks show and most do not.
    #[serde(default)]
    pub broken_share: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Difficulty {
    pub share: f64,
    pub pass: f64,
}

/// The population's values every interval claims to cover.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Truth {
    /// Mean over the population of tasks of pattern − control input tokens per session.
    pub token_difference: f64,
    /// Mean pattern tokens / mean control tokens − 1.
    pub relative_token_difference: f64,
    pub control_pass_rate: f64,
    pub pattern_pass_rate: f64,
    pub success_difference: f64,
}

impl Scenario {
    /// Refuses a scenario whose numbers describe no population.
    pub fn check(&self) -> Result<(), String> {
        let t = &self.tokens;
        let s = &self.success;
        let bad = |what: &str| Err(format!("scenario {}: {what}", self.name));
        if !(t.control > 0.0 && t.control.is_finite()) {
            return bad("tokens.control must be a positive number");
        }
        if [t.task_spread, t.effect_spread, t.session_noise, s.effect_spread].iter().any(|x| !(x.is_finite() && *x >= 0.0)) {
            return bad("spreads and noise must be finite and ≥ 0");
        }
        if !(t.effect > -1.0 && t.effect.is_finite()) {
            return bad("tokens.effect must be above −1 (a relative change)");
        }
        if !(0.0..1.0).contains(&s.broken_share) {
            return bad("success.broken_share must lie in [0, 1)");
        }
        if !(-1.0..=1.0).contains(&s.effect) {
            return bad("success.effect must lie in [−1, 1]");
        }
        if s.difficulty.is_empty() || s.difficulty.iter().any(|d| !(d.share > 0.0 && (0.0..=1.0).contains(&d.pass))) {
            return bad("success.difficulty needs at least one { share > 0, pass in [0, 1] }");
        }
        let total: f64 = s.difficulty.iter().map(|d| d.share).sum();
        if (total - 1.0).abs() > 1e-9 {
            return bad(&format!("success.difficulty's shares sum to {total}, not 1"));
        }
        Ok(())
    }

    /// The population's true values, exact for tokens (the draws are lognormal with known
    /// means) and to 1e-9 for pass rates (the clipped normal shift integrated on a fine grid).
    pub fn truth(&self) -> Truth {
        let t = &self.tokens;
        let task_mean = t.control * (t.task_spread * t.task_spread / 2.0).exp() * (t.session_noise * t.session_noise / 2.0).exp();
        let s = &self.success;
        let control: f64 = s.difficulty.iter().map(|d| d.share * d.pass).sum();
        let pattern: f64 = (1.0 - s.broken_share) * s.difficulty.iter().map(|d| d.share * clipped_mean(d.pass + s.effect, s.effect_spread)).sum::<f64>();
        Truth {
            token_difference: task_mean * t.effect,
            relative_token_difference: t.effect,
            control_pass_rate: control,
            pattern_pass_rate: pattern,
            success_difference: pattern - control,
        }
    }

    /// The same population with another planted token effect.
    pub fn with_token_effect(&self, effect: f64) -> Self {
        let mut s = self.clone();
        s.tokens.effect = effect;
        s
    }

    /// Draws `n` tasks.
    pub fn draw_tasks(&self, rng: &mut Rng, n: usize) -> Vec<Task> {
        (0..n)
            .map(|_| {
                let t = &self.tokens;
                let size = t.control * (t.task_spread * rng.normal()).exp();
                let ratio = (1.0 + t.effect) * (t.effect_spread * rng.normal() - t.effect_spread * t.effect_spread / 2.0).exp();
                let control_pass = self.pass_of(rng.uniform());
                let shifted = (control_pass + self.success.effect + self.success.effect_spread * rng.normal()).clamp(0.0, 1.0);
                let pattern_pass = if rng.uniform() < self.success.broken_share { 0.0 } else { shifted };
                Task { size, ratio, control_pass, pattern_pass }
            })
            .collect()
    }

    fn pass_of(&self, mut u: f64) -> f64 {
        for d in &self.success.difficulty {
            if u < d.share {
                return d.pass;
            }
            u -= d.share;
        }
        self.success.difficulty.last().map_or(0.0, |d| d.pass)
    }

    /// One experiment over `tasks` with `k` pairs each: the records a run would have written
    /// (valid sessions, every usage field present), rotated arm order as a run does.
    pub fn sessions(&self, rng: &mut Rng, tasks: &[Task], k: u32) -> Experiment {
        let mut sessions = Vec::with_capacity(tasks.len() * k as usize * 2);
        for (i, task) in tasks.iter().enumerate() {
            let name = format!("t{i:03}");
            for rep in 1..=k {
                for (role, mean, pass) in [(Role::Pattern, task.size * task.ratio, task.pattern_pass), (Role::Control, task.size, task.control_pass)] {
                    let tokens = (mean * (self.tokens.session_noise * rng.normal()).exp()).round().max(1.0) as u64;
                    let verdict = if rng.uniform() < pass { V::Passed } else { V::Failed };
                    let record = session(&self.name, role, &name, rep, tokens, verdict);
                    let path = PathBuf::from(format!("sim__{}/{name}__rep{rep}.json", record.server));
                    sessions.push(Loaded { path, record });
                }
            }
        }
        Experiment { dir: PathBuf::from(format!("calibrate/{}", self.name)), manifest: None, sessions, superseded: vec![], ignored: vec![], missing: vec![] }
    }
}

/// One simulated pair of a sequential experiment: task `task` drawn, its `rep`-th draw.
#[derive(Debug, Clone, Copy)]
pub struct SimPair {
    pub task: usize,
    pub rep: u32,
    pub pattern_passed: bool,
    pub control_passed: bool,
    pub pattern_input: u64,
    pub control_input: u64,
}

impl SimPair {
    /// The pair as a sequence reads it.
    pub fn observation(&self) -> crate::sequential::PairObs {
        crate::sequential::PairObs {
            pattern_passed: self.pattern_passed,
            control_passed: self.control_passed,
            pattern_input: Some(self.pattern_input),
            control_input: Some(self.control_input),
        }
    }
}

impl Scenario {
    /// `n` pairs drawn one at a time, each task uniformly with replacement from `tasks`: the
    /// design of `--until-decided`.
    pub fn drawn_pairs(&self, rng: &mut Rng, tasks: &[Task], n: usize) -> Vec<SimPair> {
        let mut reps = vec![0u32; tasks.len()];
        (0..n)
            .map(|_| {
                let i = ((rng.uniform() * tasks.len() as f64) as usize).min(tasks.len() - 1);
                reps[i] += 1;
                let t = &tasks[i];
                let tokens = |mean: f64, rng: &mut Rng| (mean * (self.tokens.session_noise * rng.normal()).exp()).round().max(1.0) as u64;
                let pattern_input = tokens(t.size * t.ratio, rng);
                let control_input = tokens(t.size, rng);
                let pattern_passed = rng.uniform() < t.pattern_pass;
                let control_passed = rng.uniform() < t.control_pass;
                SimPair { task: i, rep: reps[i], pattern_passed, control_passed, pattern_input, control_input }
            })
            .collect()
    }

    /// The records a run would have written for `pairs`, for the report's fixed-design analysis.
    pub fn records_of(&self, pairs: &[SimPair]) -> Experiment {
        let mut sessions = Vec::with_capacity(2 * pairs.len());
        for p in pairs {
            let name = format!("t{:03}", p.task);
            for (role, tokens, passed) in [(Role::Pattern, p.pattern_input, p.pattern_passed), (Role::Control, p.control_input, p.control_passed)] {
                let record = session(&self.name, role, &name, p.rep, tokens, if passed { V::Passed } else { V::Failed });
                let path = PathBuf::from(format!("sim__{}/{name}__rep{}.json", record.server, p.rep));
                sessions.push(Loaded { path, record });
            }
        }
        Experiment { dir: PathBuf::from(format!("calibrate/{}", self.name)), manifest: None, sessions, superseded: vec![], ignored: vec![], missing: vec![] }
    }
}

/// One task's draws.
#[derive(Debug, Clone, Copy)]
pub struct Task {
    /// Its control sessions' mean input tokens (before session noise).
    pub size: f64,
    /// The pattern's tokens / the control's, for this task.
    pub ratio: f64,
    pub control_pass: f64,
    pub pattern_pass: f64,
}

/// E[clamp(m + s·Z, 0, 1)] for a standard normal Z.
fn clipped_mean(m: f64, s: f64) -> f64 {
    if s == 0.0 {
        return m.clamp(0.0, 1.0);
    }
    // Simpson's rule over ±10 SD (the tails beyond hold less than 1e-22).
    let n = 20_000;
    let h = 20.0 / n as f64;
    let f = |z: f64| (m + s * z).clamp(0.0, 1.0) * (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let mut sum = f(-10.0) + f(10.0);
    for i in 1..n {
        sum += f(-10.0 + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    sum * h / 3.0
}

/// The simulation's random numbers: SplitMix64, so a seed gives the same study on any machine.
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(SplitMix64::new(seed))
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// A valid session record with what the analysis reads: its verdict, turns and token usage.
fn session(scenario: &str, role: Role, task: &str, rep: u32, input_tokens: u64, verdict: V) -> SessionRecord {
    let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
    SessionRecord {
        schema_version: 1,
        experiment: format!("calibrate-{scenario}"),
        module: "sim".into(),
        server: format!("sim_{}", role.as_str()),
        role,
        task: task.into(),
        task_sha256: String::new(),
        split: Default::default(),
        rep,
        draw: None,
        arm_position: if rep % 2 == 1 { 1 } else { 2 },
        model: ModelSpec { id: "sim".into(), provider: records::Provider::OpenAiCompatible, ..ModelSpec::oracle() },
        auth: None,
        manifest_sha256: String::new(),
        system_prompt_sha256: None,
        git_commit: None,
        git_dirty: None,
        world_seed: 1,
        world_scale: 1,
        transport: None,
        fingerprint: None,
        fingerprint_sha256: None,
        attempt: None,
        started_at: at,
        ended_at: at,
        turn_cap: 20,
        turn_cap_hit: false,
        context_exceeded: false,
        tool_call_as_text: false,
        unparseable_output: false,
        turns: 3,
        turn_records: vec![],
        totals: Totals {
            input_tokens: Some(input_tokens),
            cached_input_tokens: Some(0),
            uncached_input_tokens: None,
            output_tokens: Some(50),
            reasoning_tokens: None,
        },
        provider_retries: None,
        failed_turn: None,
        tool_calls: vec![],
        offered: Offered::default(),
        final_answer: None,
        verifier: Some(VerifierOutcome {
            verdict,
            reasons: vec![],
            elapsed_ms: 0.0,
            checks: vec![],
            grounding: None,
            class: None,
            changed_tables: None,
            world_diff_sha256: None,
            graded: None,
            collateral: None,
        }),
        validity: Validity::Valid,
        oracle: None,
        cost_usd: None,
        harness: HarnessTimings::default(),
        server_info: None,
        external_arm: None,
        retrieval: None,
        conversation: None,
        superseded: None,
        earlier_grades: Vec::new(),
        attack: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        super::super::committed_scenarios().into_iter().find(|s| s.name == "medium").expect("the committed medium scenario")
    }

    #[test]
    fn the_truth_is_what_a_huge_sample_of_the_population_shows() {
        let mut s = scenario();
        s.success.effect_spread = 0.2;
        let truth = s.truth();
        let mut rng = Rng::new(7);
        let tasks = s.draw_tasks(&mut rng, 400_000);
        let n = tasks.len() as f64;
        let noise = (s.tokens.session_noise.powi(2) / 2.0).exp();
        let control: f64 = tasks.iter().map(|t| t.size * noise).sum::<f64>() / n;
        let pattern: f64 = tasks.iter().map(|t| t.size * t.ratio * noise).sum::<f64>() / n;
        assert!(((pattern - control) - truth.token_difference).abs() < 0.02 * truth.token_difference.abs(), "{} vs {truth:?}", pattern - control);
        assert!((pattern / control - 1.0 - truth.relative_token_difference).abs() < 0.01);
        let pass: f64 = tasks.iter().map(|t| t.pattern_pass).sum::<f64>() / n;
        assert!((pass - truth.pattern_pass_rate).abs() < 0.003, "{pass} vs {}", truth.pattern_pass_rate);
        let control_pass: f64 = tasks.iter().map(|t| t.control_pass).sum::<f64>() / n;
        assert!((control_pass - truth.control_pass_rate).abs() < 0.003);
    }

    #[test]
    fn a_scenario_that_describes_no_population_is_refused() {
        let mut s = scenario();
        s.success.difficulty[0].share = 0.9;
        assert!(s.check().unwrap_err().contains("sum to"), "{:?}", s.check());
        let mut s = scenario();
        s.tokens.effect = -1.5;
        assert!(s.check().is_err());
    }

    #[test]
    fn an_experiment_is_k_pairs_per_task_in_both_arms() {
        let s = scenario();
        let mut rng = Rng::new(1);
        let tasks = s.draw_tasks(&mut rng, 5);
        let e = s.sessions(&mut rng, &tasks, 3);
        assert_eq!(e.sessions.len(), 5 * 3 * 2);
        assert!(e.sessions.iter().all(|l| l.record.totals.input_tokens.is_some_and(|t| t >= 1)));
    }
}
