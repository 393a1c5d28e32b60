//! The endpoint preflight against the fake model server: it passes only on a native tool call,
//! and every way a setup is broken comes back as a named failure with the endpoint's text and a
//! hint — spending at most one chat request.

use crate::common;

use crate::common::*;
use agent::{Preflight, PreflightFailureKind};
use serde_json::{Value, json};

fn failure(p: &Preflight) -> (PreflightFailureKind, &str, &str) {
    assert!(!p.passed, "expected a failed preflight: {p:#?}");
    let f = p.failure.as_ref().expect("a failed preflight names its failure");
    (f.kind, f.provider_text.as_str(), f.hint.as_str())
}

fn checks(p: &Preflight) -> Vec<(&str, bool)> {
    p.checks.iter().map(|c| (c.name, c.passed)).collect()
}

fn echo_call() -> Reply {
    Reply::json(tool_calls(&[("call_1", "preflight_echo", r#"{"word":"ready"}"#)], usage(180, 12)))
}

const TOOL_HINTS: [&str; 6] = ["--jinja", "--chat-template-file", "--enable-auto-tool-choice", "--tool-call-parser", "ollama show", "--skip-preflight"];

#[tokio::test]
async fn a_native_tool_call_passes_with_one_chat_request() {
    let fake = FakeModel::start(vec![echo_call(), Reply::json(text("never asked", usage(1, 1)))]).await;
    fake.list_models(&["other-model", "fake-model"]);
    let p = agent::preflight(&provider(config(&fake.base_url))).await;

    assert!(p.passed, "{}", p.summary());
    assert_eq!(p.failure, None);
    assert_eq!(checks(&p), [("endpoint", true), ("model", true), ("native_tool_calls", true)]);
    assert!(p.checks[1].detail.contains("lists `fake-model`"), "{}", p.checks[1].detail);
    assert!(p.checks[2].detail.contains(r#"preflight_echo({"word":"ready"})"#), "{}", p.checks[2].detail);
    assert!(p.summary().starts_with("preflight passed"), "{}", p.summary());

    // Exactly one chat request, with the provider's pinned parameters and a small budget.
    let chat = fake.received();
    assert_eq!(chat.len(), 1);
    assert_eq!(fake.unanswered(), 1);
    let body = &chat[0].body;
    assert_eq!(chat[0].tool_names(), ["preflight_echo"]);
    assert_eq!(body["tool_choice"], "auto", "not \"required\": llama.cpp's grammar loops on it");
    assert_eq!((body["temperature"].as_f64(), body["seed"].as_i64(), body["model"].as_str()), (Some(0.0), Some(7), Some("fake-model")));
    assert_eq!(body["max_tokens"], 512, "the run's own limit, under the run's own name: the probe sends nothing the run would not");
    assert_eq!(body.get("max_completion_tokens"), None);
    assert!(chat[0].messages().last().unwrap()["content"].as_str().unwrap().contains("\"ready\""));
    // Both requests carry the key and the extra headers, as every session request does.
    let listing = fake.models_received();
    assert_eq!(listing.len(), 1);
    for r in [&listing[0], &chat[0]] {
        assert_eq!(r.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
        assert_eq!(r.header(SECRET_HEADER), Some(SECRET_HEADER_VALUE));
    }

    // Each request and its answer, without headers.
    assert_eq!(p.probes.len(), 2);
    assert_eq!(p.probes[0]["request"], json!({ "method": "GET", "url": format!("{}/models", fake.base_url), "body": null }));
    assert_eq!(p.probes[0]["response"]["status"], 200);
    assert!(p.probes[0]["response"]["body"].as_str().unwrap().contains("\"fake-model\""));
    assert_eq!(p.probes[1]["request"]["method"], "POST");
    assert_eq!(p.probes[1]["request"]["url"], format!("{}/chat/completions", fake.base_url));
    assert_eq!(&p.probes[1]["request"]["body"], body);
    assert_eq!(p.probes[1]["response"]["status"], 200);
    let answered: Value = serde_json::from_str(p.probes[1]["response"]["body"].as_str().unwrap()).unwrap();
    assert_eq!(answered["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "preflight_echo");
}

#[tokio::test]
async fn without_a_model_listing_the_chat_request_decides_the_model_check() {
    for status in [None, Some(405), Some(501)] {
        let fake = FakeModel::start(vec![echo_call()]).await;
        if let Some(s) = status {
            fake.serve_models(s, "not here");
        }
        let p = agent::preflight(&provider(config(&fake.base_url))).await;
        assert!(p.passed, "{}", p.summary());
        let model = &p.checks[1];
        assert_eq!((model.name, model.passed), ("model", true));
        let code = status.unwrap_or(404);
        assert!(model.detail.contains(&format!("does not offer GET /models (HTTP {code})")) && model.detail.contains("chat request"), "{}", model.detail);
    }
}

#[tokio::test]
async fn a_port_nobody_listens_on_is_unreachable() {
    let base_url = nobody_listening().await;
    let p = agent::preflight(&provider(config(&base_url))).await;

    let (kind, text, hint) = failure(&p);
    assert_eq!(kind, PreflightFailureKind::Unreachable);
    assert!(!text.is_empty());
    assert!(hint.contains("--base-url") && hint.contains(&base_url), "{hint}");
    assert_eq!(checks(&p), [("endpoint", false)]);
    assert_eq!(p.probes.len(), 1, "nothing answered the listing: no chat request either");
    assert_eq!(p.probes[0]["response"], Value::Null);
    assert!(p.summary().starts_with("preflight failed: unreachable: "), "{}", p.summary());
}

const UNAUTHORIZED: &str = r#"{"error":{"message":"Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;

#[tokio::test]
async fn a_refused_key_is_unauthorized_naming_the_variable() {
    // Refused by the listing and by chat: the chat request's refusal decides.
    let fake = FakeModel::start(vec![Reply::raw(401, UNAUTHORIZED)]).await;
    fake.serve_models(401, UNAUTHORIZED);
    let p = agent::preflight(&provider(config(&fake.base_url))).await;
    let (kind, text, hint) = failure(&p);
    assert_eq!(kind, PreflightFailureKind::Unauthorized);
    assert!(text.contains("Incorrect API key provided."), "{text}");
    assert!(hint.contains(KEY_ENV) && hint.contains("--api-key-env"), "{hint}");
    assert_eq!(checks(&p), [("endpoint", false)]);
    assert_eq!(fake.received().len(), 1);

    // Refused by the chat request of a server without the listing.
    let fake = FakeModel::start(vec![Reply::raw(403, UNAUTHORIZED)]).await;
    let p = agent::preflight(&provider(config(&fake.base_url))).await;
    let (kind, text, _) = failure(&p);
    assert_eq!(kind, PreflightFailureKind::Unauthorized);
    assert!(text.contains("403") && text.contains("Incorrect API key provided."), "{text}");
    assert_eq!(checks(&p), [("endpoint", false)]);
}

#[tokio::test]
async fn a_listing_refused_while_chat_works_is_recorded_and_the_probe_goes_on() {
    // Anthropic's /v1/models wants its own headers, gateways authorise it apart: a working
    // endpoint must not be refused for it.
    for status in [401, 403, 404] {
        let fake = FakeModel::start(vec![echo_call()]).await;
        fake.serve_models(status, UNAUTHORIZED);
        let p = agent::preflight(&provider(config(&fake.base_url))).await;
        assert!(p.passed, "listing HTTP {status}: {}", p.summary());
        assert_eq!(checks(&p), [("endpoint", true), ("model", true), ("native_tool_calls", true)]);
        assert!(p.checks[1].detail.contains(&format!("HTTP {status}")), "the listing's answer is recorded: {}", p.checks[1].detail);
        assert_eq!(p.probes[0]["response"]["status"], status);
        assert_eq!(fake.received().len(), 1);
    }
}

#[tokio::test]
async fn a_404_about_the_model_is_unknown_model_with_the_verbatim_text() {
    let openai = r#"{"error":{"message":"The model `fake-model` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#;
    let vllm = r#"{"object":"error","message":"The model `fake-model` does not exist.","type":"NotFoundError","param":null,"code":404}"#;
    for (body, says) in [(openai, "The model `fake-model` does not exist or you do not have access to it."), (vllm, "The model `fake-model` does not exist.")] {
        let fake = FakeModel::start(vec![Reply::raw(404, body)]).await;
        let p = agent::preflight(&provider(config(&fake.base_url))).await;
        let (kind, text, hint) = failure(&p);
        assert_eq!(kind, PreflightFailureKind::UnknownModel);
        assert!(text.contains(says), "{text}");
        assert!(hint.contains("--models"), "{hint}");
        assert_eq!(checks(&p), [("endpoint", true), ("model", false)]);
        assert_eq!(fake.received().len(), 1, "one chat request, not retried");
        assert!(p.summary().contains(says), "{}", p.summary());
    }
}

#[tokio::test]
async fn a_404_about_the_path_points_at_the_base_url() {
    let fake = FakeModel::start(vec![Reply::raw(404, r#"{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}"#)]).await;
    let p = agent::preflight(&provider(config(&fake.base_url))).await;
    let (kind, text, hint) = failure(&p);
    assert_eq!(kind, PreflightFailureKind::ProviderError);
    assert!(text.contains("File Not Found"));
    assert!(hint.contains("--base-url"), "{hint}");
}

#[tokio::test]
async fn a_listing_without_the_model_is_unknown_model_before_any_token_is_spent() {
    let fake = FakeModel::start(vec![echo_call()]).await;
    fake.list_models(&["models/qwen2.5-coder-1.5b-q4_k_m.gguf"]);
    let p = agent::preflight(&provider(config(&fake.base_url))).await;
    let (kind, text, hint) = failure(&p);
    assert_eq!(kind, PreflightFailureKind::UnknownModel);
    assert_eq!(text, "GET /models lists 1 model(s) and not `fake-model`: `models/qwen2.5-coder-1.5b-q4_k_m.gguf`");
    assert!(hint.contains("--models") && hint.contains("--alias"), "{hint}");
    assert!(fake.received().is_empty(), "no chat request");
    assert_eq!(checks(&p), [("endpoint", true), ("model", false)]);

    // A long listing is quoted up to 20 ids.
    let ids: Vec<String> = (1..=25).map(|i| format!("m{i}")).collect();
    let fake = FakeModel::start(vec![]).await;
    fake.list_models(&ids.iter().map(String::as_str).collect::<Vec<_>>());
    let p = agent::preflight(&provider(config(&fake.base_url))).await;
    let (_, text, _) = failure(&p);
    assert!(text.starts_with("GET /models lists 25 model(s) and not `fake-model`: `m1`, `m2`"), "{text}");
    assert!(text.contains("`m20` and 5 more") && !text.contains("`m21`"), "{text}");
}

#[tokio::test]
async fn a_call_written_as_text_is_tool_call_as_text_with_the_server_hints() {
    // What llama.cpp's server returned for Qwen2.5-Coder with a template without tool support.
    let written = "```json\n{\"name\": \"preflight_echo\", \"arguments\": {\"word\": \"ready\"}}\n```";
    let fake = FakeModel::start(vec![Reply::json(text(written, usage(150, 20)))]).await;
    let p = agent::preflight(&provider(config(&fake.base_url))).await;

    let (kind, text, hint) = failure(&p);
    assert_eq!(kind, PreflightFailureKind::ToolCallAsText);
    assert_eq!(text, written, "the model's text, verbatim");
    for h in TOOL_HINTS {
        assert!(hint.contains(h), "the hint lacks {h}: {hint}");
    }
    assert_eq!(checks(&p), [("endpoint", true), ("model", true), ("native_tool_calls", false)]);
    let summary = p.summary();
    assert!(summary.starts_with("preflight failed: tool_call_as_text: ```json\\n{\"name\": \"preflight_echo\""), "{summary}");
    assert_eq!(summary.lines().count(), 2, "the quoted text on one line, then the hint: {summary}");
    assert!(summary.lines().nth(1).unwrap().starts_with("hint: "));
}

#[tokio::test]
async fn a_plain_text_answer_is_no_tool_call_fail_closed() {
    let fake = FakeModel::start(vec![Reply::json(text("Ready!", usage(150, 3)))]).await;
    let p = agent::preflight(&provider(config(&fake.base_url))).await;
    let (kind, text, hint) = failure(&p);
    assert_eq!(kind, PreflightFailureKind::NoToolCall);
    assert_eq!(text, "Ready!");
    assert!(hint.contains("dropped the tools") && hint.contains("--skip-preflight"), "{hint}");
    assert_eq!(p.summary().lines().next(), Some("preflight failed: no_tool_call: Ready!"));

    // An empty answer says so, with the finish reason.
    let mut empty = common::text("", usage(150, 200));
    empty["choices"][0]["finish_reason"] = json!("length");
    let fake = FakeModel::start(vec![Reply::json(empty)]).await;
    let p = agent::preflight(&provider(config(&fake.base_url))).await;
    assert_eq!(failure(&p).1, "(no content; finish_reason: length)");

    // A native call to a function that was never offered fails too.
    let fake = FakeModel::start(vec![Reply::json(tool_calls(&[("c", "get_weather", "{}")], usage(150, 9)))]).await;
    let p = agent::preflight(&provider(config(&fake.base_url))).await;
    let (kind, text, _) = failure(&p);
    assert_eq!(kind, PreflightFailureKind::NoToolCall);
    assert!(text.contains("get_weather"), "{text}");
}

#[tokio::test]
async fn quota_and_session_limits_are_limit() {
    let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let session_limit = "You've hit your session limit. Your limit resets at 5pm.";
    for reply in [Reply::raw(429, quota), Reply::json(text(session_limit, usage(5, 12)))] {
        let fake = FakeModel::start(vec![reply, echo_call()]).await;
        let p = agent::preflight(&provider(config(&fake.base_url))).await;
        let (kind, text, _) = failure(&p);
        assert_eq!(kind, PreflightFailureKind::Limit);
        assert!(text.contains("You exceeded your current quota") || text == session_limit, "{text}");
        assert_eq!(fake.received().len(), 1);
    }
}

#[tokio::test]
async fn a_failing_chat_request_is_not_retried() {
    let llama_cpp = r#"{"error":{"code":500,"message":"The model produced output that does not match the expected peg-native format","type":"server_error"}}"#;
    for (status, body, names) in [(503, "overloaded", "--skip-preflight"), (500, llama_cpp, "--chat-template-file")] {
        let fake = FakeModel::start(vec![Reply::raw(status, body), echo_call()]).await;
        let p = agent::preflight(&provider(config(&fake.base_url))).await;
        let (kind, text, hint) = failure(&p);
        assert_eq!(kind, PreflightFailureKind::ProviderError);
        assert!(text.contains(body), "verbatim: {text}");
        assert!(hint.contains(names), "{hint}");
        assert_eq!(fake.received().len(), 1, "exactly one chat request");
        assert_eq!(p.probes[1]["response"]["body"], body);
        assert_eq!(checks(&p), [("endpoint", true), ("native_tool_calls", false)]);
    }
}

#[tokio::test]
async fn long_bodies_are_kept_up_to_4_kib() {
    let long = format!("{{\"error\":{{\"message\":\"{}\"}}}}", "x".repeat(10_000));
    let fake = FakeModel::start(vec![]).await;
    fake.serve_models(401, &long);
    let p = agent::preflight(&provider(config(&fake.base_url))).await;
    let response = &p.probes[0]["response"];
    assert_eq!(response["body"].as_str().unwrap().len(), 4096);
    assert_eq!(response["body_bytes"], long.len());
}

#[tokio::test]
async fn a_chat_request_that_times_out_is_unreachable() {
    let fake = FakeModel::start(vec![echo_call().delay(std::time::Duration::from_millis(800))]).await;
    let mut c = config(&fake.base_url);
    c.request_timeout = std::time::Duration::from_millis(150);
    let p = agent::preflight(&provider(c)).await;
    let (kind, text, _) = failure(&p);
    assert_eq!(kind, PreflightFailureKind::Unreachable);
    assert!(text.contains("timed out"), "{text}");
    assert_eq!(checks(&p), [("endpoint", false)], "the listing's 404 answered, the chat request did not");
    assert_eq!(p.probes[1]["response"], Value::Null);
    assert!(p.probes[1]["error"].as_str().unwrap().contains("timed out"));
}
