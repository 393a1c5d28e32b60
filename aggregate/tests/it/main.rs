//! The aggregate crate's integration tests: reports, comparisons, verdicts and their calibration,
//! charts, HTML, schemas.
//!
//! One test binary for the crate (each file a module), so the dependencies are linked once, not
//! once per file. Run one file's tests with `cargo nextest run -p aggregate -E 'test(/^FILE::/)'`.

mod chart;
mod collateral;
mod common;
mod comparability;
mod compare;
mod coverage;
mod definitions;
mod experiment;
mod harness;
mod html;
mod plan;
mod report;
mod schema;
mod security;
mod sequential;
mod splits;
mod verdicts;
