//! Order effects in warm conversations: per model, module, arm and position in the conversation
//! (1st task, 2nd, …), how the tasks fared and what they cost, so a reader sees whether the cost
//! per task falls as the conversation goes on (discovery paid once) or rises with its context.

use std::collections::BTreeMap;

use records::{Role, SessionRecord};
use serde::{Deserialize, Serialize};

use crate::stats;

/// One position of one arm's warm conversations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderRow {
    pub model: String,
    pub module: String,
    /// `held_out` for the conversations through the module's held-out tasks (absent for dev).
    #[serde(default, skip_serializing_if = "records::Split::is_dev")]
    pub split: records::Split,
    pub role: Role,
    pub server: String,
    /// 1 for the conversations' first task.
    pub position: u32,
    /// Sessions at this position, and the valid ones among them.
    pub attempted: usize,
    pub valid: usize,
    pub passed: usize,
    /// passed / valid; null without a valid session.
    pub success_rate: Option<f64>,
    /// Means over the valid sessions with a value: the input tokens of the task's own requests,
    /// and the context when it started (its first request's input tokens). Null where none has
    /// one (the oracle has no usage).
    pub input_tokens_mean: Option<f64>,
    pub context_tokens_at_start_mean: Option<f64>,
    /// The oracle's estimate of the input tokens per task at this position.
    pub estimated_input_tokens_mean: Option<f64>,
    /// Valid sessions here that followed at least one earlier task that did not pass.
    pub after_a_failure: usize,
}

/// Where a warm session sat: model id, module, split, role, server and its position in the
/// conversation.
type Seat = (String, String, records::Split, Role, String, u32);

/// The order rows of every warm session among `recs` (cold ones have no position).
pub fn order_rows<'a>(recs: impl Iterator<Item = &'a SessionRecord>) -> Vec<OrderRow> {
    let mut groups: BTreeMap<Seat, Vec<&SessionRecord>> = BTreeMap::new();
    for r in recs {
        if let Some(c) = &r.conversation {
            groups.entry((r.model.id.clone(), r.module.clone(), r.split, r.role, r.server.clone(), c.position)).or_default().push(r);
        }
    }
    groups
        .into_iter()
        .map(|((model, module, split, role, server, position), rs)| {
            let valid: Vec<&&SessionRecord> = rs.iter().filter(|r| r.validity.is_valid()).collect();
            let passed = valid.iter().filter(|r| r.passed()).count();
            let mean = |f: &dyn Fn(&SessionRecord) -> Option<f64>| stats::mean(&valid.iter().filter_map(|r| f(r)).collect::<Vec<_>>());
            OrderRow {
                model,
                module,
                split,
                role,
                server,
                position,
                attempted: rs.len(),
                valid: valid.len(),
                passed,
                success_rate: (!valid.is_empty()).then(|| passed as f64 / valid.len() as f64),
                input_tokens_mean: mean(&|r| r.totals.input_tokens.map(|t| t as f64)),
                context_tokens_at_start_mean: mean(&|r| r.conversation.as_ref().and_then(|c| c.context_tokens_at_start).map(|t| t as f64)),
                estimated_input_tokens_mean: mean(&|r| r.oracle.as_ref().and_then(|o| o.estimated_input_tokens).map(|t| t as f64)),
                after_a_failure: valid.iter().filter(|r| r.conversation.as_ref().is_some_and(|c| c.earlier_not_passed > 0)).count(),
            }
        })
        .collect()
}
