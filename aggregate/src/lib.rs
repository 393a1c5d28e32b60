//! Session records to metrics, intervals, verdicts and reports (rules: `docs/honesty-rules.md`).
//!
//! [`report`] reads one experiment folder ([`load::load_experiment`]), refuses what it cannot
//! stand behind ([`check`]), computes the [`metrics::Summary`], builds the report's typed
//! [`document::Document`] from it once, and renders that as Markdown and as a self-contained
//! HTML page with every session as a conversation ([`render`]); the summary itself is
//! `summary.json` (its shape: `summary.schema.json` beside this crate) and the chart (PNG +
//! SVG). [`compare`] sets two experiments' cells side by side.
//!
//! The layers import downward only:
//!
//! | layer | modules |
//! | --- | --- |
//! | read and refuse | [`load`], [`merge`], [`check`], [`transcript`] |
//! | numbers | [`stats`], [`metrics`], [`provenance`], [`definitions`], [`compare`] |
//! | the document | [`document`] (with [`document::format`], how numbers are spelled) |
//! | writers | [`render`]: [`markdown`], [`html`], [`chart`], [`sweep_chart`] |
//! | the numbers checked | [`calibrate`]: simulated experiments with planted effects, through [`summarise`] |

pub mod calibrate;
pub mod check;
pub mod compare;
pub mod definitions;
pub mod document;
pub mod error;
pub mod graders;
pub mod load;
pub mod merge;
pub mod metrics;
pub mod provenance;
pub mod render;
pub mod sequential;
pub mod stats;
pub mod transcript;
pub mod u64_string;

pub use render::{chart, html, markdown, sweep_chart};

use std::path::{Path, PathBuf};

pub use error::{AggregateError, Result};
pub use load::{Experiment, Loaded, Price, PriceTable, load_experiment};
pub use merge::{merge_experiments, merge_experiments_with};
pub use metrics::{Options, Summary, Verdict, summarise};
pub use provenance::Invocation;

/// Everything rendered for one experiment (the PNG is rendered when written).
#[derive(Debug, Clone)]
pub struct Report {
    pub summary: Summary,
    pub markdown: String,
    pub json: String,
    pub svg: String,
    pub html: String,
    /// The document both writers rendered.
    pub document: document::Document,
    /// Conversations past the HTML page's inline budget: (file name under
    /// [`html::SESSION_DIR`], page).
    pub session_pages: Vec<(String, String)>,
    /// Where each scored session's conversation is, relative to report.html's folder
    /// (`report.html#s<i>` or `report-sessions/<file>`), keyed by the record's path.
    pub session_links: Vec<(PathBuf, String)>,
}

/// Paths written by [`Report::write`].
#[derive(Debug, Clone)]
pub struct Written {
    pub markdown: PathBuf,
    pub json: PathBuf,
    pub png: PathBuf,
    pub svg: PathBuf,
    pub html: PathBuf,
    /// The sessions' own pages, when some conversations did not fit in report.html.
    pub session_pages: Vec<PathBuf>,
}

/// Loads `exp_dir` and renders every output in memory.
pub fn report(exp_dir: &Path, prices: Option<&PriceTable>, opts: &Options) -> Result<Report> {
    let exp = load_experiment(exp_dir)?;
    report_from(&exp, prices, opts)
}

/// Renders from an already-loaded experiment (the checks of [`check`] still run).
pub fn report_from(exp: &Experiment, prices: Option<&PriceTable>, opts: &Options) -> Result<Report> {
    report_with(exp, prices, opts, &Invocation::default())
}

/// [`report_from`], saying in the provenance what wrote the report.
pub fn report_with(exp: &Experiment, prices: Option<&PriceTable>, opts: &Options, invocation: &Invocation) -> Result<Report> {
    let summary = metrics::summarise_with(exp, prices, opts, invocation)?;
    let document = document::of_summary(&summary);
    let markdown = markdown::render(&document);
    let json = serde_json::to_string_pretty(&summary)? + "\n";
    let svg = chart::render_svg(&summary)?;
    let rendered = html::render(&summary, &document, &svg, exp, invocation.report_dir.as_deref().unwrap_or(&exp.dir));
    Ok(Report { summary, markdown, json, svg, html: rendered.page, document, session_pages: rendered.session_pages, session_links: rendered.session_links })
}

impl Report {
    /// Writes `report.md`, `summary.json`, `chart.png`, `chart.svg` and `report.html` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<Written> {
        let mut w = Written {
            markdown: dir.join("report.md"),
            json: dir.join("summary.json"),
            png: dir.join("chart.png"),
            svg: dir.join("chart.svg"),
            html: dir.join("report.html"),
            session_pages: Vec::new(),
        };
        let put = |p: &PathBuf, s: &str| std::fs::write(p, s).map_err(|source| AggregateError::Write { path: p.clone(), source });
        // Pages of an earlier report would link to sessions this one may not have.
        let pages = dir.join(html::SESSION_DIR);
        if pages.is_dir() {
            std::fs::remove_dir_all(&pages).map_err(|source| AggregateError::Write { path: pages.clone(), source })?;
        }
        if !self.session_pages.is_empty() {
            std::fs::create_dir_all(&pages).map_err(|source| AggregateError::Write { path: pages.clone(), source })?;
            for (name, page) in &self.session_pages {
                let p = pages.join(name);
                put(&p, page)?;
                w.session_pages.push(p);
            }
        }
        put(&w.markdown, &self.markdown)?;
        put(&w.json, &self.json)?;
        put(&w.svg, &self.svg)?;
        put(&w.html, &self.html)?;
        chart::render_png(&self.summary, &w.png)?;
        Ok(w)
    }
}
