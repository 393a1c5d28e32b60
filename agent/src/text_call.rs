//! A function call the model wrote as text instead of sending it as a native tool call.
//!
//! When a server's chat template has no tool-call support (or its tool-call parser does not
//! recognise what the model writes), the call comes back in `content`: fenced JSON, bare JSON, or
//! inside `<tool_call>…</tool_call>` tags. The harness never executes such a call — that would
//! make the endpoint's parser part of the arm — but it must notice it, or a broken setup scores
//! every session as the arm's failure. The preflight refuses such an endpoint; a session that
//! ends on one is flagged.

use serde_json::{Map, Value};

/// How many `{` a text may have us try to parse from. A final answer is short; this bounds the
/// work on a pathological one (every failed parse may scan to the end of the text).
const MAX_PARSE_ATTEMPTS: usize = 256;

/// How deep to look inside a JSON object for a call (`{"tool_calls": [{"function": {…}}]}`).
const MAX_DEPTH: usize = 4;

/// The name of the first offered function that `text` holds a call to, written as JSON: an
/// object with `"name"` and `"arguments"` or `"parameters"` (an object, or a JSON string holding
/// one), possibly under `"function"` (`{"type": "function", "function": {…}}`), anywhere in the
/// text — fenced, bare or between tags.
pub fn tool_call_as_text(text: &str, offered: &[String]) -> Option<String> {
    let mut from = 0;
    for _ in 0..MAX_PARSE_ATTEMPTS {
        let start = from + text[from..].find('{')?;
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) => {
                if let Some(name) = call_in(&value, offered, 0) {
                    return Some(name);
                }
                // Objects nested in this one were searched already: resume after it.
                from = start + values.byte_offset();
            }
            _ => from = start + 1,
        }
    }
    None
}

fn call_in(value: &Value, offered: &[String], depth: usize) -> Option<String> {
    if depth > MAX_DEPTH {
        return None;
    }
    match value {
        Value::Object(object) => call_shape(object, offered).or_else(|| object.values().find_map(|v| call_in(v, offered, depth + 1))),
        Value::Array(items) => items.iter().find_map(|v| call_in(v, offered, depth + 1)),
        _ => None,
    }
}

fn call_shape(object: &Map<String, Value>, offered: &[String]) -> Option<String> {
    let name = object.get("name")?.as_str()?;
    let arguments = object.get("arguments").or_else(|| object.get("parameters"))?;
    (offered.iter().any(|f| f == name) && is_arguments(arguments)).then(|| name.to_owned())
}

/// Arguments as models write them: an object, or (as the API itself encodes them) a JSON string
/// holding one.
fn is_arguments(value: &Value) -> bool {
    match value {
        Value::Object(_) => true,
        Value::String(s) => matches!(serde_json::from_str::<Value>(s), Ok(Value::Object(_))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered() -> Vec<String> {
        ["tickets_update", "tickets_get", "users_get"].map(String::from).to_vec()
    }

    fn found(text: &str) -> Option<String> {
        tool_call_as_text(text, &offered())
    }

    #[test]
    fn llama_cpp_fenced_answer() {
        // What Qwen2.5-Coder answered through llama.cpp with a template that has no tool support.
        let text = "```json\n{\"name\": \"tickets_update\", \"arguments\": {\"id\": 77, \"assignee_id\": 12345}}\n```";
        assert_eq!(found(text).as_deref(), Some("tickets_update"));
    }

    #[test]
    fn bare_json_after_prose() {
        let text = "Sure, I will look it up. {\"name\": \"users_get\", \"arguments\": {\"id\": 3}} Done.";
        assert_eq!(found(text).as_deref(), Some("users_get"));
    }

    #[test]
    fn hermes_tags() {
        let text = "<tool_call>\n{\"name\": \"tickets_get\", \"arguments\": {\"id\": 77}}\n</tool_call>";
        assert_eq!(found(text).as_deref(), Some("tickets_get"));
    }

    #[test]
    fn parameters_instead_of_arguments_and_arguments_as_a_string() {
        assert_eq!(found(r#"{"type": "function", "name": "tickets_get", "parameters": {"id": 1}}"#).as_deref(), Some("tickets_get"));
        assert_eq!(found(r#"{"name": "tickets_get", "arguments": "{\"id\": 1}"}"#).as_deref(), Some("tickets_get"));
    }

    #[test]
    fn openai_function_shapes() {
        let typed = r#"{"type": "function", "function": {"name": "users_get", "arguments": "{\"id\": 12345}"}}"#;
        assert_eq!(found(typed).as_deref(), Some("users_get"));
        let wrapped = r#"{"function": {"name": "tickets_update", "arguments": {"id": 77}}}"#;
        assert_eq!(found(wrapped).as_deref(), Some("tickets_update"));
        let listed = r#"{"tool_calls": [{"id": "c1", "function": {"name": "tickets_get", "arguments": {}}}]}"#;
        assert_eq!(found(listed).as_deref(), Some("tickets_get"));
    }

    #[test]
    fn json_that_is_not_a_call() {
        assert_eq!(found(r#"The ticket is {"id": 77, "assignee_id": 12345, "status": "open"}."#), None);
        assert_eq!(found(r#"{"name": "tickets_get"}"#), None, "a name alone is not a call");
        assert_eq!(found(r#"{"name": "tickets_get", "arguments": 77}"#), None, "arguments must be an object");
        assert_eq!(found(r#"{"name": "tickets_get", "arguments": "not json"}"#), None);
        assert_eq!(found(r#"{"name": {"first": "Marcus"}, "arguments": {}}"#), None);
    }

    #[test]
    fn a_name_not_offered() {
        assert_eq!(found(r#"```json {"name": "delete_everything", "arguments": {}} ```"#), None);
        assert_eq!(found(r#"{"name": "Acme Corp", "arguments": {"tier": "gold"}}"#), None);
    }

    #[test]
    fn prose_and_broken_json() {
        assert_eq!(found("Ticket 77 is now assigned to Marcus (user 12)."), None);
        assert_eq!(found("I would call tickets_update with id 77, but I lack the assignee's id."), None);
        assert_eq!(found(r#"{"name": "tickets_update", "arguments": {"id": 77"#), None);
        assert_eq!(found("{{{{ } {"), None);
        assert_eq!(found(""), None);
    }

    #[test]
    fn a_call_after_other_json_and_unbalanced_braces_is_found() {
        let text = r#"Ticket: {"id": 77} and { not json. Now: {"name": "tickets_get", "arguments": {"id": 77}}"#;
        assert_eq!(found(text).as_deref(), Some("tickets_get"));
    }

    #[test]
    fn a_pathological_text_is_bounded() {
        let text = format!("{}{}", "{\"a\": \"".repeat(10_000), r#"{"name": "tickets_get", "arguments": {}}"#);
        // Only the first MAX_PARSE_ATTEMPTS openings are tried: the call at the end is not reached.
        assert_eq!(found(&text), None);
    }
}
