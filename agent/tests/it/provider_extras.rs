//! What a provider reports beyond usage reaches each turn's record and the transcript as given:
//! llama.cpp's `timings`, `system_fingerprint`, and the model id that answered when it is not
//! the one requested. A provider that sends none of them leaves nulls, never made-up values.

use crate::common::*;
use agent::{StopSignal, Validity};
use serde_json::{Value, json};

/// The fields llama.cpp's server adds to a chat completion, in its shape.
fn llama_cpp(mut body: Value, served: &str, timings: Value) -> Value {
    body["model"] = json!(served);
    body["system_fingerprint"] = json!("b7311-3e7fb4d2");
    body["timings"] = timings;
    body
}

/// Rates are given with few digits: serde_json (without its `float_roundtrip` feature, which
/// async-openai's parse does not turn on) may read a 17-digit float one unit in the last place
/// off, so a test of "as given" must not hinge on the 17th digit.
fn timings(cache_n: u64, prompt_n: u64, prompt_ms: f64, predicted_n: u64, predicted_ms: f64) -> Value {
    json!({
        "cache_n": cache_n, "prompt_n": prompt_n, "prompt_ms": prompt_ms, "prompt_per_second": 67.5,
        "predicted_n": predicted_n, "predicted_ms": predicted_ms, "predicted_per_second": 9.98,
    })
}

#[tokio::test]
async fn llama_cpp_timings_and_the_served_model_reach_every_turn_and_the_transcript() {
    let server = wrapper_without_backend().await;
    let first = timings(0, 1612, 23_871.4, 21, 2_104.9);
    let second = timings(1633, 48, 912.0, 9, 880.5);
    let fake = FakeModel::start(vec![
        Reply::json(llama_cpp(tool_calls(&[("c1", "customers_get", r#"{"id": 1}"#)], usage(1612, 21)), "qwen2.5-coder-1.5b-q4_k_m.gguf", first.clone())),
        Reply::json(llama_cpp(text("Northwind Traders", usage(1681, 9)), "fake-model", second.clone())),
    ])
    .await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;
    assert_eq!(out.validity, Validity::Valid);
    assert_eq!(out.turns.len(), 2);

    let (a, b) = (&out.turns[0].extras, &out.turns[1].extras);
    assert_eq!(a.timings.as_ref(), Some(&first), "verbatim, every field llama.cpp sent");
    assert_eq!(b.timings.as_ref(), Some(&second));
    assert_eq!(a.system_fingerprint.as_deref(), Some("b7311-3e7fb4d2"));
    assert_eq!(a.served_model.as_deref(), Some("qwen2.5-coder-1.5b-q4_k_m.gguf"), "another id answered than was asked for");
    assert_eq!(b.served_model, None, "the requested id echoed back says nothing");

    // The record's JSON and the transcript's response events carry the same extras.
    let record = serde_json::to_value(&out.turns[0]).unwrap();
    assert_eq!(record["extras"]["timings"]["cache_n"], 0);
    assert_eq!(record["extras"]["timings"]["prompt_ms"], 23_871.4);
    let responses: Vec<&Value> = out.transcript.iter().filter(|e| e["event"] == "response").collect();
    assert_eq!(responses.len(), 2);
    assert_eq!(responses[0]["extras"], serde_json::to_value(a).unwrap());
    assert_eq!(responses[1]["extras"]["timings"]["cache_n"], 1633);
    assert_eq!(responses[1]["extras"]["served_model"], Value::Null);
}

#[tokio::test]
async fn a_provider_without_extras_leaves_nulls_and_odd_types_lose_nothing() {
    let server = wrapper_without_backend().await;
    let mut odd = text("Northwind Traders", usage(10, 2));
    // Not what any known server sends: the answer must survive it all the same.
    odd["system_fingerprint"] = json!(42);
    odd["model"] = json!({ "name": "m" });
    odd["timings"] = Value::Null;
    let fake = FakeModel::start(vec![Reply::json(tool_calls(&[("c1", "customers_get", r#"{"id": 1}"#)], usage(10, 1))), Reply::json(odd)]).await;
    let out = run(&server.conn, &provider(config(&fake.base_url)), &StopSignal::new(), 10).await;

    assert_eq!(out.validity, Validity::Valid);
    assert_eq!(out.final_answer.as_deref(), Some("Northwind Traders"), "an odd extra does not cost the answer");
    for t in &out.turns {
        assert_eq!((&t.extras.timings, &t.extras.system_fingerprint, &t.extras.served_model), (&None, &None, &None), "turn {}", t.index);
        let json = serde_json::to_value(t).unwrap();
        assert_eq!(json["extras"], json!({ "timings": null, "system_fingerprint": null, "served_model": null }));
    }
}
