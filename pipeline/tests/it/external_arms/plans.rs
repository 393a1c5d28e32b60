//! An arm's oracle plans: borrowed from a built-in server of its module (`oracle_from`), its own
//! file overriding one, a wrong or missing plan refused by file with the fix, an `oracle_from`
//! that names no built-in server of the module refused in one line, and a change to a borrowed
//! plan visible in the records.

use super::*;

const WHICH_WEN: &str = "which_wen_for_globex_checkout";

/// A copy of the Python port under `root/port`, its installed venv linked in, `arm.toml` as
/// shipped (it borrows `domain_adapter`'s plans) but for `oracle_from`: `Some(server)` borrows
/// that server's, `None` none.
fn port_copy(root: &Path, oracle_from: Option<&str>) -> PathBuf {
    installed("domain_adapter_py", ".venv/bin/python");
    let src = arms_root().join("domain_adapter_py");
    let dst = root.join("port");
    std::fs::create_dir_all(dst.join("oracle")).unwrap();
    for f in ["server.py", "requirements.txt"] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    let shipped = std::fs::read_to_string(src.join("arm.toml")).unwrap();
    assert!(shipped.contains("\noracle_from = \"domain_adapter\"\n"), "the example borrows its original's plans: {shipped}");
    let line = oracle_from.map_or(String::new(), |s| format!("oracle_from = \"{s}\"\n"));
    std::fs::write(dst.join("arm.toml"), shipped.replace("oracle_from = \"domain_adapter\"\n", &line)).unwrap();
    std::os::unix::fs::symlink(src.join(".venv"), dst.join(".venv")).unwrap();
    dst
}

/// What `pipeline servers --json` says of the port under `root`: where its plans come from.
fn listed_oracle_from(root: &Path) -> Value {
    let out = pipeline().args(["servers", "--json", "--arms-dir"]).arg(root).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let row = rows.iter().find(|r| r["name"] == "domain_adapter_py").expect("the port is listed");
    row["external"]["oracle_from"].clone()
}

fn which_wen_run() -> [&'static str; 6] {
    ["--mcp", "domain_adapter_py,domain_wrapper", "--models", "oracle", "--tasks", "which_wen"]
}

/// The built-in plan of `server` for `task` of domain_adapter.
fn built_in_plan(task: &str, server: &str) -> PathBuf {
    tasks_root().join("domain_adapter").join(task).join("oracle").join(format!("{server}.toml"))
}

/// A plan through tools the arm does not list is refused before any session, by file and step,
/// whether the arm wrote it or borrowed it (then naming the built-in file and the arm's own file
/// that would override it); the own file does override it; without either the arm has no plan.
#[test]
fn a_plan_is_the_arms_own_file_else_the_one_it_borrows_and_a_wrong_one_is_named_with_the_fix() {
    // Borrowing the control's plans, whose tools the port does not offer: refused, naming the
    // control's file and the fix.
    let tmp = tempfile::tempdir().unwrap();
    let dst = port_copy(tmp.path(), Some("domain_wrapper"));
    let own = dst.join("oracle").join(format!("{WHICH_WEN}.toml"));
    let borrowed = built_in_plan(WHICH_WEN, "domain_wrapper").canonicalize().unwrap();
    assert_eq!(listed_oracle_from(tmp.path()), "domain_wrapper");
    refused(
        tmp.path(),
        &which_wen_run(),
        &[
            &format!("{}: steps[0].tool: domain_adapter_py does not list a tool", borrowed.display()),
            &format!("borrowed through oracle_from: write {} to give domain_adapter_py its own", own.display()),
        ],
    );

    // Its own file for the task overrides the borrowed plan: the run passes.
    std::fs::copy(built_in_plan(WHICH_WEN, "domain_adapter"), &own).unwrap();
    let results = tmp.path().join("results");
    let out = pipeline().arg("--arms-dir").arg(tmp.path()).args(which_wen_run()).args(["--exp-name", "own", "--results-dir"]).arg(&results).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let recs = records(&results.join("own"));
    let port = recs.iter().find(|r| r["server"] == "domain_adapter_py").expect("the port's session");
    assert_eq!(port["verifier"]["verdict"], "passed", "{port}");

    // An own plan through a tool the server does not list: named by its file.
    let text_of = std::fs::read_to_string(&own).unwrap();
    let first_tool = text_of.lines().find_map(|l| l.strip_prefix("tool = ")).unwrap().to_owned();
    std::fs::write(&own, text_of.replacen(&format!("tool = {first_tool}"), "tool = \"tickets_explode\"", 1)).unwrap();
    let own_text = own.display().to_string();
    refused(tmp.path(), &which_wen_run(), &[&own_text, "steps[0].tool: domain_adapter_py does not list a tool \"tickets_explode\""]);

    // Neither its own file nor oracle_from: no ground truth for a task it answers. Refused, the
    // missing file named, and the other way to give one.
    let tmp = tempfile::tempdir().unwrap();
    let dst = port_copy(tmp.path(), None);
    let own = dst.join("oracle").join(format!("{WHICH_WEN}.toml")).display().to_string();
    assert_eq!(listed_oracle_from(tmp.path()), Value::Null);
    refused(tmp.path(), &which_wen_run(), &["has no oracle plan", &own, "oracle_from = \"<server>\""]);
}

/// `oracle_from` must name a built-in server of the arm's own module: the arm itself, another
/// external arm, a server of another module and an unknown name are each refused in one line
/// naming the file, the problem and the fix, with nothing written.
#[test]
fn oracle_from_is_refused_unless_it_names_a_built_in_server_of_the_arms_module() {
    let cases = [
        ("mine", "\"mine\" is this arm itself: name the built-in server of domain_adapter whose plans it reuses (domain_adapter or domain_wrapper)"),
        ("other", "\"other\" is an external arm, and only a built-in server's plans can be borrowed: name domain_adapter or domain_wrapper"),
        ("resource_wrapper", "\"resource_wrapper\" is a server of resource_gateway, and this arm answers domain_adapter: name a server of domain_adapter"),
        ("domain_adaptor", "no server is named \"domain_adaptor\": name the built-in server of domain_adapter whose plans this arm reuses"),
    ];
    for (from, says) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dir = arm_dir(tmp.path(), "mine", &borrowing(&arm_toml("mine", "domain_adapter", "stdio", r#"["sh"]"#), from));
        arm_dir(tmp.path(), "other", &arm_toml("other", "domain_adapter", "stdio", r#"["sh"]"#));
        let line = format!("{}: oracle_from: {says}", dir.join("arm.toml").display());
        refused(tmp.path(), &["--mcp", "mine,domain_wrapper", "--models", "oracle", "--tasks", "which_wen"], &[&line]);
        let out = pipeline().args(["servers", "--json", "--arms-dir"]).arg(tmp.path()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.lines().any(|l| l.contains(&line)) && err.trim().lines().count() == 1, "one line, from every command: {err}");
    }
}

/// The task's hash covers the plans in its folder, borrowed ones included: change the built-in
/// plan the port borrows (a comment, nothing it does) and its next session's fingerprint says the
/// task changed, while the arm's folder hash stays what it was.
#[test]
fn a_change_to_a_borrowed_plan_changes_the_sessions_fingerprint() {
    installed("domain_adapter_py", ".venv/bin/python");
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    common::copy_dir(&tasks_root().join("domain_adapter"), &tasks.join("domain_adapter"));
    let results = tmp.path().join("results");
    let run = |exp: &str| -> Value {
        let out = pipeline()
            .env("MCPBENCH_TASKS_DIR", &tasks)
            .args(["--mcp", "domain_adapter_py", "--models", "oracle", "--tasks", "which_wen", "--exp-name", exp, "--results-dir"])
            .arg(&results)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let recs = records(&results.join(exp));
        assert_eq!((recs.len(), recs[0]["verifier"]["verdict"].as_str()), (1, Some("passed")), "{recs:?}");
        recs[0]["fingerprint"].clone()
    };
    let before = run("before");
    let plan = tasks.join("domain_adapter").join(WHICH_WEN).join("oracle/domain_adapter.toml");
    std::fs::write(&plan, std::fs::read_to_string(&plan).unwrap() + "# revised\n").unwrap();
    let after = run("after");
    assert_ne!(before["task_sha256"], after["task_sha256"], "the borrowed plan is part of the task's hash");
    assert_eq!(before["arm_sha256"], after["arm_sha256"], "the arm's folder did not change");
    assert!(before["arm_sha256"].is_string());
}
