//! What pins the model side of an experiment, before anything is sent: the endpoint, the key's
//! variable, the model and its sampling parameters ([`ProviderConfig`]), the retry bound
//! ([`RetryPolicy`]), and what may be refused while setting up ([`SetupError`]).
//!
//! * The API key is never held here: only the name of the variable it is read from, once, by the
//!   provider's client (`provider::OpenAiCompatible`). Extra header values (possibly secrets too)
//!   are held, and neither `Debug` nor [`ProviderConfig::record_params`] shows them.
//! * A loopback endpoint ([`is_loopback_url`]: 127.0.0.0/8, `[::1]`, `localhost`) may be used
//!   without a key: local servers (llama.cpp, Ollama, vLLM) need none, and a made-up key would be
//!   recorded as if one authenticated the run. Anywhere else a missing key refuses.
//! * How each kind of endpoint is spoken to, and which settings it ignores, is the `dialect`
//!   module's business: it reads this configuration, and this module names neither it nor the
//!   client, so that the crate's modules form no circle.

use std::time::Duration;

use records::{Dialect, MaxTokensParam, ModelSpec, Temperature};
use serde_json::{Value, json};

/// The provider name a model session records (the oracle records its own).
pub(crate) const PROVIDER: &str = "openai_compatible";

/// Installs rustls' ring provider as the process default; idempotent
/// ([`servers::tls::install_crypto_provider`], where the reason is given).
pub fn install_crypto_provider() {
    servers::tls::install_crypto_provider();
}

/// Bounded exponential backoff with jitter.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt of a turn.
    pub max_retries: u32,
    /// Delay before the first retry; doubled for each further one, with jitter in [½, 1]×.
    pub base_delay: Duration,
    /// Upper bound of any single wait, including one asked for by `Retry-After`.
    pub max_delay: Duration,
    /// Multiplies a `Retry-After` wait: 1.0 honours it as sent; tests shrink it.
    pub retry_after_scale: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_retries: 5, base_delay: Duration::from_millis(500), max_delay: Duration::from_secs(60), retry_after_scale: 1.0 }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0-based), honouring `retry_after` when given.
    pub(crate) fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let wait = match retry_after {
            Some(ra) => ra.mul_f64(self.retry_after_scale.max(0.0)),
            None => {
                let full = self.base_delay.saturating_mul(2u32.saturating_pow(retry));
                full.mul_f64(0.5 + 0.5 * rand::random::<f64>())
            }
        };
        wait.min(self.max_delay)
    }
}

/// Everything that pins the model side of an experiment. Holds no secret itself except extra
/// header values, which `Debug` and [`Self::record_params`] never show.
#[derive(Clone)]
pub struct ProviderConfig {
    /// Base URL including the version path, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Name of the environment variable holding the API key (the key itself is never stored).
    pub api_key_env: String,
    pub model: String,
    /// Sent with every request when set; `None` sends none (the provider's default).
    pub temperature: Option<f64>,
    /// Sent under [`Self::max_tokens_param`] when set.
    pub max_tokens: Option<u32>,
    pub seed: Option<i64>,
    /// Whose rules the endpoint follows ([`Self::set_dialect`] also picks the limit's name).
    pub dialect: Dialect,
    /// The request field that carries [`Self::max_tokens`].
    pub max_tokens_param: MaxTokensParam,
    /// Sent as the dialect sends an effort, when set.
    pub reasoning_effort: Option<String>,
    /// Whole-request timeout (connect, send, wait, read body).
    pub request_timeout: Duration,
    /// Extra request headers; the values may be secrets and are never recorded.
    pub extra_headers: Vec<(String, String)>,
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("base_url", &self.base_url)
            .field("api_key_env", &self.api_key_env)
            .field("model", &self.model)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("seed", &self.seed)
            .field("dialect", &self.dialect)
            .field("max_tokens_param", &self.max_tokens_param)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("request_timeout", &self.request_timeout)
            .field("extra_headers", &self.header_names())
            .field("retry", &self.retry)
            .finish()
    }
}

impl ProviderConfig {
    /// A configuration with nothing pinned; the dialect follows the base URL's host.
    pub fn new(base_url: impl Into<String>, api_key_env: impl Into<String>, model: impl Into<String>) -> Self {
        let base_url: String = base_url.into();
        let dialect = Dialect::of_base_url(&base_url);
        Self {
            dialect,
            max_tokens_param: dialect.max_tokens_param(),
            reasoning_effort: None,
            base_url,
            api_key_env: api_key_env.into(),
            model: model.into(),
            temperature: None,
            max_tokens: None,
            seed: None,
            request_timeout: Duration::from_secs(120),
            extra_headers: vec![],
            retry: RetryPolicy::default(),
        }
    }

    /// The configuration that `spec` pins, on the endpoint `base_url` with the key in the variable
    /// `api_key_env`: the model id, temperature (none sent for the provider's default), limit,
    /// seed and effort; the dialect when `spec` names one (otherwise the base URL's host picks
    /// it), and the limit's name when `spec` names one (otherwise the dialect's). What belongs to
    /// the endpoint rather than the model — timeout, extra headers — and the retry policy keep
    /// [`Self::new`]'s defaults. `spec.provider` is not read (an oracle is never configured), and
    /// nothing is refused here: [`SetupError`]s come when the client is built. A seed above
    /// `i64::MAX` is sent wrapped (`as i64`), as the pipeline's plan has always converted it.
    pub fn for_model(spec: &ModelSpec, base_url: impl Into<String>, api_key_env: impl Into<String>) -> Self {
        let mut config = Self::new(base_url, api_key_env, spec.id.clone());
        if let Some(dialect) = spec.dialect {
            config.set_dialect(dialect);
        }
        if let Some(param) = spec.max_tokens_param {
            config.max_tokens_param = param;
        }
        config.temperature = spec.temperature.and_then(Temperature::sent);
        config.max_tokens = spec.max_tokens;
        config.seed = spec.seed.map(|s| s as i64);
        config.reasoning_effort = spec.reasoning_effort.clone();
        config
    }

    /// Sets the dialect and the limit's name it implies.
    pub fn set_dialect(&mut self, dialect: Dialect) {
        self.dialect = dialect;
        self.max_tokens_param = dialect.max_tokens_param();
    }

    /// Header names only: what a record may say about the extra headers.
    pub(crate) fn header_names(&self) -> Vec<String> {
        self.extra_headers.iter().map(|(k, _)| k.clone()).collect()
    }

    /// The parameters a record carries: no key, no header values.
    pub fn record_params(&self) -> Value {
        json!({
            "provider": PROVIDER,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "dialect": self.dialect,
            "max_tokens_param": self.max_tokens_param,
            "reasoning_effort": self.reasoning_effort,
            "request_timeout_ms": self.request_timeout.as_millis() as u64,
            "extra_header_names": self.header_names(),
            "max_retries": self.retry.max_retries,
            "base_delay_ms": self.retry.base_delay.as_millis() as u64,
            "max_delay_ms": self.retry.max_delay.as_millis() as u64,
            "retry_after_scale": self.retry.retry_after_scale,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("the API key variable {0} is unset or empty; export it before running against a model (only a loopback endpoint may go without a key)")]
    MissingKey(String),
    #[error("the key in ${0} cannot be sent in an HTTP header (it holds a line break or another control character); export it again without one")]
    BadKey(String),
    #[error("{0}")]
    Dialect(String),
    #[error("extra header {0:?} is not a valid HTTP header: {1}")]
    BadHeader(String, String),
    #[error("could not build the HTTP client: {0}")]
    Http(String),
}

/// Whether `base_url` names this machine: 127.0.0.0/8, `[::1]` or `localhost`. Only such an
/// endpoint may be used without a key. Anything unparseable is not loopback.
pub fn is_loopback_url(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url.trim()) else { return false };
    let Some(host) = url.host_str() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use records::Provider;

    use super::*;

    /// A spec with every field away from what the base URL alone would give (the client's tests
    /// send it too).
    pub(crate) fn every_field_set() -> ModelSpec {
        ModelSpec {
            id: "m-7b".into(),
            provider: Provider::OpenAiCompatible,
            temperature: Some(Temperature::Value(0.25)),
            max_tokens: Some(321),
            seed: Some(42),
            // A loopback URL alone implies `compatible` and `max_tokens`: both are the spec's here,
            // and the limit's name is not the one OpenRouter implies.
            dialect: Some(Dialect::Openrouter),
            max_tokens_param: Some(MaxTokensParam::MaxCompletionTokens),
            reasoning_effort: Some("low".into()),
            profile_sha256: None,
            tokenizer: None,
        }
    }

    #[test]
    fn for_model_carries_every_field_of_the_spec() {
        let spec = every_field_set();
        let c = ProviderConfig::for_model(&spec, "http://127.0.0.1:8080/v1", "KEY_VAR");
        // Every field named: one added to ModelSpec stops this compiling until it is decided here.
        // A simulated agent's profile is not sent anywhere.
        let ModelSpec { id, provider: _, temperature, max_tokens, seed, dialect, max_tokens_param, reasoning_effort, profile_sha256: _, tokenizer: _ } = spec;
        assert_eq!((c.base_url.as_str(), c.api_key_env.as_str(), c.model.as_str()), ("http://127.0.0.1:8080/v1", "KEY_VAR", id.as_str()));
        assert_eq!(c.temperature, temperature.and_then(Temperature::sent));
        assert_eq!(c.max_tokens, max_tokens);
        assert_eq!(c.seed, seed.map(|s| s as i64));
        assert_eq!(Some(c.dialect), dialect);
        assert_eq!(Some(c.max_tokens_param), max_tokens_param);
        assert_eq!(c.reasoning_effort, reasoning_effort);
        // What belongs to the endpoint, and the retries, are not the spec's.
        let plain = ProviderConfig::new("http://127.0.0.1:8080/v1", "KEY_VAR", "m-7b");
        assert_eq!((c.request_timeout, c.extra_headers.is_empty(), &c.retry), (plain.request_timeout, true, &plain.retry));

        let p = c.record_params();
        assert_eq!(p["model"], "m-7b");
        assert_eq!(p["temperature"], 0.25);
        assert_eq!(p["max_tokens"], 321);
        assert_eq!(p["seed"], 42);
        assert_eq!(p["dialect"], json!(Dialect::Openrouter));
        assert_eq!(p["max_tokens_param"], "max_completion_tokens");
        assert_eq!(p["reasoning_effort"], "low");
    }

    #[test]
    fn for_model_leaves_unset_what_the_spec_leaves_unset() {
        let spec =
            ModelSpec { id: "gpt-x".into(), provider: Provider::OpenAiCompatible, temperature: Some(Temperature::ProviderDefault), ..ModelSpec::oracle() };
        let c = ProviderConfig::for_model(&spec, "https://api.openai.com/v1", "OPENAI_API_KEY");
        assert_eq!((c.temperature, c.max_tokens, c.seed, c.reasoning_effort.as_deref()), (None, None, None, None));
        // No dialect in the spec: the host's, and the limit's name that dialect implies.
        assert_eq!((c.dialect, c.max_tokens_param), (Dialect::Openai, MaxTokensParam::MaxCompletionTokens));
        let p = c.record_params();
        assert!(["temperature", "max_tokens", "seed", "reasoning_effort"].iter().all(|k| p[k].is_null()), "{p}");
    }

    #[test]
    fn backoff_is_bounded_and_retry_after_is_scaled() {
        let p = RetryPolicy { max_retries: 3, base_delay: Duration::from_millis(100), max_delay: Duration::from_millis(300), retry_after_scale: 0.5 };
        for retry in 0..10 {
            let d = p.delay(retry, None);
            assert!(d <= Duration::from_millis(300));
            assert!(d >= Duration::from_millis(50).min(Duration::from_millis(300)));
        }
        assert_eq!(p.delay(0, Some(Duration::from_millis(400))), Duration::from_millis(200));
        assert_eq!(p.delay(0, Some(Duration::from_secs(10))), Duration::from_millis(300));
    }
}
