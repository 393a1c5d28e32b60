//! Reading an experiment folder: `results/<exp>/<model>__<server>/<task>__rep<k>.json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use records::SessionRecord;
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

/// Every session record under `dir` (recursively), sorted by path. Skips `manifest.json`,
/// transcripts, dotfiles and anything that is not `*.json`. A record that does not parse is an
/// error naming the file: a report over silently skipped records would not be honest.
pub fn load_experiment(dir: &Path) -> Result<Vec<Loaded>> {
    let mut paths = Vec::new();
    walk(dir, &mut paths)?;
    paths.sort();
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        let bytes = std::fs::read(&path).map_err(|source| AggregateError::Io { path: path.clone(), source })?;
        let record = serde_json::from_slice(&bytes).map_err(|source| AggregateError::MalformedRecord { path: path.clone(), source })?;
        out.push(Loaded { path, record });
    }
    if out.is_empty() {
        return Err(AggregateError::NoRecords { path: dir.to_path_buf() });
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let io = |source| AggregateError::Io { path: dir.to_path_buf(), source };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let ft = entry.file_type().map_err(io)?;
        if ft.is_dir() {
            walk(&path, out)?;
        } else if ft.is_file() && name.ends_with(".json") && name != "manifest.json" && name != "summary.json" {
            out.push(path);
        }
    }
    Ok(())
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
