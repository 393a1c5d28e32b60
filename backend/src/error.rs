//! The one error type of the HTTP API: every failure becomes a JSON body that names the problem.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Machine-readable error kind, e.g. `validation_failed`, `not_found`.
    pub error: &'static str,
    /// The request field at fault (`title`, `comments[2].line`, `limit`), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What went wrong, in words a client can act on.
    pub message: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request could not be parsed at all (bad JSON syntax, bad query string, bad path).
    #[error("{message}")]
    BadRequest { field: Option<String>, message: String },
    /// Parsed, but a value is unacceptable (missing, wrong type, too long, unknown reference).
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("{0}")]
    NotFound(String),
    /// The write conflicts with the current state (duplicate, invalid transition).
    #[error("{0}")]
    Conflict(String),
    /// An `If-Match` precondition did not hold.
    #[error("{0}")]
    PreconditionFailed(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    /// Anything the client cannot fix. Details are logged, never sent.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid { field: field.into(), message: message.into() }
    }

    pub fn not_found(what: &str, id: i64) -> Self {
        Self::NotFound(format!("no {what} with id {id}"))
    }

    pub fn status_code(&self) -> StatusCode {
        match self {
            Self::BadRequest { .. } => StatusCode::BAD_REQUEST,
            Self::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Self::BadRequest { .. } => "bad_request",
            Self::Invalid { .. } => "validation_failed",
            Self::NotFound(_) => "not_found",
            Self::Conflict(_) => "conflict",
            Self::PreconditionFailed(_) => "precondition_failed",
            Self::UnsupportedMediaType(_) => "unsupported_media_type",
            Self::PayloadTooLarge(_) => "payload_too_large",
            Self::Forbidden(_) => "forbidden",
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::Internal(_) => "internal",
        }
    }

    fn body(&self) -> ErrorBody {
        let (field, message) = match self {
            Self::BadRequest { field, message } => (field.clone(), message.clone()),
            Self::Invalid { field, message } => (Some(field.clone()), message.clone()),
            Self::Internal(_) => (None, "internal error; see the backend log".to_owned()),
            other => (None, other.to_string()),
        };
        ErrorBody { error: self.kind(), field, message }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Self::Internal(detail) = &self {
            tracing::error!(%detail, "internal error");
        }
        (self.status_code(), Json(self.body())).into_response()
    }
}

impl From<sqlx::Error> for ApiError {
    /// Constraint violations are the client's doing (409/422); everything else is ours (500).
    /// Handlers check references up front and name the field; this is the safety net for races.
    fn from(err: sqlx::Error) -> Self {
        if let sqlx::Error::Database(db) = &err {
            let constraint = db.constraint().unwrap_or("unknown constraint").to_owned();
            match db.kind() {
                sqlx::error::ErrorKind::UniqueViolation => {
                    return Self::Conflict(format!("duplicate value violates {constraint}"));
                }
                sqlx::error::ErrorKind::ForeignKeyViolation => {
                    return Self::invalid(constraint, "refers to a row that does not exist");
                }
                sqlx::error::ErrorKind::CheckViolation | sqlx::error::ErrorKind::NotNullViolation => {
                    return Self::invalid(constraint, "value is not allowed");
                }
                _ => {}
            }
        }
        Self::Internal(err.to_string())
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
