//! `session_baseline`: the stateless flat wrapper; a review and all its comments go in one call.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::tool_handler;

use crate::backend_client::BackendClient;
use crate::launch::BenchServer;

#[derive(Debug, Clone)]
pub struct SessionBaseline {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

crate::flat_tools!(SessionBaseline: repos, users, change_requests_read, change_requests_write);

impl BenchServer for SessionBaseline {
    fn new(backend: BackendClient) -> Self {
        let tool_router =
            crate::schema::plain_tools(Self::flat_repos() + Self::flat_users() + Self::flat_change_requests_read() + Self::flat_change_requests_write());
        Self { backend, tool_router }
    }
}

#[tool_handler(router = self.tool_router, name = "session_baseline", version = "0.1.0")]
impl rmcp::ServerHandler for SessionBaseline {}
