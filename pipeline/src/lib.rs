//! The pipeline of mcp-pattern-bench, behind the `pipeline` CLI: it serves the synthetic backend
//! and the MCP servers, plans and runs experiments, gates specs, reports, benchmarks the harness
//! and scaffolds new pattern modules.
//!
//! A run goes: flags or a spec → [`plan::RunPlan`] (typed; both front doors lower into it) →
//! [`run::run`] (providers, endpoint preflight, the experiment lock and resume decision in
//! [`experiment`], a worker pool running [`session::run_one`]) → records under
//! `results/<exp>/`. Specs pass the [`gates`] first ([`check`]). `pipeline aggregate` turns the
//! records into a report.

pub mod aggregate_cmd;
pub mod arm;
pub mod bench;
pub mod build_info;
pub mod calibrate_cmd;
pub mod check;
pub mod cli;
pub mod exit;
pub mod experiment;
pub mod flags;
pub mod gates;
pub mod held_out;
pub mod invoked;
pub mod list_cmd;
pub mod listing;
pub mod new_module;
pub mod otlp;
pub mod plan;
pub mod redact;
pub mod run;
pub mod servers_cmd;
pub mod session;
pub mod shard;
pub mod signals;
pub mod spec;
pub mod sweep;
pub mod view;
