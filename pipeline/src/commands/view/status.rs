//! One experiment's state, read without touching it: whether a run is writing it now, what its
//! manifest planned, how many planned sessions are recorded, and how they came out.
//!
//! **Running** is read without the experiment's lock. A run holds an exclusive `flock` on
//! `<exp>/.lock` for as long as it writes ([`crate::experiment::Experiment::lock`]); taking even a
//! shared lock to test it could make a run that is starting at that moment refuse. Instead the
//! kernel's table of held locks, `/proc/locks`, is read: a `FLOCK` entry on the lock file's
//! device and inode means a run holds it (the entry names the holder's pid). Where `/proc/locks`
//! cannot be read, the pid the run wrote into the lock file is checked for being alive — weaker
//! (a stale lock file whose pid was reused reads as running), and said so. A run on another
//! machine writing into a shared folder is not seen by either: its experiment reads as
//! incomplete while its records arrive.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use records::{ExperimentManifest, SessionRecord, Validity};
use serde::Serialize;

/// (model id, server, task id, rep): one planned session.
pub type SessionKey = (String, String, String, u32);

/// Who holds the experiment's lock, if anyone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    pub pid: Option<u32>,
    /// How it was seen: `/proc/locks`, or the lock file's pid alive.
    pub how: String,
}

/// Reads whether a run holds `<exp>/.lock` now; never opens the file for writing, never locks it.
pub fn holder(exp: &Path) -> Option<Holder> {
    let lock = exp.join(crate::experiment::LOCK);
    let meta = std::fs::metadata(&lock).ok()?;
    // The run writes "pid N since T" into the file once it holds the lock.
    let written_pid: Option<u32> =
        std::fs::read_to_string(&lock).ok().and_then(|t| t.split_whitespace().skip_while(|w| *w != "pid").nth(1).and_then(|p| p.parse().ok()));
    match std::fs::read_to_string("/proc/locks") {
        Ok(table) => flock_holder(&table, meta.dev(), meta.ino(), written_pid).map(|pid| Holder { pid: Some(pid), how: "/proc/locks lists its lock".into() }),
        Err(e) => {
            let pid = written_pid?;
            let alive = match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None) {
                Ok(()) => true,
                Err(errno) => errno == nix::errno::Errno::EPERM,
            };
            alive.then(|| Holder {
                pid: Some(pid),
                how: format!("the pid in its lock file is alive; /proc/locks unreadable: {e}, and a reused pid would read as running"),
            })
        }
    }
}

/// The pid of a `FLOCK` entry of `/proc/locks` on (`dev`, `ino`). Entries read
/// `1: FLOCK  ADVISORY  WRITE 2806 fe:00:10010782 0 EOF` (major and minor in hex); a waiter's
/// line (`->` after the number) holds nothing and is skipped. An entry on the inode whose pid is the one the lock file names
/// also counts (a filesystem may report another device number to `stat` than to the lock table).
fn flock_holder(table: &str, dev: u64, ino: u64, written_pid: Option<u32>) -> Option<u32> {
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    for line in table.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.contains(&"->") {
            continue;
        }
        let [_, kind, _, _, pid, id, ..] = fields.as_slice() else { continue };
        if *kind != "FLOCK" {
            continue;
        }
        let mut parts = id.split(':');
        let (Some(maj), Some(min), Some(inode)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let (Ok(maj), Ok(min), Ok(inode), Ok(pid)) = (u64::from_str_radix(maj, 16), u64::from_str_radix(min, 16), inode.parse::<u64>(), pid.parse::<u32>())
        else {
            continue;
        };
        if inode == ino && ((maj, min) == (major, minor) || written_pid == Some(pid)) {
            return Some(pid);
        }
    }
    None
}

/// The sessions `m` plans: every model × every server × the tasks of the server's module × reps
/// 1..=k — and for one shard of a plan, the part of it that shard runs, selected as the run
/// selects it (`Shard::select` over the same unit keys as
/// [`crate::plan::RunPlan::conversations`]).
pub fn planned_sessions(m: &ExperimentManifest) -> Result<BTreeSet<SessionKey>, String> {
    if let Some(seq) = &m.sequential {
        return Err(format!(
            "a sequential experiment draws pairs until each comparison is decided (at most {} per comparison): how many it runs is not planned; its report says where each stopped",
            seq.max_pairs
        ));
    }
    let warm = m.session_mode == Some(records::SessionMode::Warm);
    let mut modules: Vec<&str> = m.servers.iter().map(|s| s.module.as_str()).collect();
    modules.sort_unstable();
    modules.dedup();
    // Each unit: its shard key and its sessions.
    let mut units: Vec<(String, Vec<SessionKey>)> = Vec::new();
    for model in &m.models {
        for module in &modules {
            let arms: Vec<&str> = m.servers.iter().filter(|s| s.module == *module).map(|s| s.name.as_str()).collect();
            let tasks: Vec<(&str, records::Split)> = m.tasks.iter().filter_map(|t| Some((t.key.strip_prefix(module)?.strip_prefix('/')?, t.split))).collect();
            for rep in 1..=m.k {
                if warm {
                    for split in [records::Split::Dev, records::Split::HeldOut] {
                        let of_split: Vec<&str> = tasks.iter().filter(|(_, s)| *s == split).map(|(t, _)| *t).collect();
                        if of_split.is_empty() {
                            continue;
                        }
                        let key = format!("{}\u{0}{module}\u{0}{split}\u{0}{rep}", model.id);
                        let sessions = arms.iter().flat_map(|a| of_split.iter().map(move |t| (model.id.clone(), a.to_string(), t.to_string(), rep))).collect();
                        units.push((key, sessions));
                    }
                } else {
                    for (task, _) in &tasks {
                        let key = format!("{}\u{0}{module}\u{0}{task}\u{0}{rep}", model.id);
                        units.push((key, arms.iter().map(|a| (model.id.clone(), a.to_string(), task.to_string(), rep)).collect()));
                    }
                }
            }
        }
    }
    let picked: Vec<usize> = match &m.shard {
        None => (0..units.len()).collect(),
        Some(s) => {
            if s.count == 0 || s.index == 0 || s.index > s.count {
                return Err(format!("the manifest names shard {}/{}, which no run can be", s.index, s.count));
            }
            let shard = crate::shard::Shard { index: s.index, count: s.count, source: crate::shard::ShardSource::Flag };
            shard.select(&units.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>())
        }
    };
    Ok(picked.into_iter().flat_map(|i| units[i].1.clone()).collect())
}

/// What one record says, kept between polls (a record is read again only when it changes).
#[derive(Debug, Clone)]
pub struct Brief {
    pub key: SessionKey,
    pub role: records::Role,
    /// `passed`, `failed`, `could_not_score` or `invalid` (the report's outcome filter's words).
    pub outcome: &'static str,
    pub invalid_reason: Option<String>,
    pub ended_at: DateTime<Utc>,
}

impl Brief {
    fn of(r: &SessionRecord) -> Self {
        let (outcome, invalid_reason) = match (&r.validity, r.verifier.as_ref().map(|v| v.verdict)) {
            (Validity::Invalid { reason, .. }, _) => ("invalid", Some(reason.as_str().to_owned())),
            (_, Some(records::Verdict::Passed)) => ("passed", None),
            (_, Some(records::Verdict::Failed)) => ("failed", None),
            _ => ("could_not_score", None),
        };
        Self { key: (r.model.id.clone(), r.server.clone(), r.task.clone(), r.rep), role: r.role, outcome, invalid_reason, ended_at: r.ended_at }
    }
}

/// A file's identity for caching: modification time and length.
type Stamp = (Option<SystemTime>, u64);

/// One experiment folder as last scanned: its records' briefs, and a key that changes whenever
/// any file a report reads changes.
#[derive(Debug, Default)]
pub struct Scan {
    /// Record path (relative to the experiment) → its stamp and what it says, or why it could
    /// not be read.
    records: HashMap<String, (Stamp, Result<Brief, String>)>,
    pub replaced: usize,
    /// Changes with any file under the experiment folder (dotfiles aside).
    pub state: u64,
    pub files: usize,
}

impl Scan {
    /// Scans `dir` again, reading only the records that are new or changed since the last scan.
    pub fn refresh(&mut self, dir: &Path) {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let mut files = Vec::new();
        walk(dir, "", 0, &mut files);
        files.sort();
        let mut seen = HashMap::new();
        let mut replaced = 0;
        for (rel, stamp) in &files {
            (rel, stamp).hash(&mut hasher);
            let parts: Vec<&str> = rel.split('/').collect();
            match parts.as_slice() {
                [arm, file] if arm.contains("__") && file.ends_with(".json") => {
                    let brief = match self.records.remove(rel) {
                        Some((old, brief)) if old == *stamp => brief,
                        _ => read_brief(&dir.join(rel)),
                    };
                    seen.insert(rel.clone(), (*stamp, brief));
                }
                [arm, sub, file] if arm.contains("__") && *sub == crate::experiment::SUPERSEDED && file.ends_with(".json") => replaced += 1,
                _ => {}
            }
        }
        self.records = seen;
        self.replaced = replaced;
        self.files = files.len();
        self.state = hasher.finish();
    }

    pub fn briefs(&self) -> impl Iterator<Item = (&String, &Result<Brief, String>)> {
        self.records.iter().map(|(p, (_, b))| (p, b))
    }
}

/// Every file under `dir` (depth ≤ 3: `<model>__<server>/superseded/<file>`), dotfiles and dot
/// folders left out, with its stamp.
fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<(String, Stamp)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let Some(name) = e.file_name().to_str().map(str::to_owned) else { continue };
        if name.starts_with('.') {
            continue;
        }
        let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        let Ok(meta) = std::fs::metadata(e.path()) else { continue };
        if meta.is_dir() {
            if depth < 2 {
                walk(&e.path(), &rel, depth + 1, out);
            }
        } else {
            out.push((rel, (meta.modified().ok(), meta.len())));
        }
    }
}

fn read_brief(path: &PathBuf) -> Result<Brief, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    let record: SessionRecord = serde_json::from_slice(&bytes).map_err(|e| format!("not a session record: {e}"))?;
    Ok(Brief::of(&record))
}

/// Planned and recorded sessions, and how the recorded ones came out.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Progress {
    /// Null when the plan cannot be worked out (see `planned_unknown`).
    pub planned: Option<usize>,
    pub planned_unknown: Option<String>,
    /// Planned sessions with a record (all records when the plan is unknown).
    pub recorded: usize,
    pub valid: usize,
    pub passed: usize,
    pub failed: usize,
    pub could_not_score: usize,
    /// Invalid reason → count.
    pub invalid: BTreeMap<String, usize>,
    /// Records of sessions the manifest does not plan (`aggregate` refuses such a folder).
    pub outside_plan: usize,
    /// Attempts a rerun replaced (under `superseded/`).
    pub replaced: usize,
    /// Records that could not be read, with why.
    pub unreadable: Vec<String>,
}

pub fn progress(scan: &Scan, planned: &Result<BTreeSet<SessionKey>, String>) -> Progress {
    let mut p = Progress { replaced: scan.replaced, ..Progress::default() };
    match planned {
        Ok(set) => p.planned = Some(set.len()),
        Err(why) => p.planned_unknown = Some(why.clone()),
    }
    let mut unreadable: Vec<String> = Vec::new();
    for (path, brief) in scan.briefs() {
        let b = match brief {
            Ok(b) => b,
            Err(e) => {
                unreadable.push(format!("{path}: {e}"));
                continue;
            }
        };
        if let Ok(set) = planned
            && !set.contains(&b.key)
        {
            p.outside_plan += 1;
            continue;
        }
        p.recorded += 1;
        match b.outcome {
            "invalid" => *p.invalid.entry(b.invalid_reason.clone().unwrap_or_default()).or_default() += 1,
            other => {
                p.valid += 1;
                match other {
                    "passed" => p.passed += 1,
                    "failed" => p.failed += 1,
                    _ => p.could_not_score += 1,
                }
            }
        }
    }
    unreadable.sort();
    p.unreadable = unreadable;
    p
}

/// Where the experiment stands.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Status {
    /// A run holds the lock now.
    Running { holder: Holder },
    /// The manifest says the run stopped early.
    Stopped { kind: String, detail: String, at: DateTime<Utc>, resume: Option<String> },
    /// Every planned session has a record.
    Complete,
    /// Not running, no stop recorded, planned sessions missing (a run killed, or a shard
    /// elsewhere still going): the command that resumes it.
    Incomplete { missing: usize, resume: Option<String> },
    /// Not running and no stop recorded, but the plan is unknown: whether it is complete cannot
    /// be told.
    Ended { why: String },
}

pub fn status(holder: Option<Holder>, manifest: Option<&ExperimentManifest>, progress: &Progress) -> Status {
    let resume = manifest.filter(|m| !m.command.is_empty()).map(|m| aggregate::document::format::shell_line(&m.command));
    if let Some(holder) = holder {
        return Status::Running { holder };
    }
    if let Some(stop) = manifest.and_then(|m| m.stopped.as_ref()) {
        return Status::Stopped { kind: stop.kind.clone(), detail: stop.detail.clone(), at: stop.at, resume };
    }
    match progress.planned {
        Some(planned) if progress.recorded >= planned => Status::Complete,
        Some(planned) => Status::Incomplete { missing: planned - progress.recorded, resume },
        None => Status::Ended { why: progress.planned_unknown.clone().unwrap_or_default() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flock_entry_on_the_lock_files_inode_is_a_holder() {
        let dev = nix::sys::stat::makedev(0xfe, 0);
        let table = "1: FLOCK  ADVISORY  WRITE 2806 fe:00:10010782 0 EOF\n2: POSIX  ADVISORY  READ 1031 fe:00:777 128 128\n3: -> FLOCK  ADVISORY  WRITE 99 fe:00:5 0 EOF\n";
        assert_eq!(flock_holder(table, dev, 10010782, None), Some(2806));
        assert_eq!(flock_holder(table, dev, 777, None), None, "a POSIX lock is not the run's flock");
        assert_eq!(flock_holder(table, dev, 5, None), None, "a waiter holds nothing");
        assert_eq!(flock_holder(table, dev, 1, None), None);
        let other_dev = nix::sys::stat::makedev(8, 1);
        assert_eq!(flock_holder(table, other_dev, 10010782, None), None, "same inode, another device");
        assert_eq!(flock_holder(table, other_dev, 10010782, Some(2806)), Some(2806), "same inode and the pid the lock file names");
    }
}
