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
    /// reachable through a discovery tool), to be hashed into its manifest, as a server started
    /// with `settings` offers it.
    fn manifest_extra(_settings: ArmSettings) -> Option<serde_json::Value> {
        None
    }
}

/// Type-erased launcher stored in the registry.
pub trait Launch: Sync + std::fmt::Debug {
    /// Serves one MCP session on stdin/stdout until the client disconnects.
    fn serve_stdio(&self, backend: BackendClient) -> BoxFuture<anyhow::Result<()>>;
    /// An axum router serving MCP over streamable HTTP at `/mcp` ([`http_router`]).
    fn http_router(&self, backend: BackendClient, options: HttpOptions) -> axum::Router;
    /// Serves one session over an in-process byte stream (for tests and manifests).
    fn serve_stream(&self, backend: BackendClient, stream: tokio::io::DuplexStream) -> BoxFuture<anyhow::Result<()>>;
    /// See [`BenchServer::manifest_extra`].
    fn manifest_extra(&self, settings: ArmSettings) -> Option<serde_json::Value>;
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
            // Every line from the client passes the JSON-RPC checks the SDK lacks first.
            let (server_side, relay_side) = tokio::io::duplex(1 << 20);
            let (input, output) = stdio_streams();
            let relay = tokio::spawn(crate::jsonrpc::relay(input, output, relay_side));
            let running = S::new(backend).serve(server_side).await?;
            running.waiting().await?;
            relay.await??;
            Ok(())
        })
    }

    fn http_router(&self, backend: BackendClient, options: HttpOptions) -> axum::Router {
        let service = StreamableHttpService::new(move || Ok(S::new(backend.clone())), Arc::new(LocalSessionManager::default()), options.config());
        http_router(service)
    }

    fn manifest_extra(&self, settings: ArmSettings) -> Option<serde_json::Value> {
        S::manifest_extra(settings)
    }

    fn serve_stream(&self, backend: BackendClient, stream: tokio::io::DuplexStream) -> BoxFuture<anyhow::Result<()>> {
        Box::pin(async move {
            let running = S::new(backend).serve(stream).await?;
            running.waiting().await?;
            Ok(())
        })
    }
}

type Input = std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>>;
type Output = std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>;

/// This process's stdin and stdout for a stdio session. Pipes (as every client that spawns a
/// server gives it) are read and written on the runtime's own thread, made nonblocking; anything
/// else (a terminal, a file) through tokio's stdio, which hands every read and write to a blocking
/// thread and back — two thread wake-ups a message that, on a session's chain of processes, left
/// a core idle (docs/performance.md). stdout stays blocking when stderr is the same pipe (`2>&1`):
/// the flag is the pipe's, and a log line would then fail on a full pipe instead of waiting.
fn stdio_streams() -> (Input, Output) {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let file_of = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().map(std::fs::File::from);
    let input: Input = match file_of(std::io::stdin().as_fd()).and_then(tokio::net::unix::pipe::Receiver::from_file) {
        Ok(pipe) => Box::pin(pipe),
        Err(_) => Box::pin(tokio::io::stdin()),
    };
    let identity = |f: &std::fs::File| f.metadata().ok().map(|m| (m.dev(), m.ino()));
    let shared_with_stderr = |out: &std::fs::File| {
        let err = file_of(std::io::stderr().as_fd()).ok();
        err.is_none_or(|err| identity(&err).is_none_or(|id| identity(out) == Some(id)))
    };
    let output: Output = match file_of(std::io::stdout().as_fd()) {
        Ok(out) if !shared_with_stderr(&out) => match tokio::net::unix::pipe::Sender::from_file(out) {
            Ok(pipe) => Box::pin(pipe),
            Err(_) => Box::pin(tokio::io::stdout()),
        },
        _ => Box::pin(tokio::io::stdout()),
    };
    (input, output)
}

/// Who may call a server over streamable HTTP. The MCP transport spec requires a server to
/// validate `Origin` against DNS rebinding: a browser page from another site must not reach a
/// server on the user's machine. rmcp checks `Host` (loopback only by default) and, given a
/// list, `Origin`; this makes the `Origin` check always on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// Origins allowed besides loopback (`scheme://host:port`; `:*` for any port). A request
    /// with any other `Origin` gets 403; a request without one (every non-browser client) passes.
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted (`host` or `host:port`); loopback by default. Needed behind a
    /// proxy or in a container, where the `Host` a client sends is not loopback.
    pub allowed_hosts: Vec<String>,
}

/// Origins always allowed: pages served from this machine.
pub const LOOPBACK_ORIGINS: &[&str] =
    &["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*", "https://localhost:*", "https://127.0.0.1:*", "https://[::1]:*"];

/// `Host` values accepted by default.
pub const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// Extra allowed origins, comma-separated (read by [`HttpOptions::from_env`]).
pub const ORIGINS_ENV: &str = "MCPBENCH_ALLOWED_ORIGINS";
/// Extra allowed `Host` values, comma-separated.
pub const HOSTS_ENV: &str = "MCPBENCH_ALLOWED_HOSTS";

impl Default for HttpOptions {
    fn default() -> Self {
        Self { allowed_origins: Vec::new(), allowed_hosts: LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect() }
    }
}

impl HttpOptions {
    /// The defaults plus what [`ORIGINS_ENV`] and [`HOSTS_ENV`] add (so `pipeline serve` and
    /// `mcp-bench-server` take the same settings).
    pub fn from_env() -> Self {
        let list = |var: &str| -> Vec<String> {
            std::env::var(var).unwrap_or_default().split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
        };
        let mut options = Self::default();
        options.allowed_origins.extend(list(ORIGINS_ENV));
        options.allowed_hosts.extend(list(HOSTS_ENV));
        options
    }

    /// rmcp's configuration: Origin validation enforced, loopback origins always allowed.
    pub fn config(&self) -> StreamableHttpServerConfig {
        let origins: Vec<String> = LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).chain(self.allowed_origins.iter().cloned()).collect();
        StreamableHttpServerConfig::default().with_allowed_hosts(self.allowed_hosts.clone()).with_allowed_origins(origins).enforce_origin_validation()
    }
}

/// The `Host` and `Origin` check of the streamable HTTP transport, for another HTTP service of the
/// bench (`pipeline view`): rmcp's own validation run on [`HttpOptions::config`], so both accept
/// and refuse exactly the same requests — a `Host` not allowed gets 403, a cross-site `Origin`
/// gets 403, a malformed `Host` 400, and a request without `Origin` (every non-browser client,
/// and a browser's same-origin `GET`) passes.
///
/// rmcp does not export its checks; its service runs them on every request before it looks at
/// the method, and answers a method it does not serve with 405 and nothing else. So the check is
/// asked with the request's URI, `Host` and `Origin` under such a method (`PUT`): 405 means
/// allowed. The service never creates a session or a server.
#[derive(Clone)]
pub struct HostOriginCheck {
    service: StreamableHttpService<NoServer, LocalSessionManager>,
}

impl std::fmt::Debug for HostOriginCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HostOriginCheck")
    }
}

/// The server [`HostOriginCheck`]'s service is typed with; never built.
#[derive(Debug, Clone)]
pub struct NoServer;

impl rmcp::ServerHandler for NoServer {}

impl HostOriginCheck {
    pub fn new(options: &HttpOptions) -> Self {
        let service = StreamableHttpService::new(
            || Err(std::io::Error::other("a Host/Origin check serves no MCP session")),
            Arc::new(LocalSessionManager::default()),
            options.config(),
        );
        Self { service }
    }

    /// `Ok` when the request may be served; else the status (403, or 400 for a malformed `Host`)
    /// and rmcp's reason, with where the allowed lists come from.
    pub async fn check(&self, uri: &axum::http::Uri, headers: &axum::http::HeaderMap) -> Result<(), (axum::http::StatusCode, String)> {
        use axum::http::{Method, StatusCode, header};
        let mut probe = axum::http::Request::builder().method(Method::PUT).uri(uri.clone());
        for name in [header::HOST, header::ORIGIN] {
            for value in headers.get_all(&name) {
                probe = probe.header(&name, value);
            }
        }
        let Ok(probe) = probe.body(axum::body::Body::empty()) else {
            return Err((StatusCode::BAD_REQUEST, "Bad Request: malformed request".into()));
        };
        let response = self.service.handle(probe).await;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        let body = axum::body::to_bytes(axum::body::Body::new(response.into_body()), 64 * 1024).await.unwrap_or_default();
        let mut reason = String::from_utf8_lossy(&body).trim().to_owned();
        if reason.is_empty() {
            reason = status.canonical_reason().unwrap_or("refused").to_owned();
        }
        if status == StatusCode::FORBIDDEN {
            reason.push_str(" (allowed: loopback origins and hosts; add others with --allowed-origin/--allowed-host)");
        }
        Err((status, reason))
    }
}

/// `/mcp` served by `service`, with the answers the transport spec and the official clients
/// expect where rmcp's differ:
///
/// * A session closed by `DELETE` answers 204 No Content, not 202 Accepted. The Python SDK
///   accepts 200 or 204 (and 405 for "not supported") and logs "Session termination failed:
///   202" otherwise; 202 is the answer to a notification, not to a completed deletion.
/// * An error without a JSON body (rmcp answers a forbidden `Origin` or `Host`, a missing
///   session and the like in plain text) carries a JSON-RPC error object with no id instead,
///   as the spec allows for a 403, so a client can parse every error the same way.
pub fn http_router<S>(service: S) -> axum::Router
where
    S: tower::Service<axum::extract::Request, Error = std::convert::Infallible> + Clone + Send + Sync + 'static,
    S::Response: axum::response::IntoResponse,
    S::Future: Send + 'static,
{
    axum::Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn(checked_requests)).layer(axum::middleware::from_fn(spec_answers))
}

/// The largest JSON-RPC body read over HTTP, as the stdio transport's line limit.
const MAX_BODY: usize = 16 << 20;

/// A POSTed JSON body passes [`crate::jsonrpc::check`] before the SDK reads it: not JSON is a
/// parse error (HTTP 400), `tools/call` arguments that are not an object an invalid-params error
/// (HTTP 200, the answer to that request).
async fn checked_requests(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::http::{Method, StatusCode, header};
    let json = request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"));
    if request.method() != Method::POST || !json {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            let answer = serde_json::json!({ "jsonrpc": "2.0", "id": null, "error": { "code": crate::jsonrpc::INVALID_REQUEST, "message": format!("Invalid Request: the body is over {MAX_BODY} bytes") } });
            return json_answer(StatusCode::PAYLOAD_TOO_LARGE, answer);
        }
    };
    match crate::jsonrpc::check(&bytes) {
        Ok(()) => next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await,
        Err(answer) => {
            let status = if answer["error"]["code"] == crate::jsonrpc::INVALID_PARAMS { StatusCode::OK } else { StatusCode::BAD_REQUEST };
            json_answer(status, answer)
        }
    }
}

fn json_answer(status: axum::http::StatusCode, answer: serde_json::Value) -> axum::response::Response {
    let mut response = axum::response::Response::new(axum::body::Body::from(answer.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(axum::http::header::CONTENT_TYPE, axum::http::HeaderValue::from_static("application/json"));
    response
}

async fn spec_answers(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::http::{Method, StatusCode, header};
    let is_delete = request.method() == Method::DELETE;
    let response = next.run(request).await;
    let status = response.status();
    if is_delete && status == StatusCode::ACCEPTED {
        let mut done = axum::response::Response::new(axum::body::Body::empty());
        *done.status_mut() = StatusCode::NO_CONTENT;
        return done;
    }
    let is_json = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"));
    if !status.is_client_error() && !status.is_server_error() || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024).await.map(|b| String::from_utf8_lossy(&b).trim().to_owned()).unwrap_or_default();
    let mut message = if text.is_empty() { status.canonical_reason().unwrap_or("error").to_owned() } else { text };
    if status == StatusCode::FORBIDDEN {
        message.push_str(&format!(" (allowed: loopback origins and hosts; add others with --allowed-origin/--allowed-host or {ORIGINS_ENV}/{HOSTS_ENV})"));
    }
    // -32600 Invalid Request for the client's faults, -32603 Internal error for the server's.
    let code = if status.is_client_error() { -32600 } else { -32603 };
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } }).to_string();
    parts.headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    parts.headers.remove(header::CONTENT_LENGTH);
    axum::response::Response::from_parts(parts, axum::body::Body::from(body))
}

/// What a run chooses about the world its servers front, beyond the backend's URL: the same for
/// both arms of a pair, passed to every server it starts (`--catalogue N` on a serving command
/// line), and fingerprinted. Servers that do not use a setting ignore it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArmSettings {
    /// How many tools of other, unconnected systems a catalogue-listing module's servers offer
    /// beside the backend's own operations (`None`: the module's default).
    pub catalogue: Option<u32>,
    /// A tool-poisoning attack (`--attack`, docs/security.md): text a downstream server put in
    /// the description of one of its operations, which a relaying arm passes on wherever it
    /// shows that operation's description. `None`: every downstream description as written.
    pub poison: Option<&'static Poison>,
}

/// What a poisoned downstream server says of one of its operations: `text`, appended to the
/// operation's own description. Relaying arms (a module that declares
/// [`crate::registry::ModuleEntry::relays`]) show it wherever they show that description; the
/// planted text is the attack's, never an arm's.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Poison {
    /// The downstream server, as the relaying module names it (proxy_aggregator: `repos`,
    /// `runbooks`, `deploys`).
    pub server: String,
    /// One of its operations.
    pub operation: String,
    pub text: String,
}

impl Poison {
    /// A poison that lives as long as the process: a run has one attack, and settings are
    /// copied into every server it starts.
    pub fn leak(self) -> &'static Self {
        Box::leak(Box::new(self))
    }

    /// `description` as the poisoned server gives it for `server`'s `operation`: the text
    /// appended when this is the operation poisoned, else unchanged.
    pub fn describe(poison: Option<&Self>, server: &str, operation: &str, description: &str) -> String {
        match poison {
            Some(p) if p.server == server && p.operation == operation => format!("{description} {}", p.text),
            _ => description.to_owned(),
        }
    }

    /// Parses the serving command line's `--poison` value (this type's JSON).
    pub fn parse(json: &str) -> Result<&'static Self, String> {
        serde_json::from_str::<Self>(json).map(Self::leak).map_err(|e| format!("--poison: not a poison's JSON ({{server, operation, text}}): {e}"))
    }
}

impl ArmSettings {
    /// The serving command line's flags for these settings (none for the defaults).
    pub fn args(&self) -> Vec<String> {
        let mut args = self.catalogue.map(|n| vec!["--catalogue".to_owned(), n.to_string()]).unwrap_or_default();
        if let Some(p) = self.poison {
            args.extend(["--poison".to_owned(), serde_json::to_string(p).expect("a poison serialises")]);
        }
        args
    }
}

/// The arguments after a serving program's own prefix that serve `name` over stdio with its
/// backend at `backend_url` — what `pipeline serve` and `mcp-bench-server` both take. The one
/// place that spells them, for sessions, gates and tests alike.
pub fn stdio_args(name: &str, backend_url: &str) -> [String; 5] {
    [name.to_owned(), "--transport".into(), "stdio".into(), "--backend-url".into(), backend_url.to_owned()]
}

/// [`stdio_args`] followed by the flags of `settings`.
pub fn stdio_args_with(name: &str, backend_url: &str, settings: ArmSettings) -> Vec<String> {
    stdio_args(name, backend_url).into_iter().chain(settings.args()).collect()
}

/// `prefix` (the program and any subcommand, e.g. `[pipeline, serve]`) followed by
/// [`stdio_args_with`].
pub fn stdio_argv(prefix: &[String], name: &str, backend_url: &str, settings: ArmSettings) -> Vec<String> {
    prefix.iter().cloned().chain(stdio_args_with(name, backend_url, settings)).collect()
}

/// An arm served in-process over streamable HTTP on a free loopback port: its `/mcp` URL and the
/// task serving it (abort it when done).
pub async fn serve_http_in_process(entry: &crate::registry::ServerEntry, backend_url: &str) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    serve_http_in_process_with(entry, backend_url, ArmSettings::default()).await
}

/// [`serve_http_in_process`] with the run's settings.
pub async fn serve_http_in_process_with(
    entry: &crate::registry::ServerEntry,
    backend_url: &str,
    settings: ArmSettings,
) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let launcher = entry.launcher().ok_or_else(|| std::io::Error::other(format!("{} is an external arm: it serves itself", entry.name)))?;
    let router = launcher.http_router(BackendClient::new(backend_url).with_settings(settings), HttpOptions::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let handle = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok((url, handle))
}
