//! Shared fixtures for the agent's tests: a fake OpenAI-compatible model that speaks the real
//! wire format (scripted replies, recorded requests), and real MCP servers — the `wrapper` over
//! streamable HTTP in-process, or over stdio as a child process that a test can kill.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{OpenAiCompatible, ProviderConfig, RetryPolicy, ServerConnection, StopSignal};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The variable the tests name as holding the key, and the key: distinctive, so a leak test can
/// search every written file for it.
pub const KEY_ENV: &str = "AGENT_TEST_MODEL_KEY";
pub const KEY: &str = "sk-test-7f3a9c1e-DO-NOT-WRITE-ME-42b8d6";
/// An extra header whose value is a secret too.
pub const SECRET_HEADER: &str = "x-gateway-token";
pub const SECRET_HEADER_VALUE: &str = "gw-secret-5e0c2d91-NEVER-RECORDED";

/// One scripted reply.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub delay: Duration,
    /// Runs when the request arrives, before the reply is sent.
    pub before: Option<Box<dyn FnOnce() + Send>>,
}

impl Reply {
    pub fn json(body: Value) -> Self {
        Self::raw(200, &body.to_string())
    }

    pub fn raw(status: u16, body: &str) -> Self {
        Self { status, headers: vec![("content-type".into(), "application/json".into())], body: body.into(), delay: Duration::ZERO, before: None }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }

    pub fn before(mut self, f: impl FnOnce() + Send + 'static) -> Self {
        self.before = Some(Box::new(f));
        self
    }
}

/// A request the fake received.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn messages(&self) -> &Vec<Value> {
        self.body["messages"].as_array().expect("messages")
    }

    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"].as_array().map(|t| t.iter().map(|d| d["function"]["name"].as_str().unwrap().to_owned()).collect()).unwrap_or_default()
    }
}

#[derive(Clone, Default)]
struct FakeState {
    script: Arc<Mutex<VecDeque<Reply>>>,
    received: Arc<Mutex<Vec<Received>>>,
    /// The answer to every `GET /v1/models` (status, body); none: 404, as from a server without
    /// the listing.
    models: Arc<Mutex<Option<(u16, String)>>>,
    models_received: Arc<Mutex<Vec<Received>>>,
}

pub struct FakeModel {
    /// `http://127.0.0.1:PORT/v1`
    pub base_url: String,
    state: FakeState,
    server: tokio::task::JoinHandle<()>,
}

impl FakeModel {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let state = FakeState::default();
        state.script.lock().unwrap().extend(replies);
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(chat_completions))
            .route("/v1/models", axum::routing::get(models))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { base_url, state, server }
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    pub fn unanswered(&self) -> usize {
        self.state.script.lock().unwrap().len()
    }

    /// Answers every `GET /v1/models` with `status` and `body`.
    pub fn serve_models(&self, status: u16, body: &str) {
        *self.state.models.lock().unwrap() = Some((status, body.to_owned()));
    }

    /// Answers `GET /v1/models` with an OpenAI-style listing of `ids`.
    pub fn list_models(&self, ids: &[&str]) {
        let data: Vec<Value> = ids.iter().map(|id| json!({ "id": id, "object": "model", "created": 1_700_000_000, "owned_by": "fake" })).collect();
        self.serve_models(200, &json!({ "object": "list", "data": data }).to_string());
    }

    /// The `GET /v1/models` requests received (headers only; they have no body).
    pub fn models_received(&self) -> Vec<Received> {
        self.state.models_received.lock().unwrap().clone()
    }
}

async fn models(State(state): State<FakeState>, headers: HeaderMap) -> Response {
    let headers = headers.iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("<binary>").to_owned())).collect();
    state.models_received.lock().unwrap().push(Received { headers, body: Value::Null });
    match state.models.lock().unwrap().clone() {
        Some((status, body)) => (StatusCode::from_u16(status).unwrap(), [("content-type", "application/json")], body).into_response(),
        None => (StatusCode::NOT_FOUND, "fake model: no model listing").into_response(),
    }
}

/// A base URL where nothing listens: a port the OS just handed out and that was released.
pub async fn nobody_listening() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/v1")
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn chat_completions(State(state): State<FakeState>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or_else(|e| json!({ "unparseable_request": e.to_string() }));
    let headers = headers.iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("<binary>").to_owned())).collect();
    state.received.lock().unwrap().push(Received { headers, body });
    let reply = state.script.lock().unwrap().pop_front();
    let Some(reply) = reply else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "fake model: script exhausted").into_response();
    };
    if let Some(f) = reply.before {
        f();
    }
    tokio::time::sleep(reply.delay).await;
    let mut response = (StatusCode::from_u16(reply.status).unwrap(), reply.body).into_response();
    for (k, v) in reply.headers {
        response.headers_mut().insert(axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
    }
    response
}

/// A chat completion asking for `calls` as (id, name, arguments-as-sent).
pub fn tool_calls(calls: &[(&str, &str, &str)], usage: Value) -> Value {
    let calls: Vec<Value> =
        calls.iter().map(|(id, name, args)| json!({ "id": id, "type": "function", "function": { "name": name, "arguments": args } })).collect();
    json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1_700_000_000, "model": "fake-model",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": null, "tool_calls": calls }, "finish_reason": "tool_calls" }],
        "usage": usage,
    })
}

/// A chat completion with a text answer and no tool calls.
pub fn text(content: &str, usage: Value) -> Value {
    json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1_700_000_000, "model": "fake-model",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": content }, "finish_reason": "stop" }],
        "usage": usage,
    })
}

pub fn usage(prompt: u64, completion: u64) -> Value {
    json!({ "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion })
}

/// Tiny delays so fault tests run in milliseconds.
pub fn fast_retry(max_retries: u32) -> RetryPolicy {
    RetryPolicy { max_retries, base_delay: Duration::from_millis(2), max_delay: Duration::from_secs(2), retry_after_scale: 0.1 }
}

pub fn config(base_url: &str) -> ProviderConfig {
    let mut c = ProviderConfig::new(base_url, KEY_ENV, "fake-model");
    c.temperature = Some(0.0);
    c.max_tokens = Some(512);
    c.seed = Some(7);
    c.request_timeout = Duration::from_secs(5);
    c.extra_headers = vec![(SECRET_HEADER.into(), SECRET_HEADER_VALUE.into())];
    c.retry = fast_retry(3);
    c
}

/// The provider with the test key, looked up by name as in production.
pub fn provider(config: ProviderConfig) -> OpenAiCompatible {
    OpenAiCompatible::with_key_source(config, |name| (name == KEY_ENV).then(|| KEY.to_owned())).expect("provider")
}

pub async fn backend() -> backend::local::LocalBackend {
    agent::config::install_crypto_provider();
    backend::local::LocalBackend::start(backend::WorldSpec::default()).await.expect("a backend on real Postgres")
}

/// The `wrapper` server over streamable HTTP, in-process, fronting `backend_url`.
pub struct HttpServer {
    pub conn: ServerConnection,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn wrapper_http(backend_url: &str) -> HttpServer {
    // The servers' backend client is a reqwest client too (see install_crypto_provider).
    agent::config::install_crypto_provider();
    let router = servers::registry::find("wrapper").unwrap().launcher().unwrap().http_router(servers::BackendClient::new(backend_url), Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    HttpServer { conn: ServerConnection::Http { url: format!("http://{addr}/mcp"), protocol: Default::default() }, task }
}

/// For faults that end before any tool runs: the server lists its tools without a backend.
pub async fn wrapper_without_backend() -> HttpServer {
    wrapper_http("http://127.0.0.1:1").await
}

pub const TASK: &str = "What is the name of customer 1?";

pub async fn run(conn: &ServerConnection, p: &OpenAiCompatible, stop: &StopSignal, cap: u32) -> agent::SessionOutcome {
    tokio::time::timeout(
        Duration::from_secs(60),
        agent::session::run(conn, &servers::distractors::Distractors::none(), TASK, agent::SYSTEM_PROMPT, cap, p, stop),
    )
    .await
    .expect("the session ends")
}
