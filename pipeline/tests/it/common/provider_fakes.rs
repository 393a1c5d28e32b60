//! Fakes of real providers' OpenAI-compatible endpoints, each following that provider's
//! documented rules — where the key goes, which parameters it refuses and with which error body
//! (verbatim), how it lists models, what usage it reports — so that the harness's dialects are
//! tested against the behaviour users meet, not against a server that accepts anything.
//!
//! The sources of each rule are named beside it (docs/models.md cites them too). Every fake
//! answers the preflight's probe (recognised by its one function, `preflight_echo`) with a
//! native tool call and a session's request with a plain final answer, and records every
//! request (path, query, headers, body) for the tests to read.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Which provider's rules a fake follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// api.openai.com serving a reasoning model (o-series, gpt-5 family).
    OpenAiReasoning,
    /// api.openai.com serving a chat model (gpt-4o, gpt-4.1).
    OpenAiChat,
    /// Azure OpenAI, a reasoning deployment behind `/openai/deployments/{name}`.
    Azure,
    /// Anthropic's OpenAI SDK compatibility layer.
    Anthropic,
    /// Google's Gemini OpenAI compatibility endpoint.
    Gemini,
    /// OpenRouter.
    OpenRouter,
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn is_probe(&self) -> bool {
        self.body["tools"].as_array().is_some_and(|t| t.iter().any(|f| f["function"]["name"] == "preflight_echo"))
    }

    /// The body without the conversation and the functions: the parameters sent.
    pub fn parameters(&self) -> Value {
        let mut p = self.body.clone();
        if let Some(o) = p.as_object_mut() {
            for k in ["messages", "tools", "tool_choice"] {
                o.remove(k);
            }
        }
        p
    }
}

struct Shared {
    provider: Provider,
    key: String,
    model: String,
    seen: Mutex<Vec<Seen>>,
}

pub struct ProviderFake {
    /// The base URL a user would give for this provider, on this fake's port.
    pub base_url: String,
    /// The same without the query (Azure: without `api-version`).
    pub base_url_without_query: String,
    shared: Arc<Shared>,
}

/// The model id every fake serves.
pub const REASONING_MODEL: &str = "gpt-5-mini";

impl ProviderFake {
    pub fn start(provider: Provider, key: &str, model: &str) -> Self {
        let shared = Arc::new(Shared { provider, key: key.to_owned(), model: model.to_owned(), seen: Mutex::default() });
        let (tx, rx) = std::sync::mpsc::channel();
        let state = shared.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let app = axum::Router::new().fallback(handle).with_state(state);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        let root = format!("http://{addr}");
        let (base, query) = match provider {
            Provider::OpenAiReasoning | Provider::OpenAiChat | Provider::Anthropic => (format!("{root}/v1"), ""),
            Provider::Azure => (format!("{root}/openai/deployments/{model}"), "?api-version=2024-10-21"),
            Provider::Gemini => (format!("{root}/v1beta/openai/"), ""),
            Provider::OpenRouter => (format!("{root}/api/v1"), ""),
        };
        Self { base_url: format!("{base}{query}"), base_url_without_query: base, shared }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// Chat requests of sessions (the probe's excluded).
    pub fn session_requests(&self) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.path.ends_with("/chat/completions") && !s.is_probe()).collect()
    }

    pub fn probes(&self) -> Vec<Seen> {
        self.seen().into_iter().filter(Seen::is_probe).collect()
    }
}

async fn handle(State(s): State<Arc<Shared>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let seen = Seen {
        method: method.to_string(),
        path: uri.path().to_owned(),
        query: uri.query().map(str::to_owned),
        headers: headers.iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("<binary>").to_owned())).collect(),
        body: body.clone(),
    };
    s.seen.lock().unwrap().push(seen.clone());
    let chat = uri.path().ends_with("/chat/completions") && method == Method::POST;
    let models = uri.path().ends_with("/models") && method == Method::GET;
    match s.provider {
        Provider::OpenAiReasoning | Provider::OpenAiChat => openai(&s, &seen, chat, models),
        Provider::Azure => azure(&s, &seen, chat),
        Provider::Anthropic => anthropic(&s, &seen, chat, models),
        Provider::Gemini => gemini(&s, &seen, chat, models),
        Provider::OpenRouter => openrouter(&s, &seen, chat, models),
    }
}

fn bearer_ok(s: &Shared, seen: &Seen) -> bool {
    seen.header("authorization") == Some(format!("Bearer {}", s.key).as_str())
}

fn listing(ids: &[String]) -> Response {
    let data: Vec<Value> = ids.iter().map(|id| json!({ "id": id, "object": "model", "owned_by": "fake" })).collect();
    Json(json!({ "object": "list", "data": data })).into_response()
}

fn raw(status: u16, body: &str) -> Response {
    (StatusCode::from_u16(status).unwrap(), [("content-type", "application/json")], body.to_owned()).into_response()
}

/// OpenAI's 400 `invalid_request_error` body.
fn openai_400(message: &str, param: &str, code: &str) -> Response {
    let body = json!({ "error": { "message": message, "type": "invalid_request_error", "param": param, "code": code } });
    raw(400, &serde_json::to_string_pretty(&body).unwrap())
}

/// A number as OpenAI quotes it back in an error ("does not support 0 with this model").
fn quoted(v: &Value) -> String {
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 => format!("{}", f as i64),
        Some(f) => f.to_string(),
        None => v.to_string(),
    }
}

/// The rules of OpenAI's reasoning models, shared by Azure's reasoning deployments (the same
/// error bodies are quoted from both):
/// * `max_tokens` → 400 `unsupported_parameter` "Use 'max_completion_tokens' instead."
/// * any temperature but 1 → 400 `unsupported_value` "Only the default (1) value is supported."
/// * a `reasoning_effort` outside the model's list → 400 `unsupported_value` listing them.
fn reasoning_rules(body: &Value) -> Option<Response> {
    if body.get("max_tokens").is_some() {
        return Some(openai_400(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            "max_tokens",
            "unsupported_parameter",
        ));
    }
    if let Some(t) = body.get("temperature").filter(|t| t.as_f64() != Some(1.0)) {
        return Some(openai_400(
            &format!("Unsupported value: 'temperature' does not support {} with this model. Only the default (1) value is supported.", quoted(t)),
            "temperature",
            "unsupported_value",
        ));
    }
    if let Some(e) = body.get("reasoning_effort").and_then(Value::as_str).filter(|e| !["minimal", "low", "medium", "high"].contains(e)) {
        return Some(openai_400(
            &format!(
                "Unsupported value: 'reasoning_effort' does not support '{e}' with this model. Supported values are: 'minimal', 'low', 'medium', and 'high'."
            ),
            "reasoning_effort",
            "unsupported_value",
        ));
    }
    None
}

/// A chat model's rule: temperature within [0, 2], else 400 `decimal_above_max_value`.
fn chat_rules(body: &Value) -> Option<Response> {
    let t = body.get("temperature").and_then(Value::as_f64)?;
    (t > 2.0).then(|| {
        openai_400(
            &format!("Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got {t} instead."),
            "temperature",
            "decimal_above_max_value",
        )
    })
}

/// What a session or the probe gets once the request is accepted. Reasoning models report the
/// reasoning part of `completion_tokens` and the cached part of `prompt_tokens`.
fn accepted(s: &Shared, seen: &Seen, usage: Value) -> Response {
    let message = if seen.is_probe() {
        json!({ "role": "assistant", "content": null, "tool_calls": [
            { "id": "call_1", "type": "function", "function": { "name": "preflight_echo", "arguments": "{\"word\":\"ready\"}" } }
        ] })
    } else {
        json!({ "role": "assistant", "content": "I could not finish the task." })
    };
    let finish = if seen.is_probe() { "tool_calls" } else { "stop" };
    Json(json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": s.model,
        "choices": [{ "index": 0, "message": message, "finish_reason": finish }],
        "usage": usage,
    }))
    .into_response()
}

fn reasoning_usage() -> Value {
    json!({
        "prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160,
        "prompt_tokens_details": { "cached_tokens": 64, "audio_tokens": 0 },
        "completion_tokens_details": { "reasoning_tokens": 32, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0 }
    })
}

fn openai(s: &Shared, seen: &Seen, chat: bool, models: bool) -> Response {
    if !bearer_ok(s, seen) {
        // OpenAI's 401 for a wrong key.
        return raw(
            401,
            r#"{"error":{"message":"Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
        );
    }
    if models {
        return listing(&[s.model.clone(), "gpt-4o".into()]);
    }
    if !chat {
        return raw(404, r#"{"error":{"message":"Invalid URL","type":"invalid_request_error","param":null,"code":null}}"#);
    }
    let rejected = if s.provider == Provider::OpenAiReasoning { reasoning_rules(&seen.body) } else { chat_rules(&seen.body) };
    if let Some(r) = rejected {
        return r;
    }
    let usage = if s.provider == Provider::OpenAiReasoning {
        reasoning_usage()
    } else {
        json!({ "prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128, "prompt_tokens_details": { "cached_tokens": 0 }, "completion_tokens_details": { "reasoning_tokens": 0 } })
    };
    accepted(s, seen, usage)
}

/// Azure OpenAI (classic deployment URLs): the key in `api-key` (a bearer key is refused with
/// Azure's 401), `api-version` required (without it: 404 "Resource not found"), no model
/// listing under a deployment; a reasoning deployment follows OpenAI's reasoning rules.
fn azure(s: &Shared, seen: &Seen, chat: bool) -> Response {
    if seen.header("api-key") != Some(s.key.as_str()) {
        return raw(
            401,
            r#"{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}"#,
        );
    }
    let versioned = seen.query.as_deref().is_some_and(|q| q.split('&').any(|p| p.starts_with("api-version=")));
    if !chat || !versioned {
        return raw(404, r#"{"error":{"code":"404","message":"Resource not found"}}"#);
    }
    reasoning_rules(&seen.body).unwrap_or_else(|| accepted(s, seen, reasoning_usage()))
}

/// Anthropic's compatibility layer: a bearer key for chat; `GET /v1/models` is the native API,
/// which wants `x-api-key` and answers a bearer request with its native 401. It ignores
/// `reasoning_effort` and `seed` and reports no token details.
fn anthropic(s: &Shared, seen: &Seen, chat: bool, models: bool) -> Response {
    if models {
        return raw(401, r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CFake"}"#);
    }
    if !bearer_ok(s, seen) {
        return raw(401, r#"{"error":{"type":"authentication_error","message":"invalid x-api-key"}}"#);
    }
    if !chat {
        return raw(404, r#"{"error":{"type":"not_found_error","message":"Not found"}}"#);
    }
    accepted(s, seen, json!({ "prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128 }))
}

/// Gemini's compatibility endpoint: errors come as a JSON array of Google RPC errors; a bad key
/// is a 400 `API_KEY_INVALID`; unknown request fields are refused; the listing's ids carry a
/// `models/` prefix.
fn gemini(s: &Shared, seen: &Seen, chat: bool, models: bool) -> Response {
    let google_error = |message: &str| -> Response {
        let body = json!([{ "error": { "code": 400, "message": message, "status": "INVALID_ARGUMENT" } }]);
        raw(400, &serde_json::to_string_pretty(&body).unwrap())
    };
    if !bearer_ok(s, seen) {
        let body = json!([{ "error": {
            "code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
            "details": [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
                          "metadata": { "service": "generativelanguage.googleapis.com" } }]
        } }]);
        return raw(400, &serde_json::to_string_pretty(&body).unwrap());
    }
    if models {
        return listing(&[format!("models/{}", s.model), "models/text-embedding-004".into()]);
    }
    if !chat {
        return raw(404, "[]");
    }
    const KNOWN: &[&str] = &[
        "model",
        "messages",
        "tools",
        "tool_choice",
        "temperature",
        "top_p",
        "n",
        "stream",
        "stop",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "reasoning_effort",
        "response_format",
    ];
    if let Some(unknown) = seen.body.as_object().and_then(|o| o.keys().find(|k| !KNOWN.contains(&k.as_str()))) {
        return google_error(&format!("Invalid JSON payload received. Unknown name \"{unknown}\": Cannot find field."));
    }
    if let Some(e) = seen.body.get("reasoning_effort").and_then(Value::as_str).filter(|e| !["none", "low", "medium", "high"].contains(e)) {
        return google_error(&format!("Invalid reasoning_effort: {e}. Valid values are: high, low, medium, none"));
    }
    accepted(s, seen, json!({ "prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160, "completion_tokens_details": { "reasoning_tokens": 32 } }))
}

/// OpenRouter: a bearer key, its own error shape (`code` is the HTTP status as a number), the
/// effort as `reasoning: {effort}`, and usage with reasoning and cached tokens always present.
fn openrouter(s: &Shared, seen: &Seen, chat: bool, models: bool) -> Response {
    if models {
        return listing(std::slice::from_ref(&s.model));
    }
    if !bearer_ok(s, seen) {
        return raw(401, r#"{"error":{"code":401,"message":"No auth credentials found"}}"#);
    }
    if !chat {
        return raw(404, r#"{"error":{"code":404,"message":"Not Found"}}"#);
    }
    if let Some(e) =
        seen.body.pointer("/reasoning/effort").and_then(Value::as_str).filter(|e| !["xhigh", "high", "medium", "low", "minimal", "none"].contains(e))
    {
        return raw(400, &json!({ "error": { "code": 400, "message": format!("Invalid reasoning effort: {e}") } }).to_string());
    }
    accepted(
        s,
        seen,
        json!({
            "prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160, "cost": 0.00042,
            "prompt_tokens_details": { "cached_tokens": 64, "cache_write_tokens": 0 },
            "completion_tokens_details": { "reasoning_tokens": 32 }
        }),
    )
}
