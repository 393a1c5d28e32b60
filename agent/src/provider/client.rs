//! The retrying client: one turn's request to an OpenAI-compatible endpoint, each HTTP request
//! exactly one attempt, retried within the [`RetryPolicy`](crate::config::RetryPolicy) and
//! counted; every failed attempt recorded as an event; every configured secret redacted from
//! whatever comes back before anything sees it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_openai::config::Config;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use records::{Auth, ProviderExtras};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::failure::{AttemptOutcome, ProviderFailure, classify};
use super::wire::ChatResponse;
use crate::config::{ProviderConfig, SetupError, install_crypto_provider, is_loopback_url};
use crate::dialect::EndpointConfig;
use crate::record::Usage;

/// An OpenAI-compatible chat-completions endpoint with its pinned parameters.
#[derive(Clone)]
pub struct OpenAiCompatible {
    config: ProviderConfig,
    /// async-openai's config: the base URL and query, the key (as a `SecretString`) and every
    /// header, as the dialect sends them.
    client_config: EndpointConfig,
    auth: Auth,
    http: reqwest::Client,
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible").field("config", &self.config).field("auth", &self.auth).field("api_key", &"<redacted>").finish()
    }
}

impl OpenAiCompatible {
    /// Reads the key from the environment variable `config.api_key_env` now; it is not read again.
    /// Unset or empty, it is refused unless the endpoint is loopback ([`is_loopback_url`]): then
    /// requests go without a key.
    pub fn new(config: ProviderConfig) -> Result<Self, SetupError> {
        Self::with_key_source(config, |name| std::env::var(name).ok())
    }

    /// As [`Self::new`], looking the variable up with `lookup` instead of the process
    /// environment (tests, which cannot set variables safely while other threads run).
    pub fn with_key_source(config: ProviderConfig, lookup: impl FnOnce(&str) -> Option<String>) -> Result<Self, SetupError> {
        install_crypto_provider();
        crate::dialect::check(&config)?;
        let (key, auth) = match lookup(&config.api_key_env).filter(|k| !k.is_empty()) {
            Some(key) => (key, Auth::Key),
            None if is_loopback_url(&config.base_url) => (String::new(), Auth::None),
            None => return Err(SetupError::MissingKey(config.api_key_env.clone())),
        };
        let client_config = EndpointConfig::new(&config, key)?;
        let http = reqwest::Client::builder().timeout(config.request_timeout).build().map_err(|e| SetupError::Http(e.to_string()))?;
        Ok(Self { config, client_config, auth, http })
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// How requests authenticate: with the key read from the variable, or with none.
    pub fn auth(&self) -> Auth {
        self.auth
    }

    /// The headers every request carries. Keyless, there is no auth header at all (not an empty
    /// `Bearer `, which a server that checks keys would answer with "invalid key" rather than
    /// "missing key"); an `Authorization` the user passed with `--header` is theirs and is kept.
    fn headers(&self) -> HeaderMap {
        self.client_config.headers()
    }

    /// Whether the same request is expected to produce the same output (temperature 0 or a
    /// seed): then an output the endpoint cannot parse comes back unchanged, and retrying it
    /// more than once only spends tokens.
    fn sampling_is_pinned(&self) -> bool {
        self.config.temperature.is_some_and(|t| t <= 0.0) || self.config.seed.is_some()
    }

    /// The request body of one turn.
    pub(crate) fn request_body(&self, messages: &[Value], tools: &[Value]) -> Value {
        let mut body = json!({ "model": self.config.model, "messages": messages, "stream": false });
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools.to_vec());
            body["tool_choice"] = json!("auto");
        }
        crate::dialect::add_parameters(&self.config, &mut body);
        body
    }

    /// One turn: sends the request, retrying transient faults within the policy (an output the
    /// endpoint cannot parse: once, when sampling is pinned and the retry repeats it). Every
    /// attempt that failed is appended to `events` (status, verbatim error text, how long it took,
    /// the wait before the next).
    pub(crate) async fn complete(&self, messages: &[Value], tools: &[Value], events: &mut Vec<Value>) -> Result<Completion, ProviderFailure> {
        let body = self.request_body(messages, tools);
        let mut retries = 0u32;
        // The previous attempt's text when it, too, was an output the endpoint could not parse.
        let mut unparseable_before: Option<String> = None;
        loop {
            let started = Instant::now();
            // A provider may echo what it was sent (a gateway quoting the rejected key in its
            // 400): nothing past this line — events, failures, logs, records — sees a secret.
            let outcome = self.redacted(self.attempt(&body).await);
            let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
            match outcome {
                AttemptOutcome::Answer(response, raw) => {
                    if let Some(text) = response.limit_refusal() {
                        events.push(failed_attempt(json!({ "event": "provider_limit", "status": 200, "text": text }), latency_ms));
                        return Err(ProviderFailure::Limit { detail: text, retries });
                    }
                    let usage = response.usage();
                    let extras = response.extras(&self.config.model);
                    return Ok(Completion { response, raw, usage, extras, retries, latency_ms });
                }
                AttemptOutcome::Limit(detail) => {
                    events.push(failed_attempt(json!({ "event": "provider_limit", "error": detail }), latency_ms));
                    return Err(ProviderFailure::Limit { detail, retries });
                }
                AttemptOutcome::ContextExceeded(detail) => {
                    events.push(failed_attempt(json!({ "event": "context_exceeded", "error": detail }), latency_ms));
                    return Err(ProviderFailure::ContextExceeded { detail, retries });
                }
                AttemptOutcome::Fatal(detail) => {
                    events.push(failed_attempt(json!({ "event": "provider_error", "retryable": false, "error": detail }), latency_ms));
                    return Err(ProviderFailure::Exhausted { detail, retries });
                }
                AttemptOutcome::UnparseableOutput(detail) => {
                    let pinned = self.sampling_is_pinned();
                    let repeated = unparseable_before.as_deref() == Some(detail.as_str());
                    if (pinned && repeated) || retries >= self.config.retry.max_retries {
                        events.push(failed_attempt(
                            json!({ "event": "unparseable_output", "error": detail, "retries": retries, "pinned_sampling": pinned, "repeated": repeated }),
                            latency_ms,
                        ));
                        return Err(ProviderFailure::UnparseableOutput { detail, retries });
                    }
                    let wait = self.config.retry.delay(retries, None);
                    events.push(failed_attempt(
                        json!({
                            "event": "provider_retry",
                            "retry": retries + 1,
                            "error": detail,
                            "unparseable_output": true,
                            "retry_after_s": null,
                            "wait_ms": wait.as_secs_f64() * 1000.0,
                        }),
                        latency_ms,
                    ));
                    tracing::warn!(
                        "model {}: the endpoint could not parse the output; retry {}/{} in {} ms",
                        self.config.model,
                        retries + 1,
                        self.config.retry.max_retries,
                        wait.as_millis()
                    );
                    tokio::time::sleep(wait).await;
                    retries += 1;
                    unparseable_before = Some(detail);
                }
                AttemptOutcome::Transient { detail, retry_after } => {
                    unparseable_before = None;
                    if retries >= self.config.retry.max_retries {
                        events.push(failed_attempt(
                            json!({ "event": "provider_error", "retryable": true, "error": detail, "gave_up_after_retries": retries }),
                            latency_ms,
                        ));
                        return Err(ProviderFailure::Exhausted { detail, retries });
                    }
                    let wait = self.config.retry.delay(retries, retry_after);
                    events.push(failed_attempt(
                        json!({
                            "event": "provider_retry",
                            "retry": retries + 1,
                            "error": detail,
                            "retry_after_s": retry_after.map(|d| d.as_secs_f64()),
                            "wait_ms": wait.as_secs_f64() * 1000.0,
                        }),
                        latency_ms,
                    ));
                    // Once per retry, in the harness's words (async-openai's own lines are filtered).
                    tracing::warn!(
                        "model {}: {}; retry {}/{} in {} ms",
                        self.config.model,
                        detail.chars().take(200).collect::<String>(),
                        retries + 1,
                        self.config.retry.max_retries,
                        wait.as_millis()
                    );
                    tokio::time::sleep(wait).await;
                    retries += 1;
                }
            }
        }
    }

    /// Exactly one HTTP request, classified.
    async fn attempt(&self, body: &Value) -> AttemptOutcome {
        self.exchange(body).await.0
    }

    /// The chat-completions URL requests go to (with the query every request keeps).
    pub(crate) fn chat_url(&self) -> String {
        self.client_config.full_url("/chat/completions")
    }

    pub(crate) fn models_url(&self) -> String {
        self.client_config.full_url("/models")
    }

    /// Whether every request carries Azure's `api-version` query parameter.
    pub(crate) fn has_api_version(&self) -> bool {
        self.client_config.has_query("api-version")
    }

    /// `GET /models` with the key, headers and query every request carries: status and body.
    pub(crate) async fn list_models(&self) -> Result<(u16, String), reqwest::Error> {
        let response = self.http.get(self.client_config.url("/models")).query(&self.client_config.query()).headers(self.headers()).send().await?;
        let status = response.status().as_u16();
        Ok((status, response.text().await?))
    }

    /// What must never be written: every header value sent (`Bearer <key>`, extra headers) and
    /// the key alone. Values shorter than 8 bytes are left out: they cannot be told apart from
    /// ordinary words, and redacting those would mangle a provider's text.
    pub(crate) fn secret_values(&self) -> Vec<String> {
        let mut values: Vec<String> = self.headers().values().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect();
        values.extend(values.iter().filter_map(|v| v.strip_prefix("Bearer ")).map(str::to_owned).collect::<Vec<_>>());
        values.retain(|v| v.len() >= 8);
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values
    }

    /// `outcome` with every configured secret ([`Self::secret_values`]) replaced by
    /// `<redacted>` in its texts and in the answer's body.
    fn redacted(&self, outcome: AttemptOutcome) -> AttemptOutcome {
        let secrets = self.secret_values();
        if secrets.is_empty() {
            return outcome;
        }
        let clean = |text: String| redact(&secrets, text);
        match outcome {
            AttemptOutcome::Answer(response, mut raw) => {
                if redact_value(&secrets, &mut raw) {
                    // Parse again from the cleaned body, so the message the session keeps is clean too.
                    if let Ok(r) = serde_json::from_value::<ChatResponse>(raw.clone()) {
                        return AttemptOutcome::Answer(r, raw);
                    }
                }
                AttemptOutcome::Answer(response, raw)
            }
            AttemptOutcome::Transient { detail, retry_after } => AttemptOutcome::Transient { detail: clean(detail), retry_after },
            AttemptOutcome::Limit(d) => AttemptOutcome::Limit(clean(d)),
            AttemptOutcome::ContextExceeded(d) => AttemptOutcome::ContextExceeded(clean(d)),
            AttemptOutcome::UnparseableOutput(d) => AttemptOutcome::UnparseableOutput(clean(d)),
            AttemptOutcome::Fatal(d) => AttemptOutcome::Fatal(clean(d)),
        }
    }

    /// One request, classified as [`Self::complete`] classifies it, with what came back.
    pub(crate) async fn exchange(&self, body: &Value) -> (AttemptOutcome, Exchange) {
        let seen: Arc<Mutex<Option<(StatusCode, HeaderMap)>>> = Arc::default();
        let service = {
            let http = self.http.clone();
            let seen = seen.clone();
            tower::service_fn(move |factory: HttpRequestFactory| {
                let http = http.clone();
                let seen = seen.clone();
                async move {
                    let request = factory.build().await?;
                    let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
                    *seen.lock().unwrap() = Some((response.status(), response.headers().clone()));
                    Ok::<_, OpenAIError>(response)
                }
            })
        };
        let client = async_openai::Client::build(self.http.clone(), self.client_config.clone()).with_http_service(service);
        let result: Result<Value, OpenAIError> = client.chat().create_byot(body).await;
        let seen = seen.lock().unwrap().take();
        let exchange = Exchange::of(&result, seen.as_ref().map(|(s, _)| *s));
        (classify(result, seen), exchange)
    }
}

/// What replaces a secret in anything written or printed.
const REDACTED: &str = "<redacted>";

/// `text` with every secret replaced (longest first, so a key inside `Bearer <key>` goes whole).
pub(crate) fn redact(secrets: &[String], text: String) -> String {
    secrets.iter().fold(text, |t, secret| if t.contains(secret.as_str()) { t.replace(secret.as_str(), REDACTED) } else { t })
}

/// Redacts every string of `v` in place; whether anything changed.
fn redact_value(secrets: &[String], v: &mut Value) -> bool {
    match v {
        Value::String(s) if secrets.iter().any(|k| s.contains(k.as_str())) => {
            *s = redact(secrets, std::mem::take(s));
            true
        }
        Value::Array(items) => items.iter_mut().fold(false, |changed, i| redact_value(secrets, i) | changed),
        Value::Object(map) => map.values_mut().fold(false, |changed, i| redact_value(secrets, i) | changed),
        _ => false,
    }
}

/// A failed attempt's event with the attempt's own duration: a turn's record times only the
/// attempt that answered, so without this the time a failed attempt took (an output the endpoint
/// could not parse can take as long as a good one) could not be told from the harness's own.
fn failed_attempt(mut event: Value, latency_ms: f64) -> Value {
    event["latency_ms"] = json!(latency_ms);
    event
}

/// What one request got back, as far as async-openai keeps it: a body that is not JSON and a 5xx
/// body verbatim (it keeps the latter whole as the message); a chat completion re-serialised
/// from the JSON value it parsed (same content, keys may be reordered); a 4xx JSON error
/// re-serialised from the fields it parses (`message`, `type`, `param`, `code`). Never headers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Exchange {
    /// `None` when no HTTP answer arrived.
    pub status: Option<u16>,
    pub body: Option<String>,
    /// The body is the bytes as received (false for anything re-serialised).
    pub verbatim: bool,
}

impl Exchange {
    fn of(result: &Result<Value, OpenAIError>, status: Option<StatusCode>) -> Self {
        let status = status.map(|s| s.as_u16());
        let (body, verbatim) = match result {
            Ok(raw) => (Some(raw.to_string()), false),
            Err(OpenAIError::ApiError(api)) if api.status_code.is_server_error() => (Some(api.api_error.message.clone()), true),
            Err(OpenAIError::ApiError(api)) => {
                let e = &api.api_error;
                (Some(json!({ "error": { "message": e.message, "type": e.r#type, "param": e.param, "code": e.code } }).to_string()), false)
            }
            Err(OpenAIError::JSONDeserialize(_, body)) => (Some(body.clone()), true),
            Err(_) => (None, false),
        };
        Self { status, body, verbatim }
    }
}

/// What a turn's request produced.
#[derive(Debug, Clone)]
pub(crate) struct Completion {
    pub response: ChatResponse,
    /// The response body as received, for the transcript.
    pub raw: Value,
    pub usage: Usage,
    /// What the provider reported beyond usage, as given.
    pub extras: ProviderExtras,
    pub retries: u32,
    /// Of the attempt that answered.
    pub latency_ms: f64,
}

#[cfg(test)]
mod tests {
    use records::{ModelSpec, Provider, Temperature};

    use super::*;

    /// Keyless on loopback: building the client reads no environment and sends nothing.
    fn client(spec: &ModelSpec) -> OpenAiCompatible {
        OpenAiCompatible::with_key_source(ProviderConfig::for_model(spec, "http://127.0.0.1:8080/v1", "UNSET_KEY_VAR"), |_| None).unwrap()
    }

    #[test]
    fn a_model_specs_every_parameter_reaches_the_request_body() {
        let spec = crate::config::tests::every_field_set();
        let messages = [json!({ "role": "user", "content": "hi" })];
        assert_eq!(
            client(&spec).request_body(&messages, &[]),
            json!({
                "model": "m-7b",
                "messages": messages,
                "stream": false,
                "temperature": 0.25,
                "max_completion_tokens": 321,
                "seed": 42,
                // OpenRouter's unified field.
                "reasoning": { "effort": "low" },
            })
        );
        let default = ModelSpec { provider: Provider::OpenAiCompatible, temperature: Some(Temperature::ProviderDefault), ..ModelSpec::oracle() };
        assert_eq!(
            client(&default).request_body(&messages, &[]),
            json!({ "model": "oracle", "messages": messages, "stream": false }),
            "nothing the spec leaves unset is sent"
        );
    }
}
