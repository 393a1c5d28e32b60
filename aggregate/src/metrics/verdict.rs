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

/// The verdict rules of [`verdict_rules`].
pub fn decide(paired: &Paired, both_arms: bool, opts: &Options) -> (Verdict, String) {
    if !both_arms {
        return (Verdict::Inconclusive, "one arm has no sessions".into());
    }
    if paired.pairs_used < opts.min_pairs_for_verdict {
        let n = paired.pairs_used;
        return (
            Verdict::Inconclusive,
            format!("{n} valid pair{}; at least {} are needed for a verdict", if n == 1 { "" } else { "s" }, opts.min_pairs_for_verdict),
        );
    }
    let (n, m) = (paired.pairs_used, opts.min_passes_for_verdict);
    let few = few_passes(&paired.outcomes, opts);
    if few.contains(&Role::Control) {
        return (
            Verdict::Withheld,
            format!(
                "model too weak to show a difference: the control passed in {} of {n} pairs, fewer than the {m} a comparison needs; the turn and token differences are over failures, not savings",
                paired.outcomes.passes(Role::Control)
            ),
        );
    }
    let Some(s) = paired.success.as_ref().and_then(|d| d.ci95) else {
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
                paired.outcomes.passes(Role::Pattern)
            ),
        );
    }
    let Some(t) = paired.input_tokens.as_ref().and_then(|d| d.ci95) else {
        return (Verdict::Inconclusive, "no input-token difference interval (usage missing)".into());
    };
    if t.entirely_below(0.0) && s.lo < -opts.success_margin {
        return (
            Verdict::Inconclusive,
            format!(
                "input tokens are lower, but success is not shown within {} points of the control's: its difference interval reaches {:.1} points{}",
                points(opts.success_margin),
                100.0 * s.lo,
                paired.success.as_ref().and_then(|d| d.mde).map_or(String::new(), |m| format!(
                    " (this design would miss a success drop smaller than about {:.0} points; more tasks narrow it)",
                    100.0 * m
                ))
            ),
        );
    }
    if t.entirely_below(0.0) {
        let b = &paired.both_passed;
        let success_cost = b.input_tokens.as_ref().and_then(|d| d.ci95);
        if b.pairs >= m && success_cost.is_some_and(|i| i.entirely_below(0.0)) {
            (
                Verdict::Confirmed,
                format!(
                    "success shown not worse than the control's by more than {} points (its difference interval starts at {:.1}), and the input-token difference interval is entirely below 0 over all pairs and over the {} pairs where both arms passed",
                    points(opts.success_margin),
                    100.0 * s.lo,
                    b.pairs
                ),
            )
        } else {
            (
                Verdict::Inconclusive,
                format!(
                    "input tokens are lower over all pairs, but not shown lower over the {} pairs where both arms passed ({}): a saving made by failing differently is no saving",
                    b.pairs,
                    if b.pairs < m { format!("fewer than {m}") } else { "their interval is not entirely below 0".to_string() }
                ),
            )
        }
    } else if t.entirely_above(0.0) {
        (Verdict::Negative, "the input-token difference interval is entirely above 0: the pattern costs more".into())
    } else {
        (Verdict::Inconclusive, "the input-token difference interval includes 0".into())
    }
}
