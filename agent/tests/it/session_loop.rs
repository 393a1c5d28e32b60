//! The agent loop against a fake model and a real MCP server on a real backend: tool use, call
//! order, refused calls, the turn cap, and a server that dies mid-session.

use std::time::Duration;

use crate::common::*;
use agent::record::CallKind;
use agent::{InvalidReason, StopSignal, Validity};
use serde_json::{Value, json};

#[tokio::test]
async fn multi_turn_tool_use_ends_in_a_final_answer() {
    let b = backend().await;
    let server = wrapper_http(b.url()).await;
    let fake = FakeModel::start(vec![
        Reply::json(tool_calls(&[("call_a", "customers_get", r#"{"id": 1}"#)], usage(100, 10))),
        Reply::json(text("Customer 1 is Northwind Traders.", usage(150, 8))),
    ])
    .await;
    let p = provider(config(&fake.base_url));
    let out = run(&server.conn, &p, &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid);
    assert_eq!(out.provider, "openai_compatible");
    assert_eq!(out.final_answer.as_deref(), Some("Customer 1 is Northwind Traders."));
    assert!(!out.turn_cap_hit);
    assert_eq!(out.turns.len(), 2);
    assert_eq!(out.turns[0].tool_calls, 1);
    assert_eq!(out.turns[0].finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(out.total(|u| u.prompt_tokens), Some(250));
    assert_eq!(out.total(|u| u.total_tokens), Some(268));
    assert_eq!(out.tool_calls.len(), 1);
    let call = &out.tool_calls[0];
    assert_eq!((call.turn, call.kind, call.name.as_str(), call.is_error), (1, CallKind::Tool, "customers_get", false));
    assert!(call.result_bytes > 0 && call.args_bytes == r#"{"id": 1}"#.len());
    assert!(out.offered.functions.contains(&"customers_get".to_owned()));
    assert!(out.started_at <= out.ended_at);

    let got = fake.received();
    assert_eq!(got.len(), 2);
    // Turn 1: system + task, with the server's functions and tool_choice auto.
    let first = &got[0];
    assert_eq!(first.body["model"], "fake-model");
    assert_eq!(first.body["tool_choice"], "auto");
    assert_eq!((first.body["temperature"].as_f64(), first.body["max_tokens"].as_u64(), first.body["seed"].as_i64()), (Some(0.0), Some(512), Some(7)));
    assert_eq!(first.tool_names(), out.offered.functions);
    assert_eq!(first.messages(), &vec![json!({"role": "system", "content": agent::SYSTEM_PROMPT}), json!({"role": "user", "content": TASK})]);
    assert_eq!(first.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(first.header(SECRET_HEADER), Some(SECRET_HEADER_VALUE));
    // Turn 2: the assistant's call and its result, under the right id.
    let m = got[1].messages();
    assert_eq!(m.len(), 4);
    assert_eq!(m[2]["role"], "assistant");
    assert_eq!(m[2]["tool_calls"][0]["id"], "call_a");
    assert_eq!(m[2]["tool_calls"][0]["function"]["arguments"], r#"{"id": 1}"#);
    assert_eq!(m[3]["role"], "tool");
    assert_eq!(m[3]["tool_call_id"], "call_a");
    let result: Value = serde_json::from_str(m[3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["name"], "Northwind Traders");

    // The transcript has every message and the call, in order.
    let kinds: Vec<String> = out.transcript.iter().map(|e| e["event"].as_str().unwrap().to_owned()).collect();
    assert_eq!(kinds, ["start", "offered", "message", "message", "response", "message", "call", "message", "response", "message", "end"]);
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn parallel_calls_in_one_response_run_in_order() {
    let b = backend().await;
    let server = wrapper_http(b.url()).await;
    let fake = FakeModel::start(vec![
        Reply::json(tool_calls(
            &[("c1", "customers_get", r#"{"id": 2}"#), ("c2", "customers_get", r#"{"id": 1}"#), ("c3", "customers_get", r#"{"id": 999999}"#)],
            usage(100, 30),
        )),
        Reply::json(text("done", usage(300, 2))),
    ])
    .await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid);
    assert_eq!(out.turns[0].tool_calls, 3);
    assert_eq!(out.tool_calls.len(), 3);
    assert!(out.tool_calls.iter().all(|c| c.turn == 1 && c.name == "customers_get"));
    // A missing record is the tool's error, shown to the model, not a session failure.
    assert_eq!(out.tool_calls.iter().map(|c| c.is_error).collect::<Vec<_>>(), [false, false, true]);
    let m = &fake.received()[1];
    let tools: Vec<&Value> = m.messages().iter().filter(|x| x["role"] == "tool").collect();
    assert_eq!(tools.iter().map(|t| t["tool_call_id"].as_str().unwrap()).collect::<Vec<_>>(), ["c1", "c2", "c3"]);
    assert!(tools[1]["content"].as_str().unwrap().contains("Northwind Traders"));
    let order: Vec<&str> = out.transcript.iter().filter(|e| e["event"] == "call").map(|e| e["tool_call_id"].as_str().unwrap()).collect();
    assert_eq!(order, ["c1", "c2", "c3"]);
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn malformed_arguments_and_unknown_functions_are_refused_and_flagged() {
    let server = wrapper_without_backend().await;
    let fake = FakeModel::start(vec![
        Reply::json(tool_calls(
            &[("bad", "customers_get", r#"{"id": 1"#), ("ghost", "delete_everything", "{}"), ("arr", "customers_get", "[1]")],
            usage(100, 20),
        )),
        Reply::json(text("I could not do it.", usage(200, 5))),
    ])
    .await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid);
    let c = &out.tool_calls;
    assert_eq!(c.len(), 3);
    assert!(c[0].invalid_arguments && !c[0].unknown_tool && c[0].is_error);
    assert!(c[1].unknown_tool && !c[1].invalid_arguments && c[1].is_error);
    assert_eq!(c[1].name, "delete_everything");
    assert!(c[2].invalid_arguments, "a JSON value that is not an object cannot be a function's arguments");
    assert!(c.iter().all(|c| c.latency_ms == 0.0), "refused calls never reach the server");
    let tools: Vec<Value> = fake.received()[1].messages().iter().filter(|x| x["role"] == "tool").cloned().collect();
    assert_eq!(tools.len(), 3);
    assert_eq!(tools[0]["tool_call_id"], "bad");
    assert!(tools[0]["content"].as_str().unwrap().contains("not valid JSON"));
    assert_eq!(tools[1]["tool_call_id"], "ghost");
    assert!(tools[1]["content"].as_str().unwrap().contains("no function named \"delete_everything\""));
    assert!(tools[2]["content"].as_str().unwrap().contains("not a JSON object"));
}

#[tokio::test]
async fn the_turn_cap_is_a_valid_flagged_failure() {
    let server = wrapper_without_backend().await;
    let ask = |id: &str| Reply::json(tool_calls(&[(id, "customers_get", r#"{"id": 1}"#)], usage(10, 1)));
    let fake = FakeModel::start(vec![ask("t1"), ask("t2"), ask("t3"), ask("never-sent")]).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 3).await;

    assert_eq!(out.validity, Validity::Valid);
    assert!(out.turn_cap_hit);
    assert_eq!(out.final_answer, None);
    assert_eq!(out.turns.len(), 3);
    assert_eq!(fake.received().len(), 3);
    assert_eq!(fake.unanswered(), 1);
    // No backend behind the server: every call is the tool's error, and the session goes on.
    assert!(out.tool_calls.iter().all(|c| c.is_error && !c.invalid_arguments && !c.unknown_tool));
}

#[tokio::test]
async fn a_server_killed_mid_session_is_an_mcp_transport_failure() {
    let b = backend().await;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    // A stdio server whose pid the test can find: a shell line sets the pid-file variable for the
    // child only (setting it in this multi-threaded test process would be unsound) and execs it.
    let line = format!("AGENT_TEST_SERVER_PID_FILE='{}' exec '{}' '{}'", pid_file.display(), env!("CARGO_BIN_EXE_agent-test-server"), b.url());
    let conn = agent::ServerConnection::stdio(vec!["sh".into(), "-c".into(), line]);

    let kill_pid = pid_file.clone();
    let fake = FakeModel::start(vec![
        Reply::json(tool_calls(&[("c1", "customers_get", r#"{"id": 1}"#)], usage(100, 10))),
        Reply::json(tool_calls(&[("c2", "customers_get", r#"{"id": 2}"#)], usage(150, 10))).before(move || {
            let pid = std::fs::read_to_string(&kill_pid).expect("the server wrote its pid");
            let status = std::process::Command::new("kill").args(["-9", pid.trim()]).status().unwrap();
            assert!(status.success());
            std::thread::sleep(Duration::from_millis(50));
        }),
        Reply::json(text("unreachable", usage(1, 1))),
    ])
    .await;
    let out = run(&conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

    match &out.validity {
        Validity::Invalid { reason: InvalidReason::McpTransport, detail } => assert!(detail.contains("customers_get"), "{detail}"),
        other => panic!("expected mcp_transport, got {other:?}"),
    }
    assert_eq!(out.tool_calls.len(), 1, "the first call went through; the second never completed");
    assert!(!out.tool_calls[0].is_error);
    assert_eq!(out.turns.len(), 2);
    assert_eq!(fake.received().len(), 2);
    assert!(out.transcript.iter().any(|e| e["event"] == "call" && e["tool_call_id"] == "c2" && e.get("transport_error").is_some()));
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_final_answer_holding_a_call_written_as_text_is_flagged_not_executed() {
    let server = wrapper_without_backend().await;
    // What llama.cpp's server returns when the chat template has no tool support.
    let written = "```json\n{\"name\": \"customers_get\", \"arguments\": {\"id\": 1}}\n```";
    let fake = FakeModel::start(vec![Reply::json(text(written, usage(100, 20)))]).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid, "still the arm's result; the flag says why it is worthless");
    assert!(out.tool_call_as_text);
    assert_eq!(out.final_answer.as_deref(), Some(written));
    assert!(out.tool_calls.is_empty(), "a call written as text is never executed");
    let event = out.transcript.iter().find(|e| e["event"] == "tool_call_as_text").expect("the transcript says so");
    assert_eq!((event["name"].as_str(), event["turn"].as_u64()), (Some("customers_get"), Some(1)));
    assert_eq!(serde_json::to_value(&out).unwrap()["tool_call_as_text"], true);
}

#[tokio::test]
async fn an_ordinary_answer_or_a_call_to_a_function_not_offered_is_not_flagged() {
    let server = wrapper_without_backend().await;
    for answer in ["Customer 1 is Northwind Traders.", r#"{"name": "delete_everything", "arguments": {}}"#, r#"{"id": 1, "name": "Northwind Traders"}"#] {
        let fake = FakeModel::start(vec![Reply::json(text(answer, usage(10, 2)))]).await;
        let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;
        assert!(!out.tool_call_as_text, "{answer}");
        assert!(!out.transcript.iter().any(|e| e["event"] == "tool_call_as_text"));
    }
}

/// Distractors are listed around the arm's tools in every request, a call to one is refused by
/// the client (the arm never sees it) and recorded as a distractor call, and the session goes on.
#[tokio::test]
async fn a_distractor_is_listed_around_the_arms_tools_and_refused_by_the_client() {
    let b = backend().await;
    let server = wrapper_http(b.url()).await;
    let distractors = servers::distractors::Distractors::draw(45).unwrap();
    let names: Vec<String> = distractors.names().map(str::to_owned).collect();
    let fake = FakeModel::start(vec![
        Reply::json(tool_calls(&[("c1", &names[3], r#"{"id": "7"}"#), ("c2", "customers_get", r#"{"id": 1}"#)], usage(100, 20))),
        Reply::json(text("Customer 1 is Northwind Traders.", usage(150, 8))),
    ])
    .await;
    let p = provider(config(&fake.base_url));
    let out =
        tokio::time::timeout(Duration::from_secs(60), agent::session::run(&server.conn, &distractors, TASK, agent::SYSTEM_PROMPT, 10, &p, &StopSignal::new()))
            .await
            .unwrap();
    assert_eq!(out.validity, Validity::Valid);
    assert_eq!(out.offered.distractors, 45);
    // 45 = a server of 40 and one of 5: the arm's tools go at the boundary nearest half, after 40.
    let sent = fake.received()[0].tool_names();
    assert_eq!(sent, out.offered.functions);
    assert_eq!(sent[..40], names[..40]);
    assert_eq!(sent[sent.len() - 5..], names[40..]);
    let own: Vec<&String> = sent[40..sent.len() - 5].iter().collect();
    assert!(own.iter().any(|n| *n == "customers_get") && !own.iter().any(|n| names.contains(n)), "{own:?}");

    let (refused, made) = (&out.tool_calls[0], &out.tool_calls[1]);
    assert_eq!((refused.name.as_str(), refused.distractor, refused.is_error, refused.unknown_tool), (names[3].as_str(), true, true, false));
    assert_eq!((made.name.as_str(), made.distractor, made.is_error), ("customers_get", false, false));
    // What the model read back for the distractor is the other server's refusal.
    let m = fake.received()[1].messages().clone();
    let answer = m.iter().find(|x| x["tool_call_id"] == "c1").unwrap()["content"].as_str().unwrap().to_owned();
    assert!(answer.contains("no access") && answer.contains(&names[3]), "{answer}");
    assert_eq!(refused.result_bytes, answer.len());
    let offered = out.transcript.iter().find(|e| e["event"] == "offered").unwrap();
    assert_eq!(offered["distractors"]["count"], 45);
    assert_eq!(offered["distractors"]["before_arm"], 40);
    let call = out.transcript.iter().find(|e| e["event"] == "call" && e["tool_call_id"] == "c1").unwrap();
    assert_eq!(call["distractor"], true);
    b.shutdown().await.unwrap();
}
