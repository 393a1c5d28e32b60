//! Gates G5 (neutrality) and G7 (ground truth) over every task of every module, through the
//! real servers over stdio (`pipeline serve`), against the real backend on real Postgres.

use backend::WorldSpec;
use backend::local::LocalBackend;
use tasks::gates::{banned_terms, ground_truth, neutrality_violations};

fn serve_command() -> Vec<String> {
    vec![env!("CARGO_BIN_EXE_pipeline").to_owned(), "serve".to_owned()]
}

async fn gates_for(module: &str) {
    let all = tasks::load_module(&tasks::default_tasks_dir(), module).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.len(), 8, "{module} has {} tasks, not eight", all.len());
    let b = LocalBackend::start(WorldSpec::default()).await.unwrap();
    let banned = banned_terms(module, b.url()).await.unwrap();
    assert!(banned.len() > 5, "{module}: suspiciously few banned terms: {banned:?}");
    let mut failures = Vec::new();
    for task in &all {
        for v in neutrality_violations(task, &banned) {
            failures.push(format!("G5 {}: the text contains {:?} ({})", task.key(), v.term, v.source));
        }
    }
    let (pattern, control) = servers::registry::arms(module).unwrap();
    for task in &all {
        for arm in [pattern.name, control.name] {
            if let Err(e) = ground_truth(task, arm, b.world(), b.url(), &serve_command()).await {
                failures.push(format!("G7 {} via {arm}: {e}", task.key()));
            }
        }
    }
    b.shutdown().await.unwrap();
    assert!(failures.is_empty(), "{} gate failure(s):\n{}", failures.len(), failures.join("\n"));
}

#[tokio::test]
async fn gates_tool_orchestrator() {
    gates_for("tool_orchestrator").await;
}

#[tokio::test]
async fn gates_domain_adapter() {
    gates_for("domain_adapter").await;
}
