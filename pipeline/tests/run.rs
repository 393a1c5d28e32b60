//! `pipeline --… --models oracle`: records, pairing, resume after `kill -9`, and refusing to
//! start without credentials. Runs the real binary.

mod common;

use common::records;
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
    let partial = records(&exp).len();
    // Both arms of every task of every module, one rep (80 for the five shipped modules).
    let expected = 2 * servers::registry::modules().iter().map(|m| tasks::load_module(&tasks::default_tasks_dir(), m).unwrap().len()).sum::<usize>();
    assert!(partial >= 10 && partial < expected, "{partial}");

    let out = pipeline().args(args).arg(tmp.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let all = records(&exp);
    assert_eq!(all.len(), expected, "modules × 2 arms × tasks × 1 rep");
    let mut keys: Vec<String> = all.iter().map(|r| format!("{}/{}/{}", r["server"], r["task"], r["rep"])).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), expected, "no session recorded twice");
    assert!(all.iter().all(|r| r["validity"]["class"] == "valid" && r["verifier"]["verdict"] == "passed"));
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
