//! `domain_wrapper`: the flat 1:1 wrapper over the customer, user and ticket endpoints, by id.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::tool_handler;

use crate::backend_client::BackendClient;
use crate::launch::BenchServer;

#[derive(Debug, Clone)]
pub struct DomainWrapper {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

crate::flat_tools!(DomainWrapper: customers, users, tickets_read, tickets_write);

impl BenchServer for DomainWrapper {
    fn new(backend: BackendClient) -> Self {
        let tool_router = crate::schema::plain_tools(Self::flat_customers() + Self::flat_users() + Self::flat_tickets_read() + Self::flat_tickets_write());
        Self { backend, tool_router }
    }
}

#[tool_handler(router = self.tool_router, name = "domain_wrapper", version = "0.1.0")]
impl rmcp::ServerHandler for DomainWrapper {}
