//! An endpoint that cannot parse the model's own output (llama.cpp's "does not match the expected
//! peg-native format", Ollama's "error parsing tool call") is the arm's failure, not the
//! infrastructure's: retried once when sampling is pinned, per policy otherwise, and a session it
//! ends is valid, flagged, with the server's text in `failed_turn`.

use crate::common::*;
use agent::{StopSignal, Validity};

/// llama.cpp's server, word for word, when its tool-call parser rejects what the model wrote.
const LLAMA_CPP: &str =
    r#"{"error":{"code":500,"message":"The model produced output that does not match the expected peg-native format","type":"server_error"}}"#;
/// Ollama on /v1: its parser's error wrapped in OpenAI's error shape.
const OLLAMA: &str = r#"{"error":{"message":"error parsing tool call: raw='{\"id\": 77,}', err=invalid character '}' looking for beginning of object key string","type":"api_error","param":null,"code":null}}"#;

fn answer() -> Reply {
    Reply::json(text("Northwind Traders", usage(10, 2)))
}

#[tokio::test]
async fn at_temperature_zero_the_same_answer_twice_ends_the_session_as_a_valid_flagged_failure() {
    let server = wrapper_without_backend().await;
    let fake = FakeModel::start(vec![Reply::raw(500, LLAMA_CPP), Reply::raw(500, LLAMA_CPP), answer()]).await;
    let mut c = config(&fake.base_url);
    c.seed = None; // temperature 0 alone pins the sampling
    let out = run(&server.conn, &provider(c), &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid, "the model's output, so the arm's failure");
    assert!(out.unparseable_output);
    assert_eq!(fake.received().len(), 2, "one retry: the repeat shows it is deterministic");
    assert_eq!(fake.unanswered(), 1);
    let failed = out.failed_turn.as_ref().expect("the failed turn holds the server's text");
    assert_eq!((failed.index, failed.retries), (1, 1));
    assert!(failed.detail.contains("500") && failed.detail.contains(LLAMA_CPP), "verbatim: {}", failed.detail);
    assert_eq!(out.provider_retries, 1);
    assert!(out.turns.is_empty() && out.final_answer.is_none());
    assert!(!out.turn_cap_hit && !out.context_exceeded);
    let event = out.transcript.iter().find(|e| e["event"] == "unparseable_output").expect("the end is in the transcript");
    assert_eq!((event["pinned_sampling"].as_bool(), event["repeated"].as_bool()), (Some(true), Some(true)));
    let end = out.transcript.last().unwrap();
    assert_eq!((end["event"].as_str(), end["unparseable_output"].as_bool()), (Some("end"), Some(true)));
}

#[tokio::test]
async fn a_seed_pins_the_sampling_too_and_the_flag_follows_a_turn_that_went_well() {
    let server = wrapper_without_backend().await;
    let fake = FakeModel::start(vec![
        Reply::json(tool_calls(&[("a", "customers_get", r#"{"id":1}"#)], usage(50, 5))),
        Reply::raw(500, OLLAMA),
        Reply::raw(500, OLLAMA),
        answer(),
    ])
    .await;
    let mut c = config(&fake.base_url);
    c.temperature = Some(0.7); // the seed (7) alone pins it
    let out = run(&server.conn, &provider(c), &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid);
    assert!(out.unparseable_output);
    assert_eq!(fake.received().len(), 3);
    assert_eq!(out.turns.len(), 1);
    let failed = out.failed_turn.as_ref().unwrap();
    assert_eq!((failed.index, failed.retries), (2, 1));
    assert!(failed.detail.contains("error parsing tool call: raw="), "{}", failed.detail);
}

#[tokio::test]
async fn with_pinned_sampling_a_different_answer_on_the_retry_is_retried_per_policy() {
    let server = wrapper_without_backend().await;
    let other = LLAMA_CPP.replace("peg-native", "Content-only");
    let fake = FakeModel::start(vec![Reply::raw(500, LLAMA_CPP), Reply::raw(500, &other), answer()]).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid);
    assert!(!out.unparseable_output, "the model answered in the end");
    assert_eq!(out.final_answer.as_deref(), Some("Northwind Traders"));
    assert_eq!(out.turns[0].retries, 2);
    assert_eq!(out.failed_turn, None);
}

#[tokio::test]
async fn at_temperature_above_zero_the_normal_policy_applies_and_the_session_goes_on() {
    let server = wrapper_without_backend().await;
    let fake = FakeModel::start(vec![Reply::raw(500, LLAMA_CPP), Reply::raw(500, LLAMA_CPP), Reply::raw(500, LLAMA_CPP), answer()]).await;
    let mut c = config(&fake.base_url);
    (c.temperature, c.seed) = (Some(0.7), None);
    let out = run(&server.conn, &provider(c), &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid);
    assert!(!out.unparseable_output);
    assert_eq!(out.final_answer.as_deref(), Some("Northwind Traders"));
    assert_eq!(fake.received().len(), 4);
    assert_eq!(out.turns[0].retries, 3);
    assert_eq!(out.provider_retries, 3);
    let retries: Vec<_> = out.transcript.iter().filter(|e| e["event"] == "provider_retry").collect();
    assert_eq!(retries.len(), 3);
    assert!(retries.iter().all(|e| e["unparseable_output"] == true));
}

#[tokio::test]
async fn at_temperature_above_zero_past_the_bound_it_is_a_valid_flagged_failure() {
    let server = wrapper_without_backend().await;
    let fake = FakeModel::start((0..5).map(|_| Reply::raw(500, LLAMA_CPP)).collect()).await;
    let mut c = config(&fake.base_url);
    (c.temperature, c.seed) = (Some(0.7), None);
    let out = run(&server.conn, &provider(c), &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid);
    assert!(out.unparseable_output);
    assert_eq!(fake.received().len(), 4, "first attempt + max_retries (3)");
    assert_eq!(out.failed_turn.as_ref().map(|f| f.retries), Some(3));
    assert_eq!(out.provider_retries, 3);
}

#[tokio::test]
async fn other_server_errors_stay_infrastructure() {
    let server = wrapper_without_backend().await;
    // A 500 that names no parser, and a parser phrase in a 4xx (the request's fault, not the model's).
    for (status, body) in [(500, r#"{"error":{"code":500,"message":"slot unavailable","type":"server_error"}}"#), (400, OLLAMA)] {
        let fake = FakeModel::start((0..4).map(|_| Reply::raw(status, body)).collect()).await;
        let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;
        assert!(!out.validity.is_valid(), "{status} {body}");
        assert!(!out.unparseable_output);
    }
}

/// A turn's record times only the attempt that answered; the time an unparseable attempt took
/// is in its event, so a session's model time can be told from the harness's own.
#[tokio::test]
async fn each_failed_attempt_says_how_long_it_took() {
    let server = wrapper_without_backend().await;
    let slow = std::time::Duration::from_millis(120);
    let fake = FakeModel::start(vec![Reply::raw(500, LLAMA_CPP).delay(slow), Reply::raw(500, LLAMA_CPP).delay(slow * 2)]).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;
    assert!(out.unparseable_output);
    let timed: Vec<(&str, f64)> =
        out.transcript.iter().filter_map(|e| Some((e["event"].as_str()?, e.get("latency_ms")?.as_f64()?))).filter(|(e, _)| *e != "response").collect();
    assert_eq!(timed.iter().map(|(e, _)| *e).collect::<Vec<_>>(), ["provider_retry", "unparseable_output"]);
    assert!(timed[0].1 >= 120.0, "the first attempt's own time: {timed:?}");
    assert!(timed[1].1 >= 240.0, "the second attempt's own time: {timed:?}");
}
