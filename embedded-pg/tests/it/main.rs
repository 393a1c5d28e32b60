//! The embedded Postgres cluster's integration tests: lifecycle and probing.
//!
//! One test binary for the crate (each file a module), so the dependencies are linked once, not
//! once per file. Run one file's tests with `cargo nextest run -p embedded-pg -E 'test(/^FILE::/)'`.

mod common;
mod lifecycle;
mod probe;
