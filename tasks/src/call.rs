//! One MCP call, and its result as the text a model is shown. The agent sends exactly this text
//! to the model and the oracle counts exactly these bytes, so model sessions and oracle floors
//! measure the same thing.
//!
//! A JSON-RPC error from the server (unknown tool, invalid parameters, unknown resource) is an
//! error result the model reads, like a tool error; only a broken transport is an `Err`.

use rmcp::model::{CallToolRequestParams, JsonObject, ReadResourceRequestParams, ResourceContents};
use rmcp::service::Peer;
use rmcp::{RoleClient, ServiceError};
use serde_json::{Value, json};

/// How long one call may take before the session gives up on the server: a server that stops
/// answering (hung, or dead while a child of its own still holds its stdout open) ends the
/// session as a transport failure instead of hanging the run.
pub const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

async fn bounded<T>(call: impl std::future::Future<Output = Result<T, ServiceError>>) -> Result<T, ServiceError> {
    tokio::time::timeout(CALL_TIMEOUT, call).await.unwrap_or(Err(ServiceError::Timeout { timeout: CALL_TIMEOUT }))
}

/// A call's result as text, and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallText {
    pub text: String,
    pub is_error: bool,
}

impl CallText {
    fn ok(text: String) -> Self {
        Self { text, is_error: false }
    }

    fn from_error(e: ServiceError) -> Result<Self, ServiceError> {
        match e {
            ServiceError::McpError(e) => Ok(Self { text: e.message.to_string(), is_error: true }),
            other => Err(other),
        }
    }
}

/// Calls tool `name`: its text content blocks, joined by newlines.
pub async fn call_tool(peer: &Peer<RoleClient>, name: &str, arguments: JsonObject) -> Result<CallText, ServiceError> {
    match bounded(peer.call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))).await {
        Ok(r) => {
            let text = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.as_str())).collect::<Vec<_>>().join("\n");
            Ok(CallText { text, is_error: r.is_error == Some(true) })
        }
        Err(e) => CallText::from_error(e),
    }
}

/// Lists every resource: a JSON array of `{uri, name, title, description}`.
pub async fn list_resources(peer: &Peer<RoleClient>) -> Result<CallText, ServiceError> {
    match bounded(peer.list_all_resources()).await {
        Ok(list) => {
            let items: Vec<Value> = list.iter().map(|r| json!({ "uri": r.uri, "name": r.name, "title": r.title, "description": r.description })).collect();
            Ok(CallText::ok(Value::Array(items).to_string()))
        }
        Err(e) => CallText::from_error(e),
    }
}

/// Reads resource `uri`: its text contents (other contents as JSON), joined by newlines.
pub async fn read_resource(peer: &Peer<RoleClient>, uri: &str) -> Result<CallText, ServiceError> {
    match bounded(peer.read_resource(ReadResourceRequestParams::new(uri.to_owned()))).await {
        Ok(r) => Ok(CallText::ok(
            r.contents
                .iter()
                .map(|c| match c {
                    ResourceContents::TextResourceContents { text, .. } => text.clone(),
                    other => serde_json::to_string(other).unwrap_or_default(),
                })
                .collect::<Vec<_>>()
                .join("\n"),
        )),
        Err(e) => CallText::from_error(e),
    }
}
