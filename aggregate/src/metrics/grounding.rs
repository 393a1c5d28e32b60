//! Grounding: whether the entities the final answers name exist (`docs/grounding.md`). Read at
//! verification from the world as it stood after each session and kept in the record; counted
//! here beside success, never folded into it. A confident answer that cites a ticket that was
//! never there is a different failure from one that cites the wrong ticket, and success rates do
//! not show it.

use records::{Groundedness, SessionRecord};
use serde::{Deserialize, Serialize};

use super::Options;
use crate::stats::{self, Interval};

/// An arm's grounding over its valid, scored sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroundingMetrics {
    /// Valid, scored sessions whose grounding was read.
    pub sessions: usize,
    /// Valid, scored sessions without it (written before grounding was read): missing, not zero.
    pub not_read: usize,
    /// Sessions whose answer names at least one entity that can be checked (denied ones aside).
    pub citing: usize,
    /// References over those sessions, each counted once per answer.
    pub grounded: usize,
    pub unresolved: usize,
    pub hallucinated: usize,
    /// Named as not existing by the answer itself: left out of every share.
    pub denied: usize,
    /// grounded / (grounded + unresolved + hallucinated), with a 95% interval by bootstrap over
    /// sessions (the references of one answer are not independent). Null when nothing was cited.
    pub grounded_share: Option<f64>,
    pub grounded_share_ci95: Option<Interval>,
    pub hallucinated_share: Option<f64>,
    pub hallucinated_share_ci95: Option<Interval>,
    /// Citing sessions with at least one hallucinated reference, their rate and Wilson 95% interval.
    pub sessions_hallucinating: usize,
    pub session_hallucination_rate: Option<f64>,
    pub session_hallucination_wilson95: Option<Interval>,
    /// Every hallucinated reference, so a reader can check it.
    pub hallucinations: Vec<Hallucination>,
}

/// One hallucinated reference and where it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hallucination {
    pub task: String,
    pub rep: u32,
    pub text: String,
    pub kind: String,
    /// Why it cannot be the entity it names (`no ticket 4711`).
    pub detail: Option<String>,
}

/// Grounding over the valid, scored sessions of `recs`.
pub fn grounding(recs: &[&SessionRecord], opts: &Options) -> GroundingMetrics {
    let scored: Vec<&SessionRecord> =
        recs.iter().copied().filter(|r| r.validity.is_valid() && r.verifier.as_ref().is_some_and(|v| v.verdict != records::Verdict::CouldNotScore)).collect();
    let mut m = GroundingMetrics::default();
    let mut grounded_clusters = Vec::new();
    let mut hallucinated_clusters = Vec::new();
    for r in &scored {
        let Some(g) = r.verifier.as_ref().and_then(|v| v.grounding.as_ref()) else {
            m.not_read += 1;
            continue;
        };
        m.sessions += 1;
        let (gr, un, ha) = (g.count(Groundedness::Grounded), g.count(Groundedness::Unresolved), g.count(Groundedness::Hallucinated));
        m.grounded += gr;
        m.unresolved += un;
        m.hallucinated += ha;
        m.denied += g.count(Groundedness::Denied);
        let checkable = gr + un + ha;
        if checkable > 0 {
            m.citing += 1;
            m.sessions_hallucinating += usize::from(ha > 0);
            grounded_clusters.push((gr as f64, checkable as f64));
            hallucinated_clusters.push((ha as f64, checkable as f64));
        }
        for h in g.references.iter().filter(|x| x.status == Groundedness::Hallucinated) {
            m.hallucinations.push(Hallucination {
                task: r.task.clone(),
                rep: r.rep,
                text: h.text.clone(),
                kind: h.kind.as_str().to_owned(),
                detail: h.detail.clone(),
            });
        }
    }
    let checkable = m.grounded + m.unresolved + m.hallucinated;
    let share = |n: usize| (checkable > 0).then(|| n as f64 / checkable as f64);
    m.grounded_share = share(m.grounded);
    m.hallucinated_share = share(m.hallucinated);
    m.grounded_share_ci95 = stats::bootstrap_share_ci(&grounded_clusters, opts.resamples, opts.seed);
    m.hallucinated_share_ci95 = stats::bootstrap_share_ci(&hallucinated_clusters, opts.resamples, opts.seed);
    m.session_hallucination_rate = (m.citing > 0).then(|| m.sessions_hallucinating as f64 / m.citing as f64);
    m.session_hallucination_wilson95 = stats::wilson(m.sessions_hallucinating, m.citing);
    m
}
