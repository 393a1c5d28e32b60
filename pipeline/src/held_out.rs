//! Held-out tasks and their seal (`docs/held-out.md`).
//!
//! A task is `dev` (the default) or `held_out` (`split = "held_out"` in its `meta.toml`, or a
//! family's `family.toml`). Held-out tasks are the anchor the tuning loop cannot touch: `pipeline
//! seal` writes `held_out.lock` beside the module folders with the sha256 of every held-out task
//! folder (text, metadata, verifier, oracle plans, family templates), of every registered
//! server's tool manifest for the modules that have held-out tasks, and of the graders' gold set
//! (`gold/`). Every run and check that includes a held-out task compares the tree with the lock
//! first and refuses, naming each drift, before anything is started. Re-sealing is explicit and
//! takes a reason, which the lock keeps (with every earlier one) and the report repeats.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use records::Split;
use serde::{Deserialize, Serialize};

/// The lockfile's name, in the tasks folder.
pub const LOCK_FILE: &str = "held_out.lock";

/// The graders' gold set's folder, in the tasks folder.
pub const GOLD_DIR: &str = "gold";

/// `held_out.lock`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    pub version: u32,
    /// When the seal last changed, and why.
    pub sealed_at: DateTime<Utc>,
    pub reason: String,
    /// `module/folder` → sha256 of the held-out task folder (a family's folder once, whatever its sizes).
    pub tasks: BTreeMap<String, String>,
    /// Server name → sha256 of its tool manifest at the module's default settings.
    pub manifests: BTreeMap<String, String>,
    /// sha256 of the graders' gold set folder; absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold: Option<String>,
    /// External arm name → sha256 of its folder, for every arm found at the seal: a run's report
    /// says when an arm of it changed after the seal (its author may have seen the held-out
    /// tasks). Not a refusal: an arm is its author's to change.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arms: BTreeMap<String, String>,
    /// Every earlier seal, oldest first: when, why and what changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Sealing>,
}

/// One sealing, as the lock's history keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sealing {
    pub sealed_at: DateTime<Utc>,
    pub reason: String,
    pub changed: Vec<String>,
}

const LOCK_VERSION: u32 = 1;

const LOCK_HEADER: &str = "# The seal of the held-out tasks, the servers' tool manifests and the graders' gold set
# (docs/held-out.md). Written by `pipeline seal --reason \"…\"`; every run and check that includes
# a held-out task refuses when the tree differs from it. Do not edit by hand: re-seal, with a reason.
";

/// What the tree holds now: the entries a lock would have.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Current {
    pub tasks: BTreeMap<String, String>,
    pub manifests: BTreeMap<String, String>,
    pub gold: Option<String>,
    pub arms: BTreeMap<String, String>,
}

impl Lock {
    pub fn path(tasks_dir: &Path) -> PathBuf {
        tasks_dir.join(LOCK_FILE)
    }

    /// The lock of `tasks_dir`, or `None` when it has none.
    pub fn read(tasks_dir: &Path) -> anyhow::Result<Option<Self>> {
        Ok(Self::read_with_sha256(tasks_dir)?.map(|(lock, _)| lock))
    }

    /// The lock and the sha256 of the very bytes it was parsed from (what a run's manifest
    /// records), or `None` when there is none.
    pub fn read_with_sha256(tasks_dir: &Path) -> anyhow::Result<Option<(Self, String)>> {
        let path = Self::path(tasks_dir);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let unreadable = || format!("{} does not parse; restore it from version control, or re-seal", path.display());
        let text = std::str::from_utf8(&bytes).with_context(unreadable)?;
        let lock: Self = toml::from_str(text).with_context(unreadable)?;
        if lock.version != LOCK_VERSION {
            bail!("{}: version {} is not one this build reads ({LOCK_VERSION})", path.display(), lock.version);
        }
        Ok(Some((lock, records::sha256_hex(&bytes))))
    }

    /// A new seal of what the tree holds `now`, for `reason`, keeping `old`'s history and adding
    /// this sealing (with what `changed`) to it.
    pub fn seal(old: Option<&Lock>, now: Current, reason: String, changed: Vec<String>) -> Self {
        let mut history = old.map(|l| l.history.clone()).unwrap_or_default();
        // Whole seconds: the lock is read by people, and nothing needs finer.
        let sealed_at = Utc::now().trunc_subsecs(0);
        history.push(Sealing { sealed_at, reason: reason.clone(), changed });
        Self { version: LOCK_VERSION, sealed_at, reason, tasks: now.tasks, manifests: now.manifests, gold: now.gold, arms: now.arms, history }
    }

    /// Writes the lock into `tasks_dir`, whole or not at all.
    pub fn write(&self, tasks_dir: &Path) -> anyhow::Result<PathBuf> {
        let path = Self::path(tasks_dir);
        let text = format!("{LOCK_HEADER}{}", toml::to_string(self).context("writing the lock as TOML")?);
        records::write_atomically(&path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// Every way `now` differs from the seal, one line each, in a stable order.
    pub fn drift(&self, now: &Current) -> Vec<String> {
        let mut out = Vec::new();
        for (key, sha) in &self.tasks {
            match now.tasks.get(key) {
                None => out.push(format!("{key}: sealed as held out, but it is no longer a held-out task (removed, or relabelled dev)")),
                Some(s) if s != sha => out.push(format!("{key}: the task folder changed since it was sealed")),
                Some(_) => {}
            }
        }
        for key in now.tasks.keys().filter(|k| !self.tasks.contains_key(*k)) {
            out.push(format!("{key}: held out but not sealed (new, or relabelled from dev)"));
        }
        for (name, sha) in &self.manifests {
            match now.manifests.get(name) {
                None => out.push(format!("server {name}: sealed, but no longer a server of a module with held-out tasks")),
                Some(s) if s != sha => out.push(format!("server {name}: its tool manifest changed since the seal")),
                Some(_) => {}
            }
        }
        for name in now.manifests.keys().filter(|k| !self.manifests.contains_key(*k)) {
            out.push(format!("server {name}: serves a module with held-out tasks but its manifest is not sealed"));
        }
        match (&self.gold, &now.gold) {
            (Some(a), Some(b)) if a != b => out.push(format!("{GOLD_DIR}/: the graders' gold set changed since the seal")),
            (Some(_), None) => out.push(format!("{GOLD_DIR}/: sealed, but the gold set is gone")),
            (None, Some(_)) => out.push(format!("{GOLD_DIR}/: the graders' gold set is not sealed")),
            _ => {}
        }
        out
    }

    /// How the external arms differ from the seal, one line each: what `pipeline seal` reports
    /// and re-seals, never a run's refusal.
    pub fn arm_drift(&self, now: &Current) -> Vec<String> {
        let mut out = Vec::new();
        for (name, sha) in &now.arms {
            match self.arms.get(name) {
                None => out.push(format!("arm {name}: not in the seal")),
                Some(s) if s != sha => out.push(format!("arm {name}: its folder changed since the seal")),
                Some(_) => {}
            }
        }
        for name in self.arms.keys().filter(|n| !now.arms.contains_key(*n)) {
            out.push(format!("arm {name}: sealed, but no longer found"));
        }
        out
    }

    /// The one line a report and a manifest say of it.
    pub fn describe(&self) -> String {
        format!("sealed {} — {}", self.sealed_at.to_rfc3339_opts(SecondsFormat::Secs, true), self.reason)
    }
}

/// A task's key in the lock: `module/folder` (a family's folder once, whatever its sizes).
fn folder_key(t: &tasks::Task) -> String {
    let folder = t.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!("{}/{folder}", t.module)
}

/// Reads what a lock would hold from `tasks_dir`: every held-out task folder of every registered
/// module, the tool manifests of both arms of each module that has one, and the gold set.
pub async fn current(tasks_dir: &Path) -> anyhow::Result<Current> {
    let all = tasks::load_all(tasks_dir).with_context(|| format!("loading the tasks under {}", tasks_dir.display()))?;
    let mut out = Current::default();
    let mut modules = std::collections::BTreeSet::new();
    for t in all.iter().filter(|t| t.meta.split == Split::HeldOut) {
        let key = folder_key(t);
        if let std::collections::btree_map::Entry::Vacant(e) = out.tasks.entry(key) {
            e.insert(tasks::folder_hash(&t.dir).map_err(|e| anyhow::anyhow!("{e}"))?);
        }
        if modules.insert(t.module.as_str()) {
            let (pattern, control) = servers::registry::arms(&t.module).with_context(|| format!("{} is not a registered module", t.module))?;
            for s in [pattern, control] {
                let m = crate::listing::manifest(s, servers::launch::ArmSettings::default())
                    .await
                    .with_context(|| format!("listing the tool manifest of {}", s.name))?;
                out.manifests.insert(s.name.to_owned(), m.sha256());
            }
        }
    }
    let gold = tasks_dir.join(GOLD_DIR);
    if gold.is_dir() {
        out.gold = Some(tasks::folder_hash(&gold).map_err(|e| anyhow::anyhow!("{e}"))?);
    }
    out.arms = servers::registry::external().filter_map(|s| s.external()).map(|a| (a.name.clone(), a.sha256.clone())).collect();
    Ok(out)
}

/// `seal` with each external arm of `arms` as the lock holds it (for a run's manifest).
pub fn with_arms(
    mut seal: records::manifest::ManifestSeal,
    tasks_dir: &Path,
    arms: &[&servers::registry::ServerEntry],
) -> anyhow::Result<records::manifest::ManifestSeal> {
    let sealed = Lock::read(tasks_dir)?.map(|l| l.arms).unwrap_or_default();
    seal.arms = arms
        .iter()
        .filter_map(|s| s.external())
        .map(|a| records::manifest::SealedArm { name: a.name.clone(), sha256: a.sha256.clone(), sealed_sha256: sealed.get(&a.name).cloned() })
        .collect();
    Ok(seal)
}

/// For a plan that includes a held-out task: the seal must hold, or nothing is started. Returns
/// what the manifest records of it; `None` when the plan has no held-out task.
pub async fn require_seal<'a>(
    tasks_dir: &Path,
    selected: impl IntoIterator<Item = &'a tasks::Task>,
) -> anyhow::Result<Option<records::manifest::ManifestSeal>> {
    let selected: Vec<&tasks::Task> = selected.into_iter().collect();
    let program = crate::invoked::program();
    let sealed = Lock::read_with_sha256(tasks_dir)?;
    // A task the seal holds as held out runs as held out or not at all: losing its label would
    // let `--split dev` tune against it unseen.
    if let Some((lock, _)) = &sealed {
        let relabelled: Vec<String> =
            selected.iter().filter(|t| t.meta.split != Split::HeldOut && lock.tasks.contains_key(&folder_key(t))).map(|t| t.key()).collect();
        if !relabelled.is_empty() {
            bail!(
                "{} sealed as held out ({}) but no longer labelled so, so nothing was started: restore `split = \"held_out\"` in its meta.toml, or, if it is meant to become a dev task, re-seal with `{program} seal --reason \"…\"` (the report then says when and why)",
                if relabelled.len() == 1 { format!("task {} is", relabelled[0]) } else { format!("tasks {} are", relabelled.join(", ")) },
                lock.describe()
            );
        }
    }
    let held_out: Vec<String> = selected.iter().filter(|t| t.meta.split == Split::HeldOut).map(|t| t.key()).collect();
    if held_out.is_empty() {
        return Ok(None);
    }
    let Some((lock, lock_sha256)) = sealed else {
        bail!(
            "the plan includes {} held-out task(s) ({}…), but {} has no seal ({LOCK_FILE}): seal them first with `{program} seal --reason \"…\"`, or run the dev tasks only with --split dev",
            held_out.len(),
            held_out[0],
            tasks_dir.display()
        );
    };
    let drift = lock.drift(&current(tasks_dir).await?);
    if !drift.is_empty() {
        bail!(
            "the held-out tasks do not match their seal ({}), so nothing was started:\n  {}\nA held-out task, a server of its module or the gold set changed after sealing. If the change is deliberate, re-seal with `{program} seal --reason \"…\"` (every report then says when and why); to run the dev tasks only, use --split dev.",
            lock.describe(),
            drift.join("\n  ")
        );
    }
    Ok(Some(records::manifest::ManifestSeal { sealed_at: lock.sealed_at, reason: lock.reason, lock_sha256, arms: vec![] }))
}
