//! `mcp-bench-server NAME [--transport stdio|http] [--port P] [--backend-url URL]
//! [--allowed-origin O]… [--allowed-host H]… [--catalogue N]`: runs one registered server. The same as `pipeline serve`, in a small binary that starts fast (the
//! harness spawns one per session).

use std::net::{IpAddr, SocketAddr};

use clap::Parser;
use servers::backend_client::DEFAULT_BACKEND_URL;
use servers::transport::Transport;

#[derive(Debug, Parser)]
#[command(name = "mcp-bench-server", version, about = "Run one mcp-pattern-bench MCP server")]
struct Args {
    /// Server name (see `pipeline servers`).
    name: String,
    #[arg(long, value_enum, default_value = "stdio")]
    transport: Transport,
    /// Port for `--transport http` (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Address for `--transport http`.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Where the backend API answers.
    #[arg(long, env = "BACKEND_URL", default_value = DEFAULT_BACKEND_URL)]
    backend_url: String,
    /// For `--transport http`: a browser origin allowed besides loopback (`https://app.example:443`,
    /// `http://host:*`); repeatable. Requests with any other `Origin` get 403.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
    /// For `--transport http`: a `Host` accepted besides loopback (behind a proxy or in a
    /// container); repeatable.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// For a module that lists a tool catalogue (tool_search): how many tools of other systems
    /// it lists beside the backend's own (default: the module's).
    #[arg(long, value_name = "N")]
    catalogue: Option<u32>,
    /// A tool-poisoning attack's downstream description, as JSON `{server, operation, text}`:
    /// a relaying server shows `text` after that operation's description (the harness passes
    /// it under `--attack`; docs/security.md).
    #[arg(long, value_name = "JSON", value_parser = servers::launch::Poison::parse)]
    poison: Option<&'static servers::launch::Poison>,
}

fn main() -> anyhow::Result<()> {
    // Before the runtime opens its descriptors: spawned by the harness, this server holds itself.
    servers::contain::hold_self();
    tokio::runtime::Runtime::new()?.block_on(serve())
}

async fn serve() -> anyhow::Result<()> {
    servers::transport::init_logging("warn");
    let args = Args::parse();
    let Some(entry) = servers::registry::find(&args.name) else {
        anyhow::bail!("no server named {:?}; known servers: {}", args.name, servers::registry::names().join(", "));
    };
    let mut options = servers::launch::HttpOptions::from_env();
    options.allowed_origins.extend(args.allowed_origins);
    options.allowed_hosts.extend(args.allowed_hosts);
    servers::transport::serve_with(
        entry,
        args.transport,
        SocketAddr::new(args.host, args.port),
        &args.backend_url,
        options,
        servers::launch::ArmSettings { catalogue: args.catalogue, poison: args.poison },
    )
    .await
}
