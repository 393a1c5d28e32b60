//! `session_baseline`: the same review operations as `session_server`, one comment per call,
//! but stateless: every call returns the whole draft and the next call must send it back
//! (ADR 0010). The server keeps nothing between calls.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::carried::{CarriedError, Draft};
use super::drafts::Comment;
use super::session_server::{StartReview, looked_up, post_review};
use crate::backend_client::{BackendClient, json_result, tool_error};
use crate::launch::BenchServer;

#[derive(Debug, Clone)]
pub struct SessionBaseline {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

crate::flat_tools!(SessionBaseline: repos, users, change_requests_read);

impl BenchServer for SessionBaseline {
    fn new(backend: BackendClient) -> Self {
        let tool_router = crate::schema::plain_tools(Self::flat_repos() + Self::flat_users() + Self::flat_change_requests_read() + Self::carried_drafts());
        Self { backend, tool_router }
    }
}

#[tool_handler(router = self.tool_router, name = "session_baseline", version = "0.1.0")]
impl rmcp::ServerHandler for SessionBaseline {}

// The parameter types mirror session_server's, field for field; only `draft` differs: the
// whole draft object instead of a handle. Its schema is a bare object, as a vendor documents
// an object the client is to pass back unchanged (its fields are readable in every result).

fn an_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "object" })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddReviewComment {
    /// The draft the last call returned.
    #[schemars(schema_with = "an_object")]
    pub draft: Value,
    /// File path.
    pub path: String,
    /// Line number, ≥ 1.
    pub line: i32,
    pub body: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DraftRef {
    /// The draft the last call returned.
    #[schemars(schema_with = "an_object")]
    pub draft: Value,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitReview {
    /// The draft the last call returned.
    #[schemars(schema_with = "an_object")]
    pub draft: Value,
    /// `approve`, `request_changes` or `comment`.
    pub verdict: String,
    /// Summary, up to 4000 characters.
    #[serde(default)]
    pub summary: Option<String>,
}

fn carried_error(e: CarriedError) -> CallToolResult {
    tool_error(e.to_string())
}

fn sealing_error(e: std::io::Error) -> ErrorData {
    ErrorData::internal_error(format!("reading the signing key: {e}"), None)
}

/// The tag of a draft that just opened (it has one, or it would not have).
fn tag_of(carried: &Value) -> Value {
    match carried {
        Value::String(s) => serde_json::from_str::<Value>(s).map(|v| v["tag"].clone()).unwrap_or_default(),
        v => v["tag"].clone(),
    }
}

#[tool_router(router = carried_drafts)]
impl SessionBaseline {
    #[tool(description = "Start a review of a change request. Returns a draft and a summary of the change request. \
                          Nothing is held here: send the draft as returned to the next call, until submit_review writes it with the verdict.")]
    async fn start_review(&self, Parameters(a): Parameters<StartReview>) -> Result<CallToolResult, ErrorData> {
        let summary = match looked_up(&self.backend, &a).await {
            Ok(s) => s,
            Err(e) => return Ok(e),
        };
        let draft = Draft::new(a.change_request_id, a.reviewer_id).seal().map_err(sealing_error)?;
        Ok(json_result(&json!({ "draft": draft, "change_request": summary, "reviewer_id": a.reviewer_id })))
    }

    #[tool(description = "Add a line comment to a review draft. Returns the new draft to send next, and its comment count.")]
    async fn add_review_comment(&self, Parameters(a): Parameters<AddReviewComment>) -> Result<CallToolResult, ErrorData> {
        let mut d = match Draft::open(&a.draft) {
            Ok(d) => d,
            Err(e) => return Ok(carried_error(e)),
        };
        let n = match d.add(Comment { path: a.path, line: a.line, body: a.body }) {
            Ok(n) => n,
            Err(e) => return Ok(carried_error(e)),
        };
        Ok(json_result(&json!({ "draft": d.seal().map_err(sealing_error)?, "comments": n })))
    }

    #[tool(description = "Show a review draft: its change request, reviewer and comments so far.")]
    async fn show_review_draft(&self, Parameters(a): Parameters<DraftRef>) -> Result<CallToolResult, ErrorData> {
        Ok(match Draft::open(&a.draft) {
            Ok(d) => json_result(&json!({
                "draft": tag_of(&a.draft), "change_request_id": d.change_request_id, "reviewer_id": d.reviewer_id, "comments": d.comments,
            })),
            Err(e) => carried_error(e),
        })
    }

    #[tool(description = "Discard a review draft and its comments; nothing is written.")]
    async fn discard_review(&self, Parameters(a): Parameters<DraftRef>) -> Result<CallToolResult, ErrorData> {
        Ok(match Draft::open(&a.draft) {
            Ok(d) => json_result(&json!({ "discarded": tag_of(&a.draft), "comments_dropped": d.comments.len() })),
            Err(e) => carried_error(e),
        })
    }

    #[tool(description = "Submit a review draft with a verdict: the review and all its comments are written together. \
                          If the submit is rejected, the draft is still valid to fix and retry.")]
    async fn submit_review(&self, Parameters(a): Parameters<SubmitReview>) -> Result<CallToolResult, ErrorData> {
        let d = match Draft::open(&a.draft) {
            Ok(d) => d,
            Err(e) => return Ok(carried_error(e)),
        };
        Ok(match post_review(&self.backend, d.change_request_id, d.reviewer_id, &d.comments, &a.verdict, a.summary.as_deref()).await {
            Ok(review) => json_result(&review),
            Err(e) => {
                tool_error(format!("the review was not submitted ({e}); the draft, with its {} comments, is unchanged and can be sent again", d.comments.len()))
            }
        })
    }
}
