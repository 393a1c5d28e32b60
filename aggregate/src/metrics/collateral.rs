//! Side effects: what valid sessions changed in the world outside their task's footprint through
//! their arm (`records::Collateral`, docs/collateral.md). Read at verification and kept in the
//! record; counted here beside success, never folded into it — a session that passed with
//! collateral writes is still a pass, and is counted as one that had them.

use std::collections::BTreeMap;

use records::{CollateralClass, CollateralWrite, SessionRecord};
use serde::{Deserialize, Serialize};

use super::select::passed;
use crate::stats::{self, Interval};

/// An arm's side effects over its valid sessions whose world was read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CollateralMetrics {
    /// Valid sessions whose changes were held to a footprint.
    pub sessions: usize,
    /// Valid sessions without it (the world could not be read, no footprint could be found, or
    /// written before it was kept): missing, not zero.
    pub not_read: usize,
    /// Sessions with at least one collateral write, their rate and Wilson 95 % interval (sessions
    /// clustered by task, as for success).
    pub with_collateral: usize,
    pub rate: Option<f64>,
    pub wilson95: Option<Interval>,
    /// Collateral writes (rows) over those sessions, and per session read.
    pub writes: usize,
    pub writes_per_session: Option<f64>,
    /// Writes by class: `touched_table`, `untouched_table`, `deletion`.
    pub by_class: BTreeMap<String, usize>,
    /// Sessions the verifier passed that had collateral writes: a success with side effects.
    pub passed_with_collateral: usize,
    /// Every session with collateral writes, so a reader can check them.
    pub sessions_with: Vec<CollateralSession>,
}

/// One session's collateral writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollateralSession {
    pub task: String,
    pub rep: u32,
    pub passed: bool,
    pub writes: Vec<CollateralWrite>,
}

/// Side effects over the valid sessions `valid`.
pub fn collateral(valid: &[&SessionRecord]) -> CollateralMetrics {
    let mut m = CollateralMetrics { by_class: CollateralClass::ALL.iter().map(|c| (c.as_str().to_owned(), 0)).collect(), ..Default::default() };
    let mut clusters: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in valid {
        let Some(c) = r.verifier.as_ref().and_then(|v| v.collateral.as_ref()) else {
            m.not_read += 1;
            continue;
        };
        m.sessions += 1;
        let hit = !c.writes.is_empty();
        let e = clusters.entry(r.task.as_str()).or_default();
        *e = (e.0 + usize::from(hit), e.1 + 1);
        m.writes += c.writes.len();
        for w in &c.writes {
            *m.by_class.entry(w.class.as_str().to_owned()).or_default() += 1;
        }
        if hit {
            m.with_collateral += 1;
            m.passed_with_collateral += usize::from(passed(r));
            m.sessions_with.push(CollateralSession { task: r.task.clone(), rep: r.rep, passed: passed(r), writes: c.writes.clone() });
        }
    }
    if m.sessions > 0 {
        m.rate = Some(m.with_collateral as f64 / m.sessions as f64);
        m.wilson95 = stats::wilson_clustered(&clusters.into_values().collect::<Vec<_>>());
        m.writes_per_session = Some(m.writes as f64 / m.sessions as f64);
    }
    m
}

/// 1 when a session had a collateral write, 0 when it had none, null when it was not read: the
/// per-session figure the paired difference reads.
pub fn had_collateral(r: &SessionRecord) -> Option<f64> {
    r.verifier.as_ref().and_then(|v| v.collateral.as_ref()).map(|c| if c.writes.is_empty() { 0.0 } else { 1.0 })
}
