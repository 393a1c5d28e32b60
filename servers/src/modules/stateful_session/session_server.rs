//! `session_server`: review drafts held by the server; comments are added one call at a time
//! and the whole review is submitted with one backend request.

use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Extensions};
use rmcp::{ErrorData, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::drafts::{Comment, DraftError, Drafts};
use crate::backend_client::{BackendClient, CallError, json_result, tool_error};
use crate::launch::BenchServer;

/// How long an untouched draft lives.
pub const DEFAULT_DRAFT_TTL: Duration = Duration::from_secs(30 * 60);
/// Overrides [`DEFAULT_DRAFT_TTL`] in whole seconds (for tests).
pub const DRAFT_TTL_ENV: &str = "MCPBENCH_DRAFT_TTL_SECS";

#[derive(Debug, Clone)]
pub struct SessionServer {
    backend: BackendClient,
    /// This instance's drafts: one instance serves one MCP session (see the module docs).
    drafts: Drafts,
    tool_router: ToolRouter<Self>,
}

crate::flat_tools!(SessionServer: repos, users, change_requests_read);

impl BenchServer for SessionServer {
    fn new(backend: BackendClient) -> Self {
        Self::with_ttl(backend, ttl_from_env())
    }
}

impl SessionServer {
    /// A server whose drafts expire after `ttl` without use.
    pub fn with_ttl(backend: BackendClient, ttl: Duration) -> Self {
        let tool_router = crate::schema::plain_tools(Self::flat_repos() + Self::flat_users() + Self::flat_change_requests_read() + Self::review_drafts());
        Self { backend, drafts: Drafts::new(ttl), tool_router }
    }
}

fn ttl_from_env() -> Duration {
    match std::env::var(DRAFT_TTL_ENV) {
        Err(_) => DEFAULT_DRAFT_TTL,
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(s) if s > 0 => Duration::from_secs(s),
            _ => {
                tracing::warn!("{DRAFT_TTL_ENV}={v:?} is not a positive number of seconds; using {} s", DEFAULT_DRAFT_TTL.as_secs());
                DEFAULT_DRAFT_TTL
            }
        },
    }
}

#[tool_handler(router = self.tool_router, name = "session_server", version = "0.1.0")]
impl rmcp::ServerHandler for SessionServer {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartReview {
    /// Id of the change request to review.
    pub change_request_id: i64,
    /// The user writing the review.
    pub reviewer_id: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddReviewComment {
    /// Draft handle from start_review.
    pub draft: String,
    /// File path.
    pub path: String,
    /// Line number, ≥ 1.
    pub line: i32,
    pub body: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DraftRef {
    /// Draft handle from start_review.
    pub draft: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitReview {
    /// Draft handle from start_review.
    pub draft: String,
    /// `approve`, `request_changes` or `comment`.
    pub verdict: String,
    /// Summary, up to 4000 characters.
    #[serde(default)]
    pub summary: Option<String>,
}

/// Checks that the change request and the reviewer exist (both arms, before a draft exists) and
/// returns the change request's summary, or the tool error naming what is missing.
pub(super) async fn looked_up(backend: &BackendClient, a: &StartReview) -> Result<Value, CallToolResult> {
    let cr = match backend.get(&format!("/change_requests/{}", a.change_request_id), &()).await {
        Ok(cr) => cr,
        Err(e) => return Err(tool_error(format!("looking up change request {}: {e}", a.change_request_id))),
    };
    if let Err(e) = backend.get(&format!("/users/{}", a.reviewer_id), &()).await {
        return Err(tool_error(format!("looking up reviewer {}: {e}", a.reviewer_id)));
    }
    Ok(json!({
        "id": cr["id"], "repo_id": cr["repo_id"], "number": cr["number"], "title": cr["title"],
        "status": cr["status"], "author_id": cr["author_id"],
    }))
}

/// Writes a review and all its comments with one backend request (both arms' submit).
pub(super) async fn post_review(
    backend: &BackendClient,
    change_request_id: i64,
    reviewer_id: i64,
    comments: &[Comment],
    verdict: &str,
    summary: Option<&str>,
) -> Result<Value, CallError> {
    let mut body = json!({ "reviewer_id": reviewer_id, "verdict": verdict, "comments": comments });
    if let Some(s) = summary {
        body["body"] = json!(s);
    }
    backend.post(&format!("/change_requests/{change_request_id}/reviews"), &body).await
}

fn draft_error(e: DraftError) -> CallToolResult {
    tool_error(e.to_string())
}

/// Whether this request arrived over HTTP without an MCP session (the stateless 2026-07-28
/// path), where rmcp builds a fresh server for every request and a draft would be lost.
fn sessionless_http(ext: &Extensions) -> bool {
    ext.get::<axum::http::request::Parts>().is_some_and(|p| !p.headers.contains_key("mcp-session-id"))
}

#[tool_router(router = review_drafts)]
impl SessionServer {
    #[tool(description = "Start a review of a change request. Returns a draft handle and a summary of the change request. \
                          Comments added to the draft are held here until submit_review writes them all with the verdict.")]
    async fn start_review(&self, Parameters(a): Parameters<StartReview>, ext: Extensions) -> Result<CallToolResult, ErrorData> {
        if sessionless_http(&ext) {
            return Ok(tool_error(
                "review drafts need an MCP session, and this HTTP request has none (stateless protocol); \
                 reconnect with a session to review",
            ));
        }
        let summary = match looked_up(&self.backend, &a).await {
            Ok(s) => s,
            Err(e) => return Ok(e),
        };
        let draft = self.drafts.open(a.change_request_id, a.reviewer_id).map_err(|e| ErrorData::internal_error(format!("making a draft handle: {e}"), None))?;
        Ok(json_result(&json!({ "draft": draft, "change_request": summary, "reviewer_id": a.reviewer_id })))
    }

    #[tool(description = "Add a line comment to a review draft. Returns the number of comments in the draft.")]
    async fn add_review_comment(&self, Parameters(a): Parameters<AddReviewComment>) -> Result<CallToolResult, ErrorData> {
        Ok(match self.drafts.add(&a.draft, Comment { path: a.path, line: a.line, body: a.body }) {
            Ok(n) => json_result(&json!({ "draft": a.draft, "comments": n })),
            Err(e) => draft_error(e),
        })
    }

    #[tool(description = "Show a review draft: its change request, reviewer and comments so far.")]
    async fn show_review_draft(&self, Parameters(a): Parameters<DraftRef>) -> Result<CallToolResult, ErrorData> {
        Ok(match self.drafts.show(&a.draft) {
            Ok(d) => json_result(&json!({
                "draft": a.draft, "change_request_id": d.change_request_id, "reviewer_id": d.reviewer_id, "comments": d.comments,
            })),
            Err(e) => draft_error(e),
        })
    }

    #[tool(description = "Discard a review draft and its comments; nothing is written.")]
    async fn discard_review(&self, Parameters(a): Parameters<DraftRef>) -> Result<CallToolResult, ErrorData> {
        Ok(match self.drafts.discard(&a.draft) {
            Ok(d) => json_result(&json!({ "discarded": a.draft, "comments_dropped": d.comments.len() })),
            Err(e) => draft_error(e),
        })
    }

    #[tool(description = "Submit a review draft with a verdict: the review and all its comments are written together and the draft ends. \
                          If the submit is rejected, the draft stays open to fix and retry.")]
    async fn submit_review(&self, Parameters(a): Parameters<SubmitReview>) -> Result<CallToolResult, ErrorData> {
        let d = match self.drafts.begin_submit(&a.draft) {
            Ok(d) => d,
            Err(e) => return Ok(draft_error(e)),
        };
        let outcome = post_review(&self.backend, d.change_request_id, d.reviewer_id, &d.comments, &a.verdict, a.summary.as_deref()).await;
        self.drafts.end_submit(&a.draft, outcome.is_ok());
        Ok(match outcome {
            Ok(review) => json_result(&review),
            Err(e) => tool_error(format!("the review was not submitted ({e}); draft {} is still open with its {} comments", a.draft, d.comments.len())),
        })
    }
}
