//! Containment of every server process the bench starts: the process, and anything it starts,
//! ends with its session — whatever it does to get away.
//!
//! A process group alone does not hold a server: a descendant that calls `setsid()` (what a
//! daemonising helper does) leaves the group, survives the group's kill and lives on, able to
//! reach the backend of the next session's world. So each server is spawned [`prepare`]d:
//!
//! * **a cgroup (v2) of its own** where the machine lets this process create one (under its own
//!   cgroup, in a folder named for this process): every descendant stays in it whatever it does,
//!   and `cgroup.kill` ends them all at once. A run that was SIGKILLed leaves its folder behind;
//!   the next process to start a server removes the folders of processes that are gone, killing
//!   what is left in them.
//! * **else its process tree**: the server is made a child subreaper, so what its descendants
//!   orphan stays in its tree, and at the end the tree is walked from `/proc` (every session
//!   and group), stopped and killed. This process is a subreaper too ([`become_subreaper`]):
//!   what a server orphans after it died comes here, and is killed ([`sweep_inherited`]).
//!
//! Either way the server gets the parent-death signal (SIGKILL), so that a SIGKILLed harness
//! does not leave it running, and no file descriptor but stdin, stdout and stderr: descriptors
//! the caller left open without close-on-exec are closed at its exec.
//!
//! `MCPBENCH_CONTAIN=process-tree` chooses the second way even where cgroups are writable (what
//! the tests use to check it).
//!
//! The bench's own servers (`pipeline serve`, which starts no process) are held by their process
//! group alone ([`Hold::Group`]): the parent-death signal and the closed descriptors still, but no
//! cgroup to make and remove and no `/proc` walk, which cost a session ≈ 10 ms for nothing. They
//! are spawned with no code between fork and exec (so as a vfork) and set both up themselves,
//! first thing ([`hold_self`]).

use std::collections::BTreeSet;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// The variable that forces the process-tree way.
pub const MODE_VAR: &str = "MCPBENCH_CONTAIN";

/// How server processes are held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// One cgroup per server under this folder (this process's own).
    Cgroup(PathBuf),
    /// The process tree, walked from `/proc`; the reason cgroups are not used.
    ProcessTree(String),
}

static MODE: LazyLock<Mode> = LazyLock::new(|| {
    let mode = detect();
    match &mode {
        Mode::Cgroup(dir) => tracing::debug!(dir = %dir.display(), "server processes are contained by cgroup"),
        Mode::ProcessTree(why) => tracing::debug!(why, "server processes are contained by process tree"),
    }
    mode
});

/// How this process contains the servers it starts (decided once, at the first use).
pub fn mode() -> &'static Mode {
    &MODE
}

/// The leaders of every server this process started: a process in one of their groups is a
/// server's, whoever its parent.
static LEADERS: LazyLock<Mutex<BTreeSet<i32>>> = LazyLock::new(Mutex::default);
/// Whether [`become_subreaper`] succeeded: only then can an orphan come here to be swept.
static SUBREAPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes this process a child subreaper: a process orphaned below it (a server's daemonised
/// helper whose server is gone) becomes its child rather than init's, so that
/// [`sweep_inherited`] can end it. For the binary that runs sessions; harmless twice.
pub fn become_subreaper() {
    match nix::sys::prctl::set_child_subreaper(true) {
        Ok(()) => SUBREAPER.store(true, Ordering::Relaxed),
        Err(e) => tracing::debug!("could not become a child subreaper: {e}"),
    }
}

/// Any process that starts servers is a child subreaper, so that the processes a killed server
/// leaves come to it to be reaped: under an init that never reaps (containers, some sandboxes)
/// their zombies would keep the server's cgroup from being removed. Sweeping such orphans is
/// only for a process that asked ([`become_subreaper`]).
fn reap_what_servers_orphan() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = nix::sys::prctl::set_child_subreaper(true);
    });
}

/// How much of what a server does is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Everything it starts, whatever it does: its cgroup, else its process tree ([`mode`]). For
    /// every server the bench did not write.
    Whole,
    /// Its process group, the parent-death signal and no inherited descriptor: for the bench's
    /// own server binary, which starts no process.
    Group,
}

/// How one server is held, once spawned.
#[derive(Debug, Clone)]
enum Holding {
    Cgroup(PathBuf),
    Tree,
    Group,
}

/// What [`prepare`] set up for one server, to hand to [`Contained::track`] once it is spawned.
#[derive(Debug)]
pub struct Prepared {
    holding: Holding,
}

/// Sets `cmd` up to be contained: its own cgroup (if the mode is [`Mode::Cgroup`]), joined
/// between fork and exec so that nothing it runs is ever outside; the parent-death signal; a
/// subreaper of its own orphans; every descriptor above stderr closed at exec. Spawn it as a
/// process group leader too (the group is still how a server's stdio children are signalled).
/// With [`Hold::Group`], only the parent-death signal and the descriptors, which the server sets
/// up itself ([`hold_self`]).
pub fn prepare(cmd: &mut tokio::process::Command, hold: Hold) -> io::Result<Prepared> {
    if hold == Hold::Group {
        // No code between fork and exec: the spawn can then be posix_spawn's, a vfork that copies
        // nothing of this process (a fork copied its page tables, then faulted on every page it
        // wrote until the exec: 2.6–11.5 of a session's 30–40 CPU-ms in four paired runs,
        // docs/performance.md). The server holds itself instead, first thing ([`hold_self`]).
        cmd.env(HELD_BY_ENV, std::process::id().to_string());
        return Ok(Prepared { holding: Holding::Group });
    }
    clean_stale_once();
    remove_pending();
    reap_what_servers_orphan();
    let (holding, procs) = match mode() {
        Mode::Cgroup(root) => {
            static N: AtomicU64 = AtomicU64::new(0);
            let dir = root.join(format!("server-{}", N.fetch_add(1, Ordering::Relaxed)));
            std::fs::create_dir(&dir).map_err(|e| io::Error::new(e.kind(), format!("creating the server's cgroup {}: {e}", dir.display())))?;
            match std::fs::OpenOptions::new().write(true).open(dir.join("cgroup.procs")) {
                Ok(f) => (Holding::Cgroup(dir), Some(f)),
                Err(e) => {
                    let _ = std::fs::remove_dir(&dir);
                    return Err(io::Error::new(e.kind(), format!("opening {}/cgroup.procs: {e}", dir.display())));
                }
            }
        }
        Mode::ProcessTree(_) => (Holding::Tree, None),
    };
    in_child(cmd, procs);
    Ok(Prepared { holding })
}

/// Between fork and exec, in the child.
#[allow(unsafe_code)]
fn in_child(cmd: &mut tokio::process::Command, procs: Option<std::fs::File>) {
    let parent = nix::unistd::getpid();
    let procs_fd = procs.as_ref().map(AsRawFd::as_raw_fd);
    // SAFETY: the closure runs between fork and exec, where only async-signal-safe calls are
    // allowed: it makes raw syscalls (prctl, getppid, write, close_range, fcntl) and builds
    // io::Errors from errnos, which does not allocate; no lock, no heap. `procs` is moved into
    // the closure, so its descriptor stays open in the parent until the command is dropped.
    unsafe {
        cmd.pre_exec(move || {
            let _keep = &procs;
            if let Some(fd) = procs_fd {
                // "0" moves the writer — this child — into the cgroup, before it runs anything.
                if nix::libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
            // The parent may have died between fork and prctl: the signal would never come.
            if nix::unistd::getppid() != parent {
                return Err(io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)?;
            descriptors_above_stderr(false);
            Ok(())
        });
    }
}

/// Set by the harness on a server it spawns as its own ([`Hold::Group`]): the harness's pid.
pub const HELD_BY_ENV: &str = "MCPBENCH_HELD_BY";

/// What the spawn of one of the bench's own servers ([`Hold::Group`]) leaves to the server: the
/// parent-death signal (and an exit at once if that parent is already gone), and no descriptor
/// above stderr. Does nothing unless [`HELD_BY_ENV`] is set. Call it first thing in `main`,
/// before the process opens a descriptor of its own (an async runtime does): it closes them.
pub fn hold_self() {
    let Some(parent) = std::env::var(HELD_BY_ENV).ok().and_then(|p| p.parse::<i32>().ok()) else { return };
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    // The harness may have died before the line above: the signal would never come.
    if nix::unistd::getppid().as_raw() != parent {
        eprintln!("error: the process that started this server (pid {parent}) is gone");
        std::process::exit(1);
    }
    descriptors_above_stderr(true);
}

/// Every descriptor above stderr: closed now (`now`: in a process that is starting, before it
/// opened any of its own), else marked close-on-exec (between fork and exec: those std opened for
/// the spawn already are — it reports a failed exec through one, so they must not close before
/// the exec — and any the caller's caller left open without the flag get it).
#[allow(unsafe_code)]
fn descriptors_above_stderr(now: bool) {
    const CLOSE_RANGE_CLOEXEC: nix::libc::c_uint = 1 << 2;
    // SAFETY: raw syscalls on descriptor numbers; no memory is touched.
    unsafe {
        let flags = if now { 0 } else { CLOSE_RANGE_CLOEXEC };
        if nix::libc::syscall(nix::libc::SYS_close_range, 3 as nix::libc::c_uint, nix::libc::c_uint::MAX, flags) == 0 {
            return;
        }
        // Kernels before 5.11: every descriptor up to the soft limit, one at a time.
        let mut limit = nix::libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        let max = if nix::libc::getrlimit(nix::libc::RLIMIT_NOFILE, &mut limit) == 0 { limit.rlim_cur.min(1 << 16) as i32 } else { 1024 };
        for fd in 3..max {
            if now {
                nix::libc::close(fd);
            } else {
                nix::libc::fcntl(fd, nix::libc::F_SETFD, nix::libc::FD_CLOEXEC);
            }
        }
    }
}

impl Prepared {
    /// Holds the server spawned as `pid` (its group's leader): killed whole when the returned
    /// guard is dropped, or by [`kill_all`].
    pub fn track(self, pid: u32) -> Contained {
        let leader = pid as i32;
        LEADERS.lock().unwrap().insert(leader);
        RUNNING.lock().unwrap().insert(leader, self.holding);
        Contained { leader }
    }

    /// The spawn failed: removes what [`prepare`] made.
    pub fn abandon(self) {
        if let Holding::Cgroup(dir) = self.holding {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The servers running now: leader → how it is held.
static RUNNING: LazyLock<Mutex<std::collections::BTreeMap<i32, Holding>>> = LazyLock::new(Mutex::default);

/// A running server, and everything it started: killed when this is dropped, even once the
/// server itself has exited (a child it left holding its stdout open, or a daemon it started,
/// would otherwise outlive the session).
#[derive(Debug)]
pub struct Contained {
    leader: i32,
}

impl Drop for Contained {
    fn drop(&mut self) {
        let holding = RUNNING.lock().unwrap().remove(&self.leader);
        if let Some(holding) = holding {
            end(self.leader, &holding);
        }
    }
}

/// Kills every server still running and what they started, then sweeps orphans: what a command
/// calls on its way out, however it leaves (done, refused, interrupted).
pub fn kill_all() {
    let running = std::mem::take(&mut *RUNNING.lock().unwrap());
    for (leader, holding) in running {
        end(leader, &holding);
    }
    sweep_inherited();
    // The killed servers' last zombies are being reaped by now: a short wait for their folders.
    let deadline = Instant::now() + Duration::from_millis(200);
    while !remove_pending() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    if let Mode::Cgroup(root) = mode() {
        let _ = std::fs::remove_dir(root);
    }
}

fn end(leader: i32, holding: &Holding) {
    let killed = match holding {
        Holding::Cgroup(dir) => kill_cgroup(dir),
        Holding::Tree => kill_tree(leader),
        Holding::Group => vec![],
    };
    // ESRCH (the group is already gone) is the usual, good outcome.
    let _ = killpg(Pid::from_raw(leader), Signal::SIGKILL);
    // What the kill orphaned came here (we are a subreaper): reap it, never the leader itself,
    // which its spawner reaps.
    reap(killed.into_iter().filter(|&p| p != leader));
    match holding {
        // A cgroup is removed once its last process is reaped (a zombie keeps it busy): the
        // leader is reaped by its spawner in a moment, so a folder still busy now is retried
        // at the next server's start and on the way out, never waited for here.
        Holding::Cgroup(dir) => {
            if std::fs::remove_dir(dir).is_err() {
                PENDING.lock().unwrap().push(dir.to_owned());
            }
        }
        // In a cgroup nothing gets out (short of a server with the right to move itself to
        // another cgroup); without one, what a server orphaned after it died came here.
        Holding::Tree => sweep_inherited(),
        Holding::Group => {}
    }
}

/// Cgroups of ended servers still to remove (a zombie of theirs was not reaped yet).
static PENDING: LazyLock<Mutex<Vec<PathBuf>>> = LazyLock::new(Mutex::default);

/// Tries once to remove each pending cgroup; whether none is left.
fn remove_pending() -> bool {
    let mut pending = PENDING.lock().unwrap();
    pending.retain(|dir| std::fs::remove_dir(dir).is_err() && dir.exists());
    pending.is_empty()
}

/// Kills everything in `dir`; the pids it held.
fn kill_cgroup(dir: &Path) -> Vec<i32> {
    let members = pids_in(dir);
    if std::fs::write(dir.join("cgroup.kill"), "1").is_err() {
        // No cgroup.kill (kernels before 5.14, where detection would have said so): by hand.
        for &p in &members {
            let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
        }
    }
    members
}

fn pids_in(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Stops and kills `leader`'s process tree (every descendant, whatever its session or group):
/// stopped first, walked again until no new process appears (a stopped process cannot fork),
/// then killed. The pids killed.
fn kill_tree(leader: i32) -> Vec<i32> {
    let mut seen: BTreeSet<i32> = BTreeSet::new();
    for _ in 0..50 {
        let tree = descendants(leader);
        let new: Vec<i32> = tree.iter().copied().filter(|p| !seen.contains(p)).collect();
        if new.is_empty() {
            break;
        }
        for &p in &new {
            let _ = kill(Pid::from_raw(p), Signal::SIGSTOP);
            seen.insert(p);
        }
    }
    for &p in &seen {
        let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
    }
    seen.into_iter().collect()
}

/// `root` and its descendants, from `/proc`'s parent links.
fn descendants(root: i32) -> Vec<i32> {
    let parents = parent_links();
    let mut out = vec![];
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        out.push(p);
        frontier.extend(parents.iter().filter(|&&(_, ppid)| ppid == p).map(|&(pid, _)| pid));
    }
    out
}

/// (pid, ppid) of every process.
fn parent_links() -> Vec<(i32, i32)> {
    all_pids().filter_map(|pid| Some((pid, stat_of(pid)?.ppid))).collect()
}

fn all_pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc").into_iter().flatten().flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
}

/// What `/proc/<pid>/stat` says of a process's place: its parent, group and session.
#[derive(Debug, Clone, Copy)]
struct Place {
    ppid: i32,
    pgrp: i32,
    session: i32,
}

fn stat_of(pid: i32) -> Option<Place> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp session …`: comm may hold spaces and parentheses, so read
    // after the last ')'.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace().skip(1).map(|f| f.parse::<i32>().ok());
    Some(Place { ppid: fields.next()??, pgrp: fields.next()??, session: fields.next()?? })
}

fn parent_of(pid: i32) -> Option<i32> {
    stat_of(pid).map(|p| p.ppid)
}

/// Kills and reaps every orphan of a server that was reparented here: a child of this process
/// it did not spawn as a server, that left this process's session (`setsid()`, what daemons
/// do) or sits in a server's process group — never a child of this process's own (an embedded
/// Postgres, a `git` it runs: same session, their own or this process's group). Processes still
/// held in a running server's cgroup are left to that server's end (killing them now could
/// break a session in flight). Only a subreaper ([`become_subreaper`]) inherits orphans.
pub fn sweep_inherited() {
    if !SUBREAPER.load(Ordering::Relaxed) {
        return;
    }
    let me = nix::unistd::getpid().as_raw();
    let Some(mine) = stat_of(me) else { return };
    let leaders = LEADERS.lock().unwrap().clone();
    let (own, held): (BTreeSet<i32>, Vec<PathBuf>) = {
        let running = RUNNING.lock().unwrap();
        let held = running.values().filter_map(|h| if let Holding::Cgroup(dir) = h { Some(dir.clone()) } else { None }).collect();
        (running.keys().copied().collect(), held)
    };
    let mut killed = vec![];
    for pid in all_pids() {
        let Some(place) = stat_of(pid) else { continue };
        let orphan = place.ppid == me && !own.contains(&pid) && (place.session != mine.session || leaders.contains(&place.pgrp));
        if !orphan || (!held.is_empty() && in_any(pid, &held)) {
            continue;
        }
        killed.extend(kill_tree(pid));
    }
    reap(killed.into_iter());
}

/// Whether `pid` is in one of the cgroups `dirs`.
fn in_any(pid: i32, dirs: &[PathBuf]) -> bool {
    let Mode::Cgroup(root) = mode() else { return false };
    let Some(mount_relative) = own_cgroup_line(&format!("/proc/{pid}/cgroup")) else { return false };
    let Some(mount) = cgroup2_mount() else { return false };
    let path = mount.join(mount_relative.trim_start_matches('/'));
    path.starts_with(root) && dirs.iter().any(|d| path.starts_with(d))
}

/// Collects the exit status of each of `pids` that is (or becomes, within a few milliseconds)
/// a dead child of this process, so that no zombie is left.
fn reap(pids: impl Iterator<Item = i32>) {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let me = nix::unistd::getpid().as_raw();
    for pid in pids {
        let deadline = Instant::now() + Duration::from_millis(20);
        loop {
            match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) if Instant::now() < deadline => std::thread::sleep(Duration::from_micros(200)),
                // Not (yet) our child: reparented to us a moment later, or to someone else.
                Err(nix::errno::Errno::ECHILD) if Instant::now() < deadline && parent_of(pid).is_some_and(|p| p != me) => {
                    std::thread::sleep(Duration::from_micros(200));
                }
                _ => break,
            }
        }
    }
}

/// The cgroup2 mount point, from `/proc/self/mountinfo`.
fn cgroup2_mount() -> Option<PathBuf> {
    static MOUNT: LazyLock<Option<PathBuf>> = LazyLock::new(|| {
        let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        info.lines().find_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let mount = before.split_whitespace().nth(4)?;
            (after.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(mount))
        })
    });
    MOUNT.clone()
}

/// The unified hierarchy's path in a `/proc/<pid>/cgroup` file (its `0::` line).
fn own_cgroup_line(file: &str) -> Option<String> {
    std::fs::read_to_string(file).ok()?.lines().find_map(|l| l.strip_prefix("0::").map(str::to_owned))
}

/// Prefix of the folder each process makes under its own cgroup: `mcpbench-<pid>`.
const FOLDER_PREFIX: &str = "mcpbench-";

fn detect() -> Mode {
    if std::env::var(MODE_VAR).is_ok_and(|v| v == "process-tree") {
        return Mode::ProcessTree(format!("{MODE_VAR}=process-tree"));
    }
    let Some(mount) = cgroup2_mount() else { return Mode::ProcessTree("no cgroup2 file system is mounted".into()) };
    let Some(own) = own_cgroup_line("/proc/self/cgroup") else { return Mode::ProcessTree("this process is in no cgroup2 hierarchy".into()) };
    let parent = mount.join(own.trim_start_matches('/'));
    let dir = parent.join(format!("{FOLDER_PREFIX}{}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&dir) {
        return Mode::ProcessTree(format!("cannot create a cgroup under {}: {e}", parent.display()));
    }
    if !dir.join("cgroup.kill").exists() {
        let _ = std::fs::remove_dir(&dir);
        return Mode::ProcessTree("the kernel has no cgroup.kill (Linux 5.14 or newer)".into());
    }
    Mode::Cgroup(dir)
}

/// Once per process: the folders of processes that are gone (a SIGKILLed run's), their servers
/// and daemons killed and the folders removed.
fn clean_stale_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Mode::Cgroup(dir) = mode() else { return };
        let Some(parent) = dir.parent() else { return };
        let Ok(entries) = std::fs::read_dir(parent) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix(FOLDER_PREFIX).and_then(|p| p.parse::<i32>().ok()) else { continue };
            if Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            let stale = entry.path();
            let servers: Vec<PathBuf> = std::fs::read_dir(&stale).map(|e| e.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect()).unwrap_or_default();
            let mut killed = 0;
            for server in servers {
                killed += kill_cgroup(&server).len();
                // Busy while a killed process is not reaped (by init, here): left for a later run.
                let _ = std::fs::remove_dir(&server);
            }
            let _ = std::fs::remove_dir(&stale);
            if killed > 0 {
                tracing::warn!(folder = %stale.display(), killed, "killed server processes a run that is gone left behind");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncBufReadExt;

    /// Whether `pid` is gone or a zombie (dead, its exit status not yet collected).
    fn dead(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s[s.rfind(')').unwrap() + 1..].trim_start().starts_with('Z'))
    }

    #[tokio::test]
    async fn the_bench_s_own_server_is_held_by_its_group_with_no_cgroup_and_ends_whole() {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", "sleep 30 & echo $!; wait"]).stdout(std::process::Stdio::piped());
        let (mut wrapped, prepared) = crate::external::own_group(cmd, Hold::Group).unwrap();
        assert!(matches!(prepared.holding, Holding::Group), "no cgroup is made for it: {prepared:?}");
        let mut child = wrapped.spawn().unwrap();
        let contained = prepared.track(child.id().unwrap());
        let stdout = child.inner_mut().stdout().take().unwrap();
        let mut line = String::new();
        tokio::io::BufReader::new(stdout).read_line(&mut line).await.unwrap();
        let sleeper: i32 = line.trim().parse().unwrap();
        assert!(!dead(sleeper));
        drop(contained);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !dead(sleeper) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(dead(sleeper), "the server's child outlived it");
    }
}
