//! Running a [`RunPlan`]: providers and the endpoint preflight, the experiment lock and the
//! resume decision, then a pool of `--jobs` workers, each on its own isolated worlds, writing one
//! record per session atomically (transcript first). A worker of a cold run (no budget, no
//! sequential stop) pipelines its sessions over three worlds: while one runs, the next is made
//! ready and the one before is verified.
//!
//! A run stops starting sessions — and says so, in the manifest and in its exit code — on a quota
//! or session-limit answer, when `--max-consecutive-invalid` sessions in a row are invalid for the
//! same reason (the circuit breaker), when the harness's own infrastructure fails (database,
//! backend, serving an arm), and on SIGINT/SIGTERM. Sessions in flight at an interrupt are
//! recorded invalid `interrupted`; a second Ctrl-C exits at once.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use agent::OpenAiCompatible;
use anyhow::Context;
use backend::local::LocalBackend;
use backend::{Cluster, WorldSpec};
use records::{InvalidReason, SessionRecord, Validity, write_atomically};

use crate::context::{Halt, RunContext};
use crate::exit::{Exit, Reported};
use crate::experiment::{Experiment, Pending, Resume};
use crate::plan::RunPlan;
use crate::session::Finished;

/// Counts for the closing summary and the exit code.
#[derive(Debug, Default)]
pub struct RunSummary {
    pub exp_dir: PathBuf,
    pub planned: usize,
    /// Already recorded and not rerun.
    pub skipped: usize,
    pub ran: usize,
    pub valid: usize,
    pub passed: usize,
    /// Sessions of this run that were invalid, by reason.
    pub invalid: BTreeMap<InvalidReason, usize>,
    /// Invalid records of earlier runs left as they are, by reason.
    pub left_invalid: BTreeMap<InvalidReason, usize>,
    /// Earlier records replaced by this run's attempts.
    pub replaced: usize,
    pub halt: Option<Halt>,
    pub elapsed_s: f64,
    /// Harness time per valid session (reset + verify + write + session minus model and tools).
    pub harness_ms: Vec<f64>,
    /// The command line (redacted) for the resume hint.
    pub command: Vec<String>,
    /// Where this run's traces went and how many got there.
    pub otlp: Option<(crate::otlp::Target, crate::otlp::Stats)>,
    /// What this run spent against each budget (`--budget-*`), for a person.
    pub budget: Vec<String>,
    /// Starting the arm's server and listing it, per session that started one (outside
    /// `harness_ms`).
    pub server_start_ms: Vec<f64>,
    /// A sequential run's decisions, one line each.
    pub decisions: Vec<String>,
}

impl RunSummary {
    pub fn exit(&self) -> Exit {
        if self.halt.is_some() {
            Exit::StoppedEarly
        } else if !self.invalid.is_empty() || !self.left_invalid.is_empty() {
            Exit::CompletedWithInvalid
        } else {
            Exit::Ok
        }
    }
}

/// Runs `plan`. `accepted` runs once the experiment is locked and the resume check has accepted
/// the plan, before any session (spec runs write check.json there). Refusals return an error and
/// leave the experiment as it was.
pub async fn run(plan: RunPlan, accepted: impl FnOnce(&Experiment) -> anyhow::Result<()>) -> anyhow::Result<RunSummary> {
    let providers = providers_of(&plan)?;
    let preflight = if plan.check.is_none() { preflight(&plan, &providers).await? } else { None };
    let mut g7_footprints = Vec::new();
    if plan.check.is_none() && !providers.is_empty() {
        // A spec run proved this in its check; the oracle run proves it by running.
        let (failures, footprints) = crate::gates::ground_truth_of(&plan).await?;
        g7_footprints = footprints;
        if !failures.is_empty() {
            eprintln!("INVALID — gate failures:");
            for f in &failures {
                eprintln!("{}: {f}", crate::gates::Gate::GroundTruth);
            }
            eprintln!("no session was started: these tasks cannot be scored at this world; run them at the scale they were written for");
            return Err(Reported.into());
        }
    }
    let experiment = Experiment::lock(&plan.exp_dir)?;
    let resume = match experiment.resume(&plan, plan.sessions()) {
        Ok(r) => r,
        Err(e) => {
            experiment.discard_if_untouched();
            return Err(e);
        }
    };
    let planned = resume.pending.len() + resume.done;
    let Resume { pending, done, left_invalid, rerun } = resume;
    let mut summary = RunSummary { exp_dir: plan.exp_dir.clone(), planned, skipped: done, left_invalid, command: plan.command.clone(), ..Default::default() };
    // The run's backend, started before anything is accepted: G5 lists the arms against it.
    let main = match pending.first() {
        None => None,
        Some(first) => Some(LocalBackend::start(first.session.task.spec()).await.context("starting the backend")?),
    };
    if let (Some(main), None) = (&main, &plan.check) {
        // A spec run proved G5 in its check; a run from flags proves it here, for every arm.
        let failures = crate::gates::neutrality_of(&plan, main.url()).await?;
        if !failures.is_empty() {
            eprintln!("INVALID — gate failures:");
            for f in &failures {
                eprintln!("{}: {f}", crate::gates::Gate::Neutrality);
            }
            eprintln!("no session was started: a task's text names what one arm offers, so the arms would not answer the same question");
            experiment.discard_if_untouched();
            return Err(Reported.into());
        }
    }
    let reruns: usize = rerun.values().sum();
    if let Some(shard) = plan.shard {
        eprintln!(
            "shard {shard} of the plan (from {}): its own experiment folder; `aggregate --merge` puts the shards together",
            serde_json::to_value(shard.source)?.as_str().unwrap_or("")
        );
    }
    eprintln!(
        "experiment {}: {planned} sessions planned, {done} already recorded, {}{} to run{} with {} job(s) → {}",
        plan.experiment,
        if plan.sequential.is_some() { "until decided, at most " } else { "" },
        pending.len(),
        if reruns > 0 { format!(" ({reruns} of them reruns of invalid sessions: {})", reasons(&rerun)) } else { String::new() },
        plan.jobs,
        plan.exp_dir.display()
    );
    if !summary.left_invalid.is_empty() {
        let n: usize = summary.left_invalid.values().sum();
        eprintln!("{n} invalid session(s) of earlier runs left as recorded ({}); --retry-invalid reruns them", reasons(&summary.left_invalid));
    }
    accepted(&experiment)?;
    experiment.write_manifest(&plan, preflight)?;
    if pending.is_empty() {
        if let Some(target) = &plan.otlp {
            // Nothing ran, so nothing was exported: zero counts, not the null of a run going on.
            experiment.record_otlp(crate::otlp::Stats::default().manifest(target))?;
        }
        return Ok(summary);
    }

    let (signals, interrupt) = crate::signals::RunSignals::claim();
    let started = Instant::now();
    let plan = Arc::new(plan);
    let otlp = match plan.otlp.clone() {
        Some(target) => Some(crate::otlp::Exporter::start(target, &plan.experiment)?),
        None => None,
    };
    // A sequential run reads on from the pairs already recorded (a resume), but not from a
    // record this run replaces (`--retry-invalid`): the rerun's record is what the pair becomes.
    let earlier: Vec<SessionRecord> = match plan.sequential {
        None => Vec::new(),
        Some(_) => {
            let rerun: std::collections::HashSet<(String, &str, &str, u32)> = pending
                .iter()
                .map(|p| (plan.models[p.session.model].spec.id.clone(), p.session.server.name, p.session.task.id.as_str(), p.session.rep))
                .collect();
            experiment
                .records()?
                .into_iter()
                .map(|(_, r)| r)
                .filter(|r| !rerun.contains(&(r.model.id.clone(), r.server.as_str(), r.task.as_str(), r.rep)))
                .collect()
        }
    };
    let ctx = Arc::new(RunContext::new(plan.clone(), providers, crate::arm::serve_prefix()?, interrupt, pending.len(), started, otlp).reading_on(&earlier));
    ctx.keep_g7_footprints(g7_footprints);
    let queue = Arc::new(Mutex::new(VecDeque::from(work_items(&plan, pending))));
    let main = main.expect("a run with sessions to take started its backend");
    let results = Arc::new(Mutex::new(Vec::<(SessionRecord, f64, bool)>::new()));
    let ahead = pipelined(&plan, &main.world().pool()).await;
    let mut workers = Vec::new();
    for w in 0..plan.jobs {
        let (queue, ctx, results, experiment_dir) = (queue.clone(), ctx.clone(), results.clone(), experiment.dir.clone());
        // Worker 0 uses the main world; the others get a world of their own on the same cluster.
        let world = if w == 0 {
            WorkerWorld::Shared(main.url().to_owned(), main.world().clone(), main.cluster().clone())
        } else {
            WorkerWorld::Own(main.cluster().clone())
        };
        workers.push(tokio::spawn(async move {
            // A worker that ends early (an error, a panic) halts the run at once, not when its
            // turn to be joined comes: another may be waiting for a pair this one was running.
            let mut guard = HaltIfUnfinished(Some(ctx.clone()));
            let ended = worker((w, ahead), queue, ctx.clone(), results, world, experiment_dir).await;
            if let Err(e) = &ended {
                ctx.halt("infrastructure", format!("{e:#}"));
            }
            guard.0 = None;
            ended
        }));
    }
    // A worker that fails (its world would not start, a record could not be written) has
    // stopped the run itself, like any broken infrastructure, as it ended (above): the others
    // stop starting sessions, the summary stands.
    for w in workers {
        let _ = w.await;
    }
    // After the sessions, a failing shutdown (the database may be what broke) must not hide the
    // summary and the exit code: it is reported, and the cluster is still removed on drop.
    if let Err(e) = main.shutdown().await {
        eprintln!("warning: stopping the backend: {e:#}");
    }
    drop(signals);
    ctx.finish_progress();
    // The traces still queued go out now (bounded: a collector that does not answer costs the
    // run at most this wait), and the manifest says how many got there.
    let exporter = ctx.take_exporter();
    if let Some(exporter) = exporter {
        let target = exporter.target().clone();
        let stats = exporter.finish().await;
        experiment.record_otlp(stats.manifest(&target))?;
        summary.otlp = Some((target, stats));
    }
    summary.halt = ctx.stopped_by();
    summary.budget = ctx.budget_spent();
    summary.decisions = ctx.decisions().iter().map(crate::sequential::Decision::line).collect();
    if let Some(h) = &summary.halt {
        experiment.mark_stopped(h.kind, &h.detail)?;
    }
    for (record, harness_ms, replaced) in std::mem::take(&mut *results.lock().expect("results")) {
        summary.ran += 1;
        summary.replaced += usize::from(replaced);
        summary.server_start_ms.extend(record.harness.server_start_ms);
        match &record.validity {
            Validity::Valid => {
                summary.valid += 1;
                // A failed request's time and backoff are not in the record, so they would read
                // as the harness's: such sessions are left out, as the report does.
                if record.failed_turn.is_none() && !record.unparseable_output && record.provider_retries == Some(0) {
                    summary.harness_ms.push(harness_ms);
                }
            }
            Validity::Invalid { reason, .. } => *summary.invalid.entry(*reason).or_default() += 1,
        }
        summary.passed += usize::from(record.passed());
    }
    summary.elapsed_s = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Providers for the plan's models, refusing before anything is written when a key is missing.
fn providers_of(plan: &RunPlan) -> anyhow::Result<BTreeMap<String, Arc<OpenAiCompatible>>> {
    let mut out = BTreeMap::new();
    for m in plan.endpoint_models() {
        let config = m.provider_config().expect("an endpoint model has a provider config");
        let (env, url) = (config.api_key_env.clone(), config.base_url.clone());
        let provider = OpenAiCompatible::new(config).map_err(|e| {
            anyhow::anyhow!(
                "{e}. Nothing was started. Set the key (export {env}=…, or --api-key-env NAME), point --base-url at your \
                 OpenAI-compatible server ({url} now), or use --models oracle"
            )
        })?;
        if provider.auth() == records::Auth::None {
            eprintln!("model {}: ${env} is unset and {url} is loopback: requests carry no key (records say auth: none)", m.spec.id);
        }
        out.insert(m.spec.id.clone(), Arc::new(provider));
    }
    Ok(out)
}

/// The endpoint preflight of every model (none for the oracle, none with `--skip-preflight`).
/// A failing preflight refuses the run: nothing is written, exit 1.
async fn preflight(plan: &RunPlan, providers: &BTreeMap<String, Arc<OpenAiCompatible>>) -> anyhow::Result<Option<serde_json::Value>> {
    if plan.preflight_skipped || providers.is_empty() {
        if plan.preflight_skipped && !providers.is_empty() {
            eprintln!("WARNING — the endpoint preflight is skipped (--skip-preflight); the manifest, every record and the report say so");
        }
        return Ok(None);
    }
    let mut all = serde_json::Map::new();
    for (id, provider) in providers {
        let report = crate::gates::preflight_model(provider).await;
        if let Err(text) = &report.verdict {
            eprintln!("INVALID — {}: model {id}: {text}", crate::gates::Gate::Model);
            eprintln!("no session was started");
            return Err(Reported.into());
        }
        all.insert(id.clone(), report.json);
    }
    Ok(Some(serde_json::Value::Object(all)))
}

/// Where a worker's sessions run.
enum WorkerWorld {
    /// The main backend's world (URL and world), on its cluster.
    Shared(String, Arc<backend::World>, Arc<Cluster>),
    /// A new world served on this cluster, dropped when the worker is done.
    Own(Arc<Cluster>),
}

impl WorkerWorld {
    fn cluster(&self) -> Arc<Cluster> {
        match self {
            Self::Shared(_, _, cluster) | Self::Own(cluster) => cluster.clone(),
        }
    }
}

/// What a worker takes at a time: one session (cold), or every session of one conversation, in
/// its order (warm; a resume runs a conversation whole, so its sessions are pending together).
/// What a worker takes at a time: one session (cold) or one conversation (warm); the first item
/// of a pair also says how many sessions the pair has (a budget admits the whole pair there).
struct WorkItem {
    sessions: Vec<Pending>,
    opens_pair: Option<usize>,
}

fn work_items(plan: &crate::plan::RunPlan, pending: Vec<Pending>) -> Vec<WorkItem> {
    let mut items: Vec<Vec<Pending>> = Vec::new();
    for p in pending {
        let key = |p: &Pending| (p.session.model, p.session.server.name, p.session.task.meta.split, p.session.rep);
        match items.last_mut() {
            Some(last) if plan.session_mode == records::SessionMode::Warm && last.first().map(key) == Some(key(&p)) => last.push(p),
            _ => items.push(vec![p]),
        }
    }
    // The pairs: runs of consecutive items of one pair key (the plan keeps a pair together).
    let keys: Vec<String> = items.iter().map(|i| plan.pair_key(&i[0].session)).collect();
    let mut sizes = vec![None; items.len()];
    let mut start = 0;
    while start < items.len() {
        let end = (start..items.len()).find(|&k| keys[k] != keys[start]).unwrap_or(items.len());
        sizes[start] = Some(items[start..end].iter().map(Vec::len).sum());
        start = end;
    }
    items.into_iter().zip(sizes).map(|(sessions, opens_pair)| WorkItem { sessions, opens_pair }).collect()
}

/// Halts the run when dropped armed: a worker's task unwinding from a panic.
struct HaltIfUnfinished(Option<Arc<RunContext>>);

impl Drop for HaltIfUnfinished {
    fn drop(&mut self) {
        if let Some(ctx) = self.0.take() {
            ctx.halt("infrastructure", "a worker stopped before its sessions ended (a panic: see above)".to_owned());
        }
    }
}

/// Takes sessions until the queue is empty or the run halts.
async fn worker(
    (index, ahead): (u32, bool),
    queue: Arc<Mutex<VecDeque<WorkItem>>>,
    ctx: Arc<RunContext>,
    results: Arc<Mutex<Vec<(SessionRecord, f64, bool)>>>,
    world: WorkerWorld,
    experiment_dir: PathBuf,
) -> anyhow::Result<()> {
    let (cluster, mut own) = (world.cluster(), Vec::new());
    let first = match world {
        WorkerWorld::Shared(url, world, _) => (url, world),
        WorkerWorld::Own(cluster) => {
            let b = LocalBackend::serve(cluster, &format!("{}_w{index}", backend::local::unique_world_name()), WorldSpec::default()).await?;
            let first = (b.url().to_owned(), b.world().clone());
            own.push(b);
            first
        }
    };
    let mut worlds = vec![first];
    // Made ready ahead ([`pipelined`]): while a session runs on one world, the next is reset and
    // its arm started on a second, and the one before is verified on a third.
    if ahead {
        let names = ["b", "c"].map(|k| format!("{}_w{index}{k}", backend::local::unique_world_name()));
        let (b, c) = tokio::try_join!(
            LocalBackend::serve(cluster.clone(), &names[0], WorldSpec::default()),
            LocalBackend::serve(cluster.clone(), &names[1], WorldSpec::default())
        )?;
        for b in [b, c] {
            worlds.push((b.url().to_owned(), b.world().clone()));
            own.push(b);
        }
    }
    let mut interrupt = ctx.interrupt();
    // The next session, made ready on the world after the current one's.
    let mut carried: Option<(Vec<Pending>, crate::session::Ready)> = None;
    // The session before, being verified on the world before the current one's (it ran valid,
    // so its record cannot stop the run); when it started.
    let mut verifying: Option<Verifying<'_>> = None;
    let mut side = 0;
    loop {
        let (item, ready) = match carried.take() {
            // The run halted while it was made ready: it does not start.
            Some((_, ready)) if ctx.halted() => {
                ready.abandon().await;
                break;
            }
            Some((item, ready)) => (item, Some(ready)),
            None => match take(&queue, &ctx).await {
                Some(item) => (item, None),
                None => break,
            },
        };
        if ahead && let [pending] = &item[..] {
            let (url, world) = &worlds[side];
            let (next_url, next_world) = &worlds[(side + 1) % worlds.len()];
            let (started_at, started) = (chrono::Utc::now(), Instant::now());
            let upcoming = take_now(&queue, &ctx);
            let before = verifying.take().map(|v| ((v.item, v.started_at, v.started), v.finishing));
            let (before, finishing) = before.unzip();
            let run = async {
                let ready = match ready {
                    Some(ready) => ready,
                    None => crate::session::prepare(&ctx, pending, url, world).await,
                };
                crate::session::run_agent(&ctx, pending, ready).await
            };
            let next = async {
                match upcoming.as_deref() {
                    Some([next]) => Some(crate::session::prepare(&ctx, next, next_url, next_world).await),
                    _ => None,
                }
            };
            let verify = async {
                match finishing {
                    Some(f) => Some(f.await),
                    None => None,
                }
            };
            let joined = tokio::select! {
                all = async { tokio::join!(run, next, verify) } => Ok(all),
                signal = interrupt.wait_for(Option::is_some) => Err(signal.ok().and_then(|s| *s).unwrap_or("a signal")),
            };
            let (ran, prepared, verified) = match joined {
                Ok(all) => all,
                // Both sessions in flight are recorded as interrupted; the one made ready ahead
                // was stopped with its future, unrecorded: a resume runs it.
                Err(signal) => {
                    if let Some((item, at, t)) = before {
                        let f = crate::session::interrupted(&ctx, &item[0], signal, at, t.elapsed());
                        write(&ctx, &experiment_dir, &item[0], f, &results)?;
                    }
                    let f = crate::session::interrupted(&ctx, pending, signal, started_at, started.elapsed());
                    write(&ctx, &experiment_dir, pending, f, &results)?;
                    continue;
                }
            };
            if let (Some((item, _, _)), Some(finished)) = (before, verified) {
                write(&ctx, &experiment_dir, &item[0], finished, &results)?;
            }
            // Verified while the next session runs if its record cannot stop the run; else now,
            // before the next one starts.
            let valid = ran.valid();
            let item = Arc::new(item);
            let finishing: Finishing<'_> = {
                let (ctx, item) = (&ctx, item.clone());
                Box::pin(async move { crate::session::finish(ctx, &item[0], ran, (url, world)).await })
            };
            if valid {
                verifying = Some(Verifying { item, started_at, started, finishing });
            } else {
                let finished = finishing.await;
                write(&ctx, &experiment_dir, &item[0], finished, &results)?;
            }
            carried = upcoming.zip(prepared);
            side = (side + 1) % worlds.len();
            continue;
        }
        if let Some(ready) = ready {
            ready.abandon().await;
        }
        if let Some(v) = verifying.take() {
            let finished = v.finishing.await;
            write(&ctx, &experiment_dir, &v.item[0], finished, &results)?;
        }
        let (url, world) = &worlds[0];
        if ctx.plan.session_mode == records::SessionMode::Cold {
            for pending in &item {
                let (started_at, started) = (chrono::Utc::now(), Instant::now());
                let finished = tokio::select! {
                    f = crate::session::run_one(&ctx, pending, url, world) => f,
                    signal = interrupt.wait_for(Option::is_some) => {
                        let signal = signal.ok().and_then(|s| *s).unwrap_or("a signal");
                        crate::session::interrupted(&ctx, pending, signal, started_at, started.elapsed())
                    }
                };
                write(&ctx, &experiment_dir, pending, finished, &results)?;
            }
            continue;
        }
        // A warm conversation: its tasks in order. An interrupt or a halt ends it where it is;
        // a resume runs it again from its start.
        let mut warm = crate::session::Warm::new(&ctx, &item);
        for (i, pending) in item.iter().enumerate() {
            if ctx.halted() && !ctx.halted_by_budget() {
                break;
            }
            let (started_at, started) = (chrono::Utc::now(), Instant::now());
            let (finished, stop) = tokio::select! {
                f = warm.task(pending, url, world) => (f, false),
                signal = interrupt.wait_for(Option::is_some) => {
                    let signal = signal.ok().and_then(|s| *s).unwrap_or("a signal");
                    let mut f = crate::session::interrupted(&ctx, pending, signal, started_at, started.elapsed());
                    f.record.conversation = Some(warm.place(i as u32 + 1, 0, None));
                    (f, true)
                }
            };
            write(&ctx, &experiment_dir, pending, finished, &results)?;
            if stop {
                break;
            }
        }
        warm.close().await;
    }
    if let Some(v) = verifying {
        let finished = v.finishing.await;
        write(&ctx, &experiment_dir, &v.item[0], finished, &results)?;
    }
    if let Some((_, ready)) = carried {
        ready.abandon().await;
    }
    for b in own {
        if let Err(e) = b.shutdown().await {
            eprintln!("warning: stopping worker {index}'s world: {e:#}");
        }
    }
    Ok(())
}

/// Whether the workers pipeline their sessions, each over three worlds: while a session runs,
/// the next is made ready and the one before is verified, so that a worker has work for a core at
/// every hop of a session's chain of processes (docs/performance.md). Only where taking the next
/// session early decides nothing differently (cold sessions; no budget to admit it against, no
/// sequential stop to draw it against); where a core would idle otherwise (more workers than
/// cores fill the cores themselves); and where the database has room for three worlds a worker,
/// each pool full.
async fn pipelined(plan: &RunPlan, pool: &backend::PgPool) -> bool {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    if plan.session_mode != records::SessionMode::Cold || plan.sequential.is_some() || !plan.budgets.is_empty() || plan.jobs as usize > cores {
        return false;
    }
    let room: Result<(i64, i64), _> =
        sqlx::query_as("SELECT current_setting('max_connections')::bigint, (SELECT count(*) FROM pg_stat_activity)").fetch_one(pool).await;
    // The workers' worlds, three each (the main world is worker 0's first), every pool full, and
    // the cluster's admin pool; on top of what is in use now.
    let needed = |worlds: i64| worlds * i64::from(backend::world::WORLD_POOL_MAX) + i64::from(backend::world::ADMIN_POOL_MAX);
    match room {
        Ok((max, used)) if used + needed(3 * i64::from(plan.jobs)) <= max => true,
        Ok((max, used)) => {
            eprintln!(
                "note: sessions are not made ready ahead: the database allows {max} connections ({used} in use), too few for three worlds a job ({} each)",
                backend::world::WORLD_POOL_MAX
            );
            false
        }
        Err(_) => false,
    }
}

/// A session's verification and record, under way.
type Finishing<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Finished> + Send + 'a>>;

/// A session that ran, being verified while the next one runs.
struct Verifying<'a> {
    item: Arc<Vec<Pending>>,
    started_at: chrono::DateTime<chrono::Utc>,
    started: Instant,
    finishing: Finishing<'a>,
}

/// The next sessions to run, waiting while a sequential run may not draw them yet; `None` when
/// the queue is empty or the run halts.
async fn take(queue: &Mutex<VecDeque<WorkItem>>, ctx: &RunContext) -> Option<Vec<Pending>> {
    loop {
        let item = {
            let mut queue = queue.lock().expect("queue");
            let head = queue.front()?;
            match head.opens_pair {
                // A sequential run draws no pair of a comparison already decided.
                Some(_) if !ctx.halted() && !ctx.drawing(&head.sessions[0].session) => {
                    queue.pop_front();
                    while queue.front().is_some_and(|h| h.opens_pair.is_none()) {
                        queue.pop_front();
                    }
                    continue;
                }
                // A sequential run opens a pair only within reach of the first one still running
                // (so a decision leaves at most --jobs − 1 pairs drawn past it): wait for it.
                Some(_) if !ctx.halted() && !ctx.within_reach(&head.sessions[0].session) => None,
                // A new pair starts only if the run goes on and every budget could pay for it.
                Some(sessions) => {
                    if ctx.halted() || !ctx.admit_pair(sessions) {
                        return None;
                    }
                    queue.pop_front().map(|w| w.sessions)
                }
                // The rest of an admitted pair: finished after a budget stop too.
                None => {
                    if ctx.halted() && !ctx.halted_by_budget() {
                        return None;
                    }
                    queue.pop_front().map(|w| w.sessions)
                }
            }
        };
        match item {
            Some(item) => return Some(item),
            // Another worker's session ends the wait; a halt or a signal is seen at the next look.
            None => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
        }
    }
}

/// The next session if the run would start it now, for a worker to make ready ahead. Only for
/// runs with no sequential stop and no budget, where [`take`] never waits: the same decision.
fn take_now(queue: &Mutex<VecDeque<WorkItem>>, ctx: &RunContext) -> Option<Vec<Pending>> {
    let mut queue = queue.lock().expect("queue");
    let head = queue.front()?;
    if ctx.halted() {
        return None;
    }
    if let Some(sessions) = head.opens_pair
        && !ctx.admit_pair(sessions)
    {
        return None;
    }
    queue.pop_front().map(|w| w.sessions)
}

/// Writes a finished session (superseding the record it replaces), updates the counters and the
/// circuit breaker, and reports progress.
fn write(
    ctx: &RunContext,
    experiment_dir: &std::path::Path,
    pending: &Pending,
    finished: Finished,
    results: &Mutex<Vec<(SessionRecord, f64, bool)>>,
) -> anyhow::Result<()> {
    let Finished { mut record, transcript, harness_ms, infrastructure } = finished;
    let path = crate::experiment::record_path(experiment_dir, &record.model.id, &record.server, &record.task, record.rep);
    let written = Instant::now();
    let replaced = match &pending.supersede {
        Some(reason) => {
            crate::experiment::supersede(&path, reason)?;
            true
        }
        None => false,
    };
    // Transcript first: a record on disk always has its transcript beside it.
    write_atomically(&path.with_extension("transcript.jsonl"), transcript.as_bytes())?;
    record.harness.write_ms = written.elapsed().as_secs_f64() * 1000.0;
    write_atomically(&path, &serde_json::to_vec_pretty(&record)?)?;
    ctx.recorded(&record, infrastructure);
    results.lock().expect("results").push((record, harness_ms, replaced));
    Ok(())
}

fn reasons(m: &BTreeMap<InvalidReason, usize>) -> String {
    m.iter().map(|(r, n)| format!("{r} {n}")).collect::<Vec<_>>().join(", ")
}

/// Prints the closing summary of a run: counts by validity reason, and what to do next.
pub fn print_summary(s: &RunSummary) {
    let harness = {
        let mut v = s.harness_ms.clone();
        v.sort_by(f64::total_cmp);
        if v.is_empty() { None } else { Some(v[v.len() / 2]) }
    };
    let invalid: usize = s.invalid.values().sum();
    eprintln!(
        "done: {} planned, {} skipped (already recorded), {} run: {} valid, {invalid} invalid{}, {} passed; {:.1}s; harness overhead p50 {} per valid session with no failed request",
        s.planned,
        s.skipped,
        s.ran,
        s.valid,
        if invalid > 0 { format!(" ({})", reasons(&s.invalid)) } else { String::new() },
        s.passed,
        s.elapsed_s,
        harness.map_or("n/a".to_owned(), |h| format!("{h:.1} ms")),
    );
    if s.replaced > 0 {
        eprintln!("{} earlier record(s) replaced; they are kept under superseded/", s.replaced);
    }
    eprintln!("records: {}", s.exp_dir.display());
    if let Some((target, stats)) = &s.otlp {
        let missing = match stats.not_exported() {
            0 => String::new(),
            n => format!("; {n} not exported: {}", stats.last_error.as_deref().unwrap_or("(no error text)")),
        };
        eprintln!(
            "traces: {} of {} session(s) exported to {} ({} spans){missing}",
            stats.exported_sessions,
            stats.sessions,
            target.shown(),
            stats.exported_spans
        );
    }
    if !s.budget.is_empty() {
        eprintln!("budget: {}", s.budget.join("; "));
    }
    for line in &s.decisions {
        eprintln!("sequential: {line}");
    }
    let undrawn = s.planned.saturating_sub(s.skipped + s.ran);
    if !s.decisions.is_empty() && s.halt.is_none() && undrawn > 0 {
        eprintln!("sequential: {undrawn} session(s) up to --max-pairs were not drawn: their comparison was decided");
    }
    let command = crate::invoked::shell_words(&s.command);
    if let Some(h) = &s.halt {
        eprintln!("STOPPED EARLY ({}): {}", h.kind, h.detail);
        eprintln!("resume with: {command}");
    } else if invalid > 0 || !s.left_invalid.is_empty() {
        let again = if command.contains("--retry-invalid") { command.clone() } else { format!("{command} --retry-invalid") };
        eprintln!("rerun the invalid sessions with: {again}");
    }
    if s.halt.is_none() && s.ran + s.skipped > 0 {
        eprintln!("next: {}", crate::invoked::command(&format!("aggregate --result-dir {}", crate::invoked::shell_words(&[s.exp_dir.display().to_string()]))));
    }
}
