//! Tool orchestrator module: both servers over both transports against the real backend.

use crate::common;

use crate::common::{BOTH, call, connect, err_text, ok_json, sql};
use serde_json::json;

#[tokio::test]
async fn every_tool_of_both_arms_works_over_both_transports() {
    let b = common::backend().await;
    for via in BOTH {
        let c = connect("wrapper", b.url(), via).await;
        let tools: Vec<String> = c.client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
        assert_eq!(tools.len(), 10, "{via:?}: {tools:?}");
        assert_eq!(ok_json(&call(&c.client, "customers_list", json!({"q": "northwind"})).await)["total"], 2);
        assert_eq!(ok_json(&call(&c.client, "customers_get", json!({"id": 1})).await)["name"], "Northwind Traders");
        assert_eq!(ok_json(&call(&c.client, "users_list", json!({"team": "payments", "on_call": true})).await)["data"][0]["name"], "Priya Raman");
        assert_eq!(ok_json(&call(&c.client, "users_get", json!({"id": 2})).await)["name"], "Marcus Chen");
        assert!(ok_json(&call(&c.client, "tickets_list", json!({"status": "open", "limit": 3})).await)["data"].as_array().unwrap().len() == 3);
        assert_eq!(ok_json(&call(&c.client, "tickets_get", json!({"id": 1})).await)["id"], 1);
        let t = ok_json(&call(&c.client, "tickets_create", json!({"title": format!("Broken export {via:?}")})).await);
        let id = t["id"].as_i64().unwrap();
        let u = ok_json(&call(&c.client, "tickets_update", json!({"id": id, "customer_id": 3, "assignee_id": 5})).await);
        assert_eq!((u["customer_id"].as_i64(), u["assignee_id"].as_i64()), (Some(3), Some(5)));
        ok_json(&call(&c.client, "notifications_create", json!({"user_id": 5, "ticket_id": id, "message": "yours"})).await);
        assert_eq!(ok_json(&call(&c.client, "notifications_list", json!({"ticket_id": id})).await)["total"], 1);
        // A backend 4xx is a tool error naming the problem, not a protocol fault.
        let e = err_text(&call(&c.client, "tickets_update", json!({"id": id, "assignee_id": 999999})).await);
        assert!(e.contains("assignee_id") && e.contains("999999"), "{e}");
        // Arguments the schema rejects are a tool error too.
        let e = err_text(&call(&c.client, "tickets_get", json!({"id": "one"})).await);
        assert!(!e.is_empty());
        c.close().await;

        let c = connect("orchestrator", b.url(), via).await;
        let tools: Vec<String> = c.client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
        assert!(tools.contains(&"create_assigned_ticket".to_owned()) && !tools.contains(&"tickets_create".to_owned()), "{tools:?}");
        let r = ok_json(
            &call(
                &c.client,
                "create_assigned_ticket",
                json!({"title": format!("Orchestrated {via:?}"), "priority": "high", "customer_id": 3, "assignee_id": 5}),
            )
            .await,
        );
        let id = r["ticket"]["id"].as_i64().unwrap();
        assert_eq!(r["notification"]["user_id"], 5);
        let r = ok_json(&call(&c.client, "reassign_ticket", json!({"ticket_id": id, "assignee_id": 2})).await);
        assert_eq!((r["ticket"]["assignee_id"].as_i64(), r["notification"]["user_id"].as_i64()), (Some(2), Some(2)));
        // To its current owner: only the notification, the ticket untouched (no version bump).
        let before = sql(&b, &format!("SELECT version, updated_at::text AS at FROM tickets WHERE id = {id}")).await;
        let r = ok_json(&call(&c.client, "reassign_ticket", json!({"ticket_id": id, "assignee_id": 2, "message": "still yours"})).await);
        assert_eq!((r["ticket"]["assignee_id"].as_i64(), r["notification"]["message"].as_str()), (Some(2), Some("still yours")));
        assert_eq!(sql(&b, &format!("SELECT version, updated_at::text AS at FROM tickets WHERE id = {id}")).await, before);
        for tool in ["customers_list", "customers_get", "users_list", "users_get", "tickets_list", "tickets_get"] {
            let args = if tool.ends_with("_get") { json!({"id": 1}) } else { json!({}) };
            ok_json(&call(&c.client, tool, args).await);
        }
        c.close().await;
    }
    b.shutdown().await.unwrap();
}

/// The orchestrated call and the four control calls leave the same state behind.
#[tokio::test]
async fn orchestrated_sequence_equals_the_four_control_calls() {
    let b = common::backend().await;
    let w = connect("wrapper", b.url(), common::Via::Stdio).await;
    let t = ok_json(&call(&w.client, "tickets_create", json!({"title": "Same outcome", "priority": "urgent"})).await);
    let id1 = t["id"].as_i64().unwrap();
    ok_json(&call(&w.client, "tickets_update", json!({"id": id1, "customer_id": 2})).await);
    ok_json(&call(&w.client, "tickets_update", json!({"id": id1, "assignee_id": 6})).await);
    ok_json(&call(&w.client, "notifications_create", json!({"user_id": 6, "ticket_id": id1, "message": "Please take this one"})).await);
    w.close().await;

    let o = connect("orchestrator", b.url(), common::Via::Stdio).await;
    let r = ok_json(
        &call(
            &o.client,
            "create_assigned_ticket",
            json!({"title": "Same outcome", "priority": "urgent", "customer_id": 2, "assignee_id": 6, "message": "Please take this one"}),
        )
        .await,
    );
    let id2 = r["ticket"]["id"].as_i64().unwrap();
    o.close().await;

    let state = |id: i64| {
        format!(
            "SELECT t.title, t.status, t.priority, t.customer_id, t.assignee_id, t.version,
                    (SELECT json_agg(json_build_object('user', n.user_id, 'message', n.message)) FROM notifications n WHERE n.ticket_id = t.id) AS notes
             FROM tickets t WHERE t.id = {id}"
        )
    };
    let (s1, s2) = (sql(&b, &state(id1)).await, sql(&b, &state(id2)).await);
    assert_eq!(s1, s2);
    assert_eq!(s1["assignee_id"], 6);
    b.shutdown().await.unwrap();
}

/// A step failing after the ticket exists leaves no ticket behind.
#[tokio::test]
async fn failed_sequence_leaves_nothing_half_done() {
    let b = common::backend().await;
    let o = connect("orchestrator", b.url(), common::Via::Stdio).await;
    let count = "SELECT count(*) AS n FROM tickets";
    let before = sql(&b, count).await;
    // Unknown references are caught before anything is written.
    let e = err_text(&call(&o.client, "create_assigned_ticket", json!({"title": "x", "customer_id": 999999, "assignee_id": 1})).await);
    assert!(e.contains("customer 999999"), "{e}");
    // An invalid notification text fails the last step (over 1000 characters): the ticket goes.
    let e = err_text(&call(&o.client, "create_assigned_ticket", json!({"title": "x", "customer_id": 1, "assignee_id": 1, "message": "m".repeat(1001)})).await);
    assert!(e.contains("notifying") && e.contains("removed again"), "{e}");
    assert_eq!(sql(&b, count).await, before);
    o.close().await;
    b.shutdown().await.unwrap();
}

/// An unreachable backend is a clear tool error, quickly, not a hang or a crash.
#[tokio::test]
async fn unreachable_backend_is_a_tool_error() {
    let dead = "http://127.0.0.1:9"; // discard port: nothing listens
    for via in BOTH {
        let c = connect("wrapper", dead, via).await;
        let started = std::time::Instant::now();
        let e = err_text(&call(&c.client, "tickets_get", json!({"id": 1})).await);
        assert!(e.contains("could not be reached"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(15));
        c.close().await;
    }
}
