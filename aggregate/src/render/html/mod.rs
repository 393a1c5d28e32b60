//! The HTML writer: the report a person reads, one self-contained page. What was found comes
//! first (per module the verdict and the three metrics side by side, with attempted vs valid
//! sessions), then the chart at the size it was drawn, the detailed tables, the provenance, the
//! method, and every session as a conversation — filterable by model, module, arm, task and
//! outcome and sortable by tokens, turns or calls.
//!
//! The page is the [`Document`] rendered through askama templates (`aggregate/templates/`):
//! askama escapes every value it writes, so nothing here escapes by hand, and no Markdown is read
//! back. Inline CSS, the chart's SVG inline, one small inline script; no link, font or script is
//! fetched, so the page reads the same offline (a link in the document that leaves the machine
//! is written as text). Without scripting every session is listed. Past [`INLINE_BUDGET`] bytes
//! of conversations, the remaining sessions get a page of their own under [`SESSION_DIR`],
//! linked from the list, so a large experiment's report stays a few MB.

mod conversation;
mod sessions;

use askama::Template;
use records::Role;

use crate::document::Span;
use crate::document::{Align, Block, Card, Difference, Document, PairSet, Section, SectionKind, Table, TableKind, Text};
use crate::load::Experiment;
pub use crate::load::SESSION_DIR;
use crate::metrics::Summary;
pub use sessions::href;

/// Bytes of rendered conversations kept in report.html; the rest go to linked pages.
pub const INLINE_BUDGET: usize = 3 * 1024 * 1024;

const CSS: &str = include_str!("../../../templates/report.css");
const SCRIPT: &str = include_str!("../../../templates/report.js");

/// The page, and the sessions' own pages (file name under [`SESSION_DIR`], HTML).
#[derive(Debug, Clone)]
pub struct Rendered {
    pub page: String,
    pub session_pages: Vec<(String, String)>,
    /// Where each scored session's conversation is, relative to the page: `report.html#s<i>`
    /// (inline) or `report-sessions/<file>` (a page of its own); keyed by the record's path.
    pub session_links: Vec<(std::path::PathBuf, String)>,
}

/// What the templates show of a section.
struct SectionView<'a> {
    id: &'static str,
    heading: Option<Text>,
    blocks: Vec<BlockView<'a>>,
}

enum BlockView<'a> {
    Heading(u8, &'a Text),
    Paragraph(&'a Text),
    Notice(&'a Text),
    List(&'a [Text]),
    Table(&'a Table),
    Chart,
    Cards(Vec<CardView<'a>>),
}

struct CardView<'a> {
    module: &'a str,
    title: &'a str,
    verdict: Option<&'a str>,
    reason: &'a Text,
    metrics: Vec<MetricView<'a>>,
    sessions: String,
    notes: &'a [String],
}

struct MetricView<'a> {
    title: &'a str,
    estimate: bool,
    arms: Vec<ArmView>,
    deltas: Vec<(String, bool)>,
}

struct ArmView {
    role: Role,
    value: String,
    detail: String,
}

#[derive(Template)]
#[template(path = "report.html")]
struct ReportPage<'a> {
    title: &'a str,
    css: &'a str,
    script: &'a str,
    /// The line under the title; none on a page without a run (a comparison).
    strip: Option<Vec<Text>>,
    sections: Vec<SectionView<'a>>,
    svg: &'a str,
    /// The session list, rendered by [`sessions`].
    sessions: &'a str,
}

#[derive(Template)]
#[template(path = "shell.html")]
struct Shell<'a> {
    title: &'a str,
    css: &'a str,
    body: &'a str,
}

/// A page of `body` (already HTML) with the report's head (viewport, styles) and nothing
/// fetched.
pub(crate) fn page(title: &str, body: &str) -> String {
    Shell { title, css: CSS, body }.render().expect("rendering to a String cannot fail")
}

/// Renders the report's page; links to records and transcripts are relative to `report_dir`,
/// where the page will be written.
pub fn render(s: &Summary, doc: &Document, svg: &str, exp: &Experiment, report_dir: &std::path::Path) -> Rendered {
    let mut pages = Vec::new();
    let mut links = Vec::new();
    let sessions = sessions::render(exp, report_dir, &mut pages, &mut links);
    let svg = inline_svg(svg);
    let page = ReportPage { title: &doc.title, css: CSS, script: SCRIPT, strip: Some(strip(s)), sections: views(doc), svg: &svg, sessions: &sessions };
    Rendered { page: page.render().expect("rendering to a String cannot fail"), session_pages: pages, session_links: links }
}

/// A document without a run of its own (a comparison) as a page.
pub fn render_document(doc: &Document) -> String {
    let page = ReportPage { title: &doc.title, css: CSS, script: "", strip: None, sections: views(doc), svg: "", sessions: "" };
    page.render().expect("rendering to a String cannot fail")
}

fn views(doc: &Document) -> Vec<SectionView<'_>> {
    doc.sections.iter().map(section_view).collect()
}

fn section_view(s: &Section) -> SectionView<'_> {
    let heading = match s.kind {
        SectionKind::Headline => Some(Text::plain("What was found")),
        _ => s.heading.clone(),
    };
    let blocks = s
        .blocks
        .iter()
        .map(|b| match b {
            Block::Heading { level, text } => BlockView::Heading(*level, text),
            Block::Paragraph(t) => BlockView::Paragraph(t),
            Block::Notice(t) => BlockView::Notice(t),
            Block::List(items) => BlockView::List(items),
            Block::Table(t) => BlockView::Table(t),
            Block::Chart { .. } => BlockView::Chart,
            Block::Cards(cards) => BlockView::Cards(cards.iter().map(card_view).collect()),
        })
        .collect();
    SectionView { id: s.kind.id(), heading, blocks }
}

fn card_view(c: &Card) -> CardView<'_> {
    let sessions = c.sessions.iter().map(|(role, s)| format!("{role} {s}")).collect::<Vec<_>>().join(" · ");
    let metrics = c
        .metrics
        .iter()
        .map(|m| MetricView {
            title: &m.title,
            estimate: m.estimate,
            arms: m
                .arms
                .iter()
                .map(|(role, f)| {
                    let estimated = m.estimate && f.value != "—";
                    let null = (f.missing > 0).then(|| format!("({} null)", f.missing));
                    let detail = [f.counts.clone(), f.interval.clone(), null].into_iter().flatten().collect::<Vec<_>>().join(" ");
                    ArmView { role: *role, value: format!("{}{}", if estimated { "≈" } else { "" }, f.value), detail }
                })
                .collect(),
            deltas: m.differences.iter().filter_map(|d| delta(d, m.differences.len() == 1)).collect(),
        })
        .collect();
    CardView { module: &c.module, title: &c.title, verdict: c.verdict.as_deref(), reason: &c.reason, metrics, sessions, notes: &c.notes }
}

/// A difference as the card says it, and whether it is over failures (shown apart).
fn delta(d: &Difference, only: bool) -> Option<(String, bool)> {
    let value = d.value.as_deref().unwrap_or("—");
    Some(match d.over {
        _ if only && d.over != PairSet::Means => (format!("difference {value}"), false),
        PairSet::All => match d.over_failures {
            Some(_) => (format!("difference, all {} pairs: {value} — over failures, not a saving", d.pairs), true),
            None => (format!("difference, all {} pairs: {value}", d.pairs), false),
        },
        PairSet::BothPassed => (format!("difference, the {} pairs where both passed: {value}", d.pairs), false),
        PairSet::Means => (format!("pattern − control: {}", d.value.as_deref()?), false),
    })
}

/// One line under the title: when, which build, k, which models.
fn strip(s: &Summary) -> Vec<Text> {
    let p = &s.provenance;
    let mut parts = Vec::new();
    match p.started_at.or(p.first_session_at) {
        Some(t) => parts.push(Text::plain(format!("run {}", t.format("%Y-%m-%d %H:%M UTC")))),
        None => parts.push("run date not recorded".into()),
    }
    let commit = p.git_commit.clone().or_else(|| p.binaries.first().and_then(|b| b.commit.clone()));
    let dirty = p.git_dirty.or_else(|| p.binaries.first().and_then(|b| b.dirty));
    parts.push(match commit {
        Some(c) => Text::plain("commit ").and_code(c.chars().take(12).collect::<String>()).and(match dirty {
            Some(true) => " (uncommitted changes)",
            Some(false) => " (clean)",
            None => "",
        }),
        None => "commit not recorded".into(),
    });
    parts.push(match p.k {
        Some(k) => format!("k = {k}").into(),
        None => "k not recorded".into(),
    });
    let models: Vec<&str> = p.models.iter().map(|m| m.id.as_str()).collect();
    if !models.is_empty() {
        parts.push(format!("models: {}", models.join(", ")).into());
    }
    parts.push(format!("preflight {}", p.preflight.status.as_str()).into());
    parts
}

/// Plotters' SVG carries an `xmlns` URL; inline SVG in HTML does not need it, and the page
/// holds no URL at all.
fn inline_svg(svg: &str) -> String {
    let s = svg.replace(" xmlns=\"http://www.w3.org/2000/svg\"", "").replace(" xmlns:xlink=\"http://www.w3.org/1999/xlink\"", "");
    let s = match s.find("<svg") {
        Some(at) => s[at..].to_string(),
        None => s,
    };
    s.replacen("<svg ", "<svg role=\"img\" aria-label=\"Success rate, turns and input tokens per module and arm\" ", 1)
}

/// A link the page may hold: beside the report, never off the machine.
pub(crate) fn local(href: &str) -> bool {
    !href.contains("://") && !href.starts_with("//") && !href.to_ascii_lowercase().starts_with("javascript:")
}

impl Table {
    fn key_value(&self) -> bool {
        self.kind == TableKind::KeyValue
    }
}

impl Table {
    /// Whether column `i` holds figures (right-aligned).
    fn right(&self, i: impl std::borrow::Borrow<usize>) -> bool {
        self.align.get(*i.borrow()) == Some(&Align::Right)
    }
}
