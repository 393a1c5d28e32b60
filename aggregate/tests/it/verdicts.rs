//! Verdicts when an arm passes too little to compare (the control too weak, the pattern failing),
//! and the cost of success: differences over the pairs where both arms passed.

use std::path::Path;

use crate::common::*;
use aggregate::metrics::{ModuleReport, Verdict};
use aggregate::{Options, Report};
use records::{Role, Verdict as V};

/// One pair: (pattern passed, pattern input tokens, control passed, control input tokens).
type Pair = (bool, u64, bool, u64);

/// Writes `pairs` as one task each — (t1, rep 1), (t2, rep 1), … — of `module` for model "m":
/// intervals are taken over tasks, so a pair per task gives each pair its own cluster.
fn write_pairs(dir: &Path, module: &str, pairs: &[Pair]) {
    for (i, &(pp, pt, cp, ct)) in pairs.iter().enumerate() {
        let task = format!("t{}", i + 1);
        let task = task.as_str();
        let rep = 1;
        let verdict = |passed| if passed { V::Passed } else { V::Failed };
        write(dir, &record("m", module, "pattern", task, rep, ok(verdict(pp), pt, 3)), false);
        write(dir, &record("m", module, "control", task, rep, ok(verdict(cp), ct, 5)), false);
    }
}

/// `n` pairs where the pattern passes in the first `p` and the control in the first `c`, the
/// pattern spending about 13% fewer input tokens (with some spread, so intervals have width).
fn passing(n: usize, p: usize, c: usize) -> Vec<Pair> {
    (0..n).map(|i| (i < p, 2_600 + 37 * (i as u64 % 5), i < c, 3_000 + 53 * (i as u64 % 4))).collect()
}

fn report_of(pairs: &[Pair], opts: &Options) -> (tempfile::TempDir, Report) {
    let dir = tempfile::tempdir().unwrap();
    write_pairs(dir.path(), "m1", pairs);
    let rep = aggregate::report(dir.path(), None, opts).unwrap();
    (dir, rep)
}

fn module(rep: &Report) -> &ModuleReport {
    &rep.summary.models[0].modules[0]
}

#[test]
fn both_arms_failing_everything_withhold_the_verdict_and_label_the_difference() {
    // The case of the local 1.5B model: nothing passes in either arm, the pattern spends fewer
    // tokens failing. Before this rule that read as a confirmed saving.
    let (_dir, rep) = report_of(&passing(12, 0, 0), &opts());
    let m = module(&rep);
    let tokens = m.paired.input_tokens.as_ref().unwrap();
    assert!(tokens.ci95.unwrap().entirely_below(0.0), "the all-pairs interval alone would have confirmed: {tokens:?}");
    assert_eq!(m.verdict, Verdict::Withheld, "{}", m.verdict_reason);
    assert!(m.verdict_reason.starts_with("model too weak to show a difference: the control passed in 0 of 12 pairs"), "{}", m.verdict_reason);
    assert!(m.model_too_weak && !m.model_too_strong);
    assert_eq!(m.few_passes, [Role::Control, Role::Pattern]);
    assert_eq!((m.paired.outcomes.neither, m.paired.both_passed.pairs), (12, 0));
    assert!(m.paired.both_passed.input_tokens.is_none(), "no pair passed in both arms: no cost of success, not a zero one");

    let md = &rep.markdown;
    assert!(md.contains("### m1 — verdict: **withheld**"), "{md}");
    assert!(md.contains("> Model too weak to show a difference: the control passed in 0 of 12 valid pairs (fewer than 5)."), "{md}");
    let row = md.lines().find(|l| l.starts_with("| input tokens / session (median / mean [CI]), all pairs |")).unwrap();
    assert!(row.ends_with("— computed over failures (control and pattern passed too little; 12 of 12 pairs passed in neither arm), not a saving |"), "{row}");
    assert!(md.contains("| input tokens / session (mean), both passed | — | — | — |"), "{md}");
    assert!(md.contains("| pair outcomes | | | 0 both passed · 0 pattern only · 0 control only · 12 neither |"), "{md}");
    // The chart's turn and token groups say so too (twice: turns and tokens).
    assert_eq!(rep.svg.matches("spent failing — no saving").count(), 2);
    assert!(rep.html.contains("— over failures, not a saving"), "and the headline card");
}

#[test]
fn a_control_that_passes_nothing_withholds_even_when_the_pattern_passes() {
    let (_dir, rep) = report_of(&passing(12, 12, 0), &opts());
    let m = module(&rep);
    assert_eq!(m.verdict, Verdict::Withheld, "{}", m.verdict_reason);
    assert!(m.model_too_weak);
    assert_eq!(m.few_passes, [Role::Control]);
    // The success difference is still reported, with its interval: it is the finding.
    let s = m.paired.success.as_ref().unwrap();
    assert_eq!(s.mean, 1.0);
    assert!(s.ci95.unwrap().entirely_above(0.0));
    // Twelve tasks that all differed by +1 do not rule out that more tasks would differ less:
    // the pseudo-tasks in the spread widen it to [+71.3 %, +100 %] (stats::rate_difference_ci).
    assert!(rep.markdown.contains("+100.0% [+71.3%, +100.0%] · n=12"), "{}", rep.markdown);
}

#[test]
fn few_passes_the_threshold_and_its_knob() {
    // Four control passes of twelve: too few.
    let (_dir, rep) = report_of(&passing(12, 12, 4), &opts());
    assert_eq!(module(&rep).verdict, Verdict::Withheld, "{}", module(&rep).verdict_reason);
    assert!(module(&rep).model_too_weak);

    // Five: enough, and the five pairs where both passed show the saving too → confirmed.
    let (_dir, rep) = report_of(&passing(12, 12, 5), &opts());
    let m = module(&rep);
    assert!(!m.model_too_weak && m.few_passes.is_empty());
    assert_eq!(m.paired.both_passed.pairs, 5);
    assert!(m.paired.both_passed.input_tokens.as_ref().unwrap().ci95.unwrap().entirely_below(0.0));
    assert_eq!(m.verdict, Verdict::Confirmed, "{}", m.verdict_reason);
    assert!(m.verdict_reason.contains("over the 5 pairs where both arms passed"), "{}", m.verdict_reason);
    assert!(!rep.svg.contains("spent failing") && !rep.html.contains("over failures, not a saving"));

    // The threshold is a knob of the analysis, and the method says which one was used.
    let low = Options { min_passes_for_verdict: 3, ..opts() };
    let (_dir, rep) = report_of(&passing(12, 12, 4), &low);
    assert!(!module(&rep).model_too_weak);
    assert_ne!(module(&rep).verdict, Verdict::Withheld);
    assert_eq!(rep.summary.method.min_passes_for_verdict, 3);
    assert!(rep.summary.method.verdict_rules.contains("fewer than 3 of the valid pairs"), "{}", rep.summary.method.verdict_rules);
}

#[test]
fn a_pattern_that_fails_where_the_control_passes_is_negative_not_withheld() {
    // Correctness first: a control that passes and a pattern that does not is a regression.
    let (_dir, rep) = report_of(&passing(12, 2, 12), &opts());
    let m = module(&rep);
    assert_eq!(m.verdict, Verdict::Negative, "{}", m.verdict_reason);
    assert!(!m.model_too_weak);
    assert_eq!(m.few_passes, [Role::Pattern], "its token difference is still labelled as over failures");
    assert!(rep.markdown.contains("computed over failures (pattern passed too little"), "{}", rep.markdown);

    // A pattern that passes too little without a shown regression: withheld, not confirmed.
    let (_dir, rep) = report_of(&passing(12, 4, 6), &opts());
    let m = module(&rep);
    assert!(!m.paired.success.as_ref().unwrap().ci95.unwrap().entirely_below(0.0));
    assert_eq!(m.verdict, Verdict::Withheld, "{}", m.verdict_reason);
    assert!(m.verdict_reason.starts_with("too few passes to compare: the pattern passed in 4 of 12 pairs"), "{}", m.verdict_reason);
    assert!(!m.model_too_weak, "the control passed enough: the model is not too weak, the pattern is failing");
}

#[test]
fn a_saving_made_by_failing_faster_is_no_saving() {
    // Both arms pass the same six pairs at the same cost; where both fail, the pattern gives up
    // after 100 tokens and the control spends 1000.
    let pairs: Vec<Pair> = (0..12)
        .map(|i| {
            let spread = [20, -20, 15, -15, 10, -10][i / 2];
            if i % 2 == 0 { (true, (2_000 + spread) as u64, true, 2_000) } else { (false, 100 + i as u64, false, 1_000 + 3 * i as u64) }
        })
        .collect();
    // Not the margin's test (six of twelve pairs fail in both arms: the success interval is wide).
    let (_dir, rep) = report_of(&pairs, &aggregate::Options { success_margin: 1.0, ..opts() });
    let m = module(&rep);
    assert!(m.paired.input_tokens.as_ref().unwrap().ci95.unwrap().entirely_below(0.0), "a saving over all pairs");
    let both = m.paired.both_passed.input_tokens.as_ref().unwrap();
    assert_eq!(both.n, 6);
    let ci = both.ci95.unwrap();
    assert!(ci.lo < 0.0 && ci.hi > 0.0, "none where both passed: {ci:?}");
    assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.verdict_reason);
    assert!(m.verdict_reason.contains("not shown lower over the 6 pairs where both arms passed"), "{}", m.verdict_reason);
    assert!(m.few_passes.is_empty(), "six passes each is enough to compare");
    let row = rep.markdown.lines().find(|l| l.starts_with("| input tokens / session (mean), both passed |")).unwrap();
    assert!(row.contains("· n=6"), "{row}");
}

#[test]
fn below_the_pair_minimum_a_control_that_passes_nothing_is_still_said() {
    // The run: k = 1, six pairs, nothing passed. Inconclusive for want of pairs, with the
    // notice; a handful of pairs that all passed is not "too weak".
    let (_dir, rep) = report_of(&passing(6, 0, 0), &opts());
    let m = module(&rep);
    assert_eq!(m.verdict, Verdict::Inconclusive);
    assert!(m.verdict_reason.starts_with("6 valid pairs"), "{}", m.verdict_reason);
    assert!(m.model_too_weak);
    assert!(m.notices.iter().any(|n| n.starts_with("Model too weak to show a difference")), "{:?}", m.notices);

    let (_dir, rep) = report_of(&passing(3, 3, 3), &opts());
    assert!(!module(&rep).model_too_weak && module(&rep).few_passes.is_empty());
}

#[test]
fn the_json_and_the_method_say_which_pairs_are_which() {
    let (_dir, rep) = report_of(&passing(12, 12, 5), &opts());
    let j: serde_json::Value = serde_json::from_str(&rep.json).unwrap();
    let paired = &j["models"][0]["modules"][0]["paired"];
    assert_eq!(paired["outcomes"], serde_json::json!({"both_passed": 5, "pattern_only": 7, "control_only": 0, "neither": 0}));
    assert_eq!(paired["both_passed"]["pairs"], 5);
    assert_eq!(paired["both_passed"]["input_tokens"]["n"], 5);
    assert_eq!(j["models"][0]["modules"][0]["model_too_weak"], false);
    let method = &j["method"];
    assert_eq!(method["min_passes_for_verdict"], 5);
    let rules = method["verdict_rules"].as_str().unwrap();
    assert!(rules.contains("withheld, model too weak") && rules.contains("too strong"), "{rules}");
    assert!(method["pair_sets"].as_str().unwrap().contains("both passed"));
    assert!(rep.markdown.contains("- Paired differences over two sets of pairs: \"all pairs\""), "{}", rep.markdown);
}
