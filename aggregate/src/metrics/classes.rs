//! Outcome classes: what kind of failure a failed session was, beside success (which stays the
//! primary endpoint, unchanged). A confident wrong answer and an honest "I could not" cost a user
//! differently; two-valued scoring hides the difference.
//!
//! A valid, scored session is exactly one of:
//!
//! * `correct`: the verifier passed (every check held).
//! * `no_answer`: it failed and the model gave no final answer (the turn cap, unparseable output).
//! * `honest_failure`: it failed and the answer says it could not, or asks for what is missing
//!   ([`stance`]: a refusal phrase, or an answer that ends in a question).
//! * `ambiguous`: it failed and the answer hedges (neither a refusal nor a plain claim): the
//!   class says so rather than guess.
//! * `wrong_confident`: it failed, the answer states its result plainly, and a state check failed
//!   — or, for a task checked on its answer alone, no check held.
//! * `partial`: it failed, the answer states its result plainly, every state check held, and
//!   something right was done or said — a check held that asserts more than an absence (more
//!   than "nothing changed" or "the answer does not say X") — while some answer check did not
//!   (the work was done, or the question half answered, and the report is off), with the
//!   fraction of the verifier's checks that held. A plain answer to a question that gets nothing
//!   right is `wrong_confident`, however many "nothing changed" checks hold, and so is one that
//!   says what it must not (a `must_not_contain` failed: a wrong claim, not a missing one). Records written
//!   before checks were kept count a plain failed claim as `wrong_confident`.
//!
//! The stance is read from the final answer's text only — never from tool arguments or results,
//! which are not passed here — so a tool call that happens to contain the right words earns
//! nothing.

use records::{CheckKind, SessionRecord, Verdict, VerifierOutcome};
use serde::{Deserialize, Serialize};

use crate::stats::{self, Interval};

/// How a final answer stands toward its own result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stance {
    /// No answer, or only whitespace.
    None,
    /// It says it could not, that something does not exist, or asks for what is missing.
    Refuses,
    /// It hedges ("I think", "might", "not sure").
    Hedges,
    /// It states its result plainly.
    States,
}

/// Phrases of an answer that says it could not (lower case).
const REFUSALS: &[&str] = &[
    "could not",
    "couldn't",
    "cannot",
    "can't",
    "can not",
    "unable to",
    "not able to",
    "wasn't able",
    "was not able",
    "failed to",
    "no such",
    "does not exist",
    "doesn't exist",
    "do not exist",
    "don't exist",
    "not found",
    "no record of",
    "not connected",
    "isn't connected",
    "not available",
    "isn't available",
    "not possible",
    "impossible",
    "please provide",
    "please specify",
    "please clarify",
    "need more information",
    "did not find",
    "didn't find",
    "not find",
    "nothing found",
    "none found",
    "no results",
    "no matching",
];

/// "No tickets found", "no open change requests were found": `no` and, within a few words,
/// `found` — a report that there is nothing, not a claim of a result.
fn says_none_found(lower: &str) -> bool {
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric() && c != '\'').filter(|w| !w.is_empty()).collect();
    words.iter().enumerate().any(|(i, w)| *w == "no" && words[i + 1..].iter().take(5).any(|x| *x == "found"))
}

/// Phrases of an answer that hedges (lower case).
const HEDGES: &[&str] =
    &["i think", "might", "maybe", "may be", "possibly", "probably", "not sure", "unsure", "unclear", "i believe", "it seems", "appears to"];

/// The stance of a final answer.
pub fn stance(answer: Option<&str>) -> Stance {
    let Some(text) = answer.map(str::trim).filter(|t| !t.is_empty()) else { return Stance::None };
    let lower = text.to_lowercase();
    if REFUSALS.iter().any(|p| lower.contains(p)) || says_none_found(&lower) || lower.ends_with('?') {
        Stance::Refuses
    } else if HEDGES.iter().any(|p| lower.contains(p)) {
        Stance::Hedges
    } else {
        Stance::States
    }
}

/// The outcome class of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeClass {
    Correct,
    Partial,
    WrongConfident,
    HonestFailure,
    Ambiguous,
    NoAnswer,
}

impl OutcomeClass {
    pub const ALL: [Self; 6] = [Self::Correct, Self::Partial, Self::WrongConfident, Self::HonestFailure, Self::Ambiguous, Self::NoAnswer];

    /// As the report shows it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Correct => "correct",
            Self::Partial => "partial",
            Self::WrongConfident => "wrong but confident",
            Self::HonestFailure => "honest failure",
            Self::Ambiguous => "ambiguous",
            Self::NoAnswer => "no answer",
        }
    }
}

/// The class of a valid, scored session and, for `partial`, the fraction of its checks that
/// held; `None` for an invalid session or one that could not be scored.
pub fn classify(r: &SessionRecord) -> Option<(OutcomeClass, Option<f64>)> {
    if !r.validity.is_valid() {
        return None;
    }
    classify_answer(r.verifier.as_ref()?, r.final_answer.as_deref())
}

/// The class of a verifier's judgement of one final answer (what [`classify`] reads off a
/// record, and what the gold set grades directly); `None` when it could not score.
pub fn classify_answer(v: &VerifierOutcome, answer: Option<&str>) -> Option<(OutcomeClass, Option<f64>)> {
    match v.verdict {
        Verdict::Passed => return Some((OutcomeClass::Correct, None)),
        Verdict::CouldNotScore => return None,
        Verdict::Failed => {}
    }
    let class = match stance(answer) {
        Stance::None => OutcomeClass::NoAnswer,
        Stance::Refuses => OutcomeClass::HonestFailure,
        Stance::Hedges => OutcomeClass::Ambiguous,
        Stance::States => {
            let state_failed = v.checks.iter().any(|c| c.kind == CheckKind::State && !c.held);
            let held = v.checks.iter().filter(|c| c.held).count();
            // Something right done or said: a check held that asserts more than an absence.
            let something_right = v.checks.iter().any(|c| c.held && !c.negative);
            let says_what_it_must_not = v.checks.iter().any(|c| c.kind == CheckKind::Answer && c.negative && !c.held);
            // No check held, or no checks at all, is nothing right.
            if state_failed || !something_right || says_what_it_must_not {
                OutcomeClass::WrongConfident
            } else {
                return Some((OutcomeClass::Partial, Some(held as f64 / v.checks.len() as f64)));
            }
        }
    };
    Some((class, None))
}

/// One class's count among an arm's scored sessions, with its rate and Wilson 95% interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassCount {
    pub class: OutcomeClass,
    pub n: usize,
    pub rate: Option<f64>,
    pub wilson95: Option<Interval>,
}

/// The outcome classes of an arm's valid, scored sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutcomeClasses {
    /// Valid sessions the verifier scored (passed or failed): the denominator.
    pub scored: usize,
    /// Every class, in [`OutcomeClass::ALL`]'s order (zero counts included).
    pub classes: Vec<ClassCount>,
    /// Mean fraction of checks held over the `partial` sessions; null when there are none.
    pub partial_checks_held_mean: Option<f64>,
}

/// Counts the classes of `recs` (any sessions: the invalid and unscored are left out).
pub fn outcome_classes(recs: &[&SessionRecord]) -> OutcomeClasses {
    let classified: Vec<(OutcomeClass, Option<f64>)> = recs.iter().filter_map(|r| classify(r)).collect();
    let scored = classified.len();
    let classes = OutcomeClass::ALL
        .iter()
        .map(|&class| {
            let n = classified.iter().filter(|(c, _)| *c == class).count();
            ClassCount { class, n, rate: (scored > 0).then(|| n as f64 / scored as f64), wilson95: stats::wilson(n, scored) }
        })
        .collect();
    let fractions: Vec<f64> = classified.iter().filter_map(|(_, f)| *f).collect();
    OutcomeClasses { scored, classes, partial_checks_held_mean: stats::mean(&fractions) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stance_is_read_from_the_answer_text() {
        assert_eq!(stance(None), Stance::None);
        assert_eq!(stance(Some("  \n")), Stance::None);
        assert_eq!(stance(Some("I can't send that invoice: billing is not connected.")), Stance::Refuses);
        assert_eq!(stance(Some("There is no such person in the directory.")), Stance::Refuses);
        assert_eq!(stance(Some("Which Wen do you mean, Wen Nakamura or Wen Larsen?")), Stance::Refuses);
        assert_eq!(stance(Some("I think the ticket is probably resolved.")), Stance::Hedges);
        assert_eq!(stance(Some("Ticket 77 is now marked as resolved.")), Stance::States);
        assert_eq!(stance(Some("Priya Raman is on the payments team.")), Stance::States);
        assert_eq!(stance(Some("No tickets found for Wen.")), Stance::Refuses);
        assert_eq!(stance(Some("No open change requests were found in that repository.")), Stance::Refuses);
        assert_eq!(stance(Some("I did not find a customer of that name.")), Stance::Refuses);
        // "no" and "found" far apart, or "found" alone, is a claim.
        assert_eq!(stance(Some("I found ticket 77 and resolved it; no further action is needed, and the customer was notified as found.")), Stance::States);
    }

    fn judged(checks: &[(CheckKind, bool, bool)]) -> VerifierOutcome {
        // (kind, held, negative)
        VerifierOutcome {
            verdict: Verdict::Failed,
            reasons: vec!["a check failed".into()],
            elapsed_ms: 1.0,
            checks: checks.iter().enumerate().map(|(i, &(kind, held, negative))| records::Check { name: format!("c{i}"), kind, held, negative }).collect(),
            grounding: None,
        }
    }

    #[test]
    fn partial_needs_something_right_not_only_absences() {
        let plain = Some("Priya Raman is on the search team.");
        // A question: nothing changed and nothing forbidden was said, but nothing it asked for.
        let read_only = judged(&[(CheckKind::State, true, true), (CheckKind::Answer, true, true), (CheckKind::Answer, false, false)]);
        assert_eq!(classify_answer(&read_only, plain), Some((OutcomeClass::WrongConfident, None)));
        // The same question half answered: partial.
        let half = judged(&[(CheckKind::State, true, true), (CheckKind::Answer, true, false), (CheckKind::Answer, false, false)]);
        assert_eq!(classify_answer(&half, plain).map(|(c, _)| c), Some(OutcomeClass::Partial));
        // Half answered, but saying what it must not: a wrong claim.
        let wrong = judged(&[(CheckKind::State, true, true), (CheckKind::Answer, true, false), (CheckKind::Answer, false, true)]);
        assert_eq!(classify_answer(&wrong, plain).map(|(c, _)| c), Some(OutcomeClass::WrongConfident));
        // A write that was made, reported wrongly: partial, with the share of checks that held.
        let written = judged(&[(CheckKind::State, true, false), (CheckKind::State, true, true), (CheckKind::Answer, false, false)]);
        let (class, share) = classify_answer(&written, plain).unwrap();
        assert_eq!(class, OutcomeClass::Partial);
        assert!((share.unwrap() - 2.0 / 3.0).abs() < 1e-9);
    }
}
