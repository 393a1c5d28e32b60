//! The MCP project's official conformance suite (`@modelcontextprotocol/conformance`, pinned with
//! the Node.js 22 it needs in tests/conformance/, installed by .ci/test-tools) against every
//! registered server, over streamable HTTP, on a real backend.
//!
//! A scenario a server fails fails this test unless tests/conformance/expected-failures.toml
//! names it for that server, with its reason; a named scenario the server passes fails it too
//! (the suite's own rule for its baseline: a stale entry is removed, not kept).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;

/// The suite's entry point and the Node.js that runs it.
pub fn suite() -> (PathBuf, PathBuf) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-tools/conformance/node_modules");
    let node = root.join(".bin/node");
    let script = root.join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(node.exists() && script.exists(), "no MCP conformance suite at {}: run .ci/test-tools", root.display());
    (node, script)
}

/// A `[[server]]` entry of the expected-failures file.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    scenarios: Vec<String>,
    /// Server names, or `"*"` for every built-in server.
    servers: Vec<String>,
    #[serde(default)]
    except: Vec<String>,
    /// What every failed check of these scenarios says.
    fails_with: String,
    reason: String,
}

impl Expected {
    fn applies_to(&self, server: &str) -> bool {
        self.servers.iter().any(|s| s == "*" || s == server) && !self.except.iter().any(|s| s == server)
    }
}

/// The file: `[[server]]` entries for the servers (this test), `[[client]]` entries for the
/// agent's client (agent/tests/it/conformance.rs).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedFile {
    server: Vec<Expected>,
    #[allow(dead_code)]
    client: Vec<toml::Value>,
}

fn expected_failures() -> Vec<Expected> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/expected-failures.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    toml::from_str::<ExpectedFile>(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())).server
}

/// The scenarios `server` is expected to fail, each with what its failed checks say.
fn expected_for<'a>(expected: &'a [Expected], server: &str) -> BTreeMap<&'a str, &'a str> {
    let mut map = BTreeMap::new();
    for e in expected.iter().filter(|e| e.applies_to(server)) {
        for s in &e.scenarios {
            assert!(map.insert(s.as_str(), e.fails_with.as_str()).is_none(), "{s} is expected of {server} by two entries");
        }
    }
    map
}

/// The server scenarios the pinned suite runs by default (its "active" suite), from `list`.
fn server_scenarios(node: &Path, script: &Path) -> Vec<String> {
    let out = Command::new(node).arg(script).arg("list").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let server_part = text.split("Client scenarios").next().unwrap();
    server_part.lines().filter_map(|l| l.trim().strip_prefix("- ")).map(|l| l.split_whitespace().next().unwrap().to_owned()).collect()
}

/// What the suite found wrong in each scenario it ran for one server (its `checks.json` files):
/// scenario → the failed or warning checks' messages.
fn failed_checks(out_dir: &Path, scenarios: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut failed = BTreeMap::new();
    for entry in std::fs::read_dir(out_dir).into_iter().flatten().flatten() {
        let dir = entry.file_name().to_string_lossy().into_owned();
        let Some(scenario) = scenarios.iter().filter(|s| dir.starts_with(&format!("server-{s}-"))).max_by_key(|s| s.len()) else { continue };
        let checks: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(entry.path().join("checks.json")).unwrap_or_default()).unwrap_or_default();
        let messages: Vec<String> = checks
            .iter()
            .filter(|c| c["status"] == "FAILURE" || c["status"] == "WARNING")
            .map(|c| format!("{} {}: {}", c["status"].as_str().unwrap_or("?"), c["name"].as_str().unwrap_or("?"), c["errorMessage"].as_str().unwrap_or("")))
            .collect();
        if !messages.is_empty() {
            failed.insert(scenario.clone(), messages);
        }
    }
    failed
}

/// The suite's baseline file (its YAML format) for one server: the scenarios it is expected to fail.
fn baseline(mode: &str, scenarios: &[&str]) -> String {
    let mut yaml = format!("{mode}:\n");
    for s in scenarios {
        assert!(s.chars().all(|c| c.is_ascii_alphanumeric() || "-_/.".contains(c)), "scenario name {s:?}");
        yaml.push_str(&format!("  - {s}\n"));
    }
    yaml
}

fn built_in_servers() -> impl Iterator<Item = &'static servers::registry::ServerEntry> {
    servers::registry::servers().filter(|e| e.launcher().is_some())
}

#[test]
fn the_expected_failures_file_names_real_scenarios_and_servers_each_with_a_reason() {
    let (node, script) = suite();
    let scenarios = server_scenarios(&node, &script);
    assert!(scenarios.len() >= 20 && scenarios.iter().any(|s| s == "tools-list"), "{scenarios:?}");
    let expected = expected_failures();
    for e in &expected {
        assert!(e.reason.split_whitespace().count() >= 10, "{:?}: give the reason they are expected to fail", e.scenarios);
        assert!(!e.fails_with.trim().is_empty() && !e.servers.is_empty(), "{:?}: name what they fail with, and the servers", e.scenarios);
        for s in &e.scenarios {
            assert!(scenarios.contains(s), "{s} is not a server scenario of the pinned suite: {scenarios:?}");
        }
        for s in e.servers.iter().chain(&e.except) {
            assert!(s == "*" || built_in_servers().any(|entry| entry.name == s), "{:?}: {s} is not a built-in server", e.scenarios);
        }
    }
    // No scenario is expected twice of one server.
    for entry in built_in_servers() {
        expected_for(&expected, entry.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_built_in_server_passes_the_official_conformance_suite_but_for_its_explained_failures() {
    let (node, script) = suite();
    let expected = expected_failures();
    let b = common::backend().await;
    let dir = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    for entry in built_in_servers() {
        let (url, task) = servers::launch::serve_http_in_process(entry, b.url()).await.unwrap();
        let failing: Vec<&str> = expected_for(&expected, entry.name).into_keys().collect();
        let baseline_path = dir.path().join(format!("{}.yaml", entry.name));
        std::fs::write(&baseline_path, baseline("server", &failing)).unwrap();
        let out_dir = dir.path().join(entry.name);
        let mut cmd = Command::new(&node);
        cmd.arg(&script).args(["server", "--suite", "all", "--url", &url, "--expected-failures"]).arg(&baseline_path).arg("-o").arg(&out_dir);
        runs.push((entry.name, task, cmd, out_dir));
    }
    // The servers are in this process; each suite run is a Node process of its own, four at once.
    let started = Instant::now();
    let mut failures = BTreeMap::new();
    let mut handles = Vec::new();
    let mut tasks = Vec::new();
    let at_once = std::sync::Arc::new(tokio::sync::Semaphore::new(4));
    for (name, task, cmd, out_dir) in runs {
        tasks.push(task);
        let permit = at_once.clone().acquire_owned().await.unwrap();
        handles.push(tokio::task::spawn_blocking(move || {
            let out = crate::clients::run_bounded(cmd, None, Duration::from_secs(300));
            drop(permit);
            (name, out, out_dir)
        }));
    }
    let scenarios = server_scenarios(&node, &script);
    let mut scenarios_run = 0;
    for h in handles {
        let (name, (ok, stdout, stderr), out_dir) = h.await.unwrap();
        let ran = std::fs::read_dir(&out_dir).map(|d| d.count()).unwrap_or(0);
        scenarios_run += ran;
        // What each failed scenario's checks said, for the log (and for a reason to write).
        let found = failed_checks(&out_dir, &scenarios);
        eprintln!("{name}: {} of {ran} scenarios failed", found.len());
        for (scenario, messages) in &found {
            eprintln!("  {scenario}: {}", messages.join(" | "));
        }
        // Each expected failure failed as the file says it does, not for another reason.
        // (Its failed checks must be on file: a scenario with none to read is not taken as failing
        // as stated.)
        for (scenario, fails_with) in expected_for(&expected, name) {
            let Some(messages) = found.get(scenario) else {
                failures
                    .entry(name)
                    .or_insert_with(Vec::new)
                    .push(format!("{scenario} was expected to fail with {fails_with:?}; no failed check of it was recorded"));
                continue;
            };
            for message in messages.iter().filter(|m| !m.contains(fails_with)) {
                failures.entry(name).or_insert_with(Vec::new).push(format!("{scenario} was expected to fail with {fails_with:?}, and failed with: {message}"));
            }
        }
        if !ok || ran != scenarios.len() {
            let tail: String = stdout.lines().skip_while(|l| !l.contains("SUMMARY")).collect::<Vec<_>>().join("\n");
            failures.entry(name).or_insert_with(Vec::new).push(format!("{ran} of {} scenarios ran\n{tail}\n{stderr}", scenarios.len()));
        }
    }
    for task in tasks {
        task.abort();
    }
    b.shutdown().await.unwrap();
    eprintln!("conformance suite: {scenarios_run} scenario runs over the built-in servers in {:.1} s", started.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{}", failures.iter().map(|(n, o)| format!("=== {n}\n{}", o.join("\n"))).collect::<Vec<_>>().join("\n"));
}
