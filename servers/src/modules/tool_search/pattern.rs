//! `tool_search`: the pattern server of the tool_search module.
//!
//! Two tools instead of the catalogue: `search_tools` ranks every catalogue tool against the
//! model's words ([`super::Index`], BM25) and returns the full definitions of the best matches;
//! `call_tool` calls a tool by name with its arguments. Every call runs through the same router
//! as the control's ([`super::router`]), so the arms differ only in how the catalogue reaches
//! the model: up front, or found on demand — at the price of a search call, and of the tools a
//! search does not rank high enough.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::Index;
use crate::backend_client::{BackendClient, json_result, tool_error};
use crate::launch::BenchServer;

/// Matches a search returns when the model does not say.
pub const DEFAULT_LIMIT: u32 = 5;
/// The most a search returns.
pub const MAX_LIMIT: u32 = 10;

#[derive(Debug, Clone)]
pub struct ToolSearchPattern {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
    /// The catalogue's tools, as the control lists them and runs them.
    catalogue: Arc<ToolRouter<Self>>,
    index: Arc<Index>,
}

super::own_tools!(ToolSearchPattern);

impl BenchServer for ToolSearchPattern {
    fn new(backend: BackendClient) -> Self {
        let n = super::size_of(&backend);
        let catalogue = super::router(Self::own(), n);
        let index = Index::of(n, || catalogue.list_all());
        Self { backend, tool_router: crate::schema::plain_tools(Self::tools()), catalogue: Arc::new(catalogue), index }
    }
}

#[tool_handler(router = self.tool_router, name = "tool_search", version = "0.1.0")]
impl rmcp::ServerHandler for ToolSearchPattern {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchTools {
    /// What you want to do, in a few words (e.g. "list open tickets of a customer").
    pub query: String,
    /// How many matches to return, 1–10 (default 5).
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallTool {
    /// The tool's name, exactly as search_tools returned it.
    pub name: String,
    /// The tool's arguments, as its input schema says.
    #[serde(default)]
    pub arguments: Option<JsonObject>,
}

#[tool_router(router = tools)]
impl ToolSearchPattern {
    #[tool(
        description = "Finds tools for a job: searches every tool available here by name and description and returns the best matches, best first, each with its full input schema. Then call one with call_tool."
    )]
    async fn search_tools(&self, Parameters(a): Parameters<SearchTools>) -> Result<CallToolResult, ErrorData> {
        let limit = a.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Ok(tool_error(format!("limit must be 1 to {MAX_LIMIT}, not {limit}")));
        }
        if a.query.trim().is_empty() {
            return Ok(tool_error("query is empty: say in a few words what you want to do"));
        }
        let found: Vec<_> = self
            .index
            .search(&a.query, limit as usize)
            .into_iter()
            .enumerate()
            .map(|(i, t)| json!({"rank": i + 1, "name": t.name, "description": t.description, "input_schema": *t.input_schema}))
            .collect();
        if found.is_empty() {
            return Ok(tool_error(format!("no tool matches {:?}: try other words", a.query)));
        }
        Ok(json_result(&json!({ "tools": found })))
    }

    #[tool(description = "Calls a tool that search_tools found, by its exact name, with arguments that follow its input schema; returns that tool's result.")]
    async fn call_tool(&self, Parameters(a): Parameters<CallTool>, context: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        if !self.index.contains(&a.name) {
            return Ok(tool_error(format!("there is no tool named {:?}: find tools with search_tools", a.name)));
        }
        let mut request = CallToolRequestParams::new(a.name);
        if let Some(arguments) = a.arguments {
            request = request.with_arguments(arguments);
        }
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        match self.catalogue.call(call).await {
            Ok(CallToolResponse::Complete(result)) => Ok(result),
            Ok(_) => Ok(tool_error("the tool asked for input this server cannot collect")),
            // A protocol error of the inner call (bad arguments are already a tool error) is the
            // model's to read here: it called through this tool.
            Err(e) => Ok(tool_error(e.message.to_string())),
        }
    }
}
