//! Request extractors whose rejections are [`ApiError`]s that name the offending field.
//!
//! axum's own extractors answer with plain-text bodies; a client (or an agent reading a tool
//! error) needs to know *which* field was wrong, so these parse with `serde_path_to_error`.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Largest request body accepted, far above any legitimate write.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

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
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let value = serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|err| {
            let message = err.inner().to_string();
            if err.inner().is_syntax() || err.inner().is_eof() {
                return ApiError::BadRequest { field: None, message: format!("malformed JSON: {message}") };
            }
            match field_of(err.path(), &message) {
                Some(field) => ApiError::Invalid { field, message },
                None => ApiError::BadRequest { field: None, message },
            }
        })?;
        de.end().map_err(|e| ApiError::BadRequest { field: None, message: format!("malformed JSON: {e}") })?;
        Ok(Self(value))
    }
}

/// Query string; unknown parameters are rejected by `#[serde(deny_unknown_fields)]` on `T`.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize::<_, T>(de).map(Self).map_err(|err| {
            let message = err.inner().to_string();
            ApiError::BadRequest { field: field_of(err.path(), &message), message: format!("bad query parameter: {message}") }
        })
    }
}

/// Path parameters (ids), with a JSON error when one is not a number.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Self(p.0))
            .map_err(|e| ApiError::BadRequest { field: Some("id".into()), message: format!("bad path parameter: {}", e.body_text()) })
    }
}
