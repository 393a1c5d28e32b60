//! `--until-decided` through the real binary with the simulated agent: pairs drawn in a
//! reproducible order until the verdict is reached, the rest never drawn, a resume that draws
//! nothing once decided, a report that reads the same stop from the records, and the designs a
//! sequential run could not stand behind refused before anything is written.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use crate::common::{manifest, pipeline, records};

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

const SEQ: &[&str] = &["--module", "tool_orchestrator", "--models", "sim:pattern_worse", "--split", "dev", "--until-decided", "--max-pairs", "60"];

fn run(results: &Path, exp: &str, args: &[&str]) -> Output {
    pipeline().args(args).args(["--exp-name", exp, "--results-dir"]).arg(results).output().unwrap()
}

#[test]
fn a_sequential_run_stops_when_decided_resumes_without_drawing_and_reports_the_same_stop() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = tmp.path().join("seq");
    let out = run(tmp.path(), "seq", &[SEQ, &["--jobs", "2"]].concat());
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    // "sim:pattern_worse · tool_orchestrator: decided at pair N (M valid): negative — …"
    let line = t.lines().find(|l| l.starts_with("sequential: ") && l.contains("decided at pair")).unwrap_or_else(|| panic!("no decision: {t}"));
    let at: u32 = line.split("decided at pair ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap();
    assert!(line.contains(": negative —"), "the planted harm is found: {line}");
    assert!(t.contains("session(s) up to --max-pairs were not drawn"), "{t}");

    let recs = records(&exp);
    let draws: BTreeSet<u64> = recs.iter().map(|r| r["draw"].as_u64().expect("every record has its draw")).collect();
    // Every pair up to the stop, plus at most the one the second worker was running; no more: a
    // pair is opened only within --jobs draws of the first one still running, however long that
    // one takes.
    assert!(draws.len() as u32 >= at && draws.len() as u32 <= at + 1, "{} pairs drawn, decided at {at}", draws.len());
    assert_eq!(draws, (1..=draws.len() as u64).collect(), "draws are a prefix of the order");
    assert_eq!(recs.len(), 2 * draws.len(), "both arms of every drawn pair");
    // A task drawn again is its next rep.
    for r in &recs {
        let same_task_before = recs.iter().filter(|o| o["server"] == r["server"] && o["task"] == r["task"] && o["draw"].as_u64() < r["draw"].as_u64()).count();
        assert_eq!(r["rep"].as_u64().unwrap() as usize, same_task_before + 1, "{}", r["task"]);
    }
    let m = manifest(&exp);
    assert_eq!(m["sequential"]["max_pairs"], 60);
    assert_eq!(recs[0]["fingerprint"]["design"], "sequential-v1");

    // The same command again: decided from the records, nothing drawn.
    let out = run(tmp.path(), "seq", SEQ);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains(" 0 run: "), "{t}");
    assert_eq!(records(&exp).len(), recs.len());

    // The report reads the same stop from the records, and gives no fixed-sample interval.
    let out = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(exp.join("summary.json")).unwrap()).unwrap();
    let module = &summary["models"][0]["modules"][0];
    assert_eq!(module["sequential"]["decided_at"], at);
    assert_eq!(module["sequential"]["ended"], "decided");
    assert_eq!(module["verdict"], "negative");
    assert!(module["paired"]["success"]["ci95"].is_null());
    let md = std::fs::read_to_string(exp.join("report.md")).unwrap();
    assert!(md.contains(&format!("Sequential experiment: decided at pair {at}")), "{md}");

    // The draw order is the plan's, not the timing's: a second experiment draws the same tasks.
    let again = run(tmp.path(), "seq2", SEQ);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let order = |exp: &Path| {
        let mut v: Vec<(u64, String)> = records(exp).iter().map(|r| (r["draw"].as_u64().unwrap(), r["task"].as_str().unwrap().to_owned())).collect();
        v.sort();
        v.dedup();
        v
    };
    let (a, b) = (order(&exp), order(&tmp.path().join("seq2")));
    let n = a.len().min(b.len());
    assert_eq!(a[..n], b[..n]);
}

#[test]
fn designs_a_sequential_run_cannot_stand_behind_are_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let base = &SEQ[..SEQ.len() - 2];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            [base, &["--max-pairs", "5"]].concat(),
            "--max-pairs 5 can never reach a verdict: even if every pair favoured one arm, no verdict comes before 10 valid pairs",
        ),
        ([SEQ, &["--session-mode", "warm"]].concat(), "drop --session-mode warm"),
        ([SEQ, &["--min-pairs", "61"]].concat(), "--min-pairs 61 is above --max-pairs 60"),
        ([SEQ, &["--shard", "1/2"]].concat(), "run it unsharded"),
        ([SEQ, &["--k", "3"]].concat(), "cannot be used with"),
        (vec!["--module", "tool_orchestrator", "--models", "sim:pattern_worse", "--max-pairs", "60"], "--until-decided"),
        ([base].concat(), "--max-pairs"),
    ];
    for (args, says) in cases {
        let out = run(tmp.path(), "refused", &args);
        let t = text(&out);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {t}");
        assert!(t.contains(says), "{args:?} should say {says:?}: {t}");
        assert!(!t.contains("stack backtrace") && !t.contains("panicked"), "{t}");
    }
    let out = pipeline()
        .args([
            "sweep",
            "--module",
            "tool_orchestrator",
            "--models",
            "sim:pattern_worse",
            "--scale",
            "1,2",
            "--until-decided",
            "--max-pairs",
            "60",
            "--results-dir",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(text(&out).contains("a sweep does not run --until-decided yet"), "{}", text(&out));
    assert!(!tmp.path().join("refused").exists(), "nothing was written");
    // A cap too small to confirm, but large enough to find a harm: run, with a note.
    let out = run(tmp.path(), "small", &[base, &["--max-pairs", "12"]].concat());
    assert!(text(&out).contains("can stop on a negative verdict but never confirm a saving"), "{}", text(&out));
}
