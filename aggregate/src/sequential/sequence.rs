//! A sequential experiment's evidence, pair by pair in the order the pairs were drawn: the
//! confidence sequences the verdict rules read ([`crate::metrics::decide_on`]), and the stopping
//! rule that ends a run once the verdict is reached (docs/adr/0021-sequential-experiments.md).
//!
//! Each pair is a task drawn uniformly, with replacement, from the comparison's task set, run in
//! both arms. Pairs are then independent and identically distributed, so a sequence over them
//! is valid for the mean over *these* tasks — the difference conditional on the task set, not
//! over tasks like them (which only more tasks can narrow, ADR 0017).

use serde::{Deserialize, Serialize};

use super::BettingCs;
use crate::metrics::{Cost, Design, Evidence, Options, PairOutcomes, Verdict, decide_on};
use crate::stats::Interval;

/// The level every sequence is at (two-sided, as the fixed design's 95 % intervals).
pub const ALPHA: f64 = 0.05;

/// One pair of valid sessions, as the sequences read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairObs {
    pub pattern_passed: bool,
    pub control_passed: bool,
    /// Input tokens as the endpoint reported them; `None` when it did not.
    pub pattern_input: Option<u64>,
    pub control_input: Option<u64>,
}

impl PairObs {
    /// The observation of a pair of sessions; `None` when either is invalid (a pair the
    /// sequences skip, as the fixed design drops it).
    pub fn of(pattern: &records::SessionRecord, control: &records::SessionRecord) -> Option<Self> {
        (pattern.validity.is_valid() && control.validity.is_valid()).then(|| Self {
            pattern_passed: pattern.passed(),
            control_passed: control.passed(),
            pattern_input: pattern.totals.input_tokens,
            control_input: control.totals.input_tokens,
        })
    }

    /// 1 when the pattern used fewer input tokens, ½ for a tie, 0 when it used more.
    pub fn cheaper(&self) -> Option<f64> {
        let (p, c) = (self.pattern_input?, self.control_input?);
        Some(match p.cmp(&c) {
            std::cmp::Ordering::Less => 1.0,
            std::cmp::Ordering::Equal => 0.5,
            std::cmp::Ordering::Greater => 0.0,
        })
    }

    /// The success difference, pattern − control: 1, 0 or −1.
    pub fn success_difference(&self) -> f64 {
        f64::from(u8::from(self.pattern_passed)) - f64::from(u8::from(self.control_passed))
    }
}

/// When a sequential run stops: at the first look, with at least `min_pairs` valid pairs, where
/// the verdict is confirmed or negative; else at `max_pairs` drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub max_pairs: u32,
    pub min_pairs: u32,
}

impl Rule {
    /// The rule in words, for the report and the manifest.
    pub fn describe(&self, opts: &Options) -> String {
        format!(
            "sequential: pairs drawn one at a time, each a task chosen uniformly with replacement from the comparison's tasks; after every pair, the verdict rules are applied to anytime-valid {:.0} % confidence sequences (a betting sequence of the success difference, and of the share of pairs in which the pattern used fewer input tokens, over all pairs and over the pairs both arms passed); the run stops at the first look with at least {} valid pairs where the verdict is confirmed or negative (success margin {} points), or when {} pairs have been drawn",
            100.0 * (1.0 - ALPHA),
            self.min_pairs.max(opts.min_pairs_for_verdict as u32),
            (opts.success_margin * 1000.0).round() / 10.0,
            self.max_pairs
        )
    }

    /// Whether a look stops the run.
    pub fn stops(&self, look: &Look) -> bool {
        look.pairs >= self.min_pairs as usize && matches!(look.verdict, Verdict::Confirmed | Verdict::Negative)
    }
}

/// The sequences of one comparison.
#[derive(Debug, Clone)]
pub struct Sequence {
    success: BettingCs,
    cheaper: BettingCs,
    cheaper_both: BettingCs,
    outcomes: PairOutcomes,
    /// Sums for the shares' point estimates.
    cheaper_sum: f64,
    cheaper_both_sum: f64,
    success_sum: f64,
}

impl Default for Sequence {
    fn default() -> Self {
        Self::new()
    }
}

/// What the sequences say after some pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Look {
    /// Valid pairs read.
    pub pairs: usize,
    pub outcomes: PairOutcomes,
    /// The success-rate difference (pattern − control): its mean and sequence.
    pub success_mean: Option<f64>,
    pub success: Option<Interval>,
    /// The share of pairs in which the pattern used fewer input tokens (ties count ½), over the
    /// pairs with usage, and its sequence.
    pub cheaper_pairs: usize,
    pub cheaper_share: Option<f64>,
    pub cheaper: Option<Interval>,
    /// The same over the pairs where both arms passed.
    pub cheaper_both_pairs: usize,
    pub cheaper_both_share: Option<f64>,
    pub cheaper_both: Option<Interval>,
    pub verdict: Verdict,
    pub verdict_reason: String,
}

impl Sequence {
    pub fn new() -> Self {
        Self {
            success: BettingCs::new(-1.0, 1.0, ALPHA),
            cheaper: BettingCs::new(0.0, 1.0, ALPHA),
            cheaper_both: BettingCs::new(0.0, 1.0, ALPHA),
            outcomes: PairOutcomes::default(),
            cheaper_sum: 0.0,
            cheaper_both_sum: 0.0,
            success_sum: 0.0,
        }
    }

    /// Reads the next pair.
    pub fn push(&mut self, o: &PairObs) {
        let d = o.success_difference();
        self.success.push(d);
        self.success_sum += d;
        self.outcomes.add(o.pattern_passed, o.control_passed);
        if let Some(x) = o.cheaper() {
            self.cheaper.push(x);
            self.cheaper_sum += x;
            if o.pattern_passed && o.control_passed {
                self.cheaper_both.push(x);
                self.cheaper_both_sum += x;
            }
        }
    }

    /// The sequences now and the verdict the rules give on them.
    pub fn look(&self, opts: &Options) -> Look {
        let pairs = self.success.n() as usize;
        let interval = |cs: &BettingCs| (cs.n() > 0).then(|| cs.interval()).flatten().map(|(lo, hi)| Interval { lo, hi });
        let share = |sum: f64, cs: &BettingCs| (cs.n() > 0).then(|| sum / cs.n() as f64);
        let cost = |cs: &BettingCs| interval(cs).map(Cost::of_share);
        let evidence = Evidence {
            design: Design::Sequential,
            pairs_used: pairs,
            outcomes: &self.outcomes,
            success: interval(&self.success),
            success_mde: None,
            cost: cost(&self.cheaper),
            cost_both: cost(&self.cheaper_both),
            both_pairs: self.cheaper_both.n() as usize,
        };
        let (verdict, verdict_reason) = decide_on(&evidence, true, opts);
        Look {
            pairs,
            outcomes: self.outcomes.clone(),
            success_mean: (pairs > 0).then(|| self.success_sum / pairs as f64),
            success: interval(&self.success),
            cheaper_pairs: self.cheaper.n() as usize,
            cheaper_share: share(self.cheaper_sum, &self.cheaper),
            cheaper: interval(&self.cheaper),
            cheaper_both_pairs: self.cheaper_both.n() as usize,
            cheaper_both_share: share(self.cheaper_both_sum, &self.cheaper_both),
            cheaper_both: interval(&self.cheaper_both),
            verdict,
            verdict_reason,
        }
    }
}

/// The fewest valid pairs after which any verdict could stop a run, and after which a saving
/// could be confirmed: from the most one-sided pairs there can be (the pattern failing every
/// pair the control passes; both passing every pair, the pattern always cheaper). A cap below
/// the first can never stop on a verdict; below the second it can never confirm.
pub fn fewest_pairs(opts: &Options) -> (Option<usize>, Option<usize>) {
    let until = |o: PairObs| {
        let mut s = Sequence::new();
        for n in 1..=5000 {
            s.push(&o);
            if matches!(s.look(opts).verdict, Verdict::Confirmed | Verdict::Negative) {
                return Some(n);
            }
        }
        None
    };
    let negative = until(PairObs { pattern_passed: false, control_passed: true, pattern_input: Some(1), control_input: Some(1) });
    let confirmed = until(PairObs { pattern_passed: true, control_passed: true, pattern_input: Some(1), control_input: Some(2) });
    (negative.into_iter().chain(confirmed).min(), confirmed)
}
