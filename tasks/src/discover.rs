//! Discoverability: every literal value an oracle plan passes must be learnable from what the arm
//! shows a model before that step — the task text, the functions the model is offered (names,
//! descriptions, parameter schemas with their enums), or an earlier step's result. A plan that
//! uses a constant from nowhere proves only that the task is solvable by someone who already knows
//! the answer; the floor it sets is lower than any model could reach. G7 runs this for every task
//! and arm after the plan's replay.
//!
//! What counts as a literal:
//! * a number: an id, a line, a count. Paging knobs (`limit`, `offset`, `page`, …) are the
//!   model's own choice and are not checked;
//! * a string that is one token ("resolved", "checkout-web", a URI): it must appear as written;
//! * prose (a message, a comment, a script): the numbers in it, and what it quotes, must appear —
//!   the words around them are the model's own;
//! * a resource address: it must appear whole, or every fixed part of its template must (a
//!   description that says "runbooks are at `runbooks://service/<name>`").
//!
//! Values a step takes from an earlier result (`${name}`) are learnable by construction.
//! Matching ignores case; a number must stand as a number (`77` is not in `1770`).

use serde_json::Value;

use crate::oracle::{OraclePlan, placeholders};
use crate::replay::ReplayReport;

/// Parameters whose numbers the model picks itself.
const KNOBS: &[&str] = &["limit", "offset", "page", "per_page", "page_size", "max_results", "top", "top_k", "k", "size", "catalogue", "max"];

/// What a model can know before each step: the fixed part (task text, offered definitions) and
/// the results that came before.
pub struct Shown<'a> {
    pub task_text: &'a str,
    /// The functions the model is offered, as it sees them (JSON of names, descriptions and
    /// parameter schemas).
    pub definitions: &'a str,
}

/// One value a plan passes that nothing before its step shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undiscoverable {
    /// 1-based.
    pub step: usize,
    /// The tool or the resource address.
    pub name: String,
    pub value: String,
}

impl std::fmt::Display for Undiscoverable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "step {} ({}) uses {}, which neither the task text, the offered functions nor an earlier result shows", self.step, self.name, self.value)
    }
}

/// Every literal of `plan` that nothing shown before its step holds, given what was shown and
/// the replay's results (call `i` of `report` is step `i + 1` of `plan`).
pub fn undiscoverable(plan: &OraclePlan, shown: &Shown<'_>, report: &ReplayReport) -> Vec<Undiscoverable> {
    let mut known = normalised(&format!("{}\n{}", shown.task_text, shown.definitions));
    let mut out = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        let name = report.calls.get(i).map_or_else(|| step.tool.clone().unwrap_or_default(), |c| c.name.clone());
        let mut missing = Vec::new();
        if let Some(args) = &step.args {
            let value = serde_json::to_value(args).unwrap_or(Value::Null);
            literals(&value, None, &mut |key, v| missing.extend(unlearnable(v, key, &known)));
        }
        if let Some(uri) = &step.read {
            let resolved = report.calls.get(i).map(|c| c.name.to_lowercase()).unwrap_or_default();
            let whole = !resolved.is_empty() && known.contains(&resolved);
            if !(whole || templates(&known).iter().any(|t| t.fills(&resolved, &known))) {
                missing.push(format!("the address {uri:?}"));
            }
        }
        out.extend(missing.into_iter().map(|value| Undiscoverable { step: i + 1, name: name.clone(), value }));
        if let Some(call) = report.calls.get(i) {
            known.push('\n');
            known.push_str(&normalised(&call.result));
        }
    }
    out
}

/// Calls `f(key, value)` for every leaf of `value` that is a literal: not a placeholder, not a
/// boolean or null, not a paging knob. `key` is the nearest object key above the leaf.
fn literals(value: &Value, key: Option<&str>, f: &mut impl FnMut(Option<&str>, &Value)) {
    match value {
        Value::Object(m) => m.iter().for_each(|(k, v)| literals(v, Some(k), f)),
        Value::Array(a) => a.iter().for_each(|v| literals(v, key, f)),
        Value::Number(_) if key.is_some_and(|k| KNOBS.contains(&k.to_ascii_lowercase().as_str())) => {}
        Value::Number(_) | Value::String(_) => f(key, value),
        Value::Bool(_) | Value::Null => {}
    }
}

/// What of `v` (a number or a string of a plan) cannot be read off `known` (lower case), as the
/// report names it; empty when all of it can.
fn unlearnable(v: &Value, key: Option<&str>, known: &str) -> Vec<String> {
    // A parameter whose name gives its unit in hundredths (`amount_cents`) takes a shown amount
    // times 100: "1,200 dollars" is 120000.
    let in_cents = key.is_some_and(|k| k.to_ascii_lowercase().ends_with("_cents"));
    match v {
        Value::Number(n) if has_number(known, &n.to_string()) => vec![],
        Value::Number(n) if in_cents && n.as_u64().is_some_and(|c| c % 100 == 0 && has_number(known, &(c / 100).to_string())) => vec![],
        Value::Number(n) => vec![n.to_string()],
        Value::String(s) => {
            let s = strip_placeholders(s);
            let t = s.trim();
            let lower = t.to_lowercase();
            if t.is_empty() || known.contains(&lower) {
                return vec![];
            }
            if !t.contains(char::is_whitespace) {
                // An id written with a sign of its kind ("#87") is its number.
                let bare = t.trim_start_matches('#');
                if !bare.is_empty() && bare.bytes().all(|b| b.is_ascii_digit()) && has_number(known, bare) {
                    return vec![];
                }
                return vec![format!("{t:?}")];
            }
            // Prose or a script: the numbers it gives and what it quotes.
            let mut out: Vec<String> = prose_numbers(t).into_iter().filter(|n| !has_number(known, n)).map(|n| format!("{n} (in {})", excerpt(t))).collect();
            out.extend(quoted(t).into_iter().filter(|q| !known.contains(&q.to_lowercase())).map(|q| format!("{q:?} (in {})", excerpt(t))));
            out
        }
        _ => vec![],
    }
}

/// The first words of a long value, to name it by.
fn excerpt(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().take(6).collect();
    format!("{:?}", if words.len() < text.split_whitespace().count() { format!("{} …", words.join(" ")) } else { words.join(" ") })
}

/// The numbers prose gives that a model must have learnt: not a single digit (a count, an index,
/// a loop's start), not a paging knob's value (`limit: 200`).
fn prose_numbers(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    let mut at = 0;
    for part in lower.split(|c: char| !c.is_ascii_digit()) {
        let start = lower[at..].find(part).map_or(at, |i| at + i);
        at = start + part.len();
        if part.len() < 2 || (start > 0 && lower[..start].ends_with('.')) {
            continue;
        }
        let before: String = lower[..start].chars().rev().take(14).collect::<Vec<_>>().into_iter().rev().collect();
        let knob = KNOBS.iter().any(|k| {
            let b = before.trim_end_matches([' ', ':', '=', '(']);
            b.ends_with(k) && !b[..b.len() - k.len()].ends_with(|c: char| c.is_alphanumeric() || c == '_')
        });
        if !knob {
            out.push(part.to_owned());
        }
    }
    out
}

/// `text` with every `${name}` taken out (a value an earlier result gave).
fn strip_placeholders(text: &str) -> String {
    let mut out = text.to_owned();
    for name in placeholders(text) {
        out = out.replace(&format!("${{{name}}}"), " ");
    }
    out
}

/// An address form shown to the model (`runbooks://service/{service}`): what comes before and
/// after its one variable.
#[derive(Debug, PartialEq)]
struct Template {
    prefix: String,
    suffix: String,
}

impl Template {
    /// Whether `uri` is this form with a value filled in that `known` shows.
    fn fills(&self, uri: &str, known: &str) -> bool {
        uri.len() > self.prefix.len() + self.suffix.len()
            && uri.starts_with(&self.prefix)
            && uri.ends_with(&self.suffix)
            && known.contains(&uri[self.prefix.len()..uri.len() - self.suffix.len()])
    }
}

/// The address forms `known` shows: URI-like words (`scheme://…`) with one `{variable}`.
fn templates(known: &str) -> Vec<Template> {
    let mut out = Vec::new();
    for (at, _) in known.match_indices("://") {
        let start = known[..at].rfind(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c))).map_or(0, |i| i + 1);
        let end = known[at..].find(|c: char| c.is_whitespace() || "\"'`,;()<>".contains(c)).map_or(known.len(), |i| at + i);
        let word = &known[start..end];
        if let (Some(open), Some(close)) = (word.find('{'), word.find('}'))
            && open < close
            && word[close + 1..].find('{').is_none()
        {
            let t = Template { prefix: word[..open].to_owned(), suffix: word[close + 1..].trim_end_matches(['.', ':']).to_owned() };
            if !t.prefix.is_empty() && !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// What `text` quotes that names something (between double quotes or backticks; single quotes are
/// apostrophes as often as not): at most three words of letters, digits and `-_:./@#`. A longer
/// quote, or one with other punctuation, is text the model writes itself (a message, a title).
fn quoted(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for mark in ['"', '`'] {
        let parts: Vec<&str> = text.split(mark).collect();
        for (i, p) in parts.iter().enumerate() {
            let p = p.trim();
            let names =
                !p.is_empty() && p.split_whitespace().count() <= 3 && p.chars().all(|c| c.is_alphanumeric() || c.is_whitespace() || "-_:./@#".contains(c));
            if i % 2 == 1 && i + 1 < parts.len() && names {
                out.push(p.to_owned());
            }
        }
    }
    out
}

/// Lower case, with thousands separators taken out of numbers ("1,200" reads as 1200).
fn normalised(text: &str) -> String {
    let lower = text.to_lowercase();
    let chars: Vec<char> = lower.chars().collect();
    let mut out = String::with_capacity(lower.len());
    for (i, &c) in chars.iter().enumerate() {
        let between_digits = i > 0 && chars[i - 1].is_ascii_digit() && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        let group_of_three = chars.get(i + 1..i + 4).is_some_and(|g| g.iter().all(char::is_ascii_digit)) && !chars.get(i + 4).is_some_and(char::is_ascii_digit);
        if c == ',' && between_digits && group_of_three {
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether `number` stands in `known` as a number (not inside a longer one, nor as a decimal's
/// part).
fn has_number(known: &str, number: &str) -> bool {
    known.match_indices(number).any(|(at, _)| {
        let before = known[..at].chars().next_back();
        let after = known[at + number.len()..].chars().next();
        let digitish = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
        !digitish(before) && !digitish(after)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{CallKind, CallRecord};

    fn call(name: &str, result: &str) -> CallRecord {
        CallRecord {
            kind: CallKind::Tool,
            name: name.into(),
            arguments: Value::Null,
            args_bytes: 0,
            result_bytes: result.len(),
            result: result.into(),
            is_error: false,
            latency_ms: 0.0,
            at_ms: 0.0,
        }
    }

    fn plan(text: &str) -> OraclePlan {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_value_from_nowhere_is_named_and_one_from_before_is_not() {
        let p = plan(
            r#"
            [[steps]]
            tool = "users_list"
            args = { team = "mobile", limit = 50 }
            save = { u = "/0/id" }
            [[steps]]
            tool = "tickets_update"
            args = { id = 77, assignee_id = "${u}", status = "resolved", note = "Moved: see \"Login fails\" (ticket 4711)" }
            [[steps]]
            read = "runbooks://service/${name}"
            "#,
        );
        let report = ReplayReport {
            calls: vec![call("users_list", r#"[{"id": 12, "name": "Ana"}]"#), call("tickets_update", "{}"), call("runbooks://service/cart", "steps")],
            answer: String::new(),
        };
        let shown = Shown { task_text: "Give ticket 77 to the mobile engineer.", definitions: r#"{"status": {"enum": ["open", "resolved"]}}"# };
        let found: Vec<String> = undiscoverable(&p, &shown, &report).iter().map(|u| format!("{}:{}", u.step, u.value)).collect();
        // 77 is in the task, "resolved" in an enum, mobile in the task, 50 a knob; the quote and
        // 4711 in the note, and the runbook address, come from nowhere.
        assert_eq!(
            found,
            [
                "2:4711 (in \"Moved: see \\\"Login fails\\\" (ticket 4711)\")",
                "2:\"Login fails\" (in \"Moved: see \\\"Login fails\\\" (ticket 4711)\")",
                "3:the address \"runbooks://service/${name}\""
            ]
        );
        // A description that shows the address pattern, and a result that shows the quote, make
        // both learnable.
        let shown = Shown { definitions: "status: open | resolved. Runbooks live at runbooks://service/{name}.", ..shown };
        let report = ReplayReport {
            calls: vec![
                call("users_list", r#"[{"id": 12, "title": "Login fails", "ref": 4711, "service": "cart"}]"#),
                report.calls[1].clone(),
                report.calls[2].clone(),
            ],
            ..report
        };
        assert_eq!(undiscoverable(&p, &shown, &report), []);
    }

    #[test]
    fn amounts_in_cents_and_thousands_separators_read_as_shown() {
        let p = plan("[[steps]]\ntool = \"create_invoice\"\nargs = { amount_cents = 120000, customer = \"Globex\" }\n");
        let report = ReplayReport { calls: vec![call("create_invoice", "{}")], answer: String::new() };
        let shown = Shown { task_text: "Invoice Globex for 1,200 dollars.", definitions: "" };
        assert_eq!(undiscoverable(&p, &shown, &report), []);
        let p = plan("[[steps]]\ntool = \"create_invoice\"\nargs = { amount = 120000 }\n");
        assert_eq!(undiscoverable(&p, &shown, &report).len(), 1, "only a parameter named in cents takes the amount × 100");
    }

    #[test]
    fn a_number_must_stand_as_a_number() {
        assert!(has_number("ticket 77.", "77"));
        assert!(!has_number("ticket 1770", "77"));
        assert!(!has_number("ticket 770", "77"));
    }
}
