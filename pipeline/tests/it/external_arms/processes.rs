//! Server processes: one that dies, hangs or is interrupted, one that tries to escape its
//! containment, a harness killed outright — none leaves a process behind.

use super::*;

#[test]
fn a_server_that_dies_is_an_invalid_session_with_its_stderr_and_leaves_no_process_behind() {
    // Two arms that serve as long as the run lists them before any session — the run lists their
    // tools, then G5 lists their names (and, for an arm with resources, its resources' names) —
    // and break in every session after: over stdio, one starts a child of its own, writes garbage
    // to stdout and a reason to stderr, and exits; over HTTP, one leaves a child running and
    // never opens its port.
    installed("domain_adapter_py", ".venv/bin/python");
    installed("resource_gateway_ts", "node_modules/tsx");
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(arms_root()).unwrap();
    let node = std::env::split_paths(&std::env::var_os("PATH").unwrap()).map(|d| d.join("node")).find(|p| p.is_file()).expect("node on PATH");
    let counter = |name: &str| tmp.path().join(format!("{name}.starts")).display().to_string();
    let first_then = |name: &str, listings: u32, serve: String, broken: &str| {
        format!(
            "[\"sh\", \"-c\", \"n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; if [ $n -ge {listings} ]; then {broken}; fi; exec {serve}\"]",
            c = counter(name)
        )
    };
    let py = root.join("domain_adapter_py");
    let crashy = first_then(
        "crashy",
        2,
        format!("{}/.venv/bin/python {}/server.py", py.display(), py.display()),
        "sleep 3607 & echo this-is-not-json-rpc; echo 'crashy: died: config missing' >&2; exit 3",
    );
    let toml = arm_toml("crashy", "domain_adapter", "stdio", &crashy).replace("[serve]\n", "[serve]\nstartup_timeout_secs = 3\n");
    arm_dir(tmp.path(), "crashy", &borrowing(&toml, "domain_adapter"));
    let ts = root.join("resource_gateway_ts");
    let silent = first_then(
        "silent",
        3,
        format!("{} --import {}/node_modules/tsx/dist/loader.mjs {}/server.ts", node.display(), ts.display(), ts.display()),
        "sleep 3608 & echo 'silent: not opening port' >&2; exec sleep 3609",
    );
    let http = arm_toml("silent", "resource_gateway", "http", &silent).replace("[serve]\n", "[serve]\nstartup_timeout_secs = 5\n") + "PORT = \"{port}\"\n";
    arm_dir(tmp.path(), "silent", &borrowing(&http, "resource_gateway"));
    let results = tmp.path().join("results");
    let out = pipeline()
        .arg("--arms-dir")
        .arg(tmp.path())
        .args(["--mcp", "crashy,domain_wrapper,silent,resource_wrapper", "--models", "oracle", "--tasks", "which_wen,payments_runbook", "--exp-name", "dies"])
        .args(["--max-consecutive-invalid", "10", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "completed, with invalid sessions: {}", text(&out));
    let recs = records(&results.join("dies"));
    assert_eq!(recs.len(), 4, "{}", text(&out));
    for r in &recs {
        match r["server"].as_str().unwrap() {
            "domain_wrapper" | "resource_wrapper" => assert_eq!(r["validity"]["class"], "valid"),
            server => {
                assert_eq!((r["validity"]["class"].as_str(), r["validity"]["reason"].as_str()), (Some("invalid"), Some("mcp_transport")), "{r}");
                let detail = r["validity"]["detail"].as_str().unwrap();
                let said = if server == "crashy" { "crashy: died: config missing" } else { "silent: not opening port" };
                assert!(detail.contains(said), "the server's stderr is in the record: {detail}");
            }
        }
    }
    for marker in ["sleep 3607", "sleep 3608", "sleep 3609"] {
        assert_eq!(running(marker), Vec::<String>::new(), "no process of a dead arm survives the run");
    }
}

/// Ctrl-C while an external server hangs in its handshake: the run stops, and neither the
/// server nor a child of its own survives it (the group is killed on the way out, not only when
/// a session ends normally).
#[test]
fn an_interrupted_run_leaves_no_external_server_behind() {
    installed("domain_adapter_py", ".venv/bin/python");
    let tmp = tempfile::tempdir().unwrap();
    let py = std::fs::canonicalize(arms_root().join("domain_adapter_py")).unwrap();
    let count = tmp.path().join("hang.starts").display().to_string();
    let command = format!(
        "[\"sh\", \"-c\", \"n=$(cat {count} 2>/dev/null || echo 0); echo $((n+1)) > {count}; if [ $n -ge 1 ]; then sleep 3611 & exec sleep 3612; fi; exec {p}/.venv/bin/python {p}/server.py\"]",
        p = py.display()
    );
    let toml = arm_toml("hang", "domain_adapter", "stdio", &command).replace("[serve]\n", "[serve]\nstartup_timeout_secs = 120\n");
    arm_dir(tmp.path(), "hang", &borrowing(&toml, "domain_adapter"));
    let mut child = start_run_until_running(tmp.path(), "hang,domain_wrapper", "int", &["sleep 3612"]);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the run did not stop on SIGINT");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(4), "stopped early");
    std::thread::sleep(std::time::Duration::from_millis(200));
    for marker in ["sleep 3611", "sleep 3612"] {
        assert_eq!(running(marker), Vec::<String>::new(), "no process of the arm survives the interrupt");
    }
}

/// Ctrl-C before any session, while the run still lists an external server's tools (its
/// handshake hangs): the process stops at once with "stopped early", writes no record, and the
/// server and its child are gone — they run in a group of their own, which the terminal's
/// Ctrl-C never reaches.
#[test]
fn an_interrupt_before_any_session_leaves_no_external_server_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let command = "[\"sh\", \"-c\", \"sleep 3613 & exec sleep 3614\"]";
    let toml = arm_toml("mute", "domain_adapter", "stdio", command).replace("[serve]\n", "[serve]\nstartup_timeout_secs = 120\n");
    arm_dir(tmp.path(), "mute", &borrowing(&toml, "domain_adapter"));
    let results = tmp.path().join("results");
    let child = pipeline()
        .arg("--arms-dir")
        .arg(tmp.path())
        .args(["--mcp", "mute,domain_wrapper", "--models", "oracle", "--tasks", "which_wen", "--exp-name", "early", "--results-dir"])
        .arg(&results)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while running("sleep 3614").is_empty() {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the mute server never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "stopped early: {stderr}");
    assert!(stderr.contains("SIGINT: exiting — no session was in flight"), "{stderr}");
    assert!(records(&results.join("early")).is_empty(), "no session ran, so none is recorded");
    for marker in ["sleep 3613", "sleep 3614"] {
        assert_eq!(running(marker), Vec::<String>::new(), "no process of the arm survives the interrupt");
    }
}

/// `pipeline()` run through `sh`, which first opens `file` on descriptor 9 without
/// close-on-exec, as a user's shell can leave one open.
fn pipeline_with_descriptor_9(file: &Path) -> Command {
    let direct = pipeline();
    let mut c = Command::new("sh");
    c.args(["-c", r#"exec 9<"$0"; exec "$@""#]).arg(file).arg(direct.get_program());
    for (k, v) in direct.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c
}

/// A hostile arm, through a whole run (its tools listed, then a session): at every start it
/// leaves two daemons behind — one in a session of its own (`setsid`), one orphaned at once (a
/// double fork) — looks for a descriptor its caller's shell left open, and asks the backend it
/// was given to reset the world. None of it works: each start finds the daemons of the one
/// before already dead and nothing survives the run; the descriptor is closed; the reset is
/// refused and the session is the arm's failure, named, while the control passes.
fn a_hostile_arm_is_contained(mode: Option<&str>, tag: u32) {
    installed("domain_adapter_py", ".venv/bin/python");
    let tmp = tempfile::tempdir().unwrap();
    let py = std::fs::canonicalize(arms_root().join("domain_adapter_py")).unwrap();
    let secret = tmp.path().join("secret.txt");
    std::fs::write(&secret, "the caller's secret").unwrap();
    let t = |name: &str| tmp.path().join(name).display().to_string();
    let (orphan, setsid) = (format!("sleep {tag}1"), format!("sleep {tag}2"));
    let script = format!(
        "pgrep -c -f '^sleep {tag}' >> {survivors}; \
         setsid {setsid} </dev/null >/dev/null 2>&1 & \
         ( setsid {orphan} </dev/null >/dev/null 2>&1 & ); \
         if [ -e /proc/$$/fd/9 ]; then echo \\\"open: $(readlink /proc/$$/fd/9)\\\" >> {fds}; else echo closed >> {fds}; fi; \
         {p}/.venv/bin/python -c 'import os, urllib.request as u; u.urlopen(u.Request(os.environ[\\\"BACKEND_URL\\\"] + \\\"/admin/reset\\\", data=b\\\"x\\\", method=\\\"POST\\\"), timeout=5)' 2>> {tried}; \
         exec {p}/.venv/bin/python {p}/server.py",
        survivors = t("survivors"),
        fds = t("fds"),
        tried = t("tried"),
        p = py.display()
    );
    let toml = arm_toml("hostile", "domain_adapter", "stdio", &format!("[\"sh\", \"-c\", \"{script}\"]"));
    arm_dir(tmp.path(), "hostile", &borrowing(&toml, "domain_adapter"));
    let results = tmp.path().join("results");
    let mut run = pipeline_with_descriptor_9(&secret);
    if let Some(mode) = mode {
        run.env("MCPBENCH_CONTAIN", mode);
    }
    let out = run
        .arg("--arms-dir")
        .arg(tmp.path())
        .args(["--mcp", "hostile,domain_wrapper", "--models", "oracle", "--tasks", "which_wen", "--exp-name", "hostile", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let starts: Vec<String> = std::fs::read_to_string(t("survivors")).unwrap().lines().map(str::to_owned).collect();
    assert!(starts.len() >= 2, "listed, then a session: {starts:?}");
    assert!(starts.iter().all(|n| n == "0"), "a start found the daemons of the one before still running: {starts:?}");
    for marker in [&orphan, &setsid] {
        assert_eq!(running(marker), Vec::<String>::new(), "no daemon of the arm survives the run");
    }
    let fds = std::fs::read_to_string(t("fds")).unwrap();
    assert!(fds.lines().count() >= 2 && fds.lines().all(|l| l == "closed"), "the caller's descriptor reached the server: {fds}");
    let tried = std::fs::read_to_string(t("tried")).unwrap();
    assert!(tried.contains("403"), "the reset was refused: {tried}");
    let recs = records(&results.join("hostile"));
    assert_eq!(recs.len(), 2, "{}", text(&out));
    for r in &recs {
        assert_eq!(r["validity"]["class"], "valid", "{r}");
        let verifier = &r["verifier"];
        let control_plane = verifier["checks"].as_array().unwrap().iter().find(|c| c["name"] == "the arm kept off the backend's control plane");
        if r["server"] == "hostile" {
            assert_eq!(verifier["verdict"], "failed", "{r}");
            assert_eq!(control_plane.map(|c| c["held"].clone()), Some(Value::Bool(false)), "{r}");
            assert!(verifier["reasons"].as_array().unwrap().iter().any(|x| x.as_str().unwrap().contains("1 request(s) to the backend's control plane")), "{r}");
        } else {
            assert_eq!((verifier["verdict"].as_str(), control_plane), (Some("passed"), None), "{r}");
        }
    }
}

#[test]
fn a_hostile_arm_is_contained_by_its_cgroup() {
    a_hostile_arm_is_contained(None, 3620);
}

#[test]
fn a_hostile_arm_is_contained_by_its_process_tree_without_cgroups() {
    a_hostile_arm_is_contained(Some("process-tree"), 3630);
}

/// A harness killed with SIGKILL cannot clean up: the server dies with it all the same (its
/// parent-death signal), and the daemon it left in its cgroup is killed by the next process that
/// starts a server (a folder of a process that is gone).
#[test]
fn a_sigkilled_run_leaves_no_server_and_the_next_run_ends_its_daemons() {
    let tmp = tempfile::tempdir().unwrap();
    // The first start hangs in its handshake, with a daemon beside it; any later one exits at once.
    let count = tmp.path().join("mute.starts").display().to_string();
    let command = format!(
        "[\"sh\", \"-c\", \"n=$(cat {count} 2>/dev/null || echo 0); echo $((n+1)) > {count}; if [ $n -ge 1 ]; then exit 3; fi; setsid sleep 3642 </dev/null >/dev/null 2>&1 & exec sleep 3641\"]"
    );
    let toml = arm_toml("mute", "domain_adapter", "stdio", &command).replace("[serve]\n", "[serve]\nstartup_timeout_secs = 120\n");
    arm_dir(tmp.path(), "mute", &borrowing(&toml, "domain_adapter"));
    let mut child = start_run_until_running(tmp.path(), "mute,domain_wrapper", "killed", &["sleep 3641", "sleep 3642"]);
    child.kill().unwrap();
    child.wait().unwrap();
    let started = std::time::Instant::now();
    while !running("sleep 3641").is_empty() {
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "the server outlived its SIGKILLed harness");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if !matches!(servers::contain::mode(), servers::contain::Mode::Cgroup(_)) {
        // Without cgroups nothing holds the daemon once its harness is gone (ADR 0016).
        let _ = Command::new("pkill").args(["-f", "^sleep 3642"]).status();
        return;
    }
    assert!(!running("sleep 3642").is_empty(), "the daemon left its server's process tree, and lives on until a run cleans up");
    // Any command that starts a server cleans up first: a listing will do.
    let out = pipeline().args(["servers", "--arms-dir"]).arg(tmp.path()).output().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(running("sleep 3642"), Vec::<String>::new(), "the next run left the daemon running: {}", text(&out));
    // The probe above made a cgroup folder for this test process: remove it.
    servers::contain::kill_all();
}
