//! What the provider's answers and faults turn into: exact usage with nulls kept, counted retries,
//! Retry-After, bounded failure with the verbatim text, quota/session limits that stop the run,
//! unparseable bodies and timeouts.

use std::time::{Duration, Instant};

use crate::common::*;
use agent::{InvalidReason, StopSignal, Usage, Validity};
use serde_json::json;

fn invalid(v: &Validity) -> (InvalidReason, &str) {
    match v {
        Validity::Invalid { reason, detail } => (*reason, detail.as_str()),
        Validity::Valid => panic!("expected an invalid session"),
    }
}

#[tokio::test]
async fn missing_and_partial_usage_stay_null() {
    let server = wrapper_without_backend().await;
    let mut no_usage = text("first", json!(null));
    no_usage.as_object_mut().unwrap().remove("usage");
    let fake = FakeModel::start(vec![
        Reply::json(tool_calls(&[("a", "customers_get", r#"{"id":1}"#)], json!(null))),
        Reply::json(tool_calls(&[("b", "customers_get", r#"{"id":1}"#)], json!({ "prompt_tokens": 40, "completion_tokens": null }))),
        Reply::json(no_usage),
    ])
    .await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid);
    assert_eq!(out.turns[0].usage, Usage::default(), "null usage: every field null, none zero");
    assert_eq!(out.turns[1].usage, Usage { prompt_tokens: Some(40), ..Default::default() });
    assert_eq!(out.turns[2].usage, Usage::default(), "absent usage");
    assert_eq!(out.total(|u| u.prompt_tokens), None, "one turn without the field makes the total null");
    assert_eq!(out.total(|u| u.total_tokens), None);
    let record = serde_json::to_value(&out).unwrap();
    assert_eq!(
        record["turns"][1]["usage"],
        json!({ "prompt_tokens": 40, "completion_tokens": null, "cached_prompt_tokens": null, "reasoning_tokens": null, "total_tokens": null })
    );
}

#[tokio::test]
async fn cached_and_reasoning_tokens_are_recorded_and_odd_fields_tolerated() {
    let server = wrapper_without_backend().await;
    // What llama.cpp/vLLM-style servers send: no created/object/total_tokens, an unknown finish reason.
    let body = json!({
        "choices": [{ "message": { "role": "assistant", "content": "Northwind Traders" }, "finish_reason": "eos" }],
        "usage": {
            "prompt_tokens": 1200, "completion_tokens": 90,
            "prompt_tokens_details": { "cached_tokens": 1024, "audio_tokens": null },
            "completion_tokens_details": { "reasoning_tokens": 64 }
        }
    });
    let fake = FakeModel::start(vec![Reply::json(body)]).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid);
    assert_eq!(out.final_answer.as_deref(), Some("Northwind Traders"));
    assert_eq!(out.turns[0].finish_reason.as_deref(), Some("eos"));
    assert_eq!(
        out.turns[0].usage,
        Usage { prompt_tokens: Some(1200), completion_tokens: Some(90), cached_prompt_tokens: Some(1024), reasoning_tokens: Some(64), total_tokens: None }
    );
}

#[tokio::test]
async fn rate_limits_are_retried_counted_and_retry_after_is_honoured() {
    let server = wrapper_without_backend().await;
    let limited = r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#;
    let fake = FakeModel::start(vec![
        Reply::raw(429, limited).header("retry-after", "1"),
        Reply::raw(429, limited).header("retry-after", "1"),
        Reply::json(text("Northwind Traders", usage(10, 2))),
    ])
    .await;
    let started = Instant::now();
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;
    let elapsed = started.elapsed();

    assert_eq!(out.validity, Validity::Valid);
    assert_eq!(out.turns.len(), 1);
    assert_eq!(out.turns[0].retries, 2);
    assert_eq!(out.provider_retries, 2);
    assert_eq!(fake.received().len(), 3);
    // Retry-After: 1 s scaled by 0.1 per wait; the 2 ms backoff alone would be far shorter.
    assert!(elapsed >= Duration::from_millis(200), "waited only {elapsed:?}");
    let retries: Vec<_> = out.transcript.iter().filter(|e| e["event"] == "provider_retry").collect();
    assert_eq!(retries.len(), 2);
    assert_eq!(retries[0]["retry_after_s"], 1.0);
    assert!(retries[0]["error"].as_str().unwrap().contains("Rate limit reached for requests"));
}

#[tokio::test]
async fn persistent_server_errors_end_invalid_with_the_verbatim_text() {
    let server = wrapper_without_backend().await;
    let body = "upstream model worker crashed (id 8c1f)";
    let fake = FakeModel::start((0..4).map(|_| Reply::raw(500, body)).collect()).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

    let (reason, detail) = invalid(&out.validity);
    assert_eq!(reason, InvalidReason::ProviderError);
    assert!(detail.contains(body) && detail.contains("500"), "{detail}");
    assert_eq!(fake.received().len(), 4, "first attempt + max_retries (3), no hidden retries");
    assert_eq!(out.provider_retries, 3);
    assert!(out.turns.is_empty(), "no answer, no turn record");
    assert_eq!(out.final_answer, None);
}

#[tokio::test]
async fn the_failed_last_turn_keeps_its_retries() {
    let server = wrapper_without_backend().await;
    let fake = FakeModel::start((0..4).map(|_| Reply::raw(503, "overloaded, try later")).collect()).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

    assert_eq!(invalid(&out.validity).0, InvalidReason::ProviderError);
    let failed = out.failed_turn.as_ref().expect("the turn that got no answer is recorded");
    assert_eq!((failed.index, failed.retries), (1, 3), "turn 1, retried up to the policy's max (3)");
    assert!(failed.detail.contains("503") && failed.detail.contains("overloaded, try later"), "{}", failed.detail);
    assert_eq!(out.provider_retries, 3);
    assert_eq!(fake.received().len(), 4);
}

#[tokio::test]
async fn retries_of_answered_turns_and_of_the_failed_one_are_summed() {
    let server = wrapper_without_backend().await;
    let mut script = vec![Reply::raw(502, "bad gateway"), Reply::json(tool_calls(&[("a", "customers_get", r#"{"id":1}"#)], usage(10, 1)))];
    script.extend((0..4).map(|_| Reply::raw(503, "overloaded")));
    let fake = FakeModel::start(script).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

    assert!(!out.validity.is_valid());
    assert_eq!(out.turns.len(), 1);
    assert_eq!(out.turns[0].retries, 1);
    let failed = out.failed_turn.as_ref().unwrap();
    assert_eq!((failed.index, failed.retries), (2, 3));
    assert_eq!(out.provider_retries, 1 + 3, "the answered turn's retry and the failed turn's");
    let record = serde_json::to_value(&out).unwrap();
    assert_eq!(record["failed_turn"]["index"], 2);
}

#[tokio::test]
async fn a_session_that_ends_with_an_answer_has_no_failed_turn() {
    let server = wrapper_without_backend().await;
    let fake = FakeModel::start(vec![Reply::raw(500, "hiccup"), Reply::json(text("Northwind Traders", usage(3, 1)))]).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;
    assert_eq!(out.validity, Validity::Valid);
    assert_eq!(out.failed_turn, None);
    assert_eq!(out.provider_retries, 1);
}

#[tokio::test]
async fn insufficient_quota_stops_the_run() {
    let server = wrapper_without_backend().await;
    let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let fake = FakeModel::start(vec![Reply::raw(429, quota), Reply::json(text("never", usage(1, 1)))]).await;
    let p = provider(config(&fake.base_url));
    let stop = StopSignal::new();
    let out = run(&server.conn, &p, &stop, 10).await;

    let (reason, detail) = invalid(&out.validity);
    assert_eq!(reason, InvalidReason::QuotaOrSessionLimit);
    assert!(detail.contains("You exceeded your current quota, please check your plan and billing details."), "{detail}");
    assert_eq!(fake.received().len(), 1, "a quota answer is not retried");
    assert!(stop.is_raised());
    let failed = out.failed_turn.as_ref().expect("the refused request is the failed turn");
    assert_eq!((failed.index, failed.retries), (1, 0));
    assert!(failed.detail.contains("You exceeded your current quota"));

    // The next session of the run never reaches the model.
    let second = run(&server.conn, &p, &stop, 10).await;
    assert_eq!(invalid(&second.validity).0, InvalidReason::QuotaOrSessionLimit);
    assert!(invalid(&second.validity).1.contains("You exceeded your current quota"));
    assert_eq!(fake.received().len(), 1);
    assert!(second.turns.is_empty());
}

#[tokio::test]
async fn a_session_limit_text_in_a_200_stops_the_run() {
    let server = wrapper_without_backend().await;
    let says = "You've hit your session limit. Your limit resets at 5pm.";
    let fake = FakeModel::start(vec![Reply::json(text(says, usage(5, 12))), Reply::json(text("never", usage(1, 1)))]).await;
    let p = provider(config(&fake.base_url));
    let stop = StopSignal::new();
    let out = run(&server.conn, &p, &stop, 10).await;

    assert_eq!(invalid(&out.validity), (InvalidReason::QuotaOrSessionLimit, says));
    assert_eq!(out.final_answer, None, "a refusal is not the arm's answer");
    assert!(stop.is_raised());
    assert_eq!(stop.reason(), Some(says));

    let second = run(&server.conn, &p, &stop, 10).await;
    assert_eq!(invalid(&second.validity).0, InvalidReason::QuotaOrSessionLimit);
    assert_eq!(fake.received().len(), 1, "the second session never called the model");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_retried_then_fatal() {
    let server = wrapper_without_backend().await;
    let html = "<html><body>502 Bad Gateway</body></html>";
    let fake = FakeModel::start(vec![Reply::raw(200, html), Reply::raw(200, "{\"choices\": [")]).await;
    let mut c = config(&fake.base_url);
    c.retry = fast_retry(1);
    let out = run(&server.conn, &provider(c), &StopSignal::new(), 10).await;

    let (reason, detail) = invalid(&out.validity);
    assert_eq!(reason, InvalidReason::ProviderError);
    assert!(detail.contains("unparseable body") && detail.contains("{\"choices\": ["), "{detail}");
    assert_eq!(fake.received().len(), 2);
    assert_eq!(out.provider_retries, 1);
    let first = out.transcript.iter().find(|e| e["event"] == "provider_retry").unwrap();
    assert!(first["error"].as_str().unwrap().contains(html));
}

#[tokio::test]
async fn a_non_json_body_then_an_answer_is_valid_with_one_retry() {
    let server = wrapper_without_backend().await;
    let fake = FakeModel::start(vec![Reply::raw(200, "not json at all"), Reply::json(text("ok", usage(3, 1)))]).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;
    assert_eq!(out.validity, Validity::Valid);
    assert_eq!(out.turns[0].retries, 1);
}

#[tokio::test]
async fn timeouts_are_retried_and_counted() {
    let server = wrapper_without_backend().await;
    let slow = || Reply::json(text("too late", usage(1, 1))).delay(Duration::from_millis(800));
    let fake = FakeModel::start(vec![slow(), Reply::json(text("Northwind Traders", usage(3, 1))), slow(), slow()]).await;
    let mut c = config(&fake.base_url);
    c.request_timeout = Duration::from_millis(150);
    c.retry = fast_retry(1);
    let p = provider(c);

    let out = run(&server.conn, &p, &StopSignal::new(), 10).await;
    assert_eq!(out.validity, Validity::Valid);
    assert_eq!(out.final_answer.as_deref(), Some("Northwind Traders"));
    assert_eq!(out.turns[0].retries, 1);
    let retry = out.transcript.iter().find(|e| e["event"] == "provider_retry").unwrap();
    assert!(retry["error"].as_str().unwrap().contains("timed out"), "{retry}");

    let out = run(&server.conn, &p, &StopSignal::new(), 10).await;
    let (reason, detail) = invalid(&out.validity);
    assert_eq!(reason, InvalidReason::ProviderError);
    assert!(detail.contains("timed out"), "{detail}");
    assert_eq!(out.provider_retries, 1);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = wrapper_without_backend().await;
    let body = r#"{"error":{"message":"Invalid model 'fake-model'","type":"invalid_request_error","param":"model","code":"model_not_found"}}"#;
    let fake = FakeModel::start(vec![Reply::raw(404, body)]).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;
    let (reason, detail) = invalid(&out.validity);
    assert_eq!(reason, InvalidReason::ProviderError);
    assert!(detail.contains("Invalid model 'fake-model'") && detail.contains("model_not_found"), "{detail}");
    assert_eq!(fake.received().len(), 1);
}

#[tokio::test]
async fn a_missing_key_is_a_setup_error_naming_the_variable() {
    // A remote address: a loopback endpoint may go without a key (tests/it/keyless_loopback.rs).
    let err = agent::OpenAiCompatible::with_key_source(config("http://192.0.2.1:1/v1"), |_| None).unwrap_err();
    assert!(err.to_string().contains(KEY_ENV));
}

/// OpenAI's shape (nested `error`, code `context_length_exceeded`) and vLLM's (top-level
/// `message`, which async-openai cannot parse as an API error).
const OPENAI_OVERFLOW: &str = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
const VLLM_OVERFLOW: &str = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5120 tokens (4096 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;

#[tokio::test]
async fn a_conversation_that_outgrows_the_context_is_a_valid_flagged_failure() {
    for overflow in [OPENAI_OVERFLOW, VLLM_OVERFLOW] {
        let server = wrapper_without_backend().await;
        let fake = FakeModel::start(vec![Reply::json(tool_calls(&[("a", "customers_get", r#"{"id":1}"#)], usage(50, 5))), Reply::raw(400, overflow)]).await;
        let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

        assert_eq!(out.validity, Validity::Valid, "the arm's conversation outgrew the window: a result, not attrition");
        assert!(out.context_exceeded && !out.turn_cap_hit);
        assert_eq!((out.turns.len(), out.tool_calls.len(), out.final_answer.as_deref()), (1, 1, None));
        assert_eq!(fake.received().len(), 2, "an overflow is not retried: the next request would be as long");
        assert_eq!(out.provider_retries, 0);
        let event = out.transcript.iter().find(|e| e["event"] == "context_exceeded").expect("the overflow is in the transcript");
        assert!(event["error"].as_str().unwrap().contains("maximum context length"), "{event}");
    }
}

#[tokio::test]
async fn a_first_request_that_does_not_fit_is_a_configuration_problem() {
    let server = wrapper_without_backend().await;
    let fake = FakeModel::start(vec![Reply::raw(400, OPENAI_OVERFLOW)]).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;
    let (reason, detail) = invalid(&out.validity);
    assert_eq!(reason, InvalidReason::ProviderError);
    assert!(detail.contains("first request") && detail.contains("9001 tokens"), "{detail}");
    assert!(!out.context_exceeded);
}

#[tokio::test]
async fn llama_cpp_wording_is_recognised_and_other_400s_are_not() {
    let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#;
    let other = r#"{"error":{"message":"'temperature' must be between 0 and 2","type":"invalid_request_error","param":"temperature","code":null}}"#;
    for (body, overflow) in [(llama, true), (other, false)] {
        let server = wrapper_without_backend().await;
        let fake = FakeModel::start(vec![Reply::json(tool_calls(&[("a", "customers_get", r#"{"id":1}"#)], usage(50, 5))), Reply::raw(400, body)]).await;
        let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;
        assert_eq!(out.context_exceeded, overflow, "{body}");
        assert_eq!(out.validity.is_valid(), overflow, "{body}");
    }
}
