//! The starter arm (`arms/starter_py`), end to end as docs/adding-an-external-arm.md walks through
//! it: the oracle beside the module's pattern on every task, then the report.

use super::*;

/// Every task of resource_gateway through the starter's one tool: the run accepts its plans
/// (each step a tool it lists), every session is valid and passes, and the report compares it
/// with the pattern. (G1–G7 through `freeze` and `check` start its server twice as often; the
/// Python SDK takes about a second to start, so they are left to the guide.)
#[test]
fn the_starter_arm_runs_every_task_through_the_oracle_and_is_reported() {
    installed("starter_py", ".venv/bin/python");
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let out = pipeline()
        .args(["--mcp", "resource_gateway,starter_py", "--models", "oracle", "--jobs", "2", "--exp-name", "starter", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let recs = records(&results.join("starter"));
    let tasks = common::task_count("resource_gateway");
    assert_eq!(recs.len(), 2 * tasks, "two arms × every task, dev and held-out: {}", text(&out));
    let starter: Vec<&Value> = recs.iter().filter(|r| r["server"] == "starter_py").collect();
    assert_eq!(starter.len(), tasks);
    for r in starter {
        assert_eq!((r["validity"]["class"].as_str(), r["verifier"]["verdict"].as_str()), (Some("valid"), Some("passed")), "{r}");
        assert_eq!(r["offered"]["functions"], serde_json::json!(["call_api"]), "one tool and no resource functions: {r}");
        let calls = r["tool_calls"].as_array().unwrap();
        assert!(!calls.is_empty() && calls.iter().all(|c| c["name"] == "call_api" && c["is_error"] == false), "{r}");
        assert_eq!(r["external_arm"]["sha256"], r["fingerprint"]["arm_sha256"]);
    }

    let out = pipeline().args(["aggregate", "--result-dir"]).arg(results.join("starter")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(results.join("starter/report.md")).unwrap();
    // One pair, one comparison: the pattern against the starter, every task in its row.
    assert!(md.contains("| resource_gateway | resource_gateway | starter_py |"), "{md}");
    // (Rows of the per-task table: the footprint table's rows begin with the module.)
    assert!(md.lines().filter(|l| l.contains("| control | starter_py |") && !l.starts_with("| resource_gateway")).count() == tasks, "{md}");
    // The run had held-out tasks: the manifest holds the arm against the seal, which has it as it is.
    let seal = &common::manifest(&results.join("starter"))["seal"]["arms"];
    assert_eq!(seal[0]["name"], "starter_py");
    assert_eq!(seal[0]["sha256"], seal[0]["sealed_sha256"], "{seal}");
    assert!(!md.contains("after the held-out seal"), "{md}");

    // The same arm with one line changed after the seal: it runs, and the report says so above
    // its headline (its author could have seen the held-out tasks).
    let changed = tmp.path().join("arms/starter_py");
    std::fs::create_dir_all(&changed).unwrap();
    for f in ["arm.toml", "server.py", "requirements.txt", "README.md"] {
        std::fs::copy(arms_root().join("starter_py").join(f), changed.join(f)).unwrap();
    }
    common::copy_dir(&arms_root().join("starter_py/oracle"), &changed.join("oracle"));
    std::os::unix::fs::symlink(arms_root().join("starter_py/.venv"), changed.join(".venv")).unwrap();
    let server = changed.join("server.py");
    std::fs::write(&server, std::fs::read_to_string(&server).unwrap() + "\n# tuned after the seal\n").unwrap();
    let out = pipeline()
        .arg("--arms-dir")
        .arg(tmp.path().join("arms"))
        .args(["--mcp", "resource_gateway,starter_py", "--models", "oracle", "--split", "held_out", "--exp-name", "changed", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let seal = &common::manifest(&results.join("changed"))["seal"]["arms"];
    assert!(seal[0]["sealed_sha256"].is_string() && seal[0]["sha256"] != seal[0]["sealed_sha256"], "{seal}");
    let out = pipeline().args(["aggregate", "--result-dir"]).arg(results.join("changed")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(results.join("changed/report.md")).unwrap();
    assert!(md.contains("**Arm starter_py changed after the held-out seal**"), "{md}");
}
