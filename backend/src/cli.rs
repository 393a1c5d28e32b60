//! The serve command shared by the `backend` binary and `pipeline backend`.

use std::net::SocketAddr;

use anyhow::Context;

use crate::postgres::PostgresSource;
use crate::{AppState, Cluster, World, WorldSpec};

/// Serve the synthetic backend API.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeOpts {
    /// Address to listen on.
    #[arg(long, env = "BACKEND_HOST", default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// Port to listen on (0 picks a free one): the API, what MCP servers are given.
    #[arg(long, env = "BACKEND_PORT", default_value_t = 8080)]
    pub port: u16,
    /// Port of the control plane (`POST /admin/reset`, `GET /health`), on the same address (0
    /// picks a free one). Never give it to an MCP server: the API's own port refuses `/admin`.
    #[arg(long, env = "BACKEND_ADMIN_PORT", default_value_t = 8081)]
    pub admin_port: u16,
    /// Seed of the synthetic world.
    #[arg(long, default_value_t = WorldSpec::default().seed)]
    pub seed: u64,
    /// Scale of the synthetic world (row counts multiply).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::seed::MAX_SCALE)))]
    pub scale: u32,
    /// Name of the world database (created as `world_<name>`, replacing any previous one).
    #[arg(long, default_value = "main")]
    pub world: String,
    /// Bearer token that allows `POST /admin/reset` (on the admin port) from non-loopback addresses.
    #[arg(long, env = "BACKEND_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
}

/// Command line of the `backend` binary.
#[derive(Debug, clap::Parser)]
#[command(name = "backend", version, about = "Serve the mcp-pattern-bench synthetic backend")]
pub struct ServeArgs {
    #[command(flatten)]
    pub opts: ServeOpts,
}

/// The log filter when `RUST_LOG` is unset. `async_openai=off`: the agent decides and counts
/// retries itself and reports every answer it could not use verbatim, so async-openai's own
/// lines ("Server error: …" per failed attempt, a multi-line "failed deserialization of: …" dump
/// of an error body that is not OpenAI-shaped, such as Gemini's) would only repeat it, noisily,
/// before the one clean error line.
///
/// `rmcp::transport::async_rw=off`: when a stdio server breaks its transport (a line on stdout
/// that is not a message, or one too long), the harness ends the stream and the session's record
/// says what the line was (`servers::stdout_guard`); rmcp's own "Error reading from stream" line
/// would only repeat it, mid-progress-bar.
pub const DEFAULT_LOG_FILTER: &str = "info,rmcp=warn,rmcp::transport::async_rw=off,async_openai=off";

/// Logs to stderr, filtered by `RUST_LOG` (default [`DEFAULT_LOG_FILTER`]), coloured only when
/// [`log_colour`] says so. Shared by the `backend` binary and `pipeline`.
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(log_colour(std::io::IsTerminal::is_terminal(&std::io::stderr()), std::env::var_os("NO_COLOR").as_deref()))
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| DEFAULT_LOG_FILTER.into()))
        .init();
}

/// Whether logs get ANSI colours: only on a terminal, and never when `NO_COLOR` is set to
/// anything but the empty string (<https://no-color.org>). A log redirected to a file or a pipe
/// stays plain text.
pub fn log_colour(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    serve_until_signal(args.opts).await
}

/// Starts Postgres (or connects), seeds the world, serves until Ctrl-C or SIGTERM, then stops
/// everything it started — including the embedded cluster.
pub async fn serve_until_signal(opts: ServeOpts) -> anyhow::Result<()> {
    let source = PostgresSource::from_env().await.context("no Postgres to run on")?;
    tracing::info!("postgres: {}", source.describe());
    let result = serve_on(&source, opts).await;
    source.shutdown().context("stopping the embedded Postgres cluster")?;
    result
}

async fn serve_on(source: &PostgresSource, opts: ServeOpts) -> anyhow::Result<()> {
    let cluster = Cluster::connect(&source.admin_url()).await.context("connecting to Postgres")?;
    let spec = WorldSpec { seed: opts.seed, scale: opts.scale };
    let world = World::create(cluster.clone(), &opts.world, spec).await.context("creating the world database")?;
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::new(opts.host, opts.port)).await.with_context(|| format!("binding {}:{}", opts.host, opts.port))?;
    let addr = listener.local_addr()?;
    let admin = tokio::net::TcpListener::bind(SocketAddr::new(opts.host, opts.admin_port))
        .await
        .with_context(|| format!("binding the admin port {}:{} (--admin-port / BACKEND_ADMIN_PORT)", opts.host, opts.admin_port))?;
    let admin_addr = admin.local_addr()?;
    // Handlers first: a script that signals as soon as it reads the line below gets a clean
    // shutdown, not the default action that kills the process mid-way.
    let shutdown = shutdown_signal();
    let (stop_admin, admin_stopped) = tokio::sync::oneshot::channel::<()>();
    // One line on stdout a script can wait for (the API's URL first); logs go to stderr.
    println!("backend listening on http://{addr} (seed {}, scale {}); control plane on http://{admin_addr}", spec.seed, spec.scale);
    let state = AppState::new(world.clone()).with_admin_token(opts.admin_token);
    let control = tokio::spawn(crate::serve_control(admin, state.clone(), async move {
        let _ = admin_stopped.await;
    }));
    let served = crate::serve(listener, state, shutdown).await.context("serving");
    let _ = stop_admin.send(());
    let _ = control.await;
    served?;
    tracing::info!("shutting down");
    world.destroy().await.context("dropping the world database")?;
    cluster.close().await;
    Ok(())
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM. The handlers are installed when this is called,
/// not when the future is first polled.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
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

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::log_colour;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(log_colour(true, None));
        assert!(log_colour(true, Some(OsStr::new(""))));
        assert!(!log_colour(true, Some(OsStr::new("1"))));
        assert!(!log_colour(false, None));
        assert!(!log_colour(false, Some(OsStr::new(""))));
    }
}
