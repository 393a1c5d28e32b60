//! The agent crate's integration tests: the provider against local fakes of each API, the
//! preflight, the session loop, secrets.
//!
//! One test binary for the crate (each file a module), so the dependencies are linked once, not
//! once per file. Run one file's tests with `cargo nextest run -p agent -E 'test(/^FILE::/)'`.

mod common;
mod conformance;
mod keyless_loopback;
mod oracle_replay;
mod preflight;
mod protocol;
mod provider_extras;
mod provider_faults;
mod secrets;
mod session_loop;
mod tokenize;
mod unparseable_output;
