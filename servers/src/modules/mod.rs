//! One folder per pattern module: its pattern server, its control server, what they share.

pub mod proxy_aggregator;
pub mod tool_orchestrator;
