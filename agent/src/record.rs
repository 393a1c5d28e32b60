//! What one session leaves behind: the session record (DESIGN §8) and its parts.
//!
//! Measurements are never defaulted: a usage field the provider omitted is `None` (null in JSON),
//! and a total over turns is `None` as soon as one turn lacks the field.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    pub finish_reason: Option<String>,
    /// Tool calls the model asked for in this turn.
    pub tool_calls: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    Tool,
    ReadResource,
    ListResources,
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
    pub latency_ms: f64,
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
}

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
    pub offered: Offered,
    pub oracle: Option<OracleFloor>,
    /// Provider retries over the whole session: the turns' `retries` plus those of a turn that
    /// never got an answer (which has no [`TurnRecord`]).
    #[serde(default)]
    pub provider_retries: u32,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    /// Messages and events in order; written beside the record, never inside it.
    #[serde(skip)]
    pub transcript: Vec<Value>,
}

impl SessionOutcome {
    /// Sum of a usage field over turns; `None` if any turn lacks it or there are no turns.
    pub fn total(&self, field: impl Fn(&Usage) -> Option<u64>) -> Option<u64> {
        if self.turns.is_empty() {
            return None;
        }
        self.turns.iter().map(|t| field(&t.usage)).sum()
    }

    pub fn tool_errors(&self) -> usize {
        self.tool_calls.iter().filter(|c| c.is_error).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(turns: Vec<Usage>) -> SessionOutcome {
        SessionOutcome {
            provider: "test".into(),
            validity: Validity::Valid,
            turns: turns
                .into_iter()
                .enumerate()
                .map(|(i, usage)| TurnRecord { index: i as u32 + 1, usage, retries: 0, latency_ms: 0.0, finish_reason: None, tool_calls: 0 })
                .collect(),
            tool_calls: vec![],
            final_answer: None,
            turn_cap_hit: false,
            context_exceeded: false,
            offered: Offered::default(),
            oracle: None,
            provider_retries: 0,
            started_at: Utc::now(),
            ended_at: Utc::now(),
            transcript: vec![],
        }
    }

    #[test]
    fn totals_are_null_when_any_turn_is_missing_the_field() {
        let full = |p| Usage { prompt_tokens: Some(p), ..Default::default() };
        assert_eq!(outcome(vec![full(10), full(5)]).total(|u| u.prompt_tokens), Some(15));
        assert_eq!(outcome(vec![full(10), Usage::default()]).total(|u| u.prompt_tokens), None);
        assert_eq!(outcome(vec![]).total(|u| u.prompt_tokens), None);
    }

    #[test]
    fn validity_serialises_with_its_class() {
        let v = Validity::invalid(InvalidReason::QuotaOrSessionLimit, "You exceeded your current quota");
        let j = serde_json::to_value(&v).unwrap();
        assert_eq!(j["class"], "invalid");
        assert_eq!(j["reason"], "quota_or_session_limit");
        assert_eq!(serde_json::to_value(Validity::Valid).unwrap(), serde_json::json!({"class": "valid"}));
    }
}
