//! Dev and held-out tasks are reported apart, never pooled: a verdict (and an oracle floor) per
//! split, the tasks the pattern loses on listed, and a disagreement said above the headline.

use crate::common::*;
use aggregate::Options;
use records::{Role, Split};

#[test]
fn dev_and_held_out_tasks_are_reported_apart_and_a_disagreement_comes_first() {
    let dir = tempfile::tempdir().unwrap();
    held_out_fixture(dir.path());
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    let s = &rep.summary;

    // One report per split, each over its own tasks only.
    let modules = &s.models[0].modules;
    assert_eq!(modules.len(), 2, "dev and held-out are two reports: {modules:#?}");
    let of = |split: Split| modules.iter().find(|m| m.split == split).unwrap();
    assert_eq!(of(Split::Dev).tasks.iter().map(|t| t.task.as_str()).collect::<Vec<_>>(), ["t1"]);
    assert_eq!(of(Split::HeldOut).tasks.iter().map(|t| t.task.as_str()).collect::<Vec<_>>(), ["t2"]);
    assert_eq!(of(Split::Dev).pattern.as_ref().unwrap().success.rate, Some(1.0));
    assert_eq!(of(Split::HeldOut).pattern.as_ref().unwrap().success.rate, Some(0.0));
    // The pattern lost t2 on success; it lost nothing on the dev task.
    assert!(of(Split::Dev).losing_tasks.is_empty());
    let lost = &of(Split::HeldOut).losing_tasks;
    assert_eq!((lost.len(), lost[0].task.as_str(), lost[0].on.as_str(), lost[0].pattern, lost[0].control), (1, "t2", "success", 0.0, 1.0));

    // The oracle's floors, per split: fewer calls on dev (2 vs 5), more on held-out (9 vs 5).
    let floor = |split: Split| s.oracle_floors.iter().find(|f| f.split == split).unwrap();
    assert_eq!(floor(Split::Dev).per_session_of(Role::Pattern, |p| p.calls), Ok(2.0));
    assert_eq!(floor(Split::HeldOut).per_session_of(Role::Pattern, |p| p.calls), Ok(9.0));
    // t2 costs the pattern more calls but no more estimated input (the fixture's floors).
    assert_eq!(floor(Split::HeldOut).losing_tasks.first().map(|t| t.on.as_str()), Some("calls"), "{:?}", floor(Split::HeldOut).unjudged_tasks);

    // That disagreement is said, and said before the headline.
    assert_eq!(s.split_disagreements.len(), 1, "{:#?}", s.split_disagreements);
    let d = &s.split_disagreements[0];
    assert_eq!((d.model.as_str(), d.module.as_str()), ("oracle", "m1"));
    assert!(d.message.contains("does not hold on held-out tasks"), "{}", d.message);
    let md = &rep.markdown;
    let notice = md.find("Held-out tasks disagree").expect("the disagreement is a notice");
    assert!(notice < md.find("## Headline").unwrap(), "above the headline");
    // Labels keep the splits apart in every section, and the section sets them side by side.
    assert!(md.contains("m1 · held-out"), "the held-out report is labelled");
    assert!(md.contains("## Dev and held-out tasks"));
    assert!(md.contains("| oracle · m1 | held_out | t2 | calls (oracle plan; no more est. input) | 9 | 5 |"), "{md}");
}

#[test]
fn a_run_without_held_out_tasks_reports_as_before() {
    let dir = tempfile::tempdir().unwrap();
    for role in ["pattern", "control"] {
        write(dir.path(), &record("m", "m1", role, "t1", 1, ok(records::Verdict::Passed, 100, 2)), false);
    }
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    assert_eq!(rep.summary.models[0].modules.len(), 1);
    assert!(rep.summary.split_disagreements.is_empty());
    let results = rep.markdown.split("## Method").next().unwrap();
    assert!(!results.contains("held-out") && !results.contains("held_out"), "nothing about splits where there are none");
    let json: serde_json::Value = serde_json::from_str(&rep.json).unwrap();
    assert!(json["models"][0]["modules"][0].get("split").is_none(), "a dev report keeps the bytes it had");
}

/// A task the losing rule cannot judge is said, with why, not left off the list without a word:
/// the pattern's input is 4× the control's on t1, but one control session reported no usage; t2
/// has no valid control session at all. t3 is judged and lost on tokens.
#[test]
fn a_task_that_cannot_be_judged_is_listed_with_why() {
    use records::InvalidReason;
    use records::Verdict as V;
    let dir = tempfile::tempdir().unwrap();
    let no_usage = S { input: None, cached: None, output: None, ..ok(V::Passed, 0, 2) };
    for rep in 1..=2 {
        write(dir.path(), &record("m", "m1", "pattern", "t1", rep, ok(V::Passed, 4_000, 2)), false);
        write(dir.path(), &record("m", "m1", "control", "t1", rep, if rep == 1 { no_usage } else { ok(V::Passed, 1_000, 2) }), false);
        write(dir.path(), &record("m", "m1", "pattern", "t2", rep, ok(V::Passed, 900, 2)), false);
        write(dir.path(), &record("m", "m1", "control", "t2", rep, bad(InvalidReason::ProviderError)), false);
        write(dir.path(), &record("m", "m1", "pattern", "t3", rep, ok(V::Passed, 1_500, 2)), false);
        write(dir.path(), &record("m", "m1", "control", "t3", rep, ok(V::Passed, 1_000, 2)), false);
    }
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    let m = &rep.summary.models[0].modules[0];
    assert_eq!(m.losing_tasks.iter().map(|t| (t.task.as_str(), t.on.as_str())).collect::<Vec<_>>(), [("t3", "input_tokens")]);
    let unjudged: Vec<(&str, &str)> = m.unjudged_tasks.iter().map(|t| (t.task.as_str(), t.why.as_str())).collect();
    assert_eq!(
        unjudged,
        [
            ("t1", "as often passed, but input tokens are missing in 1 of the control's 2 valid sessions: its cost cannot be compared"),
            ("t2", "no valid session in the control arm"),
        ]
    );
    let md = &rep.markdown;
    assert!(md.contains("2 tasks could not be judged by that rule, so they are on neither side of it:"), "{md}");
    assert!(md.contains("| m · m1 | dev | t2 | no valid session in the control arm |"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&rep.json).unwrap();
    assert_eq!(json["models"][0]["modules"][0]["unjudged_tasks"][1]["task"], "t2");
}
