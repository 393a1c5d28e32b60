//! The session record (DESIGN §8): one JSON document per session, written atomically by the
//! pipeline and read by `aggregate`. Experiment-level fields sit beside the agent's outcome.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::record::{Offered, OracleFloor, SessionOutcome, ToolCallRecord, TurnRecord, Validity};

/// Bump when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// The model and its pinned parameters (`provider = "oracle"` for the oracle, parameters null).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    pub id: String,
    pub provider: String,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
}

impl ModelSpec {
    pub fn oracle() -> Self {
        Self { id: "oracle".into(), provider: crate::oracle::PROVIDER.into(), temperature: None, max_tokens: None, seed: None }
    }

    pub fn is_oracle(&self) -> bool {
        self.provider == crate::oracle::PROVIDER
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
    pub fn of(outcome: &SessionOutcome) -> Self {
        let input = outcome.total(|u| u.prompt_tokens);
        let cached = outcome.total(|u| u.cached_prompt_tokens);
        Self {
            input_tokens: input,
            cached_input_tokens: cached,
            uncached_input_tokens: input.zip(cached).map(|(i, c)| i.saturating_sub(c)),
            output_tokens: outcome.total(|u| u.completion_tokens),
            reasoning_tokens: outcome.total(|u| u.reasoning_tokens),
        }
    }
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub schema_version: u32,
    pub experiment: String,
    pub module: String,
    pub server: String,
    /// `pattern` or `control`.
    pub role: String,
    pub task: String,
    pub task_sha256: String,
    pub rep: u32,
    /// 1 if this arm ran first for its (task, rep) pair, 2 if second (ABBA rotation).
    pub arm_position: u32,
    pub model: ModelSpec,
    pub manifest_sha256: String,
    pub system_prompt_sha256: Option<String>,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub world_seed: u64,
    pub world_scale: u32,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    pub turn_cap: u32,
    pub turn_cap_hit: bool,
    /// The conversation outgrew the model's context window: a valid failure, flagged.
    #[serde(default)]
    pub context_exceeded: bool,
    /// Number of model requests.
    pub turns: usize,
    pub turn_records: Vec<TurnRecord>,
    pub totals: Totals,
    pub tool_calls: Vec<ToolCallRecord>,
    pub offered: Offered,
    pub final_answer: Option<String>,
    /// Null when the session was invalid (nothing to score).
    pub verifier: Option<tasks::Outcome>,
    pub validity: Validity,
    pub oracle: Option<OracleFloor>,
    /// Null when the model has no price (never 0 for unknown).
    pub cost_usd: Option<f64>,
    pub harness: HarnessTimings,
}
