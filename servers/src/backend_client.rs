//! The HTTP client every server uses to reach the backend. Servers never touch Postgres.
//!
//! Every outcome maps onto what the model should see: a 2xx body is the tool's result; a 4xx
//! is a tool error carrying the backend's own message (the model can fix its input); an
//! unreachable or timed-out backend is a tool error that says so, after a bounded wait.

use std::time::Duration;

use reqwest::Method;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::Value;

/// Base URL of the backend when none is given.
pub const DEFAULT_BACKEND_URL: &str = "http://127.0.0.1:8080";
/// Upper bound on one backend request, connection included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct BackendClient {
    /// The HTTP client, or why none could be built (every call then fails with that reason).
    http: Result<reqwest::Client, String>,
    base: String,
    settings: crate::launch::ArmSettings,
}

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The backend answered with an error status; `body` is its JSON error (or text).
    #[error("backend answered {status}: {message}")]
    Status { status: u16, message: String, body: Value },
    #[error("the backend at {url} could not be reached: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the backend sent a response that is not JSON: {0}")]
    NotJson(String),
}

impl CallError {
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

impl BackendClient {
    /// A client for the backend at `base`.
    ///
    /// A plain `http://` backend (the bench's own, on loopback or a container network) never
    /// needs TLS, so its client trusts no certificate authority and never reads the system's
    /// store: reading it cost every server start ≈ 6 ms (dev build; 4 × in `proxy_aggregator`,
    /// which holds a client per backend), and a slim container without CA certificates made
    /// building the client fail, which took the server down. An `https://` backend gets the
    /// platform's verifier; when that cannot be built, every call says why.
    pub fn new(base: impl Into<String>) -> Self {
        let base = base.into().trim_end_matches('/').to_owned();
        crate::tls::install_crypto_provider();
        let builder = reqwest::Client::builder().timeout(REQUEST_TIMEOUT).connect_timeout(Duration::from_secs(2));
        let plain = base.get(..7).is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
        let builder = if plain { builder.tls_certs_only([]) } else { builder };
        let http = builder.build().map_err(|e| {
            let cause = std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string);
            format!("no HTTPS client could be built for the backend ({cause}); is a CA certificate store installed?")
        });
        Self { http, base, settings: crate::launch::ArmSettings::default() }
    }

    /// This client, for a server started with the run's `settings` (the world it fronts: today
    /// the size of the tool catalogue, for modules that list one).
    pub fn with_settings(mut self, settings: crate::launch::ArmSettings) -> Self {
        self.settings = settings;
        self
    }

    /// What the run chose about the servers' world ([`crate::launch::ArmSettings`]).
    pub fn settings(&self) -> crate::launch::ArmSettings {
        self.settings
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    pub async fn get(&self, path: &str, query: &impl Serialize) -> Result<Value, CallError> {
        self.send(Method::GET, path, Some(query), None::<&()>).await
    }

    pub async fn post(&self, path: &str, body: &impl Serialize) -> Result<Value, CallError> {
        self.send(Method::POST, path, None::<&()>, Some(body)).await
    }

    pub async fn patch(&self, path: &str, body: &impl Serialize) -> Result<Value, CallError> {
        self.send(Method::PATCH, path, None::<&()>, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> Result<Value, CallError> {
        self.send(Method::DELETE, path, None::<&()>, None::<&()>).await
    }

    async fn send(&self, method: Method, path: &str, query: Option<&impl Serialize>, body: Option<&impl Serialize>) -> Result<Value, CallError> {
        let url = format!("{}{path}", self.base);
        let http = self.http.as_ref().map_err(|reason| CallError::Unreachable { url: url.clone(), reason: reason.clone() })?;
        let mut req = http.request(method, &url);
        if let Some(q) = query {
            req = req.query(q);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.map_err(|e| CallError::Unreachable { url: url.clone(), reason: describe(&e) })?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(|e| CallError::Unreachable { url: url.clone(), reason: describe(&e) })?;
        let body: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(_) if status >= 400 => Value::String(text.clone()),
            Err(_) => return Err(CallError::NotJson(text.chars().take(200).collect())),
        };
        if status >= 400 {
            let message = match (&body["field"], &body["message"]) {
                (Value::String(f), Value::String(m)) => format!("{f}: {m}"),
                (_, Value::String(m)) => m.clone(),
                _ => text,
            };
            return Err(CallError::Status { status, message, body });
        }
        Ok(body)
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())
    } else if e.is_connect() {
        "connection refused or failed; is the backend running?".to_owned()
    } else {
        e.to_string()
    }
}

/// A successful tool result holding `value` as compact JSON text.
pub fn json_result(value: &Value) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(value.to_string())])
}

/// A tool error the model can read and react to.
pub fn tool_error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// The tool result for a backend answer: the JSON on success, the backend's message on error.
pub fn to_result(outcome: Result<Value, CallError>) -> CallToolResult {
    match outcome {
        Ok(value) => json_result(&value),
        Err(e) => tool_error(e.to_string()),
    }
}
