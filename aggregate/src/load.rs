//! Reading one experiment folder exactly as the pipeline lays it out:
//!
//! ```text
//! results/<exp>/manifest.json                                  the plan (optional in old runs)
//! results/<exp>/<model>__<server>/<task>__rep<k>.json          a record, scored
//! results/<exp>/<model>__<server>/superseded/<…>.attempt<n>.json  a replaced attempt, counted
//! ```
//!
//! Everything else at the top (`check*.json`, the lock, the report's own outputs) is not a record
//! and is never parsed as one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use records::{ExperimentManifest, SessionRecord};
use serde::{Deserialize, Serialize};

use crate::error::{AggregateError, Result};

/// One record and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub path: PathBuf,
    pub record: SessionRecord,
}

impl Loaded {
    /// The transcript written beside the record (`<task>__rep<k>.transcript.jsonl`).
    pub fn transcript_path(&self) -> PathBuf {
        self.path.with_extension("transcript.jsonl")
    }
}

/// One experiment: its plan (when the run wrote one) and its records.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub dir: PathBuf,
    pub manifest: Option<ExperimentManifest>,
    /// The records that are scored, sorted by path.
    pub sessions: Vec<Loaded>,
    /// Attempts a rerun replaced (`<model>__<server>/superseded/`): counted, never scored.
    pub superseded: Vec<Loaded>,
    /// Entries the layout does not explain; left unread, and listed in the report so nothing is
    /// dropped without a word.
    pub ignored: Vec<PathBuf>,
    /// A merge reported with `--allow-incomplete`: the planned sessions no part holds, listed
    /// above the headline. Empty otherwise.
    pub missing: Vec<String>,
}

/// The folder (beside report.html) of the sessions' own pages: the report's, never records.
pub const SESSION_DIR: &str = "report-sessions";

/// The report's own outputs, written into the experiment folder (and its sessions' pages, in
/// [`SESSION_DIR`]).
const OUTPUTS: &[&str] = &["summary.json", "report.md", "report.html", "chart.png", "chart.svg"];
const SUPERSEDED: &str = "superseded";

/// Reads the experiment in `dir`. A record that does not parse is an error naming the file (a
/// report over silently skipped records would not be honest), and so is a folder that is not
/// one experiment: `results/` itself, or a folder with neither a manifest nor record folders.
pub fn load_experiment(dir: &Path) -> Result<Experiment> {
    load(dir, false)
}

/// [`load_experiment`] for a part of a merge: a shard whose manifest says the split gave it no
/// session is a complete part with no records (a plan with fewer units than shards), not an
/// experiment that never ran.
pub fn load_experiment_part(dir: &Path) -> Result<Experiment> {
    load(dir, true)
}

fn load(dir: &Path, part: bool) -> Result<Experiment> {
    let manifest = read_manifest(dir)?;
    let mut record_dirs = Vec::new();
    let mut experiments = Vec::new();
    let mut ignored = Vec::new();
    for (name, path, is_dir) in entries(dir)? {
        if is_dir && name == SESSION_DIR {
            continue;
        }
        if is_dir {
            if path.join(records::manifest::FILE).is_file() {
                experiments.push(name);
            } else if name.contains("__") {
                record_dirs.push(path);
            } else if looks_like_experiment(&path)? {
                experiments.push(name);
            } else {
                ignored.push(path);
            }
        } else if !(name == records::manifest::FILE || OUTPUTS.contains(&name.as_str()) || (name.starts_with("check") && name.ends_with(".json"))) {
            ignored.push(path);
        }
    }
    if manifest.is_none() && record_dirs.is_empty() {
        return Err(if experiments.is_empty() {
            AggregateError::NotAnExperiment { path: dir.to_path_buf() }
        } else {
            AggregateError::SeveralExperiments { path: dir.to_path_buf(), names: experiments }
        });
    }
    // A folder with a plan of its own is one experiment; folders nested in it are not part of it.
    ignored.extend(experiments.iter().map(|n| dir.join(n)));

    let mut sessions = Vec::new();
    let mut superseded = Vec::new();
    for rd in &record_dirs {
        for (name, path, is_dir) in entries(rd)? {
            if is_dir && name == SUPERSEDED {
                for (name, path, is_dir) in entries(&path)? {
                    if !is_dir && name.ends_with(".json") {
                        superseded.push(read_record(path)?);
                    } else if !name.ends_with(".transcript.jsonl") {
                        ignored.push(path);
                    }
                }
            } else if !is_dir && name.ends_with(".json") {
                let l = read_record(path)?;
                // A record marked replaced but still in place means its replacement was never
                // written: scoring it would count a session the run itself discarded.
                if l.record.superseded.is_some() {
                    return Err(AggregateError::MisplacedSuperseded { path: l.path });
                }
                sessions.push(l);
            } else if !name.ends_with(".transcript.jsonl") {
                ignored.push(path);
            }
        }
    }
    sessions.sort_by(|a, b| a.path.cmp(&b.path));
    superseded.sort_by(|a, b| a.path.cmp(&b.path));
    ignored.sort();
    no_copy_of_a_scored_record(&sessions, &superseded)?;
    let assigned_nothing = part && manifest.as_ref().and_then(|m| m.shard.as_ref()).is_some_and(|s| s.sessions == Some(0));
    if sessions.is_empty() && !assigned_nothing {
        return Err(AggregateError::NoRecords { path: dir.to_path_buf() });
    }
    one_experiment_name(manifest.as_ref(), &dir.join(records::manifest::FILE), &sessions)?;
    Ok(Experiment { dir: dir.to_path_buf(), manifest, sessions, superseded, ignored, missing: Vec::new() })
}

/// Before superseding became a rename, a run that stopped between writing the replaced copy and
/// removing the original left both: the copy, marked, is then the scored record itself.
fn no_copy_of_a_scored_record(sessions: &[Loaded], superseded: &[Loaded]) -> Result<()> {
    for copy in superseded {
        let unmarked = SessionRecord { superseded: None, ..copy.record.clone() };
        if let Some(s) = sessions.iter().find(|s| s.record == unmarked) {
            return Err(AggregateError::SupersededCopy { record: s.path.clone(), copy: copy.path.clone() });
        }
    }
    Ok(())
}

/// Records of two experiments in one folder were copied together: whatever they share, the
/// folder no longer describes one run.
fn one_experiment_name(manifest: Option<&ExperimentManifest>, manifest_path: &Path, sessions: &[Loaded]) -> Result<()> {
    let (name, source) = match manifest {
        Some(m) => (m.experiment.as_str(), manifest_path.to_path_buf()),
        None => (sessions[0].record.experiment.as_str(), sessions[0].path.clone()),
    };
    match sessions.iter().find(|s| s.record.experiment != name) {
        Some(s) => {
            Err(AggregateError::MixedExperiments { ours: name.to_owned(), ours_path: source, theirs: s.record.experiment.clone(), theirs_path: s.path.clone() })
        }
        None => Ok(()),
    }
}

fn read_manifest(dir: &Path) -> Result<Option<ExperimentManifest>> {
    let path = dir.join(records::manifest::FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|source| AggregateError::MalformedManifest { path, source }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(AggregateError::Io { path, source }),
    }
}

fn read_record(path: PathBuf) -> Result<Loaded> {
    let bytes = std::fs::read(&path).map_err(|source| AggregateError::Io { path: path.clone(), source })?;
    let record = serde_json::from_slice(&bytes).map_err(|source| AggregateError::MalformedRecord { path: path.clone(), source })?;
    Ok(Loaded { path, record })
}

/// (name, path, is a directory) of `dir`'s entries, dotfiles left out (the lock, temporary files
/// of an atomic write), sorted by name.
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf, bool)>> {
    let io = |source| AggregateError::Io { path: dir.to_path_buf(), source };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        // Follows symlinks: a linked record folder is still part of the experiment.
        let is_dir = entry.path().is_dir();
        out.push((name, entry.path(), is_dir));
    }
    out.sort();
    Ok(out)
}

/// An experiment written before manifests existed: it holds `<model>__<server>/` folders.
fn looks_like_experiment(dir: &Path) -> Result<bool> {
    Ok(entries(dir)?.iter().any(|(name, _, is_dir)| *is_dir && name.contains("__")))
}

/// USD per million tokens for one model id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached input (prompt) tokens.
    pub input: f64,
    /// Cached input tokens. When absent, all input tokens are charged at `input` and the cached
    /// count is not needed.
    pub cached_input: Option<f64>,
    pub output: f64,
}

/// A user-editable price table:
///
/// ```toml
/// [models."gpt-4o-mini"]
/// input = 0.15
/// cached_input = 0.075
/// output = 0.60
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    #[serde(default)]
    pub models: BTreeMap<String, Price>,
}

impl PriceTable {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| AggregateError::Io { path: path.to_path_buf(), source })?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let table: Self = toml::from_str(text).map_err(|e| AggregateError::MalformedPrices { path: path.to_path_buf(), source: Box::new(e) })?;
        for (id, p) in &table.models {
            let all = [Some(p.input), p.cached_input, Some(p.output)];
            if all.iter().flatten().any(|v| !v.is_finite() || *v < 0.0) {
                return Err(AggregateError::InvalidPrices { path: path.to_path_buf(), detail: format!("model {id:?}: prices must be finite and ≥ 0") });
            }
        }
        Ok(table)
    }

    /// Cost of one session in USD, or `None` when the model has no price or a needed usage
    /// field is null. Never 0 for unknown.
    pub fn cost(&self, model: &str, totals: &records::Totals) -> Option<f64> {
        let p = self.models.get(model)?;
        let input = totals.input_tokens? as f64;
        let output = totals.output_tokens? as f64;
        let input_cost = match p.cached_input {
            Some(cached_price) => {
                let cached = totals.cached_input_tokens? as f64;
                (input - cached).max(0.0) * p.input + cached * cached_price
            }
            None => input * p.input,
        };
        Some((input_cost + output * p.output) / 1e6)
    }
}
