use std::path::PathBuf;

use records::FieldDifference;

/// Everything that can stop a report. Each variant names the file it is about and what to do.
#[derive(Debug, thiserror::Error)]
pub enum AggregateError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("malformed session record {path}: {source}; fix or remove the file (a report never skips a record silently)")]
    MalformedRecord { path: PathBuf, source: serde_json::Error },
    #[error("malformed experiment manifest {path}: {source}; restore it from the run, or remove it to report with k taken from the records")]
    MalformedManifest { path: PathBuf, source: serde_json::Error },
    #[error("malformed price table {path}: {source}")]
    MalformedPrices { path: PathBuf, source: Box<toml::de::Error> },
    #[error("price table {path}: {detail}")]
    InvalidPrices { path: PathBuf, detail: String },
    #[error("{path} holds no session records: run the experiment first, or pass the folder that holds its <model>__<server>/ record folders")]
    NoRecords { path: PathBuf },
    #[error(
        "{path} is not an experiment folder: it has no manifest.json and no <model>__<server>/ record folders; pass one experiment's folder (results/<exp>, e.g. with --exp-name NAME)"
    )]
    NotAnExperiment { path: PathBuf },
    #[error("{path} holds several experiments ({}), not one; a report covers one experiment: pass --exp-name NAME with one of them", names.join(", "))]
    SeveralExperiments { path: PathBuf, names: Vec<String> },
    #[error(
        "{theirs_path} belongs to experiment {theirs:?}, but {ours_path} says this folder is experiment {ours:?}; a report covers one experiment: move the foreign records out (or run them under their own --exp-name)"
    )]
    MixedExperiments { ours: String, ours_path: PathBuf, theirs: String, theirs_path: PathBuf },
    #[error(
        "two records for the same session ({key}): {first} and {second}; one session is counted once: keep one of the files and move the other out of the experiment folder"
    )]
    DuplicateRecord { key: String, first: PathBuf, second: PathBuf },
    #[error(
        "{path} is marked superseded (a rerun replaced it) but sits among the scored records: a run stopped while moving it; resume the experiment (the same command) to finish the move and rerun the session, or move it to its folder's superseded/ subfolder"
    )]
    MisplacedSuperseded { path: PathBuf },
    #[error(
        "{copy} is a replaced copy of {record}, the same attempt still among the scored records: a run stopped between copying and removing it, and counting both would count one session twice; delete the copy {copy} (the record stays), then rerun with --retry-invalid if it should be replaced"
    )]
    SupersededCopy { record: PathBuf, copy: PathBuf },
    #[error(
        "{path} is outside the experiment's plan ({manifest}): {detail}; the records and the manifest describe different runs: split the experiment (rerun under a new --exp-name)"
    )]
    OutsidePlan { path: PathBuf, manifest: PathBuf, detail: String },
    #[error(
        "records that must not be pooled: {scope} differ in {} (the first value from {ours}, the second from {theirs}); split the experiment: rerun the differing part under a new --exp-name",
        differences.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    Incomparable { scope: String, differences: Vec<FieldDifference>, ours: PathBuf, theirs: PathBuf },
    #[error(
        "{with} has a fingerprint and {without} has none (written before fingerprints existed): their comparability is unknown and they are never pooled; split the experiment: rerun the old sessions under a new --exp-name, or report the old records apart"
    )]
    MixedFingerprints { with: PathBuf, without: PathBuf },
    #[error(
        "{ours} was graded under {what} {a} and {theirs} under {b}: outcomes of different verifiers or graders are never pooled; grade every session with the current ones (`pipeline regrade EXP`, no model call: it lists any session it cannot regrade), or report the records apart"
    )]
    MixedGrading { what: String, ours: PathBuf, a: String, theirs: PathBuf, b: String },
    #[error(
        "{path} contradicts its own fingerprint: {}; a record whose own fields and fingerprint disagree is not data (a harness bug or an edited file), and neither half can be trusted: restore the file as the run wrote it, or move it (and its transcript) out of the experiment folder and rerun that session",
        contradictions.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    SelfContradictory { path: PathBuf, contradictions: Vec<records::Contradiction> },
    #[error("cannot compare: {detail}")]
    Uncomparable { detail: String },
    #[error("cannot merge {path}: {detail}")]
    Unmergeable { path: PathBuf, detail: String },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot render the chart: {0}")]
    Chart(String),
    #[error("cannot serialise the summary: {0}")]
    Json(#[from] serde_json::Error),
}

pub type Result<T> = std::result::Result<T, AggregateError>;
