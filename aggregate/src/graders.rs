//! How far the graders can be trusted: their measured agreement with hand grades on the gold
//! set's held-out part (`tasks/gold/held_out.toml`, docs/gold-set.md), which was written after
//! the rules were frozen and is never used to tune them. Every report states it beside the
//! outcome and grounding tables (`method.graders` in summary.json). `pipeline/tests/it/gold.rs`
//! grades the held-out part and fails when these figures are not what it measures, so no report
//! claims an agreement the graders no longer have.

use serde::{Deserialize, Serialize};

/// The graders this binary is built with.
pub const GRADER: &str = "rules: the task's verifier, claims against state (outcome class), the grounding extractor";

/// The source of the rules this crate grades with (the outcome class and the claims it reads),
/// hashed with the verifier's and the grounding extractor's into the grader version every
/// outcome records (`records::Graded::grader_sha256`): a change to any of them is a new grader,
/// and outcomes of two graders are never pooled.
pub const RULE_SOURCES: [&str; 2] = [include_str!("metrics/classes.rs"), include_str!("metrics/claims.rs")];

/// When the held-out part was last graded with these rules (UTC date).
pub const MEASURED: &str = "2026-12-05";

/// Cases in the held-out part when it was graded.
pub const HELD_OUT_CASES: usize = 59;

/// Per layer, on the held-out part: (layer, items, accuracy, Cohen's kappa), rounded to 3 places.
pub const HELD_OUT: [(&str, usize, f64, f64); 3] = [("verdict", 59, 0.797, 0.578), ("class", 59, 0.661, 0.557), ("grounding", 178, 0.792, 0.308)];

/// One grading layer's agreement with the hand grades.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerAgreement {
    /// `verdict`, `class` or `grounding`.
    pub layer: String,
    /// Items graded (cases; references for grounding).
    pub n: usize,
    pub accuracy: f64,
    /// Cohen's kappa.
    pub kappa: f64,
}

/// The graders' measured agreement, as a summary states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub grader: String,
    pub measured: String,
    /// Cases of the held-out part.
    pub cases: usize,
    pub held_out: Vec<LayerAgreement>,
}

impl Agreement {
    /// One layer's figures.
    pub fn layer(&self, name: &str) -> Option<&LayerAgreement> {
        self.held_out.iter().find(|l| l.layer == name)
    }

    /// "agreed with the hand grade on 81 % of 56 (κ 0.71)".
    pub fn sentence(&self, name: &str, items: &str) -> Option<String> {
        let l = self.layer(name)?;
        Some(format!("agreed with the hand grade on {:.0} % of {} {items} (κ {:.2})", l.accuracy * 100.0, l.n, l.kappa))
    }
}

/// The agreement of the graders this binary is built with.
pub fn agreement() -> Agreement {
    Agreement {
        grader: GRADER.into(),
        measured: MEASURED.into(),
        cases: HELD_OUT_CASES,
        held_out: HELD_OUT.iter().map(|&(layer, n, accuracy, kappa)| LayerAgreement { layer: layer.into(), n, accuracy, kappa }).collect(),
    }
}
