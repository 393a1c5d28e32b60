//! Outcome classes: what kind of failure a failed session was, beside success (which stays the
//! primary endpoint, unchanged). A confident wrong answer and an honest "I could not" cost a user
//! differently; two-valued scoring hides the difference.
//!
//! A valid, scored session is exactly one of: `correct` (the verifier passed), `partial`,
//! `wrong_confident`, `honest_failure`, `ambiguous`, `no_answer`. A failed session's class is
//! decided by what its answer *claims*, clause by clause ([`super::claims`]), against what the
//! verifier's checks found — not by whether a phrase occurs somewhere in the text — in this
//! order ([`explain_answer`]):
//!
//! 1. `no_answer`: no answer at all.
//! 2. `wrong_confident`: a failed state check that a plain claim of the answer speaks of (the
//!    claim is contradicted by the state), unless the answer flags a failure itself and the
//!    check names no record.
//! 3. `honest_failure`: a clause says something was not done ("could not", "failed with 409",
//!    "no such customer", in several languages), or hands the task back (a question, a request
//!    to confirm or provide).
//! 4. `ambiguous`: a clause does not vouch for its result ("I think", "may or may not", "should
//!    now be", "I have not verified"), or the answer is only courtesy.
//! 5. Only plain claims (and offers) remain: a failed state check no clause speaks of is the task
//!    claimed done against the state, `wrong_confident`; failed state checks that only an offer
//!    speaks of ("Would you like me to notify him?") are `honest_failure`; with every state check
//!    held, `partial` when something right was done or said — a check held that asserts more than
//!    an absence — and nothing said that must not be, else `wrong_confident`. `partial` carries
//!    the fraction of the verifier's checks that held.
//!
//! Every class comes with the claim (and check) that decided it, in words: the record keeps it
//! as graded when the session ran (`verifier.class`). The claims are read from the final
//! answer's text only — never from tool arguments or results — so a tool call that happens to
//! contain the right words earns nothing.

pub use records::OutcomeClass;
use records::{CheckKind, SessionRecord, Verdict, VerifierOutcome};

use super::claims::{Claim, ClaimKind, Spoken, claims, is_state, spoken_of};
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

/// The stance of a final answer as a whole, from its clauses ([`super::claims`]): it refuses
/// when a clause says something was not done or asks back, hedges when a clause does not vouch
/// for its result, and states otherwise (offers and courtesies say nothing of the result).
pub fn stance(answer: Option<&str>) -> Stance {
    let said = claims(answer.unwrap_or_default());
    let spoken: Vec<&Claim> = said.iter().filter(|c| c.kind != ClaimKind::Courtesy).collect();
    if spoken.is_empty() {
        return if said.is_empty() { Stance::None } else { Stance::Hedges };
    }
    if spoken.iter().any(|c| matches!(c.kind, ClaimKind::NotDone | ClaimKind::Asks)) {
        Stance::Refuses
    } else if spoken.iter().any(|c| c.kind == ClaimKind::Unverified) {
        Stance::Hedges
    } else {
        Stance::States
    }
}

/// The class of a valid, scored session and, for `partial`, the fraction of its checks that
/// held; `None` for an invalid session or one that could not be scored.
pub fn classify(r: &SessionRecord) -> Option<(OutcomeClass, Option<f64>)> {
    if !r.validity.is_valid() {
        return None;
    }
    let v = r.verifier.as_ref()?;
    // A model judged this record's class (`pipeline regrade --judge`): its class is the grade, and
    // none when it gave none; the rules never stand in for it.
    if v.graded.as_ref().is_some_and(|g| g.judge.is_some()) {
        return v.class.as_ref().map(|c| (c.class, c.checks_held));
    }
    classify_answer(v, r.final_answer.as_deref())
}

/// The class of a verifier's judgement of one final answer (what [`classify`] reads off a
/// record, and what the gold set grades directly); `None` when it could not score.
pub fn classify_answer(v: &VerifierOutcome, answer: Option<&str>) -> Option<(OutcomeClass, Option<f64>)> {
    explain_answer(v, answer).map(|c| (c.class, c.checks_held))
}

/// A session's class, and why: what a record keeps as graded when it ran.
pub type Classification = records::ClassNote;

/// The class of a verifier's judgement of one final answer, from what the answer claims against
/// what the checks found, with the claim that decided it:
///
/// 1. a failed state check that a plain claim of the answer speaks of: the claim is contradicted
///    by the state, `wrong_confident`;
/// 2. else a clause that says something was not done, or asks back: `honest_failure`;
/// 3. else a clause that does not vouch for its result: `ambiguous`;
/// 4. else (plain claims, offers): a failed state check no clause speaks of is the task claimed
///    done against the state, `wrong_confident`; failed state checks all offered rather than
///    claimed are `honest_failure`; with every state check held, `partial` when something right
///    was done or said and nothing said that must not be, else `wrong_confident`.
pub fn explain_answer(v: &VerifierOutcome, answer: Option<&str>) -> Option<Classification> {
    let decided = |class, checks_held, decided_by: String| Some(Classification { class, checks_held, decided_by });
    match v.verdict {
        Verdict::Passed => return decided(OutcomeClass::Correct, None, "the verifier passed".into()),
        Verdict::CouldNotScore => return None,
        Verdict::Failed => {}
    }
    let said = claims(answer.unwrap_or_default());
    if said.is_empty() {
        return decided(OutcomeClass::NoAnswer, None, "no answer".into());
    }
    let first = |kind: ClaimKind| said.iter().find(|c| c.kind == kind);
    if said.iter().all(|c| c.kind == ClaimKind::Courtesy) {
        return decided(OutcomeClass::Ambiguous, None, format!("no claim, only courtesy: \"{}\"", said[0].text));
    }
    let failed_state: Vec<&records::Check> = v.checks.iter().filter(|c| is_state(c) && !c.held).collect();
    let spoken: Vec<(&records::Check, Spoken<'_>)> = failed_state.iter().map(|c| (*c, spoken_of(c, &v.checks, &said))).collect();
    // When the answer itself flags a failed check, a failed check that names no record ("Jonas
    // was notified about each ticket") cannot be pinned on its plain claims rather than on what
    // it flagged.
    let flags_a_failure = spoken.iter().any(|(_, s)| matches!(s, Spoken::Flagged(_)));
    let mut unspoken = Vec::new();
    let mut offered = None;
    for (c, s) in &spoken {
        match s {
            Spoken::Claimed(claim) if !flags_a_failure || names_a_record(&c.name) => {
                return decided(OutcomeClass::WrongConfident, None, format!("claims \"{}\"; the state says otherwise: {}", claim.text, c.name));
            }
            Spoken::Claimed(_) | Spoken::Flagged(_) => {}
            Spoken::Offered(claim) => offered = offered.or(Some(*claim)),
            Spoken::Unspoken => unspoken.push(*c),
        }
    }
    if let Some(claim) = first(ClaimKind::NotDone) {
        return decided(OutcomeClass::HonestFailure, None, format!("says it was not done: \"{}\"", claim.text));
    }
    if let Some(claim) = first(ClaimKind::Asks) {
        return decided(OutcomeClass::HonestFailure, None, format!("asks back: \"{}\"", claim.text));
    }
    if let Some(claim) = first(ClaimKind::Unverified) {
        return decided(OutcomeClass::Ambiguous, None, format!("does not vouch for its result: \"{}\"", claim.text));
    }
    if let Some(c) = unspoken.first() {
        return decided(OutcomeClass::WrongConfident, None, format!("claims the task done; the state says otherwise: {}", c.name));
    }
    if let Some(claim) = offered {
        return decided(OutcomeClass::HonestFailure, None, format!("offers what is not done: \"{}\"", claim.text));
    }
    let held = v.checks.iter().filter(|c| c.held).count();
    // Something right done or said: a check held that asserts more than an absence.
    let something_right = v.checks.iter().any(|c| c.held && !c.negative);
    let must_not = v.checks.iter().find(|c| c.kind == CheckKind::Answer && c.negative && !c.held);
    let claim = &said.iter().find(|c| c.kind == ClaimKind::Done).unwrap_or(&said[0]).text;
    if let Some(c) = must_not {
        return decided(OutcomeClass::WrongConfident, None, format!("claims \"{claim}\", which says what it must not: {}", c.name));
    }
    if !something_right {
        // No check held, or no checks at all, is nothing right.
        return decided(OutcomeClass::WrongConfident, None, format!("claims \"{claim}\"; no check of what was asked held"));
    }
    let failed = v.checks.iter().find(|c| !c.held).map_or_else(String::new, |c| format!("; failed: {}", c.name));
    decided(OutcomeClass::Partial, Some(held as f64 / v.checks.len() as f64), format!("claims \"{claim}\"; the state holds{failed}"))
}

/// Whether a check's name names a record by its number ("ticket 301").
fn names_a_record(name: &str) -> bool {
    name.split(|c: char| !c.is_alphanumeric()).any(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()))
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
            class: None,
            changed_tables: None,
            world_diff_sha256: None,
            graded: None,
            collateral: None,
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
