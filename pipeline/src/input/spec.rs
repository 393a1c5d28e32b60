//! Experiment specs (`docs/honesty-rules.md` §2): a TOML file that pins the model and its parameters, the module
//! and tasks, the reps, the arms, the declared treatment key(s), and the sha256 of every input.
//! `pipeline freeze` writes one with the current hashes; `pipeline check SPEC` runs the gates
//! against it (see `commands/check.rs` and `gates.rs`); `pipeline run SPEC` checks, then runs.
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
use std::path::PathBuf;

use records::{Dialect, MaxTokensParam, Temperature};
use serde::{Deserialize, Serialize};
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
    pub split: crate::split::SplitSelection,
    /// For a module whose servers list a tool catalogue (tool_search): its size; absent, the
    /// module's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalogue: Option<u32>,
    /// How many tools of other, unconnected servers the client lists beside each arm's own;
    /// absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distractors: Option<u32>,
    /// A hard budget for each `pipeline run` of the spec, in tokens and/or US dollars (dollars
    /// need `run … --prices FILE`); absent: none. It changes no session, so no fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// The keys in which arms may differ (`server`, and any per-arm model key).
    pub treatment: Vec<String>,
    /// A dirty work tree passes G2 (the manifest then says so, loudly).
    #[serde(default)]
    pub allow_dirty: bool,
    pub model: ModelParams,
    pub arms: Vec<Arm>,
    pub hashes: Hashes,
}

fn legacy_split() -> crate::split::SplitSelection {
    crate::split::SplitSelection::Dev
}

fn is_cold(m: &records::SessionMode) -> bool {
    *m == records::SessionMode::Cold
}

/// The model id's prefix that names a simulated agent's profile (`sim:equal`).
pub const SIM_PREFIX: &str = "sim:";

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

    /// A simulated agent (`sim:PROFILE`).
    pub fn is_simulated(&self) -> bool {
        self.id.starts_with(SIM_PREFIX)
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
    /// A simulated agent's (`sim:…`): the sha256 of its profile's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
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
        anyhow::ensure!(self.budget_tokens != Some(0), "budget_tokens: must be above 0");
        if let Some(usd) = self.budget_usd {
            anyhow::ensure!(usd.is_finite() && usd > 0.0, "budget_usd: must be an amount of dollars above 0, not {usd}");
        }
        if let Some(n) = self.distractors {
            servers::distractors::Distractors::draw(n).map_err(|e| anyhow::anyhow!("distractors: {e}"))?;
        }
        Ok(())
    }

    /// What the spec chose about its servers' world, passed to every server its run starts.
    pub fn settings(&self) -> servers::launch::ArmSettings {
        servers::launch::ArmSettings { catalogue: self.catalogue, poison: None }
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
