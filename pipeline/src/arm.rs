//! Starting an arm for a session or a gate: a `pipeline serve NAME` child over stdio, or an
//! in-process streamable HTTP server on a free loopback port, both built by `servers::launch`.

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
            let (url, handle) = servers::launch::serve_http_in_process(server, backend_url).await?;
            Ok((ServerConnection::Http { url }, Some(handle)))
        }
    }
}

/// The argv that serves `server` over stdio with this binary.
pub fn stdio_argv(server: &ServerEntry, backend_url: &str, serve_prefix: &[String]) -> Vec<String> {
    servers::launch::stdio_argv(serve_prefix, server.name, backend_url)
}

/// The argv prefix that runs this binary's `serve` subcommand.
pub fn serve_prefix() -> std::io::Result<Vec<String>> {
    Ok(vec![std::env::current_exe()?.display().to_string(), "serve".to_owned()])
}
