//! Concurrent writers on one ticket: no update is lost.

use crate::common;

use crate::common::TestBackend;
use serde_json::json;

/// Writers changing different fields at the same time all keep their change.
#[tokio::test]
async fn concurrent_patches_of_different_fields_all_survive() {
    let b = TestBackend::start().await;
    let (_, before) = b.get("/tickets/10").await;
    let v0 = before["version"].as_i64().unwrap();
    let assign = b.patch("/tickets/10", json!({"assignee_id": 3}));
    let prioritise = b.patch("/tickets/10", json!({"priority": "urgent"}));
    let attach = b.patch("/tickets/10", json!({"customer_id": 5}));
    let ((s1, _), (s2, _), (s3, _)) = tokio::join!(assign, prioritise, attach);
    assert_eq!((s1, s2, s3), (200, 200, 200));
    let (_, after) = b.get("/tickets/10").await;
    assert_eq!((after["assignee_id"].as_i64(), after["priority"].as_str(), after["customer_id"].as_i64()), (Some(3), Some("urgent"), Some(5)));
    assert_eq!(after["version"].as_i64(), Some(v0 + 3), "every write counted once");
    b.shutdown().await;
}

/// Racing conditional assignments from the same version: exactly one wins, the others are told
/// the ticket moved on (412) instead of silently overwriting the winner.
#[tokio::test]
async fn racing_conditional_assignments_have_one_winner() {
    let b = TestBackend::start().await;
    let (_, t) = b.get("/tickets/20").await;
    let version = t["version"].as_i64().unwrap().to_string();
    let writers = (1..=8).map(|user| {
        let req = b.client.patch(b.url("/tickets/20")).header("if-match", &version).json(&json!({"assignee_id": user}));
        async move { (user, common::decode(req.send().await.unwrap()).await) }
    });
    let results = futures_util::future::join_all(writers).await;
    let winners: Vec<i64> = results.iter().filter(|(_, (s, _))| *s == 200).map(|(u, _)| *u).collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    for (_, (s, body)) in results.iter().filter(|(_, (s, _))| *s != 200) {
        assert_eq!((*s, body["error"].as_str()), (412, Some("precondition_failed")), "{body}");
    }
    let (_, after) = b.get("/tickets/20").await;
    assert_eq!(after["assignee_id"].as_i64(), Some(winners[0]));
    assert_eq!(after["version"].as_i64(), Some(t["version"].as_i64().unwrap() + 1));
    b.shutdown().await;
}
