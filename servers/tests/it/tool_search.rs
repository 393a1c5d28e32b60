//! Tool search module: both servers over both transports against the real backend, at the
//! catalogue sizes of the sweep. The control lists the whole catalogue; the pattern finds the
//! same tools by search and runs them through the same code, so the same request through either
//! arm leaves the same state behind; a tool of an unconnected system answers that it is not
//! connected, in both arms.

use crate::common;

use crate::common::{BOTH, Via, call, connect_with, err_text, ok_json, sql};
use serde_json::{Value, json};
use servers::launch::ArmSettings;
use servers::modules::tool_search::{DEFAULT_CATALOGUE, catalogue};

fn size(n: u32) -> ArmSettings {
    ArmSettings { catalogue: Some(n), poison: None }
}

/// The names of the tools a search for `query` returned, best first.
fn found(result: &Value) -> Vec<String> {
    result["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

/// The backend's own operations, in both arms: 26 of them.
const OWN: usize = 26;

#[tokio::test]
async fn the_control_lists_the_catalogue_the_run_chose_and_the_pattern_two_tools() {
    let b = common::backend().await;
    for (n, via) in [(25, Via::Stdio), (800, Via::Http), (200, Via::Stdio)] {
        let c = connect_with("tool_search_wrapper", b.url(), via, size(n)).await;
        let tools = c.client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), OWN + n as usize, "{n} {via:?}");
        // The smaller catalogue is inside the larger: the near-misses are there from the start.
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for t in catalogue::foreign(n) {
            assert!(names.contains(&t.tool.name.as_ref()), "{}", t.tool.name);
        }
        assert!(names.contains(&"deskflow_create_ticket") && names.contains(&"ledgerly_create_invoice"), "{n}");
        c.close().await;
        let p = connect_with("tool_search", b.url(), via, size(n)).await;
        let tools: Vec<String> = p.client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
        assert_eq!(tools, ["call_tool", "search_tools"]);
        p.close().await;
    }
    // Without a choice, the module's default.
    let c = connect_with("tool_search_wrapper", b.url(), Via::Stdio, ArmSettings::default()).await;
    assert_eq!(c.client.list_all_tools().await.unwrap().len(), OWN + DEFAULT_CATALOGUE as usize);
    c.close().await;
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn both_arms_run_the_same_operations_and_refuse_the_same_unconnected_tools() {
    let b = common::backend().await;
    let globex = sql(&b, "SELECT id FROM customers WHERE name = 'Globex Retail'").await["id"].clone();
    for via in BOTH {
        let p = connect_with("tool_search", b.url(), via, size(800)).await;
        let hits = ok_json(&call(&p.client, "search_tools", json!({"query": "create a support ticket for a customer"})).await);
        let names = found(&hits);
        assert!(names.contains(&"tickets_create".to_owned()), "{via:?}: {names:?}");
        assert!(hits["tools"][0]["input_schema"]["properties"].is_object(), "full definitions: {hits}");
        assert_eq!(hits["tools"][0]["rank"], 1);
        let unique: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "each tool is found once: {names:?}");
        assert_eq!(names.len(), 5, "the default limit");
        let ticket = ok_json(
            &call(&p.client, "call_tool", json!({"name": "tickets_create", "arguments": {"title": format!("Found {via:?}"), "customer_id": globex}})).await,
        );
        assert_eq!(ticket["customer_id"], globex);
        // A near-miss of another system: listed, found, not connected.
        let e = err_text(&call(&p.client, "call_tool", json!({"name": "deskflow_create_ticket", "arguments": {"subject": "x"}})).await);
        assert!(e.contains("Deskflow") && e.contains("not connected"), "{e}");
        // A name that is in no catalogue, bad arguments, a bad limit: each a tool error that says so.
        let e = err_text(&call(&p.client, "call_tool", json!({"name": "tickets_destroy"})).await);
        assert!(e.contains("no tool named") && e.contains("search_tools"), "{e}");
        let e = err_text(&call(&p.client, "call_tool", json!({"name": "tickets_create", "arguments": {"titel": "typo"}})).await);
        assert!(e.contains("titel"), "{e}");
        let e = err_text(&call(&p.client, "search_tools", json!({"query": "tickets", "limit": 50})).await);
        assert!(e.contains("1 to 10"), "{e}");
        p.close().await;

        let c = connect_with("tool_search_wrapper", b.url(), via, size(800)).await;
        let t = ok_json(&call(&c.client, "tickets_create", json!({"title": format!("Listed {via:?}"), "customer_id": globex})).await);
        assert_eq!(ok_json(&call(&c.client, "tickets_get", json!({"id": t["id"]})).await)["title"], format!("Listed {via:?}"));
        let e = err_text(&call(&c.client, "deskflow_create_ticket", json!({"subject": "x"})).await);
        assert!(e.contains("Deskflow") && e.contains("not connected"), "{e}");
        c.close().await;
    }
    let n = sql(&b, "SELECT count(*) AS n FROM tickets WHERE title LIKE 'Found %' OR title LIKE 'Listed %'").await["n"].clone();
    assert_eq!(n, 4);
    b.shutdown().await.unwrap();
}

/// The pattern's search and call and the control's direct call leave the same ticket behind.
#[tokio::test]
async fn both_arms_leave_the_same_state() {
    let b = common::backend().await;
    let args = json!({"title": "Same outcome", "priority": "urgent", "customer_id": 1});
    let p = connect_with("tool_search", b.url(), Via::Stdio, size(100)).await;
    let first = ok_json(&call(&p.client, "call_tool", json!({"name": "tickets_create", "arguments": args})).await)["id"].clone();
    p.close().await;
    let c = connect_with("tool_search_wrapper", b.url(), Via::Stdio, size(100)).await;
    let second = ok_json(&call(&c.client, "tickets_create", args).await)["id"].clone();
    c.close().await;
    let row = |id: &Value| format!("SELECT title, status, priority, customer_id, assignee_id FROM tickets WHERE id = {id}");
    assert_eq!(sql(&b, &row(&first)).await, sql(&b, &row(&second)).await);
    b.shutdown().await.unwrap();
}

/// A search answers the same at every size it is asked, and a larger catalogue can only push
/// the backend's own tool down, never drop it from the catalogue.
#[tokio::test]
async fn searches_are_deterministic_and_the_backends_tools_stay_findable() {
    let b = common::backend().await;
    let mut ranks = Vec::new();
    for &n in catalogue::LEVELS {
        let p = connect_with("tool_search", b.url(), Via::Stdio, size(n)).await;
        let q = json!({"query": "list the tickets of a customer", "limit": 10});
        let once = ok_json(&call(&p.client, "search_tools", q.clone()).await);
        assert_eq!(once, ok_json(&call(&p.client, "search_tools", q).await), "same query, same answer at {n}");
        ranks.push((n, found(&once).iter().position(|t| t == "tickets_list")));
        p.close().await;
    }
    assert!(ranks.iter().all(|(_, r)| r.is_some()), "tickets_list is in the top 10 at every size: {ranks:?}");
    assert!(ranks.windows(2).all(|w| w[0].1 <= w[1].1), "a larger catalogue never ranks it higher: {ranks:?}");
    b.shutdown().await.unwrap();
}
