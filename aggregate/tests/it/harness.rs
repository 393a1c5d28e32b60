//! The harness's share of a model session, read from the records: only sessions whose records
//! separate the harness's time from the model's count.

use crate::common::*;
use records::{HarnessTimings, TurnRecord, Usage, Verdict as V};

fn timed(mut r: records::SessionRecord, harness_ms: f64, model_ms: f64, retries: u32) -> records::SessionRecord {
    r.provider_retries = Some(retries);
    r.turn_records = vec![TurnRecord {
        index: 1,
        usage: Usage::default(),
        retries,
        latency_ms: model_ms,
        at_ms: None,
        finish_reason: None,
        tool_calls: 0,
        extras: Default::default(),
    }];
    // The fixture's one tool call takes 1 ms; reset, verify and write are part of the harness.
    r.harness = HarnessTimings { reset_ms: 2.0, session_ms: model_ms + 1.0 + (harness_ms - 4.0), verify_ms: 1.0, write_ms: 1.0, server_start_ms: None };
    r
}

#[test]
fn the_share_is_over_sessions_whose_records_separate_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Four clean sessions (harness 10, 20, 30, 40 ms against 990 ms of model) and one with a retry.
    for (rep, h) in [(1, 10.0), (2, 20.0), (3, 30.0), (4, 40.0)] {
        write(dir, &timed(record("m", "mod", "pattern", "t1", rep, ok(V::Passed, 100, 1)), h, 990.0, 0), true);
    }
    write(dir, &timed(record("m", "mod", "control", "t1", 1, ok(V::Passed, 100, 1)), 5000.0, 990.0, 2), true);
    let summary = aggregate::report(dir, None, &opts()).unwrap().summary;
    let h = &summary.run.harness;
    assert_eq!((h.sessions, h.left_out), (4, 1), "the session with a retry is left out: its waits look like harness time");
    assert_eq!(h.p50_ms, Some(20.0), "the lower median of 10, 20, 30, 40");
    assert_eq!(h.max_ms, Some(40.0));
    let whole = |harness: f64| harness + 990.0 + 1.0;
    assert!((h.share_p50.unwrap() - 20.0 / whole(20.0)).abs() < 1e-12);
    assert!((h.share_max.unwrap() - 40.0 / whole(40.0)).abs() < 1e-12);
    let md = aggregate::report(dir, None, &opts()).unwrap().markdown;
    assert!(md.contains("p50 20.0 ms per model session (1.98% of the session"), "{md}");
}

/// Starting the arm's server is the arm's cost: inside the session's wall time, outside the
/// harness's own, and reported as a figure of its own.
#[test]
fn server_start_up_is_reported_apart_and_not_counted_as_the_harnesss() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // The same 20 ms of harness in each; the servers took 5 s, 3 s and 40 ms to start.
    for (rep, start) in [(1, 5000.0), (2, 3000.0), (3, 40.0)] {
        let mut r = timed(record("m", "mod", "pattern", "t1", rep, ok(V::Passed, 100, 1)), 20.0, 990.0, 0);
        r.harness.session_ms += start;
        r.harness.server_start_ms = Some(start);
        write(dir, &r, true);
    }
    let rep = aggregate::report(dir, None, &opts()).unwrap();
    let h = &rep.summary.run.harness;
    assert_eq!((h.p50_ms, h.max_ms), (Some(20.0), Some(20.0)), "the start-up is not the harness's");
    assert_eq!((h.server_start_p50_ms, h.server_start_max_ms, h.server_start_sessions), (Some(3000.0), Some(5000.0), 3));
    assert!(rep.markdown.contains("| server start-up | p50 3000.0 ms, max 5000.0 ms per model session that started its arm's server"), "{}", rep.markdown);
}

#[test]
fn oracle_sessions_have_no_model_time_to_compare_with() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), &timed(record("oracle", "mod", "pattern", "t1", 1, ok(V::Passed, 0, 0)), 20.0, 0.0, 0), true);
    let summary = aggregate::report(tmp.path(), None, &opts()).unwrap().summary;
    assert_eq!(summary.run.harness.sessions, 0);
    assert_eq!(summary.run.harness.p50_ms, None, "not measured, never zero");
}
