//! The MCP servers' integration tests: each module's two arms over both transports, the sandbox,
//! the tool manifests, and real MCP clients.
//!
//! One test binary for the crate (each file a module), so the dependencies are linked once, not
//! once per file. Run one file's tests with `cargo nextest run -p servers -E 'test(/^FILE::/)'`.

mod clients;
mod code_execution;
mod common;
mod conformance;
mod domain_adapter;
mod held;
mod manifest;
mod parity;
mod proxy_aggregator;
mod registry;
mod resource_gateway;
mod sandbox;
mod stateful_session;
mod tool_orchestrator;
mod tool_search;
