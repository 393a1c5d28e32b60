//! Which records count and how they group: validity and verifier outcome, oracle or model, the
//! attrition cell a record belongs to, what the manifest planned for a module, why an attempt
//! was replaced, and a module's (pattern, control) comparisons.

use std::collections::{BTreeMap, BTreeSet};

use records::Verdict as TaskVerdict;
use records::{Provider, Role, SessionRecord};
use serde::{Deserialize, Serialize};

/// The two servers a report compares when a module has more than two.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Comparison {
    pub pattern: String,
    pub control: String,
}

impl Comparison {
    /// `module (pattern vs control)` when set, else the module.
    pub fn label(module: &str, comparison: Option<&Self>) -> String {
        match comparison {
            Some(c) => format!("{module} ({} vs {})", c.pattern, c.control),
            None => module.to_owned(),
        }
    }

    /// [`Self::label`], marked when the report is of the module's held-out tasks.
    pub fn label_in(module: &str, comparison: Option<&Self>, split: records::Split) -> String {
        match split {
            records::Split::Dev => Self::label(module, comparison),
            records::Split::HeldOut => format!("{} · held-out", Self::label(module, comparison)),
        }
    }
}

/// A module's records as the reports compare them: one cell when each side has one server
/// (the ordinary A/B), else one cell per (pattern, control) pair of servers, each holding those
/// two servers' records — an external arm is compared with the other side exactly as the
/// built-in server of its side is, and never pooled with it.
pub(super) fn comparisons<'a>(recs: &[&'a SessionRecord]) -> Vec<(Option<Comparison>, Vec<&'a SessionRecord>)> {
    let side = |role: Role| -> BTreeSet<&str> { recs.iter().filter(|r| r.role == role).map(|r| r.server.as_str()).collect() };
    let (patterns, controls) = (side(Role::Pattern), side(Role::Control));
    if patterns.len() <= 1 && controls.len() <= 1 {
        return vec![(None, recs.to_vec())];
    }
    let mut out = Vec::new();
    for p in &patterns {
        for c in &controls {
            let cell = recs.iter().copied().filter(|r| r.server == *p || r.server == *c).collect();
            out.push((Some(Comparison { pattern: (*p).to_owned(), control: (*c).to_owned() }), cell));
        }
    }
    out
}

pub(super) fn invalid_reason(r: &SessionRecord) -> Option<String> {
    match &r.validity {
        records::Validity::Valid => None,
        records::Validity::Invalid { reason, .. } => {
            Some(serde_json::to_value(reason).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_else(|| format!("{reason:?}")))
        }
    }
}

pub(super) fn verdict_of(r: &SessionRecord) -> Option<TaskVerdict> {
    r.verifier.as_ref().map(|o| o.verdict)
}

pub(super) fn passed(r: &SessionRecord) -> bool {
    verdict_of(r) == Some(TaskVerdict::Passed)
}

pub(super) fn is_oracle(r: &SessionRecord) -> bool {
    r.model.provider == Provider::Oracle
}

/// What a manifest planned for one module: k reps of each of its tasks.
#[derive(Debug, Clone)]
pub(super) struct ModulePlan {
    pub(super) k: u32,
    pub(super) tasks: Vec<String>,
    /// A sequential experiment's rule and its words: pairs are drawn until decided, so what was
    /// planned is the pairs drawn, not k × tasks.
    pub(super) sequential: Option<(crate::sequential::Rule, String)>,
    /// Why the run stopped early, when it did (the manifest's `stopped.kind`).
    pub(super) stopped: Option<String>,
}

impl ModulePlan {
    /// The pairs planned: k × tasks, or for a sequential experiment the pairs drawn (the
    /// highest draw among `recs`).
    pub(super) fn pairs(&self, recs: &[&SessionRecord]) -> usize {
        match self.sequential {
            Some(_) => drawn(recs),
            None => self.k as usize * self.tasks.len(),
        }
    }
}

/// The highest draw among `recs` (0 without any).
pub(super) fn drawn(recs: &[&SessionRecord]) -> usize {
    recs.iter().filter_map(|r| r.draw).max().unwrap_or(0) as usize
}

pub(super) fn module_plan(m: &records::ExperimentManifest, module: &str, split: records::Split) -> ModulePlan {
    let tasks = m.tasks.iter().filter(|t| t.split == split).filter_map(|t| t.key.strip_prefix(module)?.strip_prefix('/').map(str::to_owned)).collect();
    ModulePlan {
        k: m.k,
        tasks,
        sequential: m.sequential.as_ref().map(|s| (crate::sequential::Rule { max_pairs: s.max_pairs, min_pairs: s.min_pairs }, s.rule.clone())),
        stopped: m.stopped.as_ref().map(|s| s.kind.clone()),
    }
}

/// The splits a manifest planned tasks of `module` in (dev when it planned none: the module's
/// report then says it has no sessions).
pub(super) fn planned_splits(m: &records::ExperimentManifest, module: &str) -> BTreeSet<records::Split> {
    let mut out: BTreeSet<records::Split> =
        m.tasks.iter().filter(|t| t.key.strip_prefix(module).is_some_and(|r| r.starts_with('/'))).map(|t| t.split).collect();
    if out.is_empty() {
        out.insert(records::Split::Dev);
    }
    out
}

/// Why a replaced attempt was rerun: the rerun's reason and what the attempt had been.
pub(super) fn superseded_reason(r: &SessionRecord) -> String {
    let why = r.superseded.as_ref().map_or("no reason recorded", |s| s.reason.as_str());
    match invalid_reason(r) {
        Some(x) => format!("{why} (was invalid: {x})"),
        None => format!("{why} (was valid)"),
    }
}

pub(super) type CellKey = (String, Provider, String, String, Role);

pub(super) fn cell(r: &SessionRecord) -> CellKey {
    (r.model.id.clone(), r.model.provider, r.module.clone(), r.server.clone(), r.role)
}

pub(super) fn of_task<'a>(v: &[&'a SessionRecord], task: &str) -> Vec<&'a SessionRecord> {
    v.iter().copied().filter(|r| r.task == task).collect()
}

pub(super) fn index_by_pair<'a>(v: &[&'a SessionRecord]) -> BTreeMap<(String, u32), &'a SessionRecord> {
    v.iter().map(|r| ((r.task.clone(), r.rep), *r)).collect()
}
