//! The tools `.ci/test-tools` installs that tests drive: the Python venv (the official MCP
//! Python SDK) and the MCP Inspector CLI. Tests that need one fail — never skip — without it.
#![allow(dead_code)]

use std::path::PathBuf;

fn installed(relative: &str, what: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-tools").join(relative);
    assert!(path.exists(), "no {what} at {}: run .ci/test-tools", path.display());
    path
}

/// `$MCPBENCH_PYTHON`, else the venv's python (with the pinned `mcp` package).
pub fn python() -> PathBuf {
    match std::env::var_os("MCPBENCH_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => installed("venv/bin/python", "Python venv (run .ci/test-tools, or set MCPBENCH_PYTHON)"),
    }
}

/// The MCP Inspector CLI (`@modelcontextprotocol/inspector`, pinned in tests/inspector/).
pub fn inspector() -> PathBuf {
    installed("inspector/node_modules/.bin/mcp-inspector", "MCP Inspector CLI")
}
