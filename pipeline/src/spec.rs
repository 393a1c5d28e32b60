//! Experiment specs (`docs/honesty-rules.md` §2): a TOML file that pins the model and its parameters, the module
//! and tasks, the reps, the arms, the declared treatment key(s), and the sha256 of every input.
//! `pipeline freeze` writes one with the current hashes; `pipeline check SPEC` runs the gates
//! against it (see `check.rs`); `pipeline run SPEC` checks, then runs.
//!
//! ```toml
//! experiment = "tool_orchestrator_oracle_k1"
//! module = "tool_orchestrator"
//! tasks = ["lena_goes_on_leave"]      # optional; absent = every task of the module
//! reps = 1
//! jobs = 1
//! transport = "stdio"
//! session_mode = "warm"               # optional; absent = cold (a fresh conversation per task)
//! split = "all"                       # dev | held_out | all; absent = dev (specs frozen before held-out tasks existed)
//! treatment = ["server"]              # the keys in which arms may differ
//! allow_dirty = false                 # true: a dirty build passes G2, recorded loudly
//!
//! [model]
//! id = "oracle"                       # or a model id, with base_url, api_key_env, temperature (a number or
//!                                     # "provider_default"), seed, max_tokens, max_tokens_param, reasoning_effort, dialect
//!
//! [[arms]]
//! server = "orchestrator"             # optional per-arm overrides: model, base_url, api_key_env, temperature, max_tokens, seed, reasoning_effort
//!
//! [[arms]]
//! server = "wrapper"
//!
//! [hashes]
//! build = "<git commit>"
//! system_prompt = "<sha256>"
//!
//! [hashes.tasks.lena_goes_on_leave]
//! sha256 = "<sha256 of the task folder>"
//! seed = 42
//! scale = 1
//!
//! [hashes.manifests.orchestrator]
//! sha256 = "<sha256 of the tool manifest>"
//! tools = ["…"]
//! resources = false
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use records::{Dialect, MaxTokensParam, Temperature};
use serde::{Deserialize, Serialize};
use servers::registry;
use servers::transport::Transport;

/// One experiment, as declared.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The folder under the results directory.
    pub experiment: String,
    pub module: String,
    /// Task ids (exact); absent or empty = every task of the module.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
    /// Repetitions of every task on every arm (k).
    pub reps: u32,
    pub jobs: u32,
    pub transport: Transport,
    /// `warm`: one conversation per model, arm and rep through every task; absent, cold.
    #[serde(default, skip_serializing_if = "is_cold")]
    pub session_mode: records::SessionMode,
    /// Which tasks by split; absent = `dev`, what a spec meant before held-out tasks existed.
    /// `freeze` always writes it.
    #[serde(default = "legacy_split")]
    pub split: crate::held_out::SplitSelection,
    /// For a module whose servers list a tool catalogue (tool_search): its size; absent, the
    /// module's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalogue: Option<u32>,
    /// The keys in which arms may differ (`server`, and any per-arm model key).
    pub treatment: Vec<String>,
    /// A dirty work tree passes G2 (the manifest then says so, loudly).
    #[serde(default)]
    pub allow_dirty: bool,
    pub model: ModelParams,
    pub arms: Vec<Arm>,
    pub hashes: Hashes,
}

fn legacy_split() -> crate::held_out::SplitSelection {
    crate::held_out::SplitSelection::Dev
}

fn is_cold(m: &records::SessionMode) -> bool {
    *m == records::SessionMode::Cold
}

/// The model and its parameters, for every arm unless an arm overrides one.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelParams {
    /// A model id, or `oracle` (replays the oracle plans; no provider, no parameters).
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (never the key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// A number, or `"provider_default"` (nothing sent). A model spec must state one (G6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Temperature>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Sent with every request when set; absent, none is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Whose rules the endpoint follows; absent, the base URL's host decides (`freeze` writes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<Dialect>,
    /// The name `max_tokens` goes out under; absent, the dialect's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_param: Option<MaxTokensParam>,
}

impl ModelParams {
    pub fn is_oracle(&self) -> bool {
        self.id == "oracle"
    }
}

/// One arm: a server, and optional overrides of the model parameters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Arm {
    pub server: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Temperature>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
}

/// The keys an arm can set, in the order G4 reports them.
pub const ARM_KEYS: &[&str] = &["server", "model", "base_url", "api_key_env", "temperature", "max_tokens", "seed", "reasoning_effort"];

impl Arm {
    /// The model this arm really uses: the experiment's, with this arm's overrides.
    pub fn effective_model(&self, base: &ModelParams) -> ModelParams {
        ModelParams {
            id: self.model.clone().unwrap_or_else(|| base.id.clone()),
            base_url: self.base_url.clone().or_else(|| base.base_url.clone()),
            api_key_env: self.api_key_env.clone().or_else(|| base.api_key_env.clone()),
            temperature: self.temperature.or(base.temperature),
            max_tokens: self.max_tokens.or(base.max_tokens),
            seed: self.seed.or(base.seed),
            reasoning_effort: self.reasoning_effort.clone().or_else(|| base.reasoning_effort.clone()),
            dialect: base.dialect,
            max_tokens_param: base.max_tokens_param,
        }
    }

    /// The value of `key` for this arm (effective), as comparable text.
    pub fn key_value(&self, key: &str, base: &ModelParams) -> String {
        let m = self.effective_model(base);
        let show = |v: Option<String>| v.unwrap_or_else(|| "unset".into());
        match key {
            "server" => self.server.clone(),
            "model" => m.id,
            "base_url" => show(m.base_url),
            "api_key_env" => show(m.api_key_env),
            "temperature" => show(m.temperature.map(|t| t.to_string())),
            "max_tokens" => show(m.max_tokens.map(|t| t.to_string())),
            "seed" => show(m.seed.map(|t| t.to_string())),
            "reasoning_effort" => show(m.reasoning_effort),
            _ => "unknown key".into(),
        }
    }
}

/// The sha256 of every input, as frozen.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Hashes {
    /// The git commit of the build.
    pub build: String,
    /// sha256 of the agent's system prompt.
    pub system_prompt: String,
    /// Per task id: the folder hash and the world it runs on.
    pub tasks: BTreeMap<String, TaskHash>,
    /// Per server name: the tool manifest's hash and what it offers.
    pub manifests: BTreeMap<String, ArmManifest>,
    /// Per external arm: the sha256 of its folder (its server's files and oracle plans).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arms: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TaskHash {
    /// sha256 over every file of the task folder (names and bytes).
    pub sha256: String,
    pub seed: u64,
    pub scale: u32,
}

/// An arm's frozen tool manifest: its hash, and the tool names G1 holds the agent to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ArmManifest {
    pub sha256: String,
    /// The tool names the manifest lists; the agent must offer exactly these…
    pub tools: Vec<String>,
    /// …plus its two generic resource functions iff this is true.
    pub resources: bool,
}

impl Spec {
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let spec: Self = toml::from_str(text).map_err(|e| anyhow::anyhow!("{}", e.to_string().trim_end()))?;
        spec.validate()?;
        Ok(spec)
    }

    /// Value checks the types cannot express; each error names its field.
    fn validate(&self) -> anyhow::Result<()> {
        let e = &self.experiment;
        anyhow::ensure!(!e.is_empty() && !e.contains('/') && !e.contains('\\') && !e.starts_with('.'), "experiment: must be a plain folder name, not {e:?}");
        anyhow::ensure!((1..=1000).contains(&self.reps), "reps: must be 1 to 1000, not {}", self.reps);
        anyhow::ensure!((1..=64).contains(&self.jobs), "jobs: must be 1 to 64, not {}", self.jobs);
        anyhow::ensure!(!self.model.id.trim().is_empty(), "model.id: must not be empty");
        anyhow::ensure!(self.arms.len() >= 2, "arms: an experiment compares two arms, the spec has {}", self.arms.len());
        servers::registry::check_settings(self.settings(), &[self.module.as_str()]).map_err(|e| anyhow::anyhow!("catalogue: {e}"))?;
        Ok(())
    }

    /// What the spec chose about its servers' world, passed to every server its run starts.
    pub fn settings(&self) -> servers::launch::ArmSettings {
        servers::launch::ArmSettings { catalogue: self.catalogue }
    }

    pub fn to_toml(&self) -> anyhow::Result<String> {
        Ok(toml::to_string(self)?)
    }
}

/// Where inputs live: shared by `freeze`, `check` and `run`.
#[derive(Debug, Clone, clap::Args)]
pub struct InputDirs {
    /// Folder holding the tasks.
    #[arg(long, env = "MCPBENCH_TASKS_DIR")]
    pub tasks_dir: Option<PathBuf>,
    /// The git work tree the build is checked against (G2). Default: the current directory.
    #[arg(long, env = "MCPBENCH_BUILD_DIR")]
    pub build_dir: Option<PathBuf>,
}

impl InputDirs {
    pub fn tasks_dir(&self) -> PathBuf {
        self.tasks_dir.clone().unwrap_or_else(tasks::default_tasks_dir)
    }
}

/// `pipeline freeze`.
#[derive(Debug, clap::Args)]
pub struct FreezeArgs {
    /// The pattern module (both its arms).
    #[arg(long)]
    pub module: String,
    /// The model id, or `oracle`.
    #[arg(long)]
    pub models: String,
    /// Repetitions of every task on every arm.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub k: u32,
    /// Write the spec here (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Only these task ids (exact), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tasks: Vec<String>,
    /// Experiment name. Default: `<module>_<model>_k<k>`.
    #[arg(long)]
    pub exp_name: Option<String>,
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: Transport,
    /// `cold` (a fresh conversation per task) or `warm` (one conversation per arm and rep).
    #[arg(long, value_enum, default_value = "cold")]
    pub session_mode: records::SessionMode,
    /// Which tasks by split: `dev`, `held_out` or `all` (written into the spec).
    #[arg(long, value_enum, default_value = "all")]
    pub split: crate::held_out::SplitSelection,
    /// For a module whose servers list a tool catalogue (tool_search): its size (default: the
    /// module's).
    #[arg(long)]
    pub catalogue: Option<u32>,
    /// OpenAI-compatible base URL (model runs only).
    #[arg(long, env = "OPENAI_BASE_URL")]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (model runs only).
    #[arg(long, default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    /// Model runs only; `--temperature default` is written `"provider_default"`, the dialect
    /// resolved.
    #[command(flatten)]
    pub asking: crate::flags::AskingFlags,
    #[arg(long)]
    pub seed: Option<i64>,
    /// Let a dirty build pass G2 (recorded loudly).
    #[arg(long)]
    pub allow_dirty: bool,
    /// The arms, comma-separated, when not the module's own pattern and control: e.g. an
    /// external arm beside them (`domain_adapter,domain_adapter_py,domain_wrapper`).
    #[arg(long, value_delimiter = ',')]
    pub mcp: Vec<String>,
    #[command(flatten)]
    pub dirs: InputDirs,
}

/// The servers of a spec's arms, each a server of the spec's module (built-in or an external
/// arm registered from the arms folder).
pub fn arms_of(spec: &Spec) -> anyhow::Result<Vec<&'static servers::ServerEntry>> {
    let mut out = Vec::new();
    for a in &spec.arms {
        let s = registry::find(&a.server).with_context(|| {
            format!("arms: no server named {:?}; servers: {} (external arms are read from --arms-dir)", a.server, registry::names().join(", "))
        })?;
        anyhow::ensure!(s.module == spec.module, "arms: {} answers the tasks of {}, not of {}", s.name, s.module, spec.module);
        out.push(s);
    }
    crate::plan::check_runnable(&out)?;
    Ok(out)
}

/// The model plan of a spec's (effective) model parameters: what `run SPEC` runs and G6 probes.
pub fn model_plan(m: &ModelParams, request_timeout: std::time::Duration, headers: Vec<(String, String)>) -> anyhow::Result<crate::plan::ModelPlan> {
    let seed = m.seed.map(|s| u64::try_from(s).map_err(|_| anyhow::anyhow!("model.seed: must be ≥ 0, not {s}"))).transpose()?;
    let temperature = m.temperature.context("model.temperature: not stated; give a number, or \"provider_default\" to send none")?;
    let settings = crate::plan::ModelSettings {
        id: m.id.clone(),
        temperature,
        max_tokens: m.max_tokens,
        seed,
        reasoning_effort: m.reasoning_effort.clone(),
        dialect: m.dialect,
        max_tokens_param: m.max_tokens_param,
    };
    let endpoint = crate::plan::Endpoint {
        base_url: m.base_url.clone().unwrap_or_default(),
        api_key_env: m.api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".into()),
        request_timeout,
        headers,
    };
    crate::plan::ModelPlan::model(settings, endpoint)
}

/// The tasks a spec selects, from the module's folder: exactly `ids` if given, else all.
/// Ids that do not exist are returned as the second value.
pub fn select_tasks(tasks_dir: &Path, module: &str, ids: &[String], split: crate::held_out::SplitSelection) -> anyhow::Result<(Vec<tasks::Task>, Vec<String>)> {
    let mut all = tasks::load_module(tasks_dir, module).with_context(|| format!("loading the tasks of {module}"))?;
    if let Some(t) = all.iter().find(|t| ids.contains(&t.id) && !split.admits(t.meta.split)) {
        anyhow::bail!(
            "task {} is {}, but the selection is split = {:?}: list only {} tasks, or change the split",
            t.key(),
            t.meta.split,
            split.as_str(),
            split.as_str()
        );
    }
    all.retain(|t| split.admits(t.meta.split));
    if ids.is_empty() {
        return Ok((all, vec![]));
    }
    let missing = ids.iter().filter(|id| !all.iter().any(|t| &t.id == *id)).cloned().collect();
    Ok((all.into_iter().filter(|t| ids.contains(&t.id)).collect(), missing))
}

/// The spec for the current inputs.
pub async fn freeze(args: &FreezeArgs) -> anyhow::Result<Spec> {
    let (pattern, control) =
        registry::arms(&args.module).with_context(|| format!("no module named {:?}; modules: {}", args.module, registry::modules().join(", ")))?;
    let arms: Vec<&'static servers::ServerEntry> = if args.mcp.is_empty() {
        vec![pattern, control]
    } else {
        let mut arms = Vec::new();
        for name in &args.mcp {
            let s = registry::find(name).with_context(|| format!("--mcp: no server named {name:?}; servers: {}", registry::names().join(", ")))?;
            anyhow::ensure!(s.module == args.module, "--mcp: {name} answers the tasks of {}, not of {}", s.module, args.module);
            arms.push(s);
        }
        anyhow::ensure!(arms.len() >= 2, "--mcp: an experiment compares at least two arms");
        arms
    };
    crate::plan::check_runnable(&arms)?;
    let (tasks, missing) = select_tasks(&args.dirs.tasks_dir(), &args.module, &args.tasks, args.split)?;
    anyhow::ensure!(missing.is_empty(), "no task {missing:?} in {}", args.module);
    anyhow::ensure!(!tasks.is_empty(), "no tasks in {}", args.module);
    let work = crate::build_info::BuildInfo::work_tree(args.dirs.build_dir.as_deref());
    let binary = crate::build_info::BuildInfo::binary();
    let commit = binary.commit.clone().context("this binary was not built inside a git work tree, so there is no commit to pin (G2); build it from a clone")?;
    if work.commit.as_deref() != Some(commit.as_str()) {
        eprintln!(
            "warning: the work tree is at {}, the binary was built from {commit}; G2 will refuse until you rebuild (cargo build -p pipeline)",
            work.commit.as_deref().unwrap_or("no commit")
        );
    }
    if work.dirty == Some(true) || binary.dirty == Some(true) {
        eprintln!("warning: the build is dirty; the frozen commit {commit} is not exactly what runs (G2 refuses unless allow_dirty = true)");
    }
    let settings = servers::launch::ArmSettings { catalogue: args.catalogue };
    servers::registry::check_settings(settings, &[args.module.as_str()]).map_err(|e| anyhow::anyhow!(e))?;
    let mut manifests = BTreeMap::new();
    for &arm in &arms {
        let m = crate::listing::manifest(arm, settings).await?;
        manifests.insert(
            arm.name.to_owned(),
            ArmManifest { sha256: m.sha256(), tools: m.tool_names().into_iter().map(str::to_owned).collect(), resources: m.resources },
        );
    }
    let oracle = args.models == "oracle";
    let model = if oracle {
        ModelParams { id: "oracle".into(), ..Default::default() }
    } else {
        let base_url = args.base_url.clone().unwrap_or_else(|| "https://api.openai.com/v1".into());
        let params = ModelParams {
            id: args.models.clone(),
            dialect: Some(args.asking.dialect.unwrap_or_else(|| Dialect::of_base_url(&base_url))),
            base_url: Some(base_url),
            api_key_env: Some(args.api_key_env.clone()),
            temperature: Some(args.asking.temperature),
            max_tokens: args.asking.max_tokens,
            seed: args.seed,
            reasoning_effort: args.asking.reasoning_effort.clone(),
            max_tokens_param: args.asking.max_tokens_param,
        };
        // Refuses what the endpoint would ignore before a spec that pins it exists.
        model_plan(&params, std::time::Duration::from_secs(120), vec![])?;
        params
    };
    let model_slug: String = args.models.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect();
    Ok(Spec {
        experiment: args.exp_name.clone().unwrap_or_else(|| format!("{}_{model_slug}_k{}", args.module, args.k)),
        module: args.module.clone(),
        tasks: args.tasks.clone(),
        reps: args.k,
        jobs: args.jobs,
        transport: args.transport,
        session_mode: args.session_mode,
        split: args.split,
        catalogue: args.catalogue,
        treatment: vec!["server".into()],
        allow_dirty: args.allow_dirty,
        model,
        arms: arms.iter().map(|a| Arm { server: a.name.into(), ..Default::default() }).collect(),
        hashes: Hashes {
            build: commit,
            system_prompt: agent::system_prompt_sha256(),
            tasks: tasks.iter().map(|t| (t.id.clone(), TaskHash { sha256: t.sha256.clone(), seed: t.meta.seed, scale: t.meta.scale })).collect(),
            manifests,
            arms: arms.iter().filter_map(|a| a.external()).map(|a| (a.name.clone(), a.sha256.clone())).collect(),
        },
    })
}

pub async fn freeze_cmd(args: FreezeArgs) -> anyhow::Result<()> {
    let spec = freeze(&args).await?;
    let text = format!(
        "# Experiment spec frozen by `pipeline freeze` at {}. `pipeline check` verifies it; `pipeline run` spends.\n{}",
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        spec.to_toml()?
    );
    match &args.out {
        Some(path) => {
            records::write_atomically(path, text.as_bytes())?;
            eprintln!("spec {} written to {}", spec.experiment, path.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}
