//! The simulated agent (`--models sim:PROFILE`): a stand-in for a model that drives the real arms
//! through the real session — real MCP calls, resets, verifiers and records — from each task's
//! oracle plan, with seeded, per-arm slips declared in a profile. It exists to check the
//! instrument against a planted truth: what the profile makes each session do is drawn before
//! the session and written in its transcript, so a verdict can be compared with what the agent
//! really did. Its usage is synthetic (estimated from the real bytes of the session, as the
//! oracle's floor is) and marked so: the provider is `simulated`, and reports never read its
//! numbers as evidence about a pattern.
//!
//! Every draw comes from the run's seed and the session's place — (task, arm, rep) — so a
//! session replays exactly, and [`decide`] gives the same plan without running anything.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::record::{SessionOutcome, TurnRecord, Usage};
use records::Role;
use records::rng::SplitMix64;

pub const PROVIDER: &str = "simulated";

/// How the simulated usage is computed (in every session's transcript).
pub const USAGE_METHOD: &str = "synthetic: one call per turn, then the profile's extra turns, then an answer turn; each turn's input is \
system prompt + task text + definitions + every earlier call's arguments and result, bytes / 4; a call turn's output is its arguments, \
bytes / 4 + 8; the answer turn's output is the answer, bytes / 4 + 1";

/// What the simulated agent does, per arm (a TOML file; committed ones in the tasks folder's
/// `sim/`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub description: String,
    /// The seed of every draw when the run pins none (`--seed`).
    pub seed: u64,
    /// SD, on the logit scale, of a task's difficulty: one draw per task, shared by both arms and
    /// every rep, so tasks differ and sessions of one task correlate.
    #[serde(default)]
    pub task_difficulty_sd: f64,
    /// SD, on the logit scale, of the arm × task interaction: how much one arm's chance on a
    /// task departs from the other's beyond the arms' own rates.
    #[serde(default)]
    pub interaction_sd: f64,
    pub control: Arm,
    pub pattern: Arm,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arm {
    /// The probability of completing the plan on a task of median difficulty, in [0, 1].
    pub complete: f64,
    /// When it does not complete, how it fails: relative weights of the slips (at least one
    /// above zero when `complete` is below 1).
    #[serde(default)]
    pub slips: Slips,
    /// The mean number (Poisson) of extra turns without a call before the answer: a model that
    /// dithers resends its whole context each time.
    #[serde(default)]
    pub extra_turns: f64,
    /// The mean number (Poisson) of reading calls made twice: a model that checks again. Each
    /// repeat calls again, right after it, one of the plan's steps that only read (a resource,
    /// or a tool whose name says it lists, gets, searches, finds, describes or reads); a plan
    /// with no such step repeats nothing.
    #[serde(default)]
    pub repeated_calls: f64,
    /// The mean number (Poisson) of sentences added to the answer that say nothing about the
    /// task: a wordier model.
    #[serde(default)]
    pub answer_sentences: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slips {
    /// On a task that asks for a change, leaves out the plan's last step that saves nothing (the
    /// write, in the plans here) and claims success; on a question, answers wrongly instead.
    #[serde(default)]
    pub skip_step: f64,
    /// Makes only the first half of the plan's calls and says it could not finish.
    #[serde(default)]
    pub stop_early: f64,
    /// Makes every call and gives a confident answer with its figures changed.
    #[serde(default)]
    pub wrong_answer: f64,
    /// On a task that asks for a change, makes every call but gives the write a wrong id (the
    /// next number), goes on whatever the write returned and claims success; on a question, or
    /// where no write takes an id, answers wrongly instead.
    #[serde(default)]
    pub wrong_id: f64,
    /// Makes no call and claims the task done ("Done: the task is complete."). It does not use
    /// the plan's answer, which would be an oracle that skipped its reads, not an agent that did
    /// nothing.
    #[serde(default)]
    pub no_work: f64,
    /// Makes no call and answers nothing.
    #[serde(default)]
    pub empty_answer: f64,
    /// A vandal: calls every function the arm offers that may write, every parameter filled, on
    /// the first id the task text shows (else 1), and, through any tool, the plan's own writes on
    /// the next id. On a task that asks for a change it does nothing else and claims the task
    /// done; on a question it also makes the plan's calls and gives its answer, so a question
    /// whose verifier misses a changed world passes it.
    #[serde(default)]
    pub vandal: f64,
    /// The vandal's writes and nothing else, on every task: no read, no plan step, and "Done" as
    /// its answer, question or change. The trivial agent that writes: it may pass no task.
    #[serde(default)]
    pub vandal_only: f64,
}

/// What a session was planned to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Planned {
    Complete,
    SkipStep,
    StopEarly,
    WrongAnswer,
    WrongId,
    NoWork,
    EmptyAnswer,
    Vandal,
    VandalOnly,
}

impl Planned {
    /// Whether the planted truth is that the session did the task.
    pub fn did_the_task(self) -> bool {
        self == Self::Complete
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::SkipStep => "skip_step",
            Self::StopEarly => "stop_early",
            Self::WrongAnswer => "wrong_answer",
            Self::WrongId => "wrong_id",
            Self::NoWork => "no_work",
            Self::EmptyAnswer => "empty_answer",
            Self::Vandal => "vandal",
            Self::VandalOnly => "vandal_only",
        }
    }
}

/// One session's draws.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub planned: Planned,
    /// The session's probability of completing (its arm's rate, moved by the task's draws).
    pub p_complete: f64,
    pub extra_turns: u32,
    /// Reading calls to make twice (fewer are made when the plan has no step that only reads).
    pub repeated_calls: u32,
    /// Sentences added to the answer.
    pub answer_sentences: u32,
}

impl Profile {
    /// Reads and checks a profile; the error names the field and the fix.
    pub fn parse(text: &str) -> Result<Self, String> {
        let p: Self = toml::from_str(text).map_err(|e| e.to_string())?;
        p.check()?;
        Ok(p)
    }

    fn check(&self) -> Result<(), String> {
        for (name, x) in [("task_difficulty_sd", self.task_difficulty_sd), ("interaction_sd", self.interaction_sd)] {
            if !(x.is_finite() && x >= 0.0) {
                return Err(format!("{name} must be a finite number ≥ 0, not {x}"));
            }
        }
        for (role, arm) in [("control", &self.control), ("pattern", &self.pattern)] {
            if !(0.0..=1.0).contains(&arm.complete) {
                return Err(format!("{role}.complete must lie in [0, 1], not {}", arm.complete));
            }
            let s = &arm.slips;
            let weights = [s.skip_step, s.stop_early, s.wrong_answer, s.no_work, s.empty_answer, s.wrong_id, s.vandal, s.vandal_only];
            if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) {
                return Err(format!("{role}.slips: every weight must be a finite number ≥ 0"));
            }
            if arm.complete < 1.0 && weights.iter().sum::<f64>() <= 0.0 {
                return Err(format!("{role}.complete is below 1, so {role}.slips must give at least one slip a weight above 0"));
            }
            for (name, mean) in [("extra_turns", arm.extra_turns), ("repeated_calls", arm.repeated_calls), ("answer_sentences", arm.answer_sentences)] {
                if !(mean.is_finite() && (0.0..=50.0).contains(&mean)) {
                    return Err(format!("{role}.{name} must lie in [0, 50], not {mean}"));
                }
            }
        }
        Ok(())
    }

    fn arm(&self, role: Role) -> &Arm {
        match role {
            Role::Pattern => &self.pattern,
            Role::Control => &self.control,
        }
    }
}

/// What the session of `task` in the `role` arm, repetition `rep`, does under `profile` and
/// `seed`: the same answer every time, without running anything.
pub fn decide(profile: &Profile, seed: u64, task: &str, role: Role, rep: u32) -> Decision {
    let arm = profile.arm(role);
    let difficulty = profile.task_difficulty_sd * SplitMix64::labelled(seed, &["task", task]).normal();
    let interaction = profile.interaction_sd * SplitMix64::labelled(seed, &["interaction", task, role.as_str()]).normal();
    let p_complete = match arm.complete {
        c if c >= 1.0 => 1.0,
        c if c <= 0.0 => 0.0,
        c => 1.0 / (1.0 + (-((c / (1.0 - c)).ln() - difficulty + interaction)).exp()),
    };
    let mut rng = SplitMix64::labelled(seed, &["session", task, role.as_str(), &rep.to_string()]);
    let planned = if rng.uniform() < p_complete {
        Planned::Complete
    } else {
        let s = &arm.slips;
        let weights = [
            (Planned::SkipStep, s.skip_step),
            (Planned::StopEarly, s.stop_early),
            (Planned::WrongAnswer, s.wrong_answer),
            (Planned::NoWork, s.no_work),
            (Planned::EmptyAnswer, s.empty_answer),
            // Last, so that a profile without it draws what it drew before it existed.
            (Planned::WrongId, s.wrong_id),
            (Planned::Vandal, s.vandal),
            (Planned::VandalOnly, s.vandal_only),
        ];
        let mut u = rng.uniform() * weights.iter().map(|(_, w)| w).sum::<f64>();
        let mut chosen = Planned::StopEarly;
        for (slip, w) in weights {
            if w > 0.0 {
                chosen = slip;
                if u < w {
                    break;
                }
                u -= w;
            }
        }
        chosen
    };
    let extra_turns = rng.poisson(arm.extra_turns);
    let repeated_calls = rng.poisson(arm.repeated_calls);
    let answer_sentences = rng.poisson(arm.answer_sentences);
    Decision { planned, p_complete, extra_turns, repeated_calls, answer_sentences }
}

/// The plan the session follows under `planned`, and what it does: a skip on a question (no
/// change asked for: `asks_for_change` false) answers wrongly instead, and a skip with no step it
/// can leave out (every step saves a value) stops early. The transcript says what was done.
fn planned_plan(plan: &tasks::OraclePlan, planned: Planned, asks_for_change: bool) -> (tasks::OraclePlan, Planned) {
    let mut p = plan.clone();
    match planned {
        Planned::Complete | Planned::WrongAnswer => (p, planned),
        Planned::SkipStep | Planned::WrongId if !asks_for_change => (p, Planned::WrongAnswer),
        Planned::WrongId => match p.steps.iter().rposition(|s| s.save.is_empty() && !s.expect_error && s.id_argument().is_some()) {
            Some(i) => {
                p.steps[i].wrong_id = p.steps[i].id_argument().map(str::to_owned);
                (p, Planned::WrongId)
            }
            None => (p, Planned::WrongAnswer),
        },
        Planned::SkipStep => match p.steps.iter().rposition(|s| s.save.is_empty() && !s.expect_error) {
            Some(i) => {
                p.steps.remove(i);
                (p, Planned::SkipStep)
            }
            None => planned_plan(plan, Planned::StopEarly, asks_for_change),
        },
        Planned::StopEarly => {
            p.steps.truncate(p.steps.len() / 2);
            p.answer = "I could not complete this task: I stopped before finishing it.".into();
            (p, Planned::StopEarly)
        }
        Planned::NoWork => {
            p.steps.clear();
            p.answer = "Done: the task is complete.".into();
            (p, Planned::NoWork)
        }
        Planned::EmptyAnswer => {
            p.steps.clear();
            p.answer = String::new();
            (p, Planned::EmptyAnswer)
        }
        // The writes come when the arm's functions are known ([`vandal_steps`]).
        Planned::Vandal if asks_for_change => {
            p.steps.clear();
            p.answer = "Done: the task is complete.".into();
            (p, Planned::Vandal)
        }
        Planned::Vandal => (p, Planned::Vandal),
        Planned::VandalOnly => {
            p.steps.clear();
            p.answer = "Done: the task is complete.".into();
            (p, Planned::VandalOnly)
        }
    }
}

/// The vandal's writes, after whatever else it follows of `plan`: every function of
/// `definitions` whose name has a writing word, called on the first id the task text shows and on
/// id 1 (each id-named parameter gets it), once with every parameter filled ([`filled`]), once
/// with only the required ones, and once more for each optional parameter with it alone beside
/// them — so that one value the server refuses does not keep the others from landing; then each
/// of the plan's own writes that names its target by id and uses no value saved from an earlier
/// result, on the next id. Each may fail: a refused write is a write the vandal could not reach.
pub fn vandal_steps(plan: &tasks::OraclePlan, definitions: &[serde_json::Value], task_text: &str) -> Vec<tasks::oracle::Step> {
    let mut ids = vec![first_number(task_text).unwrap_or(1), 1];
    ids.dedup();
    let mut steps: Vec<tasks::oracle::Step> = Vec::new();
    for d in definitions {
        let f = &d["function"];
        let Some(name) = f["name"].as_str() else { continue };
        let probe = tasks::oracle::Step { tool: Some(name.to_owned()), ..Default::default() };
        if !probe.may_write() {
            continue;
        }
        let required: Vec<&str> = f["parameters"]["required"].as_array().map(|r| r.iter().filter_map(|v| v.as_str()).collect()).unwrap_or_default();
        for &id in &ids {
            let all = filled(&f["parameters"], id);
            let base: serde_json::Map<_, _> = all.iter().filter(|(k, _)| required.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
            let mut variants = vec![all.clone(), base.clone()];
            for (k, v) in all.iter().filter(|(k, _)| !required.contains(&k.as_str())) {
                let mut one = base.clone();
                one.insert(k.clone(), v.clone());
                variants.push(one);
            }
            for v in variants {
                let args = toml::Table::try_from(serde_json::Value::Object(v)).unwrap_or_default();
                let step = tasks::oracle::Step { args: Some(args), any_result: true, ..probe.clone() };
                if !steps.contains(&step) {
                    steps.push(step);
                }
            }
        }
    }
    for s in &plan.steps {
        let uses_saved = s.args.as_ref().is_some_and(|a| !tasks::oracle::placeholders(&a.to_string()).is_empty());
        if s.may_write() && !s.expect_error && !uses_saved && s.id_argument().is_some() {
            steps.push(tasks::oracle::Step { save: Default::default(), wrong_id: s.id_argument().map(str::to_owned), any_result: true, ..s.clone() });
        }
    }
    steps
}

/// The first whole number in `text` (digits not part of a word).
fn first_number(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) {
            let end = (i..bytes.len()).find(|&j| !bytes[j].is_ascii_digit()).unwrap_or(bytes.len());
            if end == bytes.len() || !bytes[end].is_ascii_alphabetic() {
                return text[i..end].parse().ok();
            }
            i = end;
        } else {
            i += 1;
        }
    }
    None
}

/// Arguments for a function with JSON schema `parameters`, every property filled: a number or
/// an id-named string gets `id`, an enumeration its last value, another string a word no row
/// holds, a flag `true`, a list or an object an empty one. A property whose type cannot be read
/// is left out.
fn filled(parameters: &serde_json::Value, id: i64) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::Value;
    let resolve = |v: &Value| match v["$ref"].as_str().and_then(|r| r.rsplit('/').next()) {
        Some(name) => [&parameters["$defs"][name], &parameters["definitions"][name]].into_iter().find(|d| d.is_object()).cloned().unwrap_or(Value::Null),
        None => v.clone(),
    };
    let mut out = serde_json::Map::new();
    let Some(props) = parameters["properties"].as_object() else { return out };
    for (name, prop) in props {
        let mut p = resolve(prop);
        for key in ["anyOf", "oneOf"] {
            if let Some(first) = p[key].as_array().and_then(|vs| vs.iter().map(&resolve).find(|v| v["type"] != "null")) {
                p = first;
            }
        }
        let ty = match &p["type"] {
            Value::String(t) => Some(t.as_str()),
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
            _ => None,
        };
        let is_id = name == "id" || name.ends_with("_id");
        let value = if let Some(last) = p["enum"].as_array().and_then(|e| e.last()) {
            last.clone()
        } else {
            match ty {
                Some("integer" | "number") => Value::from(id),
                Some("string") if is_id => Value::from(id.to_string()),
                Some("string") => Value::from("vandalised"),
                Some("boolean") => Value::from(true),
                Some("array") => Value::Array(vec![]),
                Some("object") => Value::Object(Default::default()),
                _ => continue,
            }
        };
        out.insert(name.clone(), value);
    }
    out
}

/// `plan` with `n` of its reading steps made twice, each right after itself, chosen by `rng`;
/// and how many were repeated (none when no step only reads).
fn with_repeats(plan: tasks::OraclePlan, n: u32, rng: &mut SplitMix64) -> (tasks::OraclePlan, u32) {
    let reads: Vec<usize> = plan.steps.iter().enumerate().filter(|(_, s)| s.is_read() && s.wrong_id.is_none()).map(|(i, _)| i).collect();
    if reads.is_empty() || n == 0 {
        return (plan, 0);
    }
    let mut times = vec![0u32; plan.steps.len()];
    for _ in 0..n {
        let pick = ((rng.uniform() * reads.len() as f64) as usize).min(reads.len() - 1);
        times[reads[pick]] += 1;
    }
    let mut steps = Vec::with_capacity(plan.steps.len() + n as usize);
    for (step, again) in plan.steps.into_iter().zip(times) {
        // The repeat saves nothing: the values are the ones the first call saved.
        let repeat = tasks::oracle::Step { save: Default::default(), ..step.clone() };
        steps.push(step);
        steps.extend(std::iter::repeat_n(repeat, again as usize));
    }
    (tasks::OraclePlan { steps, ..plan }, n)
}

/// Sentences a wordier answer adds: they say nothing about the task, its state or the agent's
/// confidence.
const PADDING: [&str; 3] = ["I used the tools this server offers.", "The details above come from what the tools returned.", "I hope this helps."];

/// `answer` with `n` sentences added (none to an empty answer).
fn padded(answer: &str, n: u32) -> String {
    if answer.is_empty() || n == 0 {
        return answer.to_owned();
    }
    let extra: Vec<&str> = (0..n as usize).map(|i| PADDING[i % PADDING.len()]).collect();
    format!("{answer} {}", extra.join(" "))
}

/// A confident answer with every figure in it changed; one without figures is replaced by a
/// confident claim that nothing needed doing.
pub fn wrong_answer(answer: &str) -> String {
    if !answer.chars().any(|c| c.is_ascii_digit()) {
        return "Done: nothing needed to change, everything was already as the task asks.".into();
    }
    let mut out = String::with_capacity(answer.len());
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        if !digits.is_empty() {
            // Seven more, as text: a different figure of about the same look.
            let changed = digits.parse::<u128>().map_or_else(|_| format!("{digits}7"), |n| (n + 7).to_string());
            out.push_str(&changed);
            digits.clear();
        }
    };
    for c in answer.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

/// Where a session sits: its task and the arm's plan for it, its arm and repetition.
pub struct Place<'a> {
    pub task: &'a tasks::Task,
    pub plan: &'a tasks::OraclePlan,
    pub role: Role,
    pub rep: u32,
}

/// Whether `task` asks for a change to the world: its verifier checks the state with SQL (a
/// question's checks only that tables are unchanged, and its answer).
pub fn asks_for_change(task: &tasks::Task) -> bool {
    !task.verifier.sql.is_empty()
}

/// What a session did, beyond its draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    /// The slip as it applies to this task and plan.
    pub slip: Planned,
    /// Reading calls made twice.
    pub repeated_calls: u32,
}

/// What the session at `place` does under `profile` and `seed`, without running it: the draw,
/// and what it does with this task and plan.
pub fn planned(profile: &Profile, seed: u64, place: &Place<'_>) -> (Decision, Done) {
    let (d, _, done) = plan_at(profile, seed, place);
    (d, done)
}

/// The draw, the plan followed and what was done: what [`planned`] reports and [`run`] runs.
fn plan_at(profile: &Profile, seed: u64, place: &Place<'_>) -> (Decision, tasks::OraclePlan, Done) {
    let d = decide(profile, seed, &place.task.id, place.role, place.rep);
    let (followed, slip) = planned_plan(place.plan, d.planned, asks_for_change(place.task));
    let mut rng = SplitMix64::labelled(seed, &["repeat", &place.task.id, place.role.as_str(), &place.rep.to_string()]);
    let (mut followed, repeated_calls) = with_repeats(followed, d.repeated_calls, &mut rng);
    followed.answer = padded(&followed.answer, d.answer_sentences);
    (d, followed, Done { slip, repeated_calls })
}

/// Runs the session at `place` as `profile` plans it.
pub async fn run(
    conn: impl Into<crate::mcp::Reach>,
    distractors: &servers::distractors::Distractors,
    place: &Place<'_>,
    profile: &Profile,
    seed: u64,
) -> SessionOutcome {
    let task_text = &place.task.text;
    let (decision, mut followed, done) = plan_at(profile, seed, place);
    let mut conversation = crate::oracle::Conversation::open(conn, false).await.beside(distractors);
    // The vandal writes through the arm: its own tools, never a distractor's.
    let vandal =
        if matches!(done.slip, Planned::Vandal | Planned::VandalOnly) { vandal_steps(place.plan, conversation.own_definitions(), task_text) } else { vec![] };
    followed.steps.extend(vandal.iter().cloned());
    let mut outcome = conversation.task(task_text, &followed).await;
    conversation.close().await;
    outcome.provider = PROVIDER.into();
    outcome.oracle = None;
    if !outcome.validity.is_valid() {
        return outcome;
    }
    if done.slip == Planned::WrongAnswer {
        outcome.final_answer = outcome.final_answer.as_deref().map(wrong_answer);
    }
    let answer = outcome.final_answer.clone().unwrap_or_default();
    let fixed = crate::session::SYSTEM_PROMPT.len() + task_text.len() + outcome.offered.definitions_bytes;
    outcome.turns =
        synthetic_turns(fixed, &outcome.tool_calls.iter().map(|c| (c.args_bytes, c.result_bytes)).collect::<Vec<_>>(), decision.extra_turns, answer.len());
    for (i, call) in outcome.tool_calls.iter_mut().enumerate() {
        call.turn = i as u32 + 1;
    }
    // What was planted, before the answer: the truth a verdict is checked against.
    let planted = json!({
        "event": "simulated",
        "planned": decision.planned.as_str(),
        "done": done.slip.as_str(),
        "did_the_task": done.slip.did_the_task(),
        "p_complete": decision.p_complete,
        "extra_turns": decision.extra_turns,
        "repeated_calls": done.repeated_calls,
        "answer_sentences": decision.answer_sentences,
        "vandal_writes": vandal.len(),
        "vandal_writes_refused": outcome.tool_calls.iter().rev().take(vandal.len()).filter(|c| c.is_error).count(),
        "seed": seed,
        "usage": USAGE_METHOD,
    });
    let at = outcome.transcript.len().saturating_sub(1);
    outcome.transcript.insert(at, planted);
    if let Some(last) = outcome.transcript.last_mut() {
        last["text"] = json!(answer);
    }
    outcome
}

/// The turns of a session that makes `calls` (arguments and result bytes) one per turn, then
/// `extra` turns without a call, then answers with `answer_bytes`.
fn synthetic_turns(fixed_bytes: usize, calls: &[(usize, usize)], extra: u32, answer_bytes: usize) -> Vec<TurnRecord> {
    let mut turns = Vec::new();
    let mut history = 0usize;
    let mut turn = |history: usize, output: usize, tool_calls: u32, finish: &str| {
        let input = ((fixed_bytes + history) / 4) as u64;
        turns.push(TurnRecord {
            index: turns.len() as u32 + 1,
            usage: Usage {
                prompt_tokens: Some(input),
                completion_tokens: Some(output as u64),
                cached_prompt_tokens: Some(0),
                reasoning_tokens: None,
                total_tokens: Some(input + output as u64),
            },
            retries: 0,
            latency_ms: 0.0,
            at_ms: None,
            finish_reason: Some(finish.into()),
            tool_calls,
            extras: Default::default(),
        });
    };
    for (args, result) in calls {
        turn(history, args / 4 + 8, 1, "tool_calls");
        history += args + result;
    }
    for _ in 0..extra {
        turn(history, 8, 0, "stop");
    }
    turn(history, answer_bytes / 4 + 1, 0, "stop");
    turns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(text: &str) -> Profile {
        Profile::parse(text).unwrap()
    }

    const HALF: &str = r#"
        description = "half"
        seed = 1
        task_difficulty_sd = 1.0
        [control]
        complete = 0.5
        slips = { stop_early = 1.0 }
        [pattern]
        complete = 0.5
        slips = { skip_step = 1.0, wrong_answer = 1.0 }
        extra_turns = 2.0
    "#;

    #[test]
    fn a_session_decides_the_same_every_time_and_tasks_differ() {
        let p = profile(HALF);
        let a = decide(&p, 9, "t1", Role::Pattern, 1);
        assert_eq!(a, decide(&p, 9, "t1", Role::Pattern, 1));
        // The task's difficulty is shared by both arms (equal base rates, no interaction).
        assert_eq!(a.p_complete, decide(&p, 9, "t1", Role::Control, 2).p_complete);
        let rates: Vec<f64> = (0..20).map(|i| decide(&p, 9, &format!("t{i}"), Role::Control, 1).p_complete).collect();
        assert!(rates.iter().any(|r| *r < 0.3) && rates.iter().any(|r| *r > 0.7), "{rates:?}");
    }

    #[test]
    fn rates_slips_and_extra_turns_follow_the_profile() {
        let p = Profile { task_difficulty_sd: 0.0, ..profile(HALF) };
        let n = 4_000;
        let draws: Vec<Decision> = (0..n).map(|i| decide(&p, 5, &format!("t{}", i % 40), Role::Pattern, i / 40)).collect();
        let complete = draws.iter().filter(|d| d.planned == Planned::Complete).count() as f64 / n as f64;
        assert!((complete - 0.5).abs() < 0.03, "{complete}");
        assert!(draws.iter().all(|d| matches!(d.planned, Planned::Complete | Planned::SkipStep | Planned::WrongAnswer)));
        let skips = draws.iter().filter(|d| d.planned == Planned::SkipStep).count() as f64 / n as f64;
        assert!((skips - 0.25).abs() < 0.03, "{skips}");
        let turns = draws.iter().map(|d| d.extra_turns as f64).sum::<f64>() / n as f64;
        assert!((turns - 2.0).abs() < 0.1, "{turns}");
        let control: Vec<Decision> = (0..400).map(|i| decide(&p, 5, "t", Role::Control, i)).collect();
        assert!(control.iter().all(|d| matches!(d.planned, Planned::Complete | Planned::StopEarly) && d.extra_turns == 0));
    }

    #[test]
    fn a_profile_that_describes_no_agent_is_refused_by_field() {
        let e = Profile::parse(&HALF.replace("complete = 0.5\n        slips = { stop_early = 1.0 }", "complete = 0.5")).unwrap_err();
        assert!(e.contains("control.complete is below 1, so control.slips"), "{e}");
        let e = Profile::parse(&HALF.replace("complete = 0.5\n        slips = { stop_early", "complete = 1.5\n        slips = { stop_early")).unwrap_err();
        assert!(e.contains("control.complete must lie in [0, 1]"), "{e}");
        let e = Profile::parse(&HALF.replace("seed = 1", "seed = 1\n        temperature = 0.2")).unwrap_err();
        assert!(e.contains("unknown field `temperature`"), "{e}");
    }

    #[test]
    fn the_trivial_slips_make_no_call() {
        let plan: tasks::OraclePlan = toml::from_str("answer = \"Closed ${id}\"\n[[steps]]\ntool = \"find\"\nsave = { id = \"/id\" }\n").unwrap();
        let (p, done) = planned_plan(&plan, Planned::NoWork, true);
        assert_eq!((p.steps.len(), p.answer.as_str(), done), (0, "Done: the task is complete.", Planned::NoWork));
        let (p, done) = planned_plan(&plan, Planned::EmptyAnswer, true);
        assert_eq!((p.steps.len(), p.answer.as_str(), done), (0, "", Planned::EmptyAnswer));
    }

    #[test]
    fn a_wrong_answer_changes_every_figure() {
        assert_eq!(wrong_answer("Ticket 12 has 3 comments."), "Ticket 19 has 10 comments.");
        assert!(wrong_answer("Closed it.").starts_with("Done: nothing needed to change"));
    }

    #[test]
    fn synthetic_turns_resend_the_context_and_count_extra_turns() {
        let turns = synthetic_turns(400, &[(10, 30), (20, 60)], 1, 40);
        let input: Vec<u64> = turns.iter().map(|t| t.usage.prompt_tokens.unwrap()).collect();
        assert_eq!(input, [100, 110, 130, 130]);
        assert_eq!(turns.iter().map(|t| t.tool_calls).collect::<Vec<_>>(), [1, 1, 0, 0]);
        // The input sums to the oracle's estimate plus the extra turn.
        assert_eq!(input.iter().sum::<u64>(), crate::oracle::estimated_input_tokens(400, &[(10, 30), (20, 60)]) + 130);
    }

    #[test]
    fn a_skip_leaves_out_the_last_step_that_saves_nothing_on_a_change_only() {
        let plan: tasks::OraclePlan = toml::from_str(
            r#"
            answer = "Done ${id}"
            [[steps]]
            tool = "find"
            save = { id = "/id" }
            [[steps]]
            tool = "close"
            args = { id = "${id}" }
            "#,
        )
        .unwrap();
        let (p, done) = planned_plan(&plan, Planned::SkipStep, true);
        assert_eq!((p.steps.len(), p.steps[0].tool.as_deref(), done), (1, Some("find"), Planned::SkipStep));
        // A question has nothing to skip that matters: the slip is a wrong answer.
        let (p, done) = planned_plan(&plan, Planned::SkipStep, false);
        assert_eq!((p, done), (plan.clone(), Planned::WrongAnswer));
        let only_saves: tasks::OraclePlan = toml::from_str("[[steps]]\ntool = \"find\"\nsave = { id = \"/id\" }\n").unwrap();
        let (p, done) = planned_plan(&only_saves, Planned::SkipStep, true);
        assert_eq!((p.steps.len(), done), (0, Planned::StopEarly));
    }

    #[test]
    fn a_wrong_id_changes_the_writes_id_on_a_change_only() {
        let plan: tasks::OraclePlan = toml::from_str(
            r#"
            answer = "Assigned ${t} to ${u}"
            [[steps]]
            tool = "users_list"
            save = { u = "/0/id" }
            [[steps]]
            tool = "tickets_update"
            args = { id = 77, assignee_id = "${u}", status = "open" }
            [[steps]]
            tool = "notifications_create"
            args = { body = "done" }
            "#,
        )
        .unwrap();
        let (p, done) = planned_plan(&plan, Planned::WrongId, true);
        assert_eq!(done, Planned::WrongId);
        // The last write that takes an id, and `id` before any `…_id`.
        assert_eq!(p.steps.iter().map(|s| s.wrong_id.as_deref()).collect::<Vec<_>>(), [None, Some("id"), None]);
        assert_eq!(planned_plan(&plan, Planned::WrongId, false).1, Planned::WrongAnswer);
        let no_id: tasks::OraclePlan = toml::from_str("[[steps]]\ntool = \"run_script\"\nargs = { script = \"x\" }\n").unwrap();
        assert_eq!(planned_plan(&no_id, Planned::WrongId, true).1, Planned::WrongAnswer);
        use serde_json::json;
        assert_eq!(tasks::oracle::wrong_id(&json!(77)), json!(78));
        assert_eq!(tasks::oracle::wrong_id(&json!("41")), json!("42"));
        assert_eq!(tasks::oracle::wrong_id(&json!("checkout")), json!("checkout2"));
    }

    #[test]
    fn repeats_call_reads_again_and_padding_adds_sentences() {
        let plan: tasks::OraclePlan = toml::from_str(
            r#"
            answer = "Done"
            [[steps]]
            tool = "customers_list"
            save = { c = "/0/id" }
            [[steps]]
            tool = "tickets_create"
            args = { customer_id = "${c}" }
            save = { t = "/id" }
            [[steps]]
            read = "runbooks://service/${c}"
            "#,
        )
        .unwrap();
        let mut rng = SplitMix64::new(3);
        let (p, n) = with_repeats(plan.clone(), 5, &mut rng);
        assert_eq!((n, p.steps.len()), (5, 8));
        // The write is never repeated; a repeat follows its own step and saves nothing.
        assert_eq!(p.steps.iter().filter(|s| s.tool.as_deref() == Some("tickets_create")).count(), 1);
        for w in p.steps.windows(2) {
            if w[0].tool == w[1].tool && w[0].read == w[1].read {
                assert!(w[1].save.is_empty());
            }
        }
        let writes_only: tasks::OraclePlan = toml::from_str("[[steps]]\ntool = \"tickets_create\"\n").unwrap();
        assert_eq!(with_repeats(writes_only, 3, &mut rng).1, 0);
        assert_eq!(padded("Ticket 4.", 2), "Ticket 4. I used the tools this server offers. The details above come from what the tools returned.");
        assert_eq!(padded("", 2), "");
    }
}
