//! The agent's MCP client under the MCP project's official conformance suite
//! (`@modelcontextprotocol/conformance`, pinned with the Node.js 22 it needs in
//! servers/tests/conformance/, installed by .ci/test-tools): every client scenario of the pinned
//! suite, the client being `agent-conformance-client` — a session's connect, listing and calls,
//! nothing specific to a scenario. A scenario it fails fails this test unless
//! servers/tests/conformance/expected-failures.toml names it under `[[client]]` with its reason;
//! a named scenario it passes fails it too.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    scenarios: Vec<String>,
    /// What the client's error output, or a failed check, says in each of these scenarios.
    fails_with: String,
    reason: String,
}

#[derive(Debug, serde::Deserialize)]
struct ExpectedFile {
    client: Vec<Expected>,
}

fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../servers/tests/conformance")
}

#[test]
fn the_agents_client_passes_the_official_conformance_suite_but_for_its_explained_failures() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-tools/conformance/node_modules");
    let (node, script) = (root.join(".bin/node"), root.join("@modelcontextprotocol/conformance/dist/index.js"));
    assert!(node.exists() && script.exists(), "no MCP conformance suite at {}: run .ci/test-tools", root.display());
    let text = std::fs::read_to_string(conformance_dir().join("expected-failures.toml")).unwrap();
    let expected = toml::from_str::<ExpectedFile>(&text).unwrap().client;
    let mut baseline = String::from("client:\n");
    for e in &expected {
        assert!(e.reason.split_whitespace().count() >= 10, "{:?}: give the reason they are expected to fail", e.scenarios);
        for s in &e.scenarios {
            baseline.push_str(&format!("  - {s}\n"));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("baseline.yaml"), baseline).unwrap();
    let started = Instant::now();
    let mut child = Command::new(&node)
        .arg(&script)
        .args(["client", "--suite", "all", "--command", env!("CARGO_BIN_EXE_agent-conformance-client"), "--expected-failures"])
        .arg(dir.path().join("baseline.yaml"))
        .arg("-o")
        .arg(dir.path().join("results"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut waited = Duration::ZERO;
    while child.try_wait().unwrap().is_none() {
        if waited > Duration::from_secs(300) {
            child.kill().unwrap();
            panic!("the conformance suite ran past 300 s");
        }
        std::thread::sleep(Duration::from_millis(100));
        waited += Duration::from_millis(100);
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "unexpected failures, or stale entries in expected-failures.toml:\n{stdout}\n{stderr}");
    // Every scenario ran, and the ones the client passes include the two a session relies on.
    let ran: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("✓ ").or_else(|| l.strip_prefix("✗ "))).collect();
    let listed: usize = expected.iter().map(|e| e.scenarios.len()).sum();
    assert!(ran.len() > listed, "{stdout}");
    // Each expected failure failed as the file says it does: the client's own error output, or
    // what the suite's checks said, names it.
    let results = dir.path().join("results");
    for e in &expected {
        for scenario in &e.scenarios {
            let said = what_the_scenario_said(&results, scenario);
            assert!(said.contains(&e.fails_with), "{scenario} was expected to fail with {:?}; it said:\n{said}", e.fails_with);
        }
    }
    for must_pass in ["initialize", "tools_call"] {
        assert!(stdout.lines().any(|l| l.starts_with(&format!("✓ {must_pass}:"))), "{must_pass} did not pass:\n{stdout}");
    }
    eprintln!("conformance suite, client: {} scenarios in {:.1} s", ran.len(), started.elapsed().as_secs_f64());
}

/// The failed checks' messages and the client's stderr of `scenario`'s run (the suite writes
/// `<results>/<scenario>-<time>/`, `auth/…` scenarios under `auth/`).
fn what_the_scenario_said(results: &std::path::Path, scenario: &str) -> String {
    let (parent, name) = match scenario.rsplit_once('/') {
        Some((p, n)) => (results.join(p), n),
        None => (results.to_owned(), scenario),
    };
    let run = std::fs::read_dir(&parent)
        .unwrap_or_else(|e| panic!("{}: {e}", parent.display()))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().and_then(|f| f.to_str()).and_then(|f| f.strip_prefix(name)).is_some_and(|rest| rest.starts_with("-2")))
        .unwrap_or_else(|| panic!("no results of {scenario} in {}", parent.display()));
    let checks: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(run.join("checks.json")).unwrap_or_default()).unwrap_or_default();
    let mut said: Vec<String> = checks
        .iter()
        .filter(|c| c["status"] == "FAILURE" || c["status"] == "WARNING")
        .map(|c| format!("{}: {}", c["name"].as_str().unwrap_or("?"), c["errorMessage"].as_str().unwrap_or("")))
        .collect();
    said.push(std::fs::read_to_string(run.join("stderr.txt")).unwrap_or_default());
    said.join("\n")
}
