//! A server the harness spawns as its own (`Hold::Group`) is spawned with no code between fork
//! and exec, and holds itself (`servers::contain::hold_self`): these check, on the real binary,
//! that it does what the spawn used to do for it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use servers::contain::HELD_BY_ENV;

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-bench-server");

fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s[s.rfind(')').unwrap() + 1..].trim_start().starts_with('Z'))
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where each descriptor of `pid` points.
fn descriptors(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.flatten().filter_map(|e| std::fs::read_link(e.path()).ok()).map(|p| p.display().to_string()).collect())
        .unwrap_or_default()
}

/// The server, started through `sh` with descriptor 9 open on `secret` (no close-on-exec, as a
/// caller's shell leaves one), held by this process when `held`; its pid once it runs.
fn server_with_descriptor_9(secret: &std::path::Path, held: bool) -> std::process::Child {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &format!("exec 9<'{}'; exec '{SERVER}' wrapper --backend-url http://127.0.0.1:9", secret.display())]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    if held {
        cmd.env(HELD_BY_ENV, std::process::id().to_string());
    }
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    // Running the server (no longer the shell), its runtime up: it opened descriptors of its own.
    wait_until("the server runs", || {
        std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| e.ends_with("mcp-bench-server"))
            && descriptors(pid).iter().any(|d| d.starts_with("anon_inode:"))
    });
    child
}

#[test]
fn a_held_server_closes_the_descriptors_it_inherited_and_one_not_held_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "not for the server").unwrap();
    let reaches = |held| {
        let mut child = server_with_descriptor_9(&secret, held);
        let open = descriptors(child.id()).iter().any(|d| d.ends_with("secret.txt"));
        child.kill().unwrap();
        child.wait().unwrap();
        open
    };
    // The control: the inherited descriptor does reach a server started without the variable,
    // so the check below can see it.
    assert!(reaches(false), "the test's inherited descriptor did not reach the server at all");
    assert!(!reaches(true), "a held server kept a descriptor it inherited");
}

#[test]
fn a_held_server_dies_with_the_process_that_started_it() {
    // The shell starts the server held by itself, then becomes `sleep`; killing it must take the
    // server with it, though the server's stdin (a FIFO it holds open for writing too) never
    // ends.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("stdin");
    let script = format!(
        "mkfifo '{fifo}' && {HELD_BY_ENV}=$$ '{SERVER}' wrapper --backend-url http://127.0.0.1:9 <>'{fifo}' >/dev/null 2>&1 & echo $!; exec sleep 60",
        fifo = fifo.display()
    );
    let mut shell = Command::new("sh").args(["-c", &script]).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(shell.stdout.take().unwrap()), &mut line).unwrap();
    let server: u32 = line.trim().parse().unwrap();
    wait_until("the server runs", || std::fs::read_link(format!("/proc/{server}/exe")).is_ok_and(|e| e.ends_with("mcp-bench-server")));
    std::thread::sleep(Duration::from_millis(200));
    assert!(!gone(server), "the server ended before its parent did");
    shell.kill().unwrap();
    shell.wait().unwrap();
    wait_until("the server dies with its parent", || gone(server));
}

#[test]
fn a_server_whose_parent_is_already_gone_refuses_to_start() {
    // Held by a pid that is not its parent (init's): as if the harness died before the server
    // set the parent-death signal.
    let out = Command::new(SERVER).args(["wrapper", "--backend-url", "http://127.0.0.1:9"]).env(HELD_BY_ENV, "1").stdin(Stdio::piped()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the process that started this server (pid 1) is gone"), "{stderr}");
}
