//! What the workers of one run share: the plan, the providers, the stop signals (quota, halt,
//! interrupt), the circuit breaker, the progress counters, the verifier baselines and the trace
//! exporter. Below both the run loop ([`crate::run`]) and the session ([`crate::session`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use agent::{OpenAiCompatible, StopSignal};
use records::{InvalidReason, SessionRecord, Validity};

use crate::plan::RunPlan;

/// Why a run stopped before every planned session had run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Halt {
    /// `quota`, `circuit_breaker`, `infrastructure`, `interrupted` or `budget`.
    pub kind: &'static str,
    pub detail: String,
}

/// Shared by the workers of one run.
pub struct RunContext {
    pub plan: Arc<RunPlan>,
    pub providers: BTreeMap<String, Arc<OpenAiCompatible>>,
    pub serve_prefix: Vec<String>,
    /// Raised by a quota or session-limit answer (inside the agent).
    pub quota: StopSignal,
    halt: Mutex<Option<Halt>>,
    breaker: Mutex<Streak>,
    interrupt: tokio::sync::watch::Receiver<Option<&'static str>>,
    progress: Option<indicatif::ProgressBar>,
    total: usize,
    done: AtomicUsize,
    valid: AtomicUsize,
    passed: AtomicUsize,
    started: Instant,
    /// The verifier's baseline per task, read once (see [`RunContext::baseline_of`]).
    baselines: Mutex<std::collections::HashMap<String, tasks::verify::Baseline>>,
    /// Each task's expected footprint through each arm, found once (see [`RunContext::footprint`]).
    footprints: Mutex<std::collections::HashMap<String, Footprint>>,
    /// Sends each written record as a trace (`--otlp-endpoint`); taken at the run's end.
    otlp: Mutex<Option<crate::otlp::Exporter>>,
    /// The plan's budgets, with what has been spent against them.
    budgets: Vec<crate::budget::Budget>,
    /// A sequential run's looks (`--until-decided`); none for a fixed design.
    looks: Option<crate::sequential::Looks>,
}

/// A task's expected footprint through one arm: what its oracle plan changes there, and where
/// that was read (`records::Collateral::footprint`); or why it could not be.
#[derive(Debug, Clone)]
pub struct Footprint {
    pub source: &'static str,
    pub rows: Result<Arc<Vec<backend::world::RowChange>>, String>,
}

/// One footprint per task (its definition, world seed and scale) and arm.
pub(crate) fn footprint_key(task: &tasks::Task, arm: &str) -> String {
    format!("{}\u{0}{}\u{0}{}\u{0}{}\u{0}{arm}", task.key(), task.sha256, task.meta.seed, task.meta.scale)
}

impl RunContext {
    pub fn new(
        plan: Arc<RunPlan>,
        providers: BTreeMap<String, Arc<OpenAiCompatible>>,
        serve_prefix: Vec<String>,
        interrupt: tokio::sync::watch::Receiver<Option<&'static str>>,
        total: usize,
        started: Instant,
        otlp: Option<crate::otlp::Exporter>,
    ) -> Self {
        Self {
            looks: plan.sequential.map(|s| crate::sequential::Looks::new(s, &[])),
            budgets: plan.budgets.iter().cloned().map(crate::budget::Budget::new).collect(),
            plan,
            providers,
            serve_prefix,
            quota: StopSignal::new(),
            halt: Mutex::new(None),
            breaker: Mutex::new(Streak::default()),
            interrupt,
            progress: progress_bar(total as u64),
            total,
            done: AtomicUsize::new(0),
            valid: AtomicUsize::new(0),
            passed: AtomicUsize::new(0),
            started,
            baselines: Mutex::new(Default::default()),
            footprints: Mutex::new(Default::default()),
            otlp: Mutex::new(otlp),
        }
    }

    /// The verifier's baseline of `task`'s freshly reset world, read from `pool` the first time
    /// and kept for the run: every reset of a task gives the same world (the template of its
    /// seed and scale, cloned, plus the task's own seed), so hashing its `unchanged` tables again
    /// for every session only costs time. Keyed by everything that makes that world.
    pub async fn baseline_of(&self, task: &tasks::Task, pool: &sqlx::PgPool) -> Result<tasks::verify::Baseline, String> {
        let key = format!("{}\u{0}{}\u{0}{}\u{0}{}", task.key(), task.sha256, task.meta.seed, task.meta.scale);
        if let Some(b) = self.baselines.lock().expect("baselines").get(&key) {
            return Ok(b.clone());
        }
        let b = task.verifier.baseline(pool).await?;
        self.baselines.lock().expect("baselines").insert(key, b.clone());
        Ok(b)
    }

    /// The footprint of `task` through `arm` found so far, if any.
    pub fn footprint(&self, task: &tasks::Task, arm: &str) -> Option<Footprint> {
        self.footprints.lock().expect("footprints").get(&footprint_key(task, arm)).cloned()
    }

    /// Keeps the footprints G7 read before the run ([`crate::gates::ground_truth_of`]).
    pub fn keep_g7_footprints(&self, found: Vec<(String, Vec<backend::world::RowChange>)>) {
        let mut footprints = self.footprints.lock().expect("footprints");
        for (key, rows) in found {
            footprints.insert(key, Footprint { source: "g7", rows: Ok(Arc::new(rows)) });
        }
    }

    /// Keeps `footprint` for `task` through `arm`, unless one was found first; the one kept.
    pub fn keep_footprint(&self, task: &tasks::Task, arm: &str, footprint: Footprint) -> Footprint {
        self.footprints.lock().expect("footprints").entry(footprint_key(task, arm)).or_insert(footprint).clone()
    }

    pub fn halted(&self) -> bool {
        self.quota.is_raised() || self.halt.lock().expect("halt").is_some() || self.interrupt.borrow().is_some()
    }

    pub fn halt(&self, kind: &'static str, detail: String) {
        let mut h = self.halt.lock().expect("halt");
        if h.is_none() {
            eprintln!("stopping: {kind}: {detail}; no further session starts");
            *h = Some(Halt { kind, detail });
        }
    }

    /// What the workers listen to for SIGINT/SIGTERM.
    pub fn interrupt(&self) -> tokio::sync::watch::Receiver<Option<&'static str>> {
        self.interrupt.clone()
    }

    /// Why the run stopped early, if it did: an interrupt, a halt, or a quota answer.
    pub fn stopped_by(&self) -> Option<Halt> {
        if let Some(signal) = *self.interrupt.borrow() {
            return Some(Halt { kind: "interrupted", detail: format!("{signal} received") });
        }
        if let Some(h) = self.halt.lock().expect("halt").clone() {
            return Some(h);
        }
        self.quota.is_raised().then(|| Halt { kind: "quota", detail: self.quota.reason().unwrap_or("a quota or session-limit answer").to_owned() })
    }

    pub fn finish_progress(&self) {
        if let Some(bar) = &self.progress {
            bar.finish();
        }
    }

    /// The trace exporter, taken at the run's end to flush it.
    pub fn take_exporter(&self) -> Option<crate::otlp::Exporter> {
        self.otlp.lock().expect("otlp").take()
    }

    /// A session's record was written: it goes out as a trace, a failure of the harness's own
    /// infrastructure halts the run, the circuit breaker and the counters see it, and progress is
    /// reported.
    /// Admits a pair of `sessions` sessions under every budget; when one could be exceeded, halts
    /// the run (`budget`) naming it, and the pair is not started.
    pub fn admit_pair(&self, sessions: usize) -> bool {
        for b in &self.budgets {
            if let Err(why) = b.check(sessions) {
                self.halt("budget", format!("{}: {why}", b.limit.flag()));
                return false;
            }
        }
        for b in &self.budgets {
            b.commit(sessions);
        }
        true
    }

    /// Whether the run was stopped by a budget (and by nothing else): the pairs it admitted are
    /// still finished.
    pub fn halted_by_budget(&self) -> bool {
        self.halt.lock().expect("halt").as_ref().is_some_and(|h| h.kind == "budget") && !self.quota.is_raised() && self.interrupt.borrow().is_none()
    }

    /// A sequential run reads on from the pairs `earlier` recorded (a resume).
    pub fn reading_on(mut self, earlier: &[SessionRecord]) -> Self {
        self.looks = self.plan.sequential.map(|s| crate::sequential::Looks::new(s, earlier));
        self
    }

    /// Whether the pair `s` opens is still to be drawn: in a sequential run, not once its
    /// comparison is decided.
    pub fn drawing(&self, s: &crate::plan::PlannedSession) -> bool {
        self.looks.as_ref().is_none_or(|l| l.drawing(&self.plan.models[s.model].spec.id, &s.task.module, s.task.meta.split))
    }

    /// Whether the pair `s` opens may start now: in a sequential run, only within `--jobs` draws
    /// of its comparison's first unfinished pair ([`crate::sequential::Looks::within_reach`]).
    pub fn within_reach(&self, s: &crate::plan::PlannedSession) -> bool {
        match (&self.looks, s.draw) {
            (Some(l), Some(draw)) => l.within_reach(&self.plan.models[s.model].spec.id, &s.task.module, s.task.meta.split, draw, self.plan.jobs),
            _ => true,
        }
    }

    /// A sequential run's decisions, for the closing summary.
    pub fn decisions(&self) -> Vec<crate::sequential::Decision> {
        self.looks.as_ref().map(crate::sequential::Looks::decisions).unwrap_or_default()
    }

    /// What each budget has spent, for the closing summary.
    pub fn budget_spent(&self) -> Vec<String> {
        self.budgets.iter().map(|b| format!("{} of {} spent", b.limit.show(b.spent()), b.limit.flag())).collect()
    }

    pub fn recorded(&self, record: &SessionRecord, infrastructure: Option<String>) {
        for b in &self.budgets {
            b.ended(record);
        }
        if let Some(d) = self.looks.as_ref().and_then(|l| l.ended(record)) {
            let line = d.line();
            match &self.progress {
                Some(bar) => bar.println(line),
                None => eprintln!("{line}"),
            }
        }
        if let Some(exporter) = self.otlp.lock().expect("otlp").as_ref() {
            exporter.send(record);
        }

        if let Some(detail) = infrastructure {
            self.halt("infrastructure", format!("the harness's own infrastructure failed: {detail}"));
        }
        self.breaker(record);
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let is_valid = record.validity.is_valid();
        let valid = self.valid.fetch_add(usize::from(is_valid), Ordering::Relaxed) + usize::from(is_valid);
        let passed = self.passed.fetch_add(usize::from(record.passed()), Ordering::Relaxed) + usize::from(record.passed());
        let elapsed = self.started.elapsed().as_secs_f64();
        let eta = elapsed / done as f64 * (self.total - done) as f64;
        let line = format!(
            "{} {} rep {} on {}: {} · {valid} valid, {} invalid, {passed} passed",
            record.model.id,
            record.task,
            record.rep,
            record.server,
            verdict_word(record),
            done - valid
        );
        match &self.progress {
            Some(bar) => {
                bar.set_message(line);
                bar.inc(1);
            }
            None => eprintln!("[{done}/{}] {line} ({elapsed:.1}s elapsed, ~{eta:.0}s left)", self.total),
        }
    }

    /// N sessions in a row invalid for the same reason stop the run: the setup, not the arm, is
    /// failing. Interrupted sessions and quota refusals have their own stop.
    fn breaker(&self, record: &SessionRecord) {
        let mut streak = self.breaker.lock().expect("breaker");
        match &record.validity {
            // A warm conversation's tasks after it ended follow from that one task's outcome: they
            // say nothing about the setup.
            Validity::Invalid { reason: InvalidReason::ConversationEnded, .. } => {}
            Validity::Invalid { reason, detail } if !reason.rerun_on_resume() => {
                if streak.reason == Some(*reason) {
                    streak.count += 1;
                } else {
                    *streak = Streak { reason: Some(*reason), count: 1, last_detail: String::new() };
                }
                streak.last_detail = detail.clone();
                let max = self.plan.breaker.max_consecutive_invalid;
                if streak.count >= max {
                    let detail = format!("{} sessions in a row invalid ({reason}); the last said: {}", streak.count, streak.last_detail);
                    drop(streak);
                    self.halt("circuit_breaker", detail);
                }
            }
            Validity::Invalid { .. } => {}
            Validity::Valid => *streak = Streak::default(),
        }
    }
}

/// Consecutive invalid sessions of one reason, in the order they finished.
#[derive(Debug, Default)]
struct Streak {
    reason: Option<InvalidReason>,
    count: u32,
    last_detail: String,
}

/// A bar with done/total, elapsed and an estimate, when stderr is a terminal.
fn progress_bar(total: u64) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(total);
    let style = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} [{elapsed_precise}, ~{eta} left] {wide_msg}")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
}

fn verdict_word(r: &SessionRecord) -> String {
    match (&r.validity, &r.verifier) {
        (Validity::Invalid { reason, .. }, _) => format!("INVALID ({reason})"),
        (_, Some(v)) => format!("{:?}", v.verdict).to_lowercase(),
        (_, None) => "not scored".into(),
    }
}
