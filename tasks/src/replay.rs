//! Replaying an oracle plan through a server over real MCP, recording every call's size,
//! outcome and latency. The agent's oracle provider runs plans through this.

use std::collections::BTreeMap;
use std::time::Instant;

use rmcp::RoleClient;
use rmcp::service::Peer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::{self, CallText};
use crate::oracle::{OraclePlan, interpolate, substitute};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    Tool,
    ReadResource,
    ListResources,
}

/// One call made during a replay.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallRecord {
    pub kind: CallKind,
    /// Tool name or resource URI.
    pub name: String,
    pub arguments: Value,
    /// Bytes of the JSON arguments sent (0 for a resource read).
    pub args_bytes: usize,
    /// Bytes of the result text received.
    pub result_bytes: usize,
    pub result: String,
    pub is_error: bool,
    pub latency_ms: f64,
    /// When the call was made: milliseconds after the replay started.
    pub at_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplayReport {
    pub calls: Vec<CallRecord>,
    /// The plan's answer with saved values filled in.
    pub answer: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The plan itself cannot go on: a value it fills in was never saved.
    #[error("step {step} ({name}): {problem}")]
    Step { step: usize, name: String, problem: String },
    /// The server answered a step with something the plan does not accept: an error where it
    /// expects a result, a result where it expects an error, or no value where it reads one.
    /// `made` holds every call up to and including that one.
    #[error("step {step} ({name}): {problem}")]
    Unexpected { step: usize, name: String, problem: String, made: Vec<CallRecord> },
    #[error("step {step} ({name}): MCP error: {source}")]
    Protocol { step: usize, name: String, source: rmcp::ServiceError },
    #[error("answer: {0}")]
    Answer(String),
}

/// The record of one call, and its result parsed as JSON when it is JSON.
fn record(kind: CallKind, name: String, arguments: Value, result: CallText, (origin, started): (Instant, Instant)) -> (CallRecord, Value) {
    let parsed = serde_json::from_str(&result.text).unwrap_or_else(|_| Value::String(result.text.clone()));
    let args_bytes = if arguments.is_null() { 0 } else { arguments.to_string().len() };
    let record = CallRecord {
        kind,
        name,
        arguments,
        args_bytes,
        result_bytes: result.text.len(),
        result: result.text,
        is_error: result.is_error,
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        at_ms: started.duration_since(origin).as_secs_f64() * 1000.0,
    };
    (record, parsed)
}

/// Runs `plan` against the server behind `peer`. Fails on the first step that does not go as
/// the plan says (an unexpected error, an expected error that did not happen, a missing value).
pub async fn replay(plan: &OraclePlan, peer: &Peer<RoleClient>) -> Result<ReplayReport, ReplayError> {
    let mut vars: BTreeMap<String, Value> = BTreeMap::new();
    let mut calls = Vec::with_capacity(plan.steps.len());
    let origin = Instant::now();
    for (i, step) in plan.steps.iter().enumerate() {
        let n = i + 1;
        let started = (origin, Instant::now());
        let (record, parsed) = if let Some(tool) = &step.tool {
            let raw = serde_json::to_value(step.args.clone().unwrap_or_default()).unwrap_or(Value::Null);
            let mut args = substitute(&raw, &vars).map_err(|problem| ReplayError::Step { step: n, name: tool.clone(), problem })?;
            if let Some(key) = &step.wrong_id
                && let Some(id) = args.get_mut(key.as_str())
            {
                *id = crate::oracle::wrong_id(id);
            }
            let object = args.as_object().cloned().unwrap_or_default();
            let result = call::call_tool(peer, tool, object).await.map_err(|source| ReplayError::Protocol { step: n, name: tool.clone(), source })?;
            record(CallKind::Tool, tool.clone(), args, result, started)
        } else if step.list_resources {
            let result = call::list_resources(peer).await.map_err(|source| ReplayError::Protocol { step: n, name: "list resources".into(), source })?;
            record(CallKind::ListResources, "list resources".into(), Value::Null, result, started)
        } else {
            let uri_template = step.read.clone().unwrap_or_default();
            let uri = interpolate(&uri_template, &vars).map_err(|problem| ReplayError::Step { step: n, name: uri_template.clone(), problem })?;
            let result = call::read_resource(peer, &uri).await.map_err(|source| ReplayError::Protocol { step: n, name: uri.clone(), source })?;
            record(CallKind::ReadResource, uri, Value::Null, result, started)
        };
        let name = record.name.clone();
        if step.wrong_id.is_none() && !step.any_result && record.is_error != step.expect_error {
            let problem = if record.is_error {
                format!("failed unexpectedly: {}", record.result)
            } else {
                format!("was expected to fail but succeeded: {}", record.result.chars().take(300).collect::<String>())
            };
            calls.push(record);
            return Err(ReplayError::Unexpected { step: n, name, problem, made: calls });
        }
        for (var, pointer) in &step.save {
            let Some(v) = parsed.pointer(pointer).cloned() else {
                let problem = format!("cannot save {var}: nothing at {pointer:?} in the result");
                calls.push(record);
                return Err(ReplayError::Unexpected { step: n, name, problem, made: calls });
            };
            vars.insert(var.clone(), v);
        }
        calls.push(record);
    }
    let answer = interpolate(&plan.answer, &vars).map_err(ReplayError::Answer)?;
    Ok(ReplayReport { calls, answer })
}
