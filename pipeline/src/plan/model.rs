//! The models of a plan: pinned parameters, and the endpoint that serves them.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use records::{Dialect, ModelSpec, Provider};

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

/// One model of the plan: its pinned parameters, and its endpoint (none for the oracle and a
/// simulated agent), or the simulated agent's profile.
#[derive(Debug, Clone)]
pub struct ModelPlan {
    pub spec: ModelSpec,
    pub endpoint: Option<Endpoint>,
    pub sim: Option<Arc<agent::sim::Profile>>,
}

/// How a simulated agent is named: `sim:NAME` (a committed profile, `<tasks>/sim/NAME.toml`) or
/// `sim:PATH.toml`.
pub use crate::input::spec::SIM_PREFIX;

impl ModelPlan {
    pub fn oracle() -> Self {
        Self { spec: ModelSpec::oracle(), endpoint: None, sim: None }
    }

    /// The simulated agent `id` names (`sim:NAME` or `sim:PATH.toml`), with the run's `seed` or
    /// else the profile's. The error names the profiles there are.
    pub fn simulated(id: &str, tasks_dir: &Path, seed: Option<u64>) -> anyhow::Result<Self> {
        let name = id.strip_prefix(SIM_PREFIX).unwrap_or(id);
        let committed = tasks_dir.join("sim");
        let path = if name.ends_with(".toml") || name.contains('/') { Path::new(name).to_owned() } else { committed.join(format!("{name}.toml")) };
        let text = std::fs::read_to_string(&path).map_err(|e| {
            let mut names: Vec<String> = std::fs::read_dir(&committed)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".toml")).map(str::to_owned))
                .collect();
            names.sort();
            anyhow::anyhow!(
                "model {id}: cannot read the simulated agent's profile {} ({e}); name a committed one ({}) or a TOML file: --models sim:PATH.toml",
                path.display(),
                names.iter().map(|n| format!("sim:{n}")).collect::<Vec<_>>().join(", ")
            )
        })?;
        let profile = agent::sim::Profile::parse(&text).map_err(|e| anyhow::anyhow!("model {id}: profile {}: {e}", path.display()))?;
        let spec = ModelSpec {
            id: id.to_owned(),
            provider: Provider::Simulated,
            seed: Some(seed.unwrap_or(profile.seed)),
            profile_sha256: Some(records::sha256_hex(text.as_bytes())),
            ..ModelSpec::oracle()
        };
        Ok(Self { spec, endpoint: None, sim: Some(Arc::new(profile)) })
    }

    pub fn is_oracle(&self) -> bool {
        self.spec.is_oracle()
    }

    /// The oracle's tokenizer, when its spec names one (and only then: without one its floors
    /// are the bytes / 4 estimate alone).
    pub fn tokenizer(&self) -> Option<agent::tokens::Tokenizer> {
        let label = self.spec.tokenizer.as_deref()?;
        Some(agent::tokens::Tokenizer::parse(label).expect("a plan's tokenizer was parsed when the plan was made"))
    }

    /// The simulated agent a spec's model parameters name, its profile read from `tasks_dir`: a
    /// simulated agent takes a seed and nothing an endpoint would.
    pub fn simulated_from(params: &crate::input::spec::ModelParams, tasks_dir: &Path) -> anyhow::Result<Self> {
        let endpointish = [
            ("base_url", params.base_url.is_some()),
            ("api_key_env", params.api_key_env.is_some()),
            ("temperature", params.temperature.is_some()),
            ("max_tokens", params.max_tokens.is_some()),
            ("reasoning_effort", params.reasoning_effort.is_some()),
            ("dialect", params.dialect.is_some()),
            ("max_tokens_param", params.max_tokens_param.is_some()),
        ];
        let set: Vec<&str> = endpointish.iter().filter(|(_, on)| *on).map(|(k, _)| *k).collect();
        anyhow::ensure!(set.is_empty(), "model {}: a simulated agent asks no endpoint anything; drop {}", params.id, set.join(", "));
        let seed = match params.seed {
            Some(s) => Some(u64::try_from(s).map_err(|_| anyhow::anyhow!("model {}: a simulated agent's seed is a number ≥ 0, not {s}", params.id))?),
            None => None,
        };
        Self::simulated(&params.id, tasks_dir, seed)
    }

    /// A model of the plan, resolved from what was pinned (`pinned.provider` is set here): the
    /// dialect from the base URL unless given, the limit's name from the dialect unless given
    /// (recorded only when a limit is sent). A seed no endpoint takes (above 2^63 − 1, sent as a
    /// signed 64-bit number) and settings the endpoint is documented to ignore are refused here,
    /// before anything is written or spent.
    pub fn model(pinned: ModelSpec, endpoint: Endpoint) -> anyhow::Result<Self> {
        let dialect = pinned.dialect.unwrap_or_else(|| Dialect::of_base_url(&endpoint.base_url));
        if let Some(seed) = pinned.seed.filter(|&s| i64::try_from(s).is_err()) {
            anyhow::bail!("model {}: seed {seed} is larger than an endpoint takes (at most {})", pinned.id, i64::MAX);
        }
        anyhow::ensure!(pinned.temperature.is_some(), "model {}: no temperature pinned; give a number, or provider_default to send none", pinned.id);
        let plan = Self {
            spec: ModelSpec {
                provider: Provider::OpenAiCompatible,
                dialect: Some(dialect),
                max_tokens_param: pinned.max_tokens.map(|_| pinned.max_tokens_param.unwrap_or_else(|| dialect.max_tokens_param())),
                ..pinned
            },
            endpoint: Some(endpoint),
            sim: None,
        };
        if let Some(config) = plan.provider_config() {
            agent::dialect::check(&config).map_err(|e| anyhow::anyhow!("model {}: {e}", plan.spec.id))?;
        }
        Ok(plan)
    }

    /// The provider configuration of a model (none for the oracle).
    pub fn provider_config(&self) -> Option<agent::ProviderConfig> {
        let e = self.endpoint.as_ref()?;
        let mut config = agent::ProviderConfig::for_model(&self.spec, e.base_url.clone(), e.api_key_env.clone());
        config.request_timeout = e.request_timeout;
        config.extra_headers = e.headers.clone();
        Some(config)
    }
}

/// What the oracle's floors are counted in, besides the estimate: `given` (`--tokens`), else the
/// encoding the run's models share when every one of them is an OpenAI model of one encoding
/// (gpt-4o and gpt-4.1 → o200k_base); else none, and the floors stay the labelled estimate.
/// A llama.cpp server is not told from its URL: it is named (`--tokens llama:URL`), and asked
/// once here, so a server that does not answer stops the run before it starts.
pub async fn with_oracle_tokenizer(mut models: Vec<ModelPlan>, given: Option<&str>) -> anyhow::Result<Vec<ModelPlan>> {
    let has_oracle = models.iter().any(ModelPlan::is_oracle);
    let label = match given {
        Some(given) => {
            anyhow::ensure!(has_oracle, "--tokens {given}: the tokens it counts are the oracle's floors, and this run has no oracle; add oracle to --models");
            let t = agent::tokens::Tokenizer::parse(given)?;
            t.count("tokenizer check").await.map_err(|e| anyhow::anyhow!("--tokens {given}: {e}"))?;
            Some(t.label())
        }
        None => {
            let endpoint_models: Vec<&ModelPlan> = models.iter().filter(|m| m.spec.needs_endpoint()).collect();
            let encodings: Option<Vec<agent::tokens::Encoding>> = endpoint_models.iter().map(|m| agent::tokens::Encoding::of_model(&m.spec.id)).collect();
            match encodings.as_deref() {
                Some([first, rest @ ..]) if rest.iter().all(|e| e == first) => Some(first.name().to_owned()),
                _ => None,
            }
        }
    };
    for m in models.iter_mut().filter(|m| m.is_oracle()) {
        m.spec.tokenizer = label.clone();
    }
    Ok(models)
}
