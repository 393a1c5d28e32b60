//! An MCP client session with any server the bench starts. [`spawn_stdio`] is the one way a
//! server process is spawned over stdio — by the agent's sessions and by listings and gates alike:
//! in its own process group (killed whole when its [`ServerProcess`] goes), its stderr tail kept,
//! its handshake bounded. [`ArmClient`] opens a session with any registered server: a built-in one
//! in-process over a duplex pipe, an external arm as its own process (stdio, or streamable HTTP on
//! a free loopback port).

use std::process::Stdio;
use std::time::Duration;

use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};

use crate::backend_client::BackendClient;
use crate::contain::{Contained, Hold};
use crate::external::{self, ExternalArm, HttpProcess, StderrTail, stderr_note};
use crate::registry::{Serve, ServerEntry};
use crate::stdout_guard::StdoutGuard;

pub type Client = RunningService<RoleClient, rmcp::model::ClientConfig>;

/// The MCP revision every client of the bench announces in its `initialize`: the newest revision
/// that has the handshake. (The SDK's default is its newest revision, 2026-07-28, which replaced
/// `initialize` with `server/discover`; announcing it in an `initialize` asks for a handshake
/// the revision does not have.) The revision a server answered is in every session's record.
pub const PROTOCOL: rmcp::model::ProtocolVersion = rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE;

/// The MCP revision a run's clients speak (`--protocol`): the newest with the `initialize`
/// handshake (the default, [`PROTOCOL`]), or 2026-07-28, which opens with `server/discover` and
/// sends every request self-contained — over streamable HTTP, without a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
pub enum Protocol {
    #[default]
    #[serde(rename = "2025-11-25")]
    #[value(name = "2025-11-25")]
    V2025_11_25,
    #[serde(rename = "2026-07-28")]
    #[value(name = "2026-07-28")]
    V2026_07_28,
}

impl Protocol {
    /// The revision, as the spec names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// How a client of this revision opens its session.
    pub fn lifecycle(self) -> rmcp::service::ClientLifecycleMode {
        match self {
            Self::V2025_11_25 => rmcp::service::ClientLifecycleMode::Initialize,
            Self::V2026_07_28 => rmcp::service::ClientLifecycleMode::Discover { preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28] },
        }
    }
}

/// Opens a client session over `transport` speaking `protocol`.
pub async fn open_session<T, E, A>(transport: T, protocol: Protocol) -> Result<Client, rmcp::service::ClientInitializeError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    use rmcp::service::ClientServiceExt;
    config().serve_with_lifecycle(transport, protocol.lifecycle()).await
}

/// What the bench's clients say about themselves in `initialize`: [`PROTOCOL`], no
/// capabilities, and the bench's name and version.
pub fn config() -> rmcp::model::ClientConfig {
    rmcp::model::ClientConfig::new(rmcp::model::ClientCapabilities::default(), rmcp::model::Implementation::new("mcp-pattern-bench", env!("CARGO_PKG_VERSION")))
        .with_protocol_version(PROTOCOL)
}

/// A server process a client spawned: the tail of its stderr (and the harness's notes on how it
/// broke its transport), its process killed on drop, and everything it started with it.
#[derive(Default)]
pub struct ServerProcess {
    pub stderr: StderrTail,
    _child: Option<Box<dyn process_wrap::tokio::ChildWrapper>>,
    _group: Option<Contained>,
}

impl std::fmt::Debug for ServerProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerProcess").field("stderr", &self.stderr).field("group", &self._group).finish()
    }
}

/// Why a stdio server gave no session.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error("{0}")]
    Spawn(std::io::Error),
    /// The handshake failed or timed out; the text ends with the server's stderr tail.
    #[error("{0}")]
    Handshake(String),
}

/// Spawns `cmd` as an MCP server over stdio, contained ([`external::own_group`]), its stdout read
/// through a [`StdoutGuard`] (a line that is not a message, or too long for the library, ends
/// the session at once instead of being skipped), and completes the handshake within `within`.
/// `hold`: [`Hold::Whole`] for any server the bench did not write.
pub async fn spawn_stdio(cmd: tokio::process::Command, within: Duration, hold: Hold) -> Result<(Client, ServerProcess), StdioError> {
    spawn_stdio_speaking(cmd, within, hold, Protocol::default()).await
}

/// [`spawn_stdio`], the client speaking `protocol`.
pub async fn spawn_stdio_speaking(
    cmd: tokio::process::Command,
    within: Duration,
    hold: Hold,
    protocol: Protocol,
) -> Result<(Client, ServerProcess), StdioError> {
    let (mut cmd, prepared) = external::own_group(cmd, hold).map_err(StdioError::Spawn)?;
    cmd.command_mut().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            prepared.abandon();
            return Err(StdioError::Spawn(e));
        }
    };
    let group = child.id().map(|pid| prepared.track(pid));
    let stderr = child.inner_mut().stderr().take().map(StderrTail::follow).unwrap_or_default();
    let (Some(stdout), Some(stdin)) = (child.inner_mut().stdout().take(), child.inner_mut().stdin().take()) else {
        return Err(StdioError::Spawn(std::io::Error::other("the server's stdin or stdout was not piped")));
    };
    let transport = (StdoutGuard::new(stdout, stderr.clone()), stdin);
    let process = ServerProcess { stderr, _child: Some(child), _group: group };
    let e = match tokio::time::timeout(within, open_session(transport, protocol)).await {
        Ok(Ok(client)) => return Ok((client, process)),
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer to the MCP handshake within {} s", within.as_secs()),
    };
    // Let the reader catch what the process wrote before it went.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let notes = process.stderr.notes_text();
    Err(StdioError::Handshake(format!("{e}{}{}", if notes.is_empty() { String::new() } else { format!("; {notes}") }, stderr_note(&process.stderr.text()))))
}

/// A client session with a server, and what keeps that server alive.
pub struct ArmClient {
    pub client: Client,
    keep: Keep,
}

enum Keep {
    InProcess(tokio::task::JoinHandle<anyhow::Result<()>>),
    /// The child lives inside the client's transport; its group goes with the process.
    Child(ServerProcess),
    Http(HttpProcess),
}

impl ArmClient {
    /// Starts `entry` against the backend at `backend_url` and completes the MCP handshake.
    pub async fn open(entry: &ServerEntry, backend_url: &str) -> anyhow::Result<Self> {
        Self::open_with(entry, backend_url, crate::launch::ArmSettings::default()).await
    }

    /// [`Self::open`] with the run's settings (an external arm does not take them).
    pub async fn open_with(entry: &ServerEntry, backend_url: &str, settings: crate::launch::ArmSettings) -> anyhow::Result<Self> {
        match entry.serve {
            Serve::Builtin(launcher) => {
                let (client_io, server_io) = tokio::io::duplex(1 << 20);
                let server = tokio::spawn(launcher.serve_stream(BackendClient::new(backend_url).with_settings(settings), server_io));
                let client = config().serve(client_io).await?;
                Ok(Self { client, keep: Keep::InProcess(server) })
            }
            Serve::External(arm) => open_external(arm, backend_url, settings).await,
        }
    }

    /// Ends the session and stops the server.
    pub async fn close(self) -> anyhow::Result<()> {
        let _ = self.client.cancel().await;
        match self.keep {
            Keep::InProcess(server) => server.await??,
            Keep::Child(_) => {}
            Keep::Http(process) => process.stop().await,
        }
        Ok(())
    }

    /// What the server wrote to stderr (external arms; empty otherwise).
    pub fn stderr(&self) -> String {
        match &self.keep {
            Keep::Child(process) => process.stderr.report(),
            Keep::Http(p) => p.stderr.text(),
            Keep::InProcess(_) => String::new(),
        }
    }
}

async fn open_external(arm: &ExternalArm, backend_url: &str, settings: crate::launch::ArmSettings) -> anyhow::Result<ArmClient> {
    match arm.transport {
        records::Transport::Stdio => match spawn_stdio(arm.command_with(backend_url, None, settings)?, arm.startup_timeout, Hold::Whole).await {
            Ok((client, process)) => Ok(ArmClient { client, keep: Keep::Child(process) }),
            Err(StdioError::Spawn(e)) => anyhow::bail!("starting {} ({}): {e}", arm.name, arm.command.join(" ")),
            Err(StdioError::Handshake(e)) => anyhow::bail!("{}: no MCP handshake over stdio ({e})", arm.name),
        },
        records::Transport::Http => {
            let process = external::start_http(arm, backend_url, settings).await?;
            let e = match tokio::time::timeout(arm.startup_timeout, config().serve(crate::tls::http_transport(process.url.clone()))).await {
                Ok(Ok(client)) => return Ok(ArmClient { client, keep: Keep::Http(process) }),
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {} s", arm.startup_timeout.as_secs()),
            };
            let (tail, url) = (process.stderr.text(), process.url.clone());
            process.stop().await;
            anyhow::bail!("{}: no MCP handshake at {url} ({e}){}", arm.name, stderr_note(&tail))
        }
    }
}
