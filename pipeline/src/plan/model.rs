//! The models of a plan: pinned parameters, and the endpoint that serves them.

use std::time::Duration;

use records::{Dialect, MaxTokensParam, ModelSpec, Provider, Temperature};

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
