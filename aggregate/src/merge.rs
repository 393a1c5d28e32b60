//! Several experiment folders reported as one, only when their records are provably the same
//! measurement: every part passes the checks on its own, every record has a fingerprint, the
//! plans agree, and the merged records pass the checks again (so a session in two parts, or
//! parts whose fingerprints differ, are refused exactly as within one folder).

use std::path::{Path, PathBuf};

use records::ExperimentManifest;

use crate::check::{self, Fingerprints};
use crate::error::{AggregateError, Result};
use crate::load::{Experiment, load_experiment_part};

/// Loads and merges `dirs` (each one experiment folder). The merged experiment's `dir` is the
/// first folder; its manifest, when the parts have them, is the union of their plans.
pub fn merge_experiments(dirs: &[PathBuf]) -> Result<Experiment> {
    merge_experiments_with(dirs, false)
}

/// [`merge_experiments`]; with `allow_incomplete`, planned sessions that no part holds are listed
/// in the merged experiment (and above the report's headline) instead of refusing the merge.
pub fn merge_experiments_with(dirs: &[PathBuf], allow_incomplete: bool) -> Result<Experiment> {
    let Some(first_dir) = dirs.first() else {
        return Err(AggregateError::Unmergeable { path: PathBuf::new(), detail: "no folder given; name at least one experiment".into() });
    };
    let mut parts = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let part = load_experiment_part(dir)?;
        // An empty shard (assigned nothing) has no records to vouch for, and nothing to pool.
        if !part.sessions.is_empty() && check::check(&part)? == Fingerprints::Unknown {
            return Err(unmergeable(
                dir,
                "its records have no fingerprints, so nothing shows they are the same measurement as the other folders'; report it on its own",
            ));
        }
        parts.push(part);
    }
    let mut manifest: Option<ExperimentManifest> = None;
    for (i, part) in parts.iter().enumerate() {
        manifest = match (i, manifest, &part.manifest) {
            (0, _, m) => m.clone(),
            (_, Some(ours), Some(theirs)) => Some(union(ours, theirs, &part.dir)?),
            (_, None, None) => None,
            (_, _, _) => {
                return Err(unmergeable(
                    &part.dir,
                    "some folders have a manifest and some do not, so the planned k is known for only part of the records; report them apart",
                ));
            }
        };
    }
    check_shards(&parts)?;
    let mut merged = Experiment { dir: first_dir.clone(), manifest, sessions: Vec::new(), superseded: Vec::new(), ignored: Vec::new(), missing: Vec::new() };
    for part in parts {
        merged.sessions.extend(part.sessions);
        merged.superseded.extend(part.superseded);
        merged.ignored.extend(part.ignored);
    }
    merged.sessions.sort_by(|a, b| a.path.cmp(&b.path));
    merged.superseded.sort_by(|a, b| a.path.cmp(&b.path));
    check::check(&merged)?;
    let missing = missing_sessions(&merged);
    if !missing.is_empty() && !allow_incomplete {
        const SHOWN: usize = 10;
        let more = if missing.len() > SHOWN { format!(" and {} more", missing.len() - SHOWN) } else { String::new() };
        return Err(unmergeable(
            first_dir,
            &format!(
                "the folders hold {} of the plan's sessions; missing: {}{more}. Run (or resume) what is missing, or pass --allow-incomplete to report without them, listed above the headline",
                merged.sessions.len(),
                missing.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    merged.missing = missing;
    Ok(merged)
}

/// Parts that are shards must be shards of one split, each once.
fn check_shards(parts: &[Experiment]) -> Result<()> {
    let shards: Vec<(&Path, &records::manifest::ManifestShard)> =
        parts.iter().filter_map(|p| p.manifest.as_ref().and_then(|m| m.shard.as_ref()).map(|s| (p.dir.as_path(), s))).collect();
    let Some((_, first)) = shards.first() else { return Ok(()) };
    let mut seen: std::collections::BTreeMap<u32, &Path> = std::collections::BTreeMap::new();
    for (dir, s) in &shards {
        if s.count != first.count {
            return Err(unmergeable(dir, &format!("it is shard {}/{}, another part a shard of {}: parts of different splits", s.index, s.count, first.count)));
        }
        if let Some(other) = seen.insert(s.index, dir) {
            return Err(unmergeable(dir, &format!("it is shard {}/{}, and so is {}: one shard twice", s.index, s.count, other.display())));
        }
    }
    Ok(())
}

/// The sessions the merged plan (its manifest: models, servers, tasks of each server's module,
/// k) holds that no part has recorded, as `model · server · task rep k`. None without a manifest.
fn missing_sessions(e: &Experiment) -> Vec<String> {
    let Some(m) = &e.manifest else { return Vec::new() };
    let have: std::collections::BTreeSet<(String, String, String, u32)> =
        e.sessions.iter().map(|s| (s.record.model.id.clone(), s.record.server.clone(), s.record.task.clone(), s.record.rep)).collect();
    let mut out = Vec::new();
    for model in &m.models {
        for server in &m.servers {
            for task in m.tasks.iter().filter_map(|t| t.key.strip_prefix(&format!("{}/", server.module))) {
                for rep in 1..=m.k {
                    if !have.contains(&(model.id.clone(), server.name.clone(), task.to_owned(), rep)) {
                        out.push(format!("{} · {} · {task} rep {rep}", model.id, server.name));
                    }
                }
            }
        }
    }
    out
}

fn unmergeable(dir: &Path, detail: &str) -> AggregateError {
    AggregateError::Unmergeable { path: dir.to_path_buf(), detail: detail.into() }
}

/// The plan covering both parts: the same k, and no server or task defined two ways.
fn union(mut ours: ExperimentManifest, theirs: &ExperimentManifest, dir: &Path) -> Result<ExperimentManifest> {
    if ours.k != theirs.k {
        return Err(unmergeable(
            dir,
            &format!("its manifest plans k = {}, an earlier folder's k = {}; pass@k and pass^k would mean different things", theirs.k, ours.k),
        ));
    }
    if ours.session_mode != theirs.session_mode {
        let mode = |m: Option<records::SessionMode>| m.unwrap_or_default().as_str();
        return Err(unmergeable(
            dir,
            &format!(
                "its manifest plans {} sessions (session_mode), an earlier folder's {}: cold and warm sessions are never pooled; set them side by side with `aggregate --compare A B --along session_mode`",
                mode(theirs.session_mode),
                mode(ours.session_mode)
            ),
        ));
    }
    for s in &theirs.servers {
        match ours.servers.iter().find(|x| x.name == s.name) {
            Some(x) if x != s => {
                return Err(unmergeable(dir, &format!("server {} is planned differently than in an earlier folder (manifest, module or role)", s.name)));
            }
            Some(_) => {}
            None => ours.servers.push(s.clone()),
        }
    }
    for t in &theirs.tasks {
        match ours.tasks.iter().find(|x| x.key == t.key) {
            Some(x) if x != t => {
                return Err(unmergeable(dir, &format!("task {} is planned differently than in an earlier folder (sha256, seed, scale or turn cap)", t.key)));
            }
            Some(_) => {}
            None => ours.tasks.push(t.clone()),
        }
    }
    for m in &theirs.models {
        if !ours.models.iter().any(|x| x.id == m.id) {
            ours.models.push(m.clone());
        }
    }
    ours.experiment = format!("{}+{}", ours.experiment, theirs.experiment);
    ours.preflight_skipped |= theirs.preflight_skipped;
    if ours.stopped.is_none() {
        ours.stopped = theirs.stopped.clone();
    }
    Ok(ours)
}
