//! The session record: one JSON document per session, written atomically by the pipeline and
//! read by `aggregate`. Experiment-level fields sit beside the agent's outcome.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::fingerprint::Fingerprint;
use crate::model::{Dialect, MaxTokensParam, Temperature};
use crate::outcome::{Offered, OracleFloor, ToolCallRecord, TurnRecord, Validity, VerifierOutcome};
use crate::{Provider, Role, Transport};

/// Bump when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// The model and its pinned parameters (`provider = "oracle"` for the oracle, parameters null).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    pub id: String,
    pub provider: Provider,
    /// A number sent with every request, or `"provider_default"` (nothing sent); null for the
    /// oracle.
    pub temperature: Option<Temperature>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    /// Whose rules the endpoint follows (null for the oracle and in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<Dialect>,
    /// The request field that carries `max_tokens` (null when no limit is sent, and in older
    /// records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_param: Option<MaxTokensParam>,
    /// The reasoning effort sent with every request (null: none is sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
}

impl ModelSpec {
    pub fn oracle() -> Self {
        Self {
            id: "oracle".into(),
            provider: Provider::Oracle,
            temperature: None,
            max_tokens: None,
            seed: None,
            dialect: None,
            max_tokens_param: None,
            reasoning_effort: None,
        }
    }

    pub fn is_oracle(&self) -> bool {
        self.provider == Provider::Oracle
    }
}

/// Token totals over the session's turns; each is null if any turn lacked the field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Σ prompt tokens (cached included): the headline "input tokens".
    pub input_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
    pub uncached_input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
}

impl Totals {
    pub fn of(turns: &[TurnRecord]) -> Self {
        let input = total(turns, |u| u.prompt_tokens);
        let cached = total(turns, |u| u.cached_prompt_tokens);
        Self {
            input_tokens: input,
            cached_input_tokens: cached,
            uncached_input_tokens: input.zip(cached).map(|(i, c)| i.saturating_sub(c)),
            output_tokens: total(turns, |u| u.completion_tokens),
            reasoning_tokens: total(turns, |u| u.reasoning_tokens),
        }
    }
}

/// Sum of a usage field over turns; `None` if any turn lacks it or there are no turns.
pub fn total(turns: &[TurnRecord], field: impl Fn(&crate::Usage) -> Option<u64>) -> Option<u64> {
    if turns.is_empty() {
        return None;
    }
    turns.iter().map(|t| field(&t.usage)).sum()
}

/// Milliseconds the harness itself spent around the session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessTimings {
    pub reset_ms: f64,
    /// Connect + list + the agent or oracle run (includes the model for model sessions).
    pub session_ms: f64,
    pub verify_ms: f64,
    pub write_ms: f64,
}

/// How the harness authenticated to the model endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Auth {
    /// A bearer key read from the named environment variable.
    Key,
    /// No key: a loopback endpoint and the key variable unset.
    None,
}

/// What a server said it was in its MCP handshake (`serverInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
}

/// An external arm as a session ran it: its folder's hash and the names (never the values) of
/// the variables its process was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalArmRecord {
    pub sha256: String,
    pub env_names: Vec<String>,
}

/// Set on a record that a later attempt of the same session replaced (`--retry-invalid`, or a
/// resume after a quota stop or an interrupt). The record is kept, moved under `superseded/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Superseded {
    pub at: DateTime<Utc>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub schema_version: u32,
    pub experiment: String,
    pub module: String,
    pub server: String,
    pub role: Role,
    pub task: String,
    pub task_sha256: String,
    pub rep: u32,
    /// 1 if this arm ran first for its (task, rep) pair, 2 if second (ABBA rotation).
    pub arm_position: u32,
    pub model: ModelSpec,
    /// How the endpoint was authenticated; null for the oracle and in older records.
    #[serde(default)]
    pub auth: Option<Auth>,
    pub manifest_sha256: String,
    pub system_prompt_sha256: Option<String>,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub world_seed: u64,
    pub world_scale: u32,
    /// How the agent reached the server. Null in records written before it was recorded.
    #[serde(default)]
    pub transport: Option<Transport>,
    /// Everything that must be equal for this session to be compared or pooled with another
    /// (see [`Fingerprint`]). Null in records written before fingerprints: such records are
    /// "unknown" and never pooled with newer ones.
    #[serde(default)]
    pub fingerprint: Option<Fingerprint>,
    /// sha256 of [`Self::fingerprint`].
    #[serde(default)]
    pub fingerprint_sha256: Option<String>,
    /// 1 for the first attempt of this (model, server, task, rep); n when n − 1 earlier attempts
    /// were superseded. Null in records written before attempts were counted.
    #[serde(default)]
    pub attempt: Option<u32>,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    pub turn_cap: u32,
    pub turn_cap_hit: bool,
    /// The conversation outgrew the model's context window: a valid failure, flagged.
    #[serde(default)]
    pub context_exceeded: bool,
    /// The final answer holds a function call written as text (JSON naming an offered function)
    /// instead of a native tool call: a valid failure, flagged; when most of an arm's sessions
    /// have it, the endpoint is probably not parsing tool calls.
    #[serde(default)]
    pub tool_call_as_text: bool,
    /// The model endpoint answered that it could not parse the model's own output (llama.cpp's
    /// "does not match the expected … format", and the like): the arm failed, it is not an
    /// infrastructure fault. A valid failure, flagged; the server's text is in `failed_turn`.
    #[serde(default)]
    pub unparseable_output: bool,
    /// Number of model requests that got an answer.
    pub turns: usize,
    pub turn_records: Vec<TurnRecord>,
    pub totals: Totals,
    /// Provider retries over the whole session: every turn's `retries` plus those of a last turn
    /// that never got an answer (which has no turn record). Null in records written before.
    #[serde(default)]
    pub provider_retries: Option<u32>,
    /// The request that got no answer and ended the session, if one did.
    #[serde(default)]
    pub failed_turn: Option<crate::FailedTurn>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub offered: Offered,
    pub final_answer: Option<String>,
    /// Null when the session was invalid (nothing to score).
    pub verifier: Option<VerifierOutcome>,
    pub validity: Validity,
    pub oracle: Option<OracleFloor>,
    /// Null when the model has no price (never 0 for unknown).
    pub cost_usd: Option<f64>,
    pub harness: HarnessTimings,
    /// The `serverInfo` the arm's server reported in its handshake; null when it never answered
    /// (and in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<ServerInfo>,
    /// Set when the arm is an external one (a folder with an `arm.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_arm: Option<ExternalArmRecord>,
    /// Present only on a record kept under `superseded/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<Superseded>,
}

impl SessionRecord {
    /// Passed by the verifier (false when invalid or not scored).
    pub fn passed(&self) -> bool {
        self.verifier.as_ref().is_some_and(|v| v.verdict == crate::Verdict::Passed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Usage;

    fn turns(usages: Vec<Usage>) -> Vec<TurnRecord> {
        usages
            .into_iter()
            .enumerate()
            .map(|(i, usage)| TurnRecord {
                index: i as u32 + 1,
                usage,
                retries: 0,
                latency_ms: 0.0,
                finish_reason: None,
                tool_calls: 0,
                extras: Default::default(),
            })
            .collect()
    }

    #[test]
    fn totals_are_null_when_any_turn_is_missing_the_field() {
        let full = |p| Usage { prompt_tokens: Some(p), ..Default::default() };
        assert_eq!(total(&turns(vec![full(10), full(5)]), |u| u.prompt_tokens), Some(15));
        assert_eq!(total(&turns(vec![full(10), Usage::default()]), |u| u.prompt_tokens), None);
        assert_eq!(total(&turns(vec![]), |u| u.prompt_tokens), None);
        assert_eq!(Totals::of(&turns(vec![full(10)])).cached_input_tokens, None);
    }
}
