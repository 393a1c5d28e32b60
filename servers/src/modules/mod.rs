//! One folder per pattern module: its pattern server, its control server, what they share.

pub mod stateful_session;
pub mod tool_orchestrator;
