//! The writers: each renders the [`crate::document::Document`] (or, for the charts and
//! `summary.json`, the [`crate::metrics::Summary`]) into one format. None reads another's
//! output.

pub mod chart;
pub mod html;
pub mod markdown;
pub mod sweep_chart;

use std::path::{Path, PathBuf};

use crate::compare::Comparison;
use crate::error::{AggregateError, Result};

impl Comparison {
    /// `compare.md`.
    pub fn markdown(&self) -> String {
        markdown::render(&crate::document::of_comparison(self))
    }

    /// `compare.html`: the same document as a self-contained page.
    pub fn html(&self) -> String {
        html::render_document(&crate::document::of_comparison(self))
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
