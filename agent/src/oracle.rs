//! The oracle provider: replays a task's oracle plan for the arm instead of calling a model.
//! It is labelled `oracle` everywhere, records no usage (there is none), and measures the
//! structural floor of the design: calls, and bytes of schemas, arguments and results, with a
//! token figure that is explicitly an estimate.

use chrono::Utc;
use serde_json::json;

use crate::mcp::{ServerConnection, Toolbox};
use crate::record::{CallKind, InvalidReason, OracleFloor, SessionOutcome, ToolCallRecord, Validity};

pub const PROVIDER: &str = "oracle";

/// How the oracle's token figure is computed (recorded with it).
pub const ESTIMATE_METHOD: &str = "estimate: (definitions + task text + arguments + results) bytes / 4";

/// How the oracle's input-token figure is computed (recorded with it).
pub const INPUT_ESTIMATE_METHOD: &str = "estimate: one call per turn plus an answer turn; each turn resends system prompt + task text + \
definitions + every earlier call's arguments and result; bytes / 4";

/// How the oracle's input-token figure is computed in a warm conversation (recorded with it).
pub const WARM_INPUT_ESTIMATE_METHOD: &str = "estimate: as cold, and every turn also resends the conversation's earlier tasks (their \
text, counted calls and answers); a call that repeats an earlier call of the conversation with the same arguments and result is not counted \
(its result is already in the context); bytes / 4";

/// The input tokens a model following a plan one call per turn would be billed for (bytes / 4):
/// with `n` calls there are `n + 1` turns, each resending `fixed_bytes` (system prompt, task,
/// definitions, and in a warm conversation everything its earlier tasks left), and call `j`'s
/// arguments and result are resent in the `n − j` turns after it.
pub fn estimated_input_tokens(fixed_bytes: usize, calls: &[(usize, usize)]) -> u64 {
    let n = calls.len();
    let history: usize = calls.iter().enumerate().map(|(j, (args, result))| (n - j) * (args + result)).sum();
    (((n + 1) * fixed_bytes + history) / 4) as u64
}

/// Connects and lists what the server offers; on failure, what went wrong and the server's stderr.
async fn connect_and_list(
    conn: &ServerConnection,
) -> Result<(crate::mcp::Client, crate::mcp::ServerProcess, Option<records::ServerInfo>, Toolbox), (String, crate::mcp::StderrTail)> {
    let (client, server) = crate::mcp::connect(conn).await.map_err(|e| (e.to_string(), crate::mcp::StderrTail::default()))?;
    match Toolbox::from_server(&client).await {
        Ok(toolbox) => {
            let info = crate::mcp::server_info(&client);
            Ok((client, server, info, toolbox))
        }
        Err(e) => {
            let _ = client.cancel().await;
            Err((e.to_string(), server.stderr.clone()))
        }
    }
}

/// Runs `plan` through the server at `conn` and reports it as a session: a conversation of one task.
pub async fn run(conn: &ServerConnection, task_text: &str, plan: &tasks::OraclePlan) -> SessionOutcome {
    let mut c = Conversation::open(conn, false).await;
    let outcome = c.task(task_text, plan).await;
    c.close().await;
    outcome
}

/// A started server: its client, its process, what it said about itself and the tools it listed.
type Connected = (crate::mcp::Client, crate::mcp::ServerProcess, Option<records::ServerInfo>, Toolbox);

/// The oracle's side of a conversation: one server connection, the tools listed once, then one
/// plan after another. What its floors count in a warm conversation is
/// [`WARM_INPUT_ESTIMATE_METHOD`].
pub struct Conversation {
    connected: Result<Connected, (String, crate::mcp::StderrTail)>,
    warm: bool,
    /// Bytes of the earlier tasks' text, counted calls and answers: resent with every later turn.
    prior_bytes: usize,
    /// (name, arguments, result) of every call made so far.
    seen: Vec<(String, String, String)>,
    /// A plan that no longer replayed broke the conversation: later tasks are not attempted.
    ended: Option<String>,
}

impl Conversation {
    pub async fn open(conn: &ServerConnection, warm: bool) -> Self {
        Self { connected: connect_and_list(conn).await, warm, prior_bytes: 0, seen: vec![], ended: None }
    }

    /// The function definitions the server's tools and resources make (none when it could not
    /// be started or listed).
    pub fn definitions(&self) -> &[serde_json::Value] {
        self.connected.as_ref().map(|(_, _, _, toolbox)| toolbox.definitions.as_slice()).unwrap_or_default()
    }

    /// Replays `plan` as the conversation's next task.
    pub async fn task(&mut self, task_text: &str, plan: &tasks::OraclePlan) -> SessionOutcome {
        let (started_at, clock) = (Utc::now(), std::time::Instant::now());
        let mut transcript = vec![json!({ "event": "start", "provider": PROVIDER, "task": task_text })];
        let finish =
            |validity: Validity, tool_calls: Vec<ToolCallRecord>, final_answer, offered, oracle, transcript, server_info, stderr: &crate::mcp::StderrTail| {
                SessionOutcome {
                    provider: PROVIDER.into(),
                    validity: validity.with_transport_notes(&stderr.notes_text()).with_server_stderr(&stderr.text()),
                    server_info,
                    turns: vec![],
                    tool_calls,
                    final_answer,
                    turn_cap_hit: false,
                    context_exceeded: false,
                    tool_call_as_text: false,
                    unparseable_output: false,
                    offered,
                    oracle,
                    provider_retries: 0,
                    failed_turn: None,
                    started_at,
                    ended_at: Utc::now(),
                    transcript,
                }
            };
        let (client, server, server_info, toolbox) = match &self.connected {
            Ok(connected) => connected,
            Err((detail, stderr)) => {
                return finish(
                    Validity::invalid(InvalidReason::McpTransport, detail.clone()),
                    vec![],
                    None,
                    Default::default(),
                    None,
                    transcript,
                    None,
                    stderr,
                );
            }
        };
        if let Some(detail) = &self.ended {
            let v = Validity::invalid(InvalidReason::ConversationEnded, detail.clone());
            return finish(v, vec![], None, toolbox.offered.clone(), None, transcript, server_info.clone(), &server.stderr);
        }
        // The replay's own clock starts here: its calls' offsets, moved to the session's.
        let replay_at_ms = clock.elapsed().as_secs_f64() * 1000.0;
        let report = match tasks::replay(plan, client).await {
            Ok(r) => r,
            Err(e) => {
                // The arm's answer the plan cannot take is the arm's failure (the gates check the
                // plans at the scales they run; elsewhere the detail says which step it was), and
                // the calls it made stay recorded. A plan that cannot go on by itself, or a
                // transport that broke, is not the arm's answer.
                let (reason, made) = match &e {
                    tasks::replay::ReplayError::Protocol { .. } => (InvalidReason::McpTransport, &[][..]),
                    tasks::replay::ReplayError::Unexpected { made, .. } => (InvalidReason::ArmUnexpectedResult, made.as_slice()),
                    _ => (InvalidReason::HarnessError, &[][..]),
                };
                let (calls, _) = self.recorded(made, replay_at_ms, &mut transcript);
                self.ended = Some(format!("an earlier task's oracle plan did not replay: {e}"));
                return finish(
                    Validity::invalid(reason, e.to_string()),
                    calls,
                    None,
                    toolbox.offered.clone(),
                    None,
                    transcript,
                    server_info.clone(),
                    &server.stderr,
                );
            }
        };
        let (calls, made) = self.recorded(&report.calls, replay_at_ms, &mut transcript);
        transcript.push(json!({ "event": "answer", "text": report.answer }));
        let args_bytes: usize = calls.iter().map(|c| c.args_bytes).sum();
        let result_bytes: usize = calls.iter().map(|c| c.result_bytes).sum();
        let schema_bytes = toolbox.offered.definitions_bytes;
        let floor = OracleFloor {
            calls: calls.len(),
            schema_bytes,
            args_bytes,
            result_bytes,
            estimated_tokens: ((schema_bytes + task_text.len() + args_bytes + result_bytes) / 4) as u64,
            estimate_method: ESTIMATE_METHOD.into(),
            estimated_input_tokens: Some(estimated_input_tokens(
                crate::session::SYSTEM_PROMPT.len() + task_text.len() + schema_bytes + self.prior_bytes,
                &calls.iter().map(|c| (c.args_bytes, c.result_bytes)).collect::<Vec<_>>(),
            )),
            input_estimate_method: Some(if self.warm { WARM_INPUT_ESTIMATE_METHOD } else { INPUT_ESTIMATE_METHOD }.into()),
        };
        self.prior_bytes += task_text.len() + args_bytes + result_bytes + report.answer.len();
        self.seen.extend(made);
        finish(Validity::Valid, calls, Some(report.answer), toolbox.offered.clone(), Some(floor), transcript, server_info.clone(), &server.stderr)
    }

    /// `replayed` as the session's tool calls and transcript events, and the keys that tell a
    /// later task of this conversation which calls it repeats. A call an earlier task made with
    /// the same arguments and result is in the transcript, marked, but not counted.
    fn recorded(
        &self,
        replayed: &[tasks::replay::CallRecord],
        replay_at_ms: f64,
        transcript: &mut Vec<serde_json::Value>,
    ) -> (Vec<ToolCallRecord>, Vec<(String, String, String)>) {
        let mut calls = Vec::new();
        let mut made = Vec::new();
        for c in replayed {
            let key = (c.name.clone(), c.arguments.to_string(), c.result.clone());
            // Only calls of earlier tasks: within one task every call counts, as in a cold session.
            let repeat = self.seen.contains(&key);
            made.push(key);
            if repeat {
                transcript.push(json!({ "event": "call", "name": c.name, "arguments": c.arguments, "result": c.result, "is_error": c.is_error, "not_counted": "repeats an earlier call of this conversation with the same arguments and result" }));
                continue;
            }
            transcript.push(json!({ "event": "call", "name": c.name, "arguments": c.arguments, "result": c.result, "is_error": c.is_error }));
            calls.push(ToolCallRecord {
                turn: 0,
                kind: match c.kind {
                    tasks::replay::CallKind::Tool => CallKind::Tool,
                    tasks::replay::CallKind::ReadResource => CallKind::ReadResource,
                    tasks::replay::CallKind::ListResources => CallKind::ListResources,
                },
                name: c.name.clone(),
                args_bytes: c.args_bytes,
                result_bytes: c.result_bytes,
                is_error: c.is_error,
                invalid_arguments: false,
                unknown_tool: false,
                latency_ms: c.latency_ms,
                at_ms: Some(replay_at_ms + c.at_ms),
                arguments_sha256: Some(records::outcome::arguments_sha256(&c.arguments.to_string())),
            });
        }
        (calls, made)
    }

    pub async fn close(self) {
        if let Ok((client, ..)) = self.connected {
            let _ = client.cancel().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::estimated_input_tokens;

    #[test]
    fn every_turn_resends_what_came_before() {
        // No call: one answer turn with the fixed part.
        assert_eq!(estimated_input_tokens(400, &[]), 100);
        // Two calls: turns carry 400, 400 + 40, 400 + 40 + 80 bytes.
        assert_eq!(estimated_input_tokens(400, &[(10, 30), (20, 60)]), (400 + 440 + 520) / 4);
    }
}
