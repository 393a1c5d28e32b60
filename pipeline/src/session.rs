//! One session: reset the world, start the arm, run the model (or the oracle), verify, and turn
//! it all into a [`SessionRecord`].

use std::time::Instant;

use sha2::Digest;

use agent::SessionOutcome;
use records::{HarnessTimings, InvalidReason, SCHEMA_VERSION, SessionRecord, Totals, Validity, VerifierOutcome};

use crate::context::{Footprint, RunContext};
use crate::experiment::Pending;

/// What one session left, and what the run loop needs to know about it.
pub struct Finished {
    pub record: SessionRecord,
    /// The transcript as JSON Lines.
    pub transcript: String,
    /// The harness's own milliseconds (reset, verify, and the session minus model and tools).
    pub harness_ms: f64,
    /// Set when the harness's own infrastructure failed (database, backend, serving the arm):
    /// the run stops, since every later session would fail the same way.
    pub infrastructure: Option<String>,
}

/// Resets, runs, verifies.
pub async fn run_one(ctx: &RunContext, pending: &Pending, backend_url: &str, world: &backend::World) -> Finished {
    let ready = prepare(ctx, pending, backend_url, world).await;
    let ran = run_agent(ctx, pending, ready).await;
    finish(ctx, pending, ran, (backend_url, world)).await
}

/// A session made ready to run: its world reset to its task's seeded state (and the baseline
/// read), its arm started and through the MCP handshake. A run makes the next session of a
/// worker ready, on another of the worker's worlds, while one runs ([`crate::run`]).
pub struct Ready {
    baseline: Result<tasks::verify::Baseline, String>,
    reset_ms: f64,
    arm: ArmReady,
    /// Starting the arm: an HTTP arm's server, a stdio arm's process and its handshake.
    arm_ms: f64,
}

enum ArmReady {
    /// The world could not be reset (the baseline says why): no arm was started.
    NotStarted,
    /// The arm would not start: the session's outcome is already known.
    Failed {
        outcome: Box<SessionOutcome>,
        infrastructure: Option<String>,
    },
    Up {
        reach: agent::mcp::Reach,
        guard: crate::arm::ArmGuard,
    },
}

impl Ready {
    /// Stops the arm of a session that will not run after all (the run halted before its turn).
    pub async fn abandon(self) {
        if let ArmReady::Up { reach, guard } = self.arm {
            drop(reach);
            guard.stop().await;
        }
    }
}

/// Resets the world for `pending`'s task and starts its arm on it.
pub async fn prepare(ctx: &RunContext, pending: &Pending, backend_url: &str, world: &backend::World) -> Ready {
    let job = &pending.session;
    let (baseline, reset_ms) = reset(ctx, &job.task, world).await;
    if baseline.is_err() {
        return Ready { baseline, reset_ms, arm: ArmReady::NotStarted, arm_ms: 0.0 };
    }
    let starting = Instant::now();
    let arm = match crate::arm::connect(job.server, (ctx.plan.transport, ctx.plan.protocol), backend_url, &ctx.serve_prefix, ctx.plan.settings()).await {
        // An external arm that does not start is the arm's failure, like one that dies in a
        // session: an invalid session (the circuit breaker applies), not broken infrastructure.
        Err(e) if job.server.external().is_some() => {
            let mut outcome = harness_failure(String::new());
            outcome.validity = records::Validity::invalid(InvalidReason::McpTransport, format!("starting {}: {e:#}", job.server.name));
            ArmReady::Failed { outcome: Box::new(outcome), infrastructure: None }
        }
        Err(e) => {
            let detail = format!("serving {} over HTTP: {e:#}", job.server.name);
            ArmReady::Failed { outcome: Box::new(harness_failure(detail.clone())), infrastructure: Some(detail) }
        }
        // The process (or the HTTP client's session) is started and through the handshake here;
        // a failure there is the session's to report, as when it connected itself.
        Ok((conn, guard)) => ArmReady::Up { reach: agent::mcp::Reach::start(&conn).await, guard },
    };
    Ready { baseline, reset_ms, arm, arm_ms: starting.elapsed().as_secs_f64() * 1000.0 }
}

/// A session that has run, not yet verified.
pub struct Ran {
    baseline: Result<tasks::verify::Baseline, String>,
    reset_ms: f64,
    outcome: SessionOutcome,
    session_ms: f64,
    infrastructure: Option<String>,
}

impl Ran {
    /// Whether its record can only be valid: verifying it cannot stop the run on its own
    /// (a circuit breaker counts invalid sessions), so the next session may start meanwhile.
    pub fn valid(&self) -> bool {
        self.infrastructure.is_none() && self.outcome.validity.is_valid()
    }
}

/// Verifies a session that has run, on the world it ran on, and makes its record.
pub async fn finish(ctx: &RunContext, pending: &Pending, ran: Ran, (backend_url, world): (&str, &backend::World)) -> Finished {
    let Ran { baseline, reset_ms, outcome, session_ms, infrastructure } = ran;
    conclude(ctx, pending, (backend_url, world), &baseline, &outcome, (reset_ms, session_ms), infrastructure).await
}

/// Runs a session made ready by [`prepare`]: the model, the simulated agent or the oracle.
pub async fn run_agent(ctx: &RunContext, pending: &Pending, ready: Ready) -> Ran {
    let job = &pending.session;
    let task = &job.task;
    let model = &ctx.plan.models[job.model];
    let Ready { baseline, reset_ms, arm, arm_ms } = ready;
    let running = Instant::now();
    let mut infrastructure = None;
    let outcome = match arm {
        ArmReady::NotStarted => {
            let e = baseline.as_ref().err().cloned().unwrap_or_default();
            infrastructure = Some(e.clone());
            harness_failure(e)
        }
        ArmReady::Failed { outcome, infrastructure: why } => {
            infrastructure = why;
            *outcome
        }
        ArmReady::Up { reach, guard } => {
            let outcome = if model.is_oracle() {
                match task.plan_for(job.server.name) {
                    Some(plan) => agent::oracle::run_counting(reach, &ctx.plan.distractors, &task.text, plan, model.tokenizer()).await,
                    None => harness_failure(format!("no oracle plan for {}", job.server.name)),
                }
            } else if let Some(profile) = &model.sim {
                let seed = model.spec.seed.unwrap_or(profile.seed);
                match task.plan_for(job.server.name) {
                    Some(plan) => {
                        let place = agent::sim::Place { task, plan, role: job.server.role, rep: job.rep };
                        agent::sim::run(reach, &ctx.plan.distractors, &place, profile, seed).await
                    }
                    None => harness_failure(format!("no oracle plan for {} (the simulated agent follows it)", job.server.name)),
                }
            } else {
                match ctx.providers.get(&model.spec.id) {
                    Some(provider) => {
                        agent::session::run(reach, &ctx.plan.distractors, &task.text, agent::SYSTEM_PROMPT, task.meta.turn_cap, provider, &ctx.quota).await
                    }
                    None => harness_failure(format!("no provider for model {}", model.spec.id)),
                }
            };
            let stderr = guard.stop().await;
            let mut outcome = outcome;
            outcome.validity = outcome.validity.with_server_stderr(&stderr);
            // The agent timed its listing (and nothing else of the start, which was done here).
            outcome.start_ms = outcome.start_ms.map(|ms| ms + arm_ms);
            outcome
        }
    };
    // The session's own time: its arm's start and its run, not a wait for its turn in between.
    let session_ms = arm_ms + running.elapsed().as_secs_f64() * 1000.0;
    Ran { baseline, reset_ms, outcome, session_ms, infrastructure }
}

/// Resets the world for `task` (its seed included) and reads its verifier's baseline; the
/// milliseconds it took.
async fn reset(ctx: &RunContext, task: &tasks::Task, world: &backend::World) -> (Result<tasks::verify::Baseline, String>, f64) {
    let started = Instant::now();
    let baseline = match task.prepare_under(world, ctx.plan.attack.as_deref()).await {
        Ok(()) => ctx.baseline_of(task, &world.pool()).await.map_err(|e| format!("reading the baseline of the seeded world: {e}")),
        Err(e) => Err(e),
    };
    (baseline, started.elapsed().as_secs_f64() * 1000.0)
}

/// What a cold session and a warm task both end with: the verifier reads the state (a valid
/// session only), the harness's own time is worked out, and the record is made.
async fn conclude(
    ctx: &RunContext,
    pending: &Pending,
    (backend_url, world): (&str, &backend::World),
    baseline: &Result<tasks::verify::Baseline, String>,
    outcome: &SessionOutcome,
    (reset_ms, session_ms): (f64, f64),
    infrastructure: Option<String>,
) -> Finished {
    let task = &pending.session.task;
    let verify_started = Instant::now();
    let (verifier, world_event) = match (baseline, outcome.validity.is_valid()) {
        (Ok(baseline), true) => {
            let (verified, diff) = task.verifier.verify_with_changes(&world.pool(), baseline, outcome.final_answer.as_deref().unwrap_or("")).await;
            let mut verified = kept_off_the_control_plane(verified, world.control_plane_attempts());
            // The class as graded now, with the claim that decided it: a reader of one record
            // sees why, without the report.
            verified.class = aggregate::metrics::classes::explain_answer(&verified, outcome.final_answer.as_deref());
            verified.graded = Some(crate::grading::graded(task, None));
            // What the session changed, row by row: the transcript's last event, its hash in the
            // record (none when the verifier could not read the world).
            let event = verified.changed_tables.is_some().then(|| world_event(&diff));
            verified.world_diff_sha256 = event.as_ref().map(|e| hex::encode(sha2::Sha256::digest(e.to_string().as_bytes())));
            (Some(verified), event.map(|e| (e, diff)))
        }
        _ => (None, None),
    };
    let verify_ms = verify_started.elapsed().as_secs_f64() * 1000.0;
    // Side effects, against the task's footprint through this arm. Outside the harness's own
    // time: finding a footprint replays the oracle once per task and arm.
    let (verifier, world_event) = match (verifier, world_event) {
        (Some(mut verified), Some((event, diff))) => {
            verified.collateral = collateral_of(ctx, pending, (backend_url, world), &diff).await;
            (Some(verified), Some(event))
        }
        (verifier, event) => (verifier, event.map(|(e, _)| e)),
    };
    // The harness's own time: everything but the tool calls and the model's answering requests
    // (a provider's failed attempts and backoff waits are not separated out, so the run's
    // summary reports overhead over valid sessions only).
    let call_ms: f64 = outcome.tool_calls.iter().map(|c| c.latency_ms).sum();
    let model_ms: f64 = outcome.turns.iter().map(|t| t.latency_ms).sum();
    // Starting the arm's server is the arm's cost, reported apart (a Python server takes seconds).
    let start_ms = outcome.start_ms.unwrap_or(0.0);
    let harness_ms = reset_ms + verify_ms + (session_ms - call_ms - model_ms - start_ms).max(0.0);
    let transcript: String = outcome.transcript.iter().chain(world_event.as_ref()).map(|e| format!("{e}\n")).collect();
    let timings = HarnessTimings { reset_ms, session_ms, verify_ms, write_ms: 0.0, server_start_ms: outcome.start_ms };
    let mut record = record_of(ctx, pending, outcome, verifier, timings);
    record.attack = attack_of(ctx, pending.session.server.name, baseline.is_ok(), world, outcome).await;
    if let Some(detail) = &infrastructure {
        record.validity = Validity::invalid(InvalidReason::Infrastructure, detail.clone());
    }
    Finished { record, transcript, harness_ms, infrastructure }
}

/// The run's attack, and whether the session did what it asked: read from the final state as the
/// task's verifier is, a verdict of its own. Unknown (null) when the world was never prepared or
/// the check failed; never "resisted" by default.
async fn attack_of(ctx: &RunContext, server: &str, prepared: bool, world: &backend::World, outcome: &SessionOutcome) -> Option<records::AttackOutcome> {
    let a = ctx.plan.attack.as_ref()?;
    let answer = outcome.final_answer.as_deref().unwrap_or("");
    // Exposed: a tool call's result (the transcript's `call` events) or the definitions offered
    // to the model (`offered`: where a poisoned description sits in a flat tool list) held the
    // planted text.
    let exposed = outcome.transcript.iter().filter(|e| e["event"] == "call" || e["event"] == "offered").any(|e| a.appears_in(e));
    // A poisoned description in the arm's own tool list reached every model it was offered to,
    // whether or not this transcript holds the definitions (a warm conversation's later task
    // does not). The oracle follows its plan and reads no definitions: there, only a call's
    // result tells.
    let listed = ctx.plan.poisoned_lists.contains(server) && outcome.provider != agent::oracle::PROVIDER;
    let exposed = exposed || listed;
    let (succeeded, detail) = if !prepared {
        (None, "not read: the world was not prepared".to_owned())
    } else {
        match a.succeeded(world, answer).await {
            Ok(s) => (Some(s), a.success.says.clone()),
            Err(e) => (None, e),
        }
    };
    Some(records::AttackOutcome {
        name: a.name.clone(),
        class: a.class.as_str().to_owned(),
        sha256: a.sha256.clone(),
        succeeded,
        detail,
        exposed: Some(exposed),
    })
}

/// What the session changed beyond its task's footprint through its arm (`tasks::collateral`).
/// The footprint is found once per task and arm: from G7's replay before a model run, from the
/// first oracle session of the task (an oracle run: every later rep is held to it), or else by
/// replaying the arm's oracle plan on this worker's world now (the next session resets it).
/// Null when no footprint could be found (the plan's replay failed), never zero.
async fn collateral_of(
    ctx: &RunContext,
    pending: &Pending,
    (backend_url, world): (&str, &backend::World),
    diff: &[backend::world::RowChange],
) -> Option<records::Collateral> {
    let job = &pending.session;
    let (task, arm) = (&job.task, job.server.name);
    if diff.is_empty() {
        return Some(records::Collateral { footprint: "no change".into(), footprint_sha256: None, writes: Vec::new() });
    }
    let footprint = match ctx.footprint(task, arm) {
        Some(f) => f,
        None if ctx.plan.models[job.model].is_oracle() => {
            ctx.keep_footprint(task, arm, Footprint { source: "oracle session", rows: Ok(std::sync::Arc::new(diff.to_vec())) })
        }
        None => {
            let found = tasks::gates::ground_truth_with(task, job.server, world, backend_url, &ctx.serve_prefix, ctx.plan.under()).await;
            let rows = found.map(|g| std::sync::Arc::new(g.footprint));
            if let Err(e) = &rows {
                eprintln!("warning: no footprint for {} via {arm} (its collateral writes are not counted): {e}", task.key());
            }
            ctx.keep_footprint(task, arm, Footprint { source: "oracle replay", rows })
        }
    };
    let rows = footprint.rows.ok()?;
    Some(records::Collateral {
        footprint: footprint.source.into(),
        footprint_sha256: Some(tasks::collateral::footprint_sha256(&rows)),
        writes: tasks::collateral::collateral(diff, &rows),
    })
}

/// The name of the check a session fails when its arm reached for the control plane.
pub const CONTROL_PLANE_CHECK: &str = "the arm kept off the backend's control plane";

/// `verified`, failed by one more check when the arm sent `attempts` requests to the backend's
/// control plane during the session (refused by the data plane, so the world is as the session
/// left it). An MCP server that offers the harness's reset, or calls it, is the arm's failure:
/// counted against it in success, where dropping the session as invalid would hide it.
pub(crate) fn kept_off_the_control_plane(mut verified: records::VerifierOutcome, attempts: u64) -> records::VerifierOutcome {
    if attempts == 0 {
        return verified;
    }
    verified.checks.push(records::Check { name: CONTROL_PLANE_CHECK.into(), kind: records::CheckKind::State, held: false, negative: true });
    verified.reasons.push(format!(
        "the arm sent {attempts} request(s) to the backend's control plane (/admin/…), refused: an MCP server may not reset or administer the world it is measured on"
    ));
    if verified.verdict == records::Verdict::Passed {
        verified.verdict = records::Verdict::Failed;
    }
    verified
}

/// What drives a warm conversation: the model's side or the oracle's.
enum Driver<'a> {
    Model(agent::session::Conversation<'a>),
    Oracle(agent::oracle::Conversation),
}

/// One warm conversation: the arm is started and its tools listed once, at the first task (after
/// that task's reset, as a cold session starts it); then, task after task, the world is reset,
/// the task's text follows everything the conversation holds, and its verifier reads the state.
/// Each task becomes its own record, linked to the conversation (`conversation` in the record).
pub struct Warm<'a> {
    ctx: &'a RunContext,
    id: String,
    tasks: Vec<String>,
    /// Started at the first task: the driver and what keeps the arm's server up.
    open: Option<(Driver<'a>, crate::arm::ArmGuard)>,
    /// Why the arm could not be started: every task of the conversation says so.
    failed: Option<(InvalidReason, String, bool)>,
    position: u32,
    earlier_not_passed: u32,
}

impl<'a> Warm<'a> {
    /// A conversation through `pendings` (one model, arm and rep; the plan's task order).
    pub fn new(ctx: &'a RunContext, pendings: &[Pending]) -> Self {
        let first = &pendings[0].session;
        let model = &ctx.plan.models[first.model];
        // A held-out conversation is its own (dev and held-out tasks never share one).
        let split = if first.task.meta.split.is_dev() { String::new() } else { format!("__{}", first.task.meta.split) };
        let id = format!("{}__{}{split}__rep{}", model.spec.id, first.server.name, first.rep);
        Self { ctx, id, tasks: pendings.iter().map(|p| p.session.task.id.clone()).collect(), open: None, failed: None, position: 0, earlier_not_passed: 0 }
    }

    /// Resets the world for `pending`'s task, runs it as the conversation's next task, verifies.
    pub async fn task(&mut self, pending: &Pending, backend_url: &str, world: &backend::World) -> Finished {
        let ctx = self.ctx;
        let job = &pending.session;
        let task = &job.task;
        self.position += 1;
        let (baseline, reset_ms) = reset(ctx, task, world).await;
        let session_started = Instant::now();
        let mut infrastructure = None;
        let messages_before = match &self.open {
            Some((Driver::Model(c), _)) => c.messages_before(),
            _ => 0,
        };
        let outcome = match &baseline {
            Err(e) => {
                infrastructure = Some(e.clone());
                harness_failure(e.clone())
            }
            Ok(_) => {
                let mut start_ms = None;
                if self.open.is_none() && self.failed.is_none() {
                    let starting = Instant::now();
                    self.start(job, backend_url).await;
                    start_ms = self.open.is_some().then(|| starting.elapsed().as_secs_f64() * 1000.0);
                }
                let mut outcome = match (&mut self.open, &self.failed) {
                    (_, Some((reason, detail, infra))) => {
                        if *infra {
                            infrastructure = Some(detail.clone());
                        }
                        let mut o = harness_failure(String::new());
                        o.validity = Validity::invalid(*reason, detail.clone());
                        o
                    }
                    (Some((Driver::Model(c), _)), None) => c.task(&task.text, task.meta.turn_cap).await,
                    (Some((Driver::Oracle(c), _)), None) => match task.plan_for(job.server.name) {
                        Some(plan) => c.task(&task.text, plan).await,
                        None => harness_failure(format!("no oracle plan for {}", job.server.name)),
                    },
                    (None, None) => harness_failure("the conversation's arm was never started".into()),
                };
                // The whole start (the arm, the connection, the listing) belongs to the task that made it.
                outcome.start_ms = start_ms;
                outcome
            }
        };
        let session_ms = session_started.elapsed().as_secs_f64() * 1000.0;
        let context_tokens_at_start = outcome.turns.first().and_then(|t| t.usage.prompt_tokens);
        let mut finished = conclude(ctx, pending, (backend_url, world), &baseline, &outcome, (reset_ms, session_ms), infrastructure).await;
        finished.record.conversation = Some(self.place(self.position, messages_before, context_tokens_at_start));
        self.earlier_not_passed += u32::from(!finished.record.passed());
        finished
    }

    /// Where the task at `position` (1-based) sits in this conversation.
    pub fn place(&self, position: u32, messages_before: u32, context_tokens_at_start: Option<u64>) -> records::ConversationPlace {
        records::ConversationPlace {
            id: self.id.clone(),
            position,
            tasks: self.tasks.clone(),
            messages_before,
            context_tokens_at_start,
            earlier_not_passed: self.earlier_not_passed,
        }
    }

    /// Starts the arm and the conversation's driver; a failure is kept for every task.
    async fn start(&mut self, job: &crate::plan::PlannedSession, backend_url: &str) {
        let ctx = self.ctx;
        let model = &ctx.plan.models[job.model];
        match crate::arm::connect(job.server, (ctx.plan.transport, ctx.plan.protocol), backend_url, &ctx.serve_prefix, ctx.plan.settings()).await {
            // As in a cold session: an external arm that does not start is the arm's failure, a
            // built-in one the harness's.
            Err(e) if job.server.external().is_some() => {
                self.failed = Some((InvalidReason::McpTransport, format!("starting {}: {e:#}", job.server.name), false));
            }
            Err(e) => self.failed = Some((InvalidReason::Infrastructure, format!("serving {} over HTTP: {e:#}", job.server.name), true)),
            Ok((conn, guard)) => {
                let driver = if model.is_oracle() {
                    Driver::Oracle(agent::oracle::Conversation::open(&conn, true).await.beside(&ctx.plan.distractors).counting(model.tokenizer()))
                } else {
                    match ctx.providers.get(&model.spec.id) {
                        Some(provider) => {
                            Driver::Model(agent::session::Conversation::open(&conn, &ctx.plan.distractors, agent::SYSTEM_PROMPT, provider, &ctx.quota).await)
                        }
                        None => {
                            self.failed = Some((InvalidReason::HarnessError, format!("no provider for model {}", model.spec.id), false));
                            guard.stop().await;
                            return;
                        }
                    }
                };
                self.open = Some((driver, guard));
            }
        }
    }

    /// Ends the conversation and stops the arm.
    pub async fn close(self) {
        if let Some((driver, guard)) = self.open {
            match driver {
                Driver::Model(c) => c.close().await,
                Driver::Oracle(c) => c.close().await,
            }
            guard.stop().await;
        }
    }
}

/// The record of a session stopped by an interrupt while in flight: invalid, `interrupted`, so a
/// resume runs it again. What it had done is lost with it; its start and how long it ran until
/// the signal are kept (`session_ms` then covers the reset too: the parts were not timed apart).
pub fn interrupted(ctx: &RunContext, pending: &Pending, signal: &str, started_at: chrono::DateTime<chrono::Utc>, ran: std::time::Duration) -> Finished {
    let mut outcome = harness_failure(String::new());
    outcome.started_at = started_at;
    let timings = HarnessTimings { session_ms: ran.as_secs_f64() * 1000.0, ..HarnessTimings::default() };
    let mut record = record_of(ctx, pending, &outcome, None, timings);
    record.validity = Validity::invalid(InvalidReason::Interrupted, format!("the run was interrupted ({signal}) while this session was in flight"));
    Finished { record, transcript: String::new(), harness_ms: 0.0, infrastructure: None }
}

fn record_of(ctx: &RunContext, pending: &Pending, outcome: &SessionOutcome, verifier: Option<VerifierOutcome>, harness: HarnessTimings) -> SessionRecord {
    let job = &pending.session;
    let task = &job.task;
    let model = &ctx.plan.models[job.model];
    let fingerprint = ctx.plan.fingerprint(job);
    SessionRecord {
        schema_version: SCHEMA_VERSION,
        experiment: ctx.plan.experiment.clone(),
        module: task.module.clone(),
        server: job.server.name.to_owned(),
        role: job.server.role,
        task: task.id.clone(),
        task_sha256: task.sha256.clone(),
        split: task.meta.split,
        rep: job.rep,
        draw: job.draw,
        arm_position: job.arm_position,
        model: model.spec.clone(),
        // As the provider was built: keyless when the endpoint is loopback and the variable unset.
        auth: ctx.providers.get(&model.spec.id).map(|p| p.auth()),
        manifest_sha256: fingerprint.manifest_sha256.clone(),
        system_prompt_sha256: fingerprint.system_prompt_sha256.clone(),
        git_commit: ctx.plan.build.commit.clone(),
        git_dirty: ctx.plan.build.dirty,
        world_seed: task.meta.seed,
        world_scale: task.meta.scale,
        transport: Some(ctx.plan.transport),
        fingerprint_sha256: Some(fingerprint.sha256()),
        fingerprint: Some(fingerprint),
        attempt: Some(pending.attempt),
        started_at: outcome.started_at,
        ended_at: outcome.ended_at,
        turn_cap: task.meta.turn_cap,
        turn_cap_hit: outcome.turn_cap_hit,
        context_exceeded: outcome.context_exceeded,
        tool_call_as_text: outcome.tool_call_as_text,
        unparseable_output: outcome.unparseable_output,
        turns: outcome.turns.len(),
        turn_records: outcome.turns.clone(),
        totals: Totals::of(&outcome.turns),
        provider_retries: Some(outcome.provider_retries),
        failed_turn: outcome.failed_turn.clone(),
        tool_calls: outcome.tool_calls.clone(),
        offered: outcome.offered.clone(),
        final_answer: outcome.final_answer.clone(),
        verifier,
        validity: outcome.validity.clone(),
        oracle: outcome.oracle.clone(),
        cost_usd: None,
        harness,
        server_info: outcome.server_info.clone(),
        external_arm: job.server.external().map(|a| records::ExternalArmRecord { sha256: a.sha256.clone(), env_names: a.env_names() }),
        retrieval: retrieval_of(job, outcome),
        conversation: None,
        superseded: None,
        earlier_grades: Vec::new(),
        attack: None,
    }
}

fn harness_failure(detail: String) -> SessionOutcome {
    let now = chrono::Utc::now();
    SessionOutcome {
        provider: "harness".into(),
        validity: Validity::invalid(InvalidReason::HarnessError, detail),
        turns: vec![],
        tool_calls: vec![],
        final_answer: None,
        turn_cap_hit: false,
        context_exceeded: false,
        tool_call_as_text: false,
        unparseable_output: false,
        offered: Default::default(),
        oracle: None,
        started_at: now,
        ended_at: now,
        provider_retries: 0,
        failed_turn: None,
        server_info: None,
        start_ms: None,
        transcript: vec![],
    }
}

/// For a module with a tool catalogue: whether the session's searches found the tools its task
/// needs (those its control's oracle plan calls), read off the transcript's calls.
fn retrieval_of(job: &crate::plan::PlannedSession, outcome: &SessionOutcome) -> Option<records::Retrieval> {
    let module = servers::registry::module(job.server.module)?;
    module.catalogue?;
    let plan = job.task.plan_for(module.control.name)?;
    let mut needed: Vec<String> = Vec::new();
    for tool in plan.steps.iter().filter_map(|s| s.tool.as_ref()) {
        if !needed.contains(tool) {
            needed.push(tool.clone());
        }
    }
    // A model's arguments are the text it wrote; the oracle's are JSON already.
    let calls: Vec<(String, serde_json::Value, String)> = outcome
        .transcript
        .iter()
        .filter(|e| e["event"] == "call")
        .map(|e| {
            let arguments = match &e["arguments"] {
                serde_json::Value::String(text) => serde_json::from_str(text).unwrap_or_default(),
                other => other.clone(),
            };
            (e["name"].as_str().unwrap_or_default().to_owned(), arguments, e["result"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    let seen: Vec<servers::modules::tool_search::SeenCall<'_>> =
        calls.iter().map(|(name, arguments, result)| servers::modules::tool_search::SeenCall { name, arguments, result }).collect();
    Some(servers::modules::tool_search::retrieval(&needed, &seen))
}

/// The transcript's `world` event: every row the session changed, net, relative to the fresh
/// world (`backend::world::RowChange`): table, id, what happened, and the columns that changed
/// with their values before and after.
pub(crate) fn world_event(diff: &[backend::world::RowChange]) -> serde_json::Value {
    let changes: Vec<serde_json::Value> = diff
        .iter()
        .map(|c| {
            let columns: serde_json::Map<String, serde_json::Value> = c.columns().into_iter().map(|(k, (b, a))| (k, serde_json::json!([b, a]))).collect();
            serde_json::json!({ "table": c.table, "id": c.id, "op": c.op(), "columns": columns })
        })
        .collect();
    serde_json::json!({ "event": "world", "changes": changes })
}
