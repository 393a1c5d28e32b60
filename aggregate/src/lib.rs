//! Session records to metrics, intervals, verdicts and reports (rules: `docs/honesty-rules.md`).
//!
//! [`report`] reads one experiment folder ([`load::load_experiment`]), refuses what it cannot
//! stand behind ([`check`]), computes the [`metrics::Summary`] and renders it as Markdown, JSON,
//! a chart (PNG + SVG) and a self-contained HTML page.

pub mod chart;
pub mod check;
pub mod error;
pub mod html;
pub mod load;
pub mod markdown;
pub mod merge;
pub mod metrics;
pub mod stats;
pub mod u64_string;

use std::path::{Path, PathBuf};

pub use error::{AggregateError, Result};
pub use load::{Experiment, Loaded, Price, PriceTable, load_experiment};
pub use merge::merge_experiments;
pub use metrics::{Options, Summary, Verdict, summarise};

/// Everything rendered for one experiment (the PNG is rendered when written).
#[derive(Debug, Clone)]
pub struct Report {
    pub summary: Summary,
    pub markdown: String,
    pub json: String,
    pub svg: String,
    pub html: String,
}

/// Paths written by [`Report::write`].
#[derive(Debug, Clone)]
pub struct Written {
    pub markdown: PathBuf,
    pub json: PathBuf,
    pub png: PathBuf,
    pub svg: PathBuf,
    pub html: PathBuf,
}

/// Loads `exp_dir` and renders every output in memory.
pub fn report(exp_dir: &Path, prices: Option<&PriceTable>, opts: &Options) -> Result<Report> {
    let exp = load_experiment(exp_dir)?;
    report_from(&exp, prices, opts)
}

/// Renders from an already-loaded experiment (the checks of [`check`] still run).
pub fn report_from(exp: &Experiment, prices: Option<&PriceTable>, opts: &Options) -> Result<Report> {
    let summary = summarise(exp, prices, opts)?;
    let markdown = markdown::render(&summary);
    let json = serde_json::to_string_pretty(&summary)? + "\n";
    let svg = chart::render_svg(&summary)?;
    let html = html::render(&markdown, &svg, exp);
    Ok(Report { summary, markdown, json, svg, html })
}

impl Report {
    /// Writes `report.md`, `summary.json`, `chart.png`, `chart.svg` and `report.html` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<Written> {
        let w = Written {
            markdown: dir.join("report.md"),
            json: dir.join("summary.json"),
            png: dir.join("chart.png"),
            svg: dir.join("chart.svg"),
            html: dir.join("report.html"),
        };
        let put = |p: &PathBuf, s: &str| std::fs::write(p, s).map_err(|source| AggregateError::Write { path: p.clone(), source });
        put(&w.markdown, &self.markdown)?;
        put(&w.json, &self.json)?;
        put(&w.svg, &self.svg)?;
        put(&w.html, &self.html)?;
        chart::render_png(&self.summary, &w.png)?;
        Ok(w)
    }
}
