//! A small OpenAI-compatible endpoint for the pipeline's binary tests: `GET /v1/models` and
//! `POST /v1/chat/completions`, speaking the wire format real servers speak, with one behaviour
//! per [`Mode`]. It runs on its own thread so `#[test]` functions can drive the real binary.
//!
//! The endpoint preflight is recognised by the one function it offers (`preflight_echo`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

pub const MODEL: &str = "fake-model";

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// Native tool calls for the probe; sessions get a plain final answer.
    Native,
    /// Every call written as text in `content`, as llama.cpp does without a tool-capable template.
    TextCalls,
    /// OpenAI's 404 `model_not_found` on chat; a listing without the model.
    UnknownModel,
    /// The probe passes; sessions get a 429 `insufficient_quota`.
    QuotaInSessions,
    /// The probe passes; sessions get a 400 (not retried).
    BadRequestInSessions,
    /// The probe passes; sessions get a 400 whose text quotes every header sent, as some
    /// gateways do: the key and extra header values come back in the error body.
    EchoingBadRequestInSessions,
    /// The probe passes; session requests wait this long before a plain answer.
    SlowSessions(Duration),
    /// The probe passes; a session request waits until `parties` session requests are in
    /// flight at once (or `wait` has passed), then gets a plain answer. Parallel clients meet at
    /// once; a client that sends one request at a time waits `wait` each time.
    Rendezvous { parties: usize, wait: Duration },
    /// Sessions get a plain answer while their request holds at most this many messages; past
    /// it, OpenAI's 400 `context_length_exceeded`, verbatim.
    ContextWindow { max_messages: usize },
    /// The probe passes; a session's first request gets a native call of the first offered
    /// function (`{}` as arguments), the next a plain answer. Usage grows with the messages sent
    /// (prompt 100 + 7 per message, 40 of them cached after the first request), so every
    /// request's usage differs.
    CallThenAnswer,
}

struct Shared {
    mode: std::sync::Mutex<Mode>,
    chat_requests: AtomicUsize,
    session_requests: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// The `Authorization` header of every request, listing and chat alike (`None`: absent).
    authorization: std::sync::Mutex<Vec<Option<String>>>,
    /// How many messages each session request carried, in arrival order.
    message_counts: std::sync::Mutex<Vec<usize>>,
}

pub struct FakeModel {
    pub base_url: String,
    shared: Arc<Shared>,
}

impl FakeModel {
    pub fn start(mode: Mode) -> Self {
        let shared = Arc::new(Shared {
            mode: std::sync::Mutex::new(mode),
            chat_requests: AtomicUsize::new(0),
            session_requests: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            authorization: Default::default(),
            message_counts: Default::default(),
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let state = shared.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let app = axum::Router::new().route("/v1/models", get(models)).route("/v1/chat/completions", post(chat)).with_state(state);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        Self { base_url: format!("http://{addr}/v1"), shared }
    }

    /// Changes what the endpoint does from now on (same URL, so a resume has the same plan).
    pub fn set_mode(&self, mode: Mode) {
        *self.shared.mode.lock().unwrap() = mode;
    }

    /// Chat requests of sessions (the preflight's probe excluded).
    pub fn session_requests(&self) -> usize {
        self.shared.session_requests.load(Ordering::SeqCst)
    }

    pub fn chat_requests(&self) -> usize {
        self.shared.chat_requests.load(Ordering::SeqCst)
    }

    /// The most session requests that were in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }

    /// How many messages each session request carried, in arrival order.
    pub fn message_counts(&self) -> Vec<usize> {
        self.shared.message_counts.lock().unwrap().clone()
    }

    /// The `Authorization` header of every request so far, in arrival order.
    pub fn authorization(&self) -> Vec<Option<String>> {
        self.shared.authorization.lock().unwrap().clone()
    }
}

fn note_authorization(s: &Shared, headers: &HeaderMap) {
    let value = headers.get("authorization").map(|v| v.to_str().unwrap_or("<binary>").to_owned());
    s.authorization.lock().unwrap().push(value);
}

/// Holds a session request until `parties` are in flight or `wait` has passed.
async fn rendezvous(s: &Shared, parties: usize, wait: Duration) {
    let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    s.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let deadline = tokio::time::Instant::now() + wait;
    while s.in_flight.load(Ordering::SeqCst) < parties && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The others may still be checking: leave them time to see the meeting before leaving it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    s.in_flight.fetch_sub(1, Ordering::SeqCst);
}

async fn models(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    note_authorization(&s, &headers);
    let mode = *s.mode.lock().unwrap();
    let id = if mode == Mode::UnknownModel { "some-other-model" } else { MODEL };
    Json(json!({ "object": "list", "data": [{ "id": id, "object": "model", "owned_by": "fake" }] })).into_response()
}

fn is_probe(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| t.iter().any(|f| f["function"]["name"] == "preflight_echo"))
}

fn first_tool(body: &Value) -> String {
    body["tools"][0]["function"]["name"].as_str().unwrap_or("none").to_owned()
}

fn usage() -> Value {
    json!({ "prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128, "prompt_tokens_details": { "cached_tokens": 0 } })
}

fn answer(content: &str) -> Response {
    Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": MODEL,
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": content }, "finish_reason": "stop" }],
        "usage": usage(),
    }))
    .into_response()
}

fn tool_call(name: &str, args: &str) -> Response {
    Json(json!({
        "id": "chatcmpl-2", "object": "chat.completion", "created": 1, "model": MODEL,
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": null, "tool_calls": [
            { "id": "call_1", "type": "function", "function": { "name": name, "arguments": args } }
        ] }, "finish_reason": "tool_calls" }],
        "usage": usage(),
    }))
    .into_response()
}

fn error(status: StatusCode, message: &str, kind: &str, code: &str) -> Response {
    (status, Json(json!({ "error": { "message": message, "type": kind, "param": null, "code": code } }))).into_response()
}

async fn chat(State(s): State<Arc<Shared>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    note_authorization(&s, &headers);
    s.chat_requests.fetch_add(1, Ordering::SeqCst);
    let probe = is_probe(&body);
    if !probe {
        s.session_requests.fetch_add(1, Ordering::SeqCst);
        s.message_counts.lock().unwrap().push(body["messages"].as_array().map_or(0, Vec::len));
    }
    let mode = *s.mode.lock().unwrap();
    match mode {
        Mode::UnknownModel => error(
            StatusCode::NOT_FOUND,
            &format!("The model `{}` does not exist or you do not have access to it.", body["model"].as_str().unwrap_or("")),
            "invalid_request_error",
            "model_not_found",
        ),
        Mode::TextCalls => answer(&format!("```json\n{{\"name\": \"{}\", \"arguments\": {{\"word\": \"ready\"}}}}\n```", first_tool(&body))),
        _ if probe => tool_call("preflight_echo", r#"{"word":"ready"}"#),
        Mode::Native => answer("I could not finish the task."),
        Mode::CallThenAnswer => {
            let n = body["messages"].as_array().map_or(0, Vec::len) as u64;
            let usage = json!({ "prompt_tokens": 100 + 7 * n, "completion_tokens": 5 + n, "total_tokens": 105 + 8 * n,
                "prompt_tokens_details": { "cached_tokens": if n > 2 { 40 } else { 0 } } });
            let mut response = if body["messages"].as_array().and_then(|m| m.last()).is_some_and(|m| m["role"] == "user") {
                json!({ "id": "chatcmpl-3", "object": "chat.completion", "created": 1, "model": MODEL,
                    "choices": [{ "index": 0, "message": { "role": "assistant", "content": null, "tool_calls": [
                        { "id": "call_1", "type": "function", "function": { "name": first_tool(&body), "arguments": "{}" } }
                    ] }, "finish_reason": "tool_calls" }] })
            } else {
                json!({ "id": "chatcmpl-4", "object": "chat.completion", "created": 1, "model": MODEL,
                    "choices": [{ "index": 0, "message": { "role": "assistant", "content": "I looked, and could not finish the task." }, "finish_reason": "stop" }] })
            };
            response["usage"] = usage;
            Json(response).into_response()
        }
        Mode::QuotaInSessions => error(
            StatusCode::TOO_MANY_REQUESTS,
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            "insufficient_quota",
        ),
        Mode::BadRequestInSessions => error(StatusCode::BAD_REQUEST, "Invalid value for 'messages': malformed.", "invalid_request_error", "invalid_value"),
        Mode::EchoingBadRequestInSessions => {
            let sent: Vec<String> = headers.iter().map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or(""))).collect();
            error(
                StatusCode::BAD_REQUEST,
                &format!("Request rejected by gateway policy. Headers received: {}", sent.join("; ")),
                "invalid_request_error",
                "policy",
            )
        }
        Mode::SlowSessions(d) => {
            tokio::time::sleep(d).await;
            answer("I could not finish the task.")
        }
        Mode::Rendezvous { parties, wait } => {
            rendezvous(&s, parties, wait).await;
            answer("I could not finish the task.")
        }
        Mode::ContextWindow { max_messages } if body["messages"].as_array().map_or(0, Vec::len) > max_messages => error(
            StatusCode::BAD_REQUEST,
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
        ),
        Mode::ContextWindow { .. } => answer("I could not finish the task."),
    }
}
