//! How a model is asked: the sampling temperature (a number, or the provider's own default with
//! nothing sent), the endpoint's dialect of the chat-completions API, and the name under which
//! the response-length limit goes out. All three are plan decisions: they are pinned in the
//! fingerprint, so runs that asked differently are never pooled.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Provider;

/// The sampling temperature of an experiment: a number sent with every request, or the
/// provider's default, for which nothing is sent (reasoning models accept no other).
///
/// In JSON a number, or the string `"provider_default"`; records written before the choice
/// existed hold a number and read unchanged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Temperature {
    /// Nothing is sent: the endpoint samples at its own default.
    ProviderDefault,
    Value(f64),
}

/// How [`Temperature::ProviderDefault`] is written in records, specs and fingerprints.
pub const PROVIDER_DEFAULT: &str = "provider_default";

impl Temperature {
    /// The number sent with every request; `None` when nothing is sent.
    pub fn sent(self) -> Option<f64> {
        match self {
            Self::ProviderDefault => None,
            Self::Value(t) => Some(t),
        }
    }

    /// Parses a flag or spec value: a finite number ≥ 0, or `default` / `provider_default`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("default") || t.eq_ignore_ascii_case(PROVIDER_DEFAULT) {
            return Ok(Self::ProviderDefault);
        }
        let value: f64 = t.parse().map_err(|_| format!("{text:?} is neither a number nor `default` (the provider's default: nothing is sent)"))?;
        if !value.is_finite() || value < 0.0 {
            return Err(format!("{text} is not a temperature: give a number ≥ 0, or `default` to send none"));
        }
        Ok(Self::Value(value))
    }
}

impl std::fmt::Display for Temperature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ProviderDefault => f.write_str("provider default"),
            Self::Value(t) => write!(f, "{t}"),
        }
    }
}

impl std::str::FromStr for Temperature {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for Temperature {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::ProviderDefault => s.serialize_str(PROVIDER_DEFAULT),
            Self::Value(t) => s.serialize_f64(*t),
        }
    }
}

impl<'de> Deserialize<'de> for Temperature {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(t) => Ok(Self::Value(t)),
            Raw::Text(s) if s == PROVIDER_DEFAULT || s == "default" => Ok(Self::ProviderDefault),
            Raw::Text(s) => Err(serde::de::Error::custom(format!("temperature must be a number or \"{PROVIDER_DEFAULT}\", not {s:?}"))),
        }
    }
}

/// Which provider's rules an OpenAI-compatible endpoint follows: how it authenticates, the name of
/// the response-length limit, how a reasoning effort is sent and which parameters it silently
/// ignores. Chosen from the base URL's host unless given (`--dialect`); recorded resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// api.openai.com: `max_completion_tokens`, `reasoning_effort`.
    Openai,
    /// Azure OpenAI: the key in an `api-key` header, `api-version` in the query.
    Azure,
    /// Anthropic's OpenAI SDK compatibility layer: ignores `reasoning_effort` and `seed`, caps
    /// temperature at 1.
    Anthropic,
    /// Google's Gemini OpenAI compatibility endpoint.
    Gemini,
    /// OpenRouter: the effort as `reasoning: {effort}`.
    Openrouter,
    /// Any other OpenAI-compatible server: vLLM, Ollama, llama.cpp's server, LiteLLM, gateways.
    Compatible,
}

impl Dialect {
    pub const ALL: [Self; 6] = [Self::Openai, Self::Azure, Self::Anthropic, Self::Gemini, Self::Openrouter, Self::Compatible];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Azure => "azure",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Openrouter => "openrouter",
            Self::Compatible => "compatible",
        }
    }

    /// The dialect a base URL's host implies; [`Self::Compatible`] for every other host
    /// (local servers, gateways) and for anything unparseable.
    pub fn of_base_url(base_url: &str) -> Self {
        let Some(host) = host_of(base_url) else { return Self::Compatible };
        let is = |domain: &str| host == domain || host.ends_with(&format!(".{domain}"));
        if host == "api.openai.com" {
            Self::Openai
        } else if is("openai.azure.com") || is("cognitiveservices.azure.com") || is("services.ai.azure.com") {
            Self::Azure
        } else if host == "api.anthropic.com" {
            Self::Anthropic
        } else if host == "generativelanguage.googleapis.com" {
            Self::Gemini
        } else if host == "openrouter.ai" {
            Self::Openrouter
        } else {
            Self::Compatible
        }
    }

    /// The name this dialect gives the response-length limit.
    pub fn max_tokens_param(self) -> MaxTokensParam {
        match self {
            // OpenAI's current name for every model; reasoning models refuse `max_tokens`.
            Self::Openai | Self::Azure => MaxTokensParam::MaxCompletionTokens,
            // Understood everywhere else; several local servers know no other.
            Self::Anthropic | Self::Gemini | Self::Openrouter | Self::Compatible => MaxTokensParam::MaxTokens,
        }
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The request field that carries the response-length limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum), value(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensParam {
    MaxTokens,
    MaxCompletionTokens,
}

impl MaxTokensParam {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxTokens => "max_tokens",
            Self::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

impl std::fmt::Display for MaxTokensParam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The lower-cased host of `url`, without brackets or port; `None` when there is none.
fn host_of(url: &str) -> Option<String> {
    let rest = url.trim().split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') { v6.split(']').next()? } else { host_port.split(':').next()? };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// The model and its pinned parameters (`provider = "oracle"` for the oracle, parameters null):
/// the one type the plan, the fingerprint, the records and the report hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    pub id: String,
    pub provider: Provider,
    /// A number sent with every request, or `"provider_default"` (nothing sent); null for the
    /// oracle.
    pub temperature: Option<Temperature>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    /// Whose rules the endpoint follows (null for the oracle and in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<Dialect>,
    /// The request field that carries `max_tokens` (null when no limit is sent, and in older
    /// records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_param: Option<MaxTokensParam>,
    /// The reasoning effort sent with every request (null: none is sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// A simulated agent's profile: the sha256 of its TOML file (null for every other model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_sha256: Option<String>,
    /// The oracle's tokenizer: what its floors are counted in besides the bytes / 4 estimate
    /// (`o200k_base`, `cl100k_base`, `llama:URL`). Absent for every other model, for an oracle
    /// that knew none, and in older records, so their hashes are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
}

impl ModelSpec {
    pub fn oracle() -> Self {
        Self {
            id: "oracle".into(),
            provider: Provider::Oracle,
            temperature: None,
            max_tokens: None,
            seed: None,
            dialect: None,
            max_tokens_param: None,
            reasoning_effort: None,
            profile_sha256: None,
            tokenizer: None,
        }
    }

    pub fn is_oracle(&self) -> bool {
        self.provider == Provider::Oracle
    }

    /// A simulated agent: planted effects, synthetic usage.
    pub fn is_simulated(&self) -> bool {
        self.provider == Provider::Simulated
    }

    /// Runs without an endpoint (the oracle, a simulated agent): nothing to preflight or probe.
    pub fn needs_endpoint(&self) -> bool {
        self.provider == Provider::OpenAiCompatible
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperatures_read_and_write_both_forms() {
        assert_eq!(Temperature::parse("default"), Ok(Temperature::ProviderDefault));
        assert_eq!(Temperature::parse("provider_default"), Ok(Temperature::ProviderDefault));
        assert_eq!(Temperature::parse("0.7"), Ok(Temperature::Value(0.7)));
        assert!(Temperature::parse("-1").is_err());
        assert!(Temperature::parse("NaN").is_err());
        assert!(Temperature::parse("warm").unwrap_err().contains("default"));
        assert_eq!(serde_json::to_string(&Temperature::ProviderDefault).unwrap(), "\"provider_default\"");
        assert_eq!(serde_json::to_string(&Temperature::Value(0.0)).unwrap(), "0.0");
        assert_eq!(serde_json::from_str::<Temperature>("0.0").unwrap(), Temperature::Value(0.0));
        assert_eq!(serde_json::from_str::<Temperature>("\"provider_default\"").unwrap(), Temperature::ProviderDefault);
        assert!(serde_json::from_str::<Temperature>("\"hot\"").is_err());
        assert_eq!(Temperature::ProviderDefault.sent(), None);
    }

    #[test]
    fn dialects_follow_the_host() {
        let cases = [
            ("https://api.openai.com/v1", Dialect::Openai),
            ("https://myres.openai.azure.com/openai/deployments/gpt?api-version=2024-10-21", Dialect::Azure),
            ("https://myres.cognitiveservices.azure.com/openai/v1/", Dialect::Azure),
            ("https://api.anthropic.com/v1/", Dialect::Anthropic),
            ("https://generativelanguage.googleapis.com/v1beta/openai/", Dialect::Gemini),
            ("https://openrouter.ai/api/v1", Dialect::Openrouter),
            ("http://127.0.0.1:8080/v1", Dialect::Compatible),
            ("http://localhost:4000", Dialect::Compatible),
            ("https://api.openai.com.evil.example/v1", Dialect::Compatible),
            ("https://user:pw@API.OPENAI.COM:443/v1", Dialect::Openai),
            ("not a url", Dialect::Compatible),
        ];
        for (url, dialect) in cases {
            assert_eq!(Dialect::of_base_url(url), dialect, "{url}");
        }
        assert_eq!(Dialect::Openai.max_tokens_param().as_str(), "max_completion_tokens");
        assert_eq!(Dialect::Compatible.max_tokens_param().as_str(), "max_tokens");
    }
}
