//! The backend's integration tests: worlds, bad input, concurrency, logs, resources, and the
//! OpenAPI conformance fuzzing.
//!
//! One test binary for the crate (each file a module), so the dependencies are linked once, not
//! once per file. Run one file's tests with `cargo nextest run -p backend -E 'test(/^FILE::/)'`.

mod bad_input;
mod common;
mod concurrency;
mod conformance;
mod logs;
mod resources;
mod rewind;
mod worlds;
