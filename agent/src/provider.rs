//! The model provider: one OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
//! llama.cpp's server, LiteLLM, …), with retries that the harness decides and counts itself.
//!
//! * Requests go through async-openai's `create_byot` path: the request is JSON we build, and the
//!   response is parsed into [`ChatResponse`], our own tolerant type (real providers omit
//!   `total_tokens`, `created` or `object`, invent finish reasons such as `"eos"`, send null usage).
//! * async-openai's default client wraps every request in a retry layer (three retries of 429/5xx
//!   within about 0.7 s) that the caller never sees. We install our own tower service through
//!   its `middleware` feature instead, so each HTTP request is exactly one attempt; the retry loop
//!   lives in [`OpenAiCompatible::complete`] and every retry is counted. The service also keeps
//!   the status and headers of the attempt, which async-openai's error type drops (`Retry-After`).
//! * An endpoint that says it could not parse the model's own output (llama.cpp's, Ollama's
//!   wording in [`UNPARSEABLE_OUTPUT_PHRASES`]) is told apart from other server errors: it is the
//!   model's doing. With pinned sampling it is retried once: a second identical answer shows the
//!   model writes the same thing again, and more retries would only spend tokens. Otherwise it is
//!   retried as any transient fault.
//! * The API key is read once from a named environment variable and lives only inside
//!   async-openai's `SecretString`; extra header values (possibly secrets too) live only in its
//!   header map. Neither is reachable through `Debug`, [`ProviderConfig::record_params`] or any
//!   transcript event.
//! * The endpoint's dialect ([`crate::dialect`]) decides how the key is sent (`Authorization:
//!   Bearer`, Azure's `api-key`), the query every request keeps, and the names of the parameters;
//!   a parameter goes out only when the plan sets it.
//! * A loopback endpoint (127.0.0.0/8, `[::1]`, `localhost`) may be used without a key: local
//!   servers (llama.cpp, Ollama, vLLM) need none, and a made-up key would be recorded as if one
//!   authenticated the run. Then no auth header is sent and [`OpenAiCompatible::auth`]
//!   says [`Auth::None`]. Anywhere else a missing key refuses, as a remote endpoint that answers
//!   without one is a misconfiguration worth stopping for.
//! * What a provider reports beyond usage — llama.cpp's `timings`, `system_fingerprint`, the
//!   model id that answered — is kept per turn as given ([`ProviderExtras`]), null when absent.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_openai::config::Config;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use records::{Auth, ProviderExtras};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::config::{ProviderConfig, SetupError, install_crypto_provider, is_loopback_url};
use crate::dialect::EndpointConfig;
use crate::record::Usage;

/// Phrases (matched case-insensitively) that make a 200 answer without tool calls a quota or
/// session-limit refusal rather than a model's answer. Deliberately few and specific: a false
/// match stops the whole run, loudly; a miss would score a refusal as the arm's failure.
pub const LIMIT_PHRASES: &[&str] = &["usage limit", "session limit", "quota exceeded", "exceeded your current quota"];

/// Phrases (matched case-insensitively in a 5xx answer) by which an endpoint says that its own
/// tool-call parser rejected what the model wrote. That is the model's output, so the arm's
/// failure, not the infrastructure's: a session it ends is valid, flagged `unparseable_output`.
/// vLLM has no such answer: its tool parsers catch their own failure, log "Error in extracting
/// tool call from response." and return the model's output as `content` with a 200 — a call
/// written as text, which [`crate::text_call`] recognises.
pub const UNPARSEABLE_OUTPUT_PHRASES: &[&str] = &[
    // llama.cpp's server (common/chat.cpp, `common_chat_parse`): "The model produced output that
    // does not match the expected <format> format" (`peg-native`, `Content-only`, …), HTTP 500,
    // `"type":"server_error"`.
    "the model produced output that does not match the expected",
    // Ollama's tool-call parsers (e.g. the harmony parser behind gpt-oss): "error parsing tool
    // call: raw='…', err=…", HTTP 500; on /v1 wrapped as `{"error":{"message":…,"type":"api_error"}}`
    // (ollama/ollama issues #12064, #12884, #17638).
    "error parsing tool call",
];

/// The error `type`/`code` of a 429 that is a quota refusal, not a rate limit.
const INSUFFICIENT_QUOTA: &str = "insufficient_quota";

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
    pub fn request_body(&self, messages: &[Value], tools: &[Value]) -> Value {
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
    pub async fn complete(&self, messages: &[Value], tools: &[Value], events: &mut Vec<Value>) -> Result<Completion, ProviderFailure> {
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
pub const REDACTED: &str = "<redacted>";

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
pub struct Completion {
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

/// Why a turn got no answer. `detail` is the provider's text, verbatim where it sent one.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderFailure {
    /// Transient faults past the retry bound, or a fault not worth retrying (400, 401, 404, …).
    Exhausted { detail: String, retries: u32 },
    /// A quota or session/usage limit: the run must stop.
    Limit { detail: String, retries: u32 },
    /// The request no longer fits the model's context window (not retried: it only grows).
    ContextExceeded { detail: String, retries: u32 },
    /// The endpoint could not parse the model's own output (see [`UNPARSEABLE_OUTPUT_PHRASES`]),
    /// again on a retry that, with pinned sampling, repeated it word for word, or past the bound.
    UnparseableOutput { detail: String, retries: u32 },
}

impl ProviderFailure {
    /// The provider's last answer (verbatim where it sent one), or what went wrong on the way.
    pub fn detail(&self) -> &str {
        match self {
            Self::Exhausted { detail, .. } | Self::Limit { detail, .. } | Self::ContextExceeded { detail, .. } | Self::UnparseableOutput { detail, .. } => {
                detail
            }
        }
    }

    pub fn retries(&self) -> u32 {
        match self {
            Self::Exhausted { retries, .. } | Self::Limit { retries, .. } | Self::ContextExceeded { retries, .. } | Self::UnparseableOutput { retries, .. } => {
                *retries
            }
        }
    }
}

#[derive(Debug)]
pub(crate) enum AttemptOutcome {
    Answer(ChatResponse, Value),
    Transient { detail: String, retry_after: Option<Duration> },
    Limit(String),
    ContextExceeded(String),
    UnparseableOutput(String),
    Fatal(String),
}

fn classify(result: Result<Value, OpenAIError>, seen: Option<(StatusCode, HeaderMap)>) -> AttemptOutcome {
    let status = seen.as_ref().map(|(s, _)| *s);
    let retry_after = seen.as_ref().and_then(|(_, h)| retry_after(h));
    match result {
        Ok(raw) => match serde_json::from_value::<ChatResponse>(raw.clone()) {
            Ok(r) if !r.choices.is_empty() => AttemptOutcome::Answer(r, raw),
            Ok(_) => AttemptOutcome::Transient { detail: format!("response has no choices: {raw}"), retry_after: None },
            Err(e) => AttemptOutcome::Transient { detail: format!("response is not a chat completion ({e}): {raw}"), retry_after: None },
        },
        Err(OpenAIError::ApiError(api)) => {
            let e = &api.api_error;
            let mut detail = format!("HTTP {}: {}", api.status_code, e.message);
            if e.r#type.is_some() || e.code.is_some() {
                detail.push_str(&format!(" [type: {}, code: {}", e.r#type.as_deref().unwrap_or("-"), e.code.as_deref().unwrap_or("-")));
                // The field a 400 names (OpenAI's `param`): the hint names the flag that sets it.
                if let Some(param) = e.param.as_deref() {
                    detail.push_str(&format!(", param: {param}"));
                }
                detail.push(']');
            }
            let quota = [e.r#type.as_deref(), e.code.as_deref()].contains(&Some(INSUFFICIENT_QUOTA));
            let overflow = e.code.as_deref() == Some(CONTEXT_LENGTH_EXCEEDED) || is_context_overflow(&e.message);
            match api.status_code.as_u16() {
                // async-openai keeps a 5xx body whole as the message, so the phrase is found in it.
                500..=599 if is_unparseable_output(&e.message) => AttemptOutcome::UnparseableOutput(detail),
                429 if quota => AttemptOutcome::Limit(detail),
                400 | 413 if overflow => AttemptOutcome::ContextExceeded(detail),
                s if is_transient_status(s) => AttemptOutcome::Transient { detail, retry_after },
                _ => AttemptOutcome::Fatal(detail),
            }
        }
        // A body that is not JSON: async-openai keeps it verbatim.
        Err(OpenAIError::JSONDeserialize(e, body)) => {
            let code = status.map(|s| s.as_u16()).unwrap_or(200);
            let detail = format!("HTTP {code}: unparseable body ({e}): {body}");
            if (500..600).contains(&code) && is_unparseable_output(&body) {
                AttemptOutcome::UnparseableOutput(detail)
            } else if (200..300).contains(&code) || is_transient_status(code) {
                AttemptOutcome::Transient { detail, retry_after }
            } else if matches!(code, 400 | 413) && is_context_overflow(&body) {
                AttemptOutcome::ContextExceeded(detail)
            } else {
                AttemptOutcome::Fatal(detail)
            }
        }
        Err(OpenAIError::Reqwest(e)) if e.is_builder() => AttemptOutcome::Fatal(error_chain(&e)),
        Err(OpenAIError::Reqwest(e)) => {
            let what = if e.is_timeout() { "request timed out" } else { "request failed" };
            AttemptOutcome::Transient { detail: format!("{what}: {}", error_chain(&e)), retry_after: None }
        }
        Err(other) => AttemptOutcome::Fatal(error_chain(&other)),
    }
}

/// OpenAI's error code for a request longer than the model's context window.
const CONTEXT_LENGTH_EXCEEDED: &str = "context_length_exceeded";

/// Whether a 400/413 error text says the request does not fit the context window, in the words
/// of OpenAI, vLLM, llama.cpp's server, LiteLLM and other OpenAI-compatible servers.
fn is_context_overflow(message: &str) -> bool {
    const PHRASES: &[&str] = &[
        CONTEXT_LENGTH_EXCEEDED,
        "maximum context length",
        "context window",
        "exceeds the available context size",
        "exceed_context_size",
        "prompt is too long",
        "input is too long",
        "too many tokens",
    ];
    let m = message.to_lowercase();
    PHRASES.iter().any(|p| m.contains(p))
}

fn is_unparseable_output(message: &str) -> bool {
    let m = message.to_lowercase();
    UNPARSEABLE_OUTPUT_PHRASES.iter().any(|p| m.contains(p))
}

fn is_transient_status(code: u16) -> bool {
    code == 408 || code == 429 || (500..600).contains(&code)
}

/// `Retry-After` in seconds (the HTTP-date form is not honoured; backoff applies instead).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    let secs: f64 = v.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// A chat completion as real providers send it: everything optional that any of them omits.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatResponse {
    #[serde(default)]
    pub id: Option<String>,
    /// Kept raw, like the fields below: an odd type in a field nobody scores must not lose the
    /// whole answer.
    #[serde(default)]
    pub model: Option<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub choices: Vec<Choice>,
    /// Kept raw and read field by field: one odd usage field must not lose the whole answer.
    #[serde(default)]
    pub usage: Option<Value>,
    #[serde(default)]
    pub system_fingerprint: Option<Value>,
    /// llama.cpp's server: prompt and generation counts and milliseconds of this request.
    #[serde(default)]
    pub timings: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Choice {
    #[serde(default)]
    pub message: Option<AssistantMessage>,
    /// Free text: providers use values OpenAI does not (`"eos"`).
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AssistantMessage {
    /// A string, or (some providers) an array of content parts.
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub tool_calls: Vec<WireToolCall>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct WireToolCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: WireFunction,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct WireFunction {
    #[serde(default)]
    pub name: String,
    /// A JSON-encoded string per the API; some servers send the object itself.
    #[serde(default)]
    pub arguments: Value,
}

impl WireFunction {
    /// The arguments as the model wrote them.
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

impl ChatResponse {
    /// The first choice's message (the only one we ask for).
    pub fn message(&self) -> AssistantMessage {
        self.choices.first().and_then(|c| c.message.clone()).unwrap_or_default()
    }

    pub fn finish_reason(&self) -> Option<String> {
        self.choices.first().and_then(|c| c.finish_reason.clone())
    }

    /// Usage exactly as sent: a missing, null or non-integer field is `None`.
    pub fn usage(&self) -> Usage {
        let Some(u) = self.usage.as_ref().filter(|u| u.is_object()) else {
            return Usage::default();
        };
        let int = |v: &Value| v.as_u64();
        Usage {
            prompt_tokens: u.get("prompt_tokens").and_then(int),
            completion_tokens: u.get("completion_tokens").and_then(int),
            cached_prompt_tokens: u.pointer("/prompt_tokens_details/cached_tokens").and_then(int),
            reasoning_tokens: u.pointer("/completion_tokens_details/reasoning_tokens").and_then(int),
            total_tokens: u.get("total_tokens").and_then(int),
        }
    }

    /// What the provider reported beyond usage. `requested` is the model id asked for: the served
    /// id is kept only when it differs (most servers echo the request, which says nothing).
    pub fn extras(&self, requested: &str) -> ProviderExtras {
        let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_owned);
        ProviderExtras {
            timings: self.timings.clone().filter(|t| !t.is_null()),
            system_fingerprint: text(&self.system_fingerprint),
            served_model: text(&self.model).filter(|m| m != requested),
        }
    }

    /// The verbatim text when this answer is a quota or session-limit refusal.
    pub(crate) fn limit_refusal(&self) -> Option<String> {
        let m = self.message();
        if !m.tool_calls.is_empty() {
            return None;
        }
        let text = m.text()?;
        let lower = text.to_lowercase();
        LIMIT_PHRASES.iter().any(|p| lower.contains(p)).then_some(text)
    }
}

impl AssistantMessage {
    /// The text content, joining content parts; `None` when there is none.
    pub fn text(&self) -> Option<String> {
        match self.content.as_ref()? {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => Some(parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("")),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> ChatResponse {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn tolerates_what_real_providers_send() {
        let r = parse(json!({
            "choices": [{ "message": { "role": "assistant", "content": "hi" }, "finish_reason": "eos" }],
            "usage": { "prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": { "cached_tokens": null } }
        }));
        assert_eq!(r.finish_reason().as_deref(), Some("eos"));
        assert_eq!(r.message().text().as_deref(), Some("hi"));
        assert_eq!(
            r.usage(),
            Usage { prompt_tokens: Some(12), completion_tokens: Some(3), cached_prompt_tokens: None, reasoning_tokens: None, total_tokens: None }
        );
        let null_usage = parse(json!({ "choices": [{ "message": { "content": null, "tool_calls": null } }], "usage": null }));
        assert_eq!(null_usage.usage(), Usage::default());
        assert!(null_usage.message().tool_calls.is_empty());
    }

    #[test]
    fn limit_phrases_only_count_without_tool_calls() {
        let text = parse(json!({ "choices": [{ "message": { "content": "You have hit your Usage Limit. Try again later." } }] }));
        assert!(text.limit_refusal().is_some());
        let ordinary = parse(json!({ "choices": [{ "message": { "content": "Customer 7 is Acme." } }] }));
        assert!(ordinary.limit_refusal().is_none());
        let with_call = parse(
            json!({ "choices": [{ "message": { "content": "usage limit", "tool_calls": [{ "id": "a", "type": "function", "function": { "name": "f", "arguments": "{}" } }] } }] }),
        );
        assert!(with_call.limit_refusal().is_none());
    }

    #[test]
    fn retry_after_seconds_parse() {
        let mut h = HeaderMap::new();
        h.insert(reqwest::header::RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(reqwest::header::RETRY_AFTER, "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }
}
