//! A worker makes its next session ready while one runs, and verifies the one before: each on a
//! world of the worker's own (three in turn). An arm therefore sees several backends in turn,
//! even at `--jobs 1` — and one only where sessions are not made ready ahead (warm conversations;
//! a budget or a sequential stop, which the oracle does not take).

use super::*;

/// The backend URL each session of an arm got, in the order they started: the arm is the bench's
/// own `domain_wrapper` behind a shell that writes down its `BACKEND_URL` first; three sessions
/// of it alone, at `--jobs 1` (in the order their arms started, which for two made ready at once
/// is either).
fn backends_seen(extra: &[&str]) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("backends.log");
    let command = format!(
        "[\"sh\", \"-c\", \"echo $BACKEND_URL >> {log}; exec {pipeline} serve domain_wrapper --backend-url $BACKEND_URL\"]",
        log = log.display(),
        pipeline = env!("CARGO_BIN_EXE_pipeline")
    );
    arm_dir(tmp.path(), "logged", &borrowing(&arm_toml("logged", "domain_adapter", "stdio", &command), "domain_wrapper"));
    let results = tmp.path().join("results");
    let out = pipeline()
        .arg("--arms-dir")
        .arg(tmp.path())
        .args(["--mcp", "logged", "--models", "oracle", "--tasks", "which_wen", "--k", "3", "--jobs", "1"])
        .args(extra)
        .args(["--exp-name", "ahead", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let recs = records(&results.join("ahead"));
    assert_eq!(recs.len(), 3, "{}", text(&out));
    assert!(recs.iter().all(|r| r["validity"]["class"] == "valid" && r["verifier"]["verdict"] == "passed"), "every session valid and passed: {recs:?}");
    // Listing the arm before the sessions (the run, its gates) starts it too: only the sessions'
    // starts are on a world of a worker, the listing's on none.
    let lines: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().filter(|l| !l.is_empty()).map(str::to_owned).collect();
    assert!(lines.len() >= 3, "{lines:?}");
    lines[lines.len() - 3..].to_vec()
}

#[test]
fn a_worker_runs_its_cold_sessions_on_its_three_worlds_in_turn_and_warm_ones_on_one() {
    let distinct = |urls: &[String]| urls.iter().collect::<std::collections::BTreeSet<_>>().len();
    // One session made ready while another runs and a third is verified: three worlds in turn.
    let ahead = backends_seen(&[]);
    assert_eq!(distinct(&ahead), 3, "three sessions in a row, each on another of the worker's worlds: {ahead:?}");
    // Warm conversations (here one task each) are not made ready ahead: one world.
    let warm = backends_seen(&["--session-mode", "warm"]);
    assert_eq!(distinct(&warm), 1, "in warm mode, no session is made ready ahead: {warm:?}");
}
