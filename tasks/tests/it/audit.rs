//! The verifier audit (`tasks/audit.toml`, `docs/verifier-audit.md`): one entry per task folder
//! (a family once), each written against the `verify.toml` whose sha256 it records. An edited
//! verifier without a re-done entry, a task without one, or an answer outside the checklist's
//! words fails here, naming the task.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Audit {
    task: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    task: String,
    split: String,
    verify_sha256: String,
    state_decides: String,
    report_checked: String,
    relations: String,
    trap: String,
    unchanged: String,
    wrong_id: String,
    notes: String,
    fix: String,
}

fn tasks_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// `module/folder` of every task folder (a family's folder once): every folder of a module
/// folder that holds a `verify.toml`.
fn task_folders() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for module in std::fs::read_dir(tasks_dir()).unwrap().flatten().filter(|e| e.path().is_dir()) {
        for task in std::fs::read_dir(module.path()).unwrap().flatten() {
            if task.path().join("verify.toml").is_file() {
                out.insert(format!("{}/{}", module.file_name().to_string_lossy(), task.file_name().to_string_lossy()));
            }
        }
    }
    out
}

#[test]
fn every_task_has_an_audit_entry_written_against_its_verifier_as_it_is() {
    let audit: Audit = toml::from_str(&std::fs::read_to_string(tasks_dir().join("audit.toml")).unwrap()).unwrap();
    let folders = task_folders();
    assert!(folders.len() > 80, "the task folders were found: {}", folders.len());
    let audited: BTreeSet<String> = audit.task.iter().map(|e| e.task.clone()).collect();
    assert_eq!(audited.len(), audit.task.len(), "one entry per task");
    let missing: Vec<&String> = folders.difference(&audited).collect();
    let unknown: Vec<&String> = audited.difference(&folders).collect();
    assert!(missing.is_empty() && unknown.is_empty(), "tasks without an audit entry: {missing:?}; entries without a task: {unknown:?}");
    let mut stale = Vec::new();
    for e in &audit.task {
        let bytes = std::fs::read(tasks_dir().join(&e.task).join("verify.toml")).unwrap();
        if hex::encode(Sha256::digest(&bytes)) != e.verify_sha256 {
            stale.push(e.task.as_str());
        }
        assert!(["dev", "held_out"].contains(&e.split.as_str()), "{}: split {:?}", e.task, e.split);
        let answers = [&e.state_decides, &e.report_checked, &e.relations, &e.trap, &e.unchanged, &e.wrong_id];
        assert!(answers.iter().all(|a| ["pass", "fail", "n/a"].contains(&a.as_str())), "{}: every answer is pass, fail or n/a", e.task);
        assert!(!e.notes.trim().is_empty(), "{}: an entry says what it found", e.task);
        if answers.iter().any(|a| *a == "fail") {
            assert!(!e.fix.trim().is_empty() || e.notes.contains("no fix"), "{}: a fail comes with its fix, or says why there is none", e.task);
        }
    }
    assert!(stale.is_empty(), "verifiers edited since their audit entry was written (re-do each entry and record the new sha256):\n{}", stale.join("\n"));
}
