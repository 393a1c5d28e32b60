//! The MCP servers: five pattern servers and their plain controls (DESIGN §5).
//!
//! Not built yet: this crate holds no server so far, and nothing in the workspace depends on it.
//! It exists so the workspace layout matches the design from the first commit.
