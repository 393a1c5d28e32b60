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
    /// Port to listen on (0 picks a free one).
    #[arg(long, env = "BACKEND_PORT", default_value_t = 8080)]
    pub port: u16,
    /// Seed of the synthetic world.
    #[arg(long, default_value_t = WorldSpec::default().seed)]
    pub seed: u64,
    /// Scale of the synthetic world (row counts multiply).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::seed::MAX_SCALE)))]
    pub scale: u32,
    /// Name of the world database (created as `world_<name>`, replacing any previous one).
    #[arg(long, default_value = "main")]
    pub world: String,
    /// Bearer token that allows `POST /admin/reset` from non-loopback addresses.
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

pub fn init_tracing() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,rmcp=warn".into()))
        .init();
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
    // One line on stdout a script can wait for; logs go to stderr.
    println!("backend listening on http://{addr} (seed {}, scale {})", spec.seed, spec.scale);
    let state = AppState::new(world.clone()).with_admin_token(opts.admin_token);
    crate::serve(listener, state, shutdown_signal()).await.context("serving")?;
    tracing::info!("shutting down");
    world.destroy().await.context("dropping the world database")?;
    cluster.close().await;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
