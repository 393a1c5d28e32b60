//! `pipeline --… --models oracle`: records, pairing, resume after `kill -9`, and refusing to
//! start without credentials. Runs the real binary.

use crate::common;

use crate::common::records;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn pipeline() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pipeline"));
    c.env_remove("DATABASE_URL").env("RUST_LOG", "warn").current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

#[test]
fn oracle_run_writes_paired_records_and_resume_skips_them() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline()
        .args(["--module", "tool_orchestrator", "--models", "oracle", "--k", "2", "--exp-name", "e", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let exp = tmp.path().join("e");
    // The suggested next step names the binary as it was invoked (this test's path to it, as
    // `cargo run` passes its own), never a bare `pipeline` that may not be on PATH.
    let log = String::from_utf8_lossy(&out.stderr);
    let next = log.lines().find_map(|l| l.strip_prefix("next: ")).unwrap_or_else(|| panic!("no next step: {log}")).to_owned();
    assert_eq!(next, format!("{} aggregate --result-dir {}", env!("CARGO_BIN_EXE_pipeline"), exp.display()));
    let recs = records(&exp);
    // Every task of the module (its eight and its families' sizes) × 2 arms × k 2.
    let tasks = common::task_count("tool_orchestrator");
    assert_eq!(recs.len(), tasks * 2 * 2);
    for r in &recs {
        assert_eq!(r["validity"]["class"], "valid", "{r}");
        assert_eq!(r["verifier"]["verdict"], "passed", "{r}");
        assert_eq!(r["model"]["id"], "oracle");
        assert!(r["totals"]["input_tokens"].is_null(), "the oracle has no usage, and it is not zero");
        assert!(r["oracle"]["estimate_method"].as_str().unwrap().starts_with("estimate"));
        assert_eq!(r["manifest_sha256"].as_str().unwrap().len(), 64);
        let transcript =
            exp.join(format!("oracle__{}", r["server"].as_str().unwrap())).join(format!("{}__rep{}.transcript.jsonl", r["task"].as_str().unwrap(), r["rep"]));
        assert!(transcript.is_file(), "no transcript beside {}", transcript.display());
        // The oracle has no side effect beyond its own footprint: the first rep of a task that
        // changes the world is the footprint, and the second is held to it.
        let collateral = &r["verifier"]["collateral"];
        assert_eq!(collateral["writes"].as_array().map(Vec::len), Some(0), "{} on {} rep {}: {collateral}", r["task"], r["server"], r["rep"]);
        let changed = !r["verifier"]["changed_tables"].as_array().unwrap().is_empty();
        assert_eq!(collateral["footprint"], if changed { "oracle session" } else { "no change" }, "{collateral}");
    }
    // Each (task, rep) pair has both arms, one first and one second, alternating between pairs.
    let mut firsts = std::collections::BTreeMap::new();
    for r in &recs {
        if r["arm_position"] == 1 {
            firsts.insert((r["task"].as_str().unwrap().to_owned(), r["rep"].as_u64().unwrap()), r["server"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(firsts.len(), tasks * 2);
    let pattern_first = firsts.values().filter(|s| *s == "orchestrator").count();
    assert_eq!(pattern_first, tasks, "ABBA: each arm goes first in half the pairs");
    assert!(exp.join("manifest.json").is_file());

    let again = pipeline()
        .args(["--module", "tool_orchestrator", "--models", "oracle", "--k", "2", "--exp-name", "e", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(again.status.success());
    let log = String::from_utf8_lossy(&again.stderr);
    assert!(log.contains(&format!("{} already recorded, 0 to run", tasks * 4)), "{log}");
    assert_eq!(records(&exp).len(), tasks * 4);

    // The report reads only these records and puts attrition before anything else. It runs as
    // the run printed it: pasted into a shell.
    let report = Command::new("sh").arg("-c").arg(&next).env_remove("DATABASE_URL").current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let md = String::from_utf8_lossy(&report.stdout);
    let attrition = md.find("Attrition").expect("an attrition section");
    let floors = md.find("structural floors").expect("an oracle floors section");
    assert!(attrition < floors, "attrition comes first");
    for file in ["report.md", "summary.json", "chart.png", "chart.svg", "report.html"] {
        assert!(exp.join(file).metadata().map(|m| m.len() > 0).unwrap_or(false), "{file} missing or empty");
    }
    assert_eq!(records(&exp).len(), tasks * 4, "summary.json is not mistaken for a session record");
}

/// The oracle's answers are right by construction, so over the whole suite every session must
/// come out `correct` and every entity its answer names grounded (or denied by the answer
/// itself): anything else means the outcome classes or the grounding extractor are wrong.
#[test]
fn every_oracle_session_of_the_suite_is_correct_and_grounded() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline().args(["--all", "--models", "oracle", "--k", "1", "--exp-name", "o", "--results-dir"]).arg(tmp.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&tmp.path().join("o"));
    assert!(recs.len() > 100, "the whole suite ran: {}", recs.len());
    let mut grounded = 0;
    for r in recs {
        let rec: ::records::SessionRecord = serde_json::from_value(r).unwrap();
        let class = aggregate::metrics::classes::classify(&rec);
        assert_eq!(class, Some((aggregate::metrics::classes::OutcomeClass::Correct, None)), "{} via {}", rec.task, rec.server);
        let g = rec.verifier.as_ref().and_then(|v| v.grounding.as_ref()).unwrap_or_else(|| panic!("{}: no grounding read", rec.task));
        for x in &g.references {
            assert!(
                matches!(x.status, ::records::Groundedness::Grounded | ::records::Groundedness::Denied),
                "{} via {}: {:?} is {:?} ({:?})",
                rec.task,
                rec.server,
                x.text,
                x.status,
                x.detail
            );
        }
        grounded += g.count(::records::Groundedness::Grounded);
    }
    // Not vacuous: the suite's answers name hundreds of entities.
    assert!(grounded > 300, "{grounded} grounded references");
}

#[test]
fn resume_after_kill_9_completes_without_duplicates() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["--all", "--models", "oracle", "--k", "1", "--exp-name", "killed", "--results-dir"];
    let exp = tmp.path().join("killed");
    let mut child = pipeline().args(args).arg(tmp.path()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while records(&exp).len() < 10 {
        assert!(Instant::now() < deadline, "no progress");
        assert!(child.try_wait().unwrap().is_none(), "the run finished before it could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // What the killed run recorded, byte for byte (records are written whole or not at all).
    let before = record_files(&exp);
    let partial = before.len();
    assert_eq!(partial, records(&exp).len());
    // Both arms of every task of every module, one rep (80 for the five shipped modules).
    let expected = 2 * servers::registry::modules().iter().map(|m| tasks::load_module(&tasks::default_tasks_dir(), m).unwrap().len()).sum::<usize>();
    assert!(partial >= 10 && partial < expected, "{partial}");

    let out = pipeline().args(args).arg(tmp.path()).output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    // The resume skipped exactly what was recorded before the kill and ran only the rest...
    assert!(log.contains(&format!("{expected} sessions planned, {partial} already recorded, {} to run", expected - partial)), "{log}");
    let after = record_files(&exp);
    for (path, bytes) in &before {
        assert_eq!(after.get(path), Some(bytes), "{} was rerun or rewritten by the resume", path.display());
    }
    // ...and no session ran twice: nothing was replaced, every record is its session's first attempt.
    let all = records(&exp);
    assert_eq!(all.len(), expected, "modules × 2 arms × tasks × 1 rep");
    assert!(common::all_files(&exp).iter().all(|(p, _)| !p.to_string_lossy().contains("/superseded/")), "a record was replaced");
    assert!(all.iter().all(|r| r["attempt"] == 1), "a session ran twice");
    assert!(all.iter().all(|r| r["validity"]["class"] == "valid" && r["verifier"]["verdict"] == "passed"));
}

/// Every session record under `exp` (not transcripts, manifests or reports), with its bytes.
fn record_files(exp: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    common::all_files(exp)
        .into_iter()
        .filter(|(p, _)| p.file_name().is_some_and(|n| n.to_string_lossy().contains("__rep") && n.to_string_lossy().ends_with(".json")))
        .collect()
}

/// A run stopped at any step of replacing a record leaves the session in one place: the report
/// counts it once or refuses the folder by name, never counts it twice; a resume finishes the move.
#[test]
fn a_replacement_stopped_at_any_step_never_counts_a_session_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--models", "oracle", "--exp-name", "s", "--results-dir"];
    let run = || pipeline().args(args).arg(tmp.path()).output().unwrap();
    assert!(run().status.success());
    let exp = tmp.path().join("s");
    let path = exp.join("oracle__orchestrator").join("lena_goes_on_leave__rep1.json");
    let mut steps = 0;
    let mut look = || {
        steps += 1;
        match aggregate::load_experiment(&exp).and_then(|e| aggregate::report_from(&e, None, &aggregate::Options::default())) {
            Err(e) => assert!(e.to_string().contains("lena_goes_on_leave__rep1"), "after step {steps}, a refusal names the record: {e}"),
            Ok(rep) => {
                let row = rep.summary.attrition.iter().find(|r| r.server == "orchestrator").unwrap();
                assert_eq!(row.attempts, 1, "after step {steps}, one session is counted {} times", row.attempts);
            }
        }
    };
    pipeline::experiment::supersede_observed(&path, "test", &mut look).unwrap();
    assert!(steps >= 2, "{steps}");
    assert!(!path.exists() && exp.join("oracle__orchestrator/superseded/lena_goes_on_leave__rep1.attempt1.json").is_file());

    // Stopped right after marking the other arm's record in place: the resume reruns that
    // session and completes the move; the report then counts one replaced attempt per arm.
    let other = exp.join("oracle__wrapper").join("lena_goes_on_leave__rep1.json");
    let mut r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&other).unwrap()).unwrap();
    r["superseded"] = serde_json::json!({"at": "2026-12-01T00:00:00Z", "reason": "rerun on resume: the earlier attempt was interrupted"});
    std::fs::write(&other, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    let out = run();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && log.contains("0 already recorded, 2 to run"), "{log}");
    let moved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(exp.join("oracle__wrapper/superseded/lena_goes_on_leave__rep1.attempt1.json")).unwrap()).unwrap();
    assert_eq!(moved["superseded"]["reason"], "rerun on resume: the earlier attempt was interrupted", "the mark it was left with stands");
    let fresh: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&other).unwrap()).unwrap();
    assert!(fresh["superseded"].is_null() && fresh["attempt"] == 2, "{fresh}");
    let rep = aggregate::report(&exp, None, &aggregate::Options::default()).unwrap();
    assert_eq!(rep.summary.run.superseded, 2);
    assert!(rep.summary.attrition.iter().all(|r| r.attempts == 2 && r.attempted == 1), "{:?}", rep.summary.attrition);
}

#[test]
fn model_run_without_credentials_refuses_before_starting() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline()
        .env_remove("OPENAI_API_KEY")
        .env("RUST_BACKTRACE", "1")
        .args(["--mcp", "orchestrator", "--k", "3", "--models", "some-model", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("OPENAI_API_KEY") && err.contains("--models oracle") && err.contains("Nothing was started"), "{err}");
    assert!(err.starts_with("error: ") && err.trim_end().lines().count() == 1, "one clean message, whatever RUST_BACKTRACE says: {err}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing may be written");
}

/// The manifest and the report say where the worlds lived: an embedded cluster of the run's own,
/// or the server `DATABASE_URL` names — its address, never its user or password.
#[tokio::test]
async fn the_manifest_says_which_postgres_the_run_used() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |exp: &str, database_url: Option<&str>| {
        let mut c = pipeline();
        c.args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--models", "oracle", "--k", "1", "--exp-name", exp, "--results-dir"])
            .arg(tmp.path());
        if let Some(url) = database_url {
            c.env("DATABASE_URL", url);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        common::manifest(&tmp.path().join(exp))["postgres"].as_str().unwrap().to_owned()
    };
    assert_eq!(run("embedded", None), "an embedded cluster of the run's own (removed at exit)");

    // A server of the user's: an embedded cluster started here stands in for it, reached with the
    // password in its URL, which nothing the run writes may repeat.
    let source = backend::postgres::PostgresSource::embedded().await.unwrap();
    let url = source.admin_url();
    let password = url.strip_prefix("postgres://postgres:").and_then(|r| r.split_once('@')).map(|(p, _)| p.to_owned()).unwrap_or_else(|| panic!("{url}"));
    assert_eq!(password.len(), 32, "{url}");
    let said = run("external", Some(&url));
    assert!(said.starts_with("DATABASE_URL postgres://localhost:") && !said.contains(&password) && !said.contains("postgres@"), "{said}");
    let out = pipeline().args(["aggregate", "--result-dir"]).arg(tmp.path().join("external")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(tmp.path().join("external/report.md")).unwrap();
    assert!(md.contains(&format!("| Postgres | {said} |")), "the provenance says it");
    source.shutdown().unwrap();
}
