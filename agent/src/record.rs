//! What one session produced, before the pipeline adds the verifier and the experiment fields
//! and writes it as a [`records::SessionRecord`]. The record's parts live in the `records` crate.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use records::{CallKind, InvalidReason, Offered, OracleFloor, ToolCallRecord, TurnRecord, Usage, Validity};

/// Everything a session produced, before the verifier and the experiment fields are added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionOutcome {
    /// `oracle` or `openai_compatible`.
    pub provider: String,
    pub validity: Validity,
    pub turns: Vec<TurnRecord>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub final_answer: Option<String>,
    /// The session stopped at the turn cap: a valid failure, flagged.
    pub turn_cap_hit: bool,
    /// The conversation outgrew the model's context window after the first turn: a valid
    /// failure, flagged.
    #[serde(default)]
    pub context_exceeded: bool,
    /// The final answer holds a function call written as text instead of a native tool call.
    #[serde(default)]
    pub tool_call_as_text: bool,
    /// The endpoint could not parse the model's output (see the record's field of that name).
    #[serde(default)]
    pub unparseable_output: bool,
    pub offered: Offered,
    pub oracle: Option<OracleFloor>,
    /// Provider retries over the whole session: the turns' `retries` plus those of a turn that
    /// never got an answer (which has no [`TurnRecord`]).
    #[serde(default)]
    pub provider_retries: u32,
    /// The request that got no answer and ended the session, if one did.
    #[serde(default)]
    pub failed_turn: Option<records::FailedTurn>,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    /// The server's `serverInfo` from the handshake; `None` when it never completed.
    #[serde(default)]
    pub server_info: Option<records::ServerInfo>,
    /// Milliseconds from spawning or reaching the server to its tools listed (the handshake
    /// and listings); `None` when this session did not start it (a later task of a warm
    /// conversation).
    #[serde(default)]
    pub start_ms: Option<f64>,
    /// Messages and events in order; written beside the record, never inside it.
    #[serde(skip)]
    pub transcript: Vec<Value>,
}

impl SessionOutcome {
    /// Sum of a usage field over turns; `None` if any turn lacks it or there are no turns.
    pub fn total(&self, field: impl Fn(&Usage) -> Option<u64>) -> Option<u64> {
        records::session::total(&self.turns, field)
    }

    pub fn tool_errors(&self) -> usize {
        self.tool_calls.iter().filter(|c| c.is_error).count()
    }
}
