//! `code_execution_wrapper`: the control server of the code_execution module: the flat 1:1 tools
//! over exactly the operations the pattern's API offers (customers, users, tickets, notifications),
//! and nothing else (docs/adr/0004): the two arms differ only in tools vs code.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::tool_handler;

use crate::backend_client::BackendClient;
use crate::launch::BenchServer;

#[derive(Debug, Clone)]
pub struct CodeExecutionControl {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

crate::flat_tools!(CodeExecutionControl: customers, users, tickets_read, tickets_write, notifications);

impl BenchServer for CodeExecutionControl {
    fn new(backend: BackendClient) -> Self {
        Self {
            backend,
            tool_router: crate::schema::plain_tools(
                Self::flat_customers() + Self::flat_users() + Self::flat_tickets_read() + Self::flat_tickets_write() + Self::flat_notifications(),
            ),
        }
    }
}

#[tool_handler(router = self.tool_router, name = "code_execution_wrapper", version = "0.1.0")]
impl rmcp::ServerHandler for CodeExecutionControl {}
