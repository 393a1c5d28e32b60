//! Domain adapter module: both servers over both transports against the real backend, and the
//! resolution rule on the seed's near-twin customers and repeated ticket titles.

use crate::common;

use crate::common::{BOTH, Client, Via, call, connect, err_text, ok_json, sql};
use serde_json::{Value, json};

const ADAPTER_TOOLS: [&str; 6] = ["find_customer", "find_person", "find_tickets", "ticket_details", "open_ticket", "update_ticket"];
const WRAPPER_TOOLS: [&str; 8] =
    ["customers_list", "customers_get", "users_list", "users_get", "tickets_list", "tickets_get", "tickets_create", "tickets_update"];

async fn tool_names(c: &Client) -> Vec<String> {
    let mut names: Vec<String> = c.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    names.sort();
    names
}

fn sorted(names: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
    v.sort();
    v
}

/// The `#id` part of a reference such as `#12`.
fn id_of(v: &Value) -> i64 {
    v["id"].as_i64().unwrap_or_else(|| panic!("no id in {v}"))
}

/// A title that several seed tickets share, and their ids.
async fn repeated_title(b: &backend::local::LocalBackend) -> (String, Vec<i64>) {
    let row =
        sql(b, "SELECT title, array_agg(id ORDER BY id) AS ids FROM tickets GROUP BY title HAVING count(*) BETWEEN 2 AND 10 ORDER BY title LIMIT 1").await;
    let ids = row["ids"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    (row["title"].as_str().unwrap().to_owned(), ids)
}

#[tokio::test]
async fn every_tool_of_both_arms_works_over_both_transports() {
    let b = common::backend().await;
    for via in BOTH {
        let c = connect("domain_wrapper", b.url(), via).await;
        assert_eq!(tool_names(&c.client).await, sorted(&WRAPPER_TOOLS), "{via:?}");
        let page = ok_json(&call(&c.client, "customers_list", json!({"name": "Northwind Traders"})).await);
        assert_eq!((page["total"].as_i64(), page["data"][0]["id"].as_i64()), (Some(1), Some(1)));
        assert_eq!(ok_json(&call(&c.client, "customers_get", json!({"id": 2})).await)["name"], "Northwind Trading Co");
        assert_eq!(ok_json(&call(&c.client, "users_list", json!({"q": "Marcus Chen"})).await)["data"][0]["id"], 2);
        assert_eq!(ok_json(&call(&c.client, "users_get", json!({"id": 2})).await)["name"], "Marcus Chen");
        assert_eq!(ok_json(&call(&c.client, "tickets_list", json!({"customer_id": 1, "limit": 2})).await)["data"][0]["customer_id"], 1);
        assert_eq!(ok_json(&call(&c.client, "tickets_get", json!({"id": 3})).await)["id"], 3);
        let t = ok_json(&call(&c.client, "tickets_create", json!({"title": format!("Wrapper {via:?}"), "customer_id": 2})).await);
        let u = ok_json(&call(&c.client, "tickets_update", json!({"id": id_of(&t), "assignee_id": 2, "status": "in_progress"})).await);
        assert_eq!((u["assignee_id"].as_i64(), u["status"].as_str()), (Some(2), Some("in_progress")));
        c.close().await;

        let c = connect("domain_adapter", b.url(), via).await;
        assert_eq!(tool_names(&c.client).await, sorted(&ADAPTER_TOOLS), "{via:?}");
        let r = ok_json(&call(&c.client, "find_customer", json!({"customer": "Northwind Traders"})).await);
        assert_eq!((r["customer"]["id"].as_i64(), r["customer"]["name"].as_str()), (Some(1), Some("Northwind Traders")));
        let open = sql(&b, "SELECT count(*) AS n FROM tickets WHERE customer_id = 1 AND status = 'open'").await;
        assert_eq!(r["tickets_by_status"]["open"], open["n"], "{r}");
        let r = ok_json(&call(&c.client, "find_person", json!({"person": "marcus chen"})).await);
        assert_eq!((r["person"]["id"].as_i64(), r["person"]["team"].as_str()), (Some(2), Some("platform")));
        let assigned = sql(&b, "SELECT count(*) AS n FROM tickets WHERE assignee_id = 2 AND status = 'closed'").await;
        assert_eq!(r["assigned_tickets_by_status"]["closed"], assigned["n"], "{r}");

        let t = ok_json(
            &call(&c.client, "open_ticket", json!({"title": format!("Adapter {via:?}"), "customer": "Northwind Trading Co", "assignee": "Marcus Chen"})).await,
        );
        assert_eq!(t["customer"], json!({"id": 2, "name": "Northwind Trading Co"}));
        assert_eq!(t["assignee"], json!({"id": 2, "name": "Marcus Chen"}));
        assert!(t.get("customer_id").is_none() && t.get("assignee_id").is_none(), "names replace bare ids: {t}");
        let id = id_of(&t);
        let u = ok_json(&call(&c.client, "update_ticket", json!({"ticket": format!("#{id}"), "status": "resolved", "assignee": "Priya Raman"})).await);
        assert_eq!((u["status"].as_str(), u["assignee"]["name"].as_str()), (Some("resolved"), Some("Priya Raman")));
        // A title that only this ticket has resolves without an id.
        let d = ok_json(&call(&c.client, "ticket_details", json!({"ticket": format!("adapter {via:?}")})).await);
        assert_eq!((id_of(&d), d["customer"]["name"].as_str()), (id, Some("Northwind Trading Co")));
        let page = ok_json(&call(&c.client, "find_tickets", json!({"customer": "Northwind Trading Co", "assignee": "#1"})).await);
        let rows = page["data"].as_array().unwrap();
        assert!(rows.iter().any(|r| id_of(r) == id), "{page}");
        assert!(rows.iter().all(|r| r["customer"]["id"] == 2 && r["assignee"]["name"] == "Priya Raman"), "{page}");
        c.close().await;
    }
    b.shutdown().await.unwrap();
}

/// Customers 1 and 2 differ by a word; the adapter must never pick one of them by itself.
#[tokio::test]
async fn near_twin_customers_resolve_exactly_or_not_at_all() {
    let b = common::backend().await;
    let c = connect("domain_adapter", b.url(), Via::Stdio).await;
    let find = |name: &str| call(&c.client, "find_customer", json!({"customer": name}));

    let e = err_text(&find("Northwind").await);
    assert!(e.contains("#1 Northwind Traders (enterprise, eu-west)") && e.contains("#2 Northwind Trading Co (standard, us-east)"), "{e}");
    assert!(e.contains("matches 2 customers"), "{e}");
    // Exact (case-insensitive) beats the substring match that would also hit a longer name.
    assert_eq!(id_of(&ok_json(&find("Northwind Traders").await)["customer"]), 1);
    assert_eq!(id_of(&ok_json(&find("northwind trading co").await)["customer"]), 2);
    assert_eq!(id_of(&ok_json(&find("Acme Logistics").await)["customer"]), 3);
    // A part of a name that only one customer has is enough; so is #id.
    assert_eq!(id_of(&ok_json(&find("trading").await)["customer"]), 2);
    assert_eq!(id_of(&ok_json(&find("#2").await)["customer"]), 2);
    // Unknown names and ids are clear errors, with near matches where there are some.
    let e = err_text(&find("Nortwind Traders").await);
    assert!(e.contains("No customer") && e.contains("Northwind Traders"), "{e}");
    let e = err_text(&find("Zyxwv Unknown Corp").await);
    assert!(e.contains("No customer") && e.contains("Zyxwv"), "{e}");
    let e = err_text(&find("#999999").await);
    assert!(e.contains("no customer #999999"), "{e}");

    // People: exact beats substring (seed names repeat with a number: "Paula Tanaka" and
    // "Paula Tanaka 5"), a unique part, ambiguous.
    let twin = sql(&b, "SELECT a.id, a.name FROM users a JOIN users b ON b.name LIKE a.name || ' %' ORDER BY a.id LIMIT 1").await;
    let r = ok_json(&call(&c.client, "find_person", json!({"person": twin["name"]})).await);
    assert_eq!(r["person"]["id"], twin["id"], "{r}");
    assert_eq!(id_of(&ok_json(&call(&c.client, "find_person", json!({"person": "MARCUS"})).await)["person"]), 2);
    let e = err_text(&call(&c.client, "find_person", json!({"person": "an"})).await);
    assert!(e.contains("people") && e.contains("#1 Priya Raman (payments)"), "{e}");

    // An ambiguous reference in a write changes nothing.
    let before = sql(&b, "SELECT count(*) AS n FROM tickets").await;
    let e = err_text(&call(&c.client, "open_ticket", json!({"title": "Should not exist", "customer": "Northwind"})).await);
    assert!(e.contains("nothing was done"), "{e}");
    assert_eq!(sql(&b, "SELECT count(*) AS n FROM tickets").await, before);
    c.close().await;
    b.shutdown().await.unwrap();
}

/// Seed titles repeat: a title shared by several tickets is refused with each `#id` listed, and
/// the `#id` then works.
#[tokio::test]
async fn repeated_ticket_title_lists_candidates_and_id_then_works() {
    let b = common::backend().await;
    let (title, ids) = repeated_title(&b).await;
    let c = connect("domain_adapter", b.url(), Via::Http).await;

    let e = err_text(&call(&c.client, "ticket_details", json!({"ticket": title})).await);
    for id in &ids {
        assert!(e.contains(&format!("#{id} {title} (")), "#{id} missing: {e}");
    }
    // Each candidate names its customer and status.
    let first = sql(
        &b,
        &format!(
            "SELECT coalesce(c.name, 'no customer') AS customer, t.status FROM tickets t LEFT JOIN customers c ON c.id = t.customer_id WHERE t.id = {}",
            ids[0]
        ),
    )
    .await;
    assert!(e.contains(&format!("#{} {title} ({}, {})", ids[0], first["customer"].as_str().unwrap(), first["status"].as_str().unwrap())), "{e}");

    let versions = format!("SELECT sum(version) AS v FROM tickets WHERE id IN ({})", ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
    let before = sql(&b, &versions).await;
    err_text(&call(&c.client, "update_ticket", json!({"ticket": title, "status": "closed"})).await);
    assert_eq!(sql(&b, &versions).await, before, "an ambiguous ticket is not updated");

    let d = ok_json(&call(&c.client, "ticket_details", json!({"ticket": format!("#{}", ids[1])})).await);
    assert_eq!((id_of(&d), d["title"].as_str()), (ids[1], Some(title.as_str())));
    ok_json(&call(&c.client, "update_ticket", json!({"ticket": format!("#{}", ids[1]), "status": "closed"})).await);
    assert_eq!(sql(&b, &format!("SELECT status FROM tickets WHERE id = {}", ids[1])).await["status"], "closed");

    let e = err_text(&call(&c.client, "ticket_details", json!({"ticket": "no such ticket title anywhere"})).await);
    assert!(e.contains("No ticket"), "{e}");
    let e = err_text(&call(&c.client, "update_ticket", json!({"ticket": format!("#{}", ids[0])})).await);
    assert!(e.contains("at least one field"), "{e}");
    c.close().await;
    b.shutdown().await.unwrap();
}

/// "Open a ticket for Northwind Trading Co, assign it to Marcus Chen, then start work on it":
/// the wrapper's lookups plus id calls and the adapter's named calls leave the same rows.
#[tokio::test]
async fn same_business_operation_same_final_state() {
    let b = common::backend().await;
    let w = connect("domain_wrapper", b.url(), Via::Stdio).await;
    let customer = ok_json(&call(&w.client, "customers_list", json!({"name": "Northwind Trading Co"})).await)["data"][0]["id"].as_i64().unwrap();
    let person = ok_json(&call(&w.client, "users_list", json!({"q": "Marcus Chen"})).await)["data"][0]["id"].as_i64().unwrap();
    let t = ok_json(&call(&w.client, "tickets_create", json!({"title": "Export fails for EU accounts", "priority": "high", "customer_id": customer})).await);
    let id1 = id_of(&t);
    ok_json(&call(&w.client, "tickets_update", json!({"id": id1, "assignee_id": person})).await);
    ok_json(&call(&w.client, "tickets_update", json!({"id": id1, "status": "in_progress"})).await);
    w.close().await;

    let a = connect("domain_adapter", b.url(), Via::Stdio).await;
    let t = ok_json(
        &call(&a.client, "open_ticket", json!({"title": "Export fails for EU accounts", "priority": "high", "customer": "Northwind Trading Co"})).await,
    );
    let id2 = id_of(&t);
    // The title now exists twice (once per arm): by title it is ambiguous, by #id it is not.
    let e = err_text(&call(&a.client, "update_ticket", json!({"ticket": "Export fails for EU accounts", "assignee": "Marcus Chen"})).await);
    assert!(e.contains(&format!("#{id1} ")) && e.contains(&format!("#{id2} ")), "{e}");
    ok_json(&call(&a.client, "update_ticket", json!({"ticket": format!("#{id2}"), "assignee": "Marcus Chen"})).await);
    ok_json(&call(&a.client, "update_ticket", json!({"ticket": format!("#{id2}"), "status": "in_progress"})).await);
    a.close().await;

    let state = |id: i64| format!("SELECT title, description, status, priority, customer_id, assignee_id, version FROM tickets WHERE id = {id}");
    let (s1, s2) = (sql(&b, &state(id1)).await, sql(&b, &state(id2)).await);
    assert_eq!(s1, s2);
    assert_eq!((s1["customer_id"].as_i64(), s1["assignee_id"].as_i64(), s1["status"].as_str()), (Some(2), Some(2), Some("in_progress")));
    b.shutdown().await.unwrap();
}

/// An unreachable backend is a clear tool error from a resolving tool, not a hang or a crash.
#[tokio::test]
async fn unreachable_backend_is_a_tool_error() {
    let dead = "http://127.0.0.1:9"; // discard port: nothing listens
    for via in BOTH {
        let c = connect("domain_adapter", dead, via).await;
        let e = err_text(&call(&c.client, "find_customer", json!({"customer": "Northwind"})).await);
        assert!(e.contains("could not be reached"), "{e}");
        c.close().await;
    }
}
