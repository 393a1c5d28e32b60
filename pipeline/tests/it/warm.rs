//! Warm sessions (`--session-mode warm`): one conversation per model, arm and rep through the
//! module's tasks — its records, its order, a resume that runs a conversation whole, a context
//! window that ends it with a named reason, and the comparison with a cold run. Runs the real
//! binary, against the oracle and the local fake model.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use crate::common::fake_model::{FakeModel, MODEL, Mode};
use crate::common::{pipeline, records};

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

const TASKS: &str = "lena_goes_on_leave,two_tickets_for_globex,hand_ticket_77_to_marcus";

fn oracle(results: &Path, exp: &str, mode: &str) -> Output {
    pipeline()
        .args(["--module", "tool_orchestrator", "--tasks", TASKS, "--models", "oracle", "--k", "2", "--session-mode", mode, "--exp-name", exp, "--results-dir"])
        .arg(results)
        .output()
        .unwrap()
}

/// (server, rep) → the conversation's tasks by position, from the records.
fn conversations(recs: &[serde_json::Value]) -> BTreeMap<(String, u64), Vec<(u64, String)>> {
    let mut m: BTreeMap<(String, u64), Vec<(u64, String)>> = BTreeMap::new();
    for r in recs {
        let c = &r["conversation"];
        m.entry((r["server"].as_str().unwrap().to_owned(), r["rep"].as_u64().unwrap()))
            .or_default()
            .push((c["position"].as_u64().unwrap(), r["task"].as_str().unwrap().to_owned()));
    }
    for v in m.values_mut() {
        v.sort();
    }
    m
}

#[test]
fn a_warm_run_records_each_task_in_its_conversation_and_resumes_a_conversation_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let out = oracle(tmp.path(), "w", "warm");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let exp = tmp.path().join("w");
    let recs = records(&exp);
    assert_eq!(recs.len(), 3 * 2 * 2, "three tasks × two arms × k 2");
    for r in &recs {
        assert_eq!(r["verifier"]["verdict"], "passed", "{r}");
        assert_eq!(r["fingerprint"]["session_mode"], "warm");
        let c = &r["conversation"];
        assert_eq!(c["id"], format!("oracle__{}__rep{}", r["server"].as_str().unwrap(), r["rep"]));
        assert_eq!(c["tasks"].as_array().unwrap().len(), 3);
        assert!(c["context_tokens_at_start"].is_null(), "the oracle has no usage, and it is not zero");
        // The server starts once per conversation: its first task's record carries the start-up.
        let start = r["harness"]["server_start_ms"].as_f64();
        if c["position"] == 1 {
            assert!(start.is_some_and(|ms| ms > 0.0 && ms < r["harness"]["session_ms"].as_f64().unwrap()), "{r}");
        } else {
            assert_eq!(start, None, "{r}");
        }
    }
    // The same order for both arms of a rep, rotated by one from rep 1 to rep 2.
    let convs = conversations(&recs);
    let order = |server: &str, rep: u64| convs[&(server.to_owned(), rep)].iter().map(|(_, t)| t.clone()).collect::<Vec<_>>();
    assert_eq!(order("orchestrator", 1), order("wrapper", 1));
    assert_eq!(order("orchestrator", 2), order("wrapper", 2));
    let (one, two) = (order("orchestrator", 1), order("orchestrator", 2));
    assert_eq!(two, vec![one[1].clone(), one[2].clone(), one[0].clone()], "rep 2 starts at rep 1's second task");
    // Positions are 1..=3 in every conversation, and each record names its task where it sat.
    for v in convs.values() {
        assert_eq!(v.iter().map(|(p, _)| *p).collect::<Vec<_>>(), vec![1, 2, 3]);
    }
    // The warm oracle carries every earlier task: a later position's estimate includes the
    // conversation so far, so the same task costs more in second place than first.
    let est = |server: &str, rep: u64, task: &str| {
        recs.iter()
            .find(|r| r["server"] == server && r["rep"] == rep && r["task"] == task)
            .map(|r| r["oracle"]["estimated_input_tokens"].as_u64().unwrap())
            .unwrap()
    };
    let moved = &one[1];
    assert!(est("orchestrator", 2, moved) < est("orchestrator", 1, moved), "{moved}: first in rep 2, second in rep 1");

    // A complete warm experiment resumes to nothing.
    let again = oracle(tmp.path(), "w", "warm");
    assert!(text(&again).contains("12 already recorded, 0 to run"), "{}", text(&again));

    // One task's record gone: its whole conversation runs again, the others' records superseded.
    let gone = exp.join("oracle__wrapper").join(format!("{}__rep1.json", one[1]));
    std::fs::remove_file(&gone).unwrap();
    std::fs::remove_file(gone.with_extension("transcript.jsonl")).unwrap();
    let resumed = oracle(tmp.path(), "w", "warm");
    let t = text(&resumed);
    assert_eq!(resumed.status.code(), Some(0), "{t}");
    assert!(t.contains("9 already recorded, 3 to run"), "the conversation of three runs whole: {t}");
    let superseded: Vec<_> = std::fs::read_dir(exp.join("oracle__wrapper").join("superseded"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(superseded.len(), 2, "the two recorded tasks of that conversation are kept as superseded");
    let body = std::fs::read_to_string(superseded[0].path()).unwrap();
    assert!(body.contains("rerun whole: a warm conversation runs from its start"), "{body}");
    assert_eq!(records(&exp).len(), 12);

    // A cold run of the same plan is another measurement: resuming it as warm is refused.
    let cold = oracle(tmp.path(), "w", "cold");
    let t = text(&cold);
    assert_eq!(cold.status.code(), Some(1), "{t}");
    assert!(t.contains("session_mode"), "the refusal names the field: {t}");
}

#[test]
fn cold_and_warm_compare_side_by_side_with_the_gap() {
    let tmp = tempfile::tempdir().unwrap();
    for mode in ["cold", "warm"] {
        let out = oracle(tmp.path(), mode, mode);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    // Never pooled: a merge of the two is refused by name.
    let merged =
        pipeline().args(["aggregate", "--merge", "cold,warm", "--out"]).arg(tmp.path().join("m")).arg("--results-dir").arg(tmp.path()).output().unwrap();
    assert_eq!(merged.status.code(), Some(1), "{}", text(&merged));
    assert!(text(&merged).contains("session_mode"), "{}", text(&merged));

    let out_dir = tmp.path().join("cmp");
    let out = pipeline()
        .args(["aggregate", "--compare"])
        .arg(tmp.path().join("cold"))
        .arg(tmp.path().join("warm"))
        .args(["--along", "session_mode", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("compare.json")).unwrap()).unwrap();
    let gaps = json["gaps"].as_array().unwrap();
    assert_eq!(gaps.len(), 2, "the oracle's estimate, per arm: {gaps:?}");
    for g in gaps {
        assert_eq!(g["metric"], "estimated_input_tokens");
        let (a, b) = (g["mean_a"].as_f64().unwrap(), g["mean_b"].as_f64().unwrap());
        assert!((g["difference"].as_f64().unwrap() - (b - a)).abs() < 1e-9);
        assert!(b > a, "without a provider's cache, a warm conversation resends what came before: {g}");
        assert!(g["ci95"].is_null(), "an estimate has no interval");
    }
    let md = std::fs::read_to_string(out_dir.join("compare.md")).unwrap();
    assert!(md.contains("## Session mode gap") && md.contains("A is cold, B is warm"), "{md}");

    // Experiments given by path (as a shell completes them) are found too; a name that is
    // neither is refused naming both places looked at.
    let by_path =
        pipeline().current_dir(tmp.path()).args(["aggregate", "--compare", "cold", "warm", "--along", "session_mode", "--out", "cmp2"]).output().unwrap();
    assert_eq!(by_path.status.code(), Some(0), "{}", text(&by_path));
    let nope = pipeline().current_dir(tmp.path()).args(["aggregate", "--compare", "nope", "warm", "--out", "cmp3"]).output().unwrap();
    assert_eq!(nope.status.code(), Some(1), "{}", text(&nope));
    assert!(text(&nope).contains("no experiment \"nope\": neither results/nope nor nope is a folder"), "{}", text(&nope));

    // The warm report shows the order effects; the cold one does not.
    for (exp, has) in [("warm", true), ("cold", false)] {
        let rep = pipeline().args(["aggregate", "--result-dir"]).arg(tmp.path().join(exp)).output().unwrap();
        assert_eq!(rep.status.code(), Some(0), "{}", text(&rep));
        let md = String::from_utf8_lossy(&rep.stdout);
        assert_eq!(md.contains("## Order effects"), has, "{exp}");
    }
}

/// The fake model answers at once while the conversation fits and refuses with OpenAI's own
/// `context_length_exceeded` past five messages: the third task outgrows the window (a valid
/// failure, flagged), the fourth is never attempted (invalid, naming the task where it ended),
/// and every request of a later task carried the earlier ones.
#[test]
fn a_conversation_that_outgrows_the_context_ends_with_a_named_reason() {
    let fake = FakeModel::start(Mode::ContextWindow { max_messages: 5 });
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline()
        .env_remove("OPENAI_API_KEY")
        .args(["--mcp", "orchestrator", "--tasks", "lena_goes_on_leave,two_tickets_for_globex,hand_ticket_77_to_marcus,escalation_notice_ticket_301"])
        .args(["--models", MODEL, "--seed", "1", "--session-mode", "warm", "--exp-name", "ctx", "--base-url", &fake.base_url])
        // One invalid session in a row would stop the run if the ended conversation counted.
        .args(["--max-consecutive-invalid", "1", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(3), "completed, with invalid sessions: {t}");
    // One conversation: system + task 1; + answer + task 2; + answer + task 3, refused (a 400 is not retried).
    assert_eq!(fake.message_counts(), vec![2, 4, 6], "each task's request carried the conversation so far");
    let recs = records(&tmp.path().join("ctx"));
    let at = |p: u64| recs.iter().find(|r| r["conversation"]["position"] == p).unwrap();
    for p in [1, 2] {
        assert_eq!(at(p)["validity"]["class"], "valid");
        assert_eq!(at(p)["conversation"]["context_tokens_at_start"], 120, "the endpoint's own count of the first request");
    }
    assert_eq!(at(2)["conversation"]["messages_before"], 2);
    assert_eq!(at(2)["conversation"]["earlier_not_passed"], 1);
    assert_eq!(at(3)["validity"]["class"], "valid", "outgrowing the window is the conversation's result, not attrition");
    assert_eq!(at(3)["context_exceeded"], true);
    assert_eq!(at(4)["validity"]["reason"], "conversation_ended");
    assert!(at(4)["validity"]["detail"].as_str().unwrap().contains("context window in its task 3"), "{}", at(4)["validity"]);
    // The first task's first request not fitting would be a configuration problem; the third's is not.
    assert!(!t.contains("circuit_breaker") && !t.contains("STOPPED EARLY"), "the ended conversation does not trip the breaker: {t}");
}

/// Dev and held-out tasks never share a conversation: a held-out task's context carries no dev
/// task, and the held-out conversation has an id of its own.
#[test]
fn dev_and_held_out_tasks_are_separate_conversations() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline()
        .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave,two_tickets_for_globex,what_tom_fischer_still_has_open"])
        .args(["--models", "oracle", "--k", "1", "--session-mode", "warm", "--exp-name", "split", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let recs = records(&tmp.path().join("split"));
    assert_eq!(recs.len(), 3 * 2);
    for r in &recs {
        let c = &r["conversation"];
        let held_out = r["task"] == "what_tom_fischer_still_has_open";
        assert_eq!(r.get("split").and_then(|s| s.as_str()), held_out.then_some("held_out"), "{r}");
        let (tasks, id) = (c["tasks"].as_array().unwrap(), c["id"].as_str().unwrap());
        if held_out {
            assert_eq!(tasks.len(), 1, "the held-out task alone: {c}");
            assert_eq!(id, format!("oracle__{}__held_out__rep1", r["server"].as_str().unwrap()));
            assert_eq!(c["position"], 1, "first in its own conversation: nothing carried in");
        } else {
            assert_eq!(tasks.len(), 2, "the dev tasks only: {c}");
            assert!(tasks.iter().all(|t| t != "what_tom_fischer_still_has_open"), "{c}");
        }
    }
}
