//! Held-out tasks and their seal, end to end through the binary, on a copy of the tasks folder:
//! the committed seal holds; a drift of any kind refuses every run and check that includes a
//! held-out task — naming it, before anything is written — while `--split dev` runs; re-sealing
//! takes a reason, keeps the history, and the reason reaches the manifest and the report.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{copy_dir, manifest, pipeline, records};

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A copy of the tasks folder (module folders, the gold set and the lock), to edit.
fn tasks_copy(root: &Path) -> PathBuf {
    let src = tasks::default_tasks_dir();
    let dst = root.join("tasks");
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if ["src", "tests", "target", "Cargo.toml"].contains(&name.as_str()) {
            continue;
        }
        if e.path().is_dir() {
            copy_dir(&e.path(), &dst.join(&name));
        } else {
            std::fs::copy(e.path(), dst.join(&name)).unwrap();
        }
    }
    dst
}

/// An oracle run of `tool_orchestrator` at k = 1 on `tasks`, with extra flags.
fn run(tasks: &Path, results: &Path, exp: &str, extra: &[&str]) -> Output {
    pipeline()
        .args(["--module", "tool_orchestrator", "--models", "oracle", "--k", "1", "--exp-name", exp, "--tasks-dir"])
        .arg(tasks)
        .arg("--results-dir")
        .arg(results)
        .args(extra)
        .output()
        .unwrap()
}

fn seal(tasks: &Path, args: &[&str]) -> Output {
    pipeline().arg("seal").arg("--tasks-dir").arg(tasks).args(args).output().unwrap()
}

const HELD_OUT: &str = "what_tom_fischer_still_has_open";

#[test]
fn the_committed_seal_holds() {
    let out = pipeline().args(["seal", "--check", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "tasks/held_out.lock matches the tree: {}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "unchanged");
    assert!(v["held_out_tasks"].as_u64().unwrap() >= 4 * 7, "every module has at least four: {v}");
    assert_eq!(v["gold"], true, "the gold set is sealed with them");
}

#[test]
fn a_drift_refuses_every_run_that_includes_held_out_tasks_and_only_those() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tasks_copy(tmp.path());
    let results = tmp.path().join("results");

    // As sealed: --split held_out runs exactly the held-out tasks, and says so everywhere.
    let out = run(&tasks, &results, "held", &["--split", "held_out"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let recs = records(&results.join("held"));
    let held: Vec<_> = tasks::load_module(&tasks, "tool_orchestrator").unwrap().into_iter().filter(|t| t.meta.split == records::Split::HeldOut).collect();
    assert_eq!(recs.len(), 2 * held.len());
    assert!(recs.iter().all(|r| r["split"] == "held_out" && r["verifier"]["verdict"] == "passed"), "every held-out record says so");
    let m = manifest(&results.join("held"));
    assert_eq!(m["split"], "held_out");
    assert!(m["seal"]["reason"].as_str().is_some_and(|r| !r.is_empty()) && m["seal"]["lock_sha256"].is_string(), "{m}");
    let out = pipeline().args(["aggregate", "--result-dir"]).arg(results.join("held")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(results.join("held/report.md")).unwrap();
    assert!(md.contains("The seal this run was checked against") && md.contains(m["seal"]["reason"].as_str().unwrap()), "the report says when and why");
    let lock_sha = m["seal"]["lock_sha256"].as_str().unwrap();
    assert!(md.contains(&format!("held_out.lock sha256 {}…", &lock_sha[..12])), "the report names the lock by its hash: {md}");

    // A spec frozen while the seal holds.
    let spec = tmp.path().join("spec.toml");
    let freeze = |out: &Path| {
        pipeline()
            .args(["freeze", "--module", "tool_orchestrator", "--models", "oracle", "--allow-dirty", "--exp-name", "spec", "--tasks-dir"])
            .arg(&tasks)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap()
    };
    let out = freeze(&spec);
    assert!(out.status.success(), "{}", text(&out));
    assert!(std::fs::read_to_string(&spec).unwrap().contains("split = \"all\""), "the spec records its split");

    // One held-out task edited after sealing: every run that includes it refuses, naming it,
    // and writes nothing; a dev-only run goes on.
    let text_md = tasks.join("tool_orchestrator").join(HELD_OUT).join("task.md");
    std::fs::write(&text_md, std::fs::read_to_string(&text_md).unwrap() + "\nAlso, be quick.\n").unwrap();
    for (exp, split) in [("all", None), ("only_held", Some("held_out"))] {
        let extra: Vec<&str> = split.map(|s| vec!["--split", s]).unwrap_or_default();
        let out = run(&tasks, &results, exp, &extra);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{t}");
        assert!(t.contains(&format!("tool_orchestrator/{HELD_OUT}: the task folder changed since it was sealed")), "{t}");
        assert!(t.contains("seal --reason") && t.contains("--split dev"), "the fixes are named: {t}");
        assert_eq!(t.lines().filter(|l| l.starts_with("error:")).count(), 1, "one clean error: {t}");
        assert!(!results.join(exp).exists(), "nothing written for {exp}");
    }
    let out = run(&tasks, &results, "dev", &["--split", "dev"]);
    assert_eq!(out.status.code(), Some(0), "the tuning loop's runs never need the seal: {}", text(&out));
    assert!(records(&results.join("dev")).iter().all(|r| r.get("split").is_none()), "dev records keep their bytes");

    // Freeze refuses the drift as a run does, and writes no spec; the spec frozen before it
    // fails G3.
    let refused = tmp.path().join("refused.toml");
    let out = freeze(&refused);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains(&format!("tool_orchestrator/{HELD_OUT}: the task folder changed since it was sealed")), "{}", text(&out));
    assert!(!refused.exists(), "no spec of drifted inputs");
    let out = pipeline().arg("check").arg(&spec).arg("--tasks-dir").arg(&tasks).arg("--results-dir").arg(&results).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("G3") && t.contains(HELD_OUT), "{t}");

    // Sealing without a reason refuses and writes nothing; --check names the drift.
    let before = std::fs::read(tasks.join("held_out.lock")).unwrap();
    for args in [&[][..], &["--check"][..]] {
        let out = seal(&tasks, args);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains(HELD_OUT), "{}", text(&out));
    }
    assert_eq!(std::fs::read(tasks.join("held_out.lock")).unwrap(), before, "nothing written without a reason");
    let out = seal(&tasks, &["--reason", "   "]);
    assert_eq!(out.status.code(), Some(1), "an empty reason is no reason: {}", text(&out));

    // Re-sealed with a reason: the lock keeps both sealings, and the run goes on.
    let out = seal(&tasks, &["--reason", "the request now asks for speed", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lock: toml::Table = toml::from_str(&std::fs::read_to_string(tasks.join("held_out.lock")).unwrap()).unwrap();
    assert_eq!(lock["reason"].as_str(), Some("the request now asks for speed"));
    let history = lock["history"].as_array().unwrap();
    assert!(history.len() >= 2, "earlier sealings are kept: {history:?}");
    assert!(history.last().unwrap()["changed"].as_array().unwrap().iter().any(|c| c.as_str().unwrap().contains(HELD_OUT)), "what changed is recorded");
    let out = run(&tasks, &results, "resealed", &["--split", "held_out"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(manifest(&results.join("resealed"))["seal"]["reason"], "the request now asks for speed");
}

#[test]
fn every_kind_of_drift_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tasks_copy(tmp.path());
    // A held-out task relabelled dev (to tune against it), a dev task relabelled held out, a
    // gold case edited, and a server manifest that is not the one sealed.
    let relabel = |id: &str, from: &str, to: &str| {
        let meta = tasks.join("tool_orchestrator").join(id).join("meta.toml");
        let text = std::fs::read_to_string(&meta).unwrap();
        let text = if from.is_empty() { format!("{text}\n{to}\n") } else { text.replace(from, to) };
        std::fs::write(&meta, text).unwrap();
    };
    relabel(HELD_OUT, "split = \"held_out\"", "");
    relabel("lena_goes_on_leave", "", "split = \"held_out\"");
    let gold = tasks.join("gold/cases.toml");
    std::fs::write(&gold, std::fs::read_to_string(&gold).unwrap() + "\n# an edit\n").unwrap();
    let lock = tasks.join("held_out.lock");
    let text = std::fs::read_to_string(&lock).unwrap();
    let line = text.lines().find(|l| l.starts_with("orchestrator = ")).unwrap().to_owned();
    std::fs::write(&lock, text.replace(&line, "orchestrator = \"0000\"")).unwrap();

    let out = seal(&tasks, &["--check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let changed: Vec<&str> = v["changed"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    let has = |s: &str| changed.iter().any(|c| c.contains(s));
    assert!(has(&format!("tool_orchestrator/{HELD_OUT}: sealed as held out, but it is no longer a held-out task")), "{changed:?}");
    assert!(has("tool_orchestrator/lena_goes_on_leave: held out but not sealed"), "{changed:?}");
    assert!(has("gold/: the graders' gold set changed"), "{changed:?}");
    assert!(has("server orchestrator: its tool manifest changed since the seal"), "{changed:?}");
    assert_eq!(changed.len(), 4, "nothing else: {changed:?}");
}

/// A task the seal holds as held out that lost its label is not a dev task: `--split dev`
/// refuses it by name (else the tuning loop could run it unseen), and so does `--split all`.
#[test]
fn a_sealed_task_that_lost_its_label_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tasks_copy(tmp.path());
    let results = tmp.path().join("results");
    let meta = tasks.join("tool_orchestrator").join(HELD_OUT).join("meta.toml");
    std::fs::write(&meta, std::fs::read_to_string(&meta).unwrap().replace("split = \"held_out\"", "")).unwrap();
    for split in ["dev", "all"] {
        let out = run(&tasks, &results, split, &["--split", split]);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{t}");
        assert!(t.contains(HELD_OUT) && t.contains("sealed as held out") && t.contains("restore `split = \"held_out\"`"), "{t}");
        assert!(!results.join(split).exists(), "nothing written: {t}");
    }
    // Another module's dev tasks do not read this module's label.
    let out = pipeline()
        .args(["--module", "domain_adapter", "--split", "dev", "--models", "oracle", "--k", "1", "--exp-name", "other", "--tasks-dir"])
        .arg(&tasks)
        .arg("--results-dir")
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}
