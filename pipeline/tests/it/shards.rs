//! Shards of one plan, run as the engines run them — N local processes with a Kubernetes Indexed
//! Job's or a Slurm array's variables set — and merged: the merge of the oracle suite in three
//! shards reports what one machine's run of the same plan reports, and a merge missing a shard
//! is refused, naming what is missing. Runs the real binary.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{pipeline, records};

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// The figures of a summary: everything but where and when it was made.
fn figures(s: &serde_json::Value) -> serde_json::Value {
    let mut s = s.clone();
    for key in ["experiments", "provenance", "run"] {
        s.as_object_mut().unwrap().remove(key);
    }
    s
}

/// A difference (`path: a vs b`) in an oracle floor's bytes or the estimates made from them, by at
/// most 1 % (a timestamp's fractional digits are up to 7 bytes of a result of a few hundred).
fn clock_bytes(d: &str) -> bool {
    const BYTES: &[&str] = &["result_bytes", "estimated_tokens", "estimated_input_tokens", "total_estimated_tokens", "total_estimated_input_tokens"];
    let Some((path, values)) = d.split_once(": ") else { return false };
    let Some((a, b)) = values.split_once(" vs ") else { return false };
    let (Ok(a), Ok(b)) = (a.parse::<f64>(), b.parse::<f64>()) else { return false };
    path.starts_with("/oracle_floors/") && path.split('/').any(|seg| BYTES.contains(&seg)) && (a - b).abs() <= 0.01 * a.abs().max(b.abs())
}

/// The paths (`/oracle_floors/0/rows/3/result_bytes`) at which `a` and `b` differ, with both values.
fn differences(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Vec<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().flat_map(|k| differences(x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null), &format!("{at}/{k}"))).collect()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().flat_map(|(i, (p, q))| differences(p, q, &format!("{at}/{i}"))).collect()
        }
        _ if a == b => vec![],
        _ => vec![format!("{at}: {a} vs {b}")],
    }
}

#[test]
fn three_kubernetes_shards_merge_into_the_single_machine_report() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = ["--all", "--models", "oracle", "--k", "1"];
    let whole = pipeline().args(plan).args(["--exp-name", "whole", "--results-dir"]).arg(tmp.path()).output().unwrap();
    assert_eq!(whole.status.code(), Some(0), "{}", text(&whole));
    let whole_n = records(&tmp.path().join("whole")).len();

    // The same command line on every index, as an Indexed Job runs it, three at once.
    let children: Vec<std::process::Child> = (0..3)
        .map(|i| {
            let mut c: Command = pipeline();
            c.env("JOB_COMPLETION_INDEX", i.to_string())
                .args(plan)
                .args(["--shard-count", "3", "--exp-name", "s", "--results-dir"])
                .arg(tmp.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    let mut sizes = Vec::new();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(0), "shard {}: {t}", i + 1);
        assert!(t.contains(&format!("shard {}/3 of the plan (from kubernetes)", i + 1)), "{t}");
        let dir = tmp.path().join(format!("s_shard{}of3", i + 1));
        let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
        let n = records(&dir).len();
        assert_eq!(manifest["shard"], serde_json::json!({"index": i + 1, "count": 3, "source": "kubernetes", "sessions": n}));
        sizes.push(n);
    }
    assert_eq!(sizes.iter().sum::<usize>(), whole_n, "every session in exactly one shard: {sizes:?}");
    assert!(sizes.iter().all(|&n| n.abs_diff(whole_n / 3) <= 2), "even shards: {sizes:?}");

    let merged_dir = tmp.path().join("merged");
    let out = pipeline()
        .args(["aggregate", "--merge", "s_shard1of3,s_shard2of3,s_shard3of3", "--out"])
        .arg(&merged_dir)
        .arg("--results-dir")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rep = pipeline().args(["aggregate", "--result-dir"]).arg(tmp.path().join("whole")).output().unwrap();
    assert_eq!(rep.status.code(), Some(0), "{}", text(&rep));
    // Every figure equal — but the oracle's byte counts of results that carry a timestamp the
    // session itself wrote: the backend prints fractional seconds without trailing zeros, so such a
    // result is a few bytes longer or shorter from one run to the next (a known flaw of the
    // floors, not of sharding). Those may differ by at most 1 %; nothing else may differ.
    let differ: Vec<String> =
        differences(&figures(&summary(&merged_dir)), &figures(&summary(&tmp.path().join("whole"))), "").into_iter().filter(|d| !clock_bytes(d)).collect();
    assert!(differ.is_empty(), "the merged shards report what one machine reports; they differ at {differ:#?}");

    // A shard twice is refused by name.
    let out = pipeline()
        .args(["aggregate", "--merge", "s_shard1of3,s_shard1of3", "--out"])
        .arg(tmp.path().join("twice"))
        .arg("--results-dir")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("one shard twice"), "{}", text(&out));
}

/// A Slurm array with ids 5 and 7 (`--array=5-7:2`): two shards. A merge of one of them is
/// refused, naming the missing sessions; `--allow-incomplete` reports it with them listed above
/// the headline; both together merge.
#[test]
fn a_merge_missing_a_slurm_shard_is_refused_or_reported_as_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    for id in ["5", "7"] {
        let out = pipeline()
            .envs([("SLURM_ARRAY_TASK_ID", id), ("SLURM_ARRAY_TASK_MIN", "5"), ("SLURM_ARRAY_TASK_COUNT", "2"), ("SLURM_ARRAY_TASK_STEP", "2")])
            .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave,two_tickets_for_globex,hand_ticket_77_to_marcus", "--models", "oracle"])
            .args(["--k", "2", "--exp-name", "slurm", "--results-dir"])
            .arg(tmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(text(&out).contains("(from slurm)"), "{}", text(&out));
    }
    let one = records(&tmp.path().join("slurm_shard1of2")).len();
    let two = records(&tmp.path().join("slurm_shard2of2")).len();
    assert_eq!(one + two, 3 * 2 * 2, "three tasks, two arms, k 2");
    // Both arms of a pair always in the same shard.
    for dir in ["slurm_shard1of2", "slurm_shard2of2"] {
        let recs = records(&tmp.path().join(dir));
        for r in &recs {
            let partner = recs.iter().filter(|o| o["task"] == r["task"] && o["rep"] == r["rep"] && o["server"] != r["server"]).count();
            assert_eq!(partner, 1, "{dir}: {} rep {} has its pair", r["task"], r["rep"]);
        }
    }

    let merge = |parts: &str, out: &str, extra: &[&str]| {
        pipeline().args(["aggregate", "--merge", parts, "--out"]).arg(tmp.path().join(out)).arg("--results-dir").arg(tmp.path()).args(extra).output().unwrap()
    };
    let refused = merge("slurm_shard1of2", "part", &[]);
    let t = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!("the folders hold {one} of the plan's sessions; missing:")) && t.contains("--allow-incomplete"), "{t}");
    assert!(!tmp.path().join("part").exists(), "a refused merge writes nothing");

    let partial = merge("slurm_shard1of2", "part", &["--allow-incomplete"]);
    assert_eq!(partial.status.code(), Some(0), "{}", text(&partial));
    let md = std::fs::read_to_string(tmp.path().join("part").join("report.md")).unwrap();
    let notice = md.lines().find(|l| l.contains("Incomplete (--allow-incomplete)")).unwrap_or_else(|| panic!("{md}"));
    assert!(notice.contains(&format!("{two} planned sessions no merged folder holds")), "{notice}");
    assert!(md.find("Incomplete").unwrap() < md.find("## ").unwrap_or(usize::MAX), "above the headline");

    let both = merge("slurm_shard1of2,slurm_shard2of2", "both", &[]);
    assert_eq!(both.status.code(), Some(0), "{}", text(&both));
}

/// A resubmission after a node failure: with `--shard-count`, Slurm task ids are the shards'
/// 0-based indices, so resubmitting only some ids (sparse, `--array=0,2`) runs exactly those
/// shards of the original three; a shard the split gave nothing (three shards of two units) is a
/// complete part with no records; the merge of all three equals the plan.
#[test]
fn a_sparse_resubmission_with_the_shard_count_and_an_empty_shard_merge_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |id: &str| {
        pipeline()
            .envs([("SLURM_ARRAY_TASK_ID", id), ("SLURM_ARRAY_TASK_MIN", "0"), ("SLURM_ARRAY_TASK_COUNT", "2")])
            .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave,two_tickets_for_globex", "--models", "oracle", "--k", "1"])
            .args(["--shard-count", "3", "--exp-name", "re", "--results-dir"])
            .arg(tmp.path())
            .output()
            .unwrap()
    };
    for id in ["0", "2", "1"] {
        let out = run(id);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let counts: Vec<usize> = (1..=3).map(|i| records(&tmp.path().join(format!("re_shard{i}of3"))).len()).collect();
    assert_eq!(counts.iter().sum::<usize>(), 2 * 2, "two tasks, two arms: {counts:?}");
    assert!(counts.contains(&0), "three shards of two units leave one empty: {counts:?}");
    let out = pipeline()
        .args(["aggregate", "--merge", "re_shard1of3,re_shard2of3,re_shard3of3", "--out"])
        .arg(tmp.path().join("merged"))
        .arg("--results-dir")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "the empty shard is a complete part: {}", text(&out));
    let attrition = summary(&tmp.path().join("merged"))["attrition"].clone();
    let valid: u64 = attrition.as_array().unwrap().iter().map(|r| r["valid"].as_u64().unwrap()).sum();
    assert_eq!(valid, 4, "every planned session, once: {attrition}");
}

#[test]
fn a_shard_that_names_no_place_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    // A malformed flag is a usage error (exit 2, as the README's table says); a place the engine
    // gives that names no shard is a refusal (exit 1).
    for (env, args, says, code) in [
        (vec![("JOB_COMPLETION_INDEX", "1")], vec![], "--shard-count", 1),
        (vec![], vec!["--shard", "4/3"], "write it I/N", 2),
        (vec![], vec!["--shard", "0/3"], "write it I/N", 2),
        (vec![("SLURM_ARRAY_TASK_ID", "9"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_COUNT", "3")], vec![], "sparse", 1),
        (
            vec![("SLURM_ARRAY_TASK_ID", "9"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_COUNT", "3")],
            vec!["--shard-count", "4"],
            "not below --shard-count 4",
            1,
        ),
    ] {
        let out = pipeline()
            .envs(env)
            .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--models", "oracle", "--exp-name", "x", "--results-dir"])
            .arg(tmp.path())
            .args(&args)
            .output()
            .unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(code), "{t}");
        assert!(t.contains(says), "{t}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing written: {t}");
    }
    // A sweep's levels are experiments of their own: it is not split (yet), and says how to.
    let out = pipeline()
        .args(["sweep", "--module", "tool_orchestrator", "--models", "oracle", "--scale", "1,2", "--shard", "1/2", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("a sweep is not split into shards yet"), "{}", text(&out));
}
