//! What the run planned and how it went: the planned k, records outside the plan, the flags a
//! run leaves on its sessions, a stopped run and a skipped preflight.

use std::path::Path;

use crate::common::*;
use aggregate::AggregateError;
use aggregate::metrics::Verdict;
use records::{Role, Verdict as V};

/// k = 3 of t1–t4. t1 complete; t2 pattern passed 2 reps, rep 3 missing; t3 pattern failed 2
/// reps, rep 3 missing; t4 never ran.
fn partial(dir: &Path) {
    write_manifest(dir, &manifest(&["m"], &["t1", "t2", "t3", "t4"], 3));
    pairs(dir, "m", &["t1"], 1..=3, |r| r);
    for rep in 1..=3 {
        write(dir, &record("m", "m1", "control", "t2", rep, ok(V::Passed, 200, 4)), false);
        write(dir, &record("m", "m1", "control", "t3", rep, ok(V::Passed, 200, 4)), false);
    }
    for rep in 1..=2 {
        write(dir, &record("m", "m1", "pattern", "t2", rep, ok(V::Passed, 100, 2)), false);
        write(dir, &record("m", "m1", "pattern", "t3", rep, ok(V::Failed, 100, 2)), false);
    }
}

#[test]
fn the_planned_k_makes_missing_reps_unknown() {
    let dir = tempfile::tempdir().unwrap();
    partial(dir.path());
    let rep = aggregate::report(dir.path(), None, &opts()).unwrap();
    let s = &rep.summary;
    assert_eq!(s.run.planned_k, Some(3));
    let m = &s.models[0].modules[0];
    let task = |id: &str| m.tasks.iter().find(|t| t.task == id).unwrap();

    let t1 = &task("t1").pattern;
    assert_eq!((t1.k, t1.planned_k, t1.pass_at_k, t1.pass_all_k), (3, Some(3), Some(true), Some(true)));
    let t2 = &task("t2").pattern;
    assert_eq!((t2.k, t2.pass_at_k, t2.pass_all_k), (2, Some(true), None), "2 of 3 passed, 1 missing: pass^k is unknown, never true");
    let t3 = &task("t3").pattern;
    assert_eq!((t3.pass_at_k, t3.pass_all_k), (None, Some(false)), "none passed and a rep is missing: pass@k unknown");
    let t4 = task("t4");
    assert_eq!((t4.pattern.k, t4.pattern.pass_at_k, t4.pattern.pass_all_k), (0, None, None), "a planned task without records is listed, unknown");
    assert_eq!(task("t2").control.pass_all_k, Some(true));

    // Nulls in JSON, "unknown" with a note in Markdown.
    let json: serde_json::Value = serde_json::from_str(&rep.json).unwrap();
    let t2_json = &json["models"][0]["modules"][0]["tasks"][1];
    assert_eq!(t2_json["task"], "t2");
    assert!(t2_json["pattern"]["pass_all_k"].is_null());
    assert!(rep.markdown.contains("| t2 (k=3 planned) | 2/2 valid passed (1 missing) | yes | unknown |"), "{}", rep.markdown);
    assert!(rep.markdown.contains("| t4 (k=3 planned) | none of 3 planned recorded | unknown | unknown |"));
    assert!(rep.markdown.contains("unknown: some of the k reps are invalid or missing"));

    // The plan shows in the attrition table and the pairs.
    let row = s.attrition.iter().find(|r| r.role == Role::Pattern).unwrap();
    assert_eq!((row.planned, row.attempted), (Some(12), 7));
    assert_eq!((m.paired.pairs_planned, m.paired.pairs_seen), (Some(12), 9));
    assert!(!s.notices.iter().any(|n| n.contains("No manifest.json")));
}

/// Records copied out of an experiment: the plan is gone, but t1 shows the pattern ran 3 reps.
#[test]
fn without_a_manifest_k_is_the_most_reps_of_an_arm_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    partial(dir.path());
    std::fs::remove_file(dir.path().join("manifest.json")).unwrap();
    let rep = aggregate::report(dir.path(), None, &opts()).unwrap();
    let m = &rep.summary.models[0].modules[0];
    let task = |id: &str| m.tasks.iter().find(|t| t.task == id).unwrap();
    let t2 = &task("t2").pattern;
    assert_eq!((t2.k, t2.planned_k, t2.pass_at_k, t2.pass_all_k), (2, None, Some(true), None), "2 of t1's 3 reps: pass^k unknown, never true");
    let t3 = &task("t3").pattern;
    assert_eq!((t3.pass_at_k, t3.pass_all_k), (None, Some(false)), "none passed and a rep is missing: pass@k unknown");
    let t1 = &task("t1").pattern;
    assert_eq!((t1.k, t1.pass_all_k), (3, Some(true)), "as many reps as the arm's most: known");
    assert_eq!(task("t2").control.pass_all_k, Some(true));
    assert_eq!(m.tasks.len(), 3, "an unplanned, unrecorded task is unknown to the report");
    assert_eq!(rep.summary.run.planned_k, None);
    assert!(rep.markdown.contains("| t2 (k=3) | 2/2 valid passed (1 missing) | yes | unknown |"), "{}", rep.markdown);
    assert!(rep.markdown.contains("> No manifest.json: the planned k is unknown, so k is taken as the most reps any task of an arm has"), "{}", rep.markdown);
    assert!(rep.markdown.contains("pass@k and pass^k use k = the most reps any task of an arm has"));
}

#[test]
fn a_record_outside_the_plan_is_refused() {
    for (task, rep, says) in [("t1", 4, "rep 4 is outside the planned reps 1..=3"), ("t9", 1, "task m1/t9 is not a planned task")] {
        let dir = tempfile::tempdir().unwrap();
        partial(dir.path());
        let path = write(dir.path(), &record("m", "m1", "pattern", task, rep, ok(V::Passed, 100, 2)), false);
        let e = aggregate::report(dir.path(), None, &opts()).unwrap_err();
        assert!(matches!(e, AggregateError::OutsidePlan { path: ref p, .. } if *p == path), "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
}

/// 12 pairs (t1, t2 × 6 reps) in `module` whose pattern saves tokens; `as_text` of the pattern
/// sessions wrote their calls as text, and one control session's output did not parse.
fn flagged(dir: &Path, module: &str, as_text: u32) {
    let mut n = 0;
    for task in ["t1", "t2"] {
        for rep in 1..=6 {
            let mut p = record("m", module, "pattern", task, rep, ok(V::Passed, 700 + rep as u64, 2));
            n += 1;
            if n <= as_text {
                p.tool_call_as_text = true;
            }
            let mut c = record("m", module, "control", task, rep, ok(V::Passed, 1000 + 3 * rep as u64, 3));
            c.unparseable_output = task == "t1" && rep == 1;
            write(dir, &p, false);
            write(dir, &c, false);
        }
    }
}

#[test]
fn flags_are_counted_and_calls_as_text_withhold_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    flagged(dir.path(), "m1", 7);
    flagged(dir.path(), "m2", 6);
    // The margin is not what this test is about: 100 points leaves "not shown worse" as the rule.
    let rep = aggregate::report(dir.path(), None, &aggregate::Options { success_margin: 1.0, ..opts() }).unwrap();
    let s = &rep.summary;
    let (m1, m2) = (&s.models[0].modules[0], &s.models[0].modules[1]);

    let p = m1.pattern.as_ref().unwrap();
    let c = m1.control.as_ref().unwrap();
    assert_eq!((p.tool_call_as_text, p.unparseable_output, c.tool_call_as_text, c.unparseable_output), (7, 0, 0, 1));
    let row = |server: &str| s.attrition.iter().find(|r| r.server == server).unwrap();
    assert_eq!((row("m1_pattern").tool_call_as_text, row("m1_control").unparseable_output), (7, 1));

    assert_eq!(m1.verdict, Verdict::Withheld, "{}", m1.verdict_reason);
    let notice = "pattern arm: the endpoint is probably not parsing tool calls (7 of 12 sessions wrote their calls as text); see the preflight";
    assert!(m1.notices.iter().any(|n| n == notice), "{:?}", m1.notices);
    assert!(rep.markdown.contains("### m1 — verdict: **withheld**"));
    assert!(rep.markdown.contains(notice));
    assert!(rep.json.contains("\"verdict\": \"withheld\""));
    assert!(s.method.verdict_rules.contains("withheld"));

    // Exactly half is not "more than half": the verdict stands.
    assert_eq!(m2.verdict, Verdict::Confirmed, "{}", m2.verdict_reason);
    assert!(m2.notices.iter().all(|n| !n.contains("not parsing tool calls")));
}

#[test]
fn a_stopped_run_and_a_skipped_preflight_come_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = manifest(&["m"], &["t1"], 2);
    m.stopped = Some(stop("quota", "You exceeded your current quota"));
    m.preflight_skipped = true;
    write_manifest(dir.path(), &m);
    pairs(dir.path(), "m", &["t1"], 1..=1, |r| r);
    let rep = aggregate::report(dir.path(), None, &opts()).unwrap();
    let s = &rep.summary;
    assert_eq!(s.run.stopped.as_ref().map(|x| x.kind.as_str()), Some("quota"));
    assert!(s.run.preflight_skipped);
    let md = &rep.markdown;
    let first = md.lines().skip(1).find(|l| !l.is_empty()).unwrap();
    assert_eq!(
        first,
        "> **The run stopped early** (quota, at 2027-01-15T08:01:40+00:00): You exceeded your current quota. Sessions it never reached are missing, not failed; resume the run to complete it.",
        "the stop is said first"
    );
    let preflight = md.find("> **The endpoint preflight was skipped**").unwrap();
    assert!(md.find(first).unwrap() < preflight && preflight < md.find("## Attrition").unwrap());
}

#[test]
fn a_preflight_skipped_in_the_records_is_said_too() {
    let dir = tempfile::tempdir().unwrap();
    pairs(dir.path(), "m", &["t1"], 1..=2, |r| with_fingerprint(r, |f| f.preflight_skipped = true));
    let rep = aggregate::report(dir.path(), None, &opts()).unwrap();
    assert!(rep.summary.run.preflight_skipped);
    assert!(rep.markdown.find("> **The endpoint preflight was skipped**").unwrap() < rep.markdown.find("## Attrition").unwrap());
}
