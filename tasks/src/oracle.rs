//! Oracle plans: the reference sequence of tool calls and resource reads that solves a task
//! through one arm's surface, plus the final answer.
//!
//! ```toml
//! answer = "Ticket #${ticket} is assigned to Marcus Chen."
//!
//! [[steps]]
//! tool = "customers_list"
//! args = { name = "Northwind Trading Co" }
//! save = { customer = "/data/0/id" }       # JSON pointer into the result
//!
//! [[steps]]
//! tool = "tickets_create"
//! args = { title = "Refund", customer_id = "${customer}" }
//! save = { ticket = "/id" }
//! ```
//!
//! An argument string that is exactly `"${name}"` becomes the saved value with its JSON type;
//! `${name}` inside longer text is replaced by the value's text. `expect_error = true` marks a
//! step that must fail (a plan may show the trap before taking the right path). Besides tool
//! calls, a step can `read = "<uri>"` a resource or `list_resources = true`: the two generic
//! functions the agent offers a model when a server has resources.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OraclePlan {
    /// The final answer the oracle gives (may use `${name}`).
    #[serde(default)]
    pub answer: String,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// A tool to call …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// … with these arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<toml::Table>,
    /// Or a resource URI to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    /// Or `true` to list the server's resources (result: a JSON array of `{uri, name, title,
    /// description, mime_type}`).
    #[serde(default)]
    pub list_resources: bool,
    /// Values to keep from the result: name → JSON pointer (`""` is the whole result).
    #[serde(default)]
    pub save: BTreeMap<String, String>,
    /// The step must fail.
    #[serde(default)]
    pub expect_error: bool,
    /// Set by the simulated agent, never read from a plan file: after substitution, this
    /// argument gets a wrong id ([`wrong_id`]), and the step's result is accepted whether or not
    /// it is an error (a model that slipped on an id goes on as if it had not).
    #[serde(skip)]
    pub wrong_id: Option<String>,
    /// Set by the simulated agent, never read from a plan file: the step's result is accepted
    /// whether or not it is an error (a vandal's write that the server refuses is not the end of
    /// its session).
    #[serde(skip)]
    pub any_result: bool,
}

impl Step {
    /// The argument that names what this step acts on, when it is an id: `id`, else the first
    /// `…_id` argument (by name), whose value is a number, a string of digits or a saved value.
    pub fn id_argument(&self) -> Option<&str> {
        let args = self.args.as_ref()?;
        let is_id = |v: &toml::Value| match v {
            toml::Value::Integer(_) => true,
            toml::Value::String(s) => (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())) || (s.starts_with("${") && s.ends_with('}')),
            _ => false,
        };
        let mut keys: Vec<&String> = args.keys().filter(|k| *k == "id" || k.ends_with("_id")).collect();
        keys.sort_by_key(|k| (k.as_str() != "id", k.as_str()));
        keys.into_iter().find(|k| is_id(&args[k.as_str()])).map(String::as_str)
    }

    /// Whether the step only reads: a resource read or listing, or a tool whose name has a
    /// reading word (list, get, search, find, describe, read) and no writing one.
    pub fn is_read(&self) -> bool {
        match &self.tool {
            None => true,
            Some(name) => {
                let words = name_words(name);
                words.iter().any(|w| READS.contains(&w.as_str())) && !writes(&words)
            }
        }
    }

    /// Whether the step calls a tool whose name has a writing word (create, update, close, run,
    /// call, …): a change, or a tool that may make one.
    pub fn may_write(&self) -> bool {
        self.tool.as_deref().is_some_and(|name| writes(&name_words(name)))
    }
}

const READS: [&str; 6] = ["list", "get", "search", "find", "describe", "read"];
const WRITES: [&str; 27] = [
    "create", "update", "add", "submit", "start", "reassign", "open", "close", "delete", "set", "assign", "call", "run", "post", "discard", "notify", "deploy",
    "rollback", "promote", "reopen", "resolve", "merge", "cancel", "remove", "send", "approve", "reject",
];

fn name_words(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_ascii_alphanumeric()).map(str::to_ascii_lowercase).collect()
}

fn writes(words: &[String]) -> bool {
    words.iter().any(|w| WRITES.contains(&w.as_str()))
}

/// A wrong id near `id`: the next number (as a number or as digits, as it came), or the text
/// with a `2` after it when it holds no number.
pub fn wrong_id(id: &Value) -> Value {
    match id {
        Value::Number(n) => n.as_i64().map_or_else(|| id.clone(), |n| Value::from(n + 1)),
        Value::String(s) => match s.parse::<u64>() {
            Ok(n) => Value::String((n + 1).to_string()),
            Err(_) => Value::String(format!("{s}2")),
        },
        other => other.clone(),
    }
}

impl OraclePlan {
    pub fn check(&self) -> Result<(), String> {
        if self.steps.is_empty() {
            return Err("an oracle plan needs at least one step".into());
        }
        let mut saved: Vec<&str> = Vec::new();
        for (i, s) in self.steps.iter().enumerate() {
            let kinds = usize::from(s.tool.is_some()) + usize::from(s.read.is_some()) + usize::from(s.list_resources);
            if kinds != 1 {
                return Err(format!("step {}: give exactly one of `tool`, `read` or `list_resources = true`", i + 1));
            }
            if s.list_resources && s.args.is_some() {
                return Err(format!("step {}: listing resources takes no `args`", i + 1));
            }
            if s.read.is_some() && s.args.is_some() {
                return Err(format!("step {}: a resource read takes no `args`", i + 1));
            }
            let text = serde_json::to_string(&s.args).unwrap_or_default() + s.read.as_deref().unwrap_or("");
            for name in placeholders(&text) {
                if !saved.contains(&name.as_str()) {
                    return Err(format!("step {}: ${{{name}}} is used before any step saves it", i + 1));
                }
            }
            saved.extend(s.save.keys().map(String::as_str));
        }
        for name in placeholders(&self.answer) {
            if !saved.contains(&name.as_str()) {
                return Err(format!("answer: ${{{name}}} is never saved"));
            }
        }
        Ok(())
    }

    /// Number of calls and reads.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// Names used as `${name}` in `text`.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        out.push(after[..end].to_owned());
        rest = &after[end + 1..];
    }
    out
}

/// `value` with every `${name}` replaced from `vars`.
pub fn substitute(value: &Value, vars: &BTreeMap<String, Value>) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) => {
            if let Some(name) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}')).filter(|n| !n.contains("${")) {
                vars.get(name).cloned().ok_or_else(|| format!("${{{name}}} has no saved value"))?
            } else {
                Value::String(interpolate(s, vars)?)
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| substitute(v, vars)).collect::<Result<_, _>>()?),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| Ok((k.clone(), substitute(v, vars)?))).collect::<Result<_, String>>()?),
        other => other.clone(),
    })
}

/// `text` with every `${name}` replaced by the saved value's text.
pub fn interpolate(text: &str, vars: &BTreeMap<String, Value>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| format!("unclosed ${{ in {text:?}"))?;
        let name = &after[..end];
        let v = vars.get(name).ok_or_else(|| format!("${{{name}}} has no saved value"))?;
        match v {
            Value::String(s) => out.push_str(s),
            other => out.push_str(&other.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_keep_types_or_interpolate() {
        let vars: BTreeMap<String, Value> = [("id".to_owned(), json!(7)), ("name".to_owned(), json!("Ana"))].into();
        assert_eq!(
            substitute(&json!({"a": "${id}", "b": "#${id} for ${name}", "c": [1, "${name}"]}), &vars).unwrap(),
            json!({"a": 7, "b": "#7 for Ana", "c": [1, "Ana"]})
        );
        assert!(substitute(&json!("${nope}"), &vars).unwrap_err().contains("nope"));
    }

    #[test]
    fn plans_are_checked_for_shape_and_order() {
        let ok: OraclePlan = toml::from_str("answer = \"#${t}\"\n[[steps]]\ntool = \"a\"\nsave = { t = \"/id\" }\n").unwrap();
        ok.check().unwrap();
        let late: OraclePlan = toml::from_str("[[steps]]\ntool = \"a\"\nargs = { x = \"${t}\" }\n").unwrap();
        assert!(late.check().unwrap_err().contains("before any step saves it"));
        let both: OraclePlan = toml::from_str("[[steps]]\ntool = \"a\"\nread = \"x://y\"\n").unwrap();
        assert!(both.check().unwrap_err().contains("exactly one"));
        assert!(toml::from_str::<OraclePlan>("[[steps]]\ntool = \"a\"\nargz = {}\n").is_err(), "unknown keys are errors");
    }
}
