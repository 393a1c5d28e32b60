//! One conversation of the session list, as view data for `templates/session.html`: messages,
//! each tool call with its arguments and result, usage per turn, a failed turn; every long text
//! cut at [`BLOCK_CAP`] bytes with how much was left out.

use std::borrow::Cow;

use records::{Provider, SessionRecord};

use super::sessions::plural;
use crate::document::format::readable;
use crate::transcript::{self, CallResult, Item};

/// A single message, argument or result longer than this is cut (the transcript file has it
/// whole).
pub(super) const BLOCK_CAP: usize = 16 * 1024;

pub(super) struct ConversationView<'a> {
    pub(super) oracle: bool,
    pub(super) items: Vec<ItemView<'a>>,
    pub(super) failed_turn: Option<FailedTurnView<'a>>,
    /// Lines of the transcript that were not JSON.
    pub(super) unreadable: usize,
}

pub(super) enum ItemView<'a> {
    System {
        first: &'a str,
        text: Capped<'a>,
    },
    /// `who` is "task" in an oracle session.
    User {
        who: &'static str,
        text: Capped<'a>,
    },
    /// `definitions`: the readable size of the definitions, which stay in the transcript file.
    Offered {
        functions: &'a [String],
        definitions: String,
    },
    Assistant {
        turn: u32,
        usage: String,
        text: Option<Capped<'a>>,
        calls: Vec<AskedView<'a>>,
    },
    Result(ResultView<'a>),
    Answer(Capped<'a>),
    Problem {
        turn: Option<u32>,
        title: &'a str,
        detail: Capped<'a>,
    },
    /// What the session changed in the world; `outside` of its rows were collateral writes
    /// (null when the record could not say).
    World {
        rows: Vec<WorldRowView<'a>>,
        outside: Option<usize>,
    },
    Other {
        event: &'a str,
        body: Capped<'a>,
    },
}

/// One changed row; `collateral` names its class when it was outside the task's footprint, and
/// `columns` marks each column outside it.
pub(super) struct WorldRowView<'a> {
    pub(super) table: &'a str,
    pub(super) id: i64,
    pub(super) op: &'a str,
    pub(super) collateral: Option<String>,
    pub(super) columns: Vec<(&'a str, &'a str, &'a str, bool)>,
}

/// A call as the model asked for it: its arguments pretty-printed, and whether they are a JSON
/// object.
pub(super) struct AskedView<'a> {
    pub(super) name: &'a str,
    pub(super) valid: bool,
    pub(super) arguments: Capped<'a>,
}

/// A call's result, or an oracle's call with its arguments.
pub(super) struct ResultView<'a> {
    pub(super) oracle: bool,
    pub(super) name: &'a str,
    /// Milliseconds, rounded.
    pub(super) latency: Option<String>,
    pub(super) error: bool,
    /// Why the call failed, shown in red.
    pub(super) flag: Option<&'static str>,
    pub(super) arguments: Option<Capped<'a>>,
    pub(super) transport_error: Option<Capped<'a>>,
    pub(super) result: Option<Capped<'a>>,
}

pub(super) struct FailedTurnView<'a> {
    pub(super) index: u32,
    pub(super) retries: u32,
    pub(super) detail: Capped<'a>,
}

/// A text cut at [`BLOCK_CAP`] bytes, and how many bytes were left out.
pub(super) struct Capped<'a> {
    pub(super) text: Cow<'a, str>,
    pub(super) more: Option<usize>,
}

/// `s`, cut at [`BLOCK_CAP`] bytes (on a character boundary) when it is longer.
pub(super) fn capped<'a>(s: impl Into<Cow<'a, str>>) -> Capped<'a> {
    let mut text = s.into();
    let len = text.len();
    if len <= BLOCK_CAP {
        return Capped { text, more: None };
    }
    let mut end = BLOCK_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match &mut text {
        Cow::Borrowed(b) => *b = &b[..end],
        Cow::Owned(o) => o.truncate(end),
    }
    Capped { text, more: Some(len - end) }
}

/// A turn's usage, latency and retries, as its message's heading shows them.
pub(super) fn usage_of(r: &SessionRecord, turn: u32) -> String {
    let Some(t) = r.turn_records.iter().find(|t| t.index == turn) else { return String::new() };
    let n = |x: Option<u64>| x.map(|v| readable(v as f64)).unwrap_or_else(|| "not reported".into());
    let mut s = format!("input {} (cached {}) · output {}", n(t.usage.prompt_tokens), n(t.usage.cached_prompt_tokens), n(t.usage.completion_tokens));
    s += &format!(" · {:.0} ms", t.latency_ms);
    if t.retries > 0 {
        s += &format!(" · {}", plural(t.retries as usize, "retry").replace("retrys", "retries"));
    }
    s
}

pub(super) fn conversation_view<'a>(r: &'a SessionRecord, c: &'a transcript::Conversation) -> ConversationView<'a> {
    let oracle = r.model.provider == Provider::Oracle;
    let items = c
        .items
        .iter()
        .map(|item| match item {
            Item::System(t) => ItemView::System { first: t.lines().next().unwrap_or(""), text: capped(t.as_str()) },
            Item::User(t) => ItemView::User { who: if oracle { "task" } else { "user" }, text: capped(t.as_str()) },
            Item::Offered { functions, definitions_bytes } => ItemView::Offered { functions, definitions: readable(*definitions_bytes as f64) },
            Item::Assistant { turn, text, calls } => ItemView::Assistant {
                turn: *turn,
                usage: usage_of(r, *turn),
                text: text.as_deref().filter(|t| !t.is_empty()).map(capped),
                calls: calls
                    .iter()
                    .map(|call| AskedView {
                        name: &call.name,
                        valid: serde_json::from_str::<serde_json::Value>(&call.arguments).is_ok_and(|v| v.is_object()),
                        arguments: capped(transcript::pretty(&call.arguments)),
                    })
                    .collect(),
            },
            Item::Call(call) => ItemView::Result(result_view(call, oracle)),
            Item::Answer(t) => ItemView::Answer(capped(t.as_str())),
            Item::Problem { turn, title, detail } => ItemView::Problem { turn: *turn, title, detail: capped(detail.as_str()) },
            Item::World(rows) => world_view(r, rows),
            Item::Other { event, body } => ItemView::Other { event, body: capped(body.as_str()) },
        })
        .collect();
    let failed_turn = r.failed_turn.as_ref().map(|f| FailedTurnView { index: f.index, retries: f.retries, detail: capped(f.detail.as_str()) });
    ConversationView { oracle, items, failed_turn, unreadable: c.unreadable }
}

/// The session's changes with its collateral writes (`records::Collateral`) marked.
fn world_view<'a>(r: &'a SessionRecord, rows: &'a [transcript::WorldRow]) -> ItemView<'a> {
    let collateral = r.verifier.as_ref().and_then(|v| v.collateral.as_ref());
    let rows: Vec<WorldRowView<'a>> = rows
        .iter()
        .map(|row| {
            let write = collateral.and_then(|c| c.writes.iter().find(|w| w.table == row.table && w.id == row.id));
            // An update outside the footprint in some columns only marks those; any other
            // collateral write marks the whole row.
            let outside = |col: &str| write.is_some_and(|w| w.columns.is_empty() || w.columns.iter().any(|c| c == col));
            WorldRowView {
                table: &row.table,
                id: row.id,
                op: &row.op,
                collateral: write.map(|w| w.class.as_str().replace('_', " ")),
                columns: row.columns.iter().map(|(k, b, a)| (k.as_str(), b.as_str(), a.as_str(), outside(k))).collect(),
            }
        })
        .collect();
    ItemView::World { rows, outside: collateral.map(|c| c.writes.len()) }
}

pub(super) fn result_view(c: &CallResult, oracle: bool) -> ResultView<'_> {
    let flag = if c.distractor {
        Some("a distractor: refused by the client, never sent to the arm")
    } else if c.unknown_tool {
        Some("refused: no such function")
    } else if c.invalid_arguments {
        Some("refused: arguments not usable")
    } else if c.transport_error.is_some() {
        Some("transport failed")
    } else if c.is_error {
        Some("error")
    } else {
        None
    };
    ResultView {
        oracle,
        name: &c.name,
        latency: c.latency_ms.map(|ms| format!("{ms:.0}")),
        error: flag.is_some(),
        flag,
        arguments: c.arguments.as_deref().filter(|_| oracle).map(|a| capped(transcript::pretty(a))),
        transport_error: c.transport_error.as_deref().map(capped),
        result: c.result.as_deref().map(|res| capped(transcript::pretty(res))),
    }
}

#[cfg(test)]
mod distractor_tests {
    use super::*;

    #[test]
    fn a_distractor_call_reads_as_the_clients_refusal_not_the_arms_error() {
        let line = r#"{"event":"call","turn":2,"tool_call_id":"c2","name":"fleetwise_list_vehicles","arguments":"{}","result":"refused","is_error":true,"distractor":true}"#;
        let transcript::Item::Call(c) = &transcript::parse(line).items[0] else { panic!() };
        let view = result_view(c, false);
        assert_eq!(view.flag, Some("a distractor: refused by the client, never sent to the arm"));
        assert!(view.error);
    }
}
