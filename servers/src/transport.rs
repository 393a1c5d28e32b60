//! Running one registered server for a client: over stdio (the default; one process, one
//! session) or streamable HTTP at `http://HOST:PORT/mcp`. Logs go to stderr only.

use std::net::SocketAddr;

use anyhow::Context;

use crate::backend_client::BackendClient;
use crate::launch::{ArmSettings, HttpOptions};
use crate::registry::ServerEntry;

pub use records::Transport;

/// Serves `entry` until the client disconnects (stdio) or Ctrl-C/SIGTERM (HTTP), with the HTTP
/// options of the environment ([`HttpOptions::from_env`]).
pub async fn serve(entry: &ServerEntry, transport: Transport, addr: SocketAddr, backend_url: &str) -> anyhow::Result<()> {
    serve_with(entry, transport, addr, backend_url, HttpOptions::from_env(), ArmSettings::default()).await
}

/// [`serve`] with explicit HTTP options (who may call, see [`HttpOptions`]) and the run's
/// settings (an external arm takes only a poison, and only when it relays).
pub async fn serve_with(
    entry: &ServerEntry,
    transport: Transport,
    addr: SocketAddr,
    backend_url: &str,
    options: HttpOptions,
    settings: ArmSettings,
) -> anyhow::Result<()> {
    crate::registry::check_settings(settings, &[entry.module]).map_err(|e| anyhow::anyhow!("{}: {e}", entry.name))?;
    let backend = BackendClient::new(backend_url).with_settings(settings);
    let launcher = match entry.serve {
        crate::registry::Serve::Builtin(l) => l,
        crate::registry::Serve::External(arm) => return serve_external(arm, transport, addr, backend_url, settings).await,
    };
    match transport {
        Transport::Stdio => launcher.serve_stdio(backend).await,
        Transport::Http => {
            let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
            let local = listener.local_addr()?;
            // Handlers before the line below, so a signal sent on reading it shuts down cleanly.
            let shutdown = shutdown_signal();
            tracing::info!(server = entry.name, "MCP over streamable HTTP at http://{local}/mcp");
            eprintln!("{} listening on http://{local}/mcp", entry.name);
            let router = launcher.http_router(backend, options);
            axum::serve(listener, router).with_graceful_shutdown(shutdown).await.context("serving MCP over HTTP")
        }
    }
}

/// An external arm for any client: its own command, over its own transport (a stdio arm on this
/// process's stdin/stdout; an HTTP arm on the port of `addr`, which it binds itself).
async fn serve_external(
    arm: &crate::external::ExternalArm,
    transport: Transport,
    addr: SocketAddr,
    backend_url: &str,
    settings: ArmSettings,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        transport == arm.transport,
        "{} serves over {} only (its arm.toml says so); run it with --transport {}",
        arm.name,
        arm.transport.as_str(),
        arm.transport.as_str()
    );
    let port = (transport == Transport::Http).then_some(addr.port());
    let (mut cmd, prepared) = crate::external::own_group(arm.command_with(backend_url, port, settings)?, crate::contain::Hold::Whole)
        .with_context(|| format!("starting {}", arm.name))?;
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            prepared.abandon();
            return Err(e).with_context(|| format!("starting {}", arm.name));
        }
    };
    let _contained = child.id().map(|pid| prepared.track(pid));
    if let Some(port) = port {
        eprintln!("{} listening on http://127.0.0.1:{port}{}", arm.name, arm.path);
    }
    let status = tokio::select! {
        s = child.wait() => s?,
        _ = shutdown_signal() => {
            Box::into_pin(child.kill()).await?;
            return Ok(());
        }
    };
    anyhow::ensure!(status.success(), "{} exited with {status}", arm.name);
    Ok(())
}

/// Resolves on SIGINT or SIGTERM; the handlers are installed when this is called.
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    }
}

/// Logs to stderr — stdout is the stdio transport — filtered by `RUST_LOG` (default
/// `default_filter`), with ANSI colours only on a terminal and never under `NO_COLOR`.
pub fn init_logging(default_filter: &str) {
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| default_filter.into()))
        .init();
}
