//! One folder per pattern module: its pattern server, its control server, what they share.

pub mod code_execution;
pub mod domain_adapter;
pub mod proxy_aggregator;
pub mod resource_gateway;
pub mod stateful_session;
pub mod tool_orchestrator;
pub mod tool_search;
