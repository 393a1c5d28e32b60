//! `pipeline regrade`: sessions graded again over their kept final states, without a model — the
//! same outcomes on an unchanged tree, new ones only where a verifier changed, and a session whose
//! kept state does not match its record left as graded.

use std::path::Path;

use crate::common::{self, pipeline, records};

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn regrade(exp: &Path, tasks: Option<&Path>, all: bool) -> serde_json::Value {
    let mut c = pipeline();
    c.arg("regrade").arg(exp).arg("--json");
    if all {
        c.arg("--all");
    }
    if let Some(t) = tasks {
        c.env("MCPBENCH_TASKS_DIR", t);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn by_status(report: &serde_json::Value, status: &str) -> Vec<serde_json::Value> {
    report["sessions"].as_array().unwrap().iter().filter(|s| s["status"] == status).cloned().collect()
}

/// What a regrade must reproduce: everything the verifier and graders decide but the time it
/// took, the versions, and the wording of failed checks (rows of a query without an order can
/// come back in another order from a rebuilt table).
fn decided(v: &serde_json::Value) -> serde_json::Value {
    let mut v = v.clone();
    for k in ["elapsed_ms", "graded", "reasons"] {
        v.as_object_mut().unwrap().remove(k);
    }
    v
}

#[test]
fn a_regrade_reproduces_every_outcome_on_an_unchanged_tree_and_changes_only_what_a_verifier_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline()
        .args(["--module", "tool_orchestrator", "--models", "oracle,sim:vandal", "--k", "1", "--exp-name", "e", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let exp = tmp.path().join("e");
    let before = records(&exp);
    assert!(before.iter().all(|r| r["verifier"]["graded"]["grader_sha256"].as_str().is_some_and(|h| h.len() == 64)), "the run records its versions");
    let changed = before.iter().filter(|r| !r["verifier"]["changed_tables"].as_array().unwrap().is_empty()).count();
    assert!(changed * 2 > before.len(), "most sessions changed the world (the oracle's as the tasks ask, the vandal's anyhow): {changed} of {}", before.len());

    // Unchanged tree: nothing to do, and with --all every state rebuilt and graded the same.
    let nothing = regrade(&exp, None, false);
    assert_eq!(by_status(&nothing, "unchanged").len(), before.len(), "{nothing}");
    let again = regrade(&exp, None, true);
    assert_eq!(by_status(&again, "regraded").len(), before.len(), "{again}");
    let after = records(&exp);
    for (a, b) in before.iter().zip(&after) {
        assert_eq!(a["task"], b["task"]);
        assert_eq!(decided(&a["verifier"]), decided(&b["verifier"]), "{} on {}", a["task"], a["server"]);
        assert_eq!(decided(&b["earlier_grades"][0]), decided(&a["verifier"]));
        assert!(b["verifier"]["graded"]["regraded_at"].is_string());
    }

    // One verifier changed (a check no state can hold): only that task's sessions are graded
    // again, and the oracle's passes become failures; every other session is already graded by
    // its task's current verifier.
    let task = after.iter().find(|r| r["model"]["id"] == "oracle" && !r["verifier"]["changed_tables"].as_array().unwrap().is_empty()).unwrap()["task"]
        .as_str()
        .unwrap()
        .to_owned();
    let tasks = tmp.path().join("tasks");
    common::copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks/tool_orchestrator"), &tasks.join("tool_orchestrator"));
    let verify = tasks.join("tool_orchestrator").join(&task).join("verify.toml");
    let was = std::fs::read_to_string(&verify).unwrap();
    std::fs::write(&verify, format!("{was}\n[[sql]]\nname = \"a check no state holds\"\nquery = \"SELECT 1 = 2 AS never\"\nexpect = true\n")).unwrap();
    let report = regrade(&exp, Some(&tasks), false);
    let flipped = by_status(&report, "verdict_changed");
    assert_eq!(flipped.len(), 2, "the oracle's sessions of {task}, both arms: {report}");
    assert!(flipped.iter().all(|s| s["task"] == task.as_str() && s["from"] == "passed" && s["to"] == "failed"), "{report}");
    let same = by_status(&report, "regraded");
    assert!(same.len() == 2 && same.iter().all(|s| s["task"] == task.as_str() && s["to"] == "failed"), "the vandal's sessions of {task}: {report}");
    assert_eq!(by_status(&report, "unchanged").len(), before.len() - 4, "{report}");
    let now = records(&exp);
    let r = now.iter().find(|r| r["task"] == task.as_str() && r["model"]["id"] == "oracle").unwrap();
    assert_eq!(r["earlier_grades"].as_array().unwrap().len(), 2, "both earlier outcomes kept");
    assert!(r["verifier"]["reasons"].as_array().unwrap().iter().any(|x| x.as_str().unwrap().starts_with("a check no state holds")));

    // One version per task and grader: the report pools them and names them.
    let out = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(exp.join("report.md")).unwrap();
    let row = md.lines().find(|l| l.starts_with("| graded by |")).expect("the provenance names the grading");
    assert!(row.contains(&format!("{} sessions regraded", before.len())), "{row}");

    // A kept state that is not the one the record hashed is never graded.
    let victim = now
        .iter()
        .find(|r| r["model"]["id"] == "sim:vandal" && r["task"] != task.as_str() && !r["verifier"]["changed_tables"].as_array().unwrap().is_empty())
        .unwrap();
    let transcript =
        exp.join(format!("sim_vandal__{}", victim["server"].as_str().unwrap())).join(format!("{}__rep1.transcript.jsonl", victim["task"].as_str().unwrap()));
    let kept = std::fs::read_to_string(&transcript).unwrap();
    let (head, world) = kept.trim_end().rsplit_once('\n').unwrap();
    let mut event: serde_json::Value = serde_json::from_str(world).unwrap();
    event["changes"].as_array_mut().unwrap().pop();
    std::fs::write(&transcript, format!("{head}\n{event}\n")).unwrap();
    let report = regrade(&exp, None, true);
    let left = by_status(&report, "left");
    assert_eq!(left.len(), 1, "{report}");
    assert!(left[0]["why"].as_str().unwrap().contains("is not the one its record hashed"), "{report}");
}

/// A judge that knows the hand grades: for an answer of the gold set's held-out part it gives the
/// human's class (a `correct`, which a judge may not give, is unreadable), for any other answer
/// `honest_failure`. OpenAI's chat completion shape.
fn hand_grade_judge() -> String {
    let gold: toml::Value = toml::from_str(&std::fs::read_to_string(pipeline::gold::Part::HeldOut.path()).unwrap()).unwrap();
    // answer → (class, references as the judge lists them)
    let grades: std::collections::BTreeMap<String, (String, serde_json::Value)> = gold["case"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let references: Vec<serde_json::Value> = c["grounding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| serde_json::json!({ "text": r[0].as_str().unwrap(), "kind": r[1].as_str().unwrap() }))
                .collect();
            (c["answer"].as_str().unwrap().to_owned(), (c["class"].as_str().unwrap().to_owned(), serde_json::Value::from(references)))
        })
        .collect();
    let grades = std::sync::Arc::new(grades);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let chat = move |axum::Json(body): axum::Json<serde_json::Value>| {
                let grades = grades.clone();
                async move {
                    let asked = body["messages"][1]["content"].as_str().unwrap_or_default();
                    let answer = asked.split_once("FINAL ANSWER:\n").map_or("", |(_, a)| a);
                    let known = grades.get(answer);
                    let content = if body["messages"][0]["content"].as_str().unwrap_or_default().starts_with("List every entity") {
                        serde_json::json!({ "references": known.map_or(serde_json::json!([]), |k| k.1.clone()) }).to_string()
                    } else {
                        let class = known.map_or("honest_failure", |k| k.0.as_str());
                        format!("{{\"class\": \"{class}\", \"claim\": \"(known)\"}}")
                    };
                    axum::Json(serde_json::json!({
                        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                    }))
                }
            };
            let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(chat));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{}/v1", rx.recv().unwrap())
}

/// A model judge is graded on the held-out gold part before it classes anything, its classes
/// replace the rules' (never mixed with them), and the report names it with its agreement. The
/// judge here gives the hand grade whenever the definitions leave it a choice, so its agreement
/// is known: it disagrees exactly where the verifier's verdict does (a pass it must call
/// `correct`, a fail it is never asked to call one), the verdict layer's held-out agreement.
#[test]
fn a_judge_is_graded_on_the_held_out_gold_set_and_its_classes_are_reported_as_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline()
        .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave,hand_ticket_77_to_marcus", "--models", "oracle,sim:vandal_only"])
        .args(["--k", "1", "--exp-name", "e", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let exp = tmp.path().join("e");
    let url = hand_grade_judge();
    let out =
        pipeline().args(["regrade", "--judge", "judge-model", "--judge-base-url", &url, "--json"]).arg(&exp).env_remove("OPENAI_API_KEY").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let judge = &report["judge"];
    let verdict = aggregate::graders::agreement().layer("verdict").cloned().unwrap();
    assert_eq!(judge["class"]["items"].as_u64(), Some(verdict.n as u64), "{judge}");
    assert_eq!((judge["class"]["accuracy"].as_f64().unwrap() * 1000.0).round() / 1000.0, verdict.accuracy, "{judge}");
    assert!(judge["class"]["unanswered"].as_u64().unwrap() > 0, "the hand grade `correct` of a failed verdict is no class a judge may give: {judge}");
    // What it decided itself is counted apart: the failed answers only, where every miss is one
    // of those unanswered `correct`s.
    let asked = judge["class"]["asked"].as_u64().unwrap();
    assert!(asked > 0 && asked < verdict.n as u64, "{judge}");
    let missed = asked as f64 * (1.0 - judge["class"]["asked_accuracy"].as_f64().unwrap());
    assert_eq!(missed.round() as u64, judge["class"]["unanswered"].as_u64().unwrap(), "{judge}");
    assert_eq!(judge["prompt_sha256"].as_str().map(str::len), Some(64));
    // Its references are the hand-read ones, word for word: what is left to disagree on is how
    // the world resolves them, which the rules do for the judge too. That must agree better than
    // the rules' own extractor does (it misses forms a person reads), and every answer was read.
    let rules = aggregate::graders::agreement().layer("grounding").cloned().unwrap();
    assert_eq!(judge["grounding"]["unanswered"], 0, "{judge}");
    assert!(judge["grounding"]["accuracy"].as_f64().unwrap() > rules.accuracy, "{judge} against the rules' {}", rules.accuracy);
    assert!(judge["grounding"]["items"].as_u64().unwrap() as usize >= rules.n * 9 / 10, "{judge}");

    for r in records(&exp) {
        let v = &r["verifier"];
        assert_eq!(v["graded"]["judge"]["model"], "judge-model", "{v}");
        assert!(v["grounding"]["references"].is_array(), "the judge's grounding, read: {v}");
        let class = v["class"]["class"].as_str().unwrap();
        if r["model"]["id"] == "oracle" {
            assert_eq!(class, "correct", "a pass is correct by definition, never asked");
        } else {
            assert_eq!((class, v["class"]["decided_by"].as_str().unwrap()), ("honest_failure", "the judge: \"(known)\""), "{v}");
        }
    }
    let out = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(exp.join("report.md")).unwrap();
    assert!(md.contains("These classes are the judge's: the model judge-model at"), "{md}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(exp.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["method"]["judge"]["model"], "judge-model");
    let sim = summary["models"].as_array().unwrap().iter().find(|m| m["model"] == "sim:vandal_only").unwrap();
    let classes = &sim["modules"][0]["pattern"]["outcome_classes"]["classes"];
    let honest = classes.as_array().unwrap().iter().find(|c| c["class"] == "honest_failure").unwrap();
    assert_eq!(honest["n"], 2, "the judge's classes, not the rules' (which call a bare \"Done\" wrong_confident): {classes}");
}
