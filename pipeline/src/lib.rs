//! The pipeline of mcp-pattern-bench, behind the `pipeline` CLI: it serves the synthetic backend
//! and the MCP servers, plans and runs experiments, gates specs, reports, benchmarks the harness
//! and scaffolds new pattern modules.
//!
//! A run goes: flags or a spec ([`input`]) → one lowering into the typed [`plan::RunPlan`]
//! ([`plan`]) → `run::run` (providers, endpoint preflight, the experiment lock and resume
//! decision in [`experiment`], a worker pool running `session::run_one` on a shared
//! `context::RunContext`) → records under `results/<exp>/`. Specs pass the gates first
//! (`pipeline check`, `gates.rs`). `pipeline aggregate` turns the records into a report.
//!
//! The modules are layered, and each uses only those below it (`tests/it/layers.rs` holds the
//! order, and fails on an import that points up):
//!
//! 1. [`commands`]: the command line and one module per subcommand (`commands/view/` the viewer).
//! 2. Execution: `run` → `session` → `context` → `sequential` (a sequential run's looks);
//!    `gates`; [`experiment`] (the results folder: lock, manifest, resume).
//! 3. [`plan`]: the typed plan, and the lowering of both front doors into it.
//! 4. [`input`] (the front doors: run flags, experiment specs) and [`held_out`] (the seal).
//! 5. Shared below everything: [`gold`] (the graders' hand-graded answers), [`grading`] (the versions an outcome is graded under), [`split`], `shard`, `budget` (a run's hard budget), [`otlp`], `listing`, `arm`, `signals`,
//!    `redact`, `invoked`, `build_info`, `exit`.
//!
//! What the integration tests and the binary use is `pub`; the rest is crate-private (its
//! documentation: `cargo doc -p pipeline --document-private-items`).

pub mod commands;

pub(crate) mod context;
pub mod experiment;
pub(crate) mod gates;
pub(crate) mod run;
pub(crate) mod sequential;
pub(crate) mod session;

pub mod plan;

pub mod held_out;
pub mod input;

pub mod gold;
pub mod grading;

pub(crate) mod arm;
pub(crate) mod budget;
pub(crate) mod build_info;
pub(crate) mod exit;
pub(crate) mod invoked;
pub(crate) mod listing;
pub mod otlp;
pub(crate) mod redact;
pub(crate) mod shard;
pub(crate) mod signals;
pub mod split;
