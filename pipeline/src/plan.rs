//! The run plan: everything one run will do, typed. Both front doors lower into a [`RunPlan`] —
//! flags (`pipeline --module … --k 3`, [`RunPlan::from_flags`]) and specs (`pipeline run SPEC`,
//! [`RunPlan::from_spec`]) — and nothing downstream sees either: no string round trip, no
//! fields patched in afterwards.
//!
//! A plan knows its sessions ([`RunPlan::sessions`]: every (task, rep) pair with both arms in
//! rotated ABBA order) and the [`Fingerprint`] of each: what must be equal for two sessions to
//! be the same measurement. Resume and `aggregate` compare fingerprints, never names alone.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use records::{Dialect, Fingerprint, MaxTokensParam, ModelSpec, Provider, SessionMode, Temperature, Transport};
use servers::registry::{self, Role, ServerEntry};
use tasks::Task;

use crate::build_info::BuildInfo;
use crate::flags::RunArgs;
use crate::spec::{InputDirs, Spec};

/// The tasks of one module, in the order they run.
#[derive(Debug, Clone)]
pub struct ModuleTasks {
    pub module: String,
    pub tasks: Vec<Arc<Task>>,
}

/// A model endpoint and how to reach it. Header values may be secrets: `Debug` shows names only.
#[derive(Clone)]
pub struct Endpoint {
    pub base_url: String,
    /// Name of the environment variable holding the key (never the key).
    pub api_key_env: String,
    pub request_timeout: Duration,
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key_env", &self.api_key_env)
            .field("request_timeout", &self.request_timeout)
            .field("header_names", &names)
            .finish()
    }
}

/// One model of the plan: its pinned parameters, and its endpoint (none for the oracle).
#[derive(Debug, Clone)]
pub struct ModelPlan {
    pub spec: ModelSpec,
    pub endpoint: Option<Endpoint>,
}

impl ModelPlan {
    pub fn oracle() -> Self {
        Self { spec: ModelSpec::oracle(), endpoint: None }
    }

    pub fn is_oracle(&self) -> bool {
        self.spec.is_oracle()
    }

    /// A model of the plan, resolved: the dialect from the base URL unless given, the limit's
    /// name from the dialect unless given (recorded only when a limit is sent). Settings the
    /// endpoint is documented to ignore are refused here, before anything is written or spent.
    pub fn model(settings: ModelSettings, endpoint: Endpoint) -> anyhow::Result<Self> {
        let dialect = settings.dialect.unwrap_or_else(|| Dialect::of_base_url(&endpoint.base_url));
        let plan = Self {
            spec: ModelSpec {
                id: settings.id,
                provider: Provider::OpenAiCompatible,
                temperature: Some(settings.temperature),
                max_tokens: settings.max_tokens,
                seed: settings.seed,
                dialect: Some(dialect),
                max_tokens_param: settings.max_tokens.map(|_| settings.max_tokens_param.unwrap_or_else(|| dialect.max_tokens_param())),
                reasoning_effort: settings.reasoning_effort,
            },
            endpoint: Some(endpoint),
        };
        if let Some(config) = plan.provider_config() {
            agent::dialect::check(&config).map_err(|e| anyhow::anyhow!("model {}: {e}", plan.spec.id))?;
        }
        Ok(plan)
    }

    /// The provider configuration of a model (none for the oracle).
    pub fn provider_config(&self) -> Option<agent::ProviderConfig> {
        let e = self.endpoint.as_ref()?;
        let mut config = agent::ProviderConfig::new(e.base_url.clone(), e.api_key_env.clone(), self.spec.id.clone());
        if let Some(dialect) = self.spec.dialect {
            config.set_dialect(dialect);
        }
        if let Some(param) = self.spec.max_tokens_param {
            config.max_tokens_param = param;
        }
        config.temperature = self.spec.temperature.and_then(Temperature::sent);
        config.max_tokens = self.spec.max_tokens;
        config.seed = self.spec.seed.map(|s| s as i64);
        config.reasoning_effort = self.spec.reasoning_effort.clone();
        config.request_timeout = e.request_timeout;
        config.extra_headers = e.headers.clone();
        Some(config)
    }
}

/// What a plan pins of one model, before the dialect and the limit's name are resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    pub id: String,
    pub temperature: Temperature,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    pub reasoning_effort: Option<String>,
    pub dialect: Option<Dialect>,
    pub max_tokens_param: Option<MaxTokensParam>,
}

/// One session to run.
#[derive(Debug, Clone)]
pub struct PlannedSession {
    /// Index into [`RunPlan::models`].
    pub model: usize,
    pub task: Arc<Task>,
    pub rep: u32,
    pub server: &'static ServerEntry,
    /// 1 if this arm goes first in its (task, rep) pair, 2 if second.
    pub arm_position: u32,
}

/// What stops a run early besides a quota answer and an interrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breaker {
    /// This many sessions in a row invalid for the same reason stop the run.
    pub max_consecutive_invalid: u32,
}

/// Everything one run will do.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub experiment: String,
    /// `results_dir/experiment`.
    pub exp_dir: PathBuf,
    /// The selected servers, pattern before control within a module.
    pub arms: Vec<&'static ServerEntry>,
    pub tasks: Vec<ModuleTasks>,
    /// Repetitions of every task on every arm (the spec's `reps`, the flag `--k`).
    pub reps: u32,
    pub models: Vec<ModelPlan>,
    pub transport: Transport,
    /// A fresh conversation per task, or one per (model, arm, rep) through every task.
    pub session_mode: SessionMode,
    pub jobs: u32,
    /// `--scale`: one world scale for every task, chosen by the run.
    pub scale_override: Option<u32>,
    /// `--catalogue`: the catalogue size of modules that list one, chosen by the run.
    pub catalogue: Option<u32>,
    /// sha256 of each arm's tool manifest, by server name.
    pub manifests: BTreeMap<String, String>,
    /// The binary that runs the sessions.
    pub build: BuildInfo,
    pub preflight_skipped: bool,
    /// Rerun sessions recorded invalid (the old records are kept as superseded).
    pub retry_invalid: bool,
    pub breaker: Breaker,
    /// The command line, redacted.
    pub command: Vec<String>,
    /// For `pipeline run SPEC`: the gate results the run starts from.
    pub check: Option<serde_json::Value>,
    /// The part of the plan this run is, when it is one shard of several.
    pub shard: Option<crate::shard::Shard>,
    /// Which tasks were selected by split (`--split`, a spec's `split`).
    pub split: crate::held_out::SplitSelection,
    /// The seal the held-out tasks were checked against; `None` when the plan has none.
    pub seal: Option<records::manifest::ManifestSeal>,
    /// Where the sessions are exported as traces (`--otlp-endpoint` or the OTLP variables); none:
    /// no export. Not part of any fingerprint: it changes nothing a session does.
    pub otlp: Option<crate::otlp::Target>,
}

impl RunPlan {
    /// Lowers the ad-hoc form, `pipeline --mcp/--module/--all …`.
    pub async fn from_flags(args: &RunArgs) -> anyhow::Result<Self> {
        let arms = select_servers(args)?;
        let models = models_from_flags(args)?;
        let tasks_dir = args.tasks_dir.clone().unwrap_or_else(tasks::default_tasks_dir);
        let mut tasks = Vec::new();
        for module in modules_of(&arms) {
            let mut ts = tasks::load_module(&tasks_dir, module).with_context(|| format!("loading the tasks of {module}"))?;
            if !args.tasks.is_empty() {
                ts.retain(|t| args.tasks.iter().any(|f| t.id.contains(f.as_str())));
            }
            ts.retain(|t| args.split.unwrap_or_default().admits(t.meta.split));
            tasks.push(ModuleTasks { module: module.to_owned(), tasks: ts.into_iter().map(Arc::new).collect() });
        }
        if tasks.iter().all(|m| m.tasks.is_empty()) {
            bail!(
                "no task matches --tasks {:?} with --split {} (see `{} list`)",
                args.tasks,
                args.split.unwrap_or_default().as_str(),
                crate::invoked::program()
            );
        }
        match args.size[..] {
            [] => {}
            [size] => keep_size(&mut tasks, size)?,
            _ => bail!("--size {:?} names several levels; a series of sizes is a sweep: `{} sweep … --size …`", args.size, crate::invoked::program()),
        }
        let scale_override = match args.scale[..] {
            [] => None,
            [one] => Some(one),
            _ => bail!("--scale {:?} names several levels; a series of levels is a sweep: `{} sweep … --scale …`", args.scale, crate::invoked::program()),
        };
        if let Some(scale) = scale_override {
            override_scale(&mut tasks, scale);
        }
        let catalogue = match args.catalogue[..] {
            [] => None,
            [one] => Some(one),
            _ => bail!(
                "--catalogue {:?} names several sizes; a series of sizes is a sweep: `{} sweep … --catalogue …`",
                args.catalogue,
                crate::invoked::program()
            ),
        };
        let settings = servers::launch::ArmSettings { catalogue };
        servers::registry::check_settings(settings, &modules_of(&arms)).map_err(|e| anyhow::anyhow!(e))?;
        let shard = crate::shard::Shard::resolve(args.shard.as_deref(), args.shard_count, &|k| std::env::var(k).ok()).map_err(|e| anyhow::anyhow!(e))?;
        let experiment = sharded(args.exp_name.clone().unwrap_or_else(|| default_exp_name(args, &arms)), shard);
        check_experiment_name(&experiment).context("--exp-name")?;
        let manifests = manifests_of(&arms, settings).await?;
        check_external_plans(&arms, &tasks, &manifests)?;
        let seal = crate::held_out::require_seal(&tasks_dir, &tasks).await?;
        Ok(Self {
            exp_dir: args.results_dir.join(&experiment),
            experiment,
            manifests: manifests.into_iter().map(|(name, m)| (name, m.sha256())).collect(),
            arms,
            tasks,
            reps: args.k,
            models,
            transport: args.transport,
            session_mode: args.session_mode,
            jobs: args.jobs,
            scale_override,
            catalogue,
            build: BuildInfo::binary(),
            preflight_skipped: args.skip_preflight,
            retry_invalid: args.retry_invalid,
            breaker: Breaker { max_consecutive_invalid: args.max_consecutive_invalid },
            command: crate::redact::command_line(std::env::args()),
            check: None,
            shard,
            split: args.split.unwrap_or_default(),
            seal,
            otlp: crate::otlp::target(args.otlp_endpoint.as_deref())?,
        })
    }

    /// Lowers a checked spec, `pipeline run SPEC`. The spec's frozen task and manifest hashes
    /// must still hold (they are checked again here: an input may change between the check and
    /// the run).
    pub async fn from_spec(spec: &Spec, dirs: &InputDirs, options: &SpecRunOptions) -> anyhow::Result<Self> {
        let arms = crate::spec::arms_of(spec)?;
        let effective: Vec<_> = spec.arms.iter().map(|a| a.effective_model(&spec.model)).collect();
        let first = effective.first().cloned().unwrap_or_else(|| spec.model.clone());
        anyhow::ensure!(
            effective.iter().all(|m| *m == first),
            "the arms use different model settings (declared in treatment {:?}); the run loop runs one model setting for both arms, so this spec can be checked but not run yet",
            spec.treatment
        );
        let model = if first.is_oracle() {
            ModelPlan::oracle()
        } else {
            crate::spec::model_plan(&first, Duration::from_secs(options.request_timeout_secs), options.headers.clone())?
        };
        let (selected, missing) = crate::spec::select_tasks(&dirs.tasks_dir(), &spec.module, &spec.tasks, spec.split)?;
        anyhow::ensure!(missing.is_empty(), "G3 frozen inputs: tasks {missing:?} are in the spec but not in {}", dirs.tasks_dir().display());
        for t in &selected {
            anyhow::ensure!(
                spec.hashes.tasks.get(&t.id).map(|h| &h.sha256) == Some(&t.sha256),
                "G3 frozen inputs: task {} changed between the check and the run; nothing was started",
                t.key()
            );
        }
        let listed = manifests_of(&arms, spec.settings()).await?;
        let modules = [ModuleTasks { module: spec.module.clone(), tasks: selected.iter().cloned().map(Arc::new).collect() }];
        check_external_plans(&arms, &modules, &listed)?;
        let manifests: BTreeMap<String, String> = listed.into_iter().map(|(name, m)| (name, m.sha256())).collect();
        for (name, sha) in &manifests {
            anyhow::ensure!(
                spec.hashes.manifests.get(name).map(|m| &m.sha256) == Some(sha),
                "G3 frozen inputs: the tool manifest of {name} changed between the check and the run; nothing was started"
            );
        }
        for arm in arms.iter().filter_map(|a| a.external()) {
            anyhow::ensure!(
                spec.hashes.arms.get(&arm.name) == Some(&arm.sha256),
                "G3 frozen inputs: the folder of external arm {} ({}) changed between the check and the run; nothing was started",
                arm.name,
                arm.dir.display()
            );
        }
        let seal = crate::held_out::require_seal(&dirs.tasks_dir(), &modules).await?;
        let experiment = sharded(spec.experiment.clone(), options.shard);
        Ok(Self {
            exp_dir: options.results_dir.join(&experiment),
            experiment,
            arms,
            tasks: vec![ModuleTasks { module: spec.module.clone(), tasks: selected.into_iter().map(Arc::new).collect() }],
            reps: spec.reps,
            models: vec![model],
            transport: spec.transport,
            session_mode: spec.session_mode,
            jobs: spec.jobs,
            scale_override: None,
            catalogue: spec.catalogue,
            manifests,
            build: BuildInfo::binary(),
            preflight_skipped: options.skip_preflight,
            retry_invalid: options.retry_invalid,
            breaker: Breaker { max_consecutive_invalid: options.max_consecutive_invalid },
            command: crate::redact::command_line(std::env::args()),
            check: options.check.clone(),
            shard: options.shard,
            split: spec.split,
            seal,
            otlp: crate::otlp::target(options.otlp_endpoint.as_deref())?,
        })
    }

    /// What the run chose about its servers' world, passed to every server it starts.
    pub fn settings(&self) -> servers::launch::ArmSettings {
        servers::launch::ArmSettings { catalogue: self.catalogue }
    }

    /// Every session, in the order the run starts them (see [`Self::conversations`]).
    pub fn sessions(&self) -> Vec<PlannedSession> {
        self.conversations().into_iter().flatten().collect()
    }

    /// What the run hands a worker at a time. Cold: every session alone — per model, per module,
    /// per task, per rep, both arms, the arm that goes first alternating from one pair to the
    /// next (ABBA…), so neither arm always meets a cold provider cache or a warm one. Warm: per
    /// model, module, split and rep, one conversation per arm through every task of the module's
    /// split (dev and held-out tasks never share one), in the
    /// module's task order rotated by the rep (rep 1 starts at the first task, rep 2 at the
    /// second…) and the same for both arms, the arm that goes first alternating from rep to rep.
    /// A session's `arm_position` is its arm's place in its pair either way.
    pub fn conversations(&self) -> Vec<Vec<PlannedSession>> {
        let all = self.all_conversations();
        let Some(shard) = self.shard else { return all };
        // A unit keeps both arms of a pair (cold) or every conversation of a rep (warm) together.
        let keys: Vec<String> = all
            .iter()
            .map(|c| {
                let s = &c[0];
                let model = &self.models[s.model].spec.id;
                match self.session_mode {
                    SessionMode::Cold => format!("{model}\u{0}{}\u{0}{}\u{0}{}", s.task.module, s.task.id, s.rep),
                    SessionMode::Warm => format!("{model}\u{0}{}\u{0}{}\u{0}{}", s.task.module, s.task.meta.split, s.rep),
                }
            })
            .collect();
        let picked: std::collections::BTreeSet<usize> = shard.select(&keys).into_iter().collect();
        all.into_iter().enumerate().filter(|(i, _)| picked.contains(i)).map(|(_, c)| c).collect()
    }

    /// [`Self::conversations`] of the whole plan, whatever the shard.
    fn all_conversations(&self) -> Vec<Vec<PlannedSession>> {
        let mut out = Vec::new();
        for model in 0..self.models.len() {
            let mut pair = 0usize;
            for m in &self.tasks {
                let mut arms: Vec<&'static ServerEntry> = self.arms.iter().copied().filter(|s| s.module == m.module).collect();
                // Patterns first, then controls (a stable sort: the order given within a role).
                arms.sort_by_key(|s| s.role != Role::Pattern);
                let ordered =
                    |pair: usize| -> Vec<&'static ServerEntry> { if pair.is_multiple_of(2) { arms.clone() } else { arms.iter().rev().copied().collect() } };
                match self.session_mode {
                    SessionMode::Cold => {
                        for task in &m.tasks {
                            for rep in 1..=self.reps {
                                let order = ordered(pair);
                                pair += 1;
                                for (i, server) in order.into_iter().enumerate() {
                                    out.push(vec![PlannedSession { model, task: task.clone(), rep, server, arm_position: i as u32 + 1 }]);
                                }
                            }
                        }
                    }
                    SessionMode::Warm => {
                        // Dev and held-out tasks never share a conversation: a held-out task's
                        // context must not carry the dev tasks (nor the reverse).
                        for split in [records::Split::Dev, records::Split::HeldOut] {
                            let of_split: Vec<&Arc<Task>> = m.tasks.iter().filter(|t| t.meta.split == split).collect();
                            if of_split.is_empty() {
                                continue;
                            }
                            for rep in 1..=self.reps {
                                let shift = (rep as usize - 1) % of_split.len();
                                let tasks: Vec<&Arc<Task>> = of_split.iter().copied().cycle().skip(shift).take(of_split.len()).collect();
                                let order = ordered(pair);
                                pair += 1;
                                for (i, server) in order.into_iter().enumerate() {
                                    out.push(
                                        tasks
                                            .iter()
                                            .map(|task| PlannedSession { model, task: (*task).clone(), rep, server, arm_position: i as u32 + 1 })
                                            .collect(),
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// What must be equal for a recorded session to count as this one.
    pub fn fingerprint(&self, s: &PlannedSession) -> Fingerprint {
        let model = &self.models[s.model];
        let oracle = model.is_oracle();
        Fingerprint {
            model_id: model.spec.id.clone(),
            provider: model.spec.provider,
            temperature: model.spec.temperature,
            max_tokens: model.spec.max_tokens,
            seed: model.spec.seed,
            dialect: model.spec.dialect,
            max_tokens_param: model.spec.max_tokens_param,
            reasoning_effort: model.spec.reasoning_effort.clone(),
            base_url: model.endpoint.as_ref().map(|e| records::fingerprint::url_without_userinfo(&e.base_url)),
            transport: self.transport,
            world_seed: s.task.meta.seed,
            world_scale: s.task.meta.scale,
            world_scale_override: self.scale_override,
            catalogue: servers::registry::module(s.server.module).and_then(|m| m.catalogue_size(self.settings())),
            task_sha256: s.task.sha256.clone(),
            turn_cap: s.task.meta.turn_cap,
            manifest_sha256: self.manifests.get(s.server.name).cloned().unwrap_or_default(),
            arm_sha256: s.server.external().map(|a| a.sha256.clone()),
            system_prompt_sha256: (!oracle).then(agent::system_prompt_sha256),
            build_commit: self.build.commit.clone(),
            build_dirty: self.build.dirty,
            // The oracle asks no endpoint anything: there is nothing to preflight.
            preflight_skipped: !oracle && self.preflight_skipped,
            session_mode: (self.session_mode == SessionMode::Warm).then_some(SessionMode::Warm),
        }
    }

    /// Every task of the plan.
    pub fn all_tasks(&self) -> impl Iterator<Item = &Arc<Task>> {
        self.tasks.iter().flat_map(|m| m.tasks.iter())
    }

    /// The models that need an endpoint.
    pub fn endpoint_models(&self) -> impl Iterator<Item = &ModelPlan> {
        self.models.iter().filter(|m| !m.is_oracle())
    }
}

/// What `pipeline run SPEC` adds to a spec: settings of this run, not of the experiment.
#[derive(Debug, Clone)]
pub struct SpecRunOptions {
    pub results_dir: PathBuf,
    pub retry_invalid: bool,
    pub skip_preflight: bool,
    pub max_consecutive_invalid: u32,
    pub request_timeout_secs: u64,
    pub headers: Vec<(String, String)>,
    pub check: Option<serde_json::Value>,
    /// `--shard I/N`, or the engine's variables: the part of the plan this run is.
    pub shard: Option<crate::shard::Shard>,
    /// `--otlp-endpoint`.
    pub otlp_endpoint: Option<String>,
}

/// A shard's experiment is the plan's name with the shard's place (`exp_shard2of3`): every index
/// runs the same command line and writes its own folder.
fn sharded(name: String, shard: Option<crate::shard::Shard>) -> String {
    match shard {
        Some(s) => format!("{name}_shard{}of{}", s.index, s.count),
        None => name,
    }
}

/// An experiment name is one plain folder name.
pub fn check_experiment_name(name: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        !name.is_empty() && !name.contains('/') && !name.contains('\\') && !name.starts_with('.'),
        "the experiment name must be a plain folder name, not {name:?}"
    );
    Ok(())
}

/// The selected servers. `--mcp` names servers one by one; `--module` and `--all` take both arms
/// of modules; clap refuses to combine them.
fn select_servers(args: &RunArgs) -> anyhow::Result<Vec<&'static ServerEntry>> {
    let mut out: Vec<&'static ServerEntry> = Vec::new();
    let mut push = |s: &'static ServerEntry| {
        if !out.iter().any(|o| o.name == s.name) {
            out.push(s);
        }
    };
    // External arms run only when named (`--mcp`): `--all` is the built-in suite.
    if args.all {
        registry::builtin().for_each(&mut push);
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
    check_runnable(&out)?;
    if out.is_empty() {
        bail!("nothing to run: give --mcp SERVER[,SERVER], --module MODULE or --all (see `{} servers`)", crate::invoked::program());
    }
    Ok(out)
}

fn modules_of(arms: &[&'static ServerEntry]) -> Vec<&'static str> {
    let mut modules: Vec<&'static str> = Vec::new();
    for s in arms {
        if !modules.contains(&s.module) {
            modules.push(s.module);
        }
    }
    modules
}

/// `--size`: only the family instances of that size; a size no family has is refused with the
/// sizes there are.
fn keep_size(tasks: &mut [ModuleTasks], size: u32) -> anyhow::Result<()> {
    let mut families: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for m in tasks.iter() {
        for f in m.tasks.iter().filter_map(|t| t.family.as_ref()) {
            families.entry(format!("{}/{}", m.module, f.id)).or_default().push(f.size);
        }
    }
    for m in tasks.iter_mut() {
        m.tasks.retain(|t| t.family.as_ref().is_some_and(|f| f.size == size));
    }
    if tasks.iter().all(|m| m.tasks.is_empty()) {
        if families.is_empty() {
            bail!("--size {size}: the selected tasks hold no task family (a folder with a family.toml); see `{} list`", crate::invoked::program());
        }
        let have: Vec<String> = families.iter().map(|(f, sizes)| format!("{f} has sizes {sizes:?}")).collect();
        bail!("--size {size}: no selected task family has that size ({})", have.join("; "));
    }
    Ok(())
}

fn override_scale(tasks: &mut [ModuleTasks], scale: u32) {
    for m in tasks {
        for t in &mut m.tasks {
            Arc::make_mut(t).meta.scale = scale;
        }
    }
}

fn default_exp_name(args: &RunArgs, arms: &[&ServerEntry]) -> String {
    // A size selects other tasks than the full suite: its own experiment, never a resume of it.
    let size = args.size.first().map_or(String::new(), |n| format!("_size{n}"));
    if args.all {
        return format!("all_k{}{size}", args.k);
    }
    let names: Vec<&str> = arms.iter().map(|s| s.name).collect();
    format!("{}_k{}{size}", names.join("+"), args.k)
}

fn models_from_flags(args: &RunArgs) -> anyhow::Result<Vec<ModelPlan>> {
    if args.models.is_empty() {
        bail!(
            "no model given: pass --models oracle to replay the oracle plans, or --models MODEL_ID for a model-driven run \
             (with the API key in ${} and, for a gateway or a local server, --base-url URL)",
            args.api_key_env
        );
    }
    let mut out: Vec<ModelPlan> = Vec::new();
    for id in &args.models {
        if out.iter().any(|m| &m.spec.id == id) {
            continue;
        }
        if id == "oracle" {
            out.push(ModelPlan::oracle());
            continue;
        }
        let settings = ModelSettings {
            id: id.clone(),
            temperature: args.asking.temperature,
            max_tokens: args.asking.max_tokens,
            seed: args.seed,
            reasoning_effort: args.asking.reasoning_effort.clone(),
            dialect: args.asking.dialect,
            max_tokens_param: args.asking.max_tokens_param,
        };
        let endpoint = Endpoint {
            base_url: args.base_url.clone().unwrap_or_default(),
            api_key_env: args.api_key_env.clone(),
            request_timeout: Duration::from_secs(args.request_timeout_secs),
            headers: args.headers.clone(),
        };
        out.push(ModelPlan::model(settings, endpoint)?);
    }
    Ok(out)
}

async fn manifests_of(arms: &[&'static ServerEntry], settings: servers::launch::ArmSettings) -> anyhow::Result<BTreeMap<String, servers::ToolManifest>> {
    let mut out = BTreeMap::new();
    for s in arms {
        let m = crate::listing::manifest(s, settings).await.with_context(|| format!("listing the tool manifest of {}", s.name))?;
        out.insert(s.name.to_owned(), m);
    }
    Ok(out)
}

/// Every external arm's program can be found (a bare name on `PATH`, a path under its folder).
pub fn check_runnable(arms: &[&'static ServerEntry]) -> anyhow::Result<()> {
    for arm in arms.iter().filter_map(|a| a.external()) {
        arm.program()?;
    }
    Ok(())
}

/// An external arm has its own oracle plan for every task it answers (its ground truth: an arm
/// without one is refused, each missing plan named), and its plans call only what its server
/// offers: its tools, and the two resource functions when it has resources — checked against
/// the manifest the server really lists, before anything runs.
pub fn check_external_plans(arms: &[&'static ServerEntry], tasks: &[ModuleTasks], manifests: &BTreeMap<String, servers::ToolManifest>) -> anyhow::Result<()> {
    for arm in arms.iter().filter_map(|a| a.external()) {
        let Some(manifest) = manifests.get(&arm.name) else { continue };
        let tools = manifest.tool_names();
        let answered: Vec<&Arc<Task>> = tasks.iter().filter(|m| m.module == arm.module).flat_map(|m| m.tasks.iter()).collect();
        let missing: Vec<String> = answered.iter().filter(|t| t.plan_for(&arm.name).is_none()).map(|t| arm.plan_path(&t.id).display().to_string()).collect();
        if !missing.is_empty() {
            anyhow::bail!(
                "external arm {} has no oracle plan (its ground truth, G7) for {} task(s) it answers; write: {} (or, if its tools are a built-in server's, say oracle_from = \"<server>\" in its arm.toml)",
                arm.name,
                missing.len(),
                missing.join(", ")
            );
        }
        for task in answered {
            let Some(plan) = task.plan_for(&arm.name) else { continue };
            let own = arm.plan_path(&task.id);
            let path = task.plan_file(&arm.name).unwrap_or(own.as_path());
            // A borrowed plan's file is a built-in server's: the fix is the arm's own file.
            let fix = if path == own.as_path() {
                String::new()
            } else {
                format!("; borrowed through oracle_from: write {} to give {} its own", own.display(), arm.name)
            };
            for (i, step) in plan.steps.iter().enumerate() {
                if let Some(tool) = step.tool.as_deref().filter(|t| !tools.contains(t)) {
                    anyhow::bail!("{}: steps[{i}].tool: {} does not list a tool {tool:?} (it lists: {}){fix}", path.display(), arm.name, tools.join(", "));
                }
                if (step.read.is_some() || step.list_resources) && !manifest.resources {
                    anyhow::bail!("{}: steps[{i}]: reads a resource, but {} offers no resources{fix}", path.display(), arm.name);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> RunArgs {
        RunArgs::from_flags(args).unwrap()
    }

    #[derive(clap::Parser)]
    struct Freeze {
        #[command(flatten)]
        args: crate::spec::FreezeArgs,
    }

    #[tokio::test]
    async fn pairs_run_both_arms_and_alternate_which_goes_first() {
        let plan = RunPlan::from_flags(&flags(&["--module", "tool_orchestrator", "--models", "oracle", "--k", "3"])).await.unwrap();
        let sessions = plan.sessions();
        let tasks = plan.all_tasks().count();
        assert_eq!(sessions.len(), tasks * 3 * 2);
        let mut pattern_first = 0;
        for (i, pair) in sessions.chunks(2).enumerate() {
            assert_eq!((pair[0].task.id.as_str(), pair[0].rep), (pair[1].task.id.as_str(), pair[1].rep), "a pair is one (task, rep)");
            assert_ne!(pair[0].server.name, pair[1].server.name, "both arms");
            assert_eq!((pair[0].arm_position, pair[1].arm_position), (1, 2));
            let first_is_pattern = pair[0].server.role == Role::Pattern;
            assert_eq!(first_is_pattern, i % 2 == 0, "ABBA: the first arm alternates from pair to pair");
            pattern_first += usize::from(first_is_pattern);
        }
        // 17 tasks × 3 reps is an odd number of pairs: the pattern, first in the first pair, then
        // goes first once more than the control.
        let pairs = sessions.len() / 2;
        assert_eq!(pattern_first, pairs.div_ceil(2), "each arm goes first in half the pairs");
    }

    #[tokio::test]
    async fn a_spec_and_the_same_flags_make_the_same_plan() {
        use clap::Parser;
        let model = [
            "--models",
            "m",
            "--temperature",
            "0.7",
            "--seed",
            "3",
            "--base-url",
            "http://127.0.0.1:1/v1",
            "--k",
            "2",
            "--reasoning-effort",
            "low",
            "--max-tokens",
            "500",
        ];
        let mut freeze_args = vec!["freeze", "--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--exp-name", "same"];
        freeze_args.extend(model);
        let spec = crate::spec::freeze(&Freeze::parse_from(freeze_args).args).await.unwrap();
        let options = SpecRunOptions {
            results_dir: "results".into(),
            retry_invalid: false,
            skip_preflight: false,
            max_consecutive_invalid: 3,
            request_timeout_secs: 120,
            headers: vec![],
            check: None,
            shard: None,
            otlp_endpoint: None,
        };
        let dirs = InputDirs { tasks_dir: None, build_dir: None };
        let from_spec = RunPlan::from_spec(&spec, &dirs, &options).await.unwrap();
        let mut flag_args = vec!["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--exp-name", "same"];
        flag_args.extend(model);
        let from_flags = RunPlan::from_flags(&flags(&flag_args)).await.unwrap();

        assert_eq!(from_spec.experiment, from_flags.experiment);
        assert_eq!(from_spec.exp_dir, from_flags.exp_dir);
        assert_eq!((from_spec.reps, from_spec.jobs, from_spec.transport), (from_flags.reps, from_flags.jobs, from_flags.transport));
        assert_eq!(from_spec.manifests, from_flags.manifests);
        let (a, b) = (from_spec.sessions(), from_flags.sessions());
        assert_eq!(a.len(), 4);
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!((x.server.name, x.task.id.as_str(), x.rep, x.arm_position), (y.server.name, y.task.id.as_str(), y.rep, y.arm_position));
            let (fx, fy) = (from_spec.fingerprint(x), from_flags.fingerprint(y));
            assert_eq!(fx, fy, "{:?}", fx.differences(&fy));
            assert_eq!(fx.temperature, Some(Temperature::Value(0.7)), "the pinned value exactly, not a float32 round trip");
            assert_eq!(
                (fx.dialect, fx.max_tokens_param, fx.reasoning_effort.as_deref()),
                (Some(Dialect::Compatible), Some(MaxTokensParam::MaxTokens), Some("low"))
            );
        }
    }

    #[tokio::test]
    async fn a_catalogue_reaches_its_modules_fingerprints_and_manifests_and_nothing_else() {
        let chosen = RunPlan::from_flags(&flags(&["--module", "tool_search,code_execution", "--models", "oracle", "--catalogue", "400"])).await.unwrap();
        let plain = RunPlan::from_flags(&flags(&["--module", "tool_search,code_execution", "--models", "oracle"])).await.unwrap();
        for s in chosen.sessions() {
            let want = (s.server.module == "tool_search").then_some(400);
            assert_eq!(chosen.fingerprint(&s).catalogue, want, "{}", s.server.name);
        }
        assert!(plain.sessions().iter().filter(|s| s.server.module == "tool_search").all(|s| plain.fingerprint(s).catalogue == Some(100)));
        // The servers list what the run chose: the control's manifest changes, the other module's does not.
        assert_ne!(chosen.manifests["tool_search_wrapper"], plain.manifests["tool_search_wrapper"]);
        assert_eq!(chosen.manifests["code_execution"], plain.manifests["code_execution"]);
        let (a, b) = (&chosen.sessions()[0], &plain.sessions()[0]);
        let d: Vec<String> = chosen.fingerprint(a).differences(&plain.fingerprint(b)).into_iter().map(|d| d.field).collect();
        assert!(d.contains(&"catalogue".to_owned()), "{d:?}");
    }

    #[tokio::test]
    async fn a_catalogue_is_refused_where_no_module_lists_one_or_out_of_range() {
        let e = RunPlan::from_flags(&flags(&["--module", "code_execution", "--models", "oracle", "--catalogue", "100"])).await.unwrap_err().to_string();
        assert!(e.contains("--catalogue 100") && e.contains("tool_search"), "{e}");
        for bad in ["5000", "10"] {
            let e = RunPlan::from_flags(&flags(&["--module", "tool_search", "--models", "oracle", "--catalogue", bad])).await.unwrap_err().to_string();
            assert!(e.contains(&format!("--catalogue {bad}")) && e.contains("25 to 800"), "{e}");
        }
        let e = RunPlan::from_flags(&flags(&["--module", "tool_search", "--models", "oracle", "--catalogue", "25,50"])).await.unwrap_err().to_string();
        assert!(e.contains("sweep"), "{e}");
    }

    #[tokio::test]
    async fn a_scale_override_reaches_every_fingerprint() {
        let plan = RunPlan::from_flags(&flags(&["--mcp", "orchestrator", "--models", "oracle", "--scale", "4"])).await.unwrap();
        assert!(plan.sessions().iter().all(|s| plan.fingerprint(s).world_scale == 4));
        let plain = RunPlan::from_flags(&flags(&["--mcp", "orchestrator", "--models", "oracle"])).await.unwrap();
        let (s, p) = (&plan.sessions()[0], &plain.sessions()[0]);
        let d = plan.fingerprint(s).differences(&plain.fingerprint(p));
        assert_eq!(d.iter().map(|d| d.field.as_str()).collect::<Vec<_>>(), ["world_scale", "world_scale_override"]);
    }
}
