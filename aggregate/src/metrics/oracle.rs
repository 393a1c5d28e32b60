//! Oracle structural floors: per (task, role, server) medians of the oracle sessions' floors,
//! never mixed with model results, and each role's figures per session.

use std::collections::{BTreeMap, BTreeSet};

use records::{Role, SessionRecord};
use serde::{Deserialize, Serialize};

use super::Comparison;
use super::select::passed;
use crate::stats;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OracleModule {
    pub module: String,
    /// As [`ModuleReport::comparison`](super::ModuleReport::comparison).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// As [`ModuleReport::split`](super::ModuleReport::split).
    #[serde(default, skip_serializing_if = "records::Split::is_dev")]
    pub split: records::Split,
    pub rows: Vec<OracleRow>,
    /// Σ over tasks of the per-task median estimated tokens (context at the end), per role;
    /// a role with a task lacking the figure is absent.
    pub total_estimated_tokens: BTreeMap<Role, u64>,
    /// Σ over tasks of the per-task median estimated input tokens (one call per turn), per
    /// role; comparable with model sessions' input tokens. Roles without the figure are absent.
    #[serde(default)]
    pub total_estimated_input_tokens: BTreeMap<Role, u64>,
    /// What one session of each role takes: the figures the report's tables and chart show.
    #[serde(default)]
    pub per_session: BTreeMap<Role, OraclePerSession>,
    /// The tasks on which the pattern's plan costs more estimated input than the control's, or,
    /// costing no more, takes more calls.
    #[serde(default)]
    pub losing_tasks: Vec<super::splits::LosingTask>,
    /// The tasks the losing rule could not judge, with why (absent when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unjudged_tasks: Vec<super::splits::UnjudgedTask>,
    /// The tokenizer every row's counted figures were made with (`o200k_base`, `cl100k_base`,
    /// `llama:URL`); null when some row has none, or rows disagree: then the token figures are
    /// the estimates alone.
    #[serde(default)]
    pub tokenizer: Option<String>,
    /// The distractors listed beside both arms' tools (`--distractors`; the most any session
    /// was offered): inside every definitions figure, the same in both arms. Absent with none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distractors: Option<u32>,
    /// Of each definitions figure, the distractors' bytes (absent with none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distractors_bytes: Option<u64>,
}

impl OracleModule {
    /// A role's figure per session (see [`OraclePerSession`]), or why there is none: what the
    /// oracle table, the headline and the chart all show.
    pub fn per_session_of(&self, role: Role, pick: fn(&OraclePerSession) -> Option<f64>) -> std::result::Result<f64, &'static str> {
        match self.per_session.get(&role) {
            None => Err("no sessions"),
            Some(m) => pick(m).ok_or("not every task has it"),
        }
    }

    /// The server of a role, "—" without one.
    pub fn server(&self, role: Role) -> String {
        self.rows.iter().find(|r| r.role == role).map(|r| r.server.clone()).unwrap_or_else(|| "—".into())
    }
}

/// One role's oracle figures per session: the mean over the module's tasks of each task's
/// median. Per session rather than summed because that is what the model results beside them
/// are, and because a sum over tasks grows with a module's task count; each task weighs the
/// same whatever its reps. A figure some task lacks is null: a mean over the other tasks would
/// compare unlike things.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OraclePerSession {
    /// Tasks the means are over.
    pub tasks: usize,
    pub calls: Option<f64>,
    /// An estimate: the context at the end of the plan.
    pub estimated_tokens: Option<f64>,
    /// An estimate: input tokens over the plan's turns, one call per turn.
    pub estimated_input_tokens: Option<f64>,
    /// An estimate: what the model writes — the calls' arguments and the answer.
    #[serde(default)]
    pub estimated_output_tokens: Option<f64>,
    /// The definitions the arm offers, in bytes: the arm's tool-list footprint.
    #[serde(default)]
    pub definitions_bytes: Option<f64>,
    /// Counted in the module's tokenizer (null without one): the definitions, the input over
    /// the plan's turns, and the output.
    #[serde(default)]
    pub definitions_tokens: Option<f64>,
    #[serde(default)]
    pub input_tokens: Option<f64>,
    #[serde(default)]
    pub output_tokens: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OracleRow {
    pub task: String,
    pub role: Role,
    pub server: String,
    pub sessions: usize,
    pub valid: usize,
    pub passed: usize,
    /// Medians over valid oracle sessions with a floor. Counts stay integers: with an even
    /// number of sessions the median is the lower middle value, one that was observed.
    pub calls: Option<u64>,
    pub schema_bytes: Option<u64>,
    pub args_bytes: Option<u64>,
    pub result_bytes: Option<u64>,
    /// An estimate, never a measurement: the context at the end of the plan.
    pub estimated_tokens: Option<u64>,
    pub estimate_method: Option<String>,
    /// An estimate, never a measurement: input tokens over the plan's turns, one call per turn.
    #[serde(default)]
    pub estimated_input_tokens: Option<u64>,
    #[serde(default)]
    pub input_estimate_method: Option<String>,
    /// An estimate, never a measurement: what a model would write to follow the plan — every
    /// call's arguments (a program, where the pattern runs one) and the answer — as
    /// (argument bytes + answer bytes) / 4.
    #[serde(default)]
    pub estimated_output_tokens: Option<u64>,
    /// The tokenizer every valid session's floor was counted in; null when one had none or
    /// two disagree, and then the three counts below are null too.
    #[serde(default)]
    pub tokenizer: Option<String>,
    /// Counted, not estimated (medians like the rest): the definitions, the input over the
    /// plan's turns, and the output, in tokens of [`Self::tokenizer`].
    #[serde(default)]
    pub definitions_tokens: Option<u64>,
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
}

pub(super) fn oracle_module(module: String, recs: &[&SessionRecord]) -> OracleModule {
    let mut groups: BTreeMap<(String, Role, String), Vec<&SessionRecord>> = BTreeMap::new();
    for r in recs {
        groups.entry((r.task.clone(), r.role, r.server.clone())).or_default().push(r);
    }
    let rows: Vec<OracleRow> = groups
        .into_iter()
        .map(|((task, role, server), v)| {
            let valid: Vec<_> = v.iter().filter(|r| r.validity.is_valid()).collect();
            let floors: Vec<_> = valid.iter().filter_map(|r| r.oracle.as_ref()).collect();
            let med = |f: fn(&records::OracleFloor) -> u64| lower_median(floors.iter().map(|x| f(x)).collect());
            // Counts are read only when every floor was counted, in one tokenizer.
            let tokenizer = one_tokenizer(floors.iter().map(|f| f.tokenizer.as_deref()));
            let counted = |f: fn(&records::OracleFloor) -> Option<u64>| {
                tokenizer.as_ref()?;
                let values: Option<Vec<u64>> = floors.iter().map(|x| f(x)).collect();
                lower_median(values?)
            };
            OracleRow {
                task,
                role,
                server,
                sessions: v.len(),
                valid: valid.len(),
                passed: valid.iter().filter(|r| passed(r)).count(),
                calls: med(|f| f.calls as u64),
                schema_bytes: med(|f| f.schema_bytes as u64),
                args_bytes: med(|f| f.args_bytes as u64),
                result_bytes: med(|f| f.result_bytes as u64),
                estimated_tokens: med(|f| f.estimated_tokens),
                estimate_method: floors.first().map(|f| f.estimate_method.clone()),
                estimated_input_tokens: lower_median(floors.iter().filter_map(|f| f.estimated_input_tokens).collect()),
                input_estimate_method: floors.iter().find_map(|f| f.input_estimate_method.clone()),
                estimated_output_tokens: lower_median(
                    valid.iter().filter_map(|r| Some((r.oracle.as_ref()?.args_bytes + r.final_answer.as_deref().map_or(0, str::len)) as u64 / 4)).collect(),
                ),
                definitions_tokens: counted(|f| f.definitions_tokens),
                input_tokens: counted(|f| f.input_tokens),
                output_tokens: counted(|f| f.output_tokens),
                tokenizer,
            }
        })
        .collect();
    // A role's total is over all its tasks or absent: a partial sum would compare unlike things.
    let total = |figure: fn(&OracleRow) -> Option<u64>| {
        let mut by_role: BTreeMap<Role, Option<u64>> = BTreeMap::new();
        for r in &rows {
            let entry = by_role.entry(r.role).or_insert(Some(0));
            *entry = entry.zip(figure(r)).map(|(sum, t)| sum + t);
        }
        by_role.into_iter().filter_map(|(role, t)| Some((role, t?))).collect::<BTreeMap<_, _>>()
    };
    let total_estimated_tokens = total(|r| r.estimated_tokens);
    let total_estimated_input_tokens = total(|r| r.estimated_input_tokens);
    let tokenizer = one_tokenizer(rows.iter().map(|r| r.tokenizer.as_deref()));
    let per_session = per_session(&rows, tokenizer.is_some());
    OracleModule {
        module,
        comparison: None,
        split: records::Split::Dev,
        rows,
        total_estimated_tokens,
        total_estimated_input_tokens,
        per_session,
        losing_tasks: Vec::new(),
        unjudged_tasks: Vec::new(),
        tokenizer,
        distractors: recs.iter().map(|r| r.offered.distractors).max().filter(|n| *n > 0),
        distractors_bytes: recs.iter().map(|r| r.offered.distractors_bytes as u64).max().filter(|n| *n > 0),
    }
}

/// The one tokenizer all of `labels` name; none when one is absent, they differ, or there are none.
fn one_tokenizer<'a>(mut labels: impl Iterator<Item = Option<&'a str>>) -> Option<String> {
    let first = labels.next()??;
    labels.all(|l| l == Some(first)).then(|| first.to_owned())
}

/// Each role's [`OraclePerSession`] over its rows (one per task); the counted figures only when
/// the module's rows share a tokenizer (`counted`).
fn per_session(rows: &[OracleRow], counted: bool) -> BTreeMap<Role, OraclePerSession> {
    let roles: BTreeSet<Role> = rows.iter().map(|r| r.role).collect();
    roles
        .into_iter()
        .map(|role| {
            let of_role: Vec<&OracleRow> = rows.iter().filter(|r| r.role == role).collect();
            // `None` as soon as one task lacks the figure.
            let mean = |figure: fn(&OracleRow) -> Option<u64>| {
                let values: Option<Vec<f64>> = of_role.iter().map(|r| figure(r).map(|x| x as f64)).collect();
                stats::mean(&values?)
            };
            let means = OraclePerSession {
                tasks: of_role.iter().map(|r| r.task.as_str()).collect::<BTreeSet<_>>().len(),
                calls: mean(|r| r.calls),
                estimated_tokens: mean(|r| r.estimated_tokens),
                estimated_input_tokens: mean(|r| r.estimated_input_tokens),
                estimated_output_tokens: mean(|r| r.estimated_output_tokens),
                definitions_bytes: mean(|r| r.schema_bytes),
                definitions_tokens: mean(|r| r.definitions_tokens).filter(|_| counted),
                input_tokens: mean(|r| r.input_tokens).filter(|_| counted),
                output_tokens: mean(|r| r.output_tokens).filter(|_| counted),
            };
            (role, means)
        })
        .collect()
}

/// The lower middle value of `xs` (the median for an odd count): a value some session had.
fn lower_median(mut xs: Vec<u64>) -> Option<u64> {
    xs.sort_unstable();
    xs.get(xs.len().checked_sub(1)? / 2).copied()
}
