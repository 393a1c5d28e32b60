//! `proxy_aggregator`: one server in front of three backends, discovered on demand. The tool
//! list is three static tools; what a backend can do is only sent when the agent asks for it.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::backends::{BACKENDS, BackendInfo, Deploys, Outcome, Repos, Runbooks, backend_info, unknown_backend};
use crate::backend_client::{BackendClient, json_result, tool_error};
use crate::launch::{ArmSettings, BenchServer, Poison};

#[derive(Debug, Clone)]
pub struct ProxyAggregator {
    repos: Repos,
    runbooks: Runbooks,
    deploys: Deploys,
    /// A poisoned downstream description, shown where `describe_backend` shows the operation.
    poison: Option<&'static Poison>,
    tool_router: ToolRouter<Self>,
}

impl BenchServer for ProxyAggregator {
    /// The operations behind the three tools are part of what this design offers a model, so
    /// they belong in the manifest (and its hash) like tool schemas do.
    fn manifest_extra(settings: ArmSettings) -> Option<Value> {
        Some(Value::Array(BACKENDS.iter().map(|b| description_of(b, settings.poison)).collect()))
    }

    fn new(backend: BackendClient) -> Self {
        // One client per backend, as a real aggregator would hold; here they share one URL.
        let url = backend.base_url();
        Self {
            repos: Repos::new(BackendClient::new(url)),
            runbooks: Runbooks::new(BackendClient::new(url)),
            deploys: Deploys::new(BackendClient::new(url)),
            poison: backend.settings().poison,
            tool_router: crate::schema::plain_tools(Self::tool_router()),
        }
    }
}

#[tool_handler(router = self.tool_router, name = "proxy_aggregator", version = "0.1.0")]
impl rmcp::ServerHandler for ProxyAggregator {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DescribeBackend {
    /// `repos`, `runbooks` or `deploys`.
    pub backend: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallBackend {
    /// `repos`, `runbooks` or `deploys`.
    pub backend: String,
    /// An operation named by describe_backend.
    pub operation: String,
    /// The operation's arguments, matching its parameter schema.
    #[serde(default)]
    #[schemars(with = "Map<String, Value>")]
    pub arguments: Value,
}

#[tool_router]
impl ProxyAggregator {
    #[tool(description = "List the backends behind this server, each with its purpose.")]
    async fn list_backends(&self) -> Result<CallToolResult, ErrorData> {
        let list: Vec<Value> = BACKENDS.iter().map(|b| json!({ "backend": b.name, "purpose": b.purpose })).collect();
        Ok(json_result(&Value::Array(list)))
    }

    #[tool(description = "The operations of one backend: name, description and JSON parameter schema of each.")]
    async fn describe_backend(&self, Parameters(a): Parameters<DescribeBackend>) -> Result<CallToolResult, ErrorData> {
        let Some(b) = backend_info(&a.backend) else {
            return Ok(tool_error(unknown_backend(&a.backend)));
        };
        Ok(json_result(&description_of(b, self.poison)))
    }

    #[tool(description = "Run one operation of a backend with its arguments (see describe_backend). Returns the backend's JSON.")]
    async fn call_backend(&self, Parameters(a): Parameters<CallBackend>) -> Result<CallToolResult, ErrorData> {
        Ok(match self.run(&a.backend, a.operation.trim(), a.arguments).await {
            Ok(value) => json_result(&value),
            Err(message) => tool_error(message),
        })
    }
}

/// What `describe_backend` answers for `b` (with `poison`'s text where it poisons one of its
/// operations).
fn description_of(b: &BackendInfo, poison: Option<&Poison>) -> Value {
    let operations: Vec<Value> = b
        .operations
        .iter()
        .map(|o| json!({ "operation": o.name, "description": Poison::describe(poison, b.name, o.name, o.description), "parameters": o.parameters() }))
        .collect();
    json!({ "backend": b.name, "purpose": b.purpose, "operations": operations })
}

impl ProxyAggregator {
    async fn run(&self, backend: &str, operation: &str, arguments: Value) -> Outcome {
        let info = backend_info(backend).ok_or_else(|| unknown_backend(backend))?;
        if info.operation(operation).is_none() {
            return Err(info.unknown_operation(operation));
        }
        let args = arguments_object(arguments)?;
        match info.name {
            n if n == Repos::INFO.name => self.repos.call(operation, &args).await,
            n if n == Runbooks::INFO.name => self.runbooks.call(operation, &args).await,
            n if n == Deploys::INFO.name => self.deploys.call(operation, &args).await,
            _ => Err(unknown_backend(backend)),
        }
    }
}

/// `arguments` as an object. Absent means none; a string holding a JSON object is accepted,
/// since models sometimes encode nested arguments that way.
fn arguments_object(arguments: Value) -> Result<Map<String, Value>, String> {
    match arguments {
        Value::Null => Ok(Map::new()),
        Value::Object(m) => Ok(m),
        Value::String(s) => match serde_json::from_str(&s) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err("`arguments` must be a JSON object of the operation's parameters".to_owned()),
        },
        _ => Err("`arguments` must be a JSON object of the operation's parameters".to_owned()),
    }
}
