//! Several experiment folders reported as one, only when their records are provably the same
//! measurement: every part passes the checks on its own, every record has a fingerprint, the
//! plans agree, and the merged records pass the checks again (so a session in two parts, or
//! parts whose fingerprints differ, are refused exactly as within one folder).

use std::path::{Path, PathBuf};

use records::ExperimentManifest;

use crate::check::{self, Fingerprints};
use crate::error::{AggregateError, Result};
use crate::load::{Experiment, load_experiment};

/// Loads and merges `dirs` (each one experiment folder). The merged experiment's `dir` is the
/// first folder; its manifest, when the parts have them, is the union of their plans.
pub fn merge_experiments(dirs: &[PathBuf]) -> Result<Experiment> {
    let Some(first_dir) = dirs.first() else {
        return Err(AggregateError::Unmergeable { path: PathBuf::new(), detail: "no folder given; name at least one experiment".into() });
    };
    let mut parts = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let part = load_experiment(dir)?;
        if check::check(&part)? == Fingerprints::Unknown {
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
    let mut merged = Experiment { dir: first_dir.clone(), manifest, sessions: Vec::new(), superseded: Vec::new(), ignored: Vec::new() };
    for part in parts {
        merged.sessions.extend(part.sessions);
        merged.superseded.extend(part.superseded);
        merged.ignored.extend(part.ignored);
    }
    merged.sessions.sort_by(|a, b| a.path.cmp(&b.path));
    merged.superseded.sort_by(|a, b| a.path.cmp(&b.path));
    check::check(&merged)?;
    Ok(merged)
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
