//! The parts of a session record: validity, exact per-turn usage (nulls kept), tool calls, what
//! the model was offered, the oracle's structural floor and the verifier's outcome.
//!
//! Measurements are never defaulted: a usage field the provider omitted is `None` (null in JSON),
//! and a total over turns is `None` as soon as one turn lacks the field.

use serde::{Deserialize, Serialize};

/// Whether a session's numbers are data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum Validity {
    Valid,
    Invalid { reason: InvalidReason, detail: String },
}

impl Validity {
    pub fn is_valid(&self) -> bool {
        matches!(self, Self::Valid)
    }

    pub fn invalid(reason: InvalidReason, detail: impl Into<String>) -> Self {
        Self::Invalid { reason, detail: detail.into() }
    }

    /// An MCP transport failure with what the harness saw the server break appended (a line on
    /// stdout that is not a message, a message over the transport's limit); anything else as is.
    pub fn with_transport_notes(self, notes: &str) -> Self {
        match self {
            Self::Invalid { reason: InvalidReason::McpTransport, detail } if !notes.is_empty() && !detail.contains(notes) => {
                Self::Invalid { reason: InvalidReason::McpTransport, detail: format!("{detail}; {notes}") }
            }
            other => other,
        }
    }

    /// An MCP transport failure with the tail of what the server wrote to stderr appended (a
    /// server that died or wrote garbage to stdout usually says why there); anything else as is.
    pub fn with_server_stderr(self, stderr: &str) -> Self {
        match self {
            Self::Invalid { reason: InvalidReason::McpTransport, detail } if !stderr.is_empty() && !detail.contains(stderr) => {
                Self::Invalid { reason: InvalidReason::McpTransport, detail: format!("{detail}; the server's stderr ends: {stderr}") }
            }
            other => other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidReason {
    /// The model provider kept failing after the bounded retries (5xx, timeouts, bad bodies).
    ProviderError,
    /// The provider refused for quota or a session/usage limit; the whole run stops.
    QuotaOrSessionLimit,
    /// The MCP server crashed or its transport failed.
    McpTransport,
    /// The harness itself failed (reset, spawn, verifier plumbing).
    HarnessError,
    /// The run was interrupted (Ctrl-C, SIGTERM) while this session was in flight.
    Interrupted,
    /// The harness's own infrastructure failed before the session could be attempted (the
    /// database, a world reset, serving the arm); the run stopped.
    Infrastructure,
    /// Warm sessions only: the conversation ended before this task (it outgrew the model's
    /// context window, or its server died, in an earlier task), so the task was never attempted.
    ConversationEnded,
    /// The oracle's plan could not go on because of what the arm answered a step: an error
    /// where the plan expects a result (or the reverse), or no value where it reads one. The
    /// arm's failure — or, at a world scale or seed the gates did not check, the plan's; the
    /// detail names the step, the call and what came back, and the calls made stay recorded.
    ArmUnexpectedResult,
}

impl InvalidReason {
    pub const ALL: [Self; 8] = [
        Self::ProviderError,
        Self::QuotaOrSessionLimit,
        Self::McpTransport,
        Self::HarnessError,
        Self::Interrupted,
        Self::Infrastructure,
        Self::ConversationEnded,
        Self::ArmUnexpectedResult,
    ];

    /// The name records use (`provider_error`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ProviderError => "provider_error",
            Self::QuotaOrSessionLimit => "quota_or_session_limit",
            Self::McpTransport => "mcp_transport",
            Self::HarnessError => "harness_error",
            Self::Interrupted => "interrupted",
            Self::Infrastructure => "infrastructure",
            Self::ConversationEnded => "conversation_ended",
            Self::ArmUnexpectedResult => "arm_unexpected_result",
        }
    }

    /// The session never got a fair attempt because the run itself stopped (a quota refusal at
    /// the door, an interrupt, broken infrastructure): a resume runs it again without being
    /// asked, keeping the old record as superseded. Every other invalid session is rerun only on
    /// `--retry-invalid`.
    pub fn rerun_on_resume(self) -> bool {
        matches!(self, Self::QuotaOrSessionLimit | Self::Interrupted | Self::Infrastructure)
    }
}

impl std::fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Token usage of one model response, exactly as the provider reported it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// Part of `prompt_tokens` served from the provider's cache.
    pub cached_prompt_tokens: Option<u64>,
    /// Part of `completion_tokens` spent on reasoning.
    pub reasoning_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
}

/// One model request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// 1-based.
    pub index: u32,
    pub usage: Usage,
    /// Retries this turn needed before it got an answer (429, 5xx, timeouts).
    pub retries: u32,
    /// Of the attempt that answered (retries and their waits are not included).
    pub latency_ms: f64,
    /// When the attempt that answered was sent: milliseconds after the record's `started_at`.
    /// Null in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<f64>,
    pub finish_reason: Option<String>,
    /// Tool calls the model asked for in this turn.
    pub tool_calls: u32,
    /// What the provider reported beyond usage, as given. Empty in older records.
    #[serde(default)]
    pub extras: ProviderExtras,
}

/// What a provider sends beyond usage, kept as given; each is null when it sends none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderExtras {
    /// llama.cpp's `timings` object (`prompt_n`, `cache_n`, `prompt_ms`, `predicted_n`,
    /// `predicted_ms`, …), verbatim.
    #[serde(default)]
    pub timings: Option<serde_json::Value>,
    #[serde(default)]
    pub system_fingerprint: Option<String>,
    /// The model id the server says answered, when it differs from the one requested.
    #[serde(default)]
    pub served_model: Option<String>,
}

/// A model request that never got an answer (its retries ran out, or the provider refused): the
/// session ended there. Its retries count in the session's total with the answered turns'.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedTurn {
    /// 1-based, as the turn it would have been.
    pub index: u32,
    /// Retries after the first attempt, before giving up.
    pub retries: u32,
    /// The provider's last answer, verbatim where it sent one.
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    Tool,
    ReadResource,
    ListResources,
}

/// For a module whose servers list a tool catalogue: how the session came by the tools its task
/// needs — the mechanism behind a success gap, reported beside success and never folded into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retrieval {
    /// The tools the task needs: those its control oracle plan calls, in plan order.
    pub needed: Vec<String>,
    /// Per needed tool, the best rank (1 = first) at which any search of the session returned
    /// it; null when no search did. All null for an arm without a search tool (it lists them).
    pub best_rank: Vec<Option<u32>>,
    /// Searches the session made.
    pub searches: u32,
    /// Calls to tools of systems that are listed but not connected (a near-miss picked, or a
    /// request that cannot be done), through either arm.
    pub unconnected_calls: u32,
}

/// One call the agent made (or refused to make) on the model's behalf.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The turn that asked for it (0 for the oracle, which has no turns).
    pub turn: u32,
    pub kind: CallKind,
    /// Function name as the model gave it (or the resource URI).
    pub name: String,
    pub args_bytes: usize,
    pub result_bytes: usize,
    /// The server answered with an error (or the call was refused, below).
    pub is_error: bool,
    /// The arguments were not valid JSON; the call was not made.
    pub invalid_arguments: bool,
    /// The function was never offered; the call was not made.
    pub unknown_tool: bool,
    /// The function is a distractor (a tool of another server the client listed): the arm never
    /// saw the call; the client answered it with a refusal.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub distractor: bool,
    pub latency_ms: f64,
    /// When the call was made: milliseconds after the record's `started_at`. Null in records
    /// written before it was kept, and for a call refused before it was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<f64>,
    /// sha256 of the arguments as canonical JSON (keys sorted; the raw text when it is not
    /// JSON): two calls of one function with the same hash repeated themselves. Null in records
    /// written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_sha256: Option<String>,
}

/// The [`ToolCallRecord::arguments_sha256`] of arguments written as `text`.
pub fn arguments_sha256(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => crate::sha256_hex(canonical(&value).as_bytes()),
        Err(_) => crate::sha256_hex(text.as_bytes()),
    }
}

/// `value` as compact JSON with every object's keys sorted, whatever order the map keeps.
fn canonical(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys.iter().map(|k| format!("{}:{}", serde_json::Value::from(k.as_str()), canonical(&map[k.as_str()]))).collect();
            format!("{{{}}}", fields.join(","))
        }
        serde_json::Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// What the model was offered in this session (checked by gate G1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Offered {
    /// Function names, the server's tools plus any generic resource functions.
    pub functions: Vec<String>,
    /// Whether the generic list/read resource functions were added.
    pub resource_functions: bool,
    /// Bytes of the function definitions as sent to the model.
    pub definitions_bytes: usize,
    /// How many of `functions` are distractors: tools of other servers the client listed beside
    /// the arm's (`--distractors`), answered by the client with a refusal. 0 (absent) with none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub distractors: u32,
    /// Of `definitions_bytes`, the distractors' (the same in both arms); 0 (absent) with none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub distractors_bytes: usize,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// The structural floor measured by an oracle session: no model, no usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OracleFloor {
    pub calls: usize,
    /// Bytes of the offered function definitions.
    pub schema_bytes: usize,
    pub args_bytes: usize,
    pub result_bytes: usize,
    /// A labelled estimate, never a measurement: the context at the end of the plan,
    /// (schema + args + results + task) bytes / 4.
    pub estimated_tokens: u64,
    pub estimate_method: String,
    /// A labelled estimate of the input tokens a model would be billed for following the plan
    /// one call per turn: every turn resends the system prompt, the task, the definitions and
    /// all earlier calls and results, and a last turn gives the answer. Comparable with a model
    /// session's input tokens, which [`Self::estimated_tokens`] is not. Null in records
    /// written before it existed.
    #[serde(default)]
    pub estimated_input_tokens: Option<u64>,
    #[serde(default)]
    pub input_estimate_method: Option<String>,
    /// The tokenizer the counts below were made with (`o200k_base`, `cl100k_base`,
    /// `llama:URL`); absent when the run knew none, and then only the estimates exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
    /// Counted, not estimated: the offered definitions in tokens of [`Self::tokenizer`], each
    /// definition's JSON as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definitions_tokens: Option<u64>,
    /// Counted: [`Self::estimated_input_tokens`]'s turns, each piece (system prompt, task,
    /// definitions, earlier tasks, every call's arguments and result) in tokens of
    /// [`Self::tokenizer`] instead of bytes / 4. The chat format's own tokens are not in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Counted: what a model would write to follow the plan (every call's arguments and the
    /// answer) in tokens of [`Self::tokenizer`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
}

/// The verifier's judgement of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Passed,
    /// The verifier ran and said no.
    Failed,
    /// The verifier itself could not run.
    CouldNotScore,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct VerifierOutcome {
    pub verdict: Verdict,
    /// Why it failed (every failed check), or why it could not score. Empty when passed.
    pub reasons: Vec<String>,
    pub elapsed_ms: f64,
    /// Every check the verifier made, held or not, in its own order: what an outcome class
    /// ("partial", "wrong but confident") is read from. Empty when it could not score, and in
    /// records written before checks were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// Every entity the final answer names, checked against the world as it stood right after the
    /// session (read-only). Null when it could not score, and in records written before grounding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grounding: Option<Grounding>,
    /// The outcome class as graded when the session ran, with the claim of the answer that
    /// decided it. A report grades again with the grader it is built with (and says so); absent
    /// in records written before classes were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<ClassNote>,
    /// The tables whose rows differ from the freshly seeded world after the session, whatever
    /// the verifier asks of them (empty: the session changed nothing). Absent when it could not
    /// score, and in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_tables: Option<Vec<String>>,
    /// sha256 of the transcript's last event, `{"event": "world", "changes": […]}`: every row the
    /// session changed (table, id, inserted / updated / deleted, the changed columns before and
    /// after), as written there. Absent when it could not be read, and in records written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_diff_sha256: Option<String>,
    /// The session's changes outside the task's expected footprint (what its oracle plan changes
    /// through the same arm): side effects, counted beside success and never folded into it.
    /// Absent when the world could not be read or no footprint was known, and in records written
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collateral: Option<Collateral>,
    /// Which verifier and grader produced this outcome, and when a regrade did. Absent in
    /// records written before it was kept: their versions are unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graded: Option<Graded>,
}

/// The versions an outcome was graded under (docs/regrade.md). Outcomes graded under different
/// versions are never pooled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Graded {
    /// sha256 of the task's verifier as loaded (its checks, not its file's comments).
    pub verifier_sha256: String,
    /// sha256 of the grading rules' source (answer checks, grounding extractor, outcome class).
    pub grader_sha256: String,
    /// Set when `pipeline regrade` wrote this outcome over a stored final state; absent when the
    /// session's own run graded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regraded_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Set when a model judged the outcome class instead of the rules (`pipeline regrade
    /// --judge`): which model, and how far it agreed with the hand grades before it graded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeInfo>,
}

/// A model judge of outcome classes and grounding, pinned (temperature 0, a fixed seed) and graded
/// on the gold set's held-out part before it graded anything.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeInfo {
    pub model: String,
    pub base_url: String,
    /// sha256 of the judge's instructions (`agent::judge`).
    pub prompt_sha256: String,
    /// Its outcome classes against the hand grades (one item per held-out case).
    pub class: JudgeAgreement,
    /// The references it found, resolved against each case's world, against the hand-read ones
    /// (one item per reference either side lists).
    pub grounding: JudgeAgreement,
}

/// How far a judge agreed with the hand grades on one layer of the gold set's held-out part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeAgreement {
    pub items: usize,
    /// Null when there were no items (never a zero standing for a measurement).
    pub accuracy: Option<f64>,
    /// Cohen's kappa; null when undefined (no spread in the labels).
    pub kappa: Option<f64>,
    /// Answers it gave nothing usable for (its endpoint failed, or its reply was unreadable):
    /// their items count as disagreements.
    pub unanswered: usize,
    /// The items it decided itself (for the class: failed sessions with an answer; a pass and an
    /// empty answer are fixed by the definitions), and its agreement on those alone: how far to
    /// trust what it adds. Null when it decided none.
    #[serde(default)]
    pub asked: usize,
    #[serde(default)]
    pub asked_accuracy: Option<f64>,
    #[serde(default)]
    pub asked_kappa: Option<f64>,
}

/// What a session changed beyond the task's expected footprint (docs/collateral.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Collateral {
    /// Where the footprint came from: `oracle replay` (the arm's oracle plan replayed on a fresh
    /// world by the harness), `g7` (the ground-truth gate's replay before the run), `this
    /// session` (an oracle session: its own changes, so it can have none), `no change` (the
    /// session changed nothing, so no footprint was needed).
    pub footprint: String,
    /// sha256 of the footprint's rows (table, id, op, changed columns), when one was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint_sha256: Option<String>,
    /// Every changed row outside the footprint, in the world's table order.
    pub writes: Vec<CollateralWrite>,
}

impl Collateral {
    /// Collateral writes of one class.
    pub fn count(&self, class: CollateralClass) -> usize {
        self.writes.iter().filter(|w| w.class == class).count()
    }
}

/// One row changed outside the footprint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollateralWrite {
    pub table: String,
    pub id: i64,
    /// `inserted`, `updated` or `deleted`.
    pub op: String,
    pub class: CollateralClass,
    /// The columns changed outside the footprint (an update: those the footprint's own change of
    /// the row does not touch, or all of them; an insert or a deletion: empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<String>,
}

/// How a collateral write falls outside the footprint. A deletion is one whatever its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollateralClass {
    /// A row of a table the footprint writes, but not one of its rows (or columns), or an insert
    /// beyond the footprint's number of inserts there.
    TouchedTable,
    /// A row of a table the footprint does not write at all.
    UntouchedTable,
    /// A row deleted that the footprint does not delete.
    Deletion,
}

impl CollateralClass {
    pub const ALL: [Self; 3] = [Self::TouchedTable, Self::UntouchedTable, Self::Deletion];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::TouchedTable => "touched_table",
            Self::UntouchedTable => "untouched_table",
            Self::Deletion => "deletion",
        }
    }
}

/// The outcome class of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeClass {
    Correct,
    Partial,
    WrongConfident,
    HonestFailure,
    Ambiguous,
    NoAnswer,
}

impl OutcomeClass {
    pub const ALL: [Self; 6] = [Self::Correct, Self::Partial, Self::WrongConfident, Self::HonestFailure, Self::Ambiguous, Self::NoAnswer];

    /// As the report shows it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Correct => "correct",
            Self::Partial => "partial",
            Self::WrongConfident => "wrong but confident",
            Self::HonestFailure => "honest failure",
            Self::Ambiguous => "ambiguous",
            Self::NoAnswer => "no answer",
        }
    }
}

/// A session's class, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassNote {
    pub class: OutcomeClass,
    /// For `partial`: the fraction of the verifier's checks that held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks_held: Option<f64>,
    /// The claim (and the check) that decided the class, in words.
    pub decided_by: String,
}

/// One check of a verifier and whether it held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// The check as the verifier names it (an SQL assertion's name, `table t unchanged`, `mentions "x"`).
    pub name: String,
    pub kind: CheckKind,
    pub held: bool,
    /// A check that only asserts an absence — nothing changed (an `unchanged` table, a
    /// `same_as_seeded` assertion), the answer does not say something (`must_not_contain`):
    /// holding it is no sign that any work was done or anything right was said. Absent (false)
    /// in records written before it was kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub negative: bool,
}

/// What a check looks at: the world's final state, or the final answer's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    State,
    Answer,
}

/// The entity references of one final answer (see `docs/grounding.md`), each once, in the order
/// the answer first names them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grounding {
    pub references: Vec<Reference>,
}

impl Grounding {
    /// How many references have this status.
    pub fn count(&self, status: Groundedness) -> usize {
        self.references.iter().filter(|r| r.status == status).count()
    }

    /// The references a grounding rate is taken over: all but those the answer itself denies.
    pub fn checkable(&self) -> usize {
        self.references.len() - self.count(Groundedness::Denied)
    }
}

/// One entity a final answer names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// The words of the answer that name it (`ticket 4711`, `Marcus Chen`, `platform/payments-api`).
    pub text: String,
    pub kind: ReferenceKind,
    pub status: Groundedness,
    /// Why it is not grounded (`no ticket 4711`, `2 repositories are named payments-api`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceKind {
    Ticket,
    ChangeRequest,
    Deploy,
    Notification,
    Customer,
    User,
    /// Someone or something `named …` without saying which: a customer or a user.
    Name,
    Service,
    Repository,
    Runbook,
}

impl ReferenceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ticket => "ticket",
            Self::ChangeRequest => "change request",
            Self::Deploy => "deploy",
            Self::Notification => "notification",
            Self::Customer => "customer",
            Self::User => "user",
            Self::Name => "customer or user",
            Self::Service => "service",
            Self::Repository => "repository",
            Self::Runbook => "runbook",
        }
    }
}

/// Whether a reference holds in the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Groundedness {
    /// It names exactly one entity that exists.
    Grounded,
    /// It cannot be pinned to one entity: the name fits several, or fits one only in part.
    Unresolved,
    /// It names an entity of its kind that does not exist.
    Hallucinated,
    /// It names something that does not exist, in a sentence saying so ("no customer named …"):
    /// not a claim that it exists, and left out of every rate.
    Denied,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_arguments_hash_alike_whatever_their_order_or_spacing() {
        let a = arguments_sha256(r#"{"id": 77, "status": "resolved", "x": {"b": 1, "a": [2, {"d": 3, "c": 4}]}}"#);
        assert_eq!(a, arguments_sha256(r#"{"x":{"a":[2,{"c":4,"d":3}],"b":1},"status":"resolved","id":77}"#));
        assert_ne!(a, arguments_sha256(r#"{"id": 78, "status": "resolved", "x": {"b": 1, "a": [2, {"d": 3, "c": 4}]}}"#));
        assert_eq!(arguments_sha256("not json"), crate::sha256_hex(b"not json"));
    }

    #[test]
    fn validity_serialises_with_its_class() {
        let v = Validity::invalid(InvalidReason::QuotaOrSessionLimit, "You exceeded your current quota");
        let j = serde_json::to_value(&v).unwrap();
        assert_eq!(j["class"], "invalid");
        assert_eq!(j["reason"], "quota_or_session_limit");
        assert_eq!(serde_json::to_value(Validity::Valid).unwrap(), serde_json::json!({"class": "valid"}));
    }

    #[test]
    fn reason_names_match_their_serialised_form() {
        for r in InvalidReason::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
    }
}
