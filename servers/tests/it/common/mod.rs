//! Shared fixture for server tests: a real backend (real Postgres, real HTTP) and MCP clients
//! connected to a registered server over stdio (a child process) or streamable HTTP.
#![allow(dead_code)]

pub mod tools;

use backend::WorldSpec;
use backend::local::LocalBackend;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

pub type Client = RunningService<RoleClient, ()>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Stdio,
    Http,
}

pub const BOTH: [Via; 2] = [Via::Stdio, Via::Http];

pub async fn backend() -> LocalBackend {
    LocalBackend::start(WorldSpec::default()).await.expect("a backend on real Postgres")
}

/// A client of server `name`, plus (for HTTP) the task serving it.
pub struct Connected {
    pub client: Client,
    http_server: Option<tokio::task::JoinHandle<()>>,
}

impl Connected {
    pub async fn close(self) {
        self.client.cancel().await.unwrap();
        if let Some(s) = self.http_server {
            s.abort();
        }
    }
}

pub async fn connect(name: &str, backend_url: &str, via: Via) -> Connected {
    connect_with(name, backend_url, via, Default::default()).await
}

/// [`connect`] with the run's settings (a catalogue size, say), as a session passes them.
pub async fn connect_with(name: &str, backend_url: &str, via: Via, settings: servers::launch::ArmSettings) -> Connected {
    match via {
        Via::Stdio => {
            let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-bench-server"));
            cmd.args(servers::launch::stdio_args_with(name, backend_url, settings));
            let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.expect("connect over stdio");
            Connected { client, http_server: None }
        }
        Via::Http => {
            let entry = servers::registry::find(name).unwrap();
            let (url, server) = servers::launch::serve_http_in_process_with(entry, backend_url, settings).await.unwrap();
            let client = ().serve(servers::tls::http_transport(url)).await.expect("connect over HTTP");
            Connected { client, http_server: Some(server) }
        }
    }
}

/// Calls `tool` with `args` (a JSON object).
pub async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let args = args.as_object().cloned().unwrap_or_default();
    client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args)).await.unwrap_or_else(|e| panic!("protocol error calling {tool}: {e}"))
}

/// The text of a result's first content block.
pub fn text(r: &CallToolResult) -> String {
    r.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default()
}

/// A successful result's JSON; panics with the error text otherwise.
pub fn ok_json(r: &CallToolResult) -> Value {
    assert_ne!(r.is_error, Some(true), "tool error: {}", text(r));
    serde_json::from_str(&text(r)).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(r)))
}

/// A tool error's text; panics if the call succeeded.
pub fn err_text(r: &CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "expected a tool error, got: {}", text(r));
    text(r)
}

/// Runs a read query on the backend's current world: no row is null, one row its JSON object,
/// several rows an array of them.
pub async fn sql(b: &LocalBackend, query: &str) -> Value {
    let rows = backend::world::read_only_rows(&b.world().pool(), &[query.to_owned()]).await.expect("sql").remove(0);
    match rows.len() {
        0 => Value::Null,
        1 => rows.into_iter().next().unwrap(),
        _ => Value::Array(rows),
    }
}

/// A plain HTTP client, built after the process's TLS provider is installed (`servers::tls`).
pub fn http_client() -> reqwest::Client {
    servers::tls::install_crypto_provider();
    reqwest::Client::new()
}
