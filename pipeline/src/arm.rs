//! Starting an arm for a session or a gate: a `pipeline serve NAME` child over stdio, or an
//! in-process streamable HTTP server on a free loopback port. The one place that knows how.

use agent::ServerConnection;
use records::Transport;
use servers::registry::ServerEntry;

/// How to reach `server` over `transport`, its backend at `backend_url`. `serve_prefix` is the
/// argv that runs `pipeline serve` (this binary). The returned task, if any, is the in-process
/// HTTP server: abort it when the session is over.
pub async fn connect(
    server: &ServerEntry,
    transport: Transport,
    backend_url: &str,
    serve_prefix: &[String],
) -> std::io::Result<(ServerConnection, Option<tokio::task::JoinHandle<()>>)> {
    match transport {
        Transport::Stdio => Ok((ServerConnection::Stdio { argv: stdio_argv(server, backend_url, serve_prefix) }, None)),
        Transport::Http => {
            let router = server.launcher.http_router(servers::BackendClient::new(backend_url), Default::default());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let url = format!("http://{}/mcp", listener.local_addr()?);
            let handle = tokio::spawn(async move {
                let _ = axum::serve(listener, router).await;
            });
            Ok((ServerConnection::Http { url }, Some(handle)))
        }
    }
}

/// The argv that serves `server` over stdio.
pub fn stdio_argv(server: &ServerEntry, backend_url: &str, serve_prefix: &[String]) -> Vec<String> {
    let mut argv = serve_prefix.to_vec();
    argv.extend([server.name.to_owned(), "--transport".into(), "stdio".into(), "--backend-url".into(), backend_url.to_owned()]);
    argv
}

/// The argv prefix that runs this binary's `serve` subcommand.
pub fn serve_prefix() -> std::io::Result<Vec<String>> {
    Ok(vec![std::env::current_exe()?.display().to_string(), "serve".to_owned()])
}
