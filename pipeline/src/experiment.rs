//! One experiment folder, `results/<exp>/`: its lock, its records, the resume decision, the
//! superseding of rerun sessions and the manifest.
//!
//! ```text
//! results/<exp>/.lock                                     held by the one run writing here
//! results/<exp>/manifest.json                             what was planned, how the run ended
//! results/<exp>/check.json                                gate results (spec runs)
//! results/<exp>/<model>__<server>/<task>__rep<k>.json     one record per session (+ .transcript.jsonl)
//! results/<exp>/<model>__<server>/superseded/<task>__rep<k>.attempt<n>.json   replaced attempts
//! ```

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use records::manifest::{ExperimentManifest, ManifestServer, ManifestTask, RunStop};
use records::{FieldDifference, Fingerprint, InvalidReason, SCHEMA_VERSION, SessionRecord, Validity, write_atomically};

use crate::plan::{PlannedSession, RunPlan};

pub const LOCK: &str = ".lock";
pub const SUPERSEDED: &str = "superseded";

/// An experiment folder, locked for this run: a second run on the same folder refuses at once.
/// The lock is an OS file lock, so a run killed with `kill -9` leaves nothing that blocks the
/// next one (the stale lock file is taken over).
pub struct Experiment {
    pub dir: PathBuf,
    created: bool,
    /// Folders above `dir` that [`Self::lock`] created, innermost first.
    made_above: Vec<PathBuf>,
    _lock: nix::fcntl::Flock<File>,
}

impl Experiment {
    pub fn lock(dir: &Path) -> anyhow::Result<Self> {
        let created = !dir.exists();
        // The folders above it this makes too (a results folder that did not exist).
        let made_above: Vec<PathBuf> = dir.ancestors().skip(1).take_while(|a| !a.as_os_str().is_empty() && !a.exists()).map(Path::to_path_buf).collect();
        std::fs::create_dir_all(dir).with_context(|| format!("creating the experiment folder {}", dir.display()))?;
        let path = dir.join(LOCK);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        let mut lock = match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(l) => l,
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                anyhow::bail!(
                    "experiment {} is being written by another run ({}); nothing was started. Wait for it to finish, or give this run another --exp-name",
                    dir.display(),
                    if holder.trim().is_empty() { "its process id is not recorded" } else { holder.trim() }
                );
            }
            Err((_, e)) => return Err(anyhow::anyhow!("locking {}: {e}", path.display())),
        };
        lock.set_len(0)?;
        writeln!(lock, "pid {} since {}", std::process::id(), chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true))?;
        Ok(Self { dir: dir.to_path_buf(), created, made_above, _lock: lock })
    }

    /// Removes the folder again when this run created it and refused before writing anything
    /// but the lock: a refusal leaves no trace.
    pub fn discard_if_untouched(self) {
        if !self.created {
            return;
        }
        let only_lock = std::fs::read_dir(&self.dir).map(|d| d.flatten().all(|e| e.file_name() == LOCK)).unwrap_or(false);
        if only_lock {
            let _ = std::fs::remove_dir_all(&self.dir);
            // Innermost first; a folder something else wrote to since stays.
            for above in &self.made_above {
                if std::fs::remove_dir(above).is_err() {
                    break;
                }
            }
        }
    }

    pub fn record_path(&self, plan: &RunPlan, s: &PlannedSession) -> PathBuf {
        record_path(&self.dir, &plan.models[s.model].spec.id, s.server.name, &s.task.id, s.rep)
    }

    /// Decides, for every planned session, whether it is done, to run, or to rerun — refusing
    /// when recorded sessions were made under another plan. Reads every record once.
    pub fn resume(&self, plan: &RunPlan, sessions: Vec<PlannedSession>) -> anyhow::Result<Resume> {
        let mut existing: BTreeMap<PathBuf, SessionRecord> = self.records()?.into_iter().collect();
        refuse_self_contradictory(&self.dir, &existing)?;
        // One planned session per model stands for the plan's settings when other records are
        // checked below.
        let mut probes: BTreeMap<String, Fingerprint> = BTreeMap::new();
        let mut resume = Resume::default();
        let mut conflicts = Conflicts::default();
        // Each planned session's decision, in plan order; a warm conversation is then settled whole.
        let mut decided: Vec<(PlannedSession, Decision)> = Vec::new();
        for s in sessions {
            let want = plan.fingerprint(&s);
            probes.entry(want.model.id.clone()).or_insert_with(|| want.clone());
            let path = self.record_path(plan, &s);
            let Some(record) = existing.remove(&path) else {
                let attempt = next_attempt_after_superseded(&path);
                decided.push((s, Decision::Run { attempt, supersede: None, rerun: None }));
                continue;
            };
            let Some(have) = &record.fingerprint else {
                conflicts.unknown.push(path);
                continue;
            };
            let d = want.differences(have);
            if !d.is_empty() {
                conflicts.add(d, &path);
                continue;
            }
            let attempt = record.attempt.unwrap_or(1) + 1;
            // Marked superseded but still in place: a run stopped while moving it, after the
            // rerun was decided and before its record was written. Finish what it started.
            if let Some(marked) = &record.superseded {
                decided.push((s, Decision::Run { attempt, supersede: Some(marked.reason.clone()), rerun: None }));
                continue;
            }
            let decision = match &record.validity {
                Validity::Valid => Decision::Done { attempt, invalid: None },
                Validity::Invalid { reason, .. } if reason.rerun_on_resume() => {
                    Decision::Run { attempt, supersede: Some(format!("rerun on resume: the earlier attempt was {reason}")), rerun: Some(*reason) }
                }
                Validity::Invalid { reason, .. } if plan.retry_invalid => {
                    Decision::Run { attempt, supersede: Some(format!("--retry-invalid: the earlier attempt was {reason}")), rerun: Some(*reason) }
                }
                Validity::Invalid { reason, .. } => Decision::Done { attempt, invalid: Some(*reason) },
            };
            decided.push((s, decision));
        }
        if plan.session_mode == records::SessionMode::Warm {
            whole_conversations(&mut decided);
        }
        for (s, decision) in decided {
            match decision {
                Decision::Done { invalid: None, .. } => resume.done += 1,
                Decision::Done { invalid: Some(reason), .. } => {
                    resume.done += 1;
                    *resume.left_invalid.entry(reason).or_default() += 1;
                }
                Decision::Run { attempt, supersede, rerun } => {
                    if let Some(reason) = rerun {
                        *resume.rerun.entry(reason).or_default() += 1;
                    }
                    resume.pending.push(Pending { session: s, attempt, supersede });
                }
            }
        }
        check_other_records(existing, &probes, &mut conflicts);
        conflicts.into_result(&self.dir)?;
        Ok(resume)
    }

    /// Every current record of the experiment (superseded ones excluded), with its path.
    pub fn records(&self) -> anyhow::Result<Vec<(PathBuf, SessionRecord)>> {
        let mut out = Vec::new();
        let Ok(arms) = std::fs::read_dir(&self.dir) else { return Ok(out) };
        for arm in arms.flatten().filter(|e| e.path().is_dir()) {
            for f in std::fs::read_dir(arm.path())?.flatten() {
                let name = f.file_name().to_string_lossy().into_owned();
                if name.ends_with(".json")
                    && !name.starts_with('.')
                    && f.path().is_file()
                    && let Some(r) = read_record(&f.path())?
                {
                    out.push((f.path(), r));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Writes `manifest.json` for `plan`, merged with the experiment's earlier manifest (a
    /// resume may add tasks or reps): the lists are unions, k is the largest planned.
    pub fn write_manifest(&self, plan: &RunPlan, preflight: Option<serde_json::Value>) -> anyhow::Result<()> {
        let mut m = ExperimentManifest {
            schema_version: SCHEMA_VERSION,
            experiment: plan.experiment.clone(),
            command: plan.command.clone(),
            git_commit: plan.build.commit.clone(),
            git_dirty: plan.build.dirty,
            models: plan.models.iter().map(|m| m.spec.clone()).collect(),
            servers: plan
                .arms
                .iter()
                .map(|s| ManifestServer { name: s.name.into(), module: s.module.into(), role: s.role, manifest_sha256: plan.manifests[s.name].clone() })
                .collect(),
            tasks: plan
                .all_tasks()
                .map(|t| ManifestTask {
                    key: t.key(),
                    sha256: t.sha256.clone(),
                    turn_cap: t.meta.turn_cap,
                    seed: t.meta.seed,
                    scale: t.meta.scale,
                    split: t.meta.split,
                })
                .collect(),
            k: plan.reps,
            jobs: plan.jobs,
            transport: plan.transport,
            session_mode: (plan.session_mode == records::SessionMode::Warm).then_some(records::SessionMode::Warm),
            created_at: chrono::Utc::now(),
            binary_version: Some(crate::build_info::VERSION.to_owned()),
            base_url: plan.endpoint_models().find_map(|m| m.endpoint.as_ref()).map(|e| records::fingerprint::url_without_userinfo(&e.base_url)),
            preflight_skipped: plan.endpoint_models().next().is_some() && plan.preflight_skipped,
            preflight,
            check: plan.check.clone(),
            shard: plan.shard.map(|s| records::manifest::ManifestShard {
                index: s.index,
                count: s.count,
                source: serde_json::to_value(s.source).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
                sessions: Some(plan.sessions().len() as u64),
            }),
            stopped: None,
            otlp: plan.otlp.as_ref().map(crate::otlp::planned),
            postgres: Some(backend::postgres::PostgresSource::planned()),
            split: Some(plan.split.as_str().to_owned()),
            seal: plan.seal.clone(),
            distractors: plan.distractors.sha256().map(|sha256| records::manifest::ManifestDistractors {
                count: plan.distractors.len(),
                sha256,
                before_arm: plan.distractors.before_arm() as u32,
                names: plan.distractors.names().map(str::to_owned).collect(),
            }),
            sequential: plan.sequential.map(|s| s.manifest()),
            attack: plan.attack.as_ref().map(|a| records::manifest::ManifestAttack {
                name: a.name.clone(),
                class: a.class.as_str().to_owned(),
                sha256: a.sha256.clone(),
                description: a.description.clone(),
                success: a.success.says.clone(),
            }),
        };
        if let Ok(Some(old)) = ExperimentManifest::read(&self.dir) {
            m.created_at = old.created_at;
            m.k = m.k.max(old.k);
            for s in old.servers {
                if !m.servers.iter().any(|x| x.name == s.name) {
                    m.servers.push(s);
                }
            }
            for t in old.tasks {
                if !m.tasks.iter().any(|x| x.key == t.key) {
                    m.tasks.push(t);
                }
            }
            for model in old.models {
                if !m.models.iter().any(|x| x.id == model.id) {
                    m.models.push(model);
                }
            }
            m.preflight_skipped |= old.preflight_skipped;
        }
        self.put_manifest(&m)
    }

    /// Records in the manifest why the run stopped early.
    pub fn mark_stopped(&self, kind: &str, detail: &str) -> anyhow::Result<()> {
        let Some(mut m) = ExperimentManifest::read(&self.dir)? else { return Ok(()) };
        m.stopped = Some(RunStop { kind: kind.to_owned(), detail: detail.to_owned(), at: chrono::Utc::now() });
        self.put_manifest(&m)
    }

    /// Records what the run's trace export reached (see [`records::manifest::OtlpExport`]).
    pub fn record_otlp(&self, export: records::manifest::OtlpExport) -> anyhow::Result<()> {
        let Some(mut m) = ExperimentManifest::read(&self.dir)? else { return Ok(()) };
        m.otlp = Some(export);
        self.put_manifest(&m)
    }

    fn put_manifest(&self, m: &ExperimentManifest) -> anyhow::Result<()> {
        write_atomically(&self.dir.join(records::manifest::FILE), &serde_json::to_vec_pretty(m)?)?;
        Ok(())
    }
}

/// A record whose own fields disagree with its fingerprint is not data: skipping it as done (or
/// comparing the plan with either half) would trust one half of a record that contradicts itself.
/// Refuses, naming every such file, each field and both values.
fn refuse_self_contradictory(dir: &Path, records: &BTreeMap<PathBuf, SessionRecord>) -> anyhow::Result<()> {
    let bad: Vec<(&PathBuf, Vec<records::Contradiction>)> = records.iter().map(|(path, r)| (path, r.contradictions())).filter(|(_, c)| !c.is_empty()).collect();
    if bad.is_empty() {
        return Ok(());
    }
    let mut text = format!("experiment {} holds records that contradict their own fingerprints; nothing was started.\n", dir.display());
    for (path, contradictions) in &bad {
        text.push_str(&format!("  {}:\n", path.display()));
        for c in contradictions {
            text.push_str(&format!("    {c}\n"));
        }
    }
    text.push_str(
        "A record whose own fields and fingerprint disagree (a harness bug or an edited file) is not data. Restore each file as the run wrote it, \
         or move it and its transcript out of the experiment folder: the resume then reruns that session.",
    );
    anyhow::bail!(text)
}

/// Records of the experiment that this plan does not run (other tasks or servers) must still
/// have been made under the same settings (outside the treatment and the per-task fields), or
/// the experiment would mix them. Records of models the plan does not run are other cells.
fn check_other_records(others: BTreeMap<PathBuf, SessionRecord>, probes: &BTreeMap<String, Fingerprint>, conflicts: &mut Conflicts) {
    let mut ignore: Vec<&str> = records::fingerprint::TREATMENT.to_vec();
    ignore.extend(records::fingerprint::PER_TASK);
    for (path, record) in others {
        let Some(want) = probes.get(&record.model.id) else { continue };
        match &record.fingerprint {
            None => conflicts.unknown.push(path),
            Some(have) => {
                let d = want.differences_outside(have, &ignore);
                if !d.is_empty() {
                    conflicts.add(d, &path);
                }
            }
        }
    }
}

/// Moves the record at `path` (and its transcript) under `superseded/`, marked with why, so the
/// rerun's record can take its place. Never deletes a record, and never leaves two copies of one:
/// the record is marked in place (an atomic rewrite), then moved by one rename. A crash between
/// the steps leaves the session in exactly one place — at its own path marked superseded, which
/// the report refuses by name and the next resume moves on — so no report counts it twice.
pub fn supersede(path: &Path, reason: &str) -> anyhow::Result<()> {
    supersede_observed(path, reason, &mut || {})
}

/// [`supersede`], calling `after_each_step` after every change it makes on disk: where a crash
/// could stop it (tests look at the folder there).
pub fn supersede_observed(path: &Path, reason: &str, after_each_step: &mut dyn FnMut()) -> anyhow::Result<()> {
    let Some(mut record) = read_record(path)? else { return Ok(()) };
    let attempt = record.attempt.unwrap_or(1);
    let dir = path.parent().unwrap_or(Path::new(".")).join(SUPERSEDED);
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("record");
    // A record already marked was left by a move that stopped: its mark (when, why) stands.
    if record.superseded.is_none() {
        record.superseded = Some(records::session::Superseded { at: chrono::Utc::now(), reason: reason.to_owned() });
        write_atomically(path, &serde_json::to_vec_pretty(&record)?)?;
        after_each_step();
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let transcript = path.with_extension("transcript.jsonl");
    if transcript.is_file() {
        std::fs::rename(&transcript, dir.join(format!("{stem}.attempt{attempt}.transcript.jsonl")))?;
        after_each_step();
    }
    let target = dir.join(format!("{stem}.attempt{attempt}.json"));
    std::fs::rename(path, &target).with_context(|| format!("moving {} to {}", path.display(), target.display()))?;
    after_each_step();
    Ok(())
}

/// The record of (model, server, task, rep) under `exp_dir`.
pub fn record_path(exp_dir: &Path, model_id: &str, server: &str, task: &str, rep: u32) -> PathBuf {
    exp_dir.join(format!("{}__{server}", sanitize(model_id))).join(format!("{task}__rep{rep}.json"))
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_' { c } else { '_' }).collect()
}

fn read_record(path: &Path) -> anyhow::Result<Option<SessionRecord>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("{} is not a session record; move it out of the experiment folder", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// 1 + the attempts already kept under `superseded/` for this session.
fn next_attempt_after_superseded(path: &Path) -> u32 {
    let Some(dir) = path.parent().map(|p| p.join(SUPERSEDED)) else { return 1 };
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let prefix = format!("{stem}.attempt");
    let kept = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().strip_prefix(&prefix).is_some_and(|r| r.ends_with(".json") && !r.contains("transcript")))
                .count()
        })
        .unwrap_or(0);
    kept as u32 + 1
}

/// One session to run, and the record it replaces if any.
#[derive(Debug, Clone)]
pub struct Pending {
    pub session: PlannedSession,
    pub attempt: u32,
    /// Why the existing record is superseded when this session's record is written.
    pub supersede: Option<String>,
}

/// What a resume decided for one planned session.
enum Decision {
    /// Recorded and kept: valid, or invalid and left alone (`invalid` says why).
    Done { attempt: u32, invalid: Option<InvalidReason> },
    /// To run: `supersede` says why the record in place (if any) is replaced, `rerun` the
    /// invalid reason that made it a rerun.
    Run { attempt: u32, supersede: Option<String>, rerun: Option<InvalidReason> },
}

/// A warm task's context is everything its conversation did before it, so a conversation is run
/// from its start or not at all: when any of its sessions is to run, the recorded ones are run
/// again too (and superseded), never stitched to a new conversation's tail.
fn whole_conversations(decided: &mut [(PlannedSession, Decision)]) {
    let key = |s: &PlannedSession| (s.model, s.server.name, s.task.meta.split, s.rep);
    let to_run: std::collections::BTreeSet<_> = decided.iter().filter(|(_, d)| matches!(d, Decision::Run { .. })).map(|(s, _)| key(s)).collect();
    for (s, d) in decided.iter_mut() {
        if let Decision::Done { attempt, .. } = d
            && to_run.contains(&key(s))
        {
            *d = Decision::Run {
                attempt: *attempt,
                supersede: Some("rerun whole: a warm conversation runs from its start, and this one was incomplete".into()),
                rerun: None,
            };
        }
    }
}

/// What a resume found.
#[derive(Debug, Default)]
pub struct Resume {
    pub pending: Vec<Pending>,
    /// Planned sessions already recorded and not rerun (valid, or invalid and left alone).
    pub done: usize,
    /// Invalid records left as they are (no `--retry-invalid`), by reason.
    pub left_invalid: BTreeMap<InvalidReason, usize>,
    /// Records to be replaced by a rerun, by the reason the earlier attempt was invalid.
    pub rerun: BTreeMap<InvalidReason, usize>,
}

#[derive(Default)]
struct Conflicts {
    by_field: BTreeMap<String, (FieldDifference, Vec<PathBuf>)>,
    unknown: Vec<PathBuf>,
}

impl Conflicts {
    fn add(&mut self, diffs: Vec<FieldDifference>, path: &Path) {
        for d in diffs {
            self.by_field.entry(d.field.clone()).or_insert_with(|| (d, vec![])).1.push(path.to_path_buf());
        }
    }

    fn into_result(self, dir: &Path) -> anyhow::Result<()> {
        if self.by_field.is_empty() && self.unknown.is_empty() {
            return Ok(());
        }
        let mut text = format!("experiment {} holds sessions recorded under another plan; nothing was started.\n", dir.display());
        for (d, paths) in self.by_field.values() {
            text.push_str(&format!("  {}: now {}, recorded {} ({} record(s), e.g. {})\n", d.field, d.ours, d.theirs, paths.len(), paths[0].display()));
        }
        if let Some(first) = self.unknown.first() {
            text.push_str(&format!(
                "  {} record(s) were written before records carried a plan fingerprint (e.g. {}); they cannot be shown comparable\n",
                self.unknown.len(),
                first.display()
            ));
        }
        text.push_str("Give this run a new --exp-name (or a new `experiment` in the spec), or rerun with the recorded settings.");
        anyhow::bail!(text)
    }
}
