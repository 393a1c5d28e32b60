//! Cleanup observed from outside: each test runs the `embedded_pg_probe` bin
//! as a real process and ends it by returning, panicking, Ctrl-C or SIGKILL.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::{PATIENCE, ShmSnapshot, answers_on_socket_and_wants_a_password, assert_cleaned_up, wait_until};
use embedded_pg::{EmbeddedPostgres, process_alive};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

struct Probe {
    child: Child,
    postmaster: u32,
    dir: PathBuf,
}

/// Starts the probe in its own process group (like a job in a terminal) and
/// waits for its READY line.
fn start_probe(mode: &str) -> Probe {
    let mut child = Command::new(env!("CARGO_BIN_EXE_embedded_pg_probe"))
        .arg(mode)
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("spawning the probe");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = match rx.recv_timeout(PATIENCE) {
        Ok(line) => line,
        Err(_) => {
            let _ = child.kill();
            panic!("the probe printed nothing within {PATIENCE:?}");
        }
    };
    let rest = line.trim().strip_prefix("READY pid=").unwrap_or_else(|| panic!("unexpected probe output {line:?}"));
    let (pid, dir) = rest.split_once(" dir=").expect("dir= in READY line");
    Probe { child, postmaster: pid.parse().expect("postmaster pid"), dir: PathBuf::from(dir) }
}

fn wait_exit(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("the probe did not exit within {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn probe_exit_cleans_up() {
    let before = ShmSnapshot::take();
    let mut probe = start_probe("exit");
    let status = wait_exit(&mut probe.child);
    assert!(status.success(), "{status}");
    assert_cleaned_up(probe.postmaster, &probe.dir, &before);
}

#[test]
fn probe_panic_cleans_up() {
    let before = ShmSnapshot::take();
    let mut probe = start_probe("panic");
    let status = wait_exit(&mut probe.child);
    assert_eq!(status.code(), Some(101), "{status}");
    assert_cleaned_up(probe.postmaster, &probe.dir, &before);
}

#[test]
fn probe_ctrl_c_cleans_up() {
    let before = ShmSnapshot::take();
    let mut probe = start_probe("wait");
    let group = Pid::from_raw(probe.child.id() as i32);
    // The server must sit in its own process group, out of reach of Ctrl-C.
    let pm = Pid::from_raw(probe.postmaster as i32);
    assert_eq!(nix::unistd::getpgid(Some(pm)).unwrap(), pm);
    let socket_dir = probe.dir.join("sock");
    answers_on_socket_and_wants_a_password(&socket_dir, 5432);
    // What a terminal does on Ctrl-C: SIGINT to the whole foreground group.
    nix::sys::signal::killpg(group, Signal::SIGINT).unwrap();
    let status = wait_exit(&mut probe.child);
    assert!(status.success(), "{status}");
    assert_cleaned_up(probe.postmaster, &probe.dir, &before);
}

#[test]
fn probe_sigkill_server_dies_and_dir_is_swept() {
    let before = ShmSnapshot::take();
    let mut probe = start_probe("wait");
    kill(Pid::from_raw(probe.child.id() as i32), Signal::SIGKILL).unwrap();
    let status = wait_exit(&mut probe.child);
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    // PDEATHSIG (SIGINT) makes the orphaned postmaster shut down by itself.
    // It is reparented to init, which may leave a zombie for a while, so
    // "dead" here means not running rather than ESRCH.
    assert!(wait_until(PATIENCE, || !process_alive(probe.postmaster)), "postmaster {} outlived its SIGKILLed parent", probe.postmaster);
    // The next start (here, or in any concurrently running test) sweeps it.
    let pg = EmbeddedPostgres::start().expect("start");
    // Bounded wait: a concurrent test's sweep may be midway through removing it.
    assert!(wait_until(PATIENCE, || !probe.dir.exists()), "{} was not swept", probe.dir.display());
    pg.stop().expect("stop");
    before.assert_no_leaks(probe.postmaster);
}

#[test]
fn missing_binaries_env_override_fails_fast() {
    let empty = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_embedded_pg_probe")).arg("exit").env(embedded_pg::BIN_ENV, empty.path()).output().expect("running the probe");
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.starts_with("ERROR "), "{stdout}");
    assert!(stdout.contains("docker compose up -d"), "{stdout}");
    assert!(stdout.contains("DATABASE_URL"), "{stdout}");
    assert!(stdout.contains(&empty.path().display().to_string()), "{stdout}");
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
}
