//! Two experiments side by side (`pipeline aggregate --compare A B`). A cell — one model's
//! module, or the oracle's — is compared only when its records in both experiments are the
//! same measurement except along the declared difference: for every task both cover, the
//! fingerprints of each arm agree outside the declared fields, and both cover the same tasks.
//! Every other cell is listed as refused, with why; when no cell is left, nothing is compared.
//!
//! Each experiment's numbers are its own (intervals within the experiment); the sessions of two
//! runs are not paired, so no difference across them is computed or tested.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use records::fingerprint::FIELDS;
use records::{FieldDifference, Role, SessionRecord};
use serde::{Deserialize, Serialize};

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
        let modules = |e: &Experiment, m: &str| e.sessions.iter().filter(|s| s.record.model.id == m).map(|s| s.record.module.clone()).collect::<BTreeSet<_>>();
        let (mods_a, mods_b) = (modules(&ea, ma), modules(&eb, mb));
        for module in mods_a.union(&mods_b) {
            let refuse = |reason: String| Refused { module: module.clone(), model_a: Some(ma.clone()), model_b: Some(mb.clone()), reason };
            if !mods_b.contains(module) {
                refused.push(Refused { model_b: None, ..refuse(format!("only in A ({}): B has no sessions of it", ea.dir.display())) });
                continue;
            }
            if !mods_a.contains(module) {
                refused.push(Refused { model_a: None, ..refuse(format!("only in B ({}): A has no sessions of it", eb.dir.display())) });
                continue;
            }
            match like(&ea, &eb, ma, mb, module, &along) {
                Err(reason) => refused.push(refuse(reason)),
                Ok((tasks, found)) => {
                    for d in found {
                        differences.entry(format!("{}={}|{}", d.field, d.ours, d.theirs)).or_insert(d);
                    }
                    let (Some(a), Some(b)) = (metrics(&sa, ma, module), metrics(&sb, mb, module)) else {
                        refused.push(refuse("the summary has no metrics for it".into()));
                        continue;
                    };
                    cells.push(Cell { module: module.clone(), model_a: ma.clone(), model_b: mb.clone(), tasks, a, b });
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
    Ok(Comparison {
        schema: COMPARE_SCHEMA.into(),
        a: side(&sa, a),
        b: side(&sb, b),
        along: along.iter().map(|x| x.to_string()).collect(),
        differences: differences.into_values().collect(),
        cells,
        refused,
    })
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
fn like(a: &Experiment, b: &Experiment, ma: &str, mb: &str, module: &str, along: &[&str]) -> std::result::Result<(usize, Vec<FieldDifference>), String> {
    let (fa, fb) = (first_per_task(a, ma, module), first_per_task(b, mb, module));
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
fn first_per_task<'a>(e: &'a Experiment, model: &str, module: &str) -> BTreeMap<Key, (&'a SessionRecord, &'a PathBuf)> {
    let mut m = BTreeMap::new();
    for s in e.sessions.iter().filter(|s| s.record.model.id == model && s.record.module == module) {
        m.entry((s.record.role, s.record.task.clone())).or_insert((&s.record, &s.path));
    }
    m
}

fn or_none(s: String) -> String {
    if s.is_empty() { "none".into() } else { s }
}

fn metrics(s: &Summary, model: &str, module: &str) -> Option<CellMetrics> {
    if model == "oracle" {
        return s.oracle_floors.iter().find(|f| f.module == module).map(|f| CellMetrics::Oracle(Box::new(f.clone())));
    }
    let m = s.models.iter().find(|m| m.model == model)?;
    m.modules.iter().find(|x| x.module == module).map(|x| CellMetrics::Model(Box::new(x.clone())))
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn signed_pct(x: f64) -> String {
    if x > 0.0 { format!("+{:.1}%", x * 100.0) } else { pct(x) }
}

fn num(x: f64) -> String {
    crate::chart::readable(x)
}

fn signed(x: f64) -> String {
    if x > 0.0 { format!("+{}", num(x)) } else { num(x) }
}

fn interval(i: Option<crate::stats::Interval>, f: fn(f64) -> String) -> String {
    i.map(|i| format!(" [{}, {}]", f(i.lo), f(i.hi))).unwrap_or_default()
}

fn diff(d: &Option<crate::metrics::Diff>, f: fn(f64) -> String) -> String {
    match d {
        Some(d) => format!("{}{} (n={})", f(d.mean), interval(d.ci95, f), d.n),
        None => "—".into(),
    }
}

/// The rows a model cell shows, (metric, A, B).
fn model_rows(a: &ModuleReport, b: &ModuleReport) -> Vec<(String, String, String)> {
    use crate::metrics::{ArmMetrics, Dist};
    let arm = |m: &ModuleReport, role: Role| if role == Role::Pattern { m.pattern.clone() } else { m.control.clone() };
    let valid = |x: &Option<ArmMetrics>| x.as_ref().map(|x| format!("{}/{}", x.valid, x.attempted)).unwrap_or_else(|| "no sessions".into());
    let rate = |x: &Option<ArmMetrics>| {
        x.as_ref()
            .and_then(|x| x.success.rate.map(|r| format!("{} ({}/{}){}", pct(r), x.success.successes, x.success.n, interval(x.success.wilson95, pct))))
            .unwrap_or_else(|| "—".into())
    };
    let mean = |x: &Option<ArmMetrics>, pick: fn(&ArmMetrics) -> &Dist| {
        x.as_ref().and_then(|x| pick(x).mean.map(|m| format!("{}{}", num(m), interval(pick(x).mean_ci95, num)))).unwrap_or_else(|| "—".into())
    };
    let mut rows =
        vec![("verdict".to_string(), format!("**{}**: {}", a.verdict.as_str(), a.verdict_reason), format!("**{}**: {}", b.verdict.as_str(), b.verdict_reason))];
    for role in [Role::Pattern, Role::Control] {
        let (xa, xb) = (arm(a, role), arm(b, role));
        rows.push((format!("{role}: valid / attempted"), valid(&xa), valid(&xb)));
        rows.push((format!("{role}: success rate [Wilson 95%]"), rate(&xa), rate(&xb)));
        rows.push((format!("{role}: turns, mean [95% CI]"), mean(&xa, |x| &x.turns), mean(&xb, |x| &x.turns)));
        rows.push((format!("{role}: input tokens, mean [95% CI]"), mean(&xa, |x| &x.input_tokens), mean(&xb, |x| &x.input_tokens)));
    }
    rows.push(("success difference (paired)".into(), diff(&a.paired.success, signed_pct), diff(&b.paired.success, signed_pct)));
    rows.push(("turns difference, all pairs".into(), diff(&a.paired.turns, signed), diff(&b.paired.turns, signed)));
    rows.push(("turns difference, both passed".into(), diff(&a.paired.both_passed.turns, signed), diff(&b.paired.both_passed.turns, signed)));
    rows.push(("input-token difference, all pairs".into(), diff(&a.paired.input_tokens, signed), diff(&b.paired.input_tokens, signed)));
    rows.push((
        "input-token difference, both passed".into(),
        diff(&a.paired.both_passed.input_tokens, signed),
        diff(&b.paired.both_passed.input_tokens, signed),
    ));
    rows
}

fn oracle_rows(a: &OracleModule, b: &OracleModule) -> Vec<(String, String, String)> {
    let calls = |f: &OracleModule, role: Role| -> String {
        let v: Vec<u64> = f.rows.iter().filter(|r| r.role == role).filter_map(|r| r.calls).collect();
        if v.is_empty() { "—".into() } else { v.iter().sum::<u64>().to_string() }
    };
    let tokens = |f: &OracleModule, role: Role| f.total_estimated_input_tokens.get(&role).map(|t| format!("≈{}", num(*t as f64))).unwrap_or_else(|| "—".into());
    let mut rows = Vec::new();
    for role in [Role::Pattern, Role::Control] {
        rows.push((format!("{role}: calls Σ over tasks (counted)"), calls(a, role), calls(b, role)));
        rows.push((format!("{role}: input tokens Σ over tasks (estimate)"), tokens(a, role), tokens(b, role)));
    }
    rows
}

fn shell(c: &Option<Vec<String>>) -> String {
    c.as_deref().map(|c| format!("`{}`", crate::markdown::shell_line(c))).unwrap_or_else(|| "not recorded".into())
}

impl Comparison {
    pub fn markdown(&self) -> String {
        let mut o = String::new();
        let name = |s: &Side| s.experiments.join(", ");
        writeln!(o, "# mcp-pattern-bench comparison — A: {} · B: {}\n", name(&self.a), name(&self.b)).unwrap();
        if self.along.is_empty() {
            writeln!(o, "> No declared difference: the compared cells' records have equal fingerprints in both experiments (outside each task's own fields), so A and B are repeats of one measurement.\n").unwrap();
        } else {
            let found: Vec<String> = self.differences.iter().map(|d| format!("{} {} (A) vs {} (B)", d.field, d.ours, d.theirs)).collect();
            writeln!(
                o,
                "> Declared difference (--along): {}. Found in the compared cells: {}. Everything else the records' fingerprints hold is equal.\n",
                self.along.join(", "),
                if found.is_empty() { "none — the declared fields are equal too".into() } else { found.join("; ") }
            )
            .unwrap();
        }
        writeln!(o, "> Each experiment's numbers and intervals are its own. The sessions of two runs are not paired, so no difference across the experiments is computed or tested here.\n").unwrap();
        writeln!(o, "## Compared cells\n").unwrap();
        for c in &self.cells {
            let who = if c.model_a == c.model_b { format!("model `{}`", c.model_a) } else { format!("model `{}` (A) vs `{}` (B)", c.model_a, c.model_b) };
            writeln!(o, "### {} — {who}, {} tasks\n", c.module, c.tasks).unwrap();
            writeln!(o, "| metric | A: {} | B: {} |", name(&self.a), name(&self.b)).unwrap();
            writeln!(o, "| --- | --- | --- |").unwrap();
            let rows = match (&c.a, &c.b) {
                (CellMetrics::Model(a), CellMetrics::Model(b)) => model_rows(a, b),
                (CellMetrics::Oracle(a), CellMetrics::Oracle(b)) => oracle_rows(a, b),
                _ => vec![],
            };
            for (what, a, b) in rows {
                writeln!(o, "| {what} | {a} | {b} |").unwrap();
            }
            writeln!(o).unwrap();
        }
        if !self.refused.is_empty() {
            writeln!(o, "## Not compared\n").unwrap();
            for r in &self.refused {
                let who = match (&r.model_a, &r.model_b) {
                    (Some(a), Some(b)) if a == b => format!(" (model `{a}`)"),
                    (Some(a), Some(b)) => format!(" (model `{a}` vs `{b}`)"),
                    (Some(a), None) | (None, Some(a)) => format!(" (model `{a}`)"),
                    (None, None) => String::new(),
                };
                writeln!(o, "- **{}**{who}: {}", r.module, r.reason).unwrap();
            }
            writeln!(o).unwrap();
        }
        writeln!(o, "## Provenance\n").unwrap();
        writeln!(o, "| what | A | B |").unwrap();
        writeln!(o, "| --- | --- | --- |").unwrap();
        let (pa, pb) = (&self.a.provenance, &self.b.provenance);
        let time =
            |t: Option<chrono::DateTime<chrono::Utc>>| t.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)).unwrap_or_else(|| "not recorded".into());
        let commit = |p: &Provenance| match (&p.git_commit, p.git_dirty) {
            (Some(c), Some(true)) => format!("{c} (with uncommitted changes)"),
            (Some(c), _) => c.clone(),
            (None, _) => "not recorded".into(),
        };
        let k = |p: &Provenance| p.k.map(|k| k.to_string()).unwrap_or_else(|| "not recorded".into());
        for (what, a, b) in [
            ("folder", self.a.dir.clone(), self.b.dir.clone()),
            ("run command", shell(&pa.command), shell(&pb.command)),
            ("run started", time(pa.started_at), time(pb.started_at)),
            ("work tree", commit(pa), commit(pb)),
            ("k", k(pa), k(pb)),
            ("endpoint preflight", pa.preflight.status.as_str().into(), pb.preflight.status.as_str().into()),
        ] {
            writeln!(o, "| {what} | {} | {} |", a.replace('|', "\\|"), b.replace('|', "\\|")).unwrap();
        }
        writeln!(o).unwrap();
        o
    }

    /// A self-contained page of [`Self::markdown`].
    pub fn html(&self) -> String {
        crate::html::page("mcp-pattern-bench comparison", &crate::html::markdown_to_html(&self.markdown()))
    }

    /// Writes `compare.md`, `compare.json` and `compare.html` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<[PathBuf; 3]> {
        let paths = [dir.join("compare.md"), dir.join("compare.json"), dir.join("compare.html")];
        let json = serde_json::to_string_pretty(self)? + "\n";
        for (p, body) in paths.iter().zip([self.markdown(), json, self.html()]) {
            std::fs::write(p, body).map_err(|source| AggregateError::Write { path: p.clone(), source })?;
        }
        Ok(paths)
    }
}
