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

use crate::config::PROVIDER;
use servers::distractors::Distractors;

use crate::mcp::{self, LIST_RESOURCES, READ_RESOURCE, Toolbox};
use crate::provider::{OpenAiCompatible, ProviderFailure, WireToolCall};
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
    /// Started with `started_at`: what a request's or call's `at_ms` is measured on.
    clock: std::time::Instant,
    turns: Vec<TurnRecord>,
    tool_calls: Vec<ToolCallRecord>,
    offered: Offered,
    transcript: Vec<Value>,
    provider_retries: u32,
    failed_turn: Option<FailedTurn>,
    tool_call_as_text: bool,
    unparseable_output: bool,
    server_info: Option<records::ServerInfo>,
    /// The server's stderr, whose tail an invalid outcome quotes.
    stderr: mcp::StderrTail,
    /// Starting the server and listing it, when this session did.
    start_ms: Option<f64>,
}

impl Session {
    /// Milliseconds from `started_at` to something that began `took_ms` ago.
    fn at_ms(&self, took_ms: f64) -> Option<f64> {
        Some((self.clock.elapsed().as_secs_f64() * 1000.0 - took_ms).max(0.0))
    }

    fn finish(self, validity: Validity, final_answer: Option<String>, turn_cap_hit: bool) -> SessionOutcome {
        self.finish_with(validity, final_answer, turn_cap_hit, false)
    }

    fn finish_with(mut self, validity: Validity, final_answer: Option<String>, turn_cap_hit: bool, context_exceeded: bool) -> SessionOutcome {
        let validity = validity.with_transport_notes(&self.stderr.notes_text()).with_server_stderr(&self.stderr.text());
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
            start_ms: self.start_ms,
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

/// Runs one session of `task_text` against the server at `conn` (with `distractors` listed
/// beside it), driven by `provider`: a conversation of one task.
pub async fn run(
    conn: impl Into<mcp::Reach>,
    distractors: &Distractors,
    task_text: &str,
    system_prompt: &str,
    turn_cap: u32,
    provider: &OpenAiCompatible,
    stop: &StopSignal,
) -> SessionOutcome {
    let mut conversation = Conversation::open(conn, distractors, system_prompt, provider, stop).await;
    let outcome = conversation.task(task_text, turn_cap).await;
    conversation.close().await;
    outcome
}

/// A conversation with one arm's server: connected and its tools listed once, then one task
/// after another, each task's text a new user message after everything before it. A cold session
/// is a conversation of one task; a warm one carries every earlier task's messages.
///
/// What ends a conversation early: a server whose transport fails (every later task is invalid
/// `conversation_ended`, naming the task where it failed) and a conversation that outgrows the
/// model's context window (that task is a valid failure flagged `context_exceeded`, as in a cold
/// session; every later task is invalid `conversation_ended`, never silently truncated). A task
/// that fails, hits the turn cap or meets a provider error does not: the next task's text follows
/// whatever the conversation holds.
pub struct Conversation<'a> {
    client: Option<mcp::Client>,
    toolbox: Option<Toolbox>,
    server: mcp::ServerProcess,
    server_info: Option<records::ServerInfo>,
    /// Starting the server and listing it (the first task's record carries it).
    start_ms: Option<f64>,
    /// The system prompt and every message since.
    messages: Vec<Value>,
    provider: &'a OpenAiCompatible,
    stop: &'a StopSignal,
    /// Why no further task can run, and the invalid reason it gives them.
    ended: Option<(InvalidReason, String)>,
    /// Transcript events of the opening, written at the head of the first task's transcript.
    opening: Vec<Value>,
    /// Tasks started so far.
    tasks: u32,
}

impl<'a> Conversation<'a> {
    /// Connects to the server at `conn` and lists its tools. A failure is kept: the first task
    /// then ends invalid `mcp_transport`, as a cold session's would.
    pub async fn open(
        conn: impl Into<mcp::Reach>,
        distractors: &Distractors,
        system_prompt: &str,
        provider: &'a OpenAiCompatible,
        stop: &'a StopSignal,
    ) -> Conversation<'a> {
        let mut c = Conversation {
            client: None,
            toolbox: None,
            server: Default::default(),
            server_info: None,
            start_ms: None,
            messages: vec![json!({ "role": "system", "content": system_prompt })],
            provider,
            stop,
            ended: None,
            opening: vec![],
            tasks: 0,
        };
        if stop.is_raised() {
            return c;
        }
        let starting = std::time::Instant::now();
        match conn.into().connect().await {
            Ok((client, server)) => {
                c.server = server;
                c.server_info = mcp::server_info(&client);
                match Toolbox::from_server(&client).await.map(|t| t.beside(distractors)) {
                    Ok(t) => {
                        let mut event = json!({ "event": "offered", "functions": t.offered.functions, "definitions": t.definitions });
                        if !distractors.is_empty() {
                            event["distractors"] =
                                json!({ "count": distractors.len(), "before_arm": distractors.before_arm(), "sha256": distractors.sha256() });
                        }
                        c.opening.push(event);
                        c.toolbox = Some(t);
                        c.client = Some(client);
                        c.start_ms = Some(starting.elapsed().as_secs_f64() * 1000.0);
                    }
                    Err(e) => {
                        let _ = client.cancel().await;
                        c.ended = Some((InvalidReason::McpTransport, e.to_string()));
                    }
                }
            }
            Err(e) => c.ended = Some((InvalidReason::McpTransport, e.to_string())),
        }
        c
    }

    /// Messages of earlier tasks the conversation holds (the system prompt not counted).
    pub fn messages_before(&self) -> u32 {
        self.messages.len() as u32 - 1
    }

    /// Runs the next task: its text as a user message, then turns until a final answer or
    /// `turn_cap` turns of this task. The outcome holds this task's turns, calls and usage only.
    pub async fn task(&mut self, task_text: &str, turn_cap: u32) -> SessionOutcome {
        self.tasks += 1;
        let first = self.tasks == 1;
        let mut transcript =
            vec![json!({ "event": "start", "params": self.provider.config().record_params(), "auth": self.provider.auth(), "turn_cap": turn_cap })];
        if first {
            transcript.append(&mut self.opening);
        } else {
            transcript.push(json!({ "event": "conversation", "position": self.tasks, "messages_before": self.messages_before() }));
        }
        let mut s = Session {
            started_at: Utc::now(),
            clock: std::time::Instant::now(),
            turns: vec![],
            tool_calls: vec![],
            offered: self.toolbox.as_ref().map(|t| t.offered.clone()).unwrap_or_default(),
            transcript,
            provider_retries: 0,
            failed_turn: None,
            tool_call_as_text: false,
            unparseable_output: false,
            server_info: self.server_info.clone(),
            stderr: self.server.stderr.clone(),
            start_ms: if first { self.start_ms } else { None },
        };
        if self.stop.is_raised() {
            let detail = self.stop.detail();
            return s.invalid(InvalidReason::QuotaOrSessionLimit, detail);
        }
        if let Some((reason, detail)) = &self.ended {
            return s.invalid(*reason, detail.clone());
        }
        let (Some(client), Some(toolbox)) = (&self.client, &self.toolbox) else {
            return s.invalid(InvalidReason::HarnessError, "the conversation has no server");
        };
        if first {
            s.message(0, &self.messages[0]);
        }
        let user = json!({ "role": "user", "content": task_text });
        s.message(0, &user);
        self.messages.push(user);
        let outcome = converse(&mut s, client, toolbox, &mut self.messages, first, turn_cap, self.provider, self.stop).await;
        let position = self.tasks;
        match outcome {
            End::Answer(text) => s.finish(Validity::Valid, text, false),
            End::TurnCap => s.finish(Validity::Valid, None, true),
            End::ContextExceeded => {
                self.ended = Some((
                    InvalidReason::ConversationEnded,
                    format!("the conversation outgrew the model's context window in its task {position}, before this one"),
                ));
                s.finish_with(Validity::Valid, None, false, true)
            }
            End::UnparseableOutput => s.finish(Validity::Valid, None, false),
            End::Invalid(InvalidReason::McpTransport, detail) => {
                self.ended = Some((InvalidReason::ConversationEnded, format!("the server's transport failed in the conversation's task {position}: {detail}")));
                s.invalid(InvalidReason::McpTransport, detail)
            }
            End::Invalid(reason, detail) => s.invalid(reason, detail),
        }
    }

    /// Ends the conversation: the server is let go.
    pub async fn close(self) {
        if let Some(client) = self.client {
            let _ = client.cancel().await;
        }
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

/// Turns of one task until a final answer or `turn_cap`: `messages` holds the conversation so far,
/// this task's text last; the turns' messages are appended to it. `first` is the conversation's
/// first task, whose first request not fitting the context window is a configuration problem.
#[allow(clippy::too_many_arguments)]
async fn converse(
    s: &mut Session,
    client: &mcp::Client,
    toolbox: &Toolbox,
    messages: &mut Vec<Value>,
    first: bool,
    turn_cap: u32,
    provider: &OpenAiCompatible,
    stop: &StopSignal,
) -> End {
    for turn in 1..=turn_cap {
        if stop.is_raised() {
            return End::Invalid(InvalidReason::QuotaOrSessionLimit, stop.detail());
        }
        let completion = match provider.complete(messages, &toolbox.definitions, &mut s.transcript).await {
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
                    ProviderFailure::ContextExceeded { detail, .. } if turn == 1 && first => End::Invalid(
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
            at_ms: s.at_ms(completion.latency_ms),
            finish_reason: completion.response.finish_reason(),
            tool_calls: reply.tool_calls.len() as u32,
            extras: completion.extras.clone(),
        });
        if reply.tool_calls.is_empty() {
            let text = reply.text();
            let answer = json!({ "role": "assistant", "content": text });
            s.message(turn, &answer);
            // What a warm conversation's next task follows.
            messages.push(answer);
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
        distractor: false,
        latency_ms: 0.0,
        at_ms: None,
        arguments_sha256: Some(records::outcome::arguments_sha256(&args_text)),
    };
    let parsed = serde_json::from_str::<Value>(&args_text);
    let text = if !toolbox.offers(name) {
        record.unknown_tool = true;
        record.is_error = true;
        format!("Error: there is no function named {name:?}. Call one of the functions you were given.")
    } else if let Some(refusal) = toolbox.refusal(name) {
        // A tool of another server the client lists, whatever its arguments: the arm never sees
        // the call; that server refuses it.
        record.distractor = true;
        record.is_error = true;
        record.at_ms = s.at_ms(0.0);
        refusal
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
        record.at_ms = s.at_ms(result.latency_ms);
        result.text
    };
    record.result_bytes = text.len();
    let mut event = json!({
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
    });
    if record.distractor {
        event["distractor"] = true.into();
    }
    s.transcript.push(event);
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
