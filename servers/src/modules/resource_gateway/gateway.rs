//! `resource_gateway`: runbooks as MCP resources, read as markdown, internal notes withheld.
//!
//! The backend returns full runbook records, `internal_notes` included. This server parses them
//! into [`Runbook`], which has no field for the notes, so they are dropped on arrival and no
//! output path (list, read, template read, error) can carry them.
//!
//! It offers no tools: the design under test is reading reference content through
//! resources/list and resources/read. The (empty) tool router only keeps `tools/list`
//! answering, so the manifest and clients that always list tools see an empty list.

use std::fmt::Write as _;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    Implementation, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool_handler};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::backend_client::{BackendClient, CallError};
use crate::launch::BenchServer;

const RUNBOOK_SCHEME: &str = "runbook://";
const SERVICE_PREFIX: &str = "runbooks://service/";
const MARKDOWN: &str = "text/markdown";
/// The backend's largest page.
const PAGE: i64 = 200;
/// Upper bound on pages fetched for one answer, against a backend that never ends a list.
const MAX_PAGES: usize = 1000;

#[derive(Debug, Clone)]
pub struct ResourceGateway {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

impl BenchServer for ResourceGateway {
    fn new(backend: BackendClient) -> Self {
        Self { backend, tool_router: ToolRouter::new() }
    }
}

/// What the gateway keeps of a backend runbook record: everything a reader may see. Unknown
/// fields (`internal_notes`, `id`) are ignored by serde and never stored.
#[derive(Debug, Deserialize)]
struct Runbook {
    slug: String,
    title: String,
    service: String,
    body: String,
    updated_at: String,
}

#[derive(Debug, Deserialize)]
struct RunbookPage {
    data: Vec<Runbook>,
    next_offset: Option<i64>,
}

#[derive(Debug, Serialize)]
struct RunbookQuery<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    slug: Option<&'a str>,
    limit: i64,
    offset: i64,
}

impl Runbook {
    fn uri(&self) -> String {
        format!("{RUNBOOK_SCHEME}{}", self.slug)
    }

    fn resource(&self) -> Resource {
        Resource::new(self.uri(), &self.slug).with_title(&self.title).with_description(format!("{} service", self.service)).with_mime_type(MARKDOWN)
    }

    fn markdown(&self) -> String {
        format!("# {}\n\n- Service: {}\n- Last updated: {}\n\n{}\n", self.title, self.service, self.updated_at, self.body)
    }
}

/// The protocol error for a URI that names nothing: it repeats the URI (shortened) and
/// nothing else.
fn not_found(uri: &str) -> ErrorData {
    let shown: String = uri.chars().take(200).collect();
    let ellipsis = if shown.len() < uri.len() { "…" } else { "" };
    ErrorData::resource_not_found(format!("resource not found: {shown}{ellipsis}"), None)
}

fn backend_fault(e: &CallError) -> ErrorData {
    ErrorData::internal_error(format!("could not read runbooks: {e}"), None)
}

/// Slugs and service names are plain identifiers; anything else cannot name a runbook.
fn is_identifier(s: &str) -> bool {
    !s.is_empty() && s.len() <= 200 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl ResourceGateway {
    /// Every runbook matching the filters, across all backend pages.
    async fn runbooks(&self, service: Option<&str>, slug: Option<&str>) -> Result<Vec<Runbook>, ErrorData> {
        let mut out = Vec::new();
        let mut offset = 0;
        for _ in 0..MAX_PAGES {
            let query = RunbookQuery { service, slug, limit: PAGE, offset };
            let value = self.backend.get("/runbooks", &query).await.map_err(|e| backend_fault(&e))?;
            // Never echo the body: it holds the internal notes.
            let page: RunbookPage =
                serde_json::from_value(value).map_err(|_| ErrorData::internal_error("the backend sent runbooks in an unexpected shape", None))?;
            let got = page.data.len();
            out.extend(page.data);
            match page.next_offset {
                Some(next) if got > 0 && next > offset => offset = next,
                _ => return Ok(out),
            }
        }
        Ok(out)
    }

    async fn service_exists(&self, name: &str) -> Result<bool, ErrorData> {
        let v: Value = self.backend.get("/services", &[("name", name), ("limit", "1")]).await.map_err(|e| backend_fault(&e))?;
        Ok(v["total"].as_i64().unwrap_or(0) > 0)
    }

    async fn read_runbook(&self, uri: &str, slug: &str) -> Result<String, ErrorData> {
        if !is_identifier(slug) {
            return Err(not_found(uri));
        }
        let found = self.runbooks(None, Some(slug)).await?;
        found.into_iter().next().map(|r| r.markdown()).ok_or_else(|| not_found(uri))
    }

    async fn read_service_index(&self, uri: &str, service: &str) -> Result<String, ErrorData> {
        if !is_identifier(service) {
            return Err(not_found(uri));
        }
        let found = self.runbooks(Some(service), None).await?;
        if found.is_empty() && !self.service_exists(service).await? {
            return Err(not_found(uri));
        }
        let mut md = format!("# Runbooks of service {service}\n\n");
        if found.is_empty() {
            md.push_str("None.\n");
        }
        for r in &found {
            let _ = writeln!(md, "- [{}]({})", r.title, r.uri());
        }
        Ok(md)
    }
}

#[tool_handler(router = self.tool_router)]
impl rmcp::ServerHandler for ResourceGateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_resources().build()).with_server_info(Implementation::new("resource_gateway", "0.1.0"))
    }

    async fn list_resources(&self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>) -> Result<ListResourcesResult, ErrorData> {
        let all = self.runbooks(None, None).await?;
        Ok(ListResourcesResult::with_all_items(all.iter().map(Runbook::resource).collect()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(format!("{RUNBOOK_SCHEME}{{slug}}"), "runbook_by_slug")
                .with_description("One runbook: title, service, last update and steps.")
                .with_mime_type(MARKDOWN),
            ResourceTemplate::new(format!("{SERVICE_PREFIX}{{service}}"), "runbooks_by_service")
                .with_description("A service's runbooks: titles and URIs.")
                .with_mime_type(MARKDOWN),
        ]))
    }

    async fn read_resource(&self, request: ReadResourceRequestParams, _context: RequestContext<RoleServer>) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let text = if let Some(slug) = uri.strip_prefix(RUNBOOK_SCHEME) {
            self.read_runbook(uri, slug).await?
        } else if let Some(service) = uri.strip_prefix(SERVICE_PREFIX) {
            self.read_service_index(uri, service).await?
        } else {
            return Err(not_found(uri));
        };
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type(MARKDOWN)]).into())
    }
}
