//! What a report reads: exactly one experiment's records in the pipeline's layout, each session
//! once, replaced attempts counted apart.

use crate::common::*;
use aggregate::AggregateError;
use records::{InvalidReason, Verdict as V};

#[test]
fn spec_run_files_and_report_outputs_are_not_records() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_manifest(d, &manifest(&["m"], &["t1"], 2));
    pairs(d, "m", &["t1"], 1..=2, |r| r);
    // Gate results (valid JSON, not records), the lock, and a previous report's outputs.
    std::fs::write(d.join("check.json"), r#"{"gates": [{"id": "G1", "ok": true}]}"#).unwrap();
    std::fs::write(d.join("check-20260101T000000Z.json"), r#"{"gates": []}"#).unwrap();
    std::fs::write(d.join(".lock"), "4242").unwrap();
    for out in ["summary.json", "report.md", "report.html", "chart.svg", "chart.png"] {
        std::fs::write(d.join(out), "not a record").unwrap();
    }
    // Something the layout does not explain: left unread, but said.
    std::fs::write(d.join("notes.json"), "my notes").unwrap();

    let rep = aggregate::report(d, None, &opts()).unwrap();
    let s = &rep.summary;
    assert_eq!(s.attrition.iter().map(|r| r.attempted).sum::<usize>(), 4, "only the four records are read");
    assert_eq!(s.run.ignored, ["notes.json"]);
    assert!(rep.markdown.contains("left unread: notes.json"), "{}", rep.markdown);

    // Writing the report into the folder and reading it again changes nothing.
    rep.write(d).unwrap();
    let again = aggregate::report(d, None, &opts()).unwrap();
    assert_eq!(again.markdown, rep.markdown);
}

#[test]
fn a_record_that_does_not_parse_is_still_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    pairs(dir.path(), "m", &["t1"], 1..=2, |r| r);
    let bad = dir.path().join("m__m1_control/t1__rep9.json");
    std::fs::write(&bad, "{}").unwrap();
    let e = aggregate::report(dir.path(), None, &opts()).unwrap_err();
    assert!(matches!(e, AggregateError::MalformedRecord { ref path, .. } if *path == bad), "{e}");
    assert!(e.to_string().contains("t1__rep9.json"), "{e}");
}

#[test]
fn the_results_folder_itself_is_not_one_experiment() {
    let results = tempfile::tempdir().unwrap();
    let r = results.path();
    // One experiment with a manifest, one from before manifests (record folders only).
    write_manifest(&r.join("exp-new"), &manifest(&["m"], &["t1"], 1));
    pairs(&r.join("exp-new"), "m", &["t1"], 1..=1, |r| r);
    pairs(&r.join("exp-old"), "m", &["t1"], 1..=1, |r| r);
    std::fs::create_dir_all(r.join("scratch")).unwrap();

    let e = aggregate::report(r, None, &opts()).unwrap_err();
    let AggregateError::SeveralExperiments { ref names, .. } = e else { panic!("{e}") };
    assert_eq!(names, &["exp-new", "exp-old"]);
    let text = e.to_string();
    assert!(text.contains("exp-new, exp-old") && text.contains("--exp-name NAME"), "{text}");

    // Each of them on its own is fine.
    aggregate::report(&r.join("exp-new"), None, &opts()).unwrap();
    aggregate::report(&r.join("exp-old"), None, &opts()).unwrap();

    // A folder with neither a manifest nor record folders.
    let e = aggregate::report(&r.join("scratch"), None, &opts()).unwrap_err();
    assert!(matches!(e, AggregateError::NotAnExperiment { .. }), "{e}");
    assert!(e.to_string().contains("not an experiment folder"), "{e}");
}

#[test]
fn a_session_recorded_twice_is_an_error_naming_both_files() {
    // A copy under another name in the same folder.
    let dir = tempfile::tempdir().unwrap();
    pairs(dir.path(), "m", &["t1"], 1..=2, |r| r);
    let original = dir.path().join("m__m1_pattern/t1__rep1.json");
    let copy = dir.path().join("m__m1_pattern/t1__rep1 (copy).json");
    std::fs::copy(&original, &copy).unwrap();
    let e = aggregate::report(dir.path(), None, &opts()).unwrap_err();
    let AggregateError::DuplicateRecord { ref first, ref second, .. } = e else { panic!("{e}") };
    assert_eq!((first, second), (&copy, &original), "both files are named");
    let text = e.to_string();
    assert!(text.contains("model m, server m1_pattern, task t1, rep 1"), "{text}");

    // The same session in two folders.
    let dir = tempfile::tempdir().unwrap();
    pairs(dir.path(), "m", &["t1"], 1..=2, |r| r);
    let r = record("m", "m1", "control", "t1", 2, ok(V::Failed, 10, 1));
    write_at(&dir.path().join("m-again__m1_control/t1__rep2.json"), &r, false);
    let e = aggregate::report(dir.path(), None, &opts()).unwrap_err();
    assert!(matches!(e, AggregateError::DuplicateRecord { .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains("m-again__m1_control") && text.contains("m__m1_control"), "{text}");
}

#[test]
fn replaced_attempts_are_counted_and_never_scored() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    pairs(d, "m", &["t1"], 1..=2, |r| r);
    // The pattern's rep 1 was first an invalid attempt (--retry-invalid); the control's rep 2 was
    // interrupted twice before the current record.
    write_superseded(d, &record("m", "m1", "pattern", "t1", 1, bad(InvalidReason::ProviderError)), 1, "retry-invalid");
    let interrupted = record("m", "m1", "control", "t1", 2, bad(InvalidReason::Interrupted));
    write_superseded(d, &interrupted, 1, "resume");
    write_superseded(d, &interrupted, 2, "resume");

    let rep = aggregate::report(d, None, &opts()).unwrap();
    let s = &rep.summary;
    let row = |server: &str| s.attrition.iter().find(|r| r.server == server).unwrap();
    let (p, c) = (row("m1_pattern"), row("m1_control"));
    assert_eq!((p.attempts, p.replaced, p.attempted, p.valid), (3, 1, 2, 2));
    assert_eq!((c.attempts, c.replaced, c.attempted, c.valid), (4, 2, 2, 2));
    assert!(p.invalid.is_empty() && c.invalid.is_empty(), "replaced attempts are not scored");
    let m = &s.models[0].modules[0];
    assert_eq!(m.paired.pairs_used, 2);
    assert_eq!(m.pattern.as_ref().unwrap().success.n, 2);

    assert_eq!(s.run.superseded, 3);
    assert_eq!(s.run.superseded_reasons.get("retry-invalid (was invalid: provider_error)"), Some(&1));
    assert_eq!(s.run.superseded_reasons.get("resume (was invalid: interrupted)"), Some(&2));
    assert!(rep.markdown.contains("3 sessions were rerun"), "{}", rep.markdown);
    assert!(rep.markdown.contains("resume (was invalid: interrupted): 2"));
    assert!(rep.html.contains("Replaced attempts (3), not scored"));
}

#[test]
fn a_replaced_record_left_among_the_scored_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    pairs(dir.path(), "m", &["t1"], 1..=1, |r| r);
    let mut r = record("m", "m1", "pattern", "t1", 2, ok(V::Passed, 1, 1));
    r.superseded = Some(records::session::Superseded { at: r.ended_at, reason: "retry-invalid".into() });
    let path = write(dir.path(), &r, false);
    let e = aggregate::report(dir.path(), None, &opts()).unwrap_err();
    assert!(matches!(e, AggregateError::MisplacedSuperseded { path: ref p } if *p == path), "{e}");
    assert!(e.to_string().contains("superseded/"), "{e}");
}

/// What a run that stopped between writing the replaced copy and removing the original left
/// before superseding was a rename: the same attempt twice, once scored and once replaced.
#[test]
fn a_replaced_copy_of_a_scored_record_is_refused_not_counted_twice() {
    let dir = tempfile::tempdir().unwrap();
    pairs(dir.path(), "m", &["t1"], 1..=2, |r| r);
    let mut r = record("m", "m1", "control", "t1", 1, bad(InvalidReason::ProviderError));
    r.attempt = Some(1);
    let path = write(dir.path(), &r, true);
    let copy = write_superseded(dir.path(), &r, 1, "--retry-invalid: the earlier attempt was provider_error");
    let e = aggregate::report(dir.path(), None, &opts()).unwrap_err();
    assert!(matches!(e, AggregateError::SupersededCopy { ref record, copy: ref c } if *record == path && *c == copy), "{e}");
    assert!(e.to_string().contains("delete the copy"), "{e}");

    // A replaced attempt that differs from the current record (the rerun happened) is counted.
    let mut rerun = record("m", "m1", "control", "t1", 1, ok(V::Passed, 200, 4));
    rerun.attempt = Some(2);
    write(dir.path(), &rerun, true);
    let rep = aggregate::report(dir.path(), None, &opts()).unwrap();
    assert_eq!(rep.summary.run.superseded, 1);
}

#[test]
fn records_of_another_experiment_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    pairs(dir.path(), "m", &["t1"], 1..=1, |r| r);
    let mut r = record("m", "m1", "pattern", "t2", 1, ok(V::Passed, 1, 1));
    r.experiment = "other".into();
    let path = write(dir.path(), &r, false);
    let e = aggregate::report(dir.path(), None, &opts()).unwrap_err();
    assert!(matches!(e, AggregateError::MixedExperiments { ref theirs_path, .. } if *theirs_path == path), "{e}");
    assert!(e.to_string().contains("\"other\""), "{e}");
}

#[test]
fn folders_with_identical_fingerprints_merge_and_unlike_ones_do_not() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("exp-a"), root.path().join("exp-b"));
    let named = |name: &'static str| {
        move |mut r: records::SessionRecord| {
            r.experiment = name.into();
            fingerprinted(r)
        }
    };
    pairs(&a, "m", &["t1"], 1..=2, named("exp-a"));
    pairs(&b, "m", &["t2"], 1..=2, named("exp-b"));
    let merged = aggregate::merge_experiments(&[a.clone(), b.clone()]).unwrap();
    let rep = aggregate::report_from(&merged, None, &opts()).unwrap();
    assert_eq!(rep.summary.experiments, ["exp-a", "exp-b"]);
    assert_eq!(rep.summary.models[0].modules[0].paired.pairs_used, 4, "pooled, as one experiment");

    // A part that ran at another temperature is refused, naming a file of each part.
    let c = root.path().join("exp-c");
    pairs(&c, "m", &["t3"], 1..=2, |r| with_fingerprint(named("exp-c")(r), |f| f.model.temperature = Some(records::Temperature::Value(1.0))));
    let e = aggregate::merge_experiments(&[a.clone(), c.clone()]).unwrap_err();
    assert!(matches!(e, AggregateError::Incomparable { .. }), "{e}");
    assert!(e.to_string().contains("exp-a") && e.to_string().contains("exp-c"), "{e}");

    // The same session in two parts is a duplicate.
    let e = aggregate::merge_experiments(&[a.clone(), a.clone()]).unwrap_err();
    assert!(matches!(e, AggregateError::DuplicateRecord { .. }), "{e}");

    // Records without fingerprints cannot show they belong together.
    let old = root.path().join("exp-old");
    pairs(&old, "m", &["t4"], 1..=1, |r| r);
    let e = aggregate::merge_experiments(&[a, old]).unwrap_err();
    assert!(matches!(e, AggregateError::Unmergeable { .. }), "{e}");
    assert!(e.to_string().contains("no fingerprints"), "{e}");
}
