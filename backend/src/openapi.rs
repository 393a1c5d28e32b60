//! The error responses every operation shares, added to the OpenAPI document in one place.
//!
//! Which errors an operation can answer follows from how it reads its input, not from the
//! handler: every handler reads ids through `ApiPath`, queries through `ApiQuery` and bodies
//! through `ApiJson` ([`crate::extract`]), and those are what answer 400, 413, 415 and 422.
//! So an operation with parameters can answer 400, one with a body also 413/415/422, and any
//! operation 414/431 (hyper refuses the request head; [`crate::conn`] makes that JSON) and 500.
//! Deriving them here keeps the document true when a handler is added, and leaves each
//! `#[utoipa::path]` to say only what is particular to it (404, 409, 412, 403).

use utoipa::openapi::path::Operation;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{Content, OpenApi, Ref, RefOr};

/// The shared responses: (status, component name, description).
const SHARED: &[(&str, &str, &str)] = &[
    (
        "400",
        "BadRequest",
        "The request could not be parsed: a query parameter that is unknown, of the wrong type or \
         out of range (`limit` 1–200, `offset` ≥ 0), a path id that is not an integer, malformed \
         JSON, or text Postgres cannot store (a NUL character, bytes that are not UTF-8). `field` \
         names the parameter or JSON path at fault.",
    ),
    ("413", "PayloadTooLarge", "The request body exceeds 256 KiB."),
    (
        "414",
        "UriTooLong",
        "The request URI is longer than the server accepts (64 KiB); send fewer or shorter \
         query parameters.",
    ),
    ("415", "UnsupportedMediaType", "The body is not sent as `Content-Type: application/json`."),
    (
        "422",
        "ValidationFailed",
        "The JSON is well-formed but a value is not acceptable: a required field is missing, a \
         field is unknown or of the wrong type, text is blank or too long, a number is out of \
         range, or an id refers to no row. `field` names it (`title`, `comments[2].line`).",
    ),
    ("431", "HeadersTooLarge", "The request headers are too large (more than 100 headers, or about 400 KiB in all)."),
    (
        "500",
        "Internal",
        "The backend failed (e.g. its database is unavailable); details are in its log, never in \
         the response.",
    ),
];

/// Adds the shared error responses to `doc`'s components and to every operation that can
/// answer them, unless the operation declares that status itself.
pub fn add_shared_responses(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    for (_, name, description) in SHARED {
        let error_body = Content::new(Some(Ref::from_schema_name("ErrorBody")));
        let response: Response = ResponseBuilder::new().description(*description).content("application/json", error_body).build();
        components.responses.insert((*name).to_owned(), RefOr::T(response));
    }
    for item in doc.paths.paths.values_mut() {
        let operations = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
        for operation in operations.into_iter().flatten() {
            let has_parameters = operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
            let has_body = operation.request_body.is_some();
            for (status, name, _) in SHARED {
                let applies = match *status {
                    "400" => has_parameters || has_body,
                    "413" | "415" | "422" => has_body,
                    _ => true,
                };
                if applies {
                    add(operation, status, name);
                }
            }
        }
    }
}

fn add(operation: &mut Operation, status: &str, component: &str) {
    operation.responses.responses.entry(status.to_owned()).or_insert_with(|| RefOr::Ref(Ref::from_response_name(component)));
}

/// The pattern of text Postgres can store: no NUL character (the extractors refuse one).
pub const NO_NUL_PATTERN: &str = "^[^\\u0000]*$";

/// The pattern of a non-blank field: no NUL, and one character outside
/// [`crate::api::BLANK_RANGES`] (what [`crate::api::check_text`] requires).
pub fn non_blank_pattern() -> String {
    let mut class = String::from("\\u0000");
    for &(lo, hi) in crate::api::BLANK_RANGES {
        class.push_str(&format!("\\u{:04X}", lo as u32));
        if hi != lo {
            class.push_str(&format!("-\\u{:04X}", hi as u32));
        }
    }
    format!("^[^\\u0000]*[^{class}][^\\u0000]*$")
}

/// Makes every parameter schema non-nullable, and gives every free-text string schema in `doc`
/// the pattern the API enforces: non-blank where
/// the field declares `minLength` ≥ 1 (every such field is checked with `check_text`), else
/// no NUL. Enumerations, formatted strings (dates) and explicit patterns are left alone. Done
/// here, once, because utoipa takes a pattern only as a literal, field by field.
pub fn add_text_patterns(doc: &mut serde_json::Value) {
    let non_blank = non_blank_pattern();
    walk(doc, &non_blank);
}

fn walk(value: &mut serde_json::Value, non_blank: &str) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            // A parameter (query, header, path) is text on the wire and can be absent but never
            // null: utoipa's `["integer", "null"]` for an `Option` parameter makes clients send
            // the string `null`.
            if map.contains_key("in")
                && let Some(Value::Array(types)) = map.get_mut("schema").and_then(|s| s.get_mut("type"))
            {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map["schema"]["type"] = only;
                }
            }
            let is_string = match map.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            let free_text = ["enum", "const", "format", "pattern"].iter().all(|k| !map.contains_key(*k));
            if is_string && free_text {
                let pattern = if map.get("minLength").and_then(Value::as_u64).unwrap_or(0) >= 1 { non_blank } else { NO_NUL_PATTERN };
                map.insert("pattern".into(), Value::String(pattern.to_owned()));
            }
            map.values_mut().for_each(|v| walk(v, non_blank));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| walk(v, non_blank)),
        _ => {}
    }
}
