//! Dev and held-out tasks side by side (`docs/held-out.md`): a module's records are reported per
//! split, never pooled into one verdict; here, the tasks on which the pattern loses, and whether
//! the held-out verdict (or, for the oracle, the structural floor) agrees with the dev one.

use std::collections::{BTreeMap, BTreeSet};

use records::{Role, SessionRecord, Split};
use serde::{Deserialize, Serialize};

use super::select::passed;
use super::{ModuleReport, OracleModule, Summary};

/// A task on which the pattern did worse than the control, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LosingTask {
    pub task: String,
    /// What it lost on: `success` (a lower pass rate), `input_tokens` (as often passed, more
    /// input tokens per valid session), `estimated_input_tokens` (the oracle's floor: more
    /// estimated input, the cost its reports compare), `calls` (the oracle's floor: no more
    /// estimated input, but more calls — more round trips).
    pub on: String,
    /// The pattern's figure and the control's, as the report prints them.
    pub pattern: f64,
    pub control: f64,
}

/// A task the losing rule could not judge, and why: it is neither on the losing list nor known
/// not to belong there, and the report says so rather than leave it off without a word.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnjudgedTask {
    pub task: String,
    pub why: String,
}

/// Per task of one comparison cell: where the pattern does worse, and the tasks that cannot be
/// judged. A task counts once, on the first figure it loses on (success before input tokens):
/// cost only matters at equal success.
pub(super) fn losing_model_tasks(recs: &[&SessionRecord]) -> (Vec<LosingTask>, Vec<UnjudgedTask>) {
    let tasks: BTreeSet<&str> = recs.iter().map(|r| r.task.as_str()).collect();
    let (mut out, mut unjudged) = (Vec::new(), Vec::new());
    for task in tasks {
        let arm = |role: Role| -> Vec<&SessionRecord> { recs.iter().copied().filter(|r| r.task == task && r.role == role && r.validity.is_valid()).collect() };
        let (p, c) = (arm(Role::Pattern), arm(Role::Control));
        if p.is_empty() || c.is_empty() {
            let arms = match (p.is_empty(), c.is_empty()) {
                (true, true) => "either arm",
                (true, false) => "the pattern arm",
                _ => "the control arm",
            };
            unjudged.push(UnjudgedTask { task: task.to_owned(), why: format!("no valid session in {arms}") });
            continue;
        }
        let rate = |v: &[&SessionRecord]| v.iter().filter(|r| passed(r)).count() as f64 / v.len() as f64;
        let (pr, cr) = (rate(&p), rate(&c));
        if pr < cr {
            out.push(LosingTask { task: task.to_owned(), on: "success".into(), pattern: pr, control: cr });
            continue;
        }
        if pr > cr {
            continue;
        }
        let tokens = |v: &[&SessionRecord]| -> Option<f64> {
            let xs: Vec<f64> = v.iter().map(|r| r.totals.input_tokens.map(|t| t as f64)).collect::<Option<Vec<_>>>()?;
            crate::stats::mean(&xs)
        };
        match (tokens(&p), tokens(&c)) {
            (Some(pt), Some(ct)) if pt > ct => out.push(LosingTask { task: task.to_owned(), on: "input_tokens".into(), pattern: pt, control: ct }),
            (Some(_), Some(_)) => {}
            _ => {
                let missing = |v: &[&SessionRecord], arm: &str| {
                    let n = v.iter().filter(|r| r.totals.input_tokens.is_none()).count();
                    (n > 0).then(|| format!("{n} of the {arm}'s {} valid session{}", v.len(), if v.len() == 1 { "" } else { "s" }))
                };
                let which: Vec<String> = [missing(&p, "pattern"), missing(&c, "control")].into_iter().flatten().collect();
                unjudged.push(UnjudgedTask {
                    task: task.to_owned(),
                    why: format!("as often passed, but input tokens are missing in {}: its cost cannot be compared", which.join(" and ")),
                });
            }
        }
    }
    (out, unjudged)
}

/// The oracle's floor per task: where the pattern's plan costs more estimated input (the cost
/// the oracle's reports compare), or, costing no more, takes more calls; and the tasks whose
/// figures are missing for that.
pub(super) fn losing_oracle_tasks(m: &OracleModule) -> (Vec<LosingTask>, Vec<UnjudgedTask>) {
    let tasks: BTreeSet<&str> = m.rows.iter().map(|r| r.task.as_str()).collect();
    let (mut out, mut unjudged) = (Vec::new(), Vec::new());
    for task in tasks {
        let row = |role: Role| m.rows.iter().find(|r| r.task == task && r.role == role);
        let (Some(p), Some(c)) = (row(Role::Pattern), row(Role::Control)) else {
            let arm = if row(Role::Pattern).is_none() { "pattern" } else { "control" };
            unjudged.push(UnjudgedTask { task: task.to_owned(), why: format!("no oracle session in the {arm} arm") });
            continue;
        };
        let lose = |on: &str, pattern: u64, control: u64| LosingTask { task: task.to_owned(), on: on.into(), pattern: pattern as f64, control: control as f64 };
        // Records from before input estimates have none in either arm: they are judged by calls,
        // the figure both have. An estimate in one arm only cannot be compared.
        let estimates = (p.estimated_input_tokens, c.estimated_input_tokens);
        let comparable = matches!(estimates, (Some(_), Some(_)) | (None, None));
        match (estimates, (p.calls, c.calls)) {
            ((Some(pt), Some(ct)), _) if pt > ct => out.push(lose("estimated_input_tokens", pt, ct)),
            (_, (Some(pc), Some(cc))) if comparable && pc > cc => out.push(lose("calls", pc, cc)),
            (_, (Some(_), Some(_))) if comparable => {}
            _ => {
                let mut missing = Vec::new();
                for (arm, row) in [("pattern", p), ("control", c)] {
                    let what: Vec<&str> = [(row.estimated_input_tokens.is_none(), "estimated input"), (row.calls.is_none(), "calls")]
                        .into_iter()
                        .filter_map(|(gone, what)| gone.then_some(what))
                        .collect();
                    if !what.is_empty() {
                        missing.push(format!("the {arm}'s plan has no {}", what.join(" and no ")));
                    }
                }
                unjudged.push(UnjudgedTask { task: task.to_owned(), why: format!("{}: its cost cannot be compared", missing.join(", and ")) });
            }
        }
    }
    (out, unjudged)
}

/// Where dev and held-out tasks disagree about a module, for the report to say above its
/// headline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitDisagreement {
    /// A model id, or `oracle` for the structural floor.
    pub model: String,
    pub module: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<super::Comparison>,
    /// What each split says: a verdict, or for the oracle whether the pattern's floor is lower.
    pub dev: String,
    pub held_out: String,
    /// The sentence the report prints.
    pub message: String,
}

/// Every (model, module, comparison) whose held-out result says otherwise than its dev result.
pub(super) fn disagreements(s: &Summary) -> Vec<SplitDisagreement> {
    let mut out = Vec::new();
    for m in &s.models {
        for (key, [dev, held]) in pairs(&m.modules, |x: &ModuleReport| (x.module.clone(), x.comparison.clone(), x.split)) {
            if dev.verdict == held.verdict {
                continue;
            }
            let label = super::Comparison::label(&key.0, key.1.as_ref());
            let message = if dev.verdict == super::Verdict::Confirmed {
                format!(
                    "{label} ({}): this module's advantage does not hold on held-out tasks — confirmed on the dev tasks, {} on the held-out ones.",
                    m.model,
                    held.verdict.as_str()
                )
            } else {
                format!(
                    "{label} ({}): dev and held-out tasks disagree — {} on the dev tasks, {} on the held-out ones.",
                    m.model,
                    dev.verdict.as_str(),
                    held.verdict.as_str()
                )
            };
            out.push(SplitDisagreement {
                model: m.model.clone(),
                module: key.0,
                comparison: key.1,
                dev: dev.verdict.as_str().into(),
                held_out: held.verdict.as_str().into(),
                message,
            });
        }
    }
    for (key, [dev, held]) in pairs(&s.oracle_floors, |x: &OracleModule| (x.module.clone(), x.comparison.clone(), x.split)) {
        // The floor's two costs, each per session: whether the pattern's is the lower.
        type Cost = fn(&super::OraclePerSession) -> Option<f64>;
        let metrics: [(&str, Cost); 2] = [("calls", |p| p.calls), ("estimated input tokens", |p| p.estimated_input_tokens)];
        let lower =
            |f: &OracleModule, pick: Cost| -> Option<bool> { Some(f.per_session_of(Role::Pattern, pick).ok()? < f.per_session_of(Role::Control, pick).ok()?) };
        let flipped: Vec<(&str, bool, bool)> = metrics
            .iter()
            .filter_map(|(name, pick)| {
                let (d, h) = (lower(dev, *pick)?, lower(held, *pick)?);
                (d != h).then_some((*name, d, h))
            })
            .collect();
        if flipped.is_empty() {
            continue;
        }
        let word = |x: bool| if x { "fewer" } else { "no fewer" };
        let says = |pick: fn(&(&str, bool, bool)) -> bool| flipped.iter().map(|f| format!("{} {}", word(pick(f)), f.0)).collect::<Vec<_>>().join(" and ");
        let (d, h) = (says(|f| f.1), says(|f| f.2));
        let label = super::Comparison::label(&key.0, key.1.as_ref());
        let message = if flipped.iter().any(|f| f.1 && !f.2) {
            format!(
                "{label} (oracle floor): this module's structural advantage does not hold on held-out tasks — per session its plans take {d} than the control's on the dev tasks, {h} on the held-out ones."
            )
        } else {
            format!(
                "{label} (oracle floor): dev and held-out tasks disagree — per session the pattern's plans take {d} than the control's on the dev tasks, {h} on the held-out ones."
            )
        };
        out.push(SplitDisagreement { model: "oracle".into(), module: key.0, comparison: key.1, dev: d, held_out: h, message });
    }
    out
}

type CellKey = (String, Option<super::Comparison>);

/// The (dev, held-out) pairs of reports of the same module and comparison.
fn pairs<T>(items: &[T], key: impl Fn(&T) -> (String, Option<super::Comparison>, Split)) -> Vec<(CellKey, [&T; 2])> {
    let mut by: BTreeMap<CellKey, [Option<&T>; 2]> = BTreeMap::new();
    for x in items {
        let (module, comparison, split) = key(x);
        let slot = match split {
            Split::Dev => 0,
            Split::HeldOut => 1,
        };
        by.entry((module, comparison)).or_default()[slot] = Some(x);
    }
    by.into_iter().filter_map(|(k, [d, h])| Some((k, [d?, h?]))).collect()
}
