//! A loopback endpoint without a key: local servers (llama.cpp, Ollama, vLLM) need none, so with
//! the key variable unset the provider is built keyless, sends no `Authorization` header at all
//! and says `auth: none`. Anywhere else a missing key still refuses before any request.

use crate::common::*;
use agent::config::SetupError;
use agent::{OpenAiCompatible, PreflightFailureKind, StopSignal, Validity};
use records::Auth;

/// The provider as production builds it when the key variable is unset.
fn keyless(config: agent::ProviderConfig) -> Result<OpenAiCompatible, SetupError> {
    OpenAiCompatible::with_key_source(config, |_| None)
}

fn echo_call() -> Reply {
    Reply::json(tool_calls(&[("call_1", "preflight_echo", r#"{"word":"ready"}"#)], usage(180, 12)))
}

#[tokio::test]
async fn a_loopback_endpoint_without_a_key_gets_no_authorization_header() {
    let server = wrapper_without_backend().await;
    let fake = FakeModel::start(vec![echo_call(), Reply::json(text("Northwind Traders", usage(10, 2)))]).await;
    fake.list_models(&["fake-model"]);
    assert!(fake.base_url.starts_with("http://127.0.0.1:"), "the fake is loopback: {}", fake.base_url);
    let p = keyless(config(&fake.base_url)).expect("a loopback endpoint needs no key");
    assert_eq!(p.auth(), Auth::None);

    let found = agent::preflight(&p).await;
    assert!(found.passed, "{}", found.summary());
    let out = run(&server.conn, &p, &StopSignal::new(), 10).await;
    assert_eq!(out.validity, Validity::Valid);

    let mut requests = fake.models_received();
    requests.extend(fake.received());
    assert_eq!(requests.len(), 3, "the listing, the probe and the session's one turn");
    for r in &requests {
        assert_eq!(r.header("authorization"), None, "not even an empty `Bearer `: {:?}", r.headers);
        assert_eq!(r.header(SECRET_HEADER), Some(SECRET_HEADER_VALUE), "the other headers still go");
    }
    assert_eq!(out.transcript[0]["event"], "start");
    assert_eq!(out.transcript[0]["auth"], "none", "the transcript says how the session authenticated");
}

#[tokio::test]
async fn with_the_key_set_a_loopback_endpoint_still_gets_it() {
    let fake = FakeModel::start(vec![echo_call()]).await;
    let p = provider(config(&fake.base_url));
    assert_eq!(p.auth(), Auth::Key);
    assert!(agent::preflight(&p).await.passed);
    assert_eq!(fake.received()[0].header("authorization"), Some(format!("Bearer {KEY}").as_str()));
}

#[tokio::test]
async fn an_authorization_header_the_user_passed_is_kept_when_keyless() {
    let fake = FakeModel::start(vec![echo_call()]).await;
    let mut c = config(&fake.base_url);
    c.extra_headers.push(("Authorization".into(), "Basic dXNlcjpwYXNzd29yZA==".into()));
    let p = keyless(c).unwrap();
    assert_eq!(p.auth(), Auth::None, "no key was read from the variable");
    assert!(agent::preflight(&p).await.passed);
    assert_eq!(fake.received()[0].header("authorization"), Some("Basic dXNlcjpwYXNzd29yZA=="));
}

#[test]
fn a_remote_endpoint_without_a_key_is_refused() {
    for url in [
        "https://api.openai.com/v1",
        "http://192.0.2.10:8000/v1",
        "http://localhost.example.com/v1",
        "http://localhost@192.0.2.10/v1",
        "http://0.0.0.0:8080/v1",
        "",
    ] {
        match keyless(config(url)) {
            Err(SetupError::MissingKey(var)) => assert_eq!(var, KEY_ENV, "{url}"),
            other => panic!("{url:?}: expected MissingKey, got {:?}", other.map(|p| p.auth())),
        }
    }
    // Loopback in every spelling the issue names, and an empty variable counts as unset.
    for url in ["http://127.0.0.1:18081/v1", "http://127.8.9.10/v1", "http://[::1]:11434/v1", "http://localhost:8000/v1", "http://LocalHost/v1"] {
        let p = OpenAiCompatible::with_key_source(config(url), |_| Some(String::new())).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(p.auth(), Auth::None, "{url}");
    }
}

#[tokio::test]
async fn a_loopback_server_that_wants_a_key_is_refused_with_a_hint_naming_the_variable() {
    // llama.cpp's server started with --api-key refuses the listing and chat alike (its verbatim
    // body). A refused listing alone decides nothing: the chat request's 401 does.
    let refusal = r#"{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}"#;
    let fake = FakeModel::start(vec![Reply::raw(401, refusal)]).await;
    fake.serve_models(401, refusal);
    let found = agent::preflight(&keyless(config(&fake.base_url)).unwrap()).await;
    assert_eq!(fake.received().len(), 1, "the probe went on to the chat request");
    let failure = found.failure.as_ref().expect("refused");
    assert_eq!(failure.kind, PreflightFailureKind::Unauthorized);
    assert!(failure.hint.contains("none was sent") && failure.hint.contains(KEY_ENV), "{}", failure.hint);
    assert_eq!(fake.models_received()[0].header("authorization"), None);
}
