use std::path::PathBuf;

/// Everything that can stop a report. Each variant names the file it is about.
#[derive(Debug, thiserror::Error)]
pub enum AggregateError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("malformed session record {path}: {source}")]
    MalformedRecord { path: PathBuf, source: serde_json::Error },
    #[error("malformed price table {path}: {source}")]
    MalformedPrices { path: PathBuf, source: Box<toml::de::Error> },
    #[error("price table {path}: {detail}")]
    InvalidPrices { path: PathBuf, detail: String },
    #[error("{path} holds no session records")]
    NoRecords { path: PathBuf },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot render the chart: {0}")]
    Chart(String),
    #[error("cannot serialise the summary: {0}")]
    Json(#[from] serde_json::Error),
}

pub type Result<T> = std::result::Result<T, AggregateError>;
