//! Token counts through a llama.cpp server's `/tokenize`, against a local fake that answers as
//! llama.cpp's server README documents it: `POST /tokenize` with `{"content": …}` (and
//! `add_special`, `with_pieces`) → `{"tokens": [ids]}`; and the errors a user must be able to
//! act on when the URL is not such a server.

use std::sync::{Arc, Mutex};

use agent::tokens::Tokenizer;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

/// A fake llama.cpp server: one token per whitespace-separated word (its own "vocabulary"), and
/// every request body kept.
async fn fake_llama(answer: fn(&Value) -> (StatusCode, String)) -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let app = axum::Router::new()
        .route(
            "/tokenize",
            axum::routing::post(move |State(seen): State<Arc<Mutex<Vec<Value>>>>, Json(body): Json<Value>| async move {
                seen.lock().unwrap().push(body.clone());
                answer(&body)
            }),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let root = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (root, seen)
}

fn words(body: &Value) -> (StatusCode, String) {
    let ids: Vec<u32> = body["content"].as_str().unwrap().split_whitespace().enumerate().map(|(i, _)| 1000 + i as u32).collect();
    (StatusCode::OK, json!({ "tokens": ids }).to_string())
}

#[tokio::test]
async fn counts_are_the_servers_and_ask_for_no_special_tokens_or_pieces() {
    let (root, seen) = fake_llama(words).await;
    // The run's --base-url, /v1 and all, names the same server.
    let t = Tokenizer::parse(&format!("llama:{root}/v1")).unwrap();
    assert_eq!(t.label(), format!("llama:{root}"));
    assert!(t.counts());
    assert_eq!(t.count("What is the capital of France ?").await.unwrap(), 7);
    let defs = [json!({"type": "function", "function": {"name": "a b"}}), json!({"x": "y z w"})];
    // Each definition's JSON as sent, counted by the server: "{...\"a" + "b\"}}" → 2 words; 3 words.
    assert_eq!(t.count_definitions(&defs).await.unwrap(), 2 + 3);
    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies[0], json!({ "content": "What is the capital of France ?", "add_special": false, "with_pieces": false }));
    assert_eq!(bodies[1]["content"], defs[0].to_string());
}

#[tokio::test]
async fn a_server_that_is_not_llama_cpp_is_named_not_counted() {
    let (root, _) = fake_llama(|_| (StatusCode::OK, json!({ "tokens": [{ "id": 1, "piece": "a" }] }).to_string())).await;
    let e = Tokenizer::parse(&format!("llama:{root}")).unwrap().count("a").await.unwrap_err().to_string();
    assert!(e.contains("without a `tokens` array of ids") && e.contains(&root), "{e}");

    let (root, _) = fake_llama(|_| (StatusCode::NOT_IMPLEMENTED, r#"{"error":{"code":501,"message":"no"}}"#.into())).await;
    let e = Tokenizer::parse(&format!("llama:{root}")).unwrap().count("a").await.unwrap_err().to_string();
    assert!(e.contains("HTTP 501") && e.contains(&root), "{e}");

    // Nothing listens on the discard port.
    let e = Tokenizer::parse("llama:http://127.0.0.1:9").unwrap().count("a").await.unwrap_err().to_string();
    assert!(e.contains("could not be reached") && e.contains("llama-server"), "{e}");
}
