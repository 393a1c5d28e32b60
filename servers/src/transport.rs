//! Running one registered server for a client: over stdio (the default; one process, one
//! session) or streamable HTTP at `http://HOST:PORT/mcp`. Logs go to stderr only.

use std::net::SocketAddr;

use anyhow::Context;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;

use crate::backend_client::BackendClient;
use crate::registry::ServerEntry;

pub use records::Transport;

/// Serves `entry` until the client disconnects (stdio) or Ctrl-C/SIGTERM (HTTP).
pub async fn serve(entry: &ServerEntry, transport: Transport, addr: SocketAddr, backend_url: &str) -> anyhow::Result<()> {
    let backend = BackendClient::new(backend_url);
    match transport {
        Transport::Stdio => entry.launcher.serve_stdio(backend).await,
        Transport::Http => {
            let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
            let local = listener.local_addr()?;
            tracing::info!(server = entry.name, "MCP over streamable HTTP at http://{local}/mcp");
            eprintln!("{} listening on http://{local}/mcp", entry.name);
            let router = entry.launcher.http_router(backend, StreamableHttpServerConfig::default());
            axum::serve(listener, router).with_graceful_shutdown(shutdown_signal()).await.context("serving MCP over HTTP")
        }
    }
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
