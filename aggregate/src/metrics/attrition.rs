//! Attrition, per (model, module, server): attempted, valid and replaced sessions and why the
//! rest are invalid; and the harness's own share of a session's time.

use std::collections::BTreeMap;

use records::{Provider, Role, SessionRecord};
use serde::{Deserialize, Serialize};

use super::select::CellKey;

/// The harness's own time (reset, verification, record write, and the session minus the model's
/// answered requests and the tool calls) per valid model session, and its share of the session's
/// whole time. Only sessions with no failed model request count: a failed attempt's duration is
/// not in the record, so it could not be told apart from the harness's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessShare {
    pub sessions: usize,
    /// Valid model sessions left out because a request of theirs failed (a retry, an
    /// unparseable output, a failed last turn).
    pub left_out: usize,
    pub p50_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// Median over sessions of harness time / session time (0.0015 is 0.15%).
    pub share_p50: Option<f64>,
    pub share_max: Option<f64>,
    /// Starting the arm's server and listing it, per session that started one (the arm's own
    /// cost, outside the harness's time): median and largest, and over how many sessions. Null
    /// where no record kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_start_p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_start_max_ms: Option<f64>,
    #[serde(default)]
    pub server_start_sessions: usize,
}

pub(super) fn harness_share<'a>(records: impl Iterator<Item = &'a SessionRecord>) -> HarnessShare {
    let mut ms = Vec::new();
    let mut shares = Vec::new();
    let mut starts = Vec::new();
    let mut left_out = 0;
    for r in records.filter(|r| r.validity.is_valid() && !r.model.is_oracle()) {
        if r.failed_turn.is_some() || r.unparseable_output || r.provider_retries != Some(0) {
            left_out += 1;
            continue;
        }
        let h = &r.harness;
        let model: f64 = r.turn_records.iter().map(|t| t.latency_ms).sum();
        let calls: f64 = r.tool_calls.iter().map(|c| c.latency_ms).sum();
        let start = h.server_start_ms.unwrap_or(0.0);
        starts.extend(h.server_start_ms);
        let own = h.reset_ms + h.verify_ms + h.write_ms + (h.session_ms - model - calls - start).max(0.0);
        let whole = h.reset_ms + h.session_ms + h.verify_ms + h.write_ms;
        ms.push(own);
        if whole > 0.0 {
            shares.push(own / whole);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| v[(v.len() - 1) / 2])
    };
    let max = |v: &[f64]| v.iter().copied().reduce(f64::max);
    HarnessShare {
        sessions: ms.len(),
        left_out,
        max_ms: max(&ms),
        share_max: max(&shares),
        p50_ms: median(&mut ms),
        share_p50: median(&mut shares),
        server_start_max_ms: max(&starts),
        server_start_sessions: starts.len(),
        server_start_p50_ms: median(&mut starts),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttritionRow {
    pub model: String,
    pub provider: Provider,
    pub module: String,
    pub server: String,
    pub role: Role,
    /// k × the module's tasks from the manifest; null without one.
    #[serde(default)]
    pub planned: Option<usize>,
    /// Sessions ever recorded for this cell: the current records plus the replaced attempts.
    #[serde(default)]
    pub attempts: usize,
    /// Attempts a rerun replaced (under `superseded/`): counted here, never scored.
    #[serde(default)]
    pub replaced: usize,
    /// The current records, valid or not.
    pub attempted: usize,
    pub valid: usize,
    /// Invalid reason → count.
    pub invalid: BTreeMap<String, usize>,
    /// Flags over the valid sessions (each a valid failure).
    #[serde(default)]
    pub turn_cap_hits: usize,
    #[serde(default)]
    pub context_exceeded: usize,
    #[serde(default)]
    pub tool_call_as_text: usize,
    #[serde(default)]
    pub unparseable_output: usize,
}

pub(super) fn attrition_row(key: &CellKey) -> AttritionRow {
    let (model, provider, module, server, role) = key.clone();
    AttritionRow {
        model,
        provider,
        module,
        server,
        role,
        planned: None,
        attempts: 0,
        replaced: 0,
        attempted: 0,
        valid: 0,
        invalid: BTreeMap::new(),
        turn_cap_hits: 0,
        context_exceeded: 0,
        tool_call_as_text: 0,
        unparseable_output: 0,
    }
}
