//! summary.json against its JSON Schema (`aggregate/summary.schema.json`), checked by an
//! independent validator — Python's `jsonschema` (Draft 2020-12, formats checked) from the venv
//! `.ci/test-tools` installs — on the real output of several fixture experiments, and on
//! altered copies the schema must reject.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use records::{InvalidReason, Verdict as V};

fn python() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-tools/venv/bin/python");
    assert!(p.is_file(), "{} is missing: run .ci/test-tools (it installs the pinned Python validators the tests use)", p.display());
    p
}

const VALIDATE: &str = r#"
import json, sys
from jsonschema import Draft202012Validator, FormatChecker
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
validator = Draft202012Validator(schema, format_checker=FormatChecker())
bad = 0
for path in sys.argv[2:]:
    for e in validator.iter_errors(json.load(open(path))):
        bad += 1
        print(path, "/" + "/".join(map(str, e.absolute_path)), e.message[:300])
sys.exit(1 if bad else 0)
"#;

/// Runs the validator over `files`; (passed, what it printed).
fn validate(files: &[PathBuf]) -> (bool, String) {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("summary.schema.json");
    let out = Command::new(python()).arg("-c").arg(VALIDATE).arg(&schema).args(files).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!text.contains("Traceback") || text.contains("ValidationError"), "the validator itself failed: {text}");
    (out.status.success(), text)
}

/// A planned, fingerprinted run that stopped: invalid sessions, a replaced attempt, a
/// preflight, a spec check, prices, and an oracle beside the model.
fn planned(dir: &Path) {
    let mut m = manifest(&["m", "oracle"], &["t1", "t2"], 3);
    m.command = vec!["pipeline".into(), "run".into(), "spec.toml".into(), "--header".into(), "X-Key=<redacted>".into()];
    m.git_commit = Some("c0ffee".into());
    m.git_dirty = Some(false);
    m.models[0].seed = Some(u64::MAX);
    m.stopped = Some(stop("quota", "You exceeded your current quota"));
    m.check = Some(serde_json::json!({"status": "VALID", "spec_path": "spec.toml", "spec_sha256": "ab12", "preflight": {"m": {"passed": true, "checks": [
        {"name": "endpoint", "passed": true, "detail": "answered"}, {"name": "model", "passed": true, "detail": "served"},
        {"name": "native_tool_calls", "passed": true, "detail": "called preflight_echo"}]}}}));
    write_manifest(dir, &m);
    pairs(dir, "m", &["t1", "t2"], 1..=2, fingerprinted);
    write(dir, &fingerprinted(record("m", "m1", "pattern", "t1", 3, bad(InvalidReason::ProviderError))), true);
    write(dir, &fingerprinted(record("m", "m1", "control", "t1", 3, ok(V::Failed, 300, 6))), true);
    write_superseded(dir, &fingerprinted(record("m", "m1", "control", "t2", 1, bad(InvalidReason::Interrupted))), 1, "resume");
    for role in ["pattern", "control"] {
        for rep in 1..=2 {
            let s = S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) };
            write(dir, &fingerprinted(record("oracle", "m1", role, "t1", rep, s)), true);
        }
    }
}

/// What the aggregate writes for `dir`, as a file.
fn summary_of(dir: &Path, prices: Option<&aggregate::PriceTable>, opts: &aggregate::Options) -> PathBuf {
    let rep = aggregate::report(dir, prices, opts).unwrap();
    let out = dir.join("summary.json");
    std::fs::write(&out, &rep.json).unwrap();
    out
}

#[test]
fn real_summaries_match_the_schema() {
    let root = tempfile::tempdir().unwrap();
    let d = |n: &str| root.path().join(n);

    planned(&d("planned"));
    let prices = aggregate::PriceTable::parse("[models.m]\ninput = 1.0\noutput = 2.0\n", Path::new("p.toml")).unwrap();
    // Records from before fingerprints and manifests, with null usage.
    pairs(&d("old"), "m", &["t1"], 1..=2, |mut r| {
        if r.rep == 2 {
            r.totals = Default::default();
        }
        r
    });
    // A model too weak to show a difference: the verdict withheld.
    pairs(&d("weak"), "m", &["t1", "t2"], 1..=6, |mut r| {
        r.verifier.as_mut().unwrap().verdict = V::Failed;
        r
    });
    // An oracle-only run (the main job's shape), an even number of reps per task.
    for rep in 1..=2 {
        for role in ["pattern", "control"] {
            let s = S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) };
            write(&d("oracle"), &record("oracle", "m1", role, "t1", rep, s), true);
        }
    }
    // Dev and held-out tasks, reported apart, with the tasks the pattern loses on.
    held_out_fixture(&d("held_out"));
    // Classes and references a model judged (`pipeline regrade --judge`).
    let agreement = |items, asked| records::JudgeAgreement {
        items,
        accuracy: Some(0.5),
        kappa: Some(0.25),
        unanswered: 1,
        asked,
        asked_accuracy: (asked > 0).then_some(0.4),
        asked_kappa: None,
    };
    let judge = records::JudgeInfo {
        model: "judge".into(),
        base_url: "http://127.0.0.1:8080/v1".into(),
        prompt_sha256: "ab".repeat(32),
        class: agreement(59, 30),
        grounding: agreement(175, 175),
    };
    pairs(&d("judged"), "m", &["t1", "t2"], 1..=2, |mut r| {
        let v = r.verifier.as_mut().unwrap();
        v.graded = Some(records::Graded { verifier_sha256: "v".into(), grader_sha256: "g".into(), regraded_at: Some(r.ended_at), judge: Some(judge.clone()) });
        v.class = Some(records::ClassNote { class: records::OutcomeClass::Correct, checks_held: None, decided_by: "the verifier passed".into() });
        r
    });
    // A sequential experiment, decided.
    sequential_fixture(&d("sequential"), 100, 50, |_| (true, true, 100, 200));
    let files = [
        summary_of(&d("planned"), Some(&prices), &opts()),
        summary_of(&d("old"), None, &opts()),
        summary_of(&d("weak"), None, &opts()),
        summary_of(&d("oracle"), None, &opts()),
        summary_of(&d("held_out"), None, &opts()),
        summary_of(&d("judged"), None, &opts()),
        summary_of(&d("sequential"), None, &opts()),
        {
            // Under an attack.
            let out = d("attack.json");
            std::fs::write(&out, crate::definitions::attack_report().1.json).unwrap();
            out
        },
    ];
    let (ok, text) = validate(&files);
    assert!(ok, "{text}");

    // What the schema is for: the seeds are strings, the counts integers, nothing undocumented.
    let planned: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(planned["method"]["bootstrap_seed"], "7882267113055153763");
    assert_eq!(planned["provenance"]["models"][0]["seed"], u64::MAX.to_string());
    assert_eq!(planned["provenance"]["spec"]["sha256"], "ab12");
    assert_eq!(planned["provenance"]["preflight"]["status"], "passed");
    let oracle: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&files[3]).unwrap()).unwrap();
    let row = &oracle["oracle_floors"][0]["rows"][0];
    assert!(row["calls"].is_u64() && row["result_bytes"].is_u64(), "counts are integers: {row}");
    assert!(serde_json::to_string(&oracle).unwrap().contains("\"calls\":2,"), "not 2.0");
    let judged: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&files[5]).unwrap()).unwrap();
    assert_eq!(judged["method"]["judge"]["class"]["asked"], 30, "{}", judged["method"]);
}

#[test]
fn the_schema_rejects_what_it_rules_out() {
    let dir = tempfile::tempdir().unwrap();
    planned(dir.path());
    let good: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(summary_of(dir.path(), None, &opts())).unwrap()).unwrap();
    let altered = |f: &dyn Fn(&mut serde_json::Value), name: &str| {
        let mut v = good.clone();
        f(&mut v);
        let p = dir.path().join(name);
        std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
        p
    };
    // The unchanged summary passes: each case below fails for its one change, not for
    // something already wrong in the base.
    let (ok, text) = validate(&[altered(&|_| {}, "base.json")]);
    assert!(ok, "the unaltered base fails the schema: {text}");
    let cases = [
        altered(&|v| v["method"]["bootstrap_seed"] = serde_json::json!(7_882_267_113_055_153_763u64), "seed-number.json"),
        // What a float median of two counts gave (JSON Schema reads 5.0 as an integer; the text
        // check above covers that spelling).
        altered(&|v| v["oracle_floors"][0]["rows"][0]["calls"] = serde_json::json!(5.5), "fractional-count.json"),
        altered(&|v| v["attrition"][0]["valid"] = serde_json::json!(-1), "negative.json"),
        altered(&|v| v["models"][0]["modules"][0]["verdict"] = serde_json::json!("probably"), "verdict.json"),
        altered(&|v| v["run"]["undocumented"] = serde_json::json!(true), "extra-field.json"),
        altered(&|v| v["provenance"]["started_at"] = serde_json::json!("yesterday"), "date.json"),
        // An arm is an arm or null, so the validator names the arm, not the field.
        altered(&|v| v["models"][0]["modules"][0]["pattern"]["grounding"]["grounded_share"] = serde_json::json!(1.5), "share.json"),
    ];
    // Each is rejected at the place it changed (the validator prints the failing instance's path).
    let at = [
        "/method/bootstrap_seed",
        "/oracle_floors/0/rows/0/calls",
        "/attrition/0/valid",
        "/models/0/modules/0/verdict",
        "/run",
        "/provenance/started_at",
        "/models/0/modules/0/pattern",
    ];
    for (case, at) in cases.iter().zip(at) {
        let (ok, text) = validate(std::slice::from_ref(case));
        assert!(!ok, "{} passed the schema: {text}", case.display());
        assert!(text.lines().all(|l| l.split(' ').nth(1) == Some(at)), "{} rejected elsewhere than {at}: {text}", case.display());
    }
}
