//! Loading task folders: a malformed task is an error that names the file and the problem.

use std::fs;
use std::path::{Path, PathBuf};

use tasks::load::load_task;

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() { copy_dir(&p, &dest) } else { fs::copy(&p, &dest).map(|_| ()).unwrap() }
    }
}

/// A scratch copy of a real task to break in one way.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let src = tasks::default_tasks_dir().join("tool_orchestrator/hand_ticket_77_to_marcus");
    let dir = tmp.path().join("tool_orchestrator/hand_ticket_77_to_marcus");
    copy_dir(&src, &dir);
    (tmp, dir)
}

fn load_err(dir: &Path) -> String {
    load_task("tool_orchestrator", dir).map(|_| ()).unwrap_err().to_string()
}

#[test]
fn the_real_task_loads() {
    let (_tmp, dir) = scratch();
    let t = load_task("tool_orchestrator", &dir).unwrap();
    assert_eq!(t.meta.turn_cap, 10);
    assert_eq!(t.oracle.len(), 2);
    assert_eq!(t.sha256.len(), 64);
}

#[test]
fn malformed_files_are_named_with_their_problem() {
    let cases: Vec<(&str, &str, &str, &str)> = vec![
        ("meta.toml", "turn_cap = \"ten\"\n", "meta.toml", "invalid type"),
        ("meta.toml", "turn_cap = 10\ncolour = \"red\"\n", "meta.toml", "colour"),
        ("meta.toml", "turn_cap = 0\n", "meta.toml", "turn_cap must be at least 1"),
        ("verify.toml", "[[sql]]\nname = \"x\"\n", "verify.toml", "query"),
        ("verify.toml", "unchanged = [\"tickets; DROP\"]\n", "verify.toml", "unknown table"),
        ("oracle/wrapper.toml", "[[steps]]\nargs = {}\n", "wrapper.toml", "exactly one of"),
        ("oracle/wrapper.toml", "answer = \"${nope}\"\n[[steps]]\ntool = \"tickets_get\"\n", "wrapper.toml", "never saved"),
        ("task.md", "   \n", "task.md", "empty"),
    ];
    for (file, content, names, problem) in cases {
        let (_tmp, dir) = scratch();
        fs::write(dir.join(file), content).unwrap();
        let e = load_err(&dir);
        assert!(e.contains(names) && e.contains(problem), "{file} with {content:?}: {e}");
    }
    let (_tmp, dir) = scratch();
    fs::remove_file(dir.join("oracle/orchestrator.toml")).unwrap();
    let e = load_err(&dir);
    assert!(e.contains("orchestrator.toml") && e.contains("cannot read"), "{e}");
    let (_tmp, dir) = scratch();
    fs::write(dir.join("oracle/session_server.toml"), "[[steps]]\ntool = \"x\"\n").unwrap();
    let e = load_err(&dir);
    assert!(e.contains("session_server.toml") && e.contains("not an arm"), "{e}");
}

#[test]
fn editing_any_file_changes_the_task_hash() {
    let (_tmp, dir) = scratch();
    let before = load_task("tool_orchestrator", &dir).unwrap().sha256;
    fs::write(dir.join("task.md"), "Ticket 77 should be handled by Marcus Chen. Please.\n").unwrap();
    let after = load_task("tool_orchestrator", &dir).unwrap().sha256;
    assert_ne!(before, after);
}
