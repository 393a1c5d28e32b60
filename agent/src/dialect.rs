//! How each kind of OpenAI-compatible endpoint is spoken to ([`records::Dialect`]): which
//! headers carry the key, which query parameters every request keeps (Azure's `api-version`),
//! under which name the response-length limit goes out, how a reasoning effort is sent — and
//! which settings an endpoint is documented to ignore, so that they are refused before anything
//! is spent rather than recorded as pinned while they had no effect.
//!
//! A parameter is sent only when the plan sets it: no temperature under the provider default, no
//! limit without `--max-tokens`, no effort without `--reasoning-effort`.

use async_openai::config::Config;
use records::Dialect;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use secrecy::SecretString;
use serde_json::{Value, json};

use crate::config::{ProviderConfig, SetupError};

/// The header Azure OpenAI reads the key from.
pub const AZURE_KEY_HEADER: &str = "api-key";

/// What async-openai needs to send a request: the base URL without its query, the query pairs
/// every request keeps, and every header (the key included). The key lives in a `SecretString`
/// and in the header map; `Debug` shows neither.
#[derive(Clone)]
pub(crate) struct EndpointConfig {
    api_base: String,
    query: Vec<(String, String)>,
    key: SecretString,
    headers: HeaderMap,
}

impl std::fmt::Debug for EndpointConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("EndpointConfig").field("api_base", &self.api_base).field("query", &self.query).field("header_names", &names).finish()
    }
}

impl EndpointConfig {
    /// `key` empty means no key: no auth header at all (a keyless loopback server).
    pub(crate) fn new(config: &ProviderConfig, key: String) -> Result<Self, SetupError> {
        let (api_base, query) = split_query(&config.base_url);
        let mut headers = HeaderMap::new();
        if !key.is_empty() {
            let (name, value) = match config.dialect {
                Dialect::Azure => (HeaderName::from_static(AZURE_KEY_HEADER), key.clone()),
                _ => (AUTHORIZATION, format!("Bearer {key}")),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| SetupError::BadKey(config.api_key_env.clone()))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        // A header the user passed wins over the one the dialect implies (e.g. an Entra ID
        // `Authorization: Bearer …` for Azure).
        for (name, value) in &config.extra_headers {
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|e| SetupError::BadHeader(name.clone(), e.to_string()))?;
            let mut value = HeaderValue::from_str(value).map_err(|e| SetupError::BadHeader(name.clone(), e.to_string()))?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        Ok(Self { api_base, query, key: SecretString::from(key), headers })
    }

    /// The full URL of `path` (query included), as requests go out.
    pub(crate) fn full_url(&self, path: &str) -> String {
        let mut url = self.url(path);
        if !self.query.is_empty() {
            let pairs: Vec<String> = self.query.iter().map(|(k, v)| if v.is_empty() { k.clone() } else { format!("{k}={v}") }).collect();
            url.push('?');
            url.push_str(&pairs.join("&"));
        }
        url
    }

    /// Whether a query parameter named `name` is kept on every request.
    pub(crate) fn has_query(&self, name: &str) -> bool {
        self.query.iter().any(|(k, _)| k == name)
    }
}

impl Config for EndpointConfig {
    fn headers(&self) -> HeaderMap {
        self.headers.clone()
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.api_base)
    }

    fn query(&self) -> Vec<(&str, &str)> {
        self.query.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    fn api_base(&self) -> &str {
        &self.api_base
    }

    fn api_key(&self) -> &SecretString {
        &self.key
    }
}

/// `https://h/p?a=1&b` → (`https://h/p`, [(a, 1), (b, "")]); a trailing `/` of the path is
/// dropped, as request paths start with one. Values are kept as written (already encoded).
fn split_query(base_url: &str) -> (String, Vec<(String, String)>) {
    let trimmed = base_url.trim();
    let without_fragment = trimmed.split('#').next().unwrap_or(trimmed);
    let (base, query) = without_fragment.split_once('?').unwrap_or((without_fragment, ""));
    let pairs = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect();
    (base.trim_end_matches('/').to_owned(), pairs)
}

/// Adds the plan's parameters to a request body, each under the name the dialect uses, and only
/// those the plan sets.
pub(crate) fn add_parameters(config: &ProviderConfig, body: &mut Value) {
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(m) = config.max_tokens {
        body[config.max_tokens_param.as_str()] = json!(m);
    }
    if let Some(s) = config.seed {
        body["seed"] = json!(s);
    }
    if let Some(effort) = &config.reasoning_effort {
        match config.dialect {
            // OpenRouter's unified field; it maps the effort onto each upstream's own setting.
            Dialect::Openrouter => body["reasoning"] = json!({ "effort": effort }),
            _ => body["reasoning_effort"] = json!(effort),
        }
    }
}

/// Settings the endpoint is documented to ignore or to change silently: a run that set them
/// would record a pinned value that never applied. Refused before anything is spent, each
/// naming the flag (and spec field) to change.
pub fn check(config: &ProviderConfig) -> Result<(), SetupError> {
    let refuse = |what: String| Err(SetupError::Dialect(what));
    if let Some(effort) = &config.reasoning_effort
        && (effort.trim().is_empty() || effort.chars().any(char::is_whitespace))
    {
        return refuse(format!("--reasoning-effort {effort:?} is not an effort: give the provider's word for it (e.g. low, medium, high)"));
    }
    if config.dialect == Dialect::Anthropic {
        if config.reasoning_effort.is_some() {
            return refuse(
                "Anthropic's OpenAI-compatible endpoint ignores reasoning_effort (documented), so the effort would be recorded but not applied: \
drop --reasoning-effort (spec: model.reasoning_effort)"
                    .to_owned(),
            );
        }
        if config.seed.is_some() {
            return refuse(
                "Anthropic's OpenAI-compatible endpoint ignores seed (documented), so a seed would be recorded but not applied: drop --seed (spec: model.seed)"
                    .to_owned(),
            );
        }
        if let Some(t) = config.temperature.filter(|t| *t > 1.0) {
            return refuse(format!(
                "Anthropic's OpenAI-compatible endpoint caps temperature at 1 without an error (documented), so {t} would be recorded while 1 applied: \
give --temperature between 0 and 1, or default"
            ));
        }
    }
    Ok(())
}

/// A hint for a request the endpoint rejected, naming the flag that changes what was sent; `None`
/// when the error names none of them.
pub fn rejection_hint(config: &ProviderConfig, has_api_version: bool, status: Option<u16>, detail: &str) -> Option<String> {
    let d = detail.to_lowercase();
    // The parameter as a word of its own: quoted (OpenAI), `param: x` (our detail of OpenAI's
    // `param`), or bare ("Invalid reasoning_effort: minimal", Gemini).
    let names = |p: &str| {
        d.match_indices(p).any(|(at, _)| {
            let before = d[..at].chars().next_back();
            let after = d[at + p.len()..].chars().next();
            let edge = |c: Option<char>| c.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'));
            edge(before) && edge(after)
        })
    };
    if config.dialect == Dialect::Azure
        && !has_api_version
        && (matches!(status, Some(404)) || d.contains("api-version"))
        && !config.base_url.contains("/openai/v1")
    {
        return Some(
            "Azure OpenAI's deployment URLs need their API version: add ?api-version=YYYY-MM-DD (one Azure lists for your resource) to --base-url, \
e.g. https://RESOURCE.openai.azure.com/openai/deployments/DEPLOYMENT?api-version=2024-10-21, or use the v1 API, https://RESOURCE.openai.azure.com/openai/v1"
                .to_owned(),
        );
    }
    if names("max_tokens") && d.contains("max_completion_tokens") {
        return Some(
            "the endpoint wants the response limit as max_completion_tokens: pass --max-tokens-param max_completion_tokens (or --dialect openai for OpenAI's rules)"
                .to_owned(),
        );
    }
    if names("max_completion_tokens") {
        return Some("the endpoint does not know max_completion_tokens: pass --max-tokens-param max_tokens".to_owned());
    }
    if names("temperature") {
        let sent = config.temperature.map_or("none".to_owned(), |t| t.to_string());
        return Some(format!(
            "the endpoint rejected the temperature sent ({sent}): reasoning models accept only their default — pass --temperature default (nothing is sent; spec: temperature = \"provider_default\") — \
otherwise give a --temperature within the provider's range"
        ));
    }
    if names("reasoning_effort") || names("reasoning.effort") || d.contains("reasoning effort") {
        let sent = config.reasoning_effort.as_deref().unwrap_or("none");
        return Some(format!(
            "the endpoint rejected the reasoning effort sent ({sent}): pass a --reasoning-effort value this model lists (spec: model.reasoning_effort), or drop the flag for a model without reasoning"
        ));
    }
    if names("seed") {
        return Some("the endpoint rejected the seed: drop --seed (spec: model.seed) for this provider".to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: &str, dialect: Dialect) -> ProviderConfig {
        let mut c = ProviderConfig::new(url, "K", "m");
        c.set_dialect(dialect);
        c
    }

    #[test]
    fn queries_are_split_off_the_base_and_kept() {
        let (base, q) = split_query("https://r.openai.azure.com/openai/deployments/d/?api-version=2024-10-21&x");
        assert_eq!(base, "https://r.openai.azure.com/openai/deployments/d");
        assert_eq!(q, [("api-version".to_owned(), "2024-10-21".to_owned()), ("x".to_owned(), String::new())]);
        let c = EndpointConfig::new(&config("https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21", Dialect::Azure), "secret-key".into())
            .unwrap();
        assert_eq!(c.full_url("/chat/completions"), "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21");
        assert!(c.has_query("api-version"));
        assert_eq!(c.headers().get(AZURE_KEY_HEADER).unwrap(), "secret-key");
        assert!(c.headers().get(AUTHORIZATION).is_none());
        assert!(!format!("{c:?}").contains("secret-key"));
    }

    #[test]
    fn bearer_unless_azure_and_nothing_without_a_key() {
        let c = EndpointConfig::new(&config("https://api.openai.com/v1", Dialect::Openai), "k123".into()).unwrap();
        assert_eq!(c.headers().get(AUTHORIZATION).unwrap(), "Bearer k123");
        let keyless = EndpointConfig::new(&config("http://127.0.0.1:1/v1", Dialect::Compatible), String::new()).unwrap();
        assert!(keyless.headers().is_empty());
        assert!(matches!(EndpointConfig::new(&config("http://x/v1", Dialect::Openai), "bad\nkey".into()), Err(SetupError::BadKey(_))));
    }

    #[test]
    fn parameters_go_out_only_when_set_under_the_dialects_names() {
        let mut c = config("https://api.openai.com/v1", Dialect::Openai);
        let mut body = json!({});
        add_parameters(&c, &mut body);
        assert_eq!(body, json!({}), "nothing set, nothing sent");
        (c.max_tokens, c.reasoning_effort, c.temperature) = (Some(900), Some("high".into()), Some(0.5));
        add_parameters(&c, &mut body);
        assert_eq!(body, json!({ "max_completion_tokens": 900, "reasoning_effort": "high", "temperature": 0.5 }));
        let mut r = config("https://openrouter.ai/api/v1", Dialect::Openrouter);
        (r.max_tokens, r.reasoning_effort) = (Some(10), Some("low".into()));
        let mut body = json!({});
        add_parameters(&r, &mut body);
        assert_eq!(body, json!({ "max_tokens": 10, "reasoning": { "effort": "low" } }));
    }

    #[test]
    fn rejections_name_the_flag_that_set_what_was_rejected() {
        let o = config("https://api.openai.com/v1", Dialect::Openai);
        let hint = |detail: &str| rejection_hint(&o, false, Some(400), detail).unwrap_or_default();
        // Verbatim texts (OpenAI's messages; our detail appends type, code and param).
        let cases = [
            (
                "HTTP 400: Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead. [type: invalid_request_error, code: unsupported_parameter, param: max_tokens]",
                "--max-tokens-param max_completion_tokens",
            ),
            (
                "HTTP 400: Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported. [type: invalid_request_error, code: unsupported_value, param: temperature]",
                "--temperature default",
            ),
            (
                "HTTP 400: Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 2.5 instead. [type: invalid_request_error, code: decimal_above_max_value, param: temperature]",
                "--temperature",
            ),
            (
                "HTTP 400: unparseable body: [{\"error\": {\"code\": 400, \"message\": \"Invalid reasoning_effort: minimal. Valid values are: high, low, medium, none\"}}]",
                "--reasoning-effort",
            ),
            ("HTTP 400: {\"error\":{\"code\":400,\"message\":\"Invalid reasoning effort: ultra\"}}", "--reasoning-effort"),
        ];
        for (detail, flag) in cases {
            assert!(hint(detail).contains(flag), "{detail} → {}", hint(detail));
        }
        assert_eq!(rejection_hint(&o, false, Some(400), "HTTP 400: Invalid value for 'messages': malformed."), None);
        assert_eq!(rejection_hint(&o, false, Some(400), "the seedling failed"), None, "a word inside another is not the parameter");
        let azure = config("https://r.openai.azure.com/openai/deployments/d", Dialect::Azure);
        let h = rejection_hint(&azure, false, Some(404), r#"HTTP 404: Resource not found [type: -, code: 404]"#).unwrap();
        assert!(h.contains("api-version") && h.contains("--base-url"), "{h}");
        assert_eq!(rejection_hint(&azure, true, Some(404), "HTTP 404: Resource not found"), None, "with its version, a 404 is something else");
    }

    #[test]
    fn what_anthropic_ignores_is_refused() {
        let mut a = config("https://api.anthropic.com/v1/", Dialect::Anthropic);
        assert!(check(&a).is_ok());
        a.reasoning_effort = Some("high".into());
        assert!(check(&a).unwrap_err().to_string().contains("--reasoning-effort"));
        a.reasoning_effort = None;
        a.seed = Some(1);
        assert!(check(&a).unwrap_err().to_string().contains("--seed"));
        a.seed = None;
        a.temperature = Some(1.5);
        assert!(check(&a).unwrap_err().to_string().contains("--temperature"));
        let mut o = config("https://api.openai.com/v1", Dialect::Openai);
        o.reasoning_effort = Some(" ".into());
        assert!(check(&o).is_err());
    }
}
