//! The pipeline's integration tests: the CLI end to end, runs, gates, experiments, the viewer,
//! external arms, deployment files, traces.
//!
//! One test binary for the crate (each file a module), so the dependencies are linked once, not
//! once per file. Run one file's tests with `cargo nextest run -p pipeline -E 'test(/^FILE::/)'`.

mod attacks;
mod cli;
mod common;
mod deploy;
mod dialects;
mod experiments;
mod external_arms;
mod fail_closed;
mod gold;
mod held_out;
mod layers;
mod local_endpoint;
mod new_module;
mod oracle_tokens;
mod otlp;
mod protocol;
mod regrade;
mod report_browser;
mod run;
mod sequential;
mod shards;
mod sim;
mod spec_gates;
mod view;
mod warm;
