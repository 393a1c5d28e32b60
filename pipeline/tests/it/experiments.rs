//! Experiments never mix: a resume under another plan (scale, transport, records without a
//! fingerprint) refuses and names what differs; conflicting selections are refused; the report
//! of a resumed experiment reads exactly its records. Runs the real binary with the oracle.

use crate::common;

use std::path::Path;
use std::process::Output;

use crate::common::{all_files, pipeline, records};

fn oracle_run(results: &Path, extra: &[&str]) -> Output {
    pipeline()
        .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--models", "oracle", "--exp-name", "x", "--results-dir"])
        .arg(results)
        .args(extra)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Every file of the experiment but its lock (which names whichever run held it last), as
/// (path, length, a digest of the bytes).
fn file_bytes(dir: &Path) -> Vec<(std::path::PathBuf, usize, u64)> {
    use std::hash::{Hash, Hasher};
    let mut v: Vec<_> = common::all_files(dir)
        .into_iter()
        .filter(|(p, _)| !p.ends_with(".lock"))
        .map(|(p, b)| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            b.hash(&mut h);
            (p, b.len(), h.finish())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_resume_under_another_plan_refuses_and_names_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let first = oracle_run(tmp.path(), &[]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let exp = tmp.path().join("x");
    assert_eq!(records(&exp).len(), 2);
    for r in records(&exp) {
        assert_eq!(r["transport"], "stdio");
        assert_eq!(r["fingerprint"]["world_scale"], 1);
        assert_eq!(r["fingerprint_sha256"].as_str().unwrap().len(), 64);
    }
    let before = file_bytes(&exp);

    for (flags, field, now, recorded) in [(&["--scale", "2"][..], "world_scale", "2", "1"), (&["--transport", "http"][..], "transport", "http", "stdio")] {
        let out = oracle_run(tmp.path(), flags);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{t}");
        assert!(t.contains(&format!("{field}: now {now}, recorded {recorded}")), "names the field and both values: {t}");
        assert!(t.contains("--exp-name") && t.contains("nothing was started"), "{t}");
        assert_eq!(file_bytes(&exp), before, "a refused run leaves the experiment exactly as it was");
    }

    // The same plan resumes.
    let again = oracle_run(tmp.path(), &[]);
    assert!(text(&again).contains("2 already recorded, 0 to run"), "{}", text(&again));
}

#[test]
fn records_without_a_fingerprint_are_never_counted_as_done() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(oracle_run(tmp.path(), &[]).status.code(), Some(0));
    let exp = tmp.path().join("x");
    // What a record written before fingerprints looks like.
    let path = exp.join("oracle__orchestrator").join("lena_goes_on_leave__rep1.json");
    let mut r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for f in ["fingerprint", "fingerprint_sha256", "transport", "attempt"] {
        r.as_object_mut().unwrap().remove(f);
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    let out = oracle_run(tmp.path(), &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("before records carried a plan fingerprint") && t.contains("lena_goes_on_leave__rep1.json"), "{t}");
    // The report refuses to pool it with the newer record, too: by name, with the way out, and
    // writing nothing.
    let report = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    let t = text(&report);
    assert_eq!(report.status.code(), Some(1), "{t}");
    let newer = exp.join("oracle__wrapper").join("lena_goes_on_leave__rep1.json");
    assert!(
        t.contains(&format!("{} has a fingerprint and {} has none", newer.display(), path.display())) && t.contains("never pooled") && t.contains("--exp-name"),
        "the named refusal: {t}"
    );
    assert!(!exp.join("report.md").exists() && !exp.join("summary.json").exists(), "a refused report writes nothing");
}

#[test]
fn a_record_that_contradicts_its_own_fingerprint_stops_a_resume_and_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(oracle_run(tmp.path(), &[]).status.code(), Some(0));
    let exp = tmp.path().join("x");
    // The record's own fields edited; its fingerprint still says what the run did.
    let path = exp.join("oracle__orchestrator").join("lena_goes_on_leave__rep1.json");
    let mut r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let commit = r["fingerprint"]["build_commit"].as_str().unwrap().to_owned();
    let task_sha = r["fingerprint"]["task_sha256"].as_str().unwrap().to_owned();
    r["world_scale"] = 2.into();
    r["task_sha256"] = "edited".into();
    r["git_commit"] = serde_json::Value::Null;
    std::fs::write(&path, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    let before = file_bytes(&exp);

    let out = oracle_run(tmp.path(), &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("contradict their own fingerprints; nothing was started") && t.contains(&path.display().to_string()), "names the file: {t}");
    for field in [
        "world_scale: the record says 2, its fingerprint 1".to_string(),
        format!("task_sha256: the record says edited, its fingerprint {task_sha}"),
        format!("git_commit: the record says unset, its fingerprint's build_commit {commit}"),
    ] {
        assert!(t.contains(&field), "names {field:?}: {t}");
    }
    assert_eq!(file_bytes(&exp), before, "a refused resume leaves the experiment exactly as it was");

    let report = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    let t = text(&report);
    assert_eq!(report.status.code(), Some(1), "{t}");
    assert!(t.contains("contradicts its own fingerprint") && t.contains("world_scale: the record says 2, its fingerprint 1"), "{t}");
    assert_eq!(file_bytes(&exp), before, "a refused report writes nothing");
}

#[test]
fn conflicting_selections_and_the_wrong_front_door_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline().args(["--mcp", "wrapper", "--all", "--models", "oracle", "--results-dir"]).arg(tmp.path()).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "a usage error: {t}");
    assert!(t.contains("--mcp") && t.contains("cannot be used with"), "{t}");
    let out = pipeline().args(["--mcp", "wrapper", "--module", "tool_orchestrator", "--models", "oracle"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));

    let out = pipeline().args(["run", "--module", "tool_orchestrator"]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("takes a spec file") && t.contains("pipeline --module") && t.contains("pipeline freeze"), "{t}");
    assert!(std::fs::read_dir(tmp.path()).unwrap().count() == 0);
}

#[test]
fn aggregate_refuses_a_folder_of_several_experiments() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(oracle_run(tmp.path(), &[]).status.code(), Some(0));
    let other = pipeline()
        .args(["--mcp", "orchestrator", "--tasks", "lena_goes_on_leave", "--models", "oracle", "--exp-name", "y", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(0), "{}", text(&other));
    let out = pipeline().args(["aggregate", "--result-dir"]).arg(tmp.path()).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("--exp-name"), "{t}");
    assert!(!tmp.path().join("report.md").exists(), "nothing is written into the results folder itself");
}

#[test]
fn shards_of_one_plan_merge_into_one_report() {
    let tmp = tempfile::tempdir().unwrap();
    for (exp, task) in [("a", "lena_goes_on_leave"), ("b", "two_tickets_for_globex")] {
        let out = pipeline()
            .args(["--module", "tool_orchestrator", "--tasks", task, "--models", "oracle", "--exp-name", exp, "--results-dir"])
            .arg(tmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let out_dir = tmp.path().join("a+b");
    let out = pipeline().args(["aggregate", "--merge", "a,b", "--out"]).arg(&out_dir).arg("--results-dir").arg(tmp.path()).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap()).unwrap();
    let s = summary.to_string();
    assert!(s.contains("lena_goes_on_leave") && s.contains("two_tickets_for_globex"), "both shards' tasks are in one report");
    assert!(!tmp.path().join("a").join("report.md").exists(), "the parts stay untouched");

    // A shard of another plan (world scale 2) is refused.
    let c = pipeline()
        .args(["--module", "tool_orchestrator", "--tasks", "escalation", "--scale", "2", "--models", "oracle", "--exp-name", "c", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(c.status.code(), Some(0), "{}", text(&c));
    let out = pipeline().args(["aggregate", "--merge", "a,c", "--out"]).arg(tmp.path().join("a+c")).arg("--results-dir").arg(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("world_scale_override"), "{}", text(&out));
}

#[test]
fn a_sweep_runs_each_level_as_its_own_experiment_and_reads_off_the_crossover() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline()
        .args(["sweep", "--module", "tool_orchestrator", "--models", "oracle", "--scale", "2,1"])
        .args(["--exp-name", "sw", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let sweep = tmp.path().join("sw");
    for level in [1, 2] {
        let exp = sweep.join(format!("scale{level}"));
        let recs = records(&exp);
        assert_eq!(recs.len(), 2 * common::dev_task_count("tool_orchestrator"), "every dev task × 2 arms at scale {level}");
        assert!(recs.iter().all(|r| r["fingerprint"]["world_scale_override"] == level && r["world_scale"] == level));
        // Scale adds rows without changing the scale-1 world the tasks are written against.
        assert!(recs.iter().all(|r| r["verifier"]["verdict"] == "passed"), "every oracle session passes at scale {level}");
        assert!(exp.join("report.md").is_file(), "each level has its own report");
    }
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(sweep.join("sweep.json")).unwrap()).unwrap();
    let levels: Vec<u64> = report["levels"].as_array().unwrap().iter().map(|l| l["scale"].as_u64().unwrap()).collect();
    assert_eq!(levels, [1, 2], "levels in order");
    assert_eq!(report["split"], "dev", "a sweep reads one split, dev unless asked");
    // Both splits in one sweep would pool them into one figure per level: refused, nothing run.
    let pooled = pipeline()
        .args(["sweep", "--module", "tool_orchestrator", "--models", "oracle", "--scale", "2,1", "--split", "all", "--exp-name", "pooled", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(pooled.status.code(), Some(1), "{}", text(&pooled));
    assert!(text(&pooled).contains("a sweep reads one split"), "{}", text(&pooled));
    assert!(!tmp.path().join("pooled").exists(), "nothing written");
    for l in report["levels"].as_array().unwrap() {
        let (p, c) = (l["pattern"]["floor_estimated_input_tokens"].as_f64().unwrap(), l["control"]["floor_estimated_input_tokens"].as_f64().unwrap());
        assert_eq!(l["cost_difference"].as_f64().unwrap(), p - c, "the oracle's cost is its floor");
    }
    // The level data decide the one right crossover: the smallest level from which the pattern's
    // floor stays below the control's.
    let below: Vec<bool> = report["levels"].as_array().unwrap().iter().map(|l| l["cost_difference"].as_f64().unwrap() < 0.0).collect();
    let (expected, sentence) = match below[..] {
        [true, true] => (serde_json::json!({"kind": "from_the_start", "from": 1}), "is below the control's from scale 1, the smallest level run"),
        [false, true] => (serde_json::json!({"kind": "at", "from": 2, "after": 1}), "falls below the control's between scale 1 and scale 2"),
        _ => (serde_json::json!({"kind": "none_in_range"}), "no crossover in range"),
    };
    assert_eq!(report["crossover"], expected, "{report}");
    let md = std::fs::read_to_string(sweep.join("sweep.md")).unwrap();
    let crossover_line = md.lines().find(|l| l.starts_with("**Crossover:**")).unwrap_or_else(|| panic!("{md}"));
    assert!(crossover_line.contains(sentence), "{crossover_line}");
    // Each level's rows carry that level's figures: the pattern row its difference per session,
    // the control row none.
    for l in report["levels"].as_array().unwrap() {
        let level = l["scale"].as_u64().unwrap();
        let row = |arm: &str, server: &str| {
            let start = format!("| {level} | {arm} | {server} | {n} / {n} | 100%", n = common::dev_task_count("tool_orchestrator"));
            md.lines().find(|r| r.starts_with(&start)).unwrap_or_else(|| panic!("no row {start:?}: {md}")).to_owned()
        };
        let per = l["cost_difference_per_session"].as_f64().unwrap();
        // The last column: what the floor writes (est. output tokens), per arm.
        let out = |arm: &str| l[arm]["floor_estimated_output_tokens_per_session"].as_f64().unwrap();
        assert!(out("pattern") > 0.0 && out("control") > 0.0, "{l}");
        assert!(row("pattern", "orchestrator").ends_with(&format!("| {per:.1} | {:.0} |", out("pattern"))), "{}", row("pattern", "orchestrator"));
        assert!(row("control", "wrapper").ends_with(&format!("|  | {:.0} |", out("control"))), "{}", row("control", "wrapper"));
    }
    assert!(md.contains("![cost by scale](sweep.svg)"), "{md}");
    let svg = std::fs::read_to_string(sweep.join("sweep.svg")).unwrap();
    assert!(svg.contains("orchestrator (pattern)") && svg.contains("wrapper (control)") && svg.contains("world scale"), "the chart names its arms and axis");
    // The table's per-session figures are the means over the level's tasks of the summed floors.
    for l in report["levels"].as_array().unwrap() {
        let per = l["cost_difference_per_session"].as_f64().unwrap();
        let tasks = common::dev_task_count("tool_orchestrator") as f64;
        assert!((per * tasks - l["cost_difference"].as_f64().unwrap()).abs() < 1.0, "{l}");
    }
    // --report-only rewrites the sweep's report from the recorded levels and runs nothing.
    let sessions = |dir: &std::path::Path| all_files(dir).into_iter().filter(|(p, _)| p.to_string_lossy().contains("__rep")).collect::<Vec<_>>();
    let recorded = sessions(&sweep);
    std::fs::remove_file(sweep.join("sweep.md")).unwrap();
    let again = pipeline()
        .args(["sweep", "--module", "tool_orchestrator", "--models", "oracle", "--scale", "2,1", "--exp-name", "sw", "--report-only", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(std::fs::read_to_string(sweep.join("sweep.md")).unwrap(), md, "the same report from the same levels");
    assert_eq!(sessions(&sweep), recorded, "no session was run or rewritten");

    // The folder of a sweep is not one experiment.
    let agg = pipeline().args(["aggregate", "--result-dir"]).arg(&sweep).output().unwrap();
    assert_eq!(agg.status.code(), Some(1), "{}", text(&agg));

    // Several levels outside a sweep are refused with a pointer to it.
    let out = oracle_run(tmp.path(), &["--scale", "1,2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("pipeline sweep"), "{}", text(&out));
}

/// A sweep over distractors: each level lists that many tools of other servers beside both arms,
/// every oracle session still passes (G7 at every level), and the definitions grow by exactly the
/// distractors' own.
#[test]
fn a_sweep_over_distractors_lists_them_beside_both_arms_at_every_level() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline()
        .args(["sweep", "--module", "resource_gateway", "--models", "oracle", "--distractors", "20,0"])
        .args(["--exp-name", "dsw", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let sweep = tmp.path().join("dsw");
    let bytes = |level: u32| -> std::collections::BTreeMap<String, u64> {
        records(&sweep.join(format!("distractors{level}")))
            .iter()
            .map(|r| (r["server"].as_str().unwrap().to_owned(), r["offered"]["definitions_bytes"].as_u64().unwrap()))
            .collect()
    };
    let drawn = servers::distractors::Distractors::draw(20).unwrap();
    let added = agent::tokens::definitions_bytes(drawn.definitions()) as u64;
    for (server, b0) in bytes(0) {
        assert_eq!(bytes(20)[&server], b0 + added, "{server}: its own definitions plus the distractors'");
    }
    for level in [0u64, 20] {
        let exp = sweep.join(format!("distractors{level}"));
        let recs = records(&exp);
        assert_eq!(recs.len(), 2 * common::dev_task_count("resource_gateway"));
        assert!(recs.iter().all(|r| r["verifier"]["verdict"] == "passed"), "every oracle session passes with {level} distractors");
        // Each cold session started its server, inside its own wall time.
        assert!(recs.iter().all(|r| r["harness"]["server_start_ms"].as_f64().is_some_and(|ms| ms > 0.0 && ms < r["harness"]["session_ms"].as_f64().unwrap())));
        // Every built-in server answered the revision the client announced.
        assert!(recs.iter().all(|r| r["server_info"]["protocol_version"] == "2025-11-25"), "{:?}", recs[0]["server_info"]);
        assert!(recs.iter().all(|r| r["offered"]["distractors"].as_u64().unwrap_or(0) == level));
        assert!(recs.iter().all(|r| r["offered"]["distractors_bytes"].as_u64().unwrap_or(0) == if level > 0 { added } else { 0 }));
        assert!(recs.iter().all(|r| r["fingerprint"]["distractors"].as_u64() == (level > 0).then_some(level)));
        let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(exp.join("manifest.json")).unwrap()).unwrap();
        if level > 0 {
            let names: Vec<&str> = manifest["distractors"]["names"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
            assert_eq!(names, drawn.names().collect::<Vec<_>>());
            assert_eq!(manifest["distractors"]["sha256"].as_str(), drawn.sha256().as_deref());
            let report = std::fs::read_to_string(exp.join("report.md")).unwrap();
            assert!(report.contains("the client listed 20 tools of other, unconnected servers"), "{report}");
        } else {
            assert!(manifest.get("distractors").is_none());
        }
    }
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(sweep.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(report["factor_kind"], "distractors");
    let levels: Vec<u64> = report["levels"].as_array().unwrap().iter().map(|l| l["distractors"].as_u64().unwrap()).collect();
    assert_eq!(levels, [0, 20]);
    assert!(report["success_trend"].as_str().unwrap().starts_with("stays level"), "{report}");
    let md = std::fs::read_to_string(sweep.join("sweep.md")).unwrap();
    assert!(md.contains("**From the smallest level to the largest**") && md.contains("distractors listed"), "{md}");
}

/// A sweep over a task family's size: each size its own experiment of that size's instances.
#[test]
fn a_sweep_over_state_size_runs_each_family_size_as_its_own_experiment() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline()
        .args(["sweep", "--module", "tool_orchestrator", "--models", "oracle", "--size", "4,1", "--exp-name", "sz", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let sweep = tmp.path().join("sz");
    for size in [1, 4] {
        let recs = records(&sweep.join(format!("size{size}")));
        assert_eq!(recs.len(), 4, "the size-{size} instance of each of the two families × 2 arms");
        for family in ["globex_ticket_batch", "initech_handover"] {
            let of = |r: &&serde_json::Value| r["task"].as_str().is_some_and(|t| t.ends_with(&format!("{family}_n{size}")));
            assert_eq!(recs.iter().filter(of).count(), 2, "{recs:?}");
        }
        assert!(recs.iter().all(|r| r["verifier"]["verdict"] == "passed"), "{recs:?}");
    }
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(sweep.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(report["factor"], "state size");
    let levels = report["levels"].as_array().unwrap();
    assert_eq!(levels.iter().map(|l| (l["level"].as_u64().unwrap(), l["size"].as_u64().unwrap())).collect::<Vec<_>>(), [(1, 1), (4, 4)]);
    assert!(levels.iter().all(|l| l["scale"].is_null()), "the tasks' own scale: {report}");
    let calls = |l: &serde_json::Value, arm: &str| l[arm]["floor_calls"].as_f64().unwrap();
    assert!(calls(&levels[1], "control") - calls(&levels[0], "control") > calls(&levels[1], "pattern") - calls(&levels[0], "pattern"), "{report}");
    let md = std::fs::read_to_string(sweep.join("sweep.md")).unwrap();
    assert!(md.contains("over state size") && md.contains("| size | arm |") && md.contains("| 4 | control |"), "{md}");

    // A size no family has is refused with the sizes there are; one factor per sweep.
    let out = pipeline().args(["--module", "tool_orchestrator", "--models", "oracle", "--size", "3", "--results-dir"]).arg(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("tool_orchestrator/globex_ticket_batch has sizes [1, 2, 4, 8]; tool_orchestrator/initech_handover has sizes [1, 2, 4, 8, 16]"),
        "{}",
        text(&out)
    );
    let both = pipeline().args(["sweep", "--module", "tool_orchestrator", "--models", "oracle", "--size", "1,2", "--scale", "1,2"]).output().unwrap();
    assert!(text(&both).contains("varies one factor"), "{}", text(&both));
}
