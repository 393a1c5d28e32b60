//! The gates, run against an experiment spec before anything is spent. Each is its own function
//! over the spec and reports failures under its [`Gate`]; [`check`] runs them all (none
//! short-circuits the others, so one check shows every problem). The rules they enforce are
//! written down in `docs/honesty-rules.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use agent::OpenAiCompatible;
use agent::mcp::{LIST_RESOURCES, READ_RESOURCE, Toolbox};
use anyhow::Context;
use backend::WorldSpec;
use backend::local::LocalBackend;
use serde::Serialize;
use servers::registry::{self, Role, ServerEntry};
use tasks::Task;

use crate::build_info::BuildInfo;
use crate::input::spec::{ARM_KEYS, InputDirs, Spec};
use crate::plan::select_tasks;

/// A proof a spec must pass before anything is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Gate {
    /// The model in arm X is offered exactly server X's tool manifest and nothing else.
    Isolation,
    /// The binary runs the frozen commit, built clean (or the spec allows dirty, loudly).
    Build,
    /// Every hashed input matches the spec.
    FrozenInputs,
    /// Arms differ only in the declared treatment key(s).
    DeclaredTreatment,
    /// No task text names a tool or server-specific term of either arm.
    Neutrality,
    /// The model is pinned, credentials are present and the endpoint passes the preflight.
    Model,
    /// Every verifier fails on the seeded state and passes after the oracle plan, on each arm.
    GroundTruth,
}

impl Gate {
    pub const ALL: [Self; 7] = [Self::Isolation, Self::Build, Self::FrozenInputs, Self::DeclaredTreatment, Self::Neutrality, Self::Model, Self::GroundTruth];

    /// The name every failure line starts with.
    pub fn name(self) -> &'static str {
        match self {
            Self::Isolation => "G1 isolation",
            Self::Build => "G2 build",
            Self::FrozenInputs => "G3 frozen inputs",
            Self::DeclaredTreatment => "G4 declared treatment",
            Self::Neutrality => "G5 neutrality",
            Self::Model => "G6 model",
            Self::GroundTruth => "G7 ground truth",
        }
    }
}

impl std::fmt::Display for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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
    /// The work tree the build is checked against.
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    /// The running binary's build.
    pub binary_commit: Option<String>,
    pub binary_dirty: Option<bool>,
    /// Set when the build is dirty and the spec allowed it: the numbers are not from a commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_warning: Option<String>,
    /// The endpoint preflight per model: its probes (requests and answers, no credentials).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preflight: Option<serde_json::Value>,
    pub preflight_skipped: bool,
    pub command: Vec<String>,
    pub checked_at: chrono::DateTime<chrono::Utc>,
    /// When this check took G1's listing, G5 and G7 from an earlier check (`run` after `check`):
    /// that check's time. Only a VALID check of the same spec, on the same clean commit, whose
    /// inputs G3 finds unchanged, is taken; G1's static part, G2, G3, G4 and G6 always run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reused: Option<chrono::DateTime<chrono::Utc>>,
}

/// What a later check may take from an earlier one (`check.json`, read back).
#[derive(Debug, Clone)]
pub struct Earlier {
    pub valid: bool,
    pub spec_sha256: String,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub checked_at: chrono::DateTime<chrono::Utc>,
}

impl Earlier {
    /// The check recorded in `check.json`, when it reads as one.
    pub fn read(path: &Path) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        Some(Self {
            valid: v["status"] == "VALID",
            spec_sha256: v["spec_sha256"].as_str()?.to_owned(),
            git_commit: v["git_commit"].as_str().map(str::to_owned),
            git_dirty: v["git_dirty"].as_bool(),
            checked_at: serde_json::from_value(v["checked_at"].clone()).ok()?,
        })
    }
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
struct Failures(BTreeMap<Gate, Vec<String>>);

impl Failures {
    fn add(&mut self, gate: Gate, msg: impl Into<String>) {
        self.0.entry(gate).or_default().push(msg.into());
    }
}

/// Runs every gate against `spec`. With `earlier`, takes G1's listing, G5 and G7 from it when it
/// may ([`CheckManifest::reused`]):
/// they start every arm and replay every plan, minutes with a slow arm, and depend only on the
/// build and the inputs, which G2 and G3 prove unchanged.
pub async fn check(
    spec: &Spec,
    spec_text: &str,
    spec_path: &Path,
    dirs: &InputDirs,
    skip_preflight: bool,
    earlier: Option<&Earlier>,
) -> anyhow::Result<CheckManifest> {
    let mut f = Failures::default();
    let arms = arms(spec, &mut f);
    let (work, binary, build_warning) = build(spec, dirs, &mut f);
    let tasks = frozen_inputs(spec, dirs, &arms, &mut f).await;
    declared_treatment(spec, &mut f);
    let preflight = model(spec, dirs, skip_preflight, &mut f).await;
    let spec_sha256 = records::sha256_hex(spec_text.as_bytes());
    let clean = |commit: &Option<String>, dirty: Option<bool>| commit.is_some() && dirty == Some(false);
    let reused = earlier
        .filter(|e| {
            e.valid
                && e.spec_sha256 == spec_sha256
                && clean(&e.git_commit, e.git_dirty)
                && e.git_commit == work.commit
                && clean(&work.commit, work.dirty)
                && binary.commit == work.commit
                && binary.dirty == Some(false)
                && [Gate::Isolation, Gate::Build, Gate::FrozenInputs].iter().all(|g| !f.0.contains_key(g))
        })
        .map(|e| e.checked_at);
    if reused.is_none() {
        with_backend(spec, &arms, tasks.as_deref(), &mut f).await?;
    }

    let gates: Vec<GateResult> = Gate::ALL
        .into_iter()
        .map(|g| {
            let failures = f.0.remove(&g).unwrap_or_default();
            GateResult { gate: g.name(), passed: failures.is_empty(), failures }
        })
        .collect();
    let status = if gates.iter().all(|g| g.passed) { "VALID" } else { "INVALID" };
    Ok(CheckManifest {
        experiment: spec.experiment.clone(),
        status,
        spec_path: spec_path.display().to_string(),
        spec_sha256,
        spec: spec.clone(),
        gates,
        git_commit: work.commit,
        git_dirty: work.dirty,
        binary_commit: binary.commit,
        binary_dirty: binary.dirty,
        build_warning,
        preflight,
        preflight_skipped: skip_preflight && !(spec.model.is_oracle() || spec.model.is_simulated()),
        command: crate::redact::command_line(std::env::args()),
        checked_at: chrono::Utc::now(),
        reused,
    })
}

/// G1, the static part: known servers of the module, each once, at least one on each side of
/// its A/B (the module's own pattern and control, or external arms in their roles).
fn arms(spec: &Spec, f: &mut Failures) -> Vec<&'static ServerEntry> {
    let mut arms = Vec::new();
    let Some((p, c)) = registry::arms(&spec.module) else {
        f.add(Gate::Isolation, format!("no module named {:?}", spec.module));
        return arms;
    };
    for arm in &spec.arms {
        match registry::find(&arm.server) {
            None => f.add(Gate::Isolation, format!("arm {:?} is not a registered server", arm.server)),
            Some(s) if s.module != spec.module => f.add(Gate::Isolation, format!("arm {} belongs to module {}, not {}", s.name, s.module, spec.module)),
            Some(s) => arms.push(s),
        }
    }
    let names: Vec<&str> = spec.arms.iter().map(|a| a.server.as_str()).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    let sides: BTreeSet<Role> = arms.iter().map(|a| a.role).collect();
    let has_external = arms.iter().any(|a| a.external().is_some());
    if unique.len() != names.len() || sides.len() < 2 || (!has_external && arms.len() != 2) {
        f.add(
            Gate::Isolation,
            format!(
                "the arms are {names:?}; module {} compares a pattern and a control, each once: {:?}, or external arms in their roles beside them",
                spec.module,
                [p.name, c.name]
            ),
        );
    }
    if let Err(e) = crate::plan::check_runnable(&arms) {
        f.add(Gate::Isolation, format!("{e:#}"));
    }
    arms
}

/// G2: the binary that runs is built from the frozen commit, and so is the work tree the tasks
/// are read from; neither has uncommitted changes unless the spec allows it.
fn build(spec: &Spec, dirs: &InputDirs, f: &mut Failures) -> (BuildInfo, BuildInfo, Option<String>) {
    let work = BuildInfo::work_tree(dirs.build_dir.as_deref());
    let binary = BuildInfo::binary();
    let rebuild = "rebuild (cargo build -p pipeline)";
    match &binary.commit {
        None => f.add(Gate::Build, "this binary was not built inside a git work tree, so its commit cannot be pinned; build it from a clone"),
        Some(b) if *b != spec.hashes.build => f.add(
            Gate::Build,
            format!("the binary was built from commit {b}, the spec froze {}: check out {} and {rebuild}", spec.hashes.build, spec.hashes.build),
        ),
        Some(_) => {}
    }
    match (&work.commit, &binary.commit) {
        (None, _) => f.add(Gate::Build, "the build is not a git work tree (no commit to pin; see --build-dir)"),
        (Some(w), Some(b)) if w != b => f.add(Gate::Build, format!("the work tree is at commit {w}, but the binary was built from {b}: {rebuild}")),
        _ => {}
    }
    let mut warnings = Vec::new();
    let commit = binary.commit.clone().or(work.commit.clone()).unwrap_or_default();
    if work.dirty == Some(true) {
        if spec.allow_dirty {
            warnings.push(format!("DIRTY BUILD: tracked files differ from commit {commit}; allowed by the spec (allow_dirty = true)"));
        } else {
            f.add(
                Gate::Build,
                format!("the work tree has uncommitted changes to tracked files (commit {commit} is not what is built); commit them or set allow_dirty = true"),
            );
        }
    }
    if binary.dirty == Some(true) {
        if spec.allow_dirty {
            warnings.push(format!("DIRTY BINARY: built from uncommitted changes on top of {commit}; allowed by the spec (allow_dirty = true)"));
        } else {
            f.add(
                Gate::Build,
                format!("the binary was built from uncommitted changes on top of {commit}; commit them and {rebuild}, or set allow_dirty = true"),
            );
        }
    }
    let warning = (!warnings.is_empty()).then(|| warnings.join("; "));
    (work, binary, warning)
}

/// G3: tasks, tool manifests and the system prompt hash as frozen. Returns the tasks to run.
async fn frozen_inputs(spec: &Spec, dirs: &InputDirs, arms: &[&'static ServerEntry], f: &mut Failures) -> Option<Vec<Task>> {
    let tasks_dir = dirs.tasks_dir();
    let tasks = match select_tasks(&tasks_dir, &spec.module, &spec.tasks, spec.split) {
        Ok((tasks, missing)) => {
            for id in missing {
                f.add(Gate::FrozenInputs, format!("task {id} is listed in the spec but has no folder under {}", tasks_dir.display()));
            }
            Some(tasks)
        }
        Err(e) => {
            f.add(Gate::FrozenInputs, format!("{e:#}"));
            None
        }
    };
    for t in tasks.iter().flatten() {
        match spec.hashes.tasks.get(&t.id) {
            None => f.add(Gate::FrozenInputs, format!("task {} is not frozen in [hashes.tasks]", t.key())),
            Some(h) => {
                if h.sha256 != t.sha256 {
                    f.add(Gate::FrozenInputs, format!("task {} changed since freeze: folder sha256 {} ≠ frozen {}", t.key(), t.sha256, h.sha256));
                }
                if h.seed != t.meta.seed || h.scale != t.meta.scale {
                    f.add(
                        Gate::FrozenInputs,
                        format!("task {} runs on seed {} scale {}, frozen seed {} scale {}", t.key(), t.meta.seed, t.meta.scale, h.seed, h.scale),
                    );
                }
            }
        }
    }
    if let Some(tasks) = &tasks {
        // Held-out tasks are also held to their seal (docs/held-out.md), whatever the spec froze.
        if let Err(e) = crate::held_out::require_seal(&tasks_dir, tasks.iter()).await {
            f.add(Gate::FrozenInputs, format!("{e:#}"));
        }
        for id in spec.hashes.tasks.keys() {
            if !tasks.iter().any(|t| &t.id == id) {
                f.add(Gate::FrozenInputs, format!("frozen task {id} is not among the tasks to run"));
            }
        }
    }
    for arm in arms {
        match spec.hashes.manifests.get(arm.name) {
            None => f.add(Gate::FrozenInputs, format!("no frozen tool manifest for arm {}", arm.name)),
            Some(frozen) => match crate::listing::manifest(arm, spec.settings()).await {
                Ok(m) if m.sha256() != frozen.sha256 => {
                    f.add(Gate::FrozenInputs, format!("tool manifest of {} changed since freeze: {} ≠ frozen {}", arm.name, m.sha256(), frozen.sha256))
                }
                Ok(_) => {}
                Err(e) => f.add(Gate::FrozenInputs, format!("listing the tool manifest of {}: {e:#}", arm.name)),
            },
        }
    }
    for name in spec.hashes.manifests.keys() {
        if !spec.arms.iter().any(|a| &a.server == name) {
            f.add(Gate::FrozenInputs, format!("frozen tool manifest for {name}, which is not an arm"));
        }
    }
    for arm in arms.iter().filter_map(|a| a.external()) {
        match spec.hashes.arms.get(&arm.name) {
            None => f.add(Gate::FrozenInputs, format!("external arm {} has no frozen folder hash in [hashes.arms]", arm.name)),
            Some(h) if *h != arm.sha256 => f.add(
                Gate::FrozenInputs,
                format!("the folder of external arm {} ({}) changed since freeze: {} ≠ frozen {h}", arm.name, arm.dir.display(), arm.sha256),
            ),
            Some(_) => {}
        }
    }
    for name in spec.hashes.arms.keys() {
        if !arms.iter().any(|a| a.name == name && a.external().is_some()) {
            f.add(Gate::FrozenInputs, format!("frozen folder hash for {name}, which is not an external arm of this spec"));
        }
    }
    if spec.hashes.system_prompt != agent::system_prompt_sha256() {
        f.add(Gate::FrozenInputs, format!("the system prompt changed since freeze: {} ≠ frozen {}", agent::system_prompt_sha256(), spec.hashes.system_prompt));
    }
    tasks
}

/// G4: arms differ only in the declared treatment key(s).
fn declared_treatment(spec: &Spec, f: &mut Failures) {
    for key in &spec.treatment {
        if !ARM_KEYS.contains(&key.as_str()) {
            f.add(Gate::DeclaredTreatment, format!("treatment key {key:?} is not an arm key (one of {ARM_KEYS:?})"));
        }
    }
    for key in ARM_KEYS {
        let values: BTreeSet<String> = spec.arms.iter().map(|a| a.key_value(key, &spec.model)).collect();
        if values.len() > 1 && !spec.treatment.iter().any(|t| t == key) {
            let per_arm: Vec<String> = spec.arms.iter().map(|a| format!("{} = {}", a.server, a.key_value(key, &spec.model))).collect();
            f.add(Gate::DeclaredTreatment, format!("arms differ in {key} ({}), which is not declared in treatment {:?}", per_arm.join(", "), spec.treatment));
        }
    }
}

/// G6: every model pinned, its credentials present, and — unless skipped — its endpoint answers,
/// knows the model and returns native tool calls. Returns the preflight probes per model.
async fn model(spec: &Spec, dirs: &InputDirs, skip_preflight: bool, f: &mut Failures) -> Option<serde_json::Value> {
    let mut seen = BTreeSet::new();
    let mut probes = serde_json::Map::new();
    for arm in &spec.arms {
        let m = arm.effective_model(&spec.model);
        if !seen.insert(format!("{m:?}")) {
            continue;
        }
        let who = if spec.arms.len() > 1
            && spec.arms.iter().any(|a| a.model.is_some() || a.temperature.is_some() || a.seed.is_some() || a.reasoning_effort.is_some())
        {
            format!("model {} (arm {})", m.id, arm.server)
        } else {
            format!("model {}", m.id)
        };
        if m.id.trim().is_empty() {
            f.add(Gate::Model, "the model id is empty");
            continue;
        }
        if m.is_oracle() {
            continue;
        }
        if m.is_simulated() {
            // Like the oracle it asks no endpoint anything; its profile is an input, frozen.
            if spec.session_mode != records::SessionMode::Cold {
                f.add(Gate::Model, format!("{who}: a simulated agent runs cold sessions only for now; drop session_mode = \"warm\""));
            }
            match crate::plan::ModelPlan::simulated_from(&m, &dirs.tasks_dir()) {
                Err(e) => f.add(Gate::Model, format!("{e:#}")),
                Ok(plan) => match (&plan.spec.profile_sha256, &spec.hashes.profile) {
                    (Some(now), Some(frozen)) if now != frozen => {
                        f.add(Gate::FrozenInputs, format!("the simulated agent's profile ({}) changed since freeze: {now} ≠ frozen {frozen}", m.id))
                    }
                    (_, None) => f.add(Gate::FrozenInputs, format!("the simulated agent's profile ({}) is not frozen in [hashes] profile", m.id)),
                    _ => {}
                },
            }
            continue;
        }
        let before = f.0.get(&Gate::Model).map_or(0, Vec::len);
        if m.base_url.as_deref().is_none_or(|u| u.trim().is_empty()) {
            f.add(Gate::Model, format!("{who}: base_url is not pinned"));
        }
        if m.temperature.is_none() {
            f.add(Gate::Model, format!("{who}: temperature is not stated: give a number, or \"provider_default\" to send none"));
        }
        // Anthropic's endpoint ignores a seed (a pinned one is refused): nothing to pin there.
        let dialect = m.dialect.unwrap_or_else(|| records::Dialect::of_base_url(m.base_url.as_deref().unwrap_or_default()));
        if m.seed.is_none() && dialect != records::Dialect::Anthropic {
            f.add(Gate::Model, format!("{who}: seed is not pinned"));
        }
        match m.api_key_env.as_deref() {
            None | Some("") => f.add(Gate::Model, format!("{who}: api_key_env is not set (name the variable holding the key)")),
            Some(var) => {
                // A loopback endpoint (a local server) may run without a key; records say `auth: none`.
                let loopback = m.base_url.as_deref().is_some_and(agent::config::is_loopback_url);
                if !loopback && std::env::var(var).map_or(true, |v| v.trim().is_empty()) {
                    f.add(Gate::Model, format!("{who}: no credentials: ${var} is not set"));
                }
            }
        }
        let pinned = f.0.get(&Gate::Model).map_or(0, Vec::len) == before;
        if skip_preflight || !pinned {
            continue;
        }
        let config = match crate::plan::model_plan(&m, std::time::Duration::from_secs(120), vec![]) {
            Ok(plan) => plan.provider_config(),
            Err(e) => {
                f.add(Gate::Model, format!("{who}: {e:#}"));
                continue;
            }
        };
        let Some(config) = config else { continue };
        match OpenAiCompatible::new(config) {
            Err(e) => f.add(Gate::Model, format!("{who}: {e}")),
            Ok(provider) => {
                let report = preflight_model(&provider).await;
                if let Err(text) = &report.verdict {
                    f.add(Gate::Model, format!("{who}: {text}"));
                }
                probes.insert(m.id.clone(), report.json);
            }
        }
    }
    (!probes.is_empty()).then_some(serde_json::Value::Object(probes))
}

/// The preflight of one endpoint, as a verdict and what goes into check.json and the manifest.
pub struct PreflightReport {
    /// `Err` holds the text a user acts on: the check that failed, the provider's words, a hint.
    pub verdict: Result<(), String>,
    pub json: serde_json::Value,
}

pub async fn preflight_model(provider: &OpenAiCompatible) -> PreflightReport {
    let p = agent::preflight::preflight(provider).await;
    let json = serde_json::to_value(&p).unwrap_or_default();
    // One line per failure, so every line of a gate report starts with the gate's name.
    let verdict = if p.passed { Ok(()) } else { Err(p.summary().replace('\n', " — ")) };
    PreflightReport { verdict, json }
}

/// G1 (what the agent is really offered), G5 and G7: they need a backend.
async fn with_backend(spec: &Spec, arms: &[&'static ServerEntry], tasks: Option<&[Task]>, f: &mut Failures) -> anyhow::Result<()> {
    let b = match LocalBackend::start(WorldSpec::default()).await {
        Ok(b) => b,
        Err(e) => {
            for g in [Gate::Isolation, Gate::Neutrality, Gate::GroundTruth] {
                f.add(g, format!("not run: the backend did not start: {e}"));
            }
            return Ok(());
        }
    };
    let serve = crate::arm::serve_prefix()?;
    for arm in arms {
        isolation(spec, arm, b.url(), &serve, f).await;
    }
    match tasks {
        None => {
            f.add(Gate::Neutrality, "not run: the tasks could not be loaded");
            f.add(Gate::GroundTruth, "not run: the tasks could not be loaded");
        }
        Some(tasks) => {
            match tasks::gates::banned_terms(&spec.module, arms, b.url()).await {
                Err(e) => f.add(Gate::Neutrality, format!("not run: listing the banned terms: {e:#}")),
                Ok(banned) => {
                    for t in tasks {
                        for v in tasks::gates::neutrality_violations(t, &banned) {
                            f.add(Gate::Neutrality, format!("task {}: the text contains {:?} ({})", t.key(), v.term, v.source));
                        }
                    }
                }
            }
            for t in tasks {
                for arm in arms {
                    if let Err(e) = tasks::gates::ground_truth_with(
                        t,
                        arm,
                        b.world(),
                        b.url(),
                        &serve,
                        tasks::gates::Under { settings: spec.settings(), transport: Some(spec.transport), ..Default::default() },
                    )
                    .await
                    {
                        f.add(Gate::GroundTruth, format!("task {} via {}: {e}", t.key(), arm.name));
                    }
                }
            }
        }
    }
    b.shutdown().await.context("stopping the gate backend")
}

/// G7 for a run's own tasks and arms, as the run will see them (with its `--scale`): a model run
/// proves, before spending, that every task is solvable through each arm of its module and that
/// its verifier does not pass on the untouched world. A task written for one world scale can fail
/// this at another. Returns one line per failure, and the footprint each replay left (keyed as
/// [`crate::context::footprint_key`]), which the run's collateral count starts from.
pub async fn ground_truth_of(plan: &crate::plan::RunPlan) -> anyhow::Result<(Vec<String>, Vec<(String, Vec<backend::world::RowChange>)>)> {
    let b = LocalBackend::start(WorldSpec::default()).await.context("starting the backend for the ground-truth check")?;
    let serve = crate::arm::serve_prefix()?;
    let mut failures = Vec::new();
    let mut footprints = Vec::new();
    for m in &plan.tasks {
        for t in &m.tasks {
            for arm in plan.arms.iter().filter(|a| a.module == m.module) {
                match tasks::gates::ground_truth_with(t, arm, b.world(), b.url(), &serve, plan.under()).await {
                    Ok(g) => footprints.push((crate::context::footprint_key(t, arm.name), g.footprint)),
                    Err(e) => {
                        let catalogue = servers::registry::module(arm.module).and_then(|m| m.catalogue_size(plan.settings()));
                        let at = catalogue.map(|n| format!(" with a catalogue of {n}")).unwrap_or_default();
                        failures.push(format!("task {} at world scale {}{at} via {}: {e}", t.key(), t.meta.scale, arm.name));
                    }
                }
            }
        }
    }
    b.shutdown().await.context("stopping the ground-truth backend")?;
    Ok((failures, footprints))
}

/// G5 for a run from flags, as `check` runs it for a spec: every task's text against the tool,
/// resource and template names of every arm its module has in the run (the module's own pair
/// always, external arms too), listed against `backend_url` — the run's own world. Returns one
/// line per violation.
pub async fn neutrality_of(plan: &crate::plan::RunPlan, backend_url: &str) -> anyhow::Result<Vec<String>> {
    let mut failures = Vec::new();
    for m in &plan.tasks {
        let arms: Vec<&ServerEntry> = plan.arms.iter().copied().filter(|a| a.module == m.module).collect();
        let banned = tasks::gates::banned_terms(&m.module, &arms, backend_url)
            .await
            .with_context(|| format!("listing the names the tasks of {} may not use", m.module))?;
        for t in &m.tasks {
            for v in tasks::gates::neutrality_violations(t, &banned) {
                failures.push(format!("task {}: the text contains {:?} ({})", t.key(), v.term, v.source));
            }
        }
    }
    Ok(failures)
}

/// G1: the functions the agent offers for `arm`, its server started as a session would start
/// it, are exactly its frozen manifest's tools (plus the generic resource functions).
async fn isolation(spec: &Spec, arm: &ServerEntry, backend_url: &str, serve: &[String], f: &mut Failures) {
    let Some(frozen) = spec.hashes.manifests.get(arm.name) else {
        f.add(Gate::Isolation, format!("arm {}: no frozen manifest to hold it to", arm.name));
        return;
    };
    // The distractors the client lists beside the arm are part of what is offered: exactly the
    // spec's draw, and none sharing a name with the arm's own (a name offered twice, below).
    let distractors = match servers::distractors::Distractors::draw(spec.distractors.unwrap_or(0)) {
        Ok(d) => d,
        Err(e) => {
            f.add(Gate::Isolation, format!("arm {}: {e}", arm.name));
            return;
        }
    };
    let functions = match offered(arm, spec.transport, backend_url, serve, spec.settings(), &distractors).await {
        Ok(functions) => functions,
        Err(e) => {
            f.add(Gate::Isolation, format!("arm {}: could not list what the agent is offered: {e:#}", arm.name));
            return;
        }
    };
    let mut want: Vec<String> = frozen.tools.clone();
    if frozen.resources {
        want.extend([LIST_RESOURCES.to_owned(), READ_RESOURCE.to_owned()]);
    }
    want.extend(distractors.names().map(str::to_owned));
    for name in &functions {
        if !want.contains(name) {
            f.add(Gate::Isolation, format!("arm {}: the agent offers {name:?}, which is not in its frozen manifest", arm.name));
        }
    }
    for name in &want {
        if !functions.contains(name) {
            f.add(Gate::Isolation, format!("arm {}: its frozen manifest has {name:?}, which the agent does not offer", arm.name));
        }
    }
    let unique: BTreeSet<&String> = functions.iter().collect();
    if unique.len() != functions.len() {
        f.add(Gate::Isolation, format!("arm {}: a function is offered twice: {functions:?}", arm.name));
    }
}

/// The function names the agent offers a model for `arm`.
async fn offered(
    arm: &ServerEntry,
    transport: records::Transport,
    backend_url: &str,
    serve: &[String],
    settings: servers::launch::ArmSettings,
    distractors: &servers::distractors::Distractors,
) -> anyhow::Result<Vec<String>> {
    let (conn, guard) = crate::arm::connect(arm, (transport, Default::default()), backend_url, serve, settings).await?;
    let result = async {
        let (client, _server) = agent::mcp::connect(&conn).await?;
        let toolbox = Toolbox::from_server(&client).await.map(|t| t.beside(distractors));
        let _ = client.cancel().await;
        anyhow::Ok(toolbox?.offered.functions)
    }
    .await;
    guard.stop().await;
    result
}
