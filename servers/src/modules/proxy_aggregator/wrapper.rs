//! `proxy_wrapper`: every flat 1:1 tool of the three backends, all offered at once.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::tool_handler;

use crate::backend_client::BackendClient;
use crate::launch::{BenchServer, Poison};

#[derive(Debug, Clone)]
pub struct ProxyWrapper {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

crate::flat_tools!(ProxyWrapper: repos, change_requests_read, runbooks, services, deploys);

impl BenchServer for ProxyWrapper {
    fn new(backend: BackendClient) -> Self {
        let mut tool_router = crate::schema::plain_tools(
            Self::flat_repos() + Self::flat_change_requests_read() + Self::flat_runbooks() + Self::flat_services() + Self::flat_deploys(),
        );
        // A poisoned downstream description reaches the model through the tool relaying it.
        let poison = backend.settings().poison;
        for r in super::RELAYS {
            if let Some(route) = tool_router.map.get_mut(r.control_tool) {
                let own = route.attr.description.as_deref().unwrap_or_default();
                let described = Poison::describe(poison, r.server, r.operation, own);
                if described != own {
                    route.attr.description = Some(described.into());
                }
            }
        }
        Self { backend, tool_router }
    }
}

#[tool_handler(router = self.tool_router, name = "proxy_wrapper", version = "0.1.0")]
impl rmcp::ServerHandler for ProxyWrapper {}
