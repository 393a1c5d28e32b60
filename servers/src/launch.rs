//! How a registered server is started: over stdio, over streamable HTTP, or in-process over a
//! duplex pipe (tests and manifest computation). One generic implementation serves every server
//! type, so the registry can hold them side by side.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::backend_client::BackendClient;

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A server the bench can run: built from a backend client, nothing else.
pub trait BenchServer: rmcp::ServerHandler + Clone + Send + Sync + 'static {
    fn new(backend: BackendClient) -> Self;

    /// What the server offers beyond its tool and template listings (for example operations
    /// reachable through a discovery tool), to be hashed into its manifest.
    fn manifest_extra() -> Option<serde_json::Value> {
        None
    }
}

/// Type-erased launcher stored in the registry.
pub trait Launch: Sync + std::fmt::Debug {
    /// Serves one MCP session on stdin/stdout until the client disconnects.
    fn serve_stdio(&self, backend: BackendClient) -> BoxFuture<anyhow::Result<()>>;
    /// An axum router serving MCP over streamable HTTP at `/mcp`.
    fn http_router(&self, backend: BackendClient, config: StreamableHttpServerConfig) -> axum::Router;
    /// Serves one session over an in-process byte stream (for tests and manifests).
    fn serve_stream(&self, backend: BackendClient, stream: tokio::io::DuplexStream) -> BoxFuture<anyhow::Result<()>>;
    /// See [`BenchServer::manifest_extra`].
    fn manifest_extra(&self) -> Option<serde_json::Value>;
}

pub struct Launcher<S>(PhantomData<fn() -> S>);

impl<S> std::fmt::Debug for Launcher<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(std::any::type_name::<S>())
    }
}

impl<S> Launcher<S> {
    pub const NEW: Self = Self(PhantomData);
}

impl<S: BenchServer> Launch for Launcher<S> {
    fn serve_stdio(&self, backend: BackendClient) -> BoxFuture<anyhow::Result<()>> {
        Box::pin(async move {
            let running = S::new(backend).serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
            Ok(())
        })
    }

    fn http_router(&self, backend: BackendClient, config: StreamableHttpServerConfig) -> axum::Router {
        let service = StreamableHttpService::new(move || Ok(S::new(backend.clone())), Arc::new(LocalSessionManager::default()), config);
        axum::Router::new().nest_service("/mcp", service)
    }

    fn manifest_extra(&self) -> Option<serde_json::Value> {
        S::manifest_extra()
    }

    fn serve_stream(&self, backend: BackendClient, stream: tokio::io::DuplexStream) -> BoxFuture<anyhow::Result<()>> {
        Box::pin(async move {
            let running = S::new(backend).serve(stream).await?;
            running.waiting().await?;
            Ok(())
        })
    }
}

/// The arguments after a serving program's own prefix that serve `name` over stdio with its
/// backend at `backend_url` — what `pipeline serve` and `mcp-bench-server` both take. The one
/// place that spells them, for sessions, gates and tests alike.
pub fn stdio_args(name: &str, backend_url: &str) -> [String; 5] {
    [name.to_owned(), "--transport".into(), "stdio".into(), "--backend-url".into(), backend_url.to_owned()]
}

/// `prefix` (the program and any subcommand, e.g. `[pipeline, serve]`) followed by
/// [`stdio_args`].
pub fn stdio_argv(prefix: &[String], name: &str, backend_url: &str) -> Vec<String> {
    prefix.iter().cloned().chain(stdio_args(name, backend_url)).collect()
}

/// An arm served in-process over streamable HTTP on a free loopback port: its `/mcp` URL and the
/// task serving it (abort it when done).
pub async fn serve_http_in_process(entry: &crate::registry::ServerEntry, backend_url: &str) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let router = entry.launcher.http_router(BackendClient::new(backend_url), StreamableHttpServerConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let handle = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok((url, handle))
}
