//! `--protocol`: the MCP revision the agent's client speaks. Under 2026-07-28 (`server/discover`,
//! every request self-contained) every arm answers over stdio, the records say which revision
//! each server answered and the fingerprint which one the run asked for; over streamable HTTP the
//! revision has no session, and a pattern that keeps its state per session cannot work there:
//! G7, which replays under the run's transport and revision, says so before a model session is
//! spent.

use std::path::Path;
use std::process::Output;

use backend::WorldSpec;
use backend::local::LocalBackend;
use servers::client::Protocol;
use tasks::gates::{Under, ground_truth_with};

use crate::common::{pipeline, records};

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn run(results: &Path, exp: &str, args: &[&str]) -> Output {
    pipeline()
        .args(["--module", "stateful_session", "--models", "oracle", "--tasks", "approve_checkout_web_1"])
        .args(args)
        .args(["--exp-name", exp, "--results-dir"])
        .arg(results)
        .output()
        .unwrap()
}

#[test]
fn a_run_speaks_the_revision_it_is_told_and_records_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), "new", &["--protocol", "2026-07-28"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let recs = records(&tmp.path().join("new"));
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r["verifier"]["verdict"], "passed", "{}", r["server"]);
        assert_eq!(r["server_info"]["protocol_version"], "2026-07-28", "what the server answered");
        assert_eq!(r["fingerprint"]["protocol"], "2026-07-28", "what the run asked for");
    }
    // The report says which revision its sessions spoke.
    let report = pipeline().args(["aggregate", "--result-dir"]).arg(tmp.path().join("new")).output().unwrap();
    assert!(report.status.success(), "{}", text(&report));
    let md = std::fs::read_to_string(tmp.path().join("new/report.md")).unwrap();
    assert!(md.contains("| MCP revision spoken | 2026-07-28 (2 sessions) |"), "{md}");
    // The default revision leaves the fingerprint as it was before the setting existed.
    let out = run(tmp.path(), "old", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for r in records(&tmp.path().join("old")) {
        assert_eq!(r["server_info"]["protocol_version"], "2025-11-25");
        assert!(r["fingerprint"].get("protocol").is_none(), "{}", r["fingerprint"]);
    }
    // Resuming under another revision is another measurement: refused, naming the field.
    let out = run(tmp.path(), "new", &[]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out).contains("protocol"), "{}", text(&out));
    // A revision the client does not speak: refused by the flag, naming the ones it does.
    let out = run(tmp.path(), "bad", &["--protocol", "2024-01-01"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("2025-11-25") && text(&out).contains("2026-07-28"), "{}", text(&out));
}

#[tokio::test]
async fn g7_replays_under_the_runs_transport_and_revision() {
    let b = LocalBackend::start(WorldSpec::default()).await.unwrap();
    let serve = vec![env!("CARGO_BIN_EXE_pipeline").to_owned(), "serve".to_owned()];
    let dir = tasks::default_tasks_dir();
    let all = tasks::load_module(&dir, "stateful_session").unwrap();
    let task = all.iter().find(|t| t.id == "approve_checkout_web_1").unwrap();
    let (pattern, control) = servers::registry::arms("stateful_session").unwrap();
    let under = |transport, protocol| Under { transport: Some(transport), protocol, ..Default::default() };
    use records::Transport::{Http, Stdio};
    for (transport, protocol) in [(Stdio, Protocol::V2025_11_25), (Stdio, Protocol::V2026_07_28), (Http, Protocol::V2025_11_25), (Http, Protocol::V2026_07_28)]
    {
        ground_truth_with(task, control, b.world(), b.url(), &serve, under(transport, protocol))
            .await
            .unwrap_or_else(|e| panic!("the control holds no state and works everywhere ({transport:?}, {protocol:?}): {e}"));
        let pattern_g7 = ground_truth_with(task, pattern, b.world(), b.url(), &serve, under(transport, protocol)).await;
        if (transport, protocol) == (Http, Protocol::V2026_07_28) {
            let e = pattern_g7.expect_err("a draft held per session cannot be found again without one");
            assert!(e.contains("need an MCP session") && e.contains("MCP 2026-07-28"), "{e}");
        } else {
            pattern_g7.unwrap_or_else(|e| panic!("{transport:?}, {protocol:?}: {e}"));
        }
    }
    b.shutdown().await.unwrap();
}
