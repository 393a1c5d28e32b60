//! A module's verdict: the rules as the report states them ([`verdict_rules`]), the rules
//! applied ([`decide`]) and the arms that passed too little to compare ([`few_passes`]).

use records::Role;
use serde::{Deserialize, Serialize};

use super::{Options, PairOutcomes, Paired};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Confirmed,
    Negative,
    Inconclusive,
    /// The sessions measure a fault of the endpoint, not the pattern: no verdict whatever the
    /// intervals say (see [`verdict_rules`]).
    Withheld,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "confirmed",
            Self::Negative => "negative",
            Self::Inconclusive => "inconclusive",
            Self::Withheld => "withheld",
        }
    }
}

/// The verdict rules with this analysis' thresholds, as the report states them.
pub fn verdict_rules(opts: &Options) -> String {
    let (pairs, m) = (opts.min_pairs_for_verdict, opts.min_passes_for_verdict);
    let margin = points(opts.success_margin);
    format!(
        "In this order. inconclusive: an arm has no sessions, or fewer than {pairs} pairs are valid in both arms. \
withheld, model too weak: the control passed in fewer than {m} of the valid pairs while failing in at least {m} — its turns and tokens are spent failing, so no difference in cost means anything (below {pairs} pairs this is a notice beside the inconclusive verdict). \
negative: the success-rate difference interval lies entirely below 0 (correctness first: any token saving notwithstanding). \
withheld, too few passes: the pattern passed in fewer than {m} pairs while failing in at least {m}, and its success is not shown worse. \
negative: the input-token difference interval over all pairs lies entirely above 0 (the pattern costs more). \
confirmed: success shown not worse than the control's by more than the margin of {margin} points (the success-difference interval's lower bound at or above −{margin} points), AND the input-token difference interval lies entirely below 0 over all pairs AND over the pairs where both arms passed, of which there are at least {m}. \
inconclusive: anything else, including a saving whose success interval reaches below −{margin} points (a design too small to rule out a harm that large: its minimum detectable difference says how large a drop it could miss), and a saving over all pairs that the both-passed pairs do not show. \
withheld, overriding all of the above: more than half of either arm's valid sessions wrote their tool calls as text instead of calling them — the endpoint is probably not parsing tool calls, so the sessions measure the endpoint, not the pattern. \
A notice, not a verdict: when the control passed every planned session, the model may be too strong for these tasks to show a success difference. \
{m} is the success–failure condition for comparing two proportions (at least {m} successes and {m} failures)."
    )
}

/// The arms that passed in fewer than the minimum of the used pairs and failed in at least that
/// many (the success–failure condition, [`Options::min_passes_for_verdict`]). Requiring the
/// failures too keeps a handful of pairs that all passed from reading as "too weak".
pub fn few_passes(outcomes: &PairOutcomes, opts: &Options) -> Vec<Role> {
    let (n, m) = (outcomes.total(), opts.min_passes_for_verdict);
    [Role::Control, Role::Pattern]
        .into_iter()
        .filter(|role| {
            let passes = outcomes.passes(*role);
            passes < m && n - passes >= m
        })
        .collect()
}

/// A fraction as points, to a tenth ("10", "7.5").
fn points(fraction: f64) -> String {
    format!("{}", (fraction * 1000.0).round() / 10.0)
}

/// What a cost interval or sequence shows about the pattern's input tokens against the control's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// Shown lower.
    Lower,
    /// Shown higher.
    Higher,
    /// Neither shown.
    Unclear,
}

impl Cost {
    /// What an interval of the share of pairs in which the pattern used fewer input tokens shows:
    /// lower when it lies above ½, higher below.
    pub fn of_share(i: crate::stats::Interval) -> Self {
        if i.entirely_above(0.5) {
            Self::Lower
        } else if i.entirely_below(0.5) {
            Self::Higher
        } else {
            Self::Unclear
        }
    }
}

/// How the evidence was gathered, which names it in the verdict's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// Fixed-sample intervals of the mean differences, over tasks.
    Fixed,
    /// Anytime-valid sequences of a sequential experiment (docs/adr/0021): the success
    /// difference, and the share of pairs in which the pattern used fewer input tokens.
    Sequential,
}

impl Design {
    fn missing(self) -> &'static str {
        match self {
            Self::Fixed => "no input-token difference interval (usage missing)",
            Self::Sequential => "no sequence of the share of pairs with fewer input tokens (usage missing)",
        }
    }

    fn lower(self) -> &'static str {
        match self {
            Self::Fixed => "the input-token difference interval is entirely below 0",
            Self::Sequential => "the share of pairs in which the pattern used fewer input tokens is shown above ½",
        }
    }

    fn not_lower(self) -> &'static str {
        match self {
            Self::Fixed => "their interval is not entirely below 0",
            Self::Sequential => "their share's sequence is not entirely above ½",
        }
    }

    fn higher(self) -> &'static str {
        match self {
            Self::Fixed => "the input-token difference interval is entirely above 0: the pattern costs more",
            Self::Sequential => "the share of pairs in which the pattern used fewer input tokens is shown below ½: the pattern costs more in most pairs",
        }
    }

    fn unclear(self) -> &'static str {
        match self {
            Self::Fixed => "the input-token difference interval includes 0",
            Self::Sequential => "the share of pairs in which the pattern used fewer input tokens may still be ½",
        }
    }
}

/// What the verdict rules read: the same rules decide a fixed design from its intervals and a
/// sequential experiment from its sequences.
#[derive(Debug, Clone)]
pub struct Evidence<'a> {
    pub design: Design,
    pub pairs_used: usize,
    pub outcomes: &'a PairOutcomes,
    /// The success-rate difference, pattern − control.
    pub success: Option<crate::stats::Interval>,
    /// The smallest success drop the design would detect, for the reason's wording.
    pub success_mde: Option<f64>,
    /// Input tokens over all used pairs; `None` when usage is missing.
    pub cost: Option<Cost>,
    /// Input tokens over the pairs where both arms passed, and how many there are.
    pub cost_both: Option<Cost>,
    pub both_pairs: usize,
}

impl<'a> Evidence<'a> {
    /// The fixed design's: the paired differences' 95 % intervals over tasks.
    pub fn fixed(paired: &'a Paired) -> Self {
        let cost = |d: Option<&super::Diff>| {
            d.and_then(|d| d.ci95).map(|i| {
                if i.entirely_below(0.0) {
                    Cost::Lower
                } else if i.entirely_above(0.0) {
                    Cost::Higher
                } else {
                    Cost::Unclear
                }
            })
        };
        Self {
            design: Design::Fixed,
            pairs_used: paired.pairs_used,
            outcomes: &paired.outcomes,
            success: paired.success.as_ref().and_then(|d| d.ci95),
            success_mde: paired.success.as_ref().and_then(|d| d.mde),
            cost: cost(paired.input_tokens.as_ref()),
            cost_both: cost(paired.both_passed.input_tokens.as_ref()),
            both_pairs: paired.both_passed.pairs,
        }
    }
}

/// The verdict rules of [`verdict_rules`], from the fixed design's intervals.
pub fn decide(paired: &Paired, both_arms: bool, opts: &Options) -> (Verdict, String) {
    decide_on(&Evidence::fixed(paired), both_arms, opts)
}

/// The verdict rules of [`verdict_rules`], from either design's evidence.
pub fn decide_on(e: &Evidence, both_arms: bool, opts: &Options) -> (Verdict, String) {
    if !both_arms {
        return (Verdict::Inconclusive, "one arm has no sessions".into());
    }
    if e.pairs_used < opts.min_pairs_for_verdict {
        let n = e.pairs_used;
        return (
            Verdict::Inconclusive,
            format!("{n} valid pair{}; at least {} are needed for a verdict", if n == 1 { "" } else { "s" }, opts.min_pairs_for_verdict),
        );
    }
    let (n, m) = (e.pairs_used, opts.min_passes_for_verdict);
    let few = few_passes(e.outcomes, opts);
    if few.contains(&Role::Control) {
        return (
            Verdict::Withheld,
            format!(
                "model too weak to show a difference: the control passed in {} of {n} pairs, fewer than the {m} a comparison needs; the turn and token differences are over failures, not savings",
                e.outcomes.passes(Role::Control)
            ),
        );
    }
    let Some(s) = e.success else {
        return (Verdict::Inconclusive, "no success-difference interval".into());
    };
    if s.entirely_below(0.0) {
        return (Verdict::Negative, "success-rate difference interval entirely below 0: the pattern is less correct".into());
    }
    if few.contains(&Role::Pattern) {
        return (
            Verdict::Withheld,
            format!(
                "too few passes to compare: the pattern passed in {} of {n} pairs, fewer than {m}, and its success is not shown worse; its turn and token differences are mostly over failures, not savings",
                e.outcomes.passes(Role::Pattern)
            ),
        );
    }
    let Some(t) = e.cost else {
        return (Verdict::Inconclusive, e.design.missing().into());
    };
    if t == Cost::Lower && s.lo < -opts.success_margin {
        return (
            Verdict::Inconclusive,
            format!(
                "input tokens are lower, but success is not shown within {} points of the control's: its difference interval reaches {:.1} points{}",
                points(opts.success_margin),
                100.0 * s.lo,
                e.success_mde.map_or(String::new(), |m| format!(
                    " (this design would miss a success drop smaller than about {:.0} points; more tasks narrow it)",
                    100.0 * m
                ))
            ),
        );
    }
    match t {
        Cost::Lower if e.both_pairs >= m && e.cost_both == Some(Cost::Lower) => (
            Verdict::Confirmed,
            format!(
                "success shown not worse than the control's by more than {} points (its difference interval starts at {:.1}), and {} over all pairs and over the {} pairs where both arms passed",
                points(opts.success_margin),
                100.0 * s.lo,
                e.design.lower(),
                e.both_pairs
            ),
        ),
        Cost::Lower => (
            Verdict::Inconclusive,
            format!(
                "input tokens are lower over all pairs, but not shown lower over the {} pairs where both arms passed ({}): a saving made by failing differently is no saving",
                e.both_pairs,
                if e.both_pairs < m { format!("fewer than {m}") } else { e.design.not_lower().to_string() }
            ),
        ),
        Cost::Higher => (Verdict::Negative, e.design.higher().into()),
        Cost::Unclear => (Verdict::Inconclusive, e.design.unclear().into()),
    }
}
