//! The example ports' own check scripts, against the Rust originals.

use super::*;

/// A `pipeline backend` on free ports (API and control plane), killed on drop.
struct Backend {
    child: std::process::Child,
    api: String,
    admin: String,
}

impl Backend {
    fn start() -> Self {
        let (port, admin_port) = (common::closed_port(), common::closed_port());
        let child = pipeline()
            .args(["backend", "--port", &port.to_string(), "--admin-port", &admin_port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let b = Self { child, api: format!("http://127.0.0.1:{port}"), admin: format!("http://127.0.0.1:{admin_port}") };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() || std::net::TcpStream::connect(("127.0.0.1", admin_port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "the backend did not listen within 60 s");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        b
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

/// The ports' own check scripts, run as their READMEs say (the TypeScript one with
/// `--skip-timeout`): every tool text, plan result and
/// probe compared byte for byte with the Rust original. A port whose texts differ at equal length
/// — what comparing byte counts alone lets through — fails its check.
#[test]
fn the_ports_check_scripts_pass_and_catch_a_text_that_differs_at_equal_length() {
    installed("domain_adapter_py", ".venv/bin/python");
    installed("resource_gateway_ts", "node_modules");
    let backend = Backend::start();
    let rust = env!("CARGO_BIN_EXE_pipeline");
    let py = arms_root().join("domain_adapter_py");
    let out = Command::new(py.join(".venv/bin/python"))
        .arg("check_port.py")
        .args([&backend.api, "--admin-url", &backend.admin, "--rust-bin", rust])
        .current_dir(&py)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("probe results identical"), "{}", text(&out));
    // The port keeps no copies of its original's plans: the script replays the ones it borrows.
    for t in tasks::load_module(&tasks_root(), "domain_adapter").unwrap() {
        assert!(text(&out).contains(&t.id), "{} was not replayed: {}", t.id, text(&out));
    }

    let ts = arms_root().join("resource_gateway_ts");
    let out = Command::new("node")
        .arg("check_port.mjs")
        // Without the probe of a backend that never answers: its 10 s wait per server was most
        // of the script's time, and it is left to a run of the script by hand (its README).
        .args(["--backend-url", &backend.api, "--admin-url", &backend.admin, "--rust-bin", rust, "--skip-timeout"])
        .current_dir(&ts)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));

    // A copy of the Python port with one reply's text changed, its length kept.
    let tmp = tempfile::tempdir().unwrap();
    for f in ["check_port.py", "server.py", "requirements.txt"] {
        std::fs::copy(py.join(f), tmp.path().join(f)).unwrap();
    }
    std::os::unix::fs::symlink(py.join(".venv"), tmp.path().join(".venv")).unwrap();
    // One oracle plan is enough to reach the probes, where the changed text shows: this copy
    // borrows none, and has one of its own.
    let arm = std::fs::read_to_string(py.join("arm.toml")).unwrap();
    let own_plans_only: String = arm.lines().filter(|l| !l.starts_with("oracle_from")).map(|l| format!("{l}\n")).collect();
    assert!(arm.contains("\noracle_from = ") && !own_plans_only.contains("oracle_from ="), "{arm}");
    std::fs::write(tmp.path().join("arm.toml"), own_plans_only).unwrap();
    std::fs::create_dir(tmp.path().join("oracle")).unwrap();
    let task = "who_works_on_redwood_motors";
    std::fs::copy(tasks_root().join("domain_adapter").join(task).join("oracle/domain_adapter.toml"), tmp.path().join(format!("oracle/{task}.toml"))).unwrap();
    let server = std::fs::read_to_string(py.join("server.py")).unwrap();
    let changed = server.replace("No customer is named", "No customer is naned");
    assert_ne!(changed, server, "the text this test changes is no longer in server.py");
    assert_eq!(changed.len(), server.len());
    std::fs::write(tmp.path().join("server.py"), changed).unwrap();
    let tasks = tasks_root().join("domain_adapter");
    let out = Command::new(py.join(".venv/bin/python"))
        .arg(tmp.path().join("check_port.py"))
        .args([&backend.api, "--admin-url", &backend.admin, "--rust-bin", rust, "--tasks-dir", tasks.to_str().unwrap()])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("naned"), "the difference is shown: {}", text(&out));
}
