//! Request extractors whose rejections are [`ApiError`]s that name the offending field.
//!
//! axum's own extractors answer with plain-text bodies; a client (or an agent reading a tool
//! error) needs to know *which* field was wrong, so these parse with `serde_path_to_error`.
//!
//! They are also the one place where text that Postgres would refuse is stopped: a NUL
//! character (Postgres `text` cannot hold U+0000) or bytes that are not UTF-8 (a lone surrogate
//! in a JSON escape, invalid percent-encoded bytes in a query string). Every handler reads its
//! input through these, so no handler has to remember it, and the client gets a 400 naming the
//! field instead of a 500 from the database.

use std::borrow::Cow;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;

/// Largest request body accepted, far above any legitimate write.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// What a client is told to do about a NUL character.
const NUL_FIX: &str = "must not contain NUL characters (U+0000, `\\u0000` in JSON, `%00` in a query string); remove them";

/// The field named by a serde error: its path, or the name quoted in "missing field `x`".
fn field_of(path: &serde_path_to_error::Path, message: &str) -> Option<String> {
    let path = path.to_string();
    if path != "." && !path.is_empty() {
        return Some(path);
    }
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_owned())
}

/// JSON body, required to be `application/json`, parsed with field-level error messages.
///
/// Parsed in two steps: bytes → [`Value`] (syntax, surrogates: 400), then the value is checked
/// for NUL characters (400) and numbers are normalised, then [`Value`] → `T` (a missing, unknown
/// or mistyped field: 422).
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let is_json = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json"));
        if !is_json {
            return Err(ApiError::UnsupportedMediaType("request body must be JSON with `Content-Type: application/json`".into()));
        }
        let bytes = axum::body::Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge(format!("request body exceeds {MAX_BODY_BYTES} bytes"))
            } else {
                ApiError::BadRequest { field: None, message: format!("could not read body: {e}") }
            }
        })?;
        parse_json(&bytes).map(Self)
    }
}

/// The body of [`ApiJson`], from its bytes.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let mut value = Value::deserialize(&mut de).and_then(|v| de.end().map(|()| v)).map_err(|err| {
        let message = err.to_string();
        // A lone surrogate escape (`"\ud800"`) is how JSON smuggles text that is not Unicode.
        let hint = if message.contains("surrogate") || message.contains("hex escape") {
            " (text must be valid Unicode: a \\uD800–\\uDFFF escape must be one half of a pair)"
        } else {
            ""
        };
        ApiError::BadRequest { field: path_at(bytes, err.line(), err.column()), message: format!("malformed JSON: {message}{hint}") }
    })?;
    reject_nul(&value, &mut String::new())?;
    normalise_integers(&mut value);
    serde_path_to_error::deserialize::<_, T>(strict::Strict(value)).map_err(|err| {
        let message = err.inner().to_string();
        match field_of(err.path(), &message) {
            Some(field) => ApiError::Invalid { field, message },
            None => ApiError::BadRequest { field: None, message },
        }
    })
}

/// The path (`tags[1].name`) of the value being parsed at `line`:`column` (1-based, as serde_json
/// reports a syntax error) of `json`, or `None` at the top level. serde_path_to_error does not
/// track errors raised while the JSON itself is scanned, so this finds the field by a scan that
/// follows only strings, keys and containers up to that position.
fn path_at(json: &[u8], line: usize, column: usize) -> Option<String> {
    enum Frame {
        Object(Option<String>),
        Array(usize),
    }
    let line_start = if line <= 1 { 0 } else { json.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(line - 2).map_or(json.len(), |(i, _)| i + 1) };
    let end = (line_start + column.saturating_sub(1)).min(json.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut last_string: Option<String> = None;
    let mut i = 0;
    while i < end {
        match json[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < json.len() && json[i] != b'"' {
                    i += if json[i] == b'\\' { 2 } else { 1 };
                }
                if i >= end {
                    break; // the error is inside this string
                }
                last_string = Some(String::from_utf8_lossy(&json[start..i.min(json.len())]).into_owned());
            }
            b'{' => stack.push(Frame::Object(None)),
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b':' => {
                if let Some(Frame::Object(key)) = stack.last_mut() {
                    *key = last_string.take();
                }
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array(index)) => *index += 1,
                Some(Frame::Object(key)) => *key = None,
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object(Some(key)) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Object(None) => break,
            Frame::Array(index) => path.push_str(&format!("[{index}]")),
        }
    }
    (!path.is_empty()).then_some(path)
}

/// Fails with a 400 naming the first string (or key) at or under `value` that holds a NUL.
fn reject_nul(value: &Value, path: &mut String) -> Result<(), ApiError> {
    match value {
        Value::String(s) if s.contains('\0') => Err(ApiError::BadRequest { field: Some(display_path(path)), message: NUL_FIX.into() }),
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, item)| {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            let result = reject_nul(item, path);
            path.truncate(len);
            result
        }),
        Value::Object(map) => map.iter().try_for_each(|(key, item)| {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&key.replace('\0', "\\u0000"));
            let result = if key.contains('\0') {
                Err(ApiError::BadRequest { field: Some(display_path(path)), message: format!("field name {NUL_FIX}") })
            } else {
                reject_nul(item, path)
            };
            path.truncate(len);
            result
        }),
        _ => Ok(()),
    }
}

fn display_path(path: &str) -> String {
    if path.is_empty() { "(body)".to_owned() } else { path.to_owned() }
}

/// `3.0` → `3`. JSON Schema counts a number with no fractional part as an integer, so a client
/// generating from the OpenAPI document may send `3.0` for an integer field; serde would refuse
/// it. No request field is a float, so nothing that was meant as a float is changed.
fn normalise_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            let Some(x) = n.as_f64() else { return };
            // 2^63 and 2^64 are exact in f64; the bounds keep `as` casts exact.
            if x.fract() == 0.0 && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
                *value = Value::from(x as i64);
            } else if x.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&x) {
                *value = Value::from(x as u64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalise_integers),
        Value::Object(map) => map.values_mut().for_each(normalise_integers),
        _ => {}
    }
}

mod strict {
    //! serde's derived `Deserialize` for a struct also accepts a JSON *array* of its fields in
    //! declaration order (`[null, null]` is a `ResetRequest`), which no schema of this API
    //! allows and no client means. [`Strict`] is [`Value`]'s deserializer except that a struct
    //! must be a JSON object, at any depth.

    use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Unexpected, Visitor};
    use serde_json::{Map, Value};

    pub struct Strict(pub Value);

    struct Seq(std::vec::IntoIter<Value>);
    struct Fields(serde_json::map::IntoIter, Option<Value>);

    impl<'de> SeqAccess<'de> for Seq {
        type Error = serde_json::Error;
        fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>, Self::Error> {
            self.0.next().map(|v| seed.deserialize(Strict(v))).transpose()
        }
        fn size_hint(&self) -> Option<usize> {
            Some(self.0.len())
        }
    }

    impl<'de> MapAccess<'de> for Fields {
        type Error = serde_json::Error;
        fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
            match self.0.next() {
                Some((k, v)) => {
                    self.1 = Some(v);
                    seed.deserialize(k.into_deserializer()).map(Some)
                }
                None => Ok(None),
            }
        }
        fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
            seed.deserialize(Strict(self.1.take().unwrap_or(Value::Null)))
        }
    }

    fn object<'de, V: Visitor<'de>>(map: Map<String, Value>, visitor: V) -> Result<V::Value, serde_json::Error> {
        visitor.visit_map(Fields(map.into_iter(), None))
    }

    impl<'de> Deserializer<'de> for Strict {
        type Error = serde_json::Error;

        fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            match self.0 {
                Value::Array(items) => visitor.visit_seq(Seq(items.into_iter())),
                Value::Object(map) => object(map, visitor),
                other => other.deserialize_any(visitor),
            }
        }

        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            match self.0 {
                Value::Null => visitor.visit_none(),
                other => visitor.visit_some(Strict(other)),
            }
        }

        fn deserialize_struct<V: Visitor<'de>>(self, _: &'static str, _: &'static [&'static str], visitor: V) -> Result<V::Value, Self::Error> {
            match self.0 {
                Value::Object(map) => object(map, visitor),
                Value::Array(_) => Err(de::Error::invalid_type(Unexpected::Seq, &"a JSON object")),
                other => other.deserialize_any(visitor),
            }
        }

        fn deserialize_enum<V: Visitor<'de>>(self, name: &'static str, variants: &'static [&'static str], visitor: V) -> Result<V::Value, Self::Error> {
            self.0.deserialize_enum(name, variants, visitor)
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Self::Error> {
            visitor.visit_newtype_struct(self)
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier ignored_any
        }
    }
}

/// Query string; unknown parameters are rejected by `#[serde(deny_unknown_fields)]` on `T`.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parse_query(parts.uri.query().unwrap_or("")).map(Self)
    }
}

/// The query string `raw` as `T`.
pub fn parse_query<T: DeserializeOwned>(raw: &str) -> Result<T, ApiError> {
    let pairs = decode_query(raw)?;
    // The pairs are now known to be NUL-free UTF-8, so re-encoding them is lossless, and
    // serde_urlencoded (which decodes invalid UTF-8 lossily) sees only clean text.
    let clean = form_urlencoded::Serializer::new(String::new()).extend_pairs(&pairs).finish();
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(clean.as_bytes()));
    serde_path_to_error::deserialize::<_, T>(de).map_err(|err| {
        let message = err.inner().to_string();
        ApiError::BadRequest { field: field_of(err.path(), &message), message: format!("bad query parameter: {message}") }
    })
}

/// Splits and percent-decodes a query string, refusing names or values that are not UTF-8 or
/// hold a NUL, with the parameter's name as the field.
fn decode_query(raw: &str) -> Result<Vec<(String, String)>, ApiError> {
    let mut pairs = Vec::new();
    for pair in raw.split('&').filter(|p| !p.is_empty()) {
        let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode_component(raw_key).map_err(|()| ApiError::BadRequest {
            field: Some(String::from_utf8_lossy(&percent_encoding::percent_decode_str(raw_key).collect::<Vec<u8>>()).into_owned()),
            message: "query parameter name is not valid UTF-8 after percent-decoding".into(),
        })?;
        if key.contains('\0') {
            return Err(ApiError::BadRequest { field: Some(key.replace('\0', "%00")), message: format!("query parameter name {NUL_FIX}") });
        }
        let value = decode_component(raw_value).map_err(|()| ApiError::BadRequest {
            field: Some(key.clone()),
            message: "is not valid UTF-8 after percent-decoding (e.g. an encoded lone surrogate); send UTF-8 text".into(),
        })?;
        if value.contains('\0') {
            return Err(ApiError::BadRequest { field: Some(key), message: NUL_FIX.into() });
        }
        pairs.push((key, value));
    }
    Ok(pairs)
}

/// One `application/x-www-form-urlencoded` component: `+` is a space, `%XX` a byte.
fn decode_component(s: &str) -> Result<String, ()> {
    let spaced: Cow<str> = if s.contains('+') { Cow::Owned(s.replace('+', " ")) } else { Cow::Borrowed(s) };
    percent_encoding::percent_decode_str(&spaced).decode_utf8().map(Cow::into_owned).map_err(|_| ())
}

/// Path parameters (ids), with a JSON error when one is not a number.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state).await.map(|p| Self(p.0)).map_err(|e| ApiError::BadRequest {
            field: Some("id".into()),
            message: format!("bad path parameter: {}; ids are integers from 1 to 9223372036854775807", e.body_text()),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        title: String,
        #[serde(default)]
        line: Option<i32>,
        #[serde(default)]
        tags: Vec<Tag>,
    }

    #[derive(Debug, Deserialize)]
    struct Tag {
        #[allow(dead_code)]
        name: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Query {
        q: Option<String>,
        limit: Option<i64>,
    }

    fn bad(err: ApiError) -> (u16, Option<String>, String) {
        let status = err.status_code().as_u16();
        match err {
            ApiError::BadRequest { field, message } => (status, field, message),
            ApiError::Invalid { field, message } => (status, Some(field), message),
            other => (status, None, other.to_string()),
        }
    }

    #[test]
    fn nul_in_a_json_string_is_a_400_naming_its_path() {
        let (status, field, message) = bad(parse_json::<Body>(br#"{"title": "a\u0000b"}"#).unwrap_err());
        assert_eq!((status, field.as_deref()), (400, Some("title")));
        assert!(message.contains("NUL"), "{message}");
        let (status, field, _) = bad(parse_json::<Body>(br#"{"title": "t", "tags": [{"name": "x"}, {"name": "\u0000"}]}"#).unwrap_err());
        assert_eq!((status, field.as_deref()), (400, Some("tags[1].name")));
    }

    #[test]
    fn a_lone_surrogate_is_a_400_naming_its_field() {
        let (status, field, message) = bad(parse_json::<Body>(br#"{"title": "\ud800"}"#).unwrap_err());
        assert_eq!((status, field.as_deref()), (400, Some("title")), "{message}");
        assert!(message.contains("valid Unicode"), "{message}");
        let (_, field, _) = bad(parse_json::<Body>(b"{\"title\": \"t\",\n \"tags\": [{\"name\": \"x\"}, {\"name\": \"\\udc00\"}]}").unwrap_err());
        assert_eq!(field.as_deref(), Some("tags[1].name"));
        let (status, field, _) = bad(parse_json::<Body>(b"{\"title\": ").unwrap_err());
        assert_eq!((status, field.as_deref()), (400, Some("title")));
        let (_, field, _) = bad(parse_json::<Body>(b"\x00").unwrap_err());
        assert_eq!(field, None);
    }

    #[test]
    fn integral_floats_fill_integer_fields_and_fractions_do_not() {
        let body: Body = parse_json(br#"{"title": "t", "line": 7.0}"#).unwrap();
        assert_eq!(body.line, Some(7));
        let (status, field, _) = bad(parse_json::<Body>(br#"{"title": "t", "line": 7.5}"#).unwrap_err());
        assert_eq!((status, field.as_deref()), (422, Some("line")));
    }

    #[test]
    fn a_struct_is_an_object_never_an_array_of_its_fields() {
        let (status, field, message) = bad(parse_json::<Body>(br#"["t", 1, []]"#).unwrap_err());
        assert_eq!((status, field), (400, None), "{message}");
        let (status, field, _) = bad(parse_json::<Body>(br#"{"title": "t", "tags": [["x"]]}"#).unwrap_err());
        assert_eq!((status, field.as_deref()), (422, Some("tags[0]")));
        let body: Body = parse_json(br#"{"title": "t", "line": null, "tags": [{"name": "x"}]}"#).unwrap();
        assert_eq!((body.title.as_str(), body.line, body.tags.len()), ("t", None, 1));
    }

    #[test]
    fn type_and_unknown_field_errors_stay_422_with_their_field() {
        let (status, field, _) = bad(parse_json::<Body>(br#"{"title": 5}"#).unwrap_err());
        assert_eq!((status, field.as_deref()), (422, Some("title")));
        let (status, field, _) = bad(parse_json::<Body>(br#"{"title": "t", "colour": 1}"#).unwrap_err());
        assert_eq!((status, field.as_deref()), (422, Some("colour")));
        let (status, field, _) = bad(parse_json::<Body>(br#"{}"#).unwrap_err());
        assert_eq!((status, field.as_deref()), (422, Some("title")));
    }

    #[test]
    fn query_text_that_postgres_rejects_is_a_400_naming_the_parameter() {
        let (status, field, message) = bad(parse_query::<Query>("q=a%00b").unwrap_err());
        assert_eq!((status, field.as_deref()), (400, Some("q")));
        assert!(message.contains("%00"), "{message}");
        // An encoded lone surrogate (CESU-8 U+D800) and a bare continuation byte.
        for raw in ["q=%ED%A0%80", "q=%80"] {
            let (status, field, message) = bad(parse_query::<Query>(raw).unwrap_err());
            assert_eq!((status, field.as_deref()), (400, Some("q")), "{raw}");
            assert!(message.contains("UTF-8"), "{message}");
        }
    }

    #[test]
    fn clean_queries_decode_as_before() {
        let q: Query = parse_query("q=caf%C3%A9+au+lait&limit=5").unwrap();
        assert_eq!((q.q.as_deref(), q.limit), (Some("café au lait"), Some(5)));
        let q: Query = parse_query("q=%25%26%3D%2B").unwrap();
        assert_eq!(q.q.as_deref(), Some("%&=+"));
        let (status, field, _) = bad(parse_query::<Query>("colour=red").unwrap_err());
        assert_eq!((status, field.as_deref()), (400, Some("colour")));
    }
}
