//! An MCP client session with any registered server, for listings and gates: a built-in server
//! in-process over a duplex pipe, an external arm as its own process (stdio, or streamable HTTP
//! on a free loopback port), killed with its process group when the session ends.

use std::process::Stdio;

use anyhow::Context;
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};

use crate::backend_client::BackendClient;
use crate::external::{self, ExternalArm, HttpProcess, StderrTail};
use crate::registry::{Serve, ServerEntry};

pub type Client = RunningService<RoleClient, ()>;

/// A client session with a server, and what keeps that server alive.
pub struct ArmClient {
    pub client: Client,
    keep: Keep,
}

enum Keep {
    InProcess(tokio::task::JoinHandle<anyhow::Result<()>>),
    /// The child lives inside the client's transport; the guard, held for its `Drop`, kills its
    /// group when this goes.
    Child(StderrTail, #[allow(dead_code)] Option<external::GroupGuard>),
    Http(HttpProcess),
}

impl ArmClient {
    /// Starts `entry` against the backend at `backend_url` and completes the MCP handshake.
    pub async fn open(entry: &ServerEntry, backend_url: &str) -> anyhow::Result<Self> {
        match entry.serve {
            Serve::Builtin(launcher) => {
                let (client_io, server_io) = tokio::io::duplex(1 << 20);
                let server = tokio::spawn(launcher.serve_stream(BackendClient::new(backend_url), server_io));
                let client = ().serve(client_io).await?;
                Ok(Self { client, keep: Keep::InProcess(server) })
            }
            Serve::External(arm) => open_external(arm, backend_url).await,
        }
    }

    /// Ends the session and stops the server.
    pub async fn close(self) -> anyhow::Result<()> {
        let _ = self.client.cancel().await;
        match self.keep {
            Keep::InProcess(server) => server.await??,
            Keep::Child(..) => {}
            Keep::Http(process) => process.stop().await,
        }
        Ok(())
    }

    /// What the server wrote to stderr (external arms; empty otherwise).
    pub fn stderr(&self) -> String {
        match &self.keep {
            Keep::Child(tail, _) => tail.text(),
            Keep::Http(p) => p.stderr.text(),
            Keep::InProcess(_) => String::new(),
        }
    }
}

async fn open_external(arm: &ExternalArm, backend_url: &str) -> anyhow::Result<ArmClient> {
    match arm.transport {
        records::Transport::Stdio => {
            let cmd = arm.command(backend_url, None)?;
            let (transport, stderr) =
                TokioChildProcess::builder(cmd).stderr(Stdio::piped()).spawn().with_context(|| format!("starting {} ({})", arm.name, arm.command.join(" ")))?;
            let tail = stderr.map(StderrTail::follow).unwrap_or_default();
            let group = transport.id().map(external::GroupGuard::track);
            match tokio::time::timeout(arm.startup_timeout, ().serve(transport)).await.unwrap_or_else(|_| Err(handshake_timeout(arm.startup_timeout))) {
                Ok(client) => Ok(ArmClient { client, keep: Keep::Child(tail, group) }),
                Err(e) => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    anyhow::bail!("{}: no MCP handshake over stdio ({e}){}", arm.name, stderr_note(&tail.text()))
                }
            }
        }
        records::Transport::Http => {
            let process = external::start_http(arm, backend_url).await?;
            match ().serve(StreamableHttpClientTransport::from_uri(process.url.clone())).await {
                Ok(client) => Ok(ArmClient { client, keep: Keep::Http(process) }),
                Err(e) => {
                    let tail = process.stderr.text();
                    let url = process.url.clone();
                    process.stop().await;
                    anyhow::bail!("{}: no MCP handshake at {url} ({e}){}", arm.name, stderr_note(&tail))
                }
            }
        }
    }
}

/// The error of a handshake that did not complete in time.
fn handshake_timeout(after: std::time::Duration) -> rmcp::service::ClientInitializeError {
    rmcp::service::ClientInitializeError::transport::<rmcp::transport::TokioChildProcess>(
        std::io::Error::new(std::io::ErrorKind::TimedOut, format!("no answer to the MCP handshake within {} s", after.as_secs())),
        "initialize",
    )
}

/// `; its stderr ends: …` when there is a tail to show.
pub fn stderr_note(tail: &str) -> String {
    if tail.is_empty() { String::new() } else { format!("; its stderr ends: {tail}") }
}
