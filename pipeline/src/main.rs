//! `pipeline`: the one user-facing CLI of mcp-pattern-bench.
//!
//! Today it serves the synthetic backend (`pipeline backend`), lists and runs the MCP servers
//! (`pipeline servers`, `pipeline serve NAME`) and measures the harness's own costs
//! (`pipeline bench …`), runs experiments and reports on them (`pipeline aggregate`), and
//! scaffolds new pattern modules (`pipeline new-module NAME`).

mod aggregate_cmd;
mod bench;
mod check;
mod list_cmd;
mod new_module;
mod run;
mod servers_cmd;
mod spec;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "pipeline", version, about = "Measure what an MCP server's architecture costs an LLM agent")]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a subcommand: run an experiment (e.g. `pipeline --mcp orchestrator --k 3`).
    #[command(flatten)]
    run: run::RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the synthetic backend on DATABASE_URL or an embedded Postgres, until Ctrl-C.
    Backend(backend::cli::ServeOpts),
    /// List the MCP servers: module, role, pair, tool count, manifest hash, launch command.
    Servers(servers_cmd::ServersArgs),
    /// Run one MCP server for any MCP client (stdio by default, or streamable HTTP).
    Serve(servers_cmd::ServeArgs),
    /// List modules, servers and tasks (with oracle plan lengths per arm).
    List(list_cmd::ListArgs),
    /// Benchmarks of the harness itself (figures, not pass/fail).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Write an experiment spec (TOML) pinning the model, tasks, arms and the sha256 of every input.
    Freeze(spec::FreezeArgs),
    /// Run the gates G1–G7 against a spec and write its manifest; spends nothing.
    Check(check::CheckArgs),
    /// Check a spec, then run it (refuses, with zero sessions, when a gate fails).
    Run(check::CheckArgs),
    /// Report on an experiment: attrition, metrics with intervals, verdicts, charts, HTML.
    Aggregate(aggregate_cmd::AggregateArgs),
    /// Scaffold a new pattern module (servers, server test, an example task, registration) that
    /// compiles and passes the gates as generated.
    NewModule(new_module::NewModuleArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    backend::cli::init_tracing();
    let cli = Cli::parse();
    let Some(command) = cli.command else {
        let summary = run::run(cli.run).await?;
        run::print_summary(&summary);
        return Ok(());
    };
    match command {
        Command::Backend(opts) => backend::cli::serve_until_signal(opts).await,
        Command::Servers(args) => servers_cmd::list(args).await,
        Command::Serve(args) => servers_cmd::serve(args).await,
        Command::List(args) => list_cmd::run(args),
        Command::Bench(cmd) => bench::run(cmd).await,
        Command::Freeze(args) => spec::freeze_cmd(args).await,
        Command::Check(args) => check::check_cmd(args).await,
        Command::Run(args) => check::run_cmd(args).await,
        Command::Aggregate(args) => aggregate_cmd::run(args),
        Command::NewModule(args) => new_module::run(args),
    }
}
