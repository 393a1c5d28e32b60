//! The agent's side of MCP: connect to an arm's server, turn what it offers into the function
//! definitions a model sees, and execute a model's function call through the server.
//!
//! A model can only call functions, so when a server offers resources the agent adds two generic
//! functions of its own, the same for every server: [`LIST_RESOURCES`] and [`READ_RESOURCE`].

use std::time::Instant;

use rmcp::RoleClient;
use rmcp::model::Tool;
use rmcp::service::RunningService;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::record::{CallKind, Offered};
pub use servers::client::Protocol;

pub use servers::offered::{LIST_RESOURCES, READ_RESOURCE, function_definition};

pub type Client = RunningService<RoleClient, rmcp::model::ClientConfig>;

/// How to reach an arm's server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerConnection {
    /// Spawn this command; MCP over its stdin/stdout. The process runs in its own process group,
    /// killed whole when the session ends; its stderr is kept (the tail) for the record.
    Stdio {
        argv: Vec<String>,
        /// The whole environment of the process (an external arm's declared one); `None`
        /// inherits this process's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        env: Option<Vec<(String, String)>>,
        /// Its working directory; `None` keeps this process's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// How long the handshake may take; `None`: [`HANDSHAKE_TIMEOUT`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handshake_timeout_secs: Option<u64>,
        /// The bench's own server binary (`pipeline serve`, which starts no process): held by
        /// its process group alone. Any other command is held whole — everything it starts,
        /// whatever it does (servers::contain).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        bench_server: bool,
        /// The MCP revision the client speaks (`--protocol`).
        #[serde(default, skip_serializing_if = "Protocol::is_default")]
        protocol: Protocol,
    },
    /// Streamable HTTP at this URL.
    Http {
        url: String,
        /// The MCP revision the client speaks (`--protocol`).
        #[serde(default, skip_serializing_if = "Protocol::is_default")]
        protocol: Protocol,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("could not start the MCP server `{command}`: {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error("the MCP server did not complete the handshake: {0}")]
    Handshake(String),
    #[error("listing the server's tools failed: {0}")]
    List(String),
}

impl ServerConnection {
    /// A plain command, inheriting this process's environment and working directory.
    pub fn stdio(argv: Vec<String>) -> Self {
        Self::Stdio { argv, env: None, cwd: None, handshake_timeout_secs: None, bench_server: false, protocol: Protocol::default() }
    }

    /// The bench's own server binary, run as `argv` ([`ServerConnection::Stdio::bench_server`]).
    pub fn bench_server(argv: Vec<String>) -> Self {
        Self::Stdio { argv, env: None, cwd: None, handshake_timeout_secs: None, bench_server: true, protocol: Protocol::default() }
    }

    /// This connection, the client speaking `protocol`.
    pub fn speaking(mut self, p: Protocol) -> Self {
        match &mut self {
            Self::Stdio { protocol, .. } | Self::Http { protocol, .. } => *protocol = p,
        }
        self
    }
}

/// How long a server may take to answer the MCP handshake, unless its connection says.
pub const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Connects to the server; over stdio, spawns it (in its own process group) and keeps its
/// stderr tail. Over HTTP the process, if any, is the caller's.
pub async fn connect(conn: &ServerConnection) -> Result<(Client, ServerProcess), ConnectError> {
    match conn {
        ServerConnection::Stdio { argv, env, cwd, handshake_timeout_secs, bench_server, protocol } => {
            let (program, args) = argv.split_first().ok_or_else(|| ConnectError::Handshake("empty server command".into()))?;
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args);
            if let Some(env) = env {
                cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
            }
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            let within = handshake_timeout_secs.map_or(HANDSHAKE_TIMEOUT, std::time::Duration::from_secs);
            let hold = if *bench_server { servers::contain::Hold::Group } else { servers::contain::Hold::Whole };
            servers::client::spawn_stdio_speaking(cmd, within, hold, *protocol).await.map_err(|e| match e {
                servers::client::StdioError::Spawn(source) => ConnectError::Spawn { command: argv.join(" "), source },
                servers::client::StdioError::Handshake(text) => ConnectError::Handshake(text),
            })
        }
        ServerConnection::Http { url, protocol } => {
            let client = tokio::time::timeout(HANDSHAKE_TIMEOUT, servers::client::open_session(servers::tls::http_transport(url.clone()), *protocol))
                .await
                .map_err(|_| ConnectError::Handshake(format!("no answer to the MCP handshake within {} s", HANDSHAKE_TIMEOUT.as_secs())))?
                .map_err(|e| ConnectError::Handshake(e.to_string()))?;
            Ok((client, ServerProcess::default()))
        }
    }
}

/// How a session reaches its arm's server: connect now, or a server the run already started and
/// took through the handshake (the next session's, made ready while one runs), or the failure
/// of that start, reported by the session as it would its own.
#[derive(Debug)]
pub enum Reach {
    Connect(ServerConnection),
    Started(Client, ServerProcess),
    Failed(ConnectError),
}

impl From<&ServerConnection> for Reach {
    fn from(conn: &ServerConnection) -> Self {
        Self::Connect(conn.clone())
    }
}

impl From<ServerConnection> for Reach {
    fn from(conn: ServerConnection) -> Self {
        Self::Connect(conn)
    }
}

impl Reach {
    /// Starts the server now and takes it through the handshake.
    pub async fn start(conn: &ServerConnection) -> Self {
        match connect(conn).await {
            Ok((client, process)) => Self::Started(client, process),
            Err(e) => Self::Failed(e),
        }
    }

    /// The connected client, connecting first if the run did not.
    pub async fn connect(self) -> Result<(Client, ServerProcess), ConnectError> {
        match self {
            Self::Connect(conn) => connect(&conn).await,
            Self::Started(client, process) => Ok((client, process)),
            Self::Failed(e) => Err(e),
        }
    }
}

pub use servers::client::ServerProcess;
pub use servers::external::StderrTail;

/// The `serverInfo` the server gave in its handshake.
pub fn server_info(client: &Client) -> Option<records::ServerInfo> {
    let peer = client.peer_info()?;
    let info = peer.server_info.as_ref()?;
    Some(records::ServerInfo { name: info.name.clone(), version: info.version.clone(), protocol_version: Some(peer.protocol_version.to_string()) })
}

/// What the model is offered: OpenAI-style function definitions, and their names — the arm's
/// own, and any distractors the client lists beside them.
#[derive(Debug, Clone)]
pub struct Toolbox {
    pub definitions: Vec<Value>,
    pub offered: Offered,
    /// The arm's own definitions, in its order (`definitions` without the distractors).
    pub own: Vec<Value>,
    pub distractors: servers::distractors::Distractors,
}

impl Toolbox {
    /// Lists the server's tools (whether it has resources, and its resource templates) and
    /// builds the definitions ([`servers::offered`]).
    pub async fn from_server(client: &Client) -> Result<Self, ConnectError> {
        let (tools, resources) = servers::offered::of_server(client).await.map_err(|e| ConnectError::List(e.to_string()))?;
        Ok(Self::build(&tools, resources.as_deref()))
    }

    /// The definitions of `tools`, with the resource functions when `resources` (the server's
    /// templates) is given.
    pub fn build(tools: &[Tool], resources: Option<&[rmcp::model::ResourceTemplate]>) -> Self {
        let own = servers::offered::definitions(tools, resources);
        Self::listed(own, resources.is_some(), servers::distractors::Distractors::none())
    }

    /// This toolbox with `distractors` listed around the arm's own functions (where they go:
    /// [`servers::distractors`]); with none, unchanged.
    pub fn beside(self, distractors: &servers::distractors::Distractors) -> Self {
        Self::listed(self.own, self.offered.resource_functions, distractors.clone())
    }

    fn listed(own: Vec<Value>, resource_functions: bool, distractors: servers::distractors::Distractors) -> Self {
        let definitions = distractors.around(own.clone());
        let functions = definitions.iter().filter_map(|d| d["function"]["name"].as_str().map(str::to_owned)).collect();
        let definitions_bytes = crate::tokens::definitions_bytes(&definitions);
        let distractors_bytes = crate::tokens::definitions_bytes(distractors.definitions());
        let offered = Offered { functions, resource_functions, definitions_bytes, distractors: distractors.len(), distractors_bytes };
        Self { definitions, offered, own, distractors }
    }

    pub fn offers(&self, name: &str) -> bool {
        self.offered.functions.iter().any(|f| f == name)
    }

    /// What the client answers a call to distractor `name`; `None` when `name` is not one.
    pub fn refusal(&self, name: &str) -> Option<String> {
        self.distractors.refusal(name)
    }
}

/// The outcome of executing one function call through MCP.
#[derive(Debug, Clone)]
pub struct CallResult {
    pub kind: CallKind,
    pub text: String,
    pub is_error: bool,
    pub latency_ms: f64,
}

/// A transport-level failure: the session cannot go on.
#[derive(Debug, thiserror::Error)]
#[error("MCP transport failed during {name}: {detail}")]
pub struct TransportError {
    pub name: String,
    pub detail: String,
}

/// Executes `name(arguments)` through the server (as [`tasks::call`] turns results into text,
/// so the oracle counts what a model reads). Tool errors and failed reads come back as
/// `is_error` results for the model; only a broken transport is an `Err`.
pub async fn execute(client: &Client, name: &str, arguments: &Value) -> Result<CallResult, TransportError> {
    let started = Instant::now();
    let (kind, result) = match name {
        LIST_RESOURCES => (CallKind::ListResources, tasks::call::list_resources(client).await),
        READ_RESOURCE => {
            let Some(uri) = arguments.get("uri").and_then(Value::as_str) else {
                return Ok(CallResult { kind: CallKind::ReadResource, text: "read_resource needs a string `uri`".into(), is_error: true, latency_ms: 0.0 });
            };
            (CallKind::ReadResource, tasks::call::read_resource(client, uri).await)
        }
        tool => (CallKind::Tool, tasks::call::call_tool(client, tool, arguments.as_object().cloned().unwrap_or_default()).await),
    };
    let result = result.map_err(|e| TransportError { name: name.to_owned(), detail: e.to_string() })?;
    Ok(CallResult { kind, text: result.text, is_error: result.is_error, latency_ms: started.elapsed().as_secs_f64() * 1000.0 })
}
