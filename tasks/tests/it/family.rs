//! Task families: one template folder, one checked task per size.

use std::fs;
use std::path::{Path, PathBuf};

use tasks::load_module;

const PLAN: &str = r#"answer = "Opened {{ n }} ticket(s)."

[[steps]]
tool = "users_list"
args = { q = "Sofia Alvarez" }
save = { sofia = "/data/0/id" }
{% for i in range(n) %}

[[steps]]
tool = "tickets_create"
args = { title = {{ vars.titles[i] | tojson }}, customer_id = 5, assignee_id = "${sofia}" }
{% endfor %}
"#;

/// A module folder holding one family, `globex_tickets`, of sizes 1 and 3.
fn family() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tool_orchestrator/globex_tickets");
    fs::create_dir_all(dir.join("oracle")).unwrap();
    let files = [
        (
            "family.toml",
            "sizes = [1, 3]\n[vars]\ntitles = [\"Refund flow double-charges on retry\", \"Order history shows the wrong currency\", \"CSV import rejects valid input\"]\n",
        ),
        (
            "task.md",
            "Globex Retail has {{ n }} problem(s). Open one ticket for each, assigned to Sofia Alvarez:\n{% for i in range(n) %}\n- \"{{ vars.titles[i] }}\"\n{% endfor %}\n",
        ),
        ("meta.toml", "turn_cap = {{ 2 * n + 4 }}\ntags = [\"create\"]\n"),
        (
            "verify.toml",
            "[[sql]]\nname = \"{{ n }} new tickets for Globex Retail\"\nquery = \"SELECT count(*) FROM tickets WHERE customer_id = 5 AND created_at > '2026-03-01'\"\nexpect = {{ n }}\n",
        ),
        ("oracle/orchestrator.toml", PLAN),
        ("oracle/wrapper.toml", PLAN),
    ];
    for (name, text) in files {
        fs::write(dir.join(name), text).unwrap();
    }
    (tmp, dir)
}

fn load(root: &Path) -> Result<Vec<tasks::Task>, String> {
    load_module(root, "tool_orchestrator").map_err(|e| e.to_string())
}

#[test]
fn a_family_is_one_task_per_size_rendered_from_its_templates() {
    let (tmp, _) = family();
    let tasks = load(tmp.path()).unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["globex_tickets_n1", "globex_tickets_n3"]);
    let (one, three) = (&tasks[0], &tasks[1]);
    assert_eq!(three.family, Some(tasks::FamilyInstance { id: "globex_tickets".into(), size: 3 }));
    assert_eq!(three.meta.turn_cap, 10);
    assert_eq!(three.meta.tags, ["create", "size_3"]);
    assert!(three.text.contains("has 3 problem(s)") && three.text.contains("- \"CSV import rejects valid input\""), "{}", three.text);
    assert!(!one.text.contains("Order history"), "{}", one.text);
    assert_eq!(three.oracle["wrapper"].steps.len(), 4, "one lookup and one call per ticket");
    assert_eq!(one.oracle["orchestrator"].steps.len(), 2);
    assert_eq!(three.verifier.sql[0].expect, Some(toml::Value::Integer(3)));
    assert_ne!(one.sha256, three.sha256, "each instance has its own hash");
    assert_eq!(three.seed_sql, None, "no seed.sql, no seed");
}

#[test]
fn a_family_seed_is_rendered_per_size() {
    let (tmp, dir) = family();
    fs::write(
        dir.join("seed.sql"),
        "INSERT INTO tickets (title) VALUES\n{% for i in range(n) %}\n('{{ vars.titles[i] }}'){{ \",\" if not loop.last else \";\" }}\n{% endfor %}\n",
    )
    .unwrap();
    let tasks = load(tmp.path()).unwrap();
    let three = tasks[1].seed_sql.as_deref().unwrap();
    assert_eq!(three.matches("('").count(), 3, "{three}");
    assert!(three.trim_end().ends_with("input');"), "{three}");
    fs::write(dir.join("seed.sql"), "{% if n > 5 %}SELECT 1;{% endif %}").unwrap();
    let e = load(tmp.path()).unwrap_err();
    assert!(e.contains("seed.sql") && e.contains("empty"), "{e}");
}

#[test]
fn an_instance_hash_covers_the_templates_and_the_sizes() {
    let (tmp, dir) = family();
    let before = load(tmp.path()).unwrap();
    fs::write(dir.join("family.toml"), fs::read_to_string(dir.join("family.toml")).unwrap().replace("[1, 3]", "[1, 2, 3]")).unwrap();
    let sizes = load(tmp.path()).unwrap();
    assert_eq!(sizes.len(), 3);
    assert_ne!(before[0].sha256, sizes[0].sha256, "another list of sizes is another input");
    fs::write(dir.join("task.md"), "Globex Retail needs {{ n }} ticket(s) for Sofia Alvarez.\n").unwrap();
    let text = load(tmp.path()).unwrap();
    assert_ne!(sizes[0].sha256, text[0].sha256, "another template is another input");
}

#[test]
fn a_broken_family_names_the_file_the_size_and_the_problem() {
    let cases: Vec<(&str, &str, &[&str])> = vec![
        ("family.toml", "sizes = []\n", &["family.toml", "`sizes` is empty"]),
        ("family.toml", "sizes = [3, 1]\n", &["family.toml", "distinct and ascending"]),
        ("family.toml", "sizes = [0]\n", &["family.toml", "at least 1"]),
        ("family.toml", "sizes = [1]\ncolour = 1\n", &["family.toml", "colour"]),
        ("task.md", "Open {{ count }} tickets.\n", &["task.md", "rendering for n = 1", "undefined"]),
        ("meta.toml", "turn_cap = {{ n\n", &["meta.toml", "rendering for n = 1", "line 1"]),
        ("meta.toml", "turn_cap = \"{{ n }}\"\n", &["meta.toml", "(rendered for n = 1)", "invalid type"]),
        ("verify.toml", "[[sql]]\nname = \"x\"\nquery = \"SELECT {{ n }}\"\n", &["verify.toml", "(rendered for n = 1)", "exactly one of"]),
    ];
    for (file, content, wanted) in cases {
        let (tmp, dir) = family();
        fs::write(dir.join(file), content).unwrap();
        let e = load(tmp.path()).unwrap_err();
        assert!(wanted.iter().all(|w| e.contains(w)), "{file} with {content:?}: {e}");
    }
}
