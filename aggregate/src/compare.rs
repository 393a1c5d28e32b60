//! Two experiments side by side (`pipeline aggregate --compare A B`). A cell — one model's
//! module, or the oracle's — is compared only when its records in both experiments are the
//! same measurement except along the declared difference: for every task both cover, the
//! fingerprints of each arm agree outside the declared fields, and both cover the same tasks.
//! Every other cell is listed as refused, with why; when no cell is left, nothing is compared.
//!
//! Each experiment's numbers are its own (intervals within the experiment); the sessions of two
//! runs are not paired, so no difference across them is computed or tested.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use records::fingerprint::FIELDS;
use records::{FieldDifference, Role, SessionRecord};
use serde::{Deserialize, Serialize};

use crate::stats::Interval;

use crate::check::{self, Fingerprints};
use crate::error::{AggregateError, Result};
use crate::load::{Experiment, load_experiment};
use crate::metrics::{ModuleReport, Options, OracleModule, Summary, summarise};
use crate::provenance::Provenance;

pub const COMPARE_SCHEMA: &str = "mcp-pattern-bench/aggregate-compare/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub schema: String,
    pub a: Side,
    pub b: Side,
    /// The fingerprint fields allowed to differ (`--along`).
    pub along: Vec<String>,
    /// The values of the declared fields where they differ, over the compared cells.
    pub differences: Vec<FieldDifference>,
    pub cells: Vec<Cell>,
    pub refused: Vec<Refused>,
    /// Along `session_mode` only: per compared model cell and arm, B − A of success, turns and
    /// input tokens, paired by task (both runs ran the same tasks; their sessions are not pairs),
    /// with an interval over tasks; for the oracle, B − A of the estimated input tokens per
    /// session. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<Gap>,
}

/// One metric of one arm in A and in B, and B − A (see [`Comparison::gaps`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gap {
    pub module: String,
    /// `held_out` for the module's held-out tasks, compared apart from its dev tasks.
    #[serde(default, skip_serializing_if = "records::Split::is_dev")]
    pub split: records::Split,
    pub model: String,
    pub role: Role,
    pub server: String,
    /// `success`, `turns`, `input_tokens`, or the oracle's `estimated_input_tokens`.
    pub metric: String,
    /// Sessions with a value (valid ones; input tokens missing where the endpoint reported none).
    pub n_a: usize,
    pub n_b: usize,
    /// Tasks with a value on both sides: what the means and the interval are over. Null in
    /// comparisons made before gaps were paired by task.
    #[serde(default)]
    pub tasks: Option<usize>,
    /// Over the [`Self::tasks`], the mean of each task's mean per session.
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    /// mean_b − mean_a: the mean over tasks of each task's B − A.
    pub difference: Option<f64>,
    /// 95% interval of the difference over the tasks such a set stands for: a t interval over
    /// the per-task differences (T − 1 degrees of freedom; for success the pass-rate form with
    /// its pseudo-tasks, as a report's paired success difference), the task being the sampled
    /// unit. Null for the oracle (its figures are estimates, not samples) and below 2 tasks.
    pub ci95: Option<Interval>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub experiments: Vec<String>,
    pub dir: String,
    pub provenance: Provenance,
}

/// One cell, compared: the same module (and arms) in both experiments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub module: String,
    /// `held_out` for the module's held-out tasks, compared apart from its dev tasks.
    #[serde(default, skip_serializing_if = "records::Split::is_dev")]
    pub split: records::Split,
    pub model_a: String,
    pub model_b: String,
    pub tasks: usize,
    pub a: CellMetrics,
    pub b: CellMetrics,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CellMetrics {
    Model(Box<ModuleReport>),
    Oracle(Box<OracleModule>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refused {
    pub module: String,
    /// `held_out` for the module's held-out tasks, compared apart from its dev tasks.
    #[serde(default, skip_serializing_if = "records::Split::is_dev")]
    pub split: records::Split,
    pub model_a: Option<String>,
    pub model_b: Option<String>,
    pub reason: String,
}

/// Loads, checks and compares the experiments in `a` and `b`.
pub fn compare(a: &Path, b: &Path, along: &[String], opts: &Options) -> Result<Comparison> {
    for field in along {
        if !FIELDS.contains(&field.as_str()) {
            return Err(AggregateError::Uncomparable { detail: format!("--along {field}: not a fingerprint field; the fields are {}", FIELDS.join(", ")) });
        }
    }
    let (ea, eb) = (load_experiment(a)?, load_experiment(b)?);
    for e in [&ea, &eb] {
        if check::check(e)? == Fingerprints::Unknown {
            return Err(AggregateError::Uncomparable {
                detail: format!(
                    "{}: its records have no fingerprints, so nothing shows what differs from the other experiment; report it on its own",
                    e.dir.display()
                ),
            });
        }
    }
    let (sa, sb) = (summarise(&ea, None, opts)?, summarise(&eb, None, opts)?);
    let along: Vec<&str> = along.iter().map(String::as_str).collect();
    let pairs = model_pairs(&ea, &eb, &along)?;

    let mut cells = Vec::new();
    let mut refused = Vec::new();
    let mut differences: BTreeMap<String, FieldDifference> = BTreeMap::new();
    for (ma, mb) in &pairs {
        // A module's dev and held-out tasks are separate cells, as in a report.
        let modules = |e: &Experiment, m: &str| {
            e.sessions.iter().filter(|s| s.record.model.id == m).map(|s| (s.record.module.clone(), s.record.split)).collect::<BTreeSet<_>>()
        };
        let (mods_a, mods_b) = (modules(&ea, ma), modules(&eb, mb));
        for key in mods_a.union(&mods_b) {
            let (module, split) = (&key.0, key.1);
            let refuse = |reason: String| Refused { module: module.clone(), split, model_a: Some(ma.clone()), model_b: Some(mb.clone()), reason };
            if !mods_b.contains(key) {
                refused.push(Refused { model_b: None, ..refuse(format!("only in A ({}): B has no sessions of it", ea.dir.display())) });
                continue;
            }
            if !mods_a.contains(key) {
                refused.push(Refused { model_a: None, ..refuse(format!("only in B ({}): A has no sessions of it", eb.dir.display())) });
                continue;
            }
            match like(&ea, &eb, ma, mb, module, split, &along) {
                Err(reason) => refused.push(refuse(reason)),
                Ok((tasks, found)) => {
                    for d in found {
                        differences.entry(format!("{}={}|{}", d.field, d.ours, d.theirs)).or_insert(d);
                    }
                    let (Some(a), Some(b)) = (metrics(&sa, ma, module, split), metrics(&sb, mb, module, split)) else {
                        refused.push(refuse("the summary has no metrics for it".into()));
                        continue;
                    };
                    cells.push(Cell { module: module.clone(), split, model_a: ma.clone(), model_b: mb.clone(), tasks, a, b });
                }
            }
        }
    }
    if cells.is_empty() {
        let why: Vec<String> = refused.iter().map(|r| format!("{}: {}", r.module, r.reason)).collect();
        return Err(AggregateError::Uncomparable {
            detail: format!(
                "no cell of {} and {} is the same measurement along {}: {}",
                a.display(),
                b.display(),
                if along.is_empty() { "no declared difference".to_string() } else { along.join(", ") },
                if why.is_empty() { "they share no model".into() } else { why.join("; ") }
            ),
        });
    }
    let side = |s: &Summary, dir: &Path| Side { experiments: s.experiments.clone(), dir: dir.display().to_string(), provenance: s.provenance.clone() };
    let gaps = if along.contains(&"session_mode") { cells.iter().flat_map(|c| gaps_of(&ea, &eb, c)).collect() } else { Vec::new() };
    Ok(Comparison {
        schema: COMPARE_SCHEMA.into(),
        a: side(&sa, a),
        b: side(&sb, b),
        along: along.iter().map(|x| x.to_string()).collect(),
        differences: differences.into_values().collect(),
        cells,
        refused,
        gaps,
    })
}

/// One figure a comparison reads off a session record (None: the record has no value for it).
type Pick = fn(&SessionRecord) -> Option<f64>;

/// B − A per arm of one compared cell, from the two experiments' valid sessions.
fn gaps_of<'a>(a: &'a Experiment, b: &'a Experiment, cell: &Cell) -> Vec<Gap> {
    let oracle = matches!(cell.a, CellMetrics::Oracle(_));
    let valid = |e: &'a Experiment, model: &str, role: Role| -> Vec<&'a SessionRecord> {
        e.sessions
            .iter()
            .map(|s| &s.record)
            .filter(|r| r.model.id == model && r.module == cell.module && r.split == cell.split && r.role == role && r.validity.is_valid())
            .collect()
    };
    let metrics: &[(&str, Pick)] = if oracle {
        &[("estimated_input_tokens", |r| r.oracle.as_ref().and_then(|o| o.estimated_input_tokens).map(|t| t as f64))]
    } else {
        &[
            ("success", |r| Some(if r.passed() { 1.0 } else { 0.0 })),
            ("turns", |r| Some(r.turns as f64)),
            ("input_tokens", |r| r.totals.input_tokens.map(|t| t as f64)),
        ]
    };
    let mut out = Vec::new();
    for role in [Role::Pattern, Role::Control] {
        let (ra, rb) = (valid(a, &cell.model_a, role), valid(b, &cell.model_b, role));
        let Some(server) = ra.first().or(rb.first()).map(|r| r.server.clone()) else { continue };
        for (metric, pick) in metrics {
            // task → its sessions' values, per side.
            let by_task = |rs: &[&SessionRecord]| {
                let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
                for r in rs {
                    if let Some(x) = pick(r) {
                        m.entry(r.task.clone()).or_default().push(x);
                    }
                }
                m
            };
            let (ta, tb) = (by_task(&ra), by_task(&rb));
            let task_mean = |xs: &Vec<f64>| crate::stats::mean(xs).unwrap_or_default();
            let both: Vec<(f64, f64)> = ta.iter().filter_map(|(task, xa)| tb.get(task).map(|xb| (task_mean(xa), task_mean(xb)))).collect();
            let (mean_a, mean_b) =
                (crate::stats::mean(&both.iter().map(|p| p.0).collect::<Vec<_>>()), crate::stats::mean(&both.iter().map(|p| p.1).collect::<Vec<_>>()));
            let d: Vec<f64> = both.iter().map(|(a, b)| b - a).collect();
            let ci95 = match (oracle, *metric) {
                (true, _) => None,
                (false, "success") => crate::stats::rate_difference_ci(&d),
                (false, _) => crate::stats::cluster_mean_ci(&d),
            };
            out.push(Gap {
                module: cell.module.clone(),
                split: cell.split,
                model: cell.model_a.clone(),
                role,
                server: server.clone(),
                metric: (*metric).to_owned(),
                n_a: ta.values().map(Vec::len).sum(),
                n_b: tb.values().map(Vec::len).sum(),
                tasks: Some(both.len()),
                mean_a,
                mean_b,
                difference: crate::stats::mean(&d),
                ci95,
            });
        }
    }
    out
}

/// Which model of A is compared with which of B: the same id, or — along `model_id` — the one
/// model each side has (the oracle always with the oracle).
fn model_pairs(a: &Experiment, b: &Experiment, along: &[&str]) -> Result<Vec<(String, String)>> {
    let ids = |e: &Experiment, oracle: bool| {
        e.sessions.iter().filter(|s| s.record.model.is_oracle() == oracle).map(|s| s.record.model.id.clone()).collect::<BTreeSet<_>>()
    };
    let mut pairs = Vec::new();
    if !ids(a, true).is_empty() && !ids(b, true).is_empty() {
        pairs.push(("oracle".to_string(), "oracle".to_string()));
    }
    let (ma, mb) = (ids(a, false), ids(b, false));
    if along.contains(&"model_id") {
        match (ma.len(), mb.len()) {
            (0, 0) => {}
            (1, 1) => pairs.push((ma.into_iter().next().unwrap_or_default(), mb.into_iter().next().unwrap_or_default())),
            (x, y) => {
                return Err(AggregateError::Uncomparable {
                    detail: format!("--along model_id pairs one model with one, but A has {x} models and B {y}; compare experiments of one model each"),
                });
            }
        }
    } else {
        pairs.extend(ma.intersection(&mb).map(|m| (m.clone(), m.clone())));
    }
    Ok(pairs)
}

/// Whether `module` of model `ma` in A and `mb` in B is one measurement outside `along`: the same
/// tasks, and for each task and arm fingerprints that agree. Returns the task count and the
/// declared differences found, or why not.
fn like(
    a: &Experiment,
    b: &Experiment,
    ma: &str,
    mb: &str,
    module: &str,
    split: records::Split,
    along: &[&str],
) -> std::result::Result<(usize, Vec<FieldDifference>), String> {
    let (fa, fb) = (first_per_task(a, ma, module, split), first_per_task(b, mb, module, split));
    let tasks = |m: &BTreeMap<Key, (&SessionRecord, &PathBuf)>| m.keys().map(|k| k.1.clone()).collect::<BTreeSet<_>>();
    let (ta, tb) = (tasks(&fa), tasks(&fb));
    if ta != tb {
        let only = |x: &BTreeSet<String>, y: &BTreeSet<String>| x.difference(y).cloned().collect::<Vec<_>>().join(", ");
        return Err(format!(
            "the experiments cover different tasks (only in A: {}; only in B: {}), so their rates are over different things",
            or_none(only(&ta, &tb)),
            or_none(only(&tb, &ta))
        ));
    }
    let mut found = Vec::new();
    for (key, (ra, pa)) in &fa {
        let Some((rb, pb)) = fb.get(key) else {
            return Err(format!("the {} arm has no sessions of task {} in B", key.0, key.1));
        };
        if ra.server != rb.server {
            return Err(format!("the {} arm is server {} in A and {} in B", key.0, ra.server, rb.server));
        }
        let (Some(fpa), Some(fpb)) = (&ra.fingerprint, &rb.fingerprint) else {
            return Err("a record has no fingerprint".into());
        };
        let outside = fpa.differences_outside(fpb, along);
        if !outside.is_empty() {
            let text: Vec<String> = outside.iter().map(ToString::to_string).collect();
            return Err(format!("it differs in {} — not a declared difference (--along) — between {} and {}", text.join("; "), pa.display(), pb.display()));
        }
        found.extend(fpa.differences(fpb));
    }
    Ok((ta.len(), found))
}

type Key = (Role, String);

/// The first record of each (arm, task) of `model`'s `module`: the checks have made every record
/// of one (arm, task) agree, so one stands for all.
fn first_per_task<'a>(e: &'a Experiment, model: &str, module: &str, split: records::Split) -> BTreeMap<Key, (&'a SessionRecord, &'a PathBuf)> {
    let mut m = BTreeMap::new();
    for s in e.sessions.iter().filter(|s| s.record.model.id == model && s.record.module == module && s.record.split == split) {
        m.entry((s.record.role, s.record.task.clone())).or_insert((&s.record, &s.path));
    }
    m
}

fn or_none(s: String) -> String {
    if s.is_empty() { "none".into() } else { s }
}

fn metrics(s: &Summary, model: &str, module: &str, split: records::Split) -> Option<CellMetrics> {
    if model == "oracle" {
        return s.oracle_floors.iter().find(|f| f.module == module && f.split == split).map(|f| CellMetrics::Oracle(Box::new(f.clone())));
    }
    let m = s.models.iter().find(|m| m.model == model)?;
    m.modules.iter().find(|x| x.module == module && x.split == split).map(|x| CellMetrics::Model(Box::new(x.clone())))
}
