//! Helpers shared by the integration tests: a psql client, leak checks and
//! bounded polling. Tests in one binary run in parallel, and other crates'
//! tests may run clusters at the same time, so leak checks only blame
//! resources that belong to the cluster under test or whose creator is dead.

#![allow(dead_code)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use embedded_pg::process_alive;

/// Generous: the CI machines have two busy cores.
pub const PATIENCE: Duration = Duration::from_secs(60);

pub fn psql() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).map(|d| d.join("psql")).find(|p| p.is_file()));
    on_path.unwrap_or_else(|| PathBuf::from("/usr/bin/psql"))
}

/// Runs one SQL statement through psql with the given connection arguments
/// and returns its unaligned, tuples-only output.
pub fn psql_query(conn: &[&str], sql: &str) -> String {
    let out = Command::new(psql()).args(conn).args(["-X", "-v", "ON_ERROR_STOP=1", "-Atc", sql]).env("PGCONNECT_TIMEOUT", "30").output().expect("running psql");
    assert!(out.status.success(), "psql {conn:?} -c {sql:?} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The server answers on its socket, and asks for the password a client without it does not
/// have: psql gets as far as authentication and is refused.
pub fn answers_on_socket_and_wants_a_password(socket_dir: &Path, port: u16) {
    let host = socket_dir.to_str().unwrap();
    let port = port.to_string();
    let out = Command::new(psql())
        .args(["-h", host, "-p", &port, "-U", "postgres", "-d", "postgres", "-w", "-X", "-Atc", "select 1"])
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .env("PGCONNECT_TIMEOUT", "30")
        .output()
        .expect("running psql");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("password"), "psql without the password: {} {err}", out.status);
}

/// Polls `cond` until it holds or `timeout` passes; returns whether it held.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SysvSegment {
    pub key: String,
    pub shmid: String,
    pub cpid: u32,
    pub uid: u32,
}

fn sysv_segments() -> Vec<SysvSegment> {
    let text = std::fs::read_to_string("/proc/sysvipc/shm").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Some(SysvSegment { key: f.first()?.to_string(), shmid: f.get(1)?.to_string(), cpid: f.get(4)?.parse().ok()?, uid: f.get(7)?.parse().ok()? })
        })
        .collect()
}

fn posix_shm_entries() -> HashSet<String> {
    std::fs::read_dir("/dev/shm")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("PostgreSQL."))
        .collect()
}

/// The uid the server runs as (the `postgres` user when we are root).
pub fn server_uid() -> u32 {
    if nix::unistd::Uid::effective().is_root() {
        nix::unistd::User::from_name("postgres").unwrap().expect("postgres user").uid.as_raw()
    } else {
        nix::unistd::Uid::effective().as_raw()
    }
}

/// Shared memory present before a cluster was started.
pub struct ShmSnapshot {
    posix: HashSet<String>,
    sysv: HashSet<SysvSegment>,
}

impl ShmSnapshot {
    pub fn take() -> Self {
        ShmSnapshot { posix: posix_shm_entries(), sysv: sysv_segments().into_iter().collect() }
    }

    /// Shared memory that appeared since the snapshot and was left behind:
    /// `/dev/shm/PostgreSQL.*` files, and server-owned SysV segments created
    /// by `postmaster` or by any process that is now dead.
    fn leaks(&self, postmaster: u32) -> Vec<String> {
        let uid = server_uid();
        let mut leaks: Vec<String> = posix_shm_entries().difference(&self.posix).map(|n| format!("/dev/shm/{n}")).collect();
        leaks.extend(
            sysv_segments()
                .into_iter()
                .filter(|s| s.cpid == postmaster || (s.uid == uid && !self.sysv.contains(s) && !process_alive(s.cpid)))
                .map(|s| format!("SysV segment {s:?}")),
        );
        leaks
    }

    /// Asserts that nothing new is left. Polls, because a concurrently running
    /// initdb creates and removes transient segments of its own.
    pub fn assert_no_leaks(&self, postmaster: u32) {
        let mut last = Vec::new();
        let clean = wait_until(Duration::from_secs(20), || {
            last = self.leaks(postmaster);
            last.is_empty()
        });
        assert!(clean, "shared memory left behind: {last:?}");
    }
}

/// Whether `kill(pid, 0)` says the process no longer exists at all (not even a zombie).
pub fn gone(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None) == Err(nix::errno::Errno::ESRCH)
}

/// The three cleanup checks: postmaster gone (ESRCH), directory gone, no shared memory left.
pub fn assert_cleaned_up(postmaster: u32, dir: &Path, before: &ShmSnapshot) {
    assert!(wait_until(PATIENCE, || gone(postmaster)), "postmaster {postmaster} still exists");
    assert!(!dir.exists(), "{} still exists", dir.display());
    before.assert_no_leaks(postmaster);
}
