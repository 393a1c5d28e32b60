//! External arms end to end, through the real binary: the two example ports (Python on the
//! official MCP Python SDK, TypeScript on the official TypeScript SDK; their dependencies are
//! installed by `.ci/test-tools`) pass every gate and match their Rust originals call for call and
//! byte for byte through the oracle; broken arm folders are refused by file and field with
//! nothing written; a server that dies is an invalid session carrying its stderr, and leaves no
//! process behind.

mod ahead;
mod check_scripts;
mod folders;
mod plans;
mod processes;
mod servers_written_here;
mod starter;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use crate::common::{pipeline, records};
use serde_json::Value;

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn arms_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../arms")
}

fn tasks_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks")
}

/// The example arm's dependencies must be installed: fail (never skip) naming the script.
fn installed(arm: &str, marker: &str) {
    assert!(
        arms_root().join(arm).join(marker).exists(),
        "arms/{arm}/{marker} is missing: run .ci/test-tools (it installs the example arms' pinned dependencies)"
    );
}

/// Σ result bytes and calls per task of one server's records.
fn per_task(recs: &[Value], server: &str) -> std::collections::BTreeMap<String, (usize, u64)> {
    recs.iter()
        .filter(|r| r["server"] == server)
        .map(|r| {
            let calls = r["tool_calls"].as_array().unwrap();
            (r["task"].as_str().unwrap().to_owned(), (calls.len(), calls.iter().map(|c| c["result_bytes"].as_u64().unwrap()).sum()))
        })
        .collect()
}

/// Freezes a spec of the module with the pattern, its port and the controls, checks it (G1–G7),
/// runs it with the oracle, and compares the port with its original; the records.
fn gates_and_oracle_a_b(module: &str, original: &str, port: &str, controls: &[&str]) -> Vec<Value> {
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("spec.toml");
    let results = tmp.path().join("results");
    let arms = [&[original, port][..], controls].concat().join(",");
    let out = pipeline()
        .args(["freeze", "--module", module, "--mcp", &arms, "--models", "oracle", "--exp-name", "ext", "--allow-dirty", "--out"])
        .arg(&spec)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let frozen = std::fs::read_to_string(&spec).unwrap();
    assert!(frozen.contains(&format!("[hashes.arms]\n{port} = ")), "the spec pins the arm's folder: {frozen}");

    let out = pipeline().arg("check").arg(&spec).arg("--results-dir").arg(&results).output().unwrap();
    assert!(out.status.success(), "G1–G7 pass for {port}: {}", text(&out));
    let check: Value = serde_json::from_str(&std::fs::read_to_string(results.join("ext/check.json")).unwrap()).unwrap();
    assert!(check["gates"].as_array().unwrap().iter().all(|g| g["passed"] == true), "{check}");

    let out = pipeline().arg("run").arg(&spec).arg("--results-dir").arg(&results).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let recs = records(&results.join("ext"));
    assert_eq!(recs.len(), (2 + controls.len()) * common::task_count(module), "every arm × every task, dev and held-out");
    for r in recs.iter().filter(|r| r["server"] == port) {
        assert_eq!(r["verifier"]["verdict"], "passed", "{r}");
        assert!(r["external_arm"]["env_names"].as_array().unwrap().iter().any(|n| n == "BACKEND_URL"), "names, never values: {r}");
        assert_eq!(r["external_arm"]["sha256"], r["fingerprint"]["arm_sha256"]);
        assert!(r["server_info"]["name"].is_string() && r["server_info"]["version"].is_string(), "the serverInfo it reported: {r}");
    }
    // A faithful port: the same calls and the same result bytes on every task, and the same
    // definition bytes offered to a model.
    assert_eq!(per_task(&recs, port), per_task(&recs, original), "{port} vs {original}");
    let offered = |s: &str| recs.iter().find(|r| r["server"] == s).unwrap()["offered"]["definitions_bytes"].clone();
    assert_eq!(offered(port), offered(original));

    let out = pipeline().args(["aggregate", "--result-dir"]).arg(results.join("ext")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(results.join("ext/report.md")).unwrap();
    for control in controls {
        for c in [format!("{module} ({original} vs {control})"), format!("{module} ({port} vs {control})")] {
            assert!(md.contains(&format!("### {c}")), "one comparison per (pattern, control) pair: {c}\n{md}");
        }
    }
    recs
}

/// The Python port beside its original, against the hand-written flat control.
#[test]
fn the_python_port_passes_every_gate_and_matches_its_rust_original() {
    installed("domain_adapter_py", ".venv/bin/python");
    gates_and_oracle_a_b("domain_adapter", "domain_adapter", "domain_adapter_py", &["domain_wrapper"]);
}

/// The control generated from the backend's OpenAPI document (`arms/generated_domain_wrapper`) is
/// the control of every module whose hand-written control is a flat wrapper of the API: the
/// folder's own arm (domain_adapter) and its `[[variant]]`s, one per other module. Each is an arm
/// of its own module, passes the gates of a flag run and every task with its module's flat
/// control's plans renamed, is hashed with the one folder, offers a model far more than the
/// hand-written control (the API's 30 operations, their definitions resent every turn), and is
/// set against its module's pattern in its module's comparison.
///
/// Warm sessions (ADR 0014): one conversation per arm, so each Python server starts once, not
/// once per task (≈ 1.7 s of CPU each; cold, this test cost ≈ 2 CPU-minutes). Nothing checked
/// here depends on the session mode; the ports' tests above run external arms cold, and this one
/// runs an external arm warm.
#[test]
fn the_generated_control_answers_every_module_whose_control_is_flat() {
    installed("generated_domain_wrapper", ".venv/bin/python");
    // (module, pattern, hand-written flat control, generated control)
    let modules = [
        ("domain_adapter", "domain_adapter", "domain_wrapper", "generated_domain_wrapper"),
        ("tool_orchestrator", "orchestrator", "wrapper", "generated_wrapper"),
        ("proxy_aggregator", "proxy_aggregator", "proxy_wrapper", "generated_proxy_wrapper"),
        ("resource_gateway", "resource_gateway", "resource_wrapper", "generated_resource_wrapper"),
        ("code_execution", "code_execution", "code_execution_wrapper", "generated_code_execution_wrapper"),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let arms: Vec<&str> = modules.iter().flat_map(|(_, pattern, flat, generated)| [*pattern, *flat, *generated]).collect();
    let out = pipeline()
        .args(["--mcp", &arms.join(","), "--models", "oracle", "--session-mode", "warm", "--jobs", "2", "--exp-name", "gen", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let recs = records(&tmp.path().join("gen"));
    let folder = arms_root().join("generated_domain_wrapper");
    let folder_sha = ::servers::external::folder_hash(&folder).unwrap();
    let arm_toml: toml::Table = std::fs::read_to_string(folder.join("arm.toml")).unwrap().parse().unwrap();
    let rename: std::collections::BTreeMap<String, String> =
        arm_toml["oracle_rename"].as_table().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())).collect();
    for (module, _, flat, generated) in modules {
        let sessions: Vec<&Value> = recs.iter().filter(|r| r["server"] == generated).collect();
        assert_eq!(sessions.len(), common::task_count(module), "{generated}: every task of {module}, dev and held-out");
        for r in &sessions {
            assert_eq!(r["module"], module, "{r}");
            assert_eq!((r["validity"]["class"].as_str(), r["verifier"]["verdict"].as_str()), (Some("valid"), Some("passed")), "{generated}: {r}");
            assert_eq!(r["external_arm"]["sha256"], folder_sha.as_str(), "one folder, one hash: {r}");
            assert_eq!(r["offered"]["functions"].as_array().map(Vec::len), Some(30), "the API's 30 operations, whatever the module: {r}");
        }
        // Warm: one conversation of the dev tasks, one of the held-out ones (never mixed).
        let conversations: std::collections::BTreeSet<&str> = sessions.iter().map(|r| r["conversation"]["id"].as_str().unwrap()).collect();
        assert!((1..=2).contains(&conversations.len()), "{generated}: {conversations:?}");
        // The renamed plans are the flat control's, tool for tool: on every task the generated
        // control makes the flat control's calls in the same order, each by the generator's name.
        let calls = |server: &str, task: &str| -> Vec<String> {
            let r = recs.iter().find(|r| r["server"] == server && r["task"] == task).unwrap_or_else(|| panic!("no record of {server} on {task}"));
            r["tool_calls"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_owned()).collect()
        };
        // (Warm, a task whose answer the conversation already holds may need no call.)
        let mut made = 0;
        for r in &sessions {
            let task = r["task"].as_str().unwrap();
            let renamed: Vec<String> = calls(flat, task).into_iter().map(|n| rename.get(&n).cloned().unwrap_or(n)).collect();
            made += renamed.len();
            assert_eq!(calls(generated, task), renamed, "{generated} on {task}: {flat}'s calls, renamed");
        }
        assert!(made > 0, "{generated}: no call in {} tasks", sessions.len());
        // What the generated control costs a model against the hand-written one.
        let offered = |s: &str| recs.iter().find(|r| r["server"] == s).unwrap_or_else(|| panic!("no record of {s}"))["offered"].clone();
        let (hand, machine) = (offered(flat), offered(generated));
        assert!(hand["functions"].as_array().unwrap().len() < 30, "{flat}: {hand}");
        assert!(
            machine["definitions_bytes"].as_u64().unwrap() > 2 * hand["definitions_bytes"].as_u64().unwrap(),
            "{module}: the generated control's definitions, resent every turn, dwarf the hand-written one's: {machine} vs {hand}"
        );
    }
    let out = pipeline().args(["aggregate", "--result-dir"]).arg(tmp.path().join("gen")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(tmp.path().join("gen/report.md")).unwrap();
    for (module, pattern, flat, generated) in modules {
        for control in [flat, generated] {
            let heading = format!("### {module} ({pattern} vs {control})");
            assert!(md.contains(&heading), "one comparison per (pattern, control) pair: {heading}\n{md}");
        }
    }
}

/// The generated control reads the backend's OpenAPI document from its committed snapshot (so
/// it starts, and lists the same tools, without a backend): the snapshot is the backend's own
/// document, or the arm would be generated from an API that no longer exists.
#[test]
fn the_generated_controls_openapi_snapshot_is_the_backends_document() {
    let file = arms_root().join("generated_domain_wrapper/openapi.json");
    let snapshot: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let current = backend::openapi_document();
    assert!(
        snapshot == current,
        "{} is not the backend's OpenAPI document: rewrite it from `GET /openapi.json` of `pipeline backend` (arms/generated_domain_wrapper/README.md)",
        file.display()
    );
}

#[test]
fn the_typescript_port_over_http_passes_every_gate_and_matches_its_rust_original() {
    installed("resource_gateway_ts", "node_modules/tsx");
    gates_and_oracle_a_b("resource_gateway", "resource_gateway", "resource_gateway_ts", &["resource_wrapper"]);
}

/// A folder of arms in a temp dir, passed with `--arms-dir`.
fn arm_dir(root: &Path, name: &str, toml: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("oracle")).unwrap();
    std::fs::write(dir.join("arm.toml"), toml).unwrap();
    dir
}

fn arm_toml(name: &str, module: &str, transport: &str, command: &str) -> String {
    format!(
        "name = \"{name}\"\nmodule = \"{module}\"\nrole = \"pattern\"\n[serve]\ntransport = \"{transport}\"\ncommand = {command}\n[env]\nBACKEND_URL = \"{{backend_url}}\"\n"
    )
}

/// `toml` with `oracle_from = "<server>"`: the arm replays that built-in server's plans.
fn borrowing(toml: &str, server: &str) -> String {
    assert!(toml.contains("[serve]\n"));
    toml.replacen("[serve]\n", &format!("oracle_from = \"{server}\"\n[serve]\n"), 1)
}

/// Runs `args` with `--arms-dir root`, results in a temp folder; asserts exit 1, the message
/// parts on stderr, and nothing written.
fn refused(root: &Path, args: &[&str], says: &[&str]) {
    let results = root.join("results-never");
    let out = pipeline().arg("--arms-dir").arg(root).args(args).arg("--results-dir").arg(&results).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    for s in says {
        assert!(err.contains(s), "stderr lacks {s:?}: {err}");
    }
    assert!(!err.contains("stack backtrace"), "one clean error: {err}");
    assert!(!results.exists(), "nothing written");
}

/// Processes whose command line contains `marker`.
/// Processes whose command line starts with `marker` (a shell whose script merely mentions it
/// is not one of them).
fn running(marker: &str) -> Vec<String> {
    let out = Command::new("pgrep").args(["-af", &format!("^{marker}")]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.contains("pgrep")).map(str::to_owned).collect()
}

/// Starts an oracle run of `mcp` on the task `which_wen` with the arms under `root`, its output
/// dropped, and waits until a process starting with each of `markers` runs.
fn start_run_until_running(root: &Path, mcp: &str, exp: &str, markers: &[&str]) -> std::process::Child {
    let child = pipeline()
        .arg("--arms-dir")
        .arg(root)
        .args(["--mcp", mcp, "--models", "oracle", "--tasks", "which_wen", "--exp-name", exp, "--results-dir"])
        .arg(root.join("results"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while markers.iter().any(|m| running(m).is_empty()) {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the server never started: {markers:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child
}
