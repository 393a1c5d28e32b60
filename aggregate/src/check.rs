//! What must hold before any number is computed: one record per session, every record inside the
//! plan, and only like records pooled. Each failure is an error naming the files, never a
//! notice: a number computed over a duplicate, a stray record or unlike sessions cannot be
//! stood behind.

use std::collections::BTreeMap;
use std::path::Path;

use records::fingerprint::{FIELDS, PER_TASK, TREATMENT};
use records::{ExperimentManifest, SessionRecord};
use serde::{Deserialize, Serialize};

use crate::error::{AggregateError, Result};
use crate::load::{Experiment, Loaded};

/// Whether the records could be checked for comparability.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fingerprints {
    /// Every record has a fingerprint, and they agree where they must.
    Checked,
    /// No record has one (written before fingerprints existed): nothing could be checked.
    #[default]
    Unknown,
}

/// Runs every check on `exp`; on success says how far comparability could be checked.
pub fn check(exp: &Experiment) -> Result<Fingerprints> {
    // First: every other check reads one half of a record (its fields or its fingerprint) and
    // trusts it to speak for the other.
    self_consistent(exp.sessions.iter().chain(&exp.superseded))?;
    no_duplicates(&exp.sessions)?;
    if let Some(m) = &exp.manifest {
        inside_plan(m, &exp.dir.join(records::manifest::FILE), &exp.sessions)?;
    }
    one_grading(&exp.sessions)?;
    comparable(&exp.sessions)
}

/// Outcomes of different verifiers or graders are never pooled: every graded record of a task
/// was graded by one version of its verifier, and every graded record of the experiment by one
/// grader (`records::Graded`; a record without versions is its own, unknown version).
fn one_grading(sessions: &[Loaded]) -> Result<()> {
    let version = |s: &Loaded, pick: fn(&records::Graded) -> &str| -> Option<String> {
        s.record.verifier.as_ref().map(|v| v.graded.as_ref().map_or_else(|| "unknown (not recorded)".to_owned(), |g| pick(g).to_owned()))
    };
    let mut grader: Option<(String, &Loaded)> = None;
    let mut verifiers: BTreeMap<String, (String, &Loaded)> = BTreeMap::new();
    for s in sessions.iter().filter(|s| s.record.validity.is_valid()) {
        let (Some(g), Some(v)) = (version(s, |g| &g.grader_sha256), version(s, |g| &g.verifier_sha256)) else { continue };
        match &grader {
            None => grader = Some((g, s)),
            Some((first, at)) if *first != g => {
                return Err(AggregateError::MixedGrading { what: "the grader".into(), ours: at.path.clone(), a: first.clone(), theirs: s.path.clone(), b: g });
            }
            Some(_) => {}
        }
        let task = format!("{}/{}", s.record.module, s.record.task);
        match verifiers.get(&task) {
            None => {
                verifiers.insert(task, (v, s));
            }
            Some((first, at)) if *first != v => {
                return Err(AggregateError::MixedGrading {
                    what: format!("task {task}'s verifier"),
                    ours: at.path.clone(),
                    a: first.clone(),
                    theirs: s.path.clone(),
                    b: v,
                });
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Every record agrees with its own fingerprint (see [`SessionRecord::contradictions`]); replaced
/// attempts too, since the attrition counts them.
fn self_consistent<'a>(records: impl Iterator<Item = &'a Loaded>) -> Result<()> {
    for s in records {
        let contradictions = s.record.contradictions();
        if !contradictions.is_empty() {
            return Err(AggregateError::SelfContradictory { path: s.path.clone(), contradictions });
        }
    }
    Ok(())
}

/// "model m, server s, task t, rep r": what identifies one session.
pub(crate) fn session_key(r: &SessionRecord) -> String {
    format!("model {}, server {}, task {}, rep {}", r.model.id, r.server, r.task, r.rep)
}

fn no_duplicates(sessions: &[Loaded]) -> Result<()> {
    let mut seen: BTreeMap<(&str, &str, &str, u32), &Path> = BTreeMap::new();
    for s in sessions {
        let r = &s.record;
        if let Some(first) = seen.insert((&r.model.id, &r.server, &r.task, r.rep), &s.path) {
            return Err(AggregateError::DuplicateRecord { key: session_key(r), first: first.to_path_buf(), second: s.path.clone() });
        }
    }
    Ok(())
}

/// Every scored record is one of the sessions the manifest planned, under the plan's task and
/// server definitions: otherwise the planned k, the planned tasks and the arms would describe a
/// different run than the records.
fn inside_plan(m: &ExperimentManifest, manifest: &Path, sessions: &[Loaded]) -> Result<()> {
    for s in sessions {
        let r = &s.record;
        let outside = |detail: String| AggregateError::OutsidePlan { path: s.path.clone(), manifest: manifest.to_path_buf(), detail };
        if !m.models.iter().any(|x| x.id == r.model.id) {
            let planned: Vec<&str> = m.models.iter().map(|x| x.id.as_str()).collect();
            return Err(outside(format!("model {} is not a planned model ({})", r.model.id, planned.join(", "))));
        }
        let Some(server) = m.servers.iter().find(|x| x.name == r.server) else {
            return Err(outside(format!("server {} is not a planned server", r.server)));
        };
        if server.role != r.role || server.module != r.module {
            return Err(outside(format!(
                "the record has server {} as the {} of module {}, the plan as the {} of module {}",
                r.server, r.role, r.module, server.role, server.module
            )));
        }
        if server.manifest_sha256 != r.manifest_sha256 {
            return Err(outside(format!("server {} manifest_sha256 is {}, the plan's is {}", r.server, r.manifest_sha256, server.manifest_sha256)));
        }
        let key = format!("{}/{}", r.module, r.task);
        let Some(task) = m.tasks.iter().find(|t| t.key == key) else {
            return Err(outside(format!("task {key} is not a planned task")));
        };
        let mut differ = Vec::new();
        if task.sha256 != r.task_sha256 {
            differ.push(format!("task_sha256 {} vs planned {}", r.task_sha256, task.sha256));
        }
        if task.seed != r.world_seed {
            differ.push(format!("world_seed {} vs planned {}", r.world_seed, task.seed));
        }
        if task.scale != r.world_scale {
            differ.push(format!("world_scale {} vs planned {}", r.world_scale, task.scale));
        }
        if task.turn_cap != r.turn_cap {
            differ.push(format!("turn_cap {} vs planned {}", r.turn_cap, task.turn_cap));
        }
        if !differ.is_empty() {
            return Err(outside(format!("task {key} differs from the plan: {}", differ.join("; "))));
        }
        match &m.sequential {
            // A sequential experiment's rep is how often its task was drawn so far: at most the
            // draw, which is at most the cap; and every session of one has its draw.
            Some(seq) => match r.draw {
                None => return Err(outside("it has no draw, and the experiment is sequential".to_owned())),
                Some(d) if d == 0 || d > seq.max_pairs => {
                    return Err(outside(format!("draw {d} is outside the planned draws 1..={}", seq.max_pairs)));
                }
                Some(d) if r.rep == 0 || r.rep > d => return Err(outside(format!("rep {} is outside 1..={d} (its draw)", r.rep))),
                Some(_) => {}
            },
            None if r.draw.is_some() => return Err(outside("it has a draw, and the experiment is not sequential".to_owned())),
            None if r.rep == 0 || r.rep > m.k => {
                return Err(outside(format!("rep {} is outside the planned reps 1..={}", r.rep, m.k)));
            }
            None => {}
        }
    }
    Ok(())
}

/// Fingerprint rules: within a model id everything outside the treatment and the task's own
/// fields agrees; every record of one task (both arms, every model) agrees on the task's fields;
/// every record of one server agrees on its manifest. Records with and without a fingerprint are
/// never pooled.
fn comparable(sessions: &[Loaded]) -> Result<Fingerprints> {
    let with = sessions.iter().find(|s| s.record.fingerprint.is_some());
    let without = sessions.iter().find(|s| s.record.fingerprint.is_none());
    match (with, without) {
        (Some(w), Some(wo)) => return Err(AggregateError::MixedFingerprints { with: w.path.clone(), without: wo.path.clone() }),
        (None, _) => return Ok(Fingerprints::Unknown),
        (Some(_), None) => {}
    }
    let outside_model: Vec<&str> = TREATMENT.iter().chain(PER_TASK).copied().collect();
    agree(sessions, |r| format!("records of model {}", r.model.id), &outside_model)?;
    let not_task: Vec<&str> = FIELDS.iter().copied().filter(|f| !PER_TASK.contains(f)).collect();
    agree(sessions, |r| format!("records of task {}/{} (both arms)", r.module, r.task), &not_task)?;
    let not_manifest: Vec<&str> = FIELDS.iter().copied().filter(|f| !TREATMENT.contains(f)).collect();
    agree(sessions, |r| format!("records of server {}", r.server), &not_manifest)?;
    Ok(Fingerprints::Checked)
}

/// Within each group (by `scope`), every fingerprint equals the group's first outside `ignore`.
fn agree(sessions: &[Loaded], scope: impl Fn(&SessionRecord) -> String, ignore: &[&str]) -> Result<()> {
    let mut first: BTreeMap<String, &Loaded> = BTreeMap::new();
    for s in sessions {
        let (Some(fp), group) = (s.record.fingerprint.as_ref(), scope(&s.record)) else { continue };
        let Some(reference) = first.get(&group) else {
            first.insert(group, s);
            continue;
        };
        let ours = reference.record.fingerprint.as_ref().expect("grouped records have fingerprints");
        let differences = ours.differences_outside(fp, ignore);
        if !differences.is_empty() {
            return Err(AggregateError::Incomparable { scope: group, differences, ours: reference.path.clone(), theirs: s.path.clone() });
        }
    }
    Ok(())
}
