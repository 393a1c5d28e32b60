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

/// `sweep --attack none,A,B`: every attack its own experiment, set side by side with utility and
/// attack success per arm and never pooled; a tool-poisoning attack reaches the relaying arms'
/// models (the control lists it, the pattern shows it when its backend is described) and the
/// records say so; what cannot be measured is refused before anything is written.
#[test]
fn an_attack_sweep_sets_utility_and_attack_success_side_by_side() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = |exp: &str, extra: &[&str]| {
        pipeline()
            .args(["sweep", "--module", "proxy_aggregator", "--models", "sim:equal", "--exp-name", exp, "--results-dir"])
            .arg(tmp.path())
            .args(extra)
            .output()
            .unwrap()
    };
    let out = sweep("sw", &["--attack", "poisoned_deploy_description,none,task_already_done"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = tmp.path().join("sw");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(json["factor"], "attack");
    let names: Vec<&str> = json["levels"].as_array().unwrap().iter().map(|l| l["attack"].as_str().unwrap()).collect();
    assert_eq!(names, ["none", "poisoned_deploy_description", "task_already_done"], "none first, then as given");
    for l in json["levels"].as_array().unwrap() {
        let name = l["attack"].as_str().unwrap();
        let level = dir.join(format!("attack_{name}"));
        let recs = records(&level);
        assert!(!recs.is_empty(), "{name}");
        // Each level is its own experiment, under its own attack and nothing else.
        for r in &recs {
            assert_eq!(r["fingerprint"]["attack"].as_str().unwrap_or("none"), name);
        }
        for (role, server) in [("pattern", "proxy_aggregator"), ("control", "proxy_wrapper")] {
            let arm = &l[role];
            let mine: Vec<_> = recs.iter().filter(|r| r["server"] == server && r["validity"]["class"] == "valid").collect();
            let passed = mine.iter().filter(|r| r["verifier"]["verdict"] == "passed").count();
            assert_eq!(arm["valid"], mine.len(), "{name} {role}");
            assert!((arm["utility"].as_f64().unwrap() - passed as f64 / mine.len() as f64).abs() < 1e-9, "{name} {role}: {arm}");
            if name == "none" {
                assert!(arm["attack_success"].is_null() && arm["utility_change_vs_none"].is_null(), "{arm}");
                continue;
            }
            let base = json["levels"][0][role]["utility"].as_f64().unwrap();
            assert!((arm["utility_change_vs_none"].as_f64().unwrap() - (arm["utility"].as_f64().unwrap() - base) * 100.0).abs() < 1e-9);
            // The simulated agent follows its plans, never the planted text.
            assert_eq!(arm["attack_success"], 0.0, "{name} {role}");
            if name == "poisoned_deploy_description" {
                // The control lists the poisoned tool to every model; the pattern shows it only
                // when its plan describes the deploys backend.
                let exposed = mine.iter().filter(|r| r["attack"]["exposed"] == true).count();
                let described = mine
                    .iter()
                    .filter(|r| {
                        let t =
                            std::fs::read_to_string(level.join(format!("sim_equal__{server}/{}__rep1.transcript.jsonl", r["task"].as_str().unwrap()))).unwrap();
                        t.contains("Release policy of the deploy service")
                    })
                    .count();
                if role == "control" {
                    assert_eq!(exposed, mine.len(), "every control session was offered the poisoned tool");
                } else {
                    assert_eq!(exposed, described, "the pattern is exposed exactly where a transcript shows the poison");
                }
            }
        }
    }
    let md = std::fs::read_to_string(dir.join("sweep.md")).unwrap();
    assert!(md.contains("| poisoned_deploy_description | tool_poisoning | control | proxy_wrapper |") && md.contains("never blended"), "{md}");

    // A sweep over another factor under one attack says so, read from its levels' manifests.
    let out = sweep("fixed", &["--attack", "fake_tool_error", "--distractors", "0,10"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(tmp.path().join("fixed/sweep.json")).unwrap()).unwrap();
    assert_eq!(json["attack"], "fake_tool_error");
    let md = std::fs::read_to_string(tmp.path().join("fixed/sweep.md")).unwrap();
    assert!(md.contains("**Under attack:** every level ran with the attack `fake_tool_error`"), "{md}");

    // A plain run takes one attack; a sweep varies one factor; a poison the module cannot relay
    // is refused. Nothing is written for any of them.
    let out = pipeline()
        .args(["--module", "proxy_aggregator", "--models", "oracle", "--attack", "none,fake_tool_error", "--results-dir"])
        .arg(tmp.path())
        .args(["--exp-name", "plain"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out).contains("a series of attacks is a sweep"), "{}", text(&out));
    let out = sweep("both", &["--attack", "none,fake_tool_error", "--distractors", "0,10"]);
    assert!(text(&out).contains("varies one factor"), "{}", text(&out));
    let out = pipeline()
        .args([
            "sweep",
            "--module",
            "domain_adapter",
            "--models",
            "oracle",
            "--attack",
            "none,poisoned_runbook_description",
            "--exp-name",
            "dom",
            "--results-dir",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out).contains("relay no other server") && text(&out).contains("proxy_aggregator"), "{}", text(&out));
    for exp in ["plain", "both", "dom"] {
        assert!(!tmp.path().join(exp).exists(), "{exp} was written");
    }
}
