//! The Python venv `.ci/test-tools` installs (schemathesis, openapi-spec-validator, the MCP SDK):
//! tests that drive those real tools find it here, and fail — never skip — without it.
#![allow(dead_code)]

use std::path::PathBuf;

/// `$MCPBENCH_PYTHON`, else the venv under the workspace's `target/test-tools/`.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("MCPBENCH_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-tools/venv/bin/python");
    assert!(
        venv.exists(),
        "no Python venv at {}: run .ci/test-tools (it installs the pinned packages of .ci/python-requirements.txt), \
         or set MCPBENCH_PYTHON to a python that has them",
        venv.display()
    );
    venv
}
