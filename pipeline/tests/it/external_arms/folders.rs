//! Arm folders: found elsewhere with `--arms-dir`, and refused by file and field when broken.

use super::*;

#[test]
fn an_arms_folder_elsewhere_is_listed_by_servers_and_list() {
    let tmp = tempfile::tempdir().unwrap();
    arm_dir(tmp.path(), "elsewhere", &arm_toml("elsewhere", "domain_adapter", "stdio", r#"["no-such-program-31337"]"#));
    let dir = tmp.path().display().to_string();
    let out = pipeline().args(["servers", "--json", "--arms-dir", &dir]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let row = rows.iter().find(|r| r["name"] == "elsewhere").expect("the arm is listed");
    assert_eq!(row["kind"], "external");
    assert!(row["error"].as_str().unwrap().contains("not found on PATH"), "a server that cannot start is listed with the reason: {row}");
    assert!(!rows.iter().any(|r| r["name"] == "domain_adapter_py"), "only the folder given is read");
    let out = pipeline().args(["list", "--arms-dir", &dir]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("external elsewhere"), "{}", text(&out));
}

#[test]
fn broken_arm_folders_are_refused_by_file_and_field_with_nothing_written() {
    let run = ["--models", "oracle", "--tasks", "which_wen"];
    let cases: Vec<(&str, String, Vec<&str>, Vec<&str>)> = vec![
        (
            "unknown_module",
            arm_toml("mine", "no_such_module", "stdio", r#"["sh"]"#),
            vec!["--mcp", "mine,domain_wrapper"],
            vec!["arm.toml: module: no module named \"no_such_module\""],
        ),
        (
            "duplicate",
            arm_toml("domain_adapter", "domain_adapter", "stdio", r#"["sh"]"#),
            vec!["--mcp", "domain_adapter,domain_wrapper"],
            vec!["arm.toml: name: \"domain_adapter\" is already the name of another server"],
        ),
        (
            "no_command",
            arm_toml("mine", "domain_adapter", "stdio", r#"["no-such-program-31337", "x"]"#),
            vec!["--mcp", "mine,domain_wrapper"],
            vec!["arm.toml: serve.command: program \"no-such-program-31337\" is not found on PATH"],
        ),
        (
            "catalogue_module",
            arm_toml("mine", "tool_search", "stdio", r#"["sh"]"#),
            vec!["--mcp", "mine,tool_search_wrapper"],
            vec!["arm.toml: module: tool_search lists a tool catalogue whose size the run chooses, and an external arm cannot be told it yet"],
        ),
        (
            "http_no_port",
            arm_toml("mine", "domain_adapter", "http", r#"["sh"]"#),
            vec!["--mcp", "mine,domain_wrapper"],
            vec!["arm.toml: serve.command: an HTTP arm must be told its port"],
        ),
    ];
    // (An arm without plans is refused too, naming each missing plan: plans.rs, with a real server.)
    for (label, toml, select, says) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dir = arm_dir(tmp.path(), label, &toml);
        let mut args: Vec<&str> = select.clone();
        args.extend(run);
        let mut says = says.clone();
        let file = dir.join("arm.toml").display().to_string();
        says.push(&file);
        refused(tmp.path(), &args, &says);
    }
}
