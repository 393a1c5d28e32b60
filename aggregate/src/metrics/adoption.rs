//! Adoption: how an arm's valid sessions used what they were offered — which tools, how often,
//! how much of it went to the tools that make the pattern a pattern, and how much was wasted.
//! A second layer beside the result, never folded into it: a control has no distinctive tools and
//! gets a structural zero there through no fault of its own.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use records::SessionRecord;
use serde::{Deserialize, Serialize};

/// One tool and the calls made to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolUse {
    pub tool: String,
    pub calls: usize,
}

/// An arm's use of its tools over its valid sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Adoption {
    /// Calls over the arm's valid sessions.
    pub calls: usize,
    /// Per tool, most called first (ties by name).
    pub by_tool: Vec<ToolUse>,
    /// The pattern only: calls to tools it is offered and the control is not, and their share
    /// of its calls. Null for the control (a structural zero) and when either arm was never seen.
    pub distinctive_calls: Option<usize>,
    pub distinctive_share: Option<f64>,
    /// Wasted calls: the server answered with an error; the function was never offered; the
    /// arguments were not JSON.
    pub errors: usize,
    pub unknown_tools: usize,
    pub invalid_arguments: usize,
    /// Calls that repeat an earlier call of the same session exactly (same function, same
    /// arguments). Null when a call's arguments were not kept (records written before).
    pub repeats: Option<usize>,
    /// When the sessions were offered distractors (tools of other servers the client listed
    /// beside the arm's, `--distractors`): how many were listed (the most any session was), the
    /// calls made to them (refused by the client, never reaching the arm; not among `errors`),
    /// and the valid sessions that made at least one, of `sessions`. All null without distractors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distractors: Option<DistractorUse>,
}

/// An arm's calls to distractors (see [`Adoption::distractors`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DistractorUse {
    pub listed: u32,
    pub calls: usize,
    pub sessions_with_calls: usize,
    pub sessions: usize,
}

/// The adoption of `recs` (valid sessions only); distinctive calls are filled in by [`distinctive`].
pub fn adoption(recs: &[&SessionRecord]) -> Adoption {
    let valid: Vec<&SessionRecord> = recs.iter().copied().filter(|r| r.validity.is_valid()).collect();
    let mut by_tool: BTreeMap<&str, usize> = BTreeMap::new();
    let mut repeats = Some(0usize);
    for r in &valid {
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        for c in &r.tool_calls {
            *by_tool.entry(c.name.as_str()).or_default() += 1;
            match (&c.arguments_sha256, repeats.as_mut()) {
                (Some(h), Some(n)) if !seen.insert((c.name.as_str(), h.as_str())) => *n += 1,
                (None, _) => repeats = None,
                _ => {}
            }
        }
    }
    let mut by_tool: Vec<ToolUse> = by_tool.into_iter().map(|(tool, calls)| ToolUse { tool: tool.to_owned(), calls }).collect();
    by_tool.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.tool.cmp(&b.tool)));
    let calls = valid.iter().map(|r| r.tool_calls.len()).sum();
    let count = |f: fn(&records::ToolCallRecord) -> bool| valid.iter().flat_map(|r| &r.tool_calls).filter(|c| f(c)).count();
    Adoption {
        calls,
        by_tool,
        distinctive_calls: None,
        distinctive_share: None,
        errors: count(|c| c.is_error && !c.unknown_tool && !c.invalid_arguments && !c.distractor),
        unknown_tools: count(|c| c.unknown_tool),
        invalid_arguments: count(|c| c.invalid_arguments),
        repeats,
        distractors: valid.iter().map(|r| r.offered.distractors).max().filter(|n| *n > 0).map(|listed| DistractorUse {
            listed,
            calls: count(|c| c.distractor),
            sessions_with_calls: valid.iter().filter(|r| r.tool_calls.iter().any(|c| c.distractor)).count(),
            sessions: valid.len(),
        }),
    }
}

/// Fills in the pattern's distinctive calls: to functions its sessions were offered that the
/// control's never were.
pub fn distinctive(pattern: &mut Adoption, pattern_recs: &[&SessionRecord], control_recs: &[&SessionRecord]) {
    let offered = |recs: &[&SessionRecord]| -> BTreeSet<String> { recs.iter().flat_map(|r| r.offered.functions.iter().cloned()).collect() };
    let (own, other) = (offered(pattern_recs), offered(control_recs));
    if own.is_empty() || other.is_empty() {
        return;
    }
    let n: usize = pattern.by_tool.iter().filter(|t| own.contains(&t.tool) && !other.contains(&t.tool)).map(|t| t.calls).sum();
    pattern.distinctive_calls = Some(n);
    pattern.distinctive_share = (pattern.calls > 0).then(|| n as f64 / pattern.calls as f64);
}
