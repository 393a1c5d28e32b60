//! `pipeline`: the one user-facing CLI of mcp-pattern-bench.
//!
//! Today it serves the synthetic backend (`pipeline backend`) and measures the harness's own
//! costs (`pipeline bench reset|embedded`). Later issues add the servers, tasks, runs and reports.

mod bench;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "pipeline", version, about = "Measure what an MCP server's architecture costs an LLM agent")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the synthetic backend on DATABASE_URL or an embedded Postgres, until Ctrl-C.
    Backend(backend::cli::ServeOpts),
    /// Benchmarks of the harness itself (figures, not pass/fail).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    backend::cli::init_tracing();
    match Cli::parse().command {
        Command::Backend(opts) => backend::cli::serve_until_signal(opts).await,
        Command::Bench(cmd) => bench::run(cmd).await,
    }
}
