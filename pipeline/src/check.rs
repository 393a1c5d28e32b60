//! The gates of DESIGN §9, run against an experiment spec before anything is spent:
//! `pipeline check SPEC` (gates + manifest, no sessions) and `pipeline run SPEC` (check, then
//! the run loop). A failing gate prints `INVALID — gate failures:` and one line per failure that
//! starts with the gate's name, starts no session and exits 1.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agent::ServerConnection;
use agent::mcp::{LIST_RESOURCES, READ_RESOURCE, Toolbox};
use anyhow::Context;
use backend::WorldSpec;
use backend::local::LocalBackend;
use serde::Serialize;
use servers::registry::{self, ServerEntry};
use servers::transport::Transport;

use crate::spec::{ARM_KEYS, InputDirs, Spec, git_state_at, select_tasks};

pub const G1: &str = "G1 isolation";
pub const G2: &str = "G2 build";
pub const G3: &str = "G3 frozen inputs";
pub const G4: &str = "G4 declared treatment";
pub const G5: &str = "G5 neutrality";
pub const G6: &str = "G6 model";
pub const G7: &str = "G7 ground truth";

/// `pipeline check SPEC` / `pipeline run SPEC`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The experiment spec (TOML), e.g. from `pipeline freeze`.
    pub spec: PathBuf,
    /// Where experiments are written.
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    #[command(flatten)]
    pub dirs: InputDirs,
}

/// One gate's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct GateResult {
    pub gate: &'static str,
    pub passed: bool,
    pub failures: Vec<String>,
}

/// Everything `check` found, as written to `results/<exp>/check.json`.
#[derive(Debug, Serialize)]
pub struct CheckManifest {
    pub experiment: String,
    /// `VALID` or `INVALID`.
    pub status: &'static str,
    pub spec_path: String,
    pub spec_sha256: String,
    pub spec: Spec,
    pub gates: Vec<GateResult>,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    /// Set when the build is dirty and the spec allowed it: the numbers are not from a commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_warning: Option<String>,
    pub command: Vec<String>,
    pub checked_at: chrono::DateTime<chrono::Utc>,
}

impl CheckManifest {
    pub fn valid(&self) -> bool {
        self.gates.iter().all(|g| g.passed)
    }

    /// `INVALID — gate failures:` and one line per failure, each starting with the gate's name.
    pub fn invalid_text(&self) -> String {
        let mut out = String::from("INVALID — gate failures:\n");
        for g in self.gates.iter().filter(|g| !g.passed) {
            for f in &g.failures {
                out.push_str(&format!("{}: {f}\n", g.gate));
            }
        }
        out
    }
}

#[derive(Default)]
struct Failures(BTreeMap<&'static str, Vec<String>>);

impl Failures {
    fn add(&mut self, gate: &'static str, msg: impl Into<String>) {
        self.0.entry(gate).or_default().push(msg.into());
    }
}

/// Runs every gate (none short-circuits the others, so one check shows every problem).
pub async fn check(spec: &Spec, spec_text: &str, spec_path: &Path, dirs: &InputDirs) -> anyhow::Result<CheckManifest> {
    let mut f = Failures::default();
    let tasks_dir = dirs.tasks_dir();

    // The arms: known servers, exactly the module's pattern and control, each once.
    let mut arms: Vec<&'static ServerEntry> = Vec::new();
    match registry::arms(&spec.module) {
        None => f.add(G1, format!("no module named {:?}", spec.module)),
        Some((p, c)) => {
            for arm in &spec.arms {
                match registry::find(&arm.server) {
                    None => f.add(G1, format!("arm {:?} is not a registered server", arm.server)),
                    Some(s) if s.module != spec.module => f.add(G1, format!("arm {} belongs to module {}, not {}", s.name, s.module, spec.module)),
                    Some(s) => arms.push(s),
                }
            }
            let names: Vec<&str> = spec.arms.iter().map(|a| a.server.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            let mut want = vec![p.name, c.name];
            want.sort_unstable();
            if sorted != want {
                f.add(G1, format!("the arms are {names:?}; module {} has exactly {:?} (pattern, control)", spec.module, [p.name, c.name]));
            }
        }
    }

    // G2 build.
    let (git_commit, git_dirty) = git_state_at(dirs.build_dir.as_deref());
    let mut build_warning = None;
    match (&git_commit, git_dirty) {
        (None, _) | (_, None) => f.add(G2, "the build is not a git work tree (no commit to pin)"),
        (Some(c), Some(dirty)) => {
            if *c != spec.hashes.build {
                f.add(G2, format!("the work tree is at commit {c}, the spec froze {}", spec.hashes.build));
            }
            if dirty && !spec.allow_dirty {
                f.add(
                    G2,
                    format!("the work tree has uncommitted changes to tracked files (commit {c} is not what is built); commit them or set allow_dirty = true"),
                );
            } else if dirty {
                build_warning = Some(format!("DIRTY BUILD: tracked files differ from commit {c}; allowed by the spec (allow_dirty = true)"));
            }
        }
    }

    // G3 frozen inputs: tasks, manifests, system prompt.
    let tasks = match select_tasks(&tasks_dir, &spec.module, &spec.tasks) {
        Ok((tasks, missing)) => {
            for id in missing {
                f.add(G3, format!("task {id} is listed in the spec but has no folder under {}", tasks_dir.display()));
            }
            Some(tasks)
        }
        Err(e) => {
            f.add(G3, format!("{e:#}"));
            None
        }
    };
    if let Some(tasks) = &tasks {
        for t in tasks {
            match spec.hashes.tasks.get(&t.id) {
                None => f.add(G3, format!("task {} is not frozen in [hashes.tasks]", t.key())),
                Some(h) => {
                    if h.sha256 != t.sha256 {
                        f.add(G3, format!("task {} changed since freeze: folder sha256 {} ≠ frozen {}", t.key(), t.sha256, h.sha256));
                    }
                    if h.seed != t.meta.seed || h.scale != t.meta.scale {
                        f.add(G3, format!("task {} runs on seed {} scale {}, frozen seed {} scale {}", t.key(), t.meta.seed, t.meta.scale, h.seed, h.scale));
                    }
                }
            }
        }
        for id in spec.hashes.tasks.keys() {
            if !tasks.iter().any(|t| &t.id == id) {
                f.add(G3, format!("frozen task {id} is not among the tasks to run"));
            }
        }
    }
    for arm in &arms {
        match spec.hashes.manifests.get(arm.name) {
            None => f.add(G3, format!("no frozen tool manifest for arm {}", arm.name)),
            Some(frozen) => match servers::ToolManifest::of(arm, "http://127.0.0.1:9").await {
                Ok(m) if m.sha256() != frozen.sha256 => {
                    f.add(G3, format!("tool manifest of {} changed since freeze: {} ≠ frozen {}", arm.name, m.sha256(), frozen.sha256))
                }
                Ok(_) => {}
                Err(e) => f.add(G3, format!("listing the tool manifest of {}: {e:#}", arm.name)),
            },
        }
    }
    for name in spec.hashes.manifests.keys() {
        if !spec.arms.iter().any(|a| &a.server == name) {
            f.add(G3, format!("frozen tool manifest for {name}, which is not an arm"));
        }
    }
    if spec.hashes.system_prompt != agent::system_prompt_sha256() {
        f.add(G3, format!("the system prompt changed since freeze: {} ≠ frozen {}", agent::system_prompt_sha256(), spec.hashes.system_prompt));
    }

    // G4 declared treatment.
    for key in &spec.treatment {
        if !ARM_KEYS.contains(&key.as_str()) {
            f.add(G4, format!("treatment key {key:?} is not an arm key (one of {ARM_KEYS:?})"));
        }
    }
    for key in ARM_KEYS {
        let values: BTreeSet<String> = spec.arms.iter().map(|a| a.key_value(key, &spec.model)).collect();
        if values.len() > 1 && !spec.treatment.iter().any(|t| t == key) {
            let per_arm: Vec<String> = spec.arms.iter().map(|a| format!("{} = {}", a.server, a.key_value(key, &spec.model))).collect();
            f.add(G4, format!("arms differ in {key} ({}), which is not declared in treatment {:?}", per_arm.join(", "), spec.treatment));
        }
    }

    // G6 model: pinned, and reachable without spending (credentials present).
    let mut seen = BTreeSet::new();
    for arm in &spec.arms {
        let m = arm.effective_model(&spec.model);
        if !seen.insert(format!("{m:?}")) {
            continue;
        }
        let who = if spec.arms.len() > 1 && spec.arms.iter().any(|a| a.model.is_some() || a.temperature.is_some() || a.seed.is_some()) {
            format!("model {} (arm {})", m.id, arm.server)
        } else {
            format!("model {}", m.id)
        };
        if m.id.trim().is_empty() {
            f.add(G6, "the model id is empty");
            continue;
        }
        if m.is_oracle() {
            continue;
        }
        if m.base_url.as_deref().is_none_or(|u| u.trim().is_empty()) {
            f.add(G6, format!("{who}: base_url is not pinned"));
        }
        if m.temperature.is_none() {
            f.add(G6, format!("{who}: temperature is not pinned"));
        }
        if m.seed.is_none() {
            f.add(G6, format!("{who}: seed is not pinned"));
        }
        match m.api_key_env.as_deref() {
            None | Some("") => f.add(G6, format!("{who}: api_key_env is not set (name the variable holding the key)")),
            Some(var) => {
                if std::env::var(var).map_or(true, |v| v.trim().is_empty()) {
                    f.add(G6, format!("{who}: no credentials: ${var} is not set"));
                }
            }
        }
    }

    // G1, G5 and G7 need a backend.
    match LocalBackend::start(WorldSpec::default()).await {
        Err(e) => {
            for g in [G1, G5, G7] {
                f.add(g, format!("not run: the backend did not start: {e}"));
            }
        }
        Ok(b) => {
            let serve = vec![std::env::current_exe()?.display().to_string(), "serve".to_owned()];
            for arm in &arms {
                let Some(frozen) = spec.hashes.manifests.get(arm.name) else {
                    f.add(G1, format!("arm {}: no frozen manifest to hold it to", arm.name));
                    continue;
                };
                match offered(arm, spec.transport, b.url(), &serve).await {
                    Err(e) => f.add(G1, format!("arm {}: could not list what the agent is offered: {e:#}", arm.name)),
                    Ok(functions) => {
                        let mut want: Vec<String> = frozen.tools.clone();
                        if frozen.resources {
                            want.extend([LIST_RESOURCES.to_owned(), READ_RESOURCE.to_owned()]);
                        }
                        for name in &functions {
                            if !want.contains(name) {
                                f.add(G1, format!("arm {}: the agent offers {name:?}, which is not in its frozen manifest", arm.name));
                            }
                        }
                        for name in &want {
                            if !functions.contains(name) {
                                f.add(G1, format!("arm {}: its frozen manifest has {name:?}, which the agent does not offer", arm.name));
                            }
                        }
                        let unique: BTreeSet<&String> = functions.iter().collect();
                        if unique.len() != functions.len() {
                            f.add(G1, format!("arm {}: a function is offered twice: {functions:?}", arm.name));
                        }
                    }
                }
            }
            match &tasks {
                None => {
                    f.add(G5, "not run: the tasks could not be loaded");
                    f.add(G7, "not run: the tasks could not be loaded");
                }
                Some(tasks) => {
                    match tasks::gates::banned_terms(&spec.module, b.url()).await {
                        Err(e) => f.add(G5, format!("not run: listing the banned terms: {e:#}")),
                        Ok(banned) => {
                            for t in tasks {
                                for v in tasks::gates::neutrality_violations(t, &banned) {
                                    f.add(G5, format!("task {}: the text contains {:?} ({})", t.key(), v.term, v.source));
                                }
                            }
                        }
                    }
                    for t in tasks {
                        for arm in &arms {
                            if let Err(e) = tasks::gates::ground_truth(t, arm.name, b.world(), b.url(), &serve).await {
                                f.add(G7, format!("task {} via {}: {e}", t.key(), arm.name));
                            }
                        }
                    }
                }
            }
            b.shutdown().await.context("stopping the gate backend")?;
        }
    }

    let gates: Vec<GateResult> = [G1, G2, G3, G4, G5, G6, G7]
        .into_iter()
        .map(|g| {
            let failures = f.0.remove(g).unwrap_or_default();
            GateResult { gate: g, passed: failures.is_empty(), failures }
        })
        .collect();
    let status = if gates.iter().all(|g| g.passed) { "VALID" } else { "INVALID" };
    use sha2::Digest;
    Ok(CheckManifest {
        experiment: spec.experiment.clone(),
        status,
        spec_path: spec_path.display().to_string(),
        spec_sha256: hex::encode(sha2::Sha256::digest(spec_text.as_bytes())),
        spec: spec.clone(),
        gates,
        git_commit,
        git_dirty,
        build_warning,
        command: std::env::args().collect(),
        checked_at: chrono::Utc::now(),
    })
}

/// The function names the agent offers a model for `arm`: its server started as a session would
/// start it, then the agent's own [`Toolbox`].
async fn offered(arm: &ServerEntry, transport: Transport, backend_url: &str, serve: &[String]) -> anyhow::Result<Vec<String>> {
    let (conn, http) = match transport {
        Transport::Stdio => {
            let mut argv = serve.to_vec();
            argv.extend([arm.name.to_owned(), "--transport".into(), "stdio".into(), "--backend-url".into(), backend_url.to_owned()]);
            (ServerConnection::Stdio { argv }, None)
        }
        Transport::Http => {
            let router = arm.launcher.http_router(servers::BackendClient::new(backend_url), Default::default());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let url = format!("http://{}/mcp", listener.local_addr()?);
            let handle = tokio::spawn(async move {
                let _ = axum::serve(listener, router).await;
            });
            (ServerConnection::Http { url }, Some(handle))
        }
    };
    let result = async {
        let client = agent::mcp::connect(&conn).await?;
        let toolbox = Toolbox::from_server(&client).await;
        let _ = client.cancel().await;
        anyhow::Ok(toolbox?.offered.functions)
    }
    .await;
    if let Some(h) = http {
        h.abort();
    }
    result
}

fn exp_dir_of(spec: &Spec, results_dir: &Path) -> anyhow::Result<PathBuf> {
    let exp = &spec.experiment;
    anyhow::ensure!(!exp.is_empty() && !exp.contains('/') && !exp.starts_with('.'), "experiment must be a plain folder name, not {exp:?}");
    Ok(results_dir.join(exp))
}

/// Loads the spec, runs the gates, writes `results/<exp>/check.json`. On INVALID prints the
/// failures and exits 1 (nothing else runs).
async fn check_or_exit(args: &CheckArgs) -> anyhow::Result<(Spec, CheckManifest)> {
    let text = std::fs::read_to_string(&args.spec).with_context(|| format!("reading the spec {}", args.spec.display()))?;
    let spec = Spec::parse(&text).with_context(|| format!("the spec {} is not a valid experiment spec", args.spec.display()))?;
    let manifest = check(&spec, &text, &args.spec, &args.dirs).await?;
    let exp_dir = exp_dir_of(&spec, &args.results_dir)?;
    crate::run::write_atomically(&exp_dir.join("check.json"), &serde_json::to_vec_pretty(&manifest)?)?;
    if let Some(w) = &manifest.build_warning {
        eprintln!("WARNING — {w}");
    }
    if !manifest.valid() {
        eprint!("{}", manifest.invalid_text());
        eprintln!("no session was started; gate results: {}", exp_dir.join("check.json").display());
        std::process::exit(1);
    }
    eprintln!("VALID — all gates passed (G1–G7) for {}: {}", spec.experiment, exp_dir.join("check.json").display());
    Ok((spec, manifest))
}

/// `pipeline check SPEC`: gates and manifest only; spends nothing.
pub async fn check_cmd(args: CheckArgs) -> anyhow::Result<()> {
    check_or_exit(&args).await.map(|_| ())
}

/// `pipeline run SPEC`: check, then the run loop with exactly the spec's settings.
pub async fn run_cmd(args: CheckArgs) -> anyhow::Result<()> {
    let (spec, manifest) = check_or_exit(&args).await?;
    // Resuming is for the same spec only: sessions of another spec (or of a flag-started run)
    // must never be mixed into this experiment's records.
    let previous = exp_dir_of(&spec, &args.results_dir)?.join("manifest.json");
    if let Ok(text) = std::fs::read_to_string(&previous) {
        let before: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let sha = before["check"]["spec_sha256"].as_str();
        anyhow::ensure!(
            sha == Some(manifest.spec_sha256.as_str()),
            "{} holds sessions of {}; a spec run resumes only its own sessions. Nothing was started: give the spec a new experiment name",
            previous.parent().map(|p| p.display().to_string()).unwrap_or_default(),
            sha.map_or("a run started without this spec".to_owned(), |s| format!("another spec (sha256 {s})"))
        );
    }
    let models: BTreeSet<String> = spec.arms.iter().map(|a| format!("{:?}", a.effective_model(&spec.model))).collect();
    anyhow::ensure!(
        models.len() == 1,
        "the arms use different model settings (declared in treatment {:?}); the run loop runs one model setting for both arms, so this spec can be checked but not run yet",
        spec.treatment
    );
    let m = spec.arms.first().map(|a| a.effective_model(&spec.model)).unwrap_or_else(|| spec.model.clone());
    let results_dir = args.results_dir.display().to_string();
    let (reps, jobs) = (spec.reps.to_string(), spec.jobs.to_string());
    let transport = match spec.transport {
        Transport::Stdio => "stdio",
        Transport::Http => "http",
    };
    let mut flags: Vec<String> = [
        "--module",
        &spec.module,
        "--models",
        &m.id,
        "--k",
        &reps,
        "--jobs",
        &jobs,
        "--transport",
        transport,
        "--exp-name",
        &spec.experiment,
        "--results-dir",
        &results_dir,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if !spec.tasks.is_empty() {
        flags.extend(["--tasks".to_owned(), spec.tasks.join(",")]);
    }
    if let Some(u) = &m.base_url {
        flags.extend(["--base-url".to_owned(), u.clone()]);
    }
    if let Some(v) = &m.api_key_env {
        flags.extend(["--api-key-env".to_owned(), v.clone()]);
    }
    if let Some(t) = m.temperature {
        flags.extend(["--temperature".to_owned(), t.to_string()]);
    }
    if let Some(t) = m.max_tokens {
        flags.extend(["--max-tokens".to_owned(), t.to_string()]);
    }
    if let Some(s) = m.seed {
        flags.extend(["--seed".to_owned(), s.to_string()]);
    }
    let refs: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut run_args = crate::run::RunArgs::from_flags(&refs)?;
    run_args.tasks_dir = Some(args.dirs.tasks_dir());
    run_args.exact_tasks = true;
    run_args.build_dir = args.dirs.build_dir.clone();
    run_args.check = Some(serde_json::to_value(&manifest)?);
    run_args.frozen = Some((
        spec.hashes.tasks.iter().map(|(id, h)| (id.clone(), h.sha256.clone())).collect(),
        spec.hashes.manifests.iter().map(|(name, m)| (name.clone(), m.sha256.clone())).collect(),
    ));
    let summary = crate::run::run(run_args).await?;
    crate::run::print_summary(&summary);
    Ok(())
}
