//! The agent loop: an MCP client driving an OpenAI-compatible model (DESIGN §7).
//!
//! Not built yet: this crate holds no loop so far, and nothing in the workspace depends on it.
