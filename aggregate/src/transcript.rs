//! A session's transcript (`<task>__rep<k>.transcript.jsonl`, one JSON event per line, as the
//! agent and the oracle write them) read back as a conversation: the messages in order, each
//! tool call with its arguments and its result, and what went wrong on the way.
//!
//! Read leniently: the transcript is evidence to show, not data to score. An event this reader
//! does not know is kept as it is; a line that is not JSON is counted and said.

use serde_json::Value;

/// What a conversation holds, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    System(String),
    /// The task: the user message of a model session, the task text of an oracle session.
    User(String),
    /// The functions offered (their definitions stay in the transcript file: they are the same
    /// for every session of an arm and would dominate the page).
    Offered {
        functions: Vec<String>,
        definitions_bytes: usize,
    },
    Assistant {
        turn: u32,
        text: Option<String>,
        calls: Vec<AskedCall>,
    },
    Call(CallResult),
    /// The oracle's final answer (a model's is its last assistant message).
    Answer(String),
    /// Something that went wrong: a provider error, a limit, a call written as text, …
    Problem {
        turn: Option<u32>,
        title: String,
        detail: String,
    },
    /// What the session changed in the world, row by row (the transcript's last event).
    World(Vec<WorldRow>),
    /// An event this reader does not know, kept verbatim.
    Other {
        event: String,
        body: String,
    },
}

/// One row the session changed: inserted, updated or deleted, and each changed column's value
/// before and after (JSON text; `null` for an inserted row's before and a deleted row's after).
#[derive(Debug, Clone, PartialEq)]
pub struct WorldRow {
    pub table: String,
    pub id: i64,
    pub op: String,
    pub columns: Vec<(String, String, String)>,
}

/// A call as the model asked for it.
#[derive(Debug, Clone, PartialEq)]
pub struct AskedCall {
    pub id: Option<String>,
    pub name: String,
    /// As the model sent them (a string that should hold a JSON object).
    pub arguments: String,
}

/// A call as it was made (or refused) and what came back.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    pub turn: Option<u32>,
    pub id: Option<String>,
    pub name: String,
    pub arguments: Option<String>,
    pub result: Option<String>,
    pub is_error: bool,
    pub invalid_arguments: bool,
    pub unknown_tool: bool,
    /// A tool of another server the client listed beside the arm's (`--distractors`): refused by
    /// the client, never sent to the arm.
    pub distractor: bool,
    pub latency_ms: Option<f64>,
    pub transport_error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    pub items: Vec<Item>,
    /// Lines that were not JSON.
    pub unreadable: usize,
}

fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn turn(v: &Value) -> Option<u32> {
    v.get("turn").and_then(Value::as_u64).and_then(|t| u32::try_from(t).ok())
}

/// Arguments as text: the model's string as sent, the oracle plan's object as compact JSON.
fn arguments(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

pub fn parse(jsonl: &str) -> Conversation {
    let mut c = Conversation::default();
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            c.unreadable += 1;
            continue;
        };
        let event = e.get("event").and_then(Value::as_str).unwrap_or("").to_owned();
        match event.as_str() {
            // A model session's parameters are in the provenance; an oracle's start holds its task.
            "start" => {
                if let Some(task) = text(&e, "task") {
                    c.items.push(Item::User(task));
                }
            }
            "offered" => {
                let functions =
                    e.get("functions").and_then(Value::as_array).map(|f| f.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect()).unwrap_or_default();
                let definitions_bytes = e.get("definitions").map(|d| d.to_string().len()).unwrap_or(0);
                c.items.push(Item::Offered { functions, definitions_bytes });
            }
            "message" => {
                let m = e.get("message").cloned().unwrap_or(Value::Null);
                match m.get("role").and_then(Value::as_str) {
                    Some("system") => c.items.push(Item::System(text(&m, "content").unwrap_or_default())),
                    Some("user") => c.items.push(Item::User(text(&m, "content").unwrap_or_default())),
                    Some("assistant") => {
                        let calls = m
                            .get("tool_calls")
                            .and_then(Value::as_array)
                            .map(|cs| {
                                cs.iter()
                                    .map(|x| AskedCall {
                                        id: text(x, "id"),
                                        name: x.pointer("/function/name").and_then(Value::as_str).unwrap_or("?").to_owned(),
                                        arguments: arguments(x.pointer("/function/arguments")).unwrap_or_default(),
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        c.items.push(Item::Assistant { turn: turn(&e).unwrap_or(0), text: text(&m, "content"), calls });
                    }
                    // The tool message repeats the call event's result.
                    Some("tool") => {}
                    _ => c.items.push(Item::Other { event, body: pretty(line) }),
                }
            }
            "call" => c.items.push(Item::Call(CallResult {
                turn: turn(&e),
                id: text(&e, "tool_call_id"),
                name: text(&e, "name").unwrap_or_else(|| "?".into()),
                arguments: arguments(e.get("arguments")),
                result: text(&e, "result"),
                is_error: e.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                invalid_arguments: e.get("invalid_arguments").and_then(Value::as_bool).unwrap_or(false),
                unknown_tool: e.get("unknown_tool").and_then(Value::as_bool).unwrap_or(false),
                distractor: e.get("distractor").and_then(Value::as_bool).unwrap_or(false),
                latency_ms: e.get("latency_ms").and_then(Value::as_f64),
                transport_error: text(&e, "transport_error"),
            })),
            "answer" => c.items.push(Item::Answer(text(&e, "text").unwrap_or_default())),
            "world" => match world_rows(&e) {
                Some(rows) => c.items.push(Item::World(rows)),
                None => c.items.push(Item::Other { event, body: pretty(line) }),
            },
            // What the model was sent and answered is in the messages; the record has the usage.
            "response" | "end" => {}
            "tool_call_as_text" => c.items.push(Item::Problem {
                turn: turn(&e),
                title: "the answer holds a function call written as text".into(),
                detail: format!(
                    "{} was named in the text of the answer, not called natively; it was not executed (the endpoint is probably not parsing tool calls)",
                    text(&e, "name").unwrap_or_else(|| "a function".into())
                ),
            }),
            "provider_error" | "provider_limit" | "context_exceeded" | "unparseable_output" => {
                let title = match event.as_str() {
                    "provider_error" => "provider error",
                    "provider_limit" => "quota or session limit",
                    "context_exceeded" => "context window exceeded",
                    _ => "the endpoint could not parse the model's output",
                };
                let detail = text(&e, "error").or_else(|| text(&e, "text")).unwrap_or_default();
                c.items.push(Item::Problem { turn: turn(&e), title: title.into(), detail });
            }
            _ => c.items.push(Item::Other { event, body: pretty(line) }),
        }
    }
    c
}

/// The rows of a `world` event, or none when it is not one this reader can read.
fn world_rows(e: &Value) -> Option<Vec<WorldRow>> {
    e.get("changes")?
        .as_array()?
        .iter()
        .map(|c| {
            let columns = c
                .get("columns")?
                .as_object()?
                .iter()
                .map(|(k, v)| {
                    let pair = v.as_array()?;
                    Some((k.clone(), pair.first()?.to_string(), pair.get(1)?.to_string()))
                })
                .collect::<Option<Vec<_>>>()?;
            Some(WorldRow { table: text(c, "table")?, id: c.get("id")?.as_i64()?, op: text(c, "op")?, columns })
        })
        .collect()
}

/// `s` pretty-printed when it is JSON, as it is otherwise.
pub fn pretty(s: &str) -> String {
    match serde_json::from_str::<Value>(s) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => serde_json::to_string_pretty(&v).unwrap_or_else(|_| s.to_owned()),
        _ => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_transcript_reads_as_messages_calls_and_results() {
        let jsonl = [
            r#"{"event":"start","params":{"model":"m"},"turn_cap":8}"#,
            r#"{"event":"offered","functions":["users_list","tickets_get"],"definitions":[{"type":"function"}]}"#,
            r#"{"event":"message","turn":0,"message":{"role":"system","content":"You are an agent."}}"#,
            r#"{"event":"message","turn":0,"message":{"role":"user","content":"Move Lena's tickets."}}"#,
            r#"{"event":"response","turn":1,"latency_ms":5.0,"retries":0,"body":{"usage":{}}}"#,
            r#"{"event":"message","turn":1,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"users_list","arguments":"{\"q\":\"Lena\"}"}}]}}"#,
            r#"{"event":"call","turn":1,"tool_call_id":"c1","name":"users_list","arguments":"{\"q\":\"Lena\"}","result":"{\"data\":[]}","is_error":false,"invalid_arguments":false,"unknown_tool":false,"latency_ms":1.5}"#,
            r#"{"event":"message","turn":1,"message":{"role":"tool","tool_call_id":"c1","content":"{\"data\":[]}"}}"#,
            r#"{"event":"tool_call_as_text","turn":2,"name":"tickets_get"}"#,
            "not json",
            r#"{"event":"end","validity":{"class":"valid"}}"#,
        ]
        .join("\n");
        let c = parse(&jsonl);
        assert_eq!(c.unreadable, 1);
        assert_eq!(c.items.len(), 6, "{:#?}", c.items);
        assert_eq!(c.items[0], Item::Offered { functions: vec!["users_list".into(), "tickets_get".into()], definitions_bytes: 21 });
        assert_eq!(c.items[1], Item::System("You are an agent.".into()));
        assert_eq!(c.items[2], Item::User("Move Lena's tickets.".into()));
        let Item::Assistant { turn, text, calls } = &c.items[3] else { panic!("{:?}", c.items[3]) };
        assert_eq!((*turn, text.as_deref(), calls[0].name.as_str(), calls[0].arguments.as_str()), (1, None, "users_list", "{\"q\":\"Lena\"}"));
        let Item::Call(r) = &c.items[4] else { panic!() };
        assert_eq!((r.id.as_deref(), r.result.as_deref(), r.latency_ms), (Some("c1"), Some("{\"data\":[]}"), Some(1.5)));
        assert!(!r.distractor);
        assert!(matches!(&c.items[5], Item::Problem { turn: Some(2), detail, .. } if detail.contains("tickets_get")));
        // A distractor's call, as the agent writes it: marked, and shown as the client's refusal.
        let line = r#"{"event":"call","turn":2,"tool_call_id":"c2","name":"fleetwise_list_vehicles","arguments":"{}","result":"Fleetwise … refused the call","is_error":true,"invalid_arguments":false,"unknown_tool":false,"latency_ms":0.0,"distractor":true}"#;
        let Item::Call(r) = &parse(line).items[0] else { panic!() };
        assert!(r.distractor && r.is_error);
    }

    #[test]
    fn an_oracle_transcript_reads_as_its_task_calls_and_answer() {
        let jsonl = [
            r#"{"event":"start","provider":"oracle","task":"Do it."}"#,
            r#"{"event":"call","name":"users_list","arguments":{"q":"Lena"},"result":"ok","is_error":true}"#,
            r#"{"event":"answer","text":"Done."}"#,
        ]
        .join("\n");
        let c = parse(&jsonl);
        assert_eq!(c.items[0], Item::User("Do it.".into()));
        let Item::Call(r) = &c.items[1] else { panic!() };
        assert_eq!((r.arguments.as_deref(), r.is_error, r.turn), (Some(r#"{"q":"Lena"}"#), true, None));
        assert_eq!(c.items[2], Item::Answer("Done.".into()));
    }

    #[test]
    fn json_is_pretty_printed_and_text_left_alone() {
        assert_eq!(pretty(r#"{"a":1}"#), "{\n  \"a\": 1\n}");
        assert_eq!(pretty("plain text"), "plain text");
        assert_eq!(pretty("42"), "42");
    }
}
