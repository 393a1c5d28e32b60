//! The oracle provider: replays a task's oracle plan for the arm instead of calling a model.
//! It is labelled `oracle` everywhere, records no usage (there is none), and measures the
//! structural floor of the design: calls, and bytes of schemas, arguments and results, with a
//! token figure that is explicitly an estimate.

use chrono::Utc;
use serde_json::json;

use crate::mcp::{ServerConnection, Toolbox, connect};
use crate::record::{CallKind, InvalidReason, OracleFloor, SessionOutcome, ToolCallRecord, Validity};

pub const PROVIDER: &str = "oracle";

/// How the oracle's token figure is computed (recorded with it).
pub const ESTIMATE_METHOD: &str = "estimate: (definitions + task text + arguments + results) bytes / 4";

/// Runs `plan` through the server at `conn` and reports it as a session.
pub async fn run(conn: &ServerConnection, task_text: &str, plan: &tasks::OraclePlan) -> SessionOutcome {
    let started_at = Utc::now();
    let mut transcript = vec![json!({ "event": "start", "provider": PROVIDER, "task": task_text })];
    let finish = |validity, tool_calls: Vec<ToolCallRecord>, final_answer, offered, oracle, transcript| SessionOutcome {
        provider: PROVIDER.into(),
        validity,
        turns: vec![],
        tool_calls,
        final_answer,
        turn_cap_hit: false,
        offered,
        oracle,
        provider_retries: 0,
        started_at,
        ended_at: Utc::now(),
        transcript,
    };
    let client = match connect(conn).await {
        Ok(c) => c,
        Err(e) => return finish(Validity::invalid(InvalidReason::McpTransport, e.to_string()), vec![], None, Default::default(), None, transcript),
    };
    let toolbox = match Toolbox::from_server(&client).await {
        Ok(t) => t,
        Err(e) => {
            let _ = client.cancel().await;
            return finish(Validity::invalid(InvalidReason::McpTransport, e.to_string()), vec![], None, Default::default(), None, transcript);
        }
    };
    let report = tasks::replay(plan, &client).await;
    let _ = client.cancel().await;
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            // A plan that no longer replays is a harness problem (the G7 gate exists to catch it).
            let reason = if matches!(e, tasks::replay::ReplayError::Protocol { .. }) { InvalidReason::McpTransport } else { InvalidReason::HarnessError };
            return finish(Validity::invalid(reason, e.to_string()), vec![], None, toolbox.offered, None, transcript);
        }
    };
    let calls: Vec<ToolCallRecord> = report
        .calls
        .iter()
        .map(|c| ToolCallRecord {
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
        })
        .collect();
    for c in &report.calls {
        transcript.push(json!({ "event": "call", "name": c.name, "arguments": c.arguments, "result": c.result, "is_error": c.is_error }));
    }
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
    };
    finish(Validity::Valid, calls, Some(report.answer), toolbox.offered, Some(floor), transcript)
}
