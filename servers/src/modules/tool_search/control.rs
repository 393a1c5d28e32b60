//! `tool_search_wrapper`: the control server of the tool_search module: every tool of the
//! catalogue listed up front — the backend's own flat 1:1 tools (docs/adr/0004) and the run's `N`
//! tools of other, unconnected systems — the way a gateway that lists everything it connects
//! does.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::tool_handler;

use crate::backend_client::BackendClient;
use crate::launch::BenchServer;

#[derive(Debug, Clone)]
pub struct ToolSearchControl {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

super::own_tools!(ToolSearchControl);

impl BenchServer for ToolSearchControl {
    fn new(backend: BackendClient) -> Self {
        let tool_router = super::router(Self::own(), super::size_of(&backend));
        Self { backend, tool_router }
    }
}

#[tool_handler(router = self.tool_router, name = "tool_search_wrapper", version = "0.1.0")]
impl rmcp::ServerHandler for ToolSearchControl {}
