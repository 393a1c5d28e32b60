//! `resource_wrapper`: the flat 1:1 wrapper over the runbook and service endpoints; raw
//! records, internal notes included.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::tool_handler;

use crate::backend_client::BackendClient;
use crate::launch::BenchServer;

#[derive(Debug, Clone)]
pub struct ResourceWrapper {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

crate::flat_tools!(ResourceWrapper: runbooks, services);

impl BenchServer for ResourceWrapper {
    fn new(backend: BackendClient) -> Self {
        let tool_router = crate::schema::plain_tools(Self::flat_runbooks() + Self::flat_services());
        Self { backend, tool_router }
    }
}

#[tool_handler(router = self.tool_router, name = "resource_wrapper", version = "0.1.0")]
impl rmcp::ServerHandler for ResourceWrapper {}
