//! The report as a typed document: what the numbers say, built once from a [`Summary`] (and a
//! [`crate::compare::Comparison`]), before any format. Sections of blocks — headings, paragraphs
//! of inline spans, notices, lists, tables whose cells carry their value, unit and definition,
//! the chart, the headline's verdict cards. The writers in [`crate::render`] each walk this
//! document; none of them reads another's output.
//!
//! Layering: `load`/`check` → `metrics` → `document` → `render`. Nothing here formats for a
//! particular output (no Markdown syntax, no HTML); [`format`] spells the numbers, the same way
//! for every writer.

mod adoption;
mod build;
mod collateral;
mod compare;
pub mod format;
mod grounding;
mod headline;
mod method;
mod order;
mod security;
mod splits;
mod tables;

use records::Role;
use serde::Serialize;

pub use build::of_summary;
pub use compare::of_comparison;

/// A whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Document {
    pub title: String,
    pub sections: Vec<Section>,
}

/// Which part of the report a section is: the writers lay some out in their own way (the HTML
/// page heads the headline "What was found", and draws the chart inline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SectionKind {
    /// How the run went: a stop, a skipped preflight, the experiment's notices. No heading.
    Notices,
    Headline,
    Chart,
    Attrition,
    Models,
    Adoption,
    Grounding,
    /// Side effects: changes outside each task's footprint.
    Collateral,
    /// Under an attack: each arm's attack success beside its utility.
    Security,
    /// Dev and held-out tasks side by side, and the tasks on which the pattern loses.
    Splits,
    Order,
    Oracle,
    Provenance,
    Method,
    /// A comparison's parts.
    Compared,
    NotCompared,
}

impl SectionKind {
    /// The id the HTML page gives the section (`#headline`, `#provenance`, …).
    pub fn id(self) -> &'static str {
        match self {
            Self::Notices => "notices",
            Self::Headline => "headline",
            Self::Chart => "chart",
            Self::Attrition => "attrition",
            Self::Models => "models",
            Self::Adoption => "adoption",
            Self::Grounding => "grounding",
            Self::Collateral => "collateral",
            Self::Security => "security",
            Self::Splits => "splits",
            Self::Order => "order",
            Self::Oracle => "oracle",
            Self::Provenance => "provenance",
            Self::Method => "method",
            Self::Compared => "compared",
            Self::NotCompared => "not-compared",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    pub kind: SectionKind,
    /// The section's heading (level 2), none for the notices.
    pub heading: Option<Text>,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "block", rename_all = "snake_case")]
pub enum Block {
    /// A heading inside a section: level 2 (a model in the details) or 3.
    Heading {
        level: u8,
        text: Text,
    },
    Paragraph(Text),
    /// Something the reader must see before the numbers it qualifies.
    Notice(Text),
    List(Vec<Text>),
    Table(Table),
    /// The chart, drawn beside the report as `src` (SVG) and `png`.
    Chart {
        alt: String,
        src: String,
        png: String,
    },
    /// The headline's verdict cards, one per module.
    Cards(Vec<Card>),
}

/// Inline content: text with emphasis, code and links.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Text(pub Vec<Span>);

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "span", content = "text", rename_all = "snake_case")]
pub enum Span {
    Plain(String),
    Strong(String),
    Code(String),
    /// A link to a file beside the report (never off the machine).
    Link {
        text: String,
        href: String,
    },
}

impl Text {
    pub fn plain(s: impl Into<String>) -> Self {
        Self(vec![Span::Plain(s.into())])
    }

    pub fn code(s: impl Into<String>) -> Self {
        Self(vec![Span::Code(s.into())])
    }

    pub fn push(mut self, span: Span) -> Self {
        self.0.push(span);
        self
    }

    pub fn and(self, s: impl Into<String>) -> Self {
        self.push(Span::Plain(s.into()))
    }

    pub fn strong(self, s: impl Into<String>) -> Self {
        self.push(Span::Strong(s.into()))
    }

    pub fn and_code(self, s: impl Into<String>) -> Self {
        self.push(Span::Code(s.into()))
    }

    /// The text without its markup, as a reader sees it.
    pub fn to_plain(&self) -> String {
        self.0
            .iter()
            .map(|s| match s {
                Span::Plain(t) | Span::Strong(t) | Span::Code(t) => t.as_str(),
                Span::Link { text, .. } => text.as_str(),
            })
            .collect()
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Self::plain(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Self::plain(s)
    }
}

/// A table. In a [`TableKind::Grid`] the first row is the header; in a
/// [`TableKind::KeyValue`] each row's first cell names the row (the writers may show the
/// header, `what | value`, or only the rows).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    pub kind: TableKind,
    pub header: Vec<Cell>,
    pub align: Vec<Align>,
    pub rows: Vec<Vec<Cell>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TableKind {
    Grid,
    KeyValue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Align {
    Left,
    Right,
}

/// One cell: what it shows, and — when it shows one figure — that figure's value and unit, and
/// for a header or row label, the definition of the term (from [`crate::definitions`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cell {
    pub text: Text,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
}

impl Cell {
    pub fn text(t: impl Into<Text>) -> Self {
        Self { text: t.into(), ..Self::default() }
    }

    /// A cell showing one figure (`None`: the figure is missing, and the text says so).
    pub fn figure(t: impl Into<Text>, value: Option<f64>, unit: Unit) -> Self {
        Self { text: t.into(), value, unit: Some(unit), definition: None }
    }

    pub fn defined(mut self, definition: Option<String>) -> Self {
        self.definition = definition;
        self
    }
}

/// What a cell's value counts or measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Sessions,
    Pairs,
    Tasks,
    /// A share, 0–1.
    Rate,
    Turns,
    Tokens,
    /// Tokens estimated from bytes / 4: never a measurement.
    EstimatedTokens,
    Calls,
    /// Entity references in final answers.
    References,
    /// Rows of the world a session changed.
    Rows,
    Bytes,
    Usd,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sessions => "sessions",
            Self::Pairs => "pairs",
            Self::Tasks => "tasks",
            Self::Rate => "rate",
            Self::Turns => "turns",
            Self::Tokens => "tokens",
            Self::Rows => "rows",
            Self::EstimatedTokens => "estimated_tokens",
            Self::Calls => "calls",
            Self::References => "references",
            Self::Bytes => "bytes",
            Self::Usd => "usd",
        }
    }
}

/// A module's verdict in the headline: the three metrics side by side, with attempted vs valid
/// sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Card {
    /// The module (filters use it); the card's title may add the servers compared.
    pub module: String,
    pub title: String,
    /// The verdict (`confirmed`, …), or `None` for the oracle's plan.
    pub verdict: Option<String>,
    /// Why that verdict, or for the oracle the servers compared.
    pub reason: Text,
    /// The servers compared, when the card names them (the oracle's).
    pub servers: Vec<(Role, String)>,
    /// Valid / attempted sessions per arm ("11/12 (provider_error: 1)").
    pub sessions: Vec<(Role, String)>,
    pub metrics: Vec<CardMetric>,
    /// What the card's figures need said beside them.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CardMetric {
    pub title: String,
    /// Estimated, not measured (the oracle's tokens).
    pub estimate: bool,
    pub arms: Vec<(Role, Figure)>,
    pub differences: Vec<Difference>,
}

/// One arm's figure: its value ("—" when missing, "no sessions" when the arm has none) and
/// what qualifies it (the interval, the counts, how many were null).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    pub value: String,
    pub counts: Option<String>,
    pub interval: Option<String>,
    pub missing: usize,
}

impl Figure {
    pub fn none(value: &str) -> Self {
        Self { value: value.into(), counts: None, interval: None, missing: 0 }
    }
}

/// A paired difference, pattern − control, over a named set of pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub over: PairSet,
    /// "−120 [−140, −100] (−12.0% [−14.0%, −10.0%])", or none.
    pub value: Option<String>,
    /// The relative change alone ("+12.0%"), where it is said apart (the oracle's means).
    pub relative: Option<String>,
    /// Pairs the difference is over.
    pub pairs: usize,
    /// Set when the difference is over failures (an arm passed too little): then it is no
    /// saving, and says why.
    pub over_failures: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PairSet {
    /// Every pair valid in both arms (a success rate's only set).
    All,
    BothPassed,
    /// The oracle's per-session means, unpaired.
    Means,
}
