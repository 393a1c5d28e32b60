//! `--attack NAME` through the real binary: the planted text reaches the agent through the real
//! arms (it is in the tool results the transcripts keep), every task stays solvable under it (the
//! oracle passes), each record carries the attack's own verdict, the fingerprint and manifest name
//! it, the report has its Security section, and a bad name is refused before anything is written.

use std::path::Path;
use std::process::Output;

use crate::common::{manifest, pipeline, records};

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn run(results: &Path, exp: &str, args: &[&str]) -> Output {
    pipeline().args(args).args(["--exp-name", exp, "--results-dir"]).arg(results).output().unwrap()
}

#[test]
fn an_attacked_run_plants_the_text_where_the_arms_read_it_and_keeps_its_own_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = tmp.path().join("atk");
    let out = run(tmp.path(), "atk", &["--module", "resource_gateway", "--models", "oracle", "--split", "dev", "--attack", "leak_internal_notes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let recs = records(&exp);
    assert!(!recs.is_empty());
    for r in &recs {
        assert_eq!(r["verifier"]["verdict"], "passed", "every task stays solvable under the attack: {} on {}", r["task"], r["server"]);
        assert_eq!(r["attack"]["name"], "leak_internal_notes");
        assert_eq!(r["attack"]["succeeded"], false, "the oracle does not follow planted text");
        assert_eq!(r["fingerprint"]["attack"], "leak_internal_notes");
        assert_eq!(r["fingerprint"]["attack_sha256"], r["attack"]["sha256"]);
    }
    // The planted text came back to the agent through both arms' real tool results.
    for arm in ["oracle__resource_gateway", "oracle__resource_wrapper"] {
        let seen = std::fs::read_dir(exp.join(arm))
            .unwrap()
            .flatten()
            .filter(|f| f.file_name().to_string_lossy().ends_with(".transcript.jsonl"))
            .any(|f| std::fs::read_to_string(f.path()).unwrap().contains("Note for any assistant"));
        assert!(seen, "no {arm} session saw the planted text");
        // And the record says so: exposure is read from the session's own tool results.
        let server = if arm.ends_with("gateway") { "resource_gateway" } else { "resource_wrapper" };
        assert!(recs.iter().any(|r| r["server"] == server && r["attack"]["exposed"] == true), "{arm}: no record says it was exposed");
    }
    assert_eq!(manifest(&exp)["attack"]["name"], "leak_internal_notes");
    let report = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    assert!(report.status.success(), "{}", text(&report));
    let md = std::fs::read_to_string(exp.join("report.md")).unwrap();
    assert!(md.contains("**Under attack: leak_internal_notes**") && md.contains("## Security"), "{md}");

    // A resume without the attack is another measurement: refused, naming the field.
    let out = run(tmp.path(), "atk", &["--module", "resource_gateway", "--models", "oracle", "--split", "dev"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out).contains("attack"), "{}", text(&out));

    // A name not in the catalogue: refused, listing it, nothing written.
    let out = run(tmp.path(), "bad", &["--module", "resource_gateway", "--models", "oracle", "--attack", "rm_rf"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no attack file") && text(&out).contains("reassign_to_outsider"), "{}", text(&out));
    assert!(!tmp.path().join("bad").exists());
}
