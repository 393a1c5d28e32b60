//! `wrapper`: the flat 1:1 wrapper over the endpoints this module's tasks touch.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::tool_handler;

use crate::backend_client::BackendClient;
use crate::launch::BenchServer;

#[derive(Debug, Clone)]
pub struct Wrapper {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

crate::flat_tools!(Wrapper: customers, users, tickets_read, tickets_write, notifications);

impl BenchServer for Wrapper {
    fn new(backend: BackendClient) -> Self {
        let tool_router = crate::schema::plain_tools(
            Self::flat_customers() + Self::flat_users() + Self::flat_tickets_read() + Self::flat_tickets_write() + Self::flat_notifications(),
        );
        Self { backend, tool_router }
    }
}

#[tool_handler(router = self.tool_router, name = "wrapper", version = "0.1.0")]
impl rmcp::ServerHandler for Wrapper {}
