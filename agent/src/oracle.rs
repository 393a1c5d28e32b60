//! The oracle provider: replays a task's oracle plan for the arm instead of calling a model.
//! It is labelled `oracle` everywhere, records no usage (there is none), and measures the
//! structural floor of the design: calls, and bytes of schemas, arguments and results, with
//! token figures that are explicitly an estimate (bytes / 4) — and, where the run knows the
//! tokenizer ([`crate::tokens`]), the same figures counted in it and labelled with it.

use chrono::Utc;
use serde_json::json;

use servers::distractors::Distractors;

use crate::mcp::{Reach, Toolbox};
use crate::record::{CallKind, InvalidReason, OracleFloor, SessionOutcome, ToolCallRecord, Validity};
use crate::tokens::{Tokenizer, TokenizerError};

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
    let calls: Vec<(u64, u64)> = calls.iter().map(|&(a, r)| (a as u64, r as u64)).collect();
    over_turns(fixed_bytes as u64, &calls) / 4
}

/// What a model following a plan one call per turn is sent over the plan's turns, in whatever
/// unit `fixed` and `calls` are given (bytes, or tokens): `fixed` in each of the `n + 1` turns,
/// call `j`'s arguments and result in the `n − j` turns after it.
pub fn over_turns(fixed: u64, calls: &[(u64, u64)]) -> u64 {
    let n = calls.len() as u64;
    let history: u64 = calls.iter().zip(0..).map(|((args, result), j)| (n - j) * (args + result)).sum();
    (n + 1) * fixed + history
}

/// The oracle's figures counted in a known tokenizer.
struct Counted {
    definitions: u64,
    input: u64,
    output: u64,
    /// What this task leaves in a warm conversation's context: its text, calls and answer.
    left: u64,
}

/// Connects and lists what the server offers; on failure, what went wrong and the server's stderr.
async fn connect_and_list(
    reach: Reach,
) -> Result<(crate::mcp::Client, crate::mcp::ServerProcess, Option<records::ServerInfo>, Toolbox), (String, crate::mcp::StderrTail)> {
    let (client, server) = reach.connect().await.map_err(|e| (e.to_string(), crate::mcp::StderrTail::default()))?;
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
pub async fn run(conn: impl Into<Reach>, task_text: &str, plan: &tasks::OraclePlan) -> SessionOutcome {
    run_counting(conn, &Distractors::none(), task_text, plan, None).await
}

/// [`run`], with `distractors` listed beside the arm's functions and the floor's tokens also
/// counted in `tokenizer` where one is given.
pub async fn run_counting(
    conn: impl Into<Reach>,
    distractors: &Distractors,
    task_text: &str,
    plan: &tasks::OraclePlan,
    tokenizer: Option<Tokenizer>,
) -> SessionOutcome {
    let mut c = Conversation::open(conn, false).await.beside(distractors).counting(tokenizer);
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
    /// The tokenizer the floors are also counted in (none: the estimate alone). Dropped when a
    /// count fails: what the conversation's context holds in tokens is then unknown.
    tokenizer: Option<Tokenizer>,
    /// The definitions in tokens, counted once.
    definitions_tokens: Option<u64>,
    /// Tokens of the earlier tasks' text, counted calls and answers ([`Self::prior_bytes`]).
    prior_tokens: u64,
    /// Starting the server and listing it; taken by the first task's outcome.
    start_ms: Option<f64>,
}

impl Conversation {
    pub async fn open(conn: impl Into<Reach>, warm: bool) -> Self {
        let starting = std::time::Instant::now();
        let connected = connect_and_list(conn.into()).await;
        let start_ms = connected.is_ok().then(|| starting.elapsed().as_secs_f64() * 1000.0);
        Self { start_ms, connected, warm, prior_bytes: 0, seen: vec![], ended: None, tokenizer: None, definitions_tokens: None, prior_tokens: 0 }
    }

    /// Lists `distractors` beside the arm's functions: the floors count them, as a model would
    /// be sent them; the plan never calls one.
    pub fn beside(mut self, distractors: &Distractors) -> Self {
        if let Ok((.., toolbox)) = &mut self.connected {
            *toolbox = toolbox.clone().beside(distractors);
        }
        self
    }

    /// The arm's own function definitions, without distractors (what a plan can call).
    pub fn own_definitions(&self) -> &[serde_json::Value] {
        self.connected.as_ref().map(|(_, _, _, toolbox)| toolbox.own.as_slice()).unwrap_or_default()
    }

    /// Also counts the floors in `tokenizer`, when it is a known one (the estimate is always
    /// there; a count is never made with it).
    pub fn counting(mut self, tokenizer: Option<Tokenizer>) -> Self {
        self.tokenizer = tokenizer.filter(Tokenizer::counts);
        self
    }

    /// The function definitions the server's tools and resources make (none when it could not
    /// be started or listed).
    pub fn definitions(&self) -> &[serde_json::Value] {
        self.connected.as_ref().map(|(_, _, _, toolbox)| toolbox.definitions.as_slice()).unwrap_or_default()
    }

    /// Replays `plan` as the conversation's next task.
    pub async fn task(&mut self, task_text: &str, plan: &tasks::OraclePlan) -> SessionOutcome {
        let start_ms = self.start_ms.take();
        let (started_at, clock) = (Utc::now(), std::time::Instant::now());
        let mut transcript = vec![json!({ "event": "start", "provider": PROVIDER, "task": task_text })];
        let finish =
            |validity: Validity, tool_calls: Vec<ToolCallRecord>, final_answer, offered, oracle, transcript, server_info, stderr: &crate::mcp::StderrTail| {
                SessionOutcome {
                    provider: PROVIDER.into(),
                    validity: validity.with_transport_notes(&stderr.notes_text()).with_server_stderr(&stderr.text()),
                    server_info,
                    start_ms,
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
        let texts = counted_texts(&report.calls, &made, &self.seen);
        transcript.push(json!({ "event": "answer", "text": report.answer }));
        let counted = match self.tokenizer.clone() {
            None => None,
            Some(t) => match count_task(&t, &toolbox.definitions, &mut self.definitions_tokens, self.prior_tokens, task_text, &texts, &report.answer).await {
                Ok(c) => Some((t.label(), c)),
                Err(e) => {
                    // The bytes floor stands; the counts are null from here on, never a guess.
                    transcript.push(json!({ "event": "tokenizer_error", "tokenizer": t.label(), "error": e.to_string() }));
                    self.tokenizer = None;
                    None
                }
            },
        };
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
            tokenizer: counted.as_ref().map(|(label, _)| label.clone()),
            definitions_tokens: counted.as_ref().map(|(_, c)| c.definitions),
            input_tokens: counted.as_ref().map(|(_, c)| c.input),
            output_tokens: counted.as_ref().map(|(_, c)| c.output),
        };
        self.prior_bytes += task_text.len() + args_bytes + result_bytes + report.answer.len();
        if let Some((_, c)) = &counted {
            self.prior_tokens += c.left;
        }
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
                distractor: false,
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

/// A task's figures in tokenizer `t`: each piece counted as the model would be sent it, then
/// summed over the turns as the estimate sums bytes. `definitions_tokens` caches the
/// definitions' count for the conversation; `prior` is what its earlier tasks left.
async fn count_task(
    t: &Tokenizer,
    definitions: &[serde_json::Value],
    definitions_tokens: &mut Option<u64>,
    prior: u64,
    task_text: &str,
    calls: &[(String, String)],
    answer: &str,
) -> Result<Counted, TokenizerError> {
    let definitions = match *definitions_tokens {
        Some(d) => d,
        None => {
            let d = t.count_definitions(definitions).await?;
            *definitions_tokens = Some(d);
            d
        }
    };
    let task = t.count(task_text).await?;
    let fixed = t.count(crate::session::SYSTEM_PROMPT).await? + task + definitions + prior;
    let mut counted = Vec::with_capacity(calls.len());
    for (args, result) in calls {
        counted.push((t.count(args).await?, t.count(result).await?));
    }
    let answer = t.count(answer).await?;
    let args: u64 = counted.iter().map(|(a, _)| a).sum();
    let results: u64 = counted.iter().map(|(_, r)| r).sum();
    Ok(Counted { definitions, input: over_turns(fixed, &counted), output: args + answer, left: task + args + results + answer })
}

/// The (arguments, result) texts of the calls this task counts — those [`Conversation::recorded`]
/// kept: not a repeat of an earlier task's call — as the model would be sent them (no
/// arguments: none, as their bytes are 0).
fn counted_texts(replayed: &[tasks::replay::CallRecord], made: &[(String, String, String)], seen: &[(String, String, String)]) -> Vec<(String, String)> {
    replayed
        .iter()
        .zip(made)
        .filter(|(_, key)| !seen.contains(key))
        .map(|(c, _)| (if c.arguments.is_null() { String::new() } else { c.arguments.to_string() }, c.result.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{estimated_input_tokens, over_turns};

    #[test]
    fn every_turn_resends_what_came_before() {
        // No call: one answer turn with the fixed part.
        assert_eq!(estimated_input_tokens(400, &[]), 100);
        // Two calls: turns carry 400, 400 + 40, 400 + 40 + 80 bytes.
        assert_eq!(estimated_input_tokens(400, &[(10, 30), (20, 60)]), (400 + 440 + 520) / 4);
        // Counted in tokens, the same turns with no division.
        assert_eq!(over_turns(100, &[(3, 7), (5, 15)]), 100 + 110 + 130);
    }
}
