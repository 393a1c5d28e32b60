//! The command line: one subcommand a module, dispatched here; errors become one clean message
//! and an exit code a script can trust (`exit.rs`), whatever `RUST_BACKTRACE` says.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::exit::{Exit, Reported};
use crate::input::flags;

pub(crate) mod aggregate;
pub(crate) mod bench;
pub(crate) mod calibrate;
pub(crate) mod check;
pub(crate) mod freeze;
pub(crate) mod list;
pub(crate) mod new_module;
pub(crate) mod regrade;
pub(crate) mod seal;
pub(crate) mod servers;
pub(crate) mod sweep;
pub(crate) mod sweep_attacks;
pub mod view;

#[derive(Debug, Parser)]
#[command(name = "pipeline", version = crate::build_info::VERSION, about = "Measure what an MCP server's architecture costs an LLM agent")]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Folder of external arms: each subfolder with an `arm.toml` is an MCP server the bench can
    /// run (`--mcp NAME`). Default: ./arms, else this checkout's arms/. With a subcommand, give it
    /// after the subcommand (`pipeline servers --arms-dir DIR`).
    #[arg(long, global = true, env = "MCPBENCH_ARMS_DIR")]
    arms_dir: Option<std::path::PathBuf>,
    /// Without a subcommand: run an experiment (e.g. `pipeline --mcp orchestrator --k 3`).
    #[command(flatten)]
    run: flags::RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the synthetic backend on DATABASE_URL or an embedded Postgres, until Ctrl-C.
    Backend(backend::cli::ServeOpts),
    /// List the MCP servers: module, role, pair, tool count, manifest hash, launch command.
    Servers(servers::ServersArgs),
    /// Run one MCP server for any MCP client (stdio by default, or streamable HTTP).
    Serve(servers::ServeArgs),
    /// List modules, servers and tasks (with oracle plan lengths per arm).
    List(list::ListArgs),
    /// Benchmarks of the harness itself (figures, not pass/fail).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Write an experiment spec (TOML) pinning the model, tasks, arms and the sha256 of every input.
    Freeze(freeze::FreezeArgs),
    /// Run the gates G1–G7 against a spec and record them in check.json; spends nothing.
    Check(check::CheckArgs),
    /// Check a spec, then run it (refuses, with zero sessions, when a gate fails).
    Run(check::CheckArgs),
    /// Report on an experiment: attrition, metrics with intervals, verdicts, charts, HTML.
    Aggregate(aggregate::AggregateArgs),
    /// Check the report's intervals and verdicts against a known truth: simulated experiments
    /// from populations with planted effects, analysed by the report's own code (coverage, false
    /// verdicts, power, flip rate; docs/calibration/).
    Calibrate(calibrate::CalibrateArgs),
    /// Grade an experiment's sessions again with the current verifiers and graders, over the
    /// final states their transcripts kept: no model call (docs/regrade.md).
    Regrade(regrade::RegradeArgs),
    /// Run one module over a series of world scales (`--scale 1,2,4,8`), each level its own
    /// experiment, and report where the pattern starts to pay.
    Sweep(Box<sweep::SweepArgs>),
    /// Seal the held-out tasks, their servers' tool manifests and the graders' gold set by hash
    /// (`--reason` required to write; `--check` only compares).
    Seal(seal::SealArgs),
    /// A local web app over the results folder: every experiment and sweep with its plan, status
    /// and headline, live while a run writes it; reports, sessions as conversations, and two
    /// experiments compared. Reads only (docs/view.md).
    View(view::ViewArgs),
    /// Scaffold a new pattern module (servers, server test, an example task, registration) that
    /// compiles and passes the gates as generated.
    NewModule(new_module::NewModuleArgs),
}

/// Parses the command line, runs it on a runtime suited to it, and turns the outcome into the
/// process's exit code.
pub fn main() -> ExitCode {
    // First: a server the harness spawned holds itself before it opens a descriptor of its own.
    ::servers::contain::hold_self();
    backend::cli::init_tracing();
    // What a server orphans comes here rather than to init, to be killed (servers::contain).
    ::servers::contain::become_subreaper();
    let cli = Cli::parse();
    // A built-in server serving one stdio session (the child every stdio session spawns) runs on
    // one thread: its relay, its MCP service and its backend client wake one another at every
    // message, and on a thread pool each wake-up is a hop between threads — on a session's chain
    // of processes, a core left idle (docs/performance.md). Everything else: a thread pool.
    let one_session = builtin_serve(&cli).is_some_and(|a| a.transport == ::servers::transport::Transport::Stdio);
    let runtime = if one_session { tokio::runtime::Builder::new_current_thread() } else { tokio::runtime::Builder::new_multi_thread() }.enable_all().build();
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return Exit::Refused.into();
        }
    };
    runtime.block_on(run(cli))
}

/// `serve NAME` of a built-in server: the child spawned for every stdio session. (An external
/// arm's name is not registered yet when this is asked, so it is never one.)
fn builtin_serve(cli: &Cli) -> Option<&servers::ServeArgs> {
    match &cli.command {
        Some(Command::Serve(a)) if ::servers::registry::find(&a.name).is_some() => Some(a),
        _ => None,
    }
}

async fn run(cli: Cli) -> ExitCode {
    let outcome = dispatch(cli).await;
    crate::listing::shutdown().await;
    // However the command ended, no external arm's server outlives it.
    ::servers::external::kill_all_groups();
    match outcome {
        Ok(exit) => exit.into(),
        Err(e) if e.is::<Reported>() => Exit::Refused.into(),
        Err(e) => {
            eprintln!("error: {e:#}");
            Exit::Refused.into()
        }
    }
}

/// The external arms folder: the flag or variable, else `./arms`, else this checkout's. A folder
/// given that is not one is refused: read as empty, a mistyped path would only surface later as
/// "no server named …".
fn arms_dir(given: Option<std::path::PathBuf>) -> anyhow::Result<std::path::PathBuf> {
    match given {
        Some(dir) if !dir.is_dir() => {
            anyhow::bail!(
                "--arms-dir (or MCPBENCH_ARMS_DIR) {}: no such folder; give the folder that holds your arms' folders, each with an arm.toml",
                dir.display()
            )
        }
        Some(dir) => Ok(dir),
        None => {
            let local = std::path::PathBuf::from("arms");
            Ok(if local.is_dir() { local } else { std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../arms") })
        }
    }
}

async fn dispatch(cli: Cli) -> anyhow::Result<Exit> {
    // Reading the arms hashes their folders: the child that serves a built-in server for one
    // session (`serve NAME`, spawned for every stdio session) and the backend need none of it.
    let builtin_serve = builtin_serve(&cli).is_some();
    if !matches!(&cli.command, Some(Command::Backend(_) | Command::Serve(_) | Command::View(_))) {
        // Those three stop gracefully on a signal of their own; everything else may start an
        // external server and must kill it on the way out, however early.
        crate::signals::install();
    }
    // The viewer starts no server and reads no arm; calibrate runs no session, regrade no arm.
    if !builtin_serve && !matches!(&cli.command, Some(Command::Backend(_) | Command::View(_) | Command::Calibrate(_) | Command::Regrade(_))) {
        let dir = arms_dir(cli.arms_dir)?;
        ::servers::registry::register_external(::servers::external::discover(&dir)?)?;
    }
    let Some(command) = cli.command else {
        let plan = crate::plan::RunPlan::from_flags(&cli.run).await?;
        let summary = crate::run::run(plan, |_| Ok(())).await?;
        crate::run::print_summary(&summary);
        return Ok(summary.exit());
    };
    let done = |r: anyhow::Result<()>| r.map(|()| Exit::Ok);
    match command {
        Command::Backend(opts) => done(backend::cli::serve_until_signal(opts).await),
        Command::Servers(args) => done(servers::list(args).await),
        Command::Serve(args) => done(servers::serve(args).await),
        Command::List(args) => done(list::run(args)),
        Command::Bench(cmd) => done(bench::run(cmd).await),
        Command::Freeze(args) => done(freeze::freeze_cmd(args).await),
        Command::Check(args) => check::check_cmd(args).await,
        Command::Run(args) => check::run_cmd(args).await,
        Command::Aggregate(args) => done(aggregate::run(args)),
        Command::Sweep(args) => sweep::run(*args).await,
        Command::Regrade(args) => regrade::run(args).await,
        Command::Calibrate(args) => calibrate::run(args),
        Command::Seal(args) => seal::seal_cmd(args).await,
        Command::NewModule(args) => done(new_module::run(args)),
        Command::View(args) => done(view::run(args).await),
    }
}
