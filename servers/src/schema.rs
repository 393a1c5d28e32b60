//! Tool input schemas any client can fill: an optional parameter is its plain type.
//!
//! schemars writes an `Option<i64>` field as `"type": ["integer", "null"]` and an `Option` of an
//! enum or struct as `"anyOf": [{"$ref": …}, {"type": "null"}]`. Some real clients only handle
//! one type per parameter: the MCP Inspector CLI converts `limit=3` to a number only when the
//! type is exactly `"integer"`, so it sent the string `"3"` and no optional numeric filter could
//! be set from it; OpenAI-style function schemas fare no better with `anyOf`. For a parameter a
//! client may leave out, `null` adds nothing — the servers read an explicit `null` as absent — so
//! it is dropped: the property keeps its plain type and stays out of `required`.
//!
//! The exception is a field where `null` does add something: an update's field that `null`
//! clears (a ticket's assignee). Such a field says so with `extend("x-null-clears" = true)`
//! on its schemars attribute; [`plain_optionals`] keeps its `null` and removes the marker, so
//! the listed schema is standard JSON Schema, and the field's description must say what `null`
//! does (the registry test checks that every `null` a listed schema admits is explained).
//!
//! Every server builds its tool router through [`plain_tools`] (the registry test checks that
//! no registered server lists a nullable optional parameter), and the proxy aggregator applies
//! [`plain_optionals`] to the operation schemas it shows.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use serde_json::{Map, Value};

/// The schema key that marks a field whose `null` clears it (consumed by [`plain_optionals`]).
pub const NULL_CLEARS: &str = "x-null-clears";

/// `router` with [`plain_optionals`] applied to every tool's input schema.
pub fn plain_tools<S>(mut router: ToolRouter<S>) -> ToolRouter<S> {
    for route in router.map.values_mut() {
        let mut schema = (*route.attr.input_schema).clone();
        plain_optionals(&mut schema);
        route.attr.input_schema = Arc::new(schema);
    }
    router
}

/// Rewrites, at every depth of `schema`, each property that is not `required` so that it no
/// longer admits `null`.
pub fn plain_optionals(schema: &mut Map<String, Value>) {
    let required: Vec<String> = match schema.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            let Value::Object(p) = property else { continue };
            if required.contains(name) {
                continue;
            }
            if p.remove(NULL_CLEARS).is_some() {
                // Absent leaves the value as it is; null is a value here (it clears), not the
                // default.
                if p.get("default").is_some_and(Value::is_null) {
                    p.remove("default");
                }
            } else {
                drop_null(p);
            }
        }
    }
    for value in schema.values_mut() {
        descend(value);
    }
}

fn descend(value: &mut Value) {
    match value {
        Value::Object(map) => plain_optionals(map),
        Value::Array(items) => items.iter_mut().for_each(descend),
        _ => {}
    }
}

fn is_null_schema(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.len() == 1 && m.get("type").is_some_and(|t| t == "null"))
}

/// `property` without `null` among the values it admits.
fn drop_null(property: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = property.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            property.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = property.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alternatives)) = property.get_mut(key) else { continue };
        alternatives.retain(|a| !is_null_schema(a));
        if alternatives.len() == 1 {
            // `{"anyOf": [X]}` is X: its keys join the property's own (description, default).
            let Some(Value::Object(only)) = alternatives.pop() else { continue };
            property.remove(key);
            for (k, v) in only {
                property.entry(k).or_insert(v);
            }
        }
    }
    if property.get("default").is_some_and(Value::is_null) {
        property.remove("default");
    }
}

/// Whether any property at any depth of `schema` still admits `null` without its description
/// saying what `null` does (for tests and checks).
pub fn admits_null_anywhere(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => {
            let here = m.get("type").is_some_and(|t| t == "null" || t.as_array().is_some_and(|ts| ts.iter().any(|t| t == "null")))
                || m.get("enum").and_then(Value::as_array).is_some_and(|vs| vs.iter().any(Value::is_null));
            let explained = m.get("description").and_then(Value::as_str).is_some_and(|d| d.contains("null"));
            (here && !explained) || m.values().any(admits_null_anywhere)
        }
        Value::Array(items) => items.iter().any(admits_null_anywhere),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn optional_scalars_refs_and_enums_lose_null_required_ones_keep_it() {
        let mut schema = json!({
            "type": "object",
            "required": ["id", "maybe"],
            "properties": {
                "id": {"type": "integer"},
                "maybe": {"type": ["string", "null"]},
                "limit": {"type": ["integer", "null"], "format": "int64", "description": "Page size."},
                "on_call": {"type": ["boolean", "null"], "default": null},
                "status": {"anyOf": [{"$ref": "#/$defs/Status"}, {"type": "null"}], "description": "Status."},
                "colour": {"type": ["string", "null"], "enum": ["red", "blue", null]},
                "nested": {"type": "object", "properties": {"deep": {"type": ["number", "null"]}}},
                "assignee_id": {"type": ["integer", "null"], "description": "A user id, or null to unassign.", "x-null-clears": true},
                "customer_id": {"type": ["integer", "null"], "default": null, "description": "A customer id, or null to detach.", "x-null-clears": true}
            },
            "$defs": {"Item": {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}}
        });
        plain_optionals(schema.as_object_mut().unwrap());
        let p = &schema["properties"];
        assert_eq!(p["limit"], json!({"type": "integer", "format": "int64", "description": "Page size."}));
        assert_eq!(p["on_call"], json!({"type": "boolean"}));
        assert_eq!(p["status"], json!({"$ref": "#/$defs/Status", "description": "Status."}));
        assert_eq!(p["colour"], json!({"type": "string", "enum": ["red", "blue"]}));
        assert_eq!(p["nested"]["properties"]["deep"], json!({"type": "number"}));
        assert_eq!(schema["$defs"]["Item"]["properties"]["n"], json!({"type": "integer"}));
        // A required property that admits null means it: left alone.
        assert_eq!(p["maybe"], json!({"type": ["string", "null"]}));
        assert_eq!(p["id"], json!({"type": "integer"}));
        assert_eq!(p["assignee_id"], json!({"type": ["integer", "null"], "description": "A user id, or null to unassign."}));
        // Null clears, so it is not the default (absent leaves the value as it is).
        assert_eq!(p["customer_id"], json!({"type": ["integer", "null"], "description": "A customer id, or null to detach."}));
        assert!(admits_null_anywhere(&schema));
        schema["properties"]["maybe"] = json!({"type": "string"});
        assert!(!admits_null_anywhere(&schema));
    }
}
