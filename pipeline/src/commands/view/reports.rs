//! `aggregate`'s reports, rendered in this process and kept in memory: the full report of an
//! experiment (its page, its sessions' pages, its Markdown, summary and chart), its headline for
//! the lists, and comparisons. Each is keyed by the state of the files it was rendered from
//! ([`super::status::Scan::state`]), so an experiment is rendered again only when one of its
//! files changed, and never twice at once: renders take turns (the machine is shared with runs).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use aggregate::document::{Block, Document, SectionKind};
use serde::Serialize;

/// A rendered report, or why there is none.
pub type Rendered = Result<aggregate::Report, NoReport>;

/// Why the viewer has no report to show: `aggregate` refused the folder (its words, verbatim), or
/// rendering failed inside this process — a bug, not a verdict on the files, which it leaves as
/// they are. The two are said apart: a refusal tells the user what to fix in the folder; a
/// failure must not read as one.
#[derive(Debug, Clone, PartialEq)]
pub enum NoReport {
    Refused(String),
    Failed(String),
}

/// Runs a render (or a comparison) off the async threads; one that panics comes back as
/// [`NoReport::Failed`], said as such, instead of taking the request's handler down with it.
pub async fn off_thread<T: Send + 'static>(render: impl FnOnce() -> Result<T, NoReport> + Send + 'static) -> Result<T, NoReport> {
    tokio::task::spawn_blocking(render).await.unwrap_or_else(|e| Err(NoReport::Failed(format!("rendering panicked: {e}"))))
}

impl NoReport {
    pub fn text(&self) -> &str {
        match self {
            Self::Refused(t) | Self::Failed(t) => t,
        }
    }

    /// 422 for a refusal (the folder is the problem), 500 for a failure (this program is).
    pub fn status(&self) -> axum::http::StatusCode {
        match self {
            Self::Refused(_) => axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            Self::Failed(_) => axum::http::StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// What a page says before the text; `after` starts the sentence when the page was asked
    /// for something else (a conversation, shown in the report).
    pub fn lead(&self, after: Option<&str>) -> String {
        let (refused, failed) = (
            "pipeline aggregate refuses to report on this experiment; what it says:",
            "a bug in pipeline, not a refusal; the experiment's files are untouched. What failed:",
        );
        match (self, after) {
            (Self::Refused(_), None) => refused.to_owned(),
            (Self::Refused(_), Some(a)) => format!("{a}, and {refused}"),
            (Self::Failed(_), None) => format!("Rendering this experiment's report failed inside the viewer — {failed}"),
            (Self::Failed(_), Some(a)) => format!("{a}, and rendering the report failed inside the viewer — {failed}"),
        }
    }
}

/// Full reports kept (each holds its pages: up to a few MB).
const KEEP_REPORTS: usize = 4;
const KEEP_COMPARISONS: usize = 4;

/// What the lists show of a report: the run's notices and the headline, in aggregate's words.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Headline {
    /// Not rendered yet for the experiment's current files.
    Pending,
    /// A run is writing the experiment: the headline is rendered once it stops.
    Running,
    Ready {
        notices: Vec<String>,
        blocks: Vec<HeadlineBlock>,
    },
    /// `aggregate` refuses the experiment; its message, verbatim.
    Refused {
        error: String,
    },
    /// Rendering failed inside the viewer (see [`NoReport::Failed`]).
    Failed {
        error: String,
    },
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HeadlineBlock {
    Heading {
        text: String,
    },
    Paragraph {
        text: String,
    },
    Card {
        module: String,
        title: String,
        verdict: Option<String>,
        reason: String,
        sessions: Vec<(String, String)>,
        /// Each metric's figure per arm, as the report's card writes it.
        metrics: Vec<MetricLine>,
        /// What the card's figures need said beside them.
        notes: Vec<String>,
    },
}

/// One metric of a card: (arm, value, what qualifies it — counts, interval, nulls).
#[derive(Debug, Clone, Serialize)]
pub struct MetricLine {
    pub title: String,
    pub estimate: bool,
    pub arms: Vec<(String, String, String)>,
}

impl Headline {
    fn of(rendered: &Rendered) -> Self {
        match rendered {
            Err(NoReport::Refused(error)) => Self::Refused { error: error.clone() },
            Err(NoReport::Failed(error)) => Self::Failed { error: error.clone() },
            Ok(report) => headline_of(&report.document),
        }
    }
}

fn headline_of(doc: &Document) -> Headline {
    let mut notices = Vec::new();
    let mut blocks = Vec::new();
    for section in &doc.sections {
        match section.kind {
            SectionKind::Notices => notices.extend(section.blocks.iter().filter_map(|b| match b {
                Block::Notice(t) | Block::Paragraph(t) => Some(t.to_plain()),
                _ => None,
            })),
            SectionKind::Headline => {
                for b in &section.blocks {
                    match b {
                        Block::Heading { text, .. } => blocks.push(HeadlineBlock::Heading { text: text.to_plain() }),
                        Block::Paragraph(t) | Block::Notice(t) => blocks.push(HeadlineBlock::Paragraph { text: t.to_plain() }),
                        Block::Cards(cards) => blocks.extend(cards.iter().map(|c| HeadlineBlock::Card {
                            module: c.module.clone(),
                            title: c.title.clone(),
                            verdict: c.verdict.clone(),
                            reason: c.reason.to_plain(),
                            sessions: c.sessions.iter().map(|(role, s)| (role.to_string(), s.clone())).collect(),
                            metrics: c.metrics.iter().map(metric_line).collect(),
                            notes: c.notes.clone(),
                        })),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Headline::Ready { notices, blocks }
}

/// A card's metric as the report's page writes it: an estimate's value marked `≈`, then its
/// counts, interval and nulls.
fn metric_line(m: &aggregate::document::CardMetric) -> MetricLine {
    let arms = m
        .arms
        .iter()
        .map(|(role, f)| {
            let value = format!("{}{}", if m.estimate && f.value != "—" { "≈" } else { "" }, f.value);
            let null = (f.missing > 0).then(|| format!("({} null)", f.missing));
            let detail = [f.counts.clone(), f.interval.clone(), null].into_iter().flatten().collect::<Vec<_>>().join(" ");
            (role.to_string(), value, detail)
        })
        .collect();
    MetricLine { title: m.title.clone(), estimate: m.estimate, arms }
}

/// The renders kept, by experiment id and the state they were rendered from.
#[derive(Default)]
pub struct Cache {
    /// Most recently used last.
    reports: Vec<(String, u64, Arc<Rendered>)>,
    headlines: HashMap<String, (u64, Headline)>,
    /// Experiments whose headline is being rendered, with the state it is for.
    pending: HashMap<String, u64>,
    comparisons: Vec<(CompareKey, Arc<Result<String, NoReport>>)>,
    /// Milliseconds of each report render (for the log line and the docs' figure).
    pub last_render_ms: Option<u128>,
}

/// Two experiments at their states, and the declared difference.
pub type CompareKey = (String, u64, String, u64, Vec<String>);

impl Cache {
    pub fn report(&mut self, id: &str, state: u64) -> Option<Arc<Rendered>> {
        let i = self.reports.iter().position(|(x, s, _)| x == id && *s == state)?;
        let entry = self.reports.remove(i);
        let r = entry.2.clone();
        self.reports.push(entry);
        Some(r)
    }

    pub fn put_report(&mut self, id: &str, state: u64, rendered: Arc<Rendered>) {
        self.reports.retain(|(x, _, _)| x != id);
        self.reports.push((id.to_owned(), state, rendered.clone()));
        if self.reports.len() > KEEP_REPORTS {
            self.reports.remove(0);
        }
        self.headlines.insert(id.to_owned(), (state, Headline::of(&rendered)));
        if self.pending.get(id) == Some(&state) {
            self.pending.remove(id);
        }
    }

    /// The headline for `id` at `state`, if rendered; `None` when it must be rendered (and is
    /// not being rendered already: the caller then starts it, after [`Self::mark_pending`]).
    pub fn headline(&self, id: &str, state: u64) -> Result<Headline, bool> {
        match self.headlines.get(id) {
            Some((s, h)) if *s == state => Ok(h.clone()),
            _ => Err(self.pending.get(id) == Some(&state)),
        }
    }

    pub fn mark_pending(&mut self, id: &str, state: u64) {
        self.pending.insert(id.to_owned(), state);
    }

    pub fn comparison(&mut self, key: &CompareKey) -> Option<Arc<Result<String, NoReport>>> {
        self.comparisons.iter().find(|(k, _)| k == key).map(|(_, c)| c.clone())
    }

    pub fn put_comparison(&mut self, key: CompareKey, c: Arc<Result<String, NoReport>>) {
        self.comparisons.retain(|(k, _)| *k != key);
        self.comparisons.push((key, c));
        if self.comparisons.len() > KEEP_COMPARISONS {
            self.comparisons.remove(0);
        }
    }

    /// Forgets experiments no longer in the results folder.
    pub fn keep_only(&mut self, ids: &[&str]) {
        self.reports.retain(|(x, _, _)| ids.contains(&x.as_str()));
        self.headlines.retain(|x, _| ids.contains(&x.as_str()));
        self.pending.retain(|x, _| ids.contains(&x.as_str()));
    }
}

/// Renders the report of the experiment in `dir` as `pipeline aggregate` would (default
/// options, no price table), entirely in memory. Links in the page are relative to `dir`.
pub fn render(dir: &Path, command: &[String]) -> Rendered {
    let exp = aggregate::load_experiment(dir).map_err(|e| NoReport::Refused(e.to_string()))?;
    let invocation = aggregate::Invocation {
        generator: Some(format!("pipeline {}", crate::build_info::VERSION)),
        command: Some(command.to_vec()),
        generated_at: Some(chrono::Utc::now()),
        report_dir: None,
    };
    aggregate::report_with(&exp, None, &aggregate::Options::default(), &invocation).map_err(|e| NoReport::Refused(e.to_string()))
}

/// `aggregate --compare A B --along …`, in memory: the comparison's page, or the refusal.
pub fn compare(a: &Path, b: &Path, along: &[String]) -> Result<String, NoReport> {
    aggregate::compare::compare(a, b, along, &aggregate::Options::default()).map(|c| c.html()).map_err(|e| NoReport::Refused(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::{Headline, NoReport, Rendered};

    /// A render that panics is a failure of the viewer, said as such (500, "not a refusal"),
    /// never shown under aggregate's refusal heading; a refusal keeps aggregate's words and 422.
    #[tokio::test]
    async fn a_render_that_panics_is_a_failure_not_a_refusal() {
        let failed = super::off_thread(|| -> Rendered { panic!("a table with no rows") }).await.unwrap_err();
        assert!(matches!(&failed, NoReport::Failed(t) if t.contains("panicked") && t.contains("a table with no rows")), "{failed:?}");
        assert_eq!(failed.status().as_u16(), 500);
        assert!(failed.lead(None).contains("not a refusal") && !failed.lead(None).contains("aggregate refuses"), "{}", failed.lead(None));
        assert!(matches!(Headline::of(&Err(failed.clone())), Headline::Failed { error } if error == failed.text()));

        let refused = NoReport::Refused("no manifest.json".into());
        assert_eq!(refused.status().as_u16(), 422);
        assert_eq!(refused.lead(None), "pipeline aggregate refuses to report on this experiment; what it says:");
        assert_eq!(
            refused.lead(Some("The conversation is shown in the report")),
            "The conversation is shown in the report, and pipeline aggregate refuses to report on this experiment; what it says:"
        );
        assert!(matches!(Headline::of(&Err(refused)), Headline::Refused { error } if error == "no manifest.json"));
    }
}
