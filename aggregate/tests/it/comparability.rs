//! Records are pooled only when their fingerprints say they are the same measurement.

use std::path::Path;

use crate::common::*;
use aggregate::AggregateError;
use aggregate::check::Fingerprints;
use records::{Role, SessionRecord};

/// Fingerprinted pairs of model "m" for t1 and t2, reps 1–3; the arms differ in their server
/// manifest, as they do by design.
fn base(dir: &Path) {
    pairs(dir, "m", &["t1", "t2"], 1..=3, arms_differ);
}

fn arms_differ(mut r: SessionRecord) -> SessionRecord {
    r.manifest_sha256 = if r.role == Role::Pattern { "aa".into() } else { "bb".into() };
    fingerprinted(r)
}

fn incomparable(dir: &Path) -> (String, Vec<String>, std::path::PathBuf, std::path::PathBuf) {
    match aggregate::report(dir, None, &opts()) {
        Err(e @ AggregateError::Incomparable { .. }) => {
            let text = e.to_string();
            assert!(text.contains("split the experiment") && text.contains("--exp-name"), "{text}");
            let AggregateError::Incomparable { scope, differences, ours, theirs } = e else { unreachable!() };
            assert!(text.contains(&ours.display().to_string()) && text.contains(&theirs.display().to_string()), "one file on each side: {text}");
            (scope, differences.iter().map(ToString::to_string).collect(), ours, theirs)
        }
        other => panic!("expected Incomparable, got {other:?}"),
    }
}

#[test]
fn like_records_pool_and_say_they_were_checked() {
    let dir = tempfile::tempdir().unwrap();
    base(dir.path());
    // Another model may differ in everything that is its own: it is never pooled with "m".
    pairs(dir.path(), "n", &["t1", "t2"], 1..=3, |r| {
        with_fingerprint(arms_differ(r), |f| {
            f.model.temperature = Some(records::Temperature::Value(1.0));
            f.base_url = Some("http://elsewhere/v1".into());
        })
    });
    let rep = aggregate::report(dir.path(), None, &opts()).unwrap();
    assert_eq!(rep.summary.run.fingerprints, Fingerprints::Checked);
    assert!(!rep.markdown.contains("could not be checked"));
    assert_eq!(rep.summary.models.len(), 2);
}

#[test]
fn temperature_0_and_1_under_one_model_id_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    base(dir.path());
    let mut r = record("m", "m1", "control", "t2", 3, ok(records::Verdict::Passed, 200, 4));
    r.model.temperature = Some(records::Temperature::Value(1.0));
    let path = write(dir.path(), &arms_differ(r), false);
    let (scope, diffs, _, theirs) = incomparable(dir.path());
    assert_eq!(scope, "records of model m");
    assert_eq!(diffs, ["temperature: 0.0 vs 1.0"]);
    assert_eq!(theirs, path);
}

#[test]
fn world_scale_1_and_2_within_a_task_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    base(dir.path());
    let mut r = record("m", "m1", "pattern", "t1", 2, ok(records::Verdict::Passed, 100, 2));
    r.world_scale = 2;
    write(dir.path(), &arms_differ(r), false);
    let (scope, diffs, ours, theirs) = incomparable(dir.path());
    assert_eq!(scope, "records of task m1/t1 (both arms)");
    assert_eq!(diffs, ["world_scale: 1 vs 2"]);
    assert!(ours.ends_with("m__m1_control/t1__rep1.json") && theirs.ends_with("m__m1_pattern/t1__rep2.json"), "{ours:?} {theirs:?}");
}

#[test]
fn a_task_that_differs_between_the_arms_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    pairs(dir.path(), "m", &["t1", "t2"], 1..=3, |mut r| {
        if r.role == Role::Pattern && r.task == "t2" {
            r.task_sha256 = "11".into();
        }
        arms_differ(r)
    });
    let (scope, diffs, ours, theirs) = incomparable(dir.path());
    assert_eq!(scope, "records of task m1/t2 (both arms)");
    assert_eq!(diffs, ["task_sha256: 00 vs 11"]);
    assert!(ours.to_string_lossy().contains("m1_control") && theirs.to_string_lossy().contains("m1_pattern"));
}

#[test]
fn a_different_build_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    base(dir.path());
    let r = record("m", "m1", "pattern", "t2", 1, ok(records::Verdict::Passed, 100, 2));
    write(dir.path(), &with_fingerprint(arms_differ(r), |f| f.build_commit = Some("deadbeef".into())), false);
    let (scope, diffs, _, _) = incomparable(dir.path());
    assert_eq!(scope, "records of model m");
    assert_eq!(diffs, ["build_commit: c0ffee vs deadbeef"]);
}

#[test]
fn one_server_under_two_manifests_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    base(dir.path());
    let mut r = record("m", "m1", "pattern", "t2", 3, ok(records::Verdict::Passed, 100, 2));
    r.manifest_sha256 = "cc".into();
    write(dir.path(), &fingerprinted(r), false);
    let (scope, diffs, _, _) = incomparable(dir.path());
    assert_eq!(scope, "records of server m1_pattern");
    assert_eq!(diffs, ["manifest_sha256: aa vs cc"]);
}

#[test]
fn old_and_new_records_are_never_pooled() {
    let dir = tempfile::tempdir().unwrap();
    base(dir.path());
    let old = record("m", "m1", "control", "t1", 3, ok(records::Verdict::Passed, 200, 4));
    let old_path = write(dir.path(), &old, false);
    let e = aggregate::report(dir.path(), None, &opts()).unwrap_err();
    let AggregateError::MixedFingerprints { ref with, ref without } = e else { panic!("{e}") };
    assert_eq!(without, &old_path);
    assert!(with.exists());
    assert!(e.to_string().contains("split the experiment"), "{e}");
}

#[test]
fn records_without_fingerprints_proceed_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    pairs(dir.path(), "m", &["t1"], 1..=2, |r| r);
    let rep = aggregate::report(dir.path(), None, &opts()).unwrap();
    assert_eq!(rep.summary.run.fingerprints, Fingerprints::Unknown);
    assert!(rep.summary.notices.iter().any(|n| n.contains("could not be checked")));
    assert!(rep.markdown.contains("> No record has a fingerprint"));
}

/// What an edited file (or a harness bug) looks like: the record's own fields say scale 2,
/// another task and no commit, its fingerprint the plan the others ran under.
fn contradicting(dir: &Path) -> std::path::PathBuf {
    let mut r = fingerprinted(arms_differ(record("m", "m1", "pattern", "t1", 2, ok(records::Verdict::Passed, 100, 2))));
    (r.world_scale, r.task_sha256, r.git_commit) = (2, "11".into(), None);
    write(dir, &r, false)
}

fn self_contradictory(e: AggregateError) -> (std::path::PathBuf, Vec<String>, String) {
    let text = e.to_string();
    match e {
        AggregateError::SelfContradictory { path, contradictions } => (path, contradictions.iter().map(ToString::to_string).collect(), text),
        other => panic!("expected SelfContradictory, got {other:?}"),
    }
}

#[test]
fn a_record_that_contradicts_its_own_fingerprint_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    base(dir.path());
    let path = contradicting(dir.path());
    let (named, fields, text) = self_contradictory(aggregate::report(dir.path(), None, &opts()).unwrap_err());
    assert_eq!(named, path);
    assert_eq!(
        fields,
        [
            "world_scale: the record says 2, its fingerprint 1",
            "task_sha256: the record says 11, its fingerprint 00",
            "git_commit: the record says unset, its fingerprint's build_commit c0ffee"
        ]
    );
    assert!(text.contains(&path.display().to_string()) && text.contains("not data") && text.contains("rerun that session"), "{text}");

    // A temperature that disagrees, in a replaced attempt (counted by the attrition), too.
    let dir = tempfile::tempdir().unwrap();
    base(dir.path());
    let mut r = fingerprinted(arms_differ(record("m", "m1", "control", "t2", 1, bad(records::InvalidReason::Interrupted))));
    r.model.temperature = Some(records::Temperature::Value(1.0));
    let path = write_superseded(dir.path(), &r, 1, "rerun on resume");
    let (named, fields, _) = self_contradictory(aggregate::report(dir.path(), None, &opts()).unwrap_err());
    assert_eq!((named, fields), (path, vec!["model.temperature: the record says 1.0, its fingerprint's temperature 0.0".to_string()]));

    // A fingerprint edited after it was hashed.
    let dir = tempfile::tempdir().unwrap();
    base(dir.path());
    let mut r = fingerprinted(arms_differ(record("m", "m1", "control", "t2", 2, ok(records::Verdict::Passed, 200, 4))));
    r.fingerprint.as_mut().unwrap().preflight_skipped = true;
    let path = write(dir.path(), &r, false);
    let (named, fields, _) = self_contradictory(aggregate::report(dir.path(), None, &opts()).unwrap_err());
    assert_eq!(named, path);
    assert!(fields.len() == 1 && fields[0].starts_with("fingerprint_sha256: the record says "), "{fields:?}");
}

#[test]
fn merge_and_compare_refuse_a_self_contradictory_record_too() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    pairs(&a, "m", &["t1"], 1..=2, |mut r| {
        r.experiment = "a".into();
        arms_differ(r)
    });
    pairs(&b, "m", &["t2"], 1..=2, |mut r| {
        r.experiment = "b".into();
        arms_differ(r)
    });
    let mut r = fingerprinted(arms_differ(record("m", "m1", "pattern", "t2", 2, ok(records::Verdict::Passed, 100, 2))));
    (r.experiment, r.world_scale) = ("b".into(), 2);
    let path = write(&b, &r, false);
    let (named, ..) = self_contradictory(aggregate::merge_experiments(&[a.clone(), b.clone()]).unwrap_err());
    assert_eq!(named, path);
    let (named, ..) = self_contradictory(aggregate::compare::compare(&a, &b, &[], &opts()).unwrap_err());
    assert_eq!(named, path);
}

/// Outcomes of two versions of a task's verifier, or of two graders, are never pooled; one
/// version of each (or none recorded anywhere) is reported as usual.
#[test]
fn outcomes_of_different_verifiers_or_graders_are_never_pooled() {
    let same = tempfile::tempdir().unwrap();
    pairs(same.path(), "m", &["t1", "t2"], 1..=3, graded("v1", "g1"));
    aggregate::report(same.path(), None, &opts()).expect("one version of each pools");

    for (what, second) in [("task m1/t1's verifier", graded("v2", "g1")), ("the grader", graded("v1", "g2"))] {
        let dir = tempfile::tempdir().unwrap();
        pairs(dir.path(), "m", &["t1", "t2"], 1..=2, graded("v1", "g1"));
        pairs(dir.path(), "m", &["t1"], 3..=3, second);
        match aggregate::report(dir.path(), None, &opts()) {
            Err(e @ AggregateError::MixedGrading { .. }) => {
                let text = e.to_string();
                assert!(text.contains(&format!("under {what} ")) && text.contains("never pooled") && text.contains("pipeline regrade"), "{text}");
            }
            other => panic!("expected MixedGrading for {what}, got {other:?}"),
        }
    }
}

fn graded(verifier: &'static str, grader: &'static str) -> impl Fn(SessionRecord) -> SessionRecord {
    move |mut r: SessionRecord| {
        if let Some(v) = r.verifier.as_mut() {
            v.graded = Some(records::Graded { verifier_sha256: verifier.into(), grader_sha256: grader.into(), regraded_at: None, judge: None });
        }
        fingerprinted(arms_differ_plain(r))
    }
}

fn arms_differ_plain(mut r: SessionRecord) -> SessionRecord {
    r.manifest_sha256 = if r.role == Role::Pattern { "aa".into() } else { "bb".into() };
    r
}
