//! The model-driven session: the agent loop between an OpenAI-compatible model and one arm's MCP
//! server, until a final answer or the turn cap.
//!
//! One turn is one model request: `[system, user(task), …history]` with the arm's functions and
//! `tool_choice: "auto"`. Tool calls in a response run in the order given, one `tool` message each;
//! a response without tool calls is the final answer. What goes wrong is recorded, never hidden:
//! arguments that are not a JSON object and functions never offered are refused (and flagged) with
//! a message the model can act on; tool errors reach the model as text; a broken transport ends
//! the session as invalid `mcp_transport`; the provider's faults end it as `provider_error` or
//! `quota_or_session_limit` (which also raises the run-wide [`StopSignal`]). A conversation that
//! outgrows the model's context window is the arm's doing, so it ends the session as a valid
//! failure flagged `context_exceeded` (like the turn cap), unless the very first request did not
//! fit: that is a configuration problem (context size, max tokens) and the session is invalid.
//! A request that never got an answer is kept as the outcome's `failed_turn` (its retries and
//! the provider's last text). A final answer that holds a function call written as text is
//! flagged `tool_call_as_text`: the call is never executed. An endpoint whose tool-call parser
//! rejects the model's own output (llama.cpp's "does not match the expected … format") ends the
//! session as a valid failure flagged `unparseable_output`, not as infrastructure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use chrono::Utc;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::mcp::{self, LIST_RESOURCES, READ_RESOURCE, ServerConnection, Toolbox};
use crate::provider::{OpenAiCompatible, PROVIDER, ProviderFailure, WireToolCall};
use crate::record::{CallKind, InvalidReason, Offered, SessionOutcome, ToolCallRecord, TurnRecord, Validity};
use crate::text_call::tool_call_as_text;
use records::FailedTurn;

/// The one system prompt of every model session, both arms: it names no tool and no pattern.
pub const SYSTEM_PROMPT: &str = "You are an assistant that completes the user's request using the functions available. \
When you are done, reply with a short final answer for the user.";

/// sha256 of [`SYSTEM_PROMPT`], hex; part of the experiment manifest.
pub fn system_prompt_sha256() -> String {
    hex::encode(Sha256::digest(SYSTEM_PROMPT.as_bytes()))
}

/// Run-wide stop: raised by the first session that meets a quota or session limit, checked by
/// every session before it starts and before each of its turns.
#[derive(Debug, Clone, Default)]
pub struct StopSignal {
    raised: Arc<AtomicBool>,
    reason: Arc<OnceLock<String>>,
}

impl StopSignal {
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the signal; the first reason given is kept.
    pub fn raise(&self, reason: impl Into<String>) {
        let _ = self.reason.set(reason.into());
        self.raised.store(true, Ordering::SeqCst);
    }

    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    /// The provider's text that raised it.
    pub fn reason(&self) -> Option<&str> {
        self.reason.get().map(String::as_str)
    }

    fn detail(&self) -> String {
        format!("run stopped before this session could finish: an earlier quota or session limit: {}", self.reason().unwrap_or("(no text)"))
    }
}

/// A session's state while it runs; [`Session::finish`] turns it into the outcome.
struct Session {
    started_at: chrono::DateTime<Utc>,
    turns: Vec<TurnRecord>,
    tool_calls: Vec<ToolCallRecord>,
    offered: Offered,
    transcript: Vec<Value>,
    provider_retries: u32,
    failed_turn: Option<FailedTurn>,
    tool_call_as_text: bool,
    unparseable_output: bool,
    server_info: Option<records::ServerInfo>,
    server: mcp::ServerProcess,
}

impl Session {
    fn finish(self, validity: Validity, final_answer: Option<String>, turn_cap_hit: bool) -> SessionOutcome {
        self.finish_with(validity, final_answer, turn_cap_hit, false)
    }

    fn finish_with(mut self, validity: Validity, final_answer: Option<String>, turn_cap_hit: bool, context_exceeded: bool) -> SessionOutcome {
        let validity = validity.with_server_stderr(&self.server.stderr.text());
        self.transcript.push(json!({
            "event": "end",
            "validity": validity,
            "turn_cap_hit": turn_cap_hit,
            "context_exceeded": context_exceeded,
            "tool_call_as_text": self.tool_call_as_text,
            "unparseable_output": self.unparseable_output,
            "final_answer": final_answer
        }));
        SessionOutcome {
            provider: PROVIDER.into(),
            validity,
            turns: self.turns,
            tool_calls: self.tool_calls,
            final_answer,
            turn_cap_hit,
            context_exceeded,
            tool_call_as_text: self.tool_call_as_text,
            unparseable_output: self.unparseable_output,
            offered: self.offered,
            oracle: None,
            provider_retries: self.provider_retries,
            failed_turn: self.failed_turn,
            started_at: self.started_at,
            ended_at: Utc::now(),
            server_info: self.server_info,
            transcript: self.transcript,
        }
    }

    fn invalid(self, reason: InvalidReason, detail: impl Into<String>) -> SessionOutcome {
        self.finish(Validity::invalid(reason, detail), None, false)
    }

    fn message(&mut self, turn: u32, message: &Value) {
        self.transcript.push(json!({ "event": "message", "turn": turn, "message": message }));
    }
}

/// Runs one session of `task_text` against the server at `conn`, driven by `provider`.
pub async fn run(
    conn: &ServerConnection,
    task_text: &str,
    system_prompt: &str,
    turn_cap: u32,
    provider: &OpenAiCompatible,
    stop: &StopSignal,
) -> SessionOutcome {
    let mut s = Session {
        started_at: Utc::now(),
        turns: vec![],
        tool_calls: vec![],
        offered: Offered::default(),
        transcript: vec![json!({ "event": "start", "params": provider.config().record_params(), "auth": provider.auth(), "turn_cap": turn_cap })],
        provider_retries: 0,
        failed_turn: None,
        tool_call_as_text: false,
        unparseable_output: false,
        server_info: None,
        server: Default::default(),
    };
    if stop.is_raised() {
        let detail = stop.detail();
        return s.invalid(InvalidReason::QuotaOrSessionLimit, detail);
    }
    let client = match mcp::connect(conn).await {
        Ok((c, server)) => {
            s.server = server;
            s.server_info = mcp::server_info(&c);
            c
        }
        Err(e) => return s.invalid(InvalidReason::McpTransport, e.to_string()),
    };
    let toolbox = match Toolbox::from_server(&client).await {
        Ok(t) => t,
        Err(e) => {
            let _ = client.cancel().await;
            return s.invalid(InvalidReason::McpTransport, e.to_string());
        }
    };
    s.offered = toolbox.offered.clone();
    s.transcript.push(json!({ "event": "offered", "functions": toolbox.offered.functions, "definitions": toolbox.definitions }));
    let outcome = converse(&mut s, &client, &toolbox, task_text, system_prompt, turn_cap, provider, stop).await;
    let _ = client.cancel().await;
    match outcome {
        End::Answer(text) => s.finish(Validity::Valid, text, false),
        End::TurnCap => s.finish(Validity::Valid, None, true),
        End::ContextExceeded => s.finish_with(Validity::Valid, None, false, true),
        End::UnparseableOutput => s.finish(Validity::Valid, None, false),
        End::Invalid(reason, detail) => s.invalid(reason, detail),
    }
}

enum End {
    Answer(Option<String>),
    TurnCap,
    ContextExceeded,
    /// The endpoint could not parse what the model wrote: the model's doing, so the arm's.
    UnparseableOutput,
    Invalid(InvalidReason, String),
}

#[allow(clippy::too_many_arguments)]
async fn converse(
    s: &mut Session,
    client: &mcp::Client,
    toolbox: &Toolbox,
    task_text: &str,
    system_prompt: &str,
    turn_cap: u32,
    provider: &OpenAiCompatible,
    stop: &StopSignal,
) -> End {
    let mut messages = vec![json!({ "role": "system", "content": system_prompt }), json!({ "role": "user", "content": task_text })];
    s.message(0, &messages[0]);
    s.message(0, &messages[1]);
    for turn in 1..=turn_cap {
        if stop.is_raised() {
            return End::Invalid(InvalidReason::QuotaOrSessionLimit, stop.detail());
        }
        let completion = match provider.complete(&messages, &toolbox.definitions, &mut s.transcript).await {
            Ok(c) => c,
            Err(failure) => {
                s.provider_retries += failure.retries();
                s.failed_turn = Some(FailedTurn { index: turn, retries: failure.retries(), detail: failure.detail().to_owned() });
                return match failure {
                    ProviderFailure::Exhausted { detail, .. } => End::Invalid(InvalidReason::ProviderError, detail),
                    ProviderFailure::Limit { detail, .. } => {
                        stop.raise(detail.clone());
                        End::Invalid(InvalidReason::QuotaOrSessionLimit, detail)
                    }
                    ProviderFailure::ContextExceeded { detail, .. } if turn == 1 => End::Invalid(
                        InvalidReason::ProviderError,
                        format!("the first request already exceeds the model's context window (check the model's context size and max tokens): {detail}"),
                    ),
                    ProviderFailure::ContextExceeded { .. } => End::ContextExceeded,
                    ProviderFailure::UnparseableOutput { .. } => {
                        s.unparseable_output = true;
                        End::UnparseableOutput
                    }
                };
            }
        };
        s.provider_retries += completion.retries;
        let reply = completion.response.message();
        // The extras are in the body too; beside it they read the same for every provider.
        s.transcript.push(json!({
            "event": "response",
            "turn": turn,
            "latency_ms": completion.latency_ms,
            "retries": completion.retries,
            "extras": completion.extras,
            "body": completion.raw,
        }));
        s.turns.push(TurnRecord {
            index: turn,
            usage: completion.usage.clone(),
            retries: completion.retries,
            latency_ms: completion.latency_ms,
            finish_reason: completion.response.finish_reason(),
            tool_calls: reply.tool_calls.len() as u32,
            extras: completion.extras.clone(),
        });
        if reply.tool_calls.is_empty() {
            let text = reply.text();
            let answer = json!({ "role": "assistant", "content": text });
            s.message(turn, &answer);
            // Not executed: running a call the endpoint did not parse would make its parser part
            // of the arm. The session stays the arm's result, flagged so no one reads it as one.
            if let Some(name) = text.as_deref().and_then(|t| tool_call_as_text(t, &toolbox.offered.functions)) {
                s.tool_call_as_text = true;
                s.transcript.push(json!({ "event": "tool_call_as_text", "turn": turn, "name": name }));
            }
            return End::Answer(text);
        }
        let calls: Vec<(String, &WireToolCall)> =
            reply.tool_calls.iter().enumerate().map(|(i, c)| (c.id.clone().unwrap_or_else(|| format!("call_{turn}_{i}")), c)).collect();
        let assistant = json!({
            "role": "assistant",
            "content": reply.text(),
            "tool_calls": calls.iter().map(|(id, c)| json!({
                "id": id,
                "type": "function",
                "function": { "name": c.function.name, "arguments": c.function.arguments_text() },
            })).collect::<Vec<_>>(),
        });
        s.message(turn, &assistant);
        messages.push(assistant);
        for (id, call) in calls {
            let tool_message = match run_call(s, client, toolbox, turn, &id, call).await {
                Ok(text) => json!({ "role": "tool", "tool_call_id": id, "content": text }),
                Err(e) => return End::Invalid(InvalidReason::McpTransport, e.to_string()),
            };
            s.message(turn, &tool_message);
            messages.push(tool_message);
        }
    }
    End::TurnCap
}

/// Executes (or refuses) one call and records it; returns the text for the `tool` message.
async fn run_call(s: &mut Session, client: &mcp::Client, toolbox: &Toolbox, turn: u32, id: &str, call: &WireToolCall) -> Result<String, mcp::TransportError> {
    let name = call.function.name.as_str();
    let args_text = call.function.arguments_text();
    let mut record = ToolCallRecord {
        turn,
        kind: kind_of(name),
        name: name.to_owned(),
        args_bytes: args_text.len(),
        result_bytes: 0,
        is_error: false,
        invalid_arguments: false,
        unknown_tool: false,
        latency_ms: 0.0,
        arguments_sha256: Some(records::outcome::arguments_sha256(&args_text)),
    };
    let parsed = serde_json::from_str::<Value>(&args_text);
    let text = if !toolbox.offers(name) {
        record.unknown_tool = true;
        record.is_error = true;
        format!("Error: there is no function named {name:?}. Call one of the functions you were given.")
    } else if !matches!(parsed, Ok(Value::Object(_))) {
        record.invalid_arguments = true;
        record.is_error = true;
        let why = match &parsed {
            Err(e) => format!("they are not valid JSON ({e})"),
            Ok(_) => "they are not a JSON object".to_owned(),
        };
        format!("Error: the arguments for {name} could not be used: {why}. The function was not called; send the arguments as a JSON object.")
    } else {
        let args = parsed.unwrap_or_default();
        let result = mcp::execute(client, name, &args).await;
        if let Err(e) = &result {
            s.transcript
                .push(json!({ "event": "call", "turn": turn, "tool_call_id": id, "name": name, "arguments": args_text, "transport_error": e.to_string() }));
        }
        let result = result?;
        record.kind = result.kind;
        record.is_error = result.is_error;
        record.latency_ms = result.latency_ms;
        result.text
    };
    record.result_bytes = text.len();
    s.transcript.push(json!({
        "event": "call",
        "turn": turn,
        "tool_call_id": id,
        "name": name,
        "arguments": args_text,
        "result": text,
        "is_error": record.is_error,
        "invalid_arguments": record.invalid_arguments,
        "unknown_tool": record.unknown_tool,
        "latency_ms": record.latency_ms,
    }));
    s.tool_calls.push(record);
    Ok(text)
}

fn kind_of(name: &str) -> CallKind {
    match name {
        LIST_RESOURCES => CallKind::ListResources,
        READ_RESOURCE => CallKind::ReadResource,
        _ => CallKind::Tool,
    }
}

/// The transcript as JSON Lines, one event per line. It holds what the model was sent and what
/// came back, never the API key or header values (they are not in any event).
pub fn transcript_jsonl(outcome: &SessionOutcome) -> String {
    outcome.transcript.iter().map(|e| format!("{e}\n")).collect()
}
