//! Starting an arm for a session or a gate. A built-in server: a `pipeline serve NAME` child over
//! stdio, or an in-process streamable HTTP server on a free loopback port, both built by
//! `servers::launch`. An external arm: its own command in its own process group, with exactly
//! its declared environment — over stdio (spawned by the agent's MCP client), or over HTTP
//! (started here, on a free loopback port, for the one session). Either way the transport the
//! arm's `arm.toml` declares, whatever `--transport` says for the built-in servers.

use agent::ServerConnection;
use records::Transport;
use servers::external::HttpProcess;
use servers::registry::{Serve, ServerEntry};

/// What keeps an arm's server up for one session; stop it when the session is over.
pub enum ArmGuard {
    /// A stdio child: the agent's client owns it and kills its process group.
    None,
    InProcess(tokio::task::JoinHandle<()>),
    Process(HttpProcess),
}

impl ArmGuard {
    /// Stops the server; returns the tail of its stderr (an external HTTP arm's; else empty).
    pub async fn stop(self) -> String {
        match self {
            Self::None => String::new(),
            Self::InProcess(handle) => {
                handle.abort();
                String::new()
            }
            Self::Process(process) => {
                let tail = process.stderr.text();
                process.stop().await;
                tail
            }
        }
    }
}

/// How to reach `server` over `transport`, its backend at `backend_url`, the client speaking
/// `protocol`. `serve_prefix` is the argv that runs `pipeline serve` (this binary).
pub async fn connect(
    server: &ServerEntry,
    (transport, protocol): (Transport, servers::client::Protocol),
    backend_url: &str,
    serve_prefix: &[String],
    settings: servers::launch::ArmSettings,
) -> anyhow::Result<(ServerConnection, ArmGuard)> {
    let (conn, guard) = reach(server, transport, backend_url, serve_prefix, settings).await?;
    Ok((conn.speaking(protocol), guard))
}

async fn reach(
    server: &ServerEntry,
    transport: Transport,
    backend_url: &str,
    serve_prefix: &[String],
    settings: servers::launch::ArmSettings,
) -> anyhow::Result<(ServerConnection, ArmGuard)> {
    if let Serve::External(arm) = server.serve {
        return match arm.transport {
            Transport::Stdio => {
                let cmd = arm.command_with(backend_url, None, settings)?;
                let std = cmd.as_std();
                let argv = std::iter::once(std.get_program()).chain(std.get_args()).map(|a| a.to_string_lossy().into_owned()).collect();
                let env = std.get_envs().filter_map(|(k, v)| Some((k.to_string_lossy().into_owned(), v?.to_string_lossy().into_owned()))).collect();
                let handshake_timeout_secs = Some(arm.startup_timeout.as_secs());
                Ok((
                    ServerConnection::Stdio {
                        argv,
                        env: Some(env),
                        cwd: Some(arm.dir.display().to_string()),
                        handshake_timeout_secs,
                        bench_server: false,
                        protocol: Default::default(),
                    },
                    ArmGuard::None,
                ))
            }
            Transport::Http => {
                let process = servers::external::start_http(arm, backend_url, settings).await?;
                Ok((ServerConnection::Http { url: process.url.clone(), protocol: Default::default() }, ArmGuard::Process(process)))
            }
        };
    }
    match transport {
        Transport::Stdio => Ok((ServerConnection::bench_server(servers::launch::stdio_argv(serve_prefix, server.name, backend_url, settings)), ArmGuard::None)),
        Transport::Http => {
            let (url, handle) = servers::launch::serve_http_in_process_with(server, backend_url, settings).await?;
            Ok((ServerConnection::Http { url, protocol: Default::default() }, ArmGuard::InProcess(handle)))
        }
    }
}

/// The argv prefix that runs this binary's `serve` subcommand.
pub fn serve_prefix() -> std::io::Result<Vec<String>> {
    Ok(vec![std::env::current_exe()?.display().to_string(), "serve".to_owned()])
}
