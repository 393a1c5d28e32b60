//! Running experiments: `pipeline --mcp orchestrator --k 3`, `--module M`, `--all`.
//!
//! Each (task, rep) pair runs both selected arms in rotated order (ABBA…), every session on a
//! world reset to the task's seeded state; `--jobs N` runs sessions in parallel, each worker on
//! its own isolated world. One JSON record per session is written atomically (temp file +
//! rename) under `results/<exp>/<model>__<server>/`, with its transcript beside it; a re-run of
//! the same command skips sessions whose record exists, so a crash loses at most the sessions in
//! flight.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use agent::{OpenAiCompatible, ProviderConfig, ServerConnection, SessionOutcome, StopSignal};
use anyhow::{Context, bail};
use backend::local::LocalBackend;
use backend::{Cluster, WorldSpec};
use records::{HarnessTimings, InvalidReason, ModelSpec, SCHEMA_VERSION, SessionRecord, Totals, Validity};
use serde::Serialize;
use servers::registry::{self, Role, ServerEntry};
use servers::transport::Transport;
use tasks::Task;

#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Servers to run, comma-separated (e.g. `orchestrator` or `orchestrator,wrapper`).
    #[arg(long, value_delimiter = ',')]
    pub mcp: Vec<String>,
    /// Pattern modules to run with both arms, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub module: Vec<String>,
    /// Run every module with both arms.
    #[arg(long)]
    pub all: bool,
    /// Models, comma-separated; `oracle` replays the oracle plans. Never pooled in reports.
    #[arg(long, value_delimiter = ',', env = "MCPBENCH_MODELS")]
    pub models: Vec<String>,
    /// Repetitions of every task on every arm.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub k: u32,
    /// Experiment name (the folder under results/). Default: derived from the selection.
    #[arg(long)]
    pub exp_name: Option<String>,
    /// Only tasks whose id contains one of these, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tasks: Vec<String>,
    /// Override every task's world scale.
    #[arg(long)]
    pub scale: Option<u32>,
    /// Sessions run in parallel, each on its own isolated world.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    /// OpenAI-compatible base URL for model runs (OpenAI, a gateway, vLLM, Ollama, llama.cpp…).
    #[arg(long, env = "OPENAI_BASE_URL", default_value = "https://api.openai.com/v1")]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (the key itself is never written).
    #[arg(long, default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    /// Sampling temperature, pinned for the whole experiment.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Most tokens per model response.
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// Sampling seed, where the provider supports one.
    #[arg(long)]
    pub seed: Option<i64>,
    /// Seconds before one model request times out (it is then retried, bounded).
    #[arg(long, default_value_t = 120)]
    pub request_timeout_secs: u64,
    /// Extra HTTP header for the model provider, `NAME=VALUE` (repeatable; values are never written).
    #[arg(long = "header", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// How the agent reaches the servers.
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: Transport,
    /// Where experiments are written.
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// Folder holding the tasks.
    #[arg(long, env = "MCPBENCH_TASKS_DIR")]
    pub tasks_dir: Option<PathBuf>,
    /// Set by `pipeline run SPEC`: `--tasks` are exact ids, not substrings.
    #[arg(skip)]
    pub exact_tasks: bool,
    /// Set by `pipeline run SPEC`: the git work tree whose commit the records carry.
    #[arg(skip)]
    pub build_dir: Option<PathBuf>,
    /// Set by `pipeline run SPEC`: the gate results, copied into the experiment manifest.
    #[arg(skip)]
    pub check: Option<serde_json::Value>,
    /// Set by `pipeline run SPEC`: the frozen sha256 per task id and per server; the run stops
    /// before any session if an input changed between the check and the run.
    #[arg(skip)]
    pub frozen: Option<(std::collections::BTreeMap<String, String>, std::collections::BTreeMap<String, String>)>,
}

impl RunArgs {
    /// Parses run flags as the command line would (for callers inside the binary).
    pub fn from_flags(flags: &[&str]) -> anyhow::Result<Self> {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            run: RunArgs,
        }
        use clap::Parser;
        Ok(Only::try_parse_from(std::iter::once("pipeline").chain(flags.iter().copied()))?.run)
    }
}

fn parse_header(s: &str) -> Result<(String, String), String> {
    let (name, value) = s.split_once('=').ok_or_else(|| format!("--header takes NAME=VALUE, got {s:?}"))?;
    Ok((name.trim().to_owned(), value.to_owned()))
}

/// One session to run.
#[derive(Debug, Clone)]
struct Job {
    task: Arc<Task>,
    rep: u32,
    server: &'static ServerEntry,
    arm_position: u32,
    model: ModelSpec,
}

/// The selected servers and the modules they belong to.
fn select_servers(args: &RunArgs) -> anyhow::Result<Vec<&'static ServerEntry>> {
    let mut out: Vec<&'static ServerEntry> = Vec::new();
    let mut push = |s: &'static ServerEntry| {
        if !out.iter().any(|o| o.name == s.name) {
            out.push(s);
        }
    };
    if args.all {
        registry::servers().for_each(&mut push);
    }
    for m in &args.module {
        let (p, c) = registry::arms(m).with_context(|| format!("no module named {m:?}; modules: {}", registry::modules().join(", ")))?;
        push(p);
        push(c);
    }
    for name in &args.mcp {
        let s = registry::find(name).with_context(|| format!("no server named {name:?}; servers: {}", registry::names().join(", ")))?;
        push(s);
    }
    if out.is_empty() {
        bail!("nothing to run: give --mcp SERVER[,SERVER], --module MODULE or --all (see `pipeline servers`)");
    }
    Ok(out)
}

fn default_exp_name(servers: &[&ServerEntry], args: &RunArgs) -> String {
    if args.all {
        return format!("all_k{}", args.k);
    }
    let names: Vec<&str> = servers.iter().map(|s| s.name).collect();
    format!("{}_k{}", names.join("+"), args.k)
}

/// Model specs and their providers, refusing before anything is spent when a model cannot be
/// reached (no key) or its parameters are not pinned.
fn select_models(args: &RunArgs) -> anyhow::Result<Vec<(ModelSpec, Option<Arc<OpenAiCompatible>>)>> {
    if args.models.is_empty() {
        bail!(
            "no model given: pass --models oracle to replay the oracle plans, or --models MODEL_ID for a model-driven run \
             (with the API key in ${} and, for a gateway or a local server, --base-url URL)",
            args.api_key_env
        );
    }
    let mut out = Vec::new();
    for m in &args.models {
        if m == "oracle" {
            out.push((ModelSpec::oracle(), None));
            continue;
        }
        let base_url = args.base_url.clone().unwrap_or_default();
        let mut config = ProviderConfig::new(base_url.clone(), args.api_key_env.clone(), m.clone());
        config.temperature = Some(args.temperature);
        config.max_tokens = args.max_tokens;
        config.seed = args.seed;
        config.request_timeout = std::time::Duration::from_secs(args.request_timeout_secs);
        config.extra_headers = args.headers.clone();
        let provider = OpenAiCompatible::new(config).map_err(|e| {
            anyhow::anyhow!(
                "{e}. Nothing was started. Set the key (export {}=…, or --api-key-env NAME), point --base-url at your \
                 OpenAI-compatible server ({base_url} now), or use --models oracle",
                args.api_key_env
            )
        })?;
        let spec = ModelSpec {
            id: m.clone(),
            provider: records::Provider::OpenAiCompatible,
            temperature: Some(f64::from(args.temperature)),
            max_tokens: args.max_tokens,
            seed: args.seed.map(|s| s as u64),
        };
        out.push((spec, Some(Arc::new(provider))));
    }
    Ok(out)
}

/// The (task, rep) grid with arms in ABBA order, per model.
fn plan_jobs(models: &[ModelSpec], tasks_by_module: &[(String, Vec<Arc<Task>>)], servers: &[&'static ServerEntry], k: u32) -> Vec<Job> {
    let mut jobs = Vec::new();
    for model in models {
        let mut pair_index = 0usize;
        for (module, tasks) in tasks_by_module {
            let mut arms: Vec<&'static ServerEntry> = servers.iter().copied().filter(|s| &s.module == module).collect();
            arms.sort_by_key(|s| if s.role == Role::Pattern { 0 } else { 1 });
            for task in tasks {
                for rep in 1..=k {
                    // ABBA: alternate which arm goes first from one pair to the next.
                    let order: Vec<&'static ServerEntry> = if pair_index % 2 == 0 { arms.clone() } else { arms.iter().rev().copied().collect() };
                    pair_index += 1;
                    for (i, server) in order.into_iter().enumerate() {
                        jobs.push(Job { task: task.clone(), rep, server, arm_position: i as u32 + 1, model: model.clone() });
                    }
                }
            }
        }
    }
    jobs
}

fn record_path(exp_dir: &Path, job: &Job) -> PathBuf {
    exp_dir.join(format!("{}__{}", sanitize(&job.model.id), job.server.name)).join(format!("{}__rep{}.json", job.task.id, job.rep))
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_' { c } else { '_' }).collect()
}

/// A record that counts as done: everything but a run-stopping quota refusal, which is retried.
fn already_done(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    match serde_json::from_str::<SessionRecord>(&text) {
        Ok(r) => !matches!(r.validity, Validity::Invalid { reason: InvalidReason::QuotaOrSessionLimit, .. }),
        Err(_) => false,
    }
}

/// Writes `bytes` to `path` atomically: a reader sees the old file or the whole new one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.tmp-{}", path.file_name().and_then(|n| n.to_str()).unwrap_or("record"), std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[derive(Debug, Serialize)]
struct ExperimentManifest<'a> {
    schema_version: u32,
    experiment: &'a str,
    command: Vec<String>,
    git_commit: Option<String>,
    git_dirty: Option<bool>,
    models: &'a [ModelSpec],
    servers: Vec<ManifestServer>,
    tasks: Vec<ManifestTask>,
    k: u32,
    jobs: u32,
    transport: Transport,
    created_at: chrono::DateTime<chrono::Utc>,
    /// The spec check (gate results) this run was started from, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<&'a serde_json::Value>,
}

#[derive(Debug, Serialize)]
struct ManifestServer {
    name: String,
    module: String,
    role: Role,
    manifest_sha256: String,
}

#[derive(Debug, Serialize)]
struct ManifestTask {
    key: String,
    sha256: String,
    turn_cap: u32,
    seed: u64,
    scale: u32,
}

/// Counts for the closing summary.
#[derive(Debug, Default)]
pub struct RunSummary {
    pub planned: usize,
    pub skipped: usize,
    pub ran: usize,
    pub valid: usize,
    pub passed: usize,
    pub stopped_early: bool,
    pub exp_dir: PathBuf,
    pub elapsed_s: f64,
    /// Harness time per session (reset + verify + write + session minus the calls themselves).
    pub harness_ms: Vec<f64>,
}

pub async fn run(args: RunArgs) -> anyhow::Result<RunSummary> {
    let servers = select_servers(&args)?;
    let selected = select_models(&args)?;
    let models: Vec<ModelSpec> = selected.iter().map(|(m, _)| m.clone()).collect();
    let providers: std::collections::BTreeMap<String, Arc<OpenAiCompatible>> = selected.into_iter().filter_map(|(m, p)| p.map(|p| (m.id, p))).collect();
    let tasks_dir = args.tasks_dir.clone().unwrap_or_else(tasks::default_tasks_dir);
    let mut modules: Vec<&str> = Vec::new();
    for s in &servers {
        if !modules.contains(&s.module) {
            modules.push(s.module);
        }
    }
    let mut tasks_by_module = Vec::new();
    for m in &modules {
        let mut ts = tasks::load_module(&tasks_dir, m).with_context(|| format!("loading the tasks of {m}"))?;
        if !args.tasks.is_empty() {
            ts.retain(|t| args.tasks.iter().any(|f| if args.exact_tasks { t.id == *f } else { t.id.contains(f.as_str()) }));
        }
        if let Some(scale) = args.scale {
            for t in &mut ts {
                t.meta.scale = scale;
            }
        }
        tasks_by_module.push((m.to_string(), ts.into_iter().map(Arc::new).collect::<Vec<_>>()));
    }
    if let Some((frozen_tasks, _)) = &args.frozen {
        for t in tasks_by_module.iter().flat_map(|(_, ts)| ts.iter()) {
            anyhow::ensure!(
                frozen_tasks.get(&t.id) == Some(&t.sha256),
                "G3 frozen inputs: task {} changed between the check and the run; nothing was started",
                t.key()
            );
        }
    }
    let jobs = plan_jobs(&models, &tasks_by_module, &servers, args.k);
    if jobs.is_empty() {
        bail!("no task matches --tasks {:?}", args.tasks);
    }
    let exp = args.exp_name.clone().unwrap_or_else(|| default_exp_name(&servers, &args));
    anyhow::ensure!(!exp.is_empty() && !exp.contains('/') && !exp.starts_with('.'), "--exp-name must be a plain folder name");
    let exp_dir = args.results_dir.join(&exp);
    let (git_commit, git_dirty) = crate::spec::git_state_at(args.build_dir.as_deref());
    let mut manifests = std::collections::BTreeMap::new();
    for s in &servers {
        manifests.insert(s.name, servers::ToolManifest::of(s, "http://127.0.0.1:9").await?.sha256());
    }
    if let Some((_, frozen_manifests)) = &args.frozen {
        for (name, sha) in &manifests {
            anyhow::ensure!(
                frozen_manifests.get(*name) == Some(sha),
                "G3 frozen inputs: the tool manifest of {name} changed between the check and the run; nothing was started"
            );
        }
    }
    let manifest = ExperimentManifest {
        schema_version: SCHEMA_VERSION,
        experiment: &exp,
        command: std::env::args().collect(),
        git_commit: git_commit.clone(),
        git_dirty,
        models: &models,
        servers: servers
            .iter()
            .map(|s| ManifestServer { name: s.name.into(), module: s.module.into(), role: s.role, manifest_sha256: manifests[s.name].clone() })
            .collect(),
        tasks: tasks_by_module
            .iter()
            .flat_map(|(_, ts)| ts.iter())
            .map(|t| ManifestTask { key: t.key(), sha256: t.sha256.clone(), turn_cap: t.meta.turn_cap, seed: t.meta.seed, scale: t.meta.scale })
            .collect(),
        k: args.k,
        jobs: args.jobs,
        transport: args.transport,
        created_at: chrono::Utc::now(),
        check: args.check.as_ref(),
    };
    write_atomically(&exp_dir.join("manifest.json"), &serde_json::to_vec_pretty(&manifest)?)?;

    let pending: Vec<Job> = jobs.iter().filter(|j| !already_done(&record_path(&exp_dir, j))).cloned().collect();
    let mut summary = RunSummary { planned: jobs.len(), skipped: jobs.len() - pending.len(), exp_dir: exp_dir.clone(), ..Default::default() };
    eprintln!(
        "experiment {exp}: {} sessions planned, {} already recorded, {} to run with {} job(s) → {}",
        summary.planned,
        summary.skipped,
        pending.len(),
        args.jobs,
        exp_dir.display()
    );
    if pending.is_empty() {
        return Ok(summary);
    }
    let started = Instant::now();
    let context = Arc::new(RunContext {
        exp,
        exp_dir,
        git_commit,
        git_dirty,
        manifests: manifests.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        transport: args.transport,
        serve_prefix: vec![std::env::current_exe()?.display().to_string(), "serve".to_owned()],
        total: pending.len(),
        providers,
        stop: StopSignal::new(),
        progress: progress_bar(pending.len() as u64),
        done: AtomicUsize::new(0),
        valid: AtomicUsize::new(0),
        passed: AtomicUsize::new(0),
        started,
    });
    let queue = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::from(pending)));
    let first_spec = queue.lock().expect("queue").front().map(|j| j.task.spec()).unwrap_or_default();
    let main = LocalBackend::start(first_spec).await.context("starting the backend")?;
    let mut workers = Vec::new();
    let results = Arc::new(std::sync::Mutex::new(Vec::<(SessionRecord, f64)>::new()));
    for w in 0..args.jobs {
        let (queue, ctx, results) = (queue.clone(), context.clone(), results.clone());
        // Worker 0 uses the main world; the others get a world of their own on the same cluster.
        let world = if w == 0 { WorkerWorld::Shared(main.url().to_owned(), main.world().clone()) } else { WorkerWorld::Own(main.cluster().clone()) };
        workers.push(tokio::spawn(async move { worker(w, queue, ctx, results, world).await }));
    }
    let mut first_error = None;
    for w in workers {
        if let Err(e) = w.await.map_err(anyhow::Error::from).and_then(|r| r) {
            first_error.get_or_insert(e);
        }
    }
    main.shutdown().await?;
    if let Some(bar) = &context.progress {
        bar.finish();
    }
    summary.stopped_early = context.stop.is_raised();
    if let Some(e) = first_error {
        return Err(e);
    }
    let results = std::mem::take(&mut *results.lock().expect("results"));
    summary.ran = results.len();
    summary.valid = results.iter().filter(|(r, _)| r.validity.is_valid()).count();
    summary.passed = results.iter().filter(|(r, _)| r.verifier.as_ref().is_some_and(|v| v.verdict == tasks::Verdict::Passed)).count();
    summary.harness_ms = results.iter().map(|(_, h)| *h).collect();
    summary.elapsed_s = started.elapsed().as_secs_f64();
    Ok(summary)
}

struct RunContext {
    exp: String,
    exp_dir: PathBuf,
    git_commit: Option<String>,
    git_dirty: Option<bool>,
    manifests: std::collections::BTreeMap<String, String>,
    transport: Transport,
    serve_prefix: Vec<String>,
    total: usize,
    providers: std::collections::BTreeMap<String, Arc<OpenAiCompatible>>,
    /// Raised by a quota or session-limit answer: no further session starts.
    stop: StopSignal,
    /// A progress bar on a terminal; plain log lines otherwise.
    progress: Option<indicatif::ProgressBar>,
    done: AtomicUsize,
    valid: AtomicUsize,
    passed: AtomicUsize,
    started: Instant,
}

/// Where a worker's sessions run.
enum WorkerWorld {
    /// The main backend's world (URL and world).
    Shared(String, Arc<backend::World>),
    /// A new world served on this cluster, dropped when the worker is done.
    Own(Arc<Cluster>),
}

/// Takes jobs until the queue is empty (or the run is stopped).
async fn worker(
    index: u32,
    queue: Arc<std::sync::Mutex<std::collections::VecDeque<Job>>>,
    ctx: Arc<RunContext>,
    results: Arc<std::sync::Mutex<Vec<(SessionRecord, f64)>>>,
    world: WorkerWorld,
) -> anyhow::Result<()> {
    let (own, url, world) = match world {
        WorkerWorld::Shared(url, world) => (None, url, world),
        WorkerWorld::Own(cluster) => {
            let b = LocalBackend::serve(cluster, &format!("{}_w{index}", backend::local::unique_world_name()), WorldSpec::default()).await?;
            let (url, world) = (b.url().to_owned(), b.world().clone());
            (Some(b), url, world)
        }
    };
    loop {
        if ctx.stop.is_raised() {
            break;
        }
        let Some(job) = queue.lock().expect("queue").pop_front() else { break };
        let (mut record, transcript, harness_ms) = run_one(&ctx, &job, &url, &world).await;
        let path = record_path(&ctx.exp_dir, &job);
        let written = Instant::now();
        // Transcript first: a record on disk always has its transcript beside it.
        write_atomically(&path.with_extension("transcript.jsonl"), transcript.as_bytes())?;
        record.harness.write_ms = written.elapsed().as_secs_f64() * 1000.0;
        write_atomically(&path, &serde_json::to_vec_pretty(&record)?)?;
        let done = ctx.done.fetch_add(1, Ordering::Relaxed) + 1;
        let valid = ctx.valid.fetch_add(usize::from(record.validity.is_valid()), Ordering::Relaxed) + usize::from(record.validity.is_valid());
        let passed_now = record.verifier.as_ref().is_some_and(|v| v.verdict == tasks::Verdict::Passed);
        let passed = ctx.passed.fetch_add(usize::from(passed_now), Ordering::Relaxed) + usize::from(passed_now);
        let elapsed = ctx.started.elapsed().as_secs_f64();
        let eta = elapsed / done as f64 * (ctx.total - done) as f64;
        let line = format!(
            "{} {} rep {} on {}: {} · {valid} valid, {} invalid, {passed} passed",
            record.model.id,
            record.task,
            record.rep,
            record.server,
            verdict_word(&record),
            done - valid
        );
        match &ctx.progress {
            Some(bar) => {
                bar.set_message(line);
                bar.inc(1);
            }
            None => eprintln!("[{done}/{}] {line} ({elapsed:.1}s elapsed, ~{eta:.0}s left)", ctx.total),
        }
        results.lock().expect("results").push((record, harness_ms));
    }
    if let Some(b) = own {
        b.shutdown().await?;
    }
    Ok(())
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
        (Validity::Invalid { reason, .. }, _) => format!("INVALID ({reason:?})"),
        (_, Some(v)) => format!("{:?}", v.verdict).to_lowercase(),
        (_, None) => "not scored".into(),
    }
}

/// Resets, runs, verifies. Returns the record, its transcript (JSONL) and the harness's own
/// milliseconds.
async fn run_one(ctx: &RunContext, job: &Job, url: &str, world: &backend::World) -> (SessionRecord, String, f64) {
    let task = &job.task;
    let reset_started = Instant::now();
    let reset = world.reset(task.spec()).await.map_err(|e| e.to_string());
    let baseline = match &reset {
        Ok(()) => task.verifier.baseline(&world.pool()).await,
        Err(e) => Err(e.clone()),
    };
    let reset_ms = reset_started.elapsed().as_secs_f64() * 1000.0;
    let session_started = Instant::now();
    let (outcome, http_server) = match &baseline {
        Ok(_) => match connection(ctx, job.server, url).await {
            Err(e) => (harness_failure(format!("serving {} over HTTP: {e}", job.server.name)), None),
            Ok((conn, http_server)) => {
                let outcome = if job.model.is_oracle() {
                    match task.plan_for(job.server.name) {
                        Some(plan) => agent::oracle::run(&conn, &task.text, plan).await,
                        None => harness_failure(format!("no oracle plan for {}", job.server.name)),
                    }
                } else {
                    match ctx.providers.get(&job.model.id) {
                        Some(provider) => agent::session::run(&conn, &task.text, agent::SYSTEM_PROMPT, task.meta.turn_cap, provider, &ctx.stop).await,
                        None => harness_failure(format!("no provider for model {}", job.model.id)),
                    }
                };
                (outcome, http_server)
            }
        },
        Err(e) => (harness_failure(format!("resetting the world: {e}")), None),
    };
    if let Some(h) = http_server {
        h.abort();
    }
    let session_ms = session_started.elapsed().as_secs_f64() * 1000.0;
    let verify_started = Instant::now();
    let verifier = match (&baseline, outcome.validity.is_valid()) {
        (Ok(baseline), true) => Some(task.verifier.verify(&world.pool(), baseline, outcome.final_answer.as_deref().unwrap_or("")).await),
        _ => None,
    };
    let verify_ms = verify_started.elapsed().as_secs_f64() * 1000.0;
    // The harness's own time: everything but the tool calls and the model's answering requests
    // (a provider's failed attempts and backoff waits are not separated out, so they count here).
    let call_ms: f64 = outcome.tool_calls.iter().map(|c| c.latency_ms).sum();
    let model_ms: f64 = outcome.turns.iter().map(|t| t.latency_ms).sum();
    let harness_ms = reset_ms + verify_ms + (session_ms - call_ms - model_ms).max(0.0);
    let transcript: String = outcome.transcript.iter().map(|e| format!("{e}\n")).collect();
    let record = SessionRecord {
        schema_version: SCHEMA_VERSION,
        experiment: ctx.exp.clone(),
        module: task.module.clone(),
        server: job.server.name.to_owned(),
        role: job.server.role,
        task: task.id.clone(),
        task_sha256: task.sha256.clone(),
        rep: job.rep,
        arm_position: job.arm_position,
        model: job.model.clone(),
        manifest_sha256: ctx.manifests.get(job.server.name).cloned().unwrap_or_default(),
        system_prompt_sha256: (!job.model.is_oracle()).then(agent::system_prompt_sha256),
        git_commit: ctx.git_commit.clone(),
        git_dirty: ctx.git_dirty,
        world_seed: task.meta.seed,
        world_scale: task.meta.scale,
        transport: Some(ctx.transport),
        fingerprint: None,
        fingerprint_sha256: None,
        attempt: Some(1),
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
        harness: HarnessTimings { reset_ms, session_ms, verify_ms, write_ms: 0.0 },
        superseded: None,
    };
    (record, transcript, harness_ms)
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
        transcript: vec![],
    }
}

/// How this session reaches its server: a `pipeline serve` child over stdio, or an in-process
/// streamable HTTP server (returned so it can be stopped).
async fn connection(ctx: &RunContext, server: &ServerEntry, backend_url: &str) -> std::io::Result<(ServerConnection, Option<tokio::task::JoinHandle<()>>)> {
    match ctx.transport {
        Transport::Stdio => {
            let mut argv = ctx.serve_prefix.clone();
            argv.extend([server.name.to_owned(), "--transport".into(), "stdio".into(), "--backend-url".into(), backend_url.to_owned()]);
            Ok((ServerConnection::Stdio { argv }, None))
        }
        Transport::Http => {
            let router = server.launcher.http_router(servers::BackendClient::new(backend_url), Default::default());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let url = format!("http://{}/mcp", listener.local_addr()?);
            let handle = tokio::spawn(async move {
                let _ = axum::serve(listener, router).await;
            });
            Ok((ServerConnection::Http { url }, Some(handle)))
        }
    }
}

/// Prints the closing summary of a run.
pub fn print_summary(s: &RunSummary) {
    let harness = {
        let mut v = s.harness_ms.clone();
        v.sort_by(f64::total_cmp);
        if v.is_empty() { None } else { Some(v[v.len() / 2]) }
    };
    eprintln!(
        "done: {} planned, {} skipped (already recorded), {} run: {} valid, {} passed; {:.1}s; harness overhead p50 {} per session{}",
        s.planned,
        s.skipped,
        s.ran,
        s.valid,
        s.passed,
        s.elapsed_s,
        harness.map_or("n/a".to_owned(), |h| format!("{h:.1} ms")),
        if s.stopped_early { "; STOPPED EARLY" } else { "" }
    );
    eprintln!("records: {}", s.exp_dir.display());
}
