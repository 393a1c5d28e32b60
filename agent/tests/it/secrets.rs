//! No secret reaches a file: the API key and secret header values are sent to the model but
//! appear in no record, transcript or debug output the harness could write.

use crate::common::*;
use agent::StopSignal;
use serde_json::json;

#[tokio::test]
async fn no_written_artefact_contains_the_key_or_a_header_value() {
    let server = wrapper_without_backend().await;
    let fake = FakeModel::start(vec![
        Reply::json(tool_calls(&[("a", "customers_get", r#"{"id": 1}"#), ("b", "nope", "{")], usage(10, 1))),
        Reply::raw(500, "transient"),
        Reply::json(text("done", usage(20, 1))),
    ])
    .await;
    let p = provider(config(&fake.base_url));
    let ok = run(&server.conn, &p, &StopSignal::new(), 10).await;
    assert!(ok.validity.is_valid());
    // The key and the header did go to the model: the search below would find them if leaked.
    assert_eq!(fake.received()[0].header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(fake.received()[0].header(SECRET_HEADER), Some(SECRET_HEADER_VALUE));

    let failing = FakeModel::start((0..4).map(|_| Reply::raw(503, "overloaded")).collect()).await;
    let failed = run(&server.conn, &provider(config(&failing.base_url)), &StopSignal::new(), 10).await;
    assert!(!failed.validity.is_valid());

    // A gateway that quotes the headers it was sent in its 400 (not retried), in a 5xx (retried),
    // and a model that repeats the key in its answer.
    let echo = format!(
        r#"{{"error":{{"message":"rejected Authorization: Bearer {KEY} with {SECRET_HEADER}: {SECRET_HEADER_VALUE}","type":"invalid_request_error"}}}}"#
    );
    let echoing = FakeModel::start(vec![Reply::raw(400, &echo)]).await;
    let refused = run(&server.conn, &provider(config(&echoing.base_url)), &StopSignal::new(), 10).await;
    assert!(!refused.validity.is_valid());
    let echoing_5xx = FakeModel::start(vec![Reply::raw(502, &echo), Reply::json(text(&format!("done; my key is {KEY}"), usage(5, 1)))]).await;
    let repeated = run(&server.conn, &provider(config(&echoing_5xx.base_url)), &StopSignal::new(), 10).await;
    assert!(repeated.validity.is_valid());
    let everything = format!("{}{}{:?}{:?}", agent::transcript_jsonl(&refused), agent::transcript_jsonl(&repeated), refused, repeated);
    assert!(everything.contains("<redacted>"), "the echoed secrets were there to redact: {everything}");

    let dir = tempfile::tempdir().unwrap();
    let mut written = vec![];
    for (stem, out) in [("ok", &ok), ("failed", &failed), ("refused", &refused), ("repeated", &repeated)] {
        let record = json!({ "params": p.config().record_params(), "outcome": out });
        written.push((format!("{stem}.json"), serde_json::to_string_pretty(&record).unwrap()));
        written.push((format!("{stem}.transcript.jsonl"), agent::transcript_jsonl(out)));
        written.push((format!("{stem}.debug.txt"), format!("{out:#?}")));
    }
    written.push(("provider.debug.txt".into(), format!("{p:?}\n{p:#?}\n{:?}", p.config())));
    for (name, content) in &written {
        std::fs::write(dir.path().join(name), content).unwrap();
    }

    let mut checked = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let content = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!content.is_empty());
        for secret in [KEY, SECRET_HEADER_VALUE] {
            assert!(!content.contains(secret), "a written file contains a secret");
        }
        checked += 1;
    }
    assert_eq!(checked, 13);
    // What may be recorded is: the variable's name and the header's name.
    let debug = std::fs::read_to_string(dir.path().join("provider.debug.txt")).unwrap();
    assert!(debug.contains(KEY_ENV) && debug.contains(SECRET_HEADER));
    assert!(agent::transcript_jsonl(&ok).lines().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
}

#[tokio::test]
async fn a_serialised_preflight_never_contains_the_key_or_a_header_value() {
    let mut preflights = vec![];
    // Passing: both requests carried the key and the header.
    let fake = FakeModel::start(vec![Reply::json(tool_calls(&[("c", "preflight_echo", r#"{"word":"ready"}"#)], usage(10, 1)))]).await;
    fake.list_models(&["fake-model"]);
    preflights.push(agent::preflight(&provider(config(&fake.base_url))).await);
    assert!(preflights[0].passed);
    assert_eq!(fake.models_received()[0].header(SECRET_HEADER), Some(SECRET_HEADER_VALUE));
    // A gateway that quotes what it was sent, in the listing and in the chat answer.
    let echo = format!(
        r#"{{"error":{{"message":"rejected Authorization: Bearer {KEY} with {SECRET_HEADER}: {SECRET_HEADER_VALUE}","type":"invalid_request_error"}}}}"#
    );
    let fake = FakeModel::start(vec![Reply::raw(403, &echo)]).await;
    fake.serve_models(404, &echo);
    preflights.push(agent::preflight(&provider(config(&fake.base_url))).await);
    let fake = FakeModel::start(vec![Reply::json(text(&format!("my key is {KEY}"), usage(1, 1)))]).await;
    preflights.push(agent::preflight(&provider(config(&fake.base_url))).await);
    let fake = FakeModel::start(vec![Reply::raw(500, &echo)]).await;
    preflights.push(agent::preflight(&provider(config(&fake.base_url))).await);

    for p in &preflights {
        let written = [serde_json::to_string_pretty(p).unwrap(), format!("{p:?}"), p.summary()];
        for text in &written {
            for secret in [KEY, SECRET_HEADER_VALUE] {
                assert!(!text.contains(secret), "a preflight record contains a secret: {text}");
            }
        }
    }
    let echoed = serde_json::to_string(&preflights[1]).unwrap();
    assert!(echoed.contains("rejected Authorization: <redacted> with x-gateway-token: <redacted>"), "{echoed}");
    assert!(serde_json::to_string(&preflights[2]).unwrap().contains("my key is <redacted>"));
}
