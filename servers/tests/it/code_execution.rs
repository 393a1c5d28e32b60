//! Code execution module: both servers over both transports against the real backend; a broken
//! program is a tool error the model can read and the next program runs; the same request through
//! either arm leaves the same state behind; and 1,000 hostile programs leave the server's memory
//! where it was.

use crate::common;

use crate::common::{BOTH, Via, call, connect, err_text, ok_json, sql, text};
use serde_json::json;

fn program(script: &str) -> serde_json::Value {
    json!({ "script": script })
}

/// Every API function of the pattern, in one program, and every flat tool of the control.
#[tokio::test]
async fn every_operation_of_both_arms_works_over_both_transports() {
    let b = common::backend().await;
    for via in BOTH {
        let c = connect("code_execution", b.url(), via).await;
        let script = format!(
            r#"
            const g = customers.list({{ name: "Globex Retail" }}).data[0];
            const same = customers.get(g.id);
            const sofia = users.list({{ q: "Sofia Alvarez" }}).data[0];
            const again = users.get(sofia.id);
            const t = tickets.create({{ title: "Example {via:?}", customer_id: g.id, priority: "low" }});
            const u = tickets.update(t.id, {{ priority: "high", assignee_id: sofia.id }});
            const got = tickets.get(t.id);
            const listed = tickets.list({{ customer_id: g.id, q: "Example {via:?}" }}).total;
            const n = notifications.create({{ user_id: sofia.id, ticket_id: t.id, message: "Example" }});
            const mine = notifications.list({{ ticket_id: t.id }}).total;
            print(JSON.stringify({{ same: same.name, again: again.name, priority: u.priority, owner: got.assignee_id === sofia.id, listed, note: n.ticket_id === t.id, mine }}));
            "#
        );
        let out = ok_json(&call(&c.client, "run_script", program(&script)).await);
        assert_eq!(
            out,
            json!({"same": "Globex Retail", "again": "Sofia Alvarez", "priority": "high", "owner": true, "listed": 1, "note": true, "mine": 1}),
            "{via:?}"
        );
        c.close().await;

        let c = connect("code_execution_wrapper", b.url(), via).await;
        let globex = ok_json(&call(&c.client, "customers_list", json!({"name": "Globex Retail"})).await)["data"][0]["id"].clone();
        assert_eq!(ok_json(&call(&c.client, "customers_get", json!({"id": globex})).await)["name"], "Globex Retail");
        let sofia = ok_json(&call(&c.client, "users_list", json!({"q": "Sofia Alvarez"})).await)["data"][0]["id"].clone();
        assert_eq!(ok_json(&call(&c.client, "users_get", json!({"id": sofia})).await)["name"], "Sofia Alvarez");
        let t = ok_json(&call(&c.client, "tickets_create", json!({"title": format!("Flat {via:?}"), "customer_id": globex})).await);
        assert_eq!(ok_json(&call(&c.client, "tickets_update", json!({"id": t["id"], "priority": "high"})).await)["priority"], "high");
        assert_eq!(ok_json(&call(&c.client, "tickets_get", json!({"id": t["id"]})).await)["title"], format!("Flat {via:?}"));
        assert_eq!(ok_json(&call(&c.client, "tickets_list", json!({"q": format!("Flat {via:?}")})).await)["total"], 1);
        let n = ok_json(&call(&c.client, "notifications_create", json!({"user_id": sofia, "ticket_id": t["id"], "message": "Flat"})).await);
        assert_eq!(ok_json(&call(&c.client, "notifications_list", json!({"ticket_id": t["id"]})).await)["data"][0]["id"], n["id"]);
        c.close().await;
    }
    b.shutdown().await.unwrap();
}

/// What the model reads when its program is wrong or runs away: a tool error naming the problem,
/// what it printed before it stopped, and a server that runs the next program as if nothing
/// happened.
#[tokio::test]
async fn a_broken_program_is_a_named_tool_error_and_the_next_one_runs() {
    let b = common::backend().await;
    let c = connect("code_execution", b.url(), Via::Stdio).await;
    let cases: &[(&str, &[&str])] = &[
        ("print('a'); let x = ;", &["syntax"]),
        ("print('before'); while (true) {}", &["5 s", "before"]),
        ("const a = []; while (true) a.push(new Array(1e6).fill(1));", &["memory"]),
        ("function f(n) { return f(n + 1) + 1; } f(0);", &["stack"]),
        ("throw new Error('the owner is unknown');", &["the owner is unknown"]),
        ("throw 42;", &["42"]),
        ("tickets.update(1, { bogus: 1 });", &["tickets.update", "bogus"]),
        ("tickets.get(999999999);", &["tickets.get", "404"]),
        ("require('fs');", &["require"]),
        ("fetch('http://example.com');", &["fetch"]),
        ("__host('tickets.get', '{\"id\": 1}');", &["__host"]),
        ("for (let i = 0; i < 1e6; i++) print('x'.repeat(100));", &["print", "16 KiB"]),
        ("for (let i = 0; i < 101; i++) users.get(1);", &["100"]),
    ];
    for (script, says) in cases {
        let e = err_text(&call(&c.client, "run_script", program(script)).await).to_lowercase();
        for word in *says {
            assert!(e.contains(&word.to_lowercase()), "{script}: {word:?} not in {e:?}");
        }
        let next = text(&call(&c.client, "run_script", program("print(users.get(1).name)")).await);
        assert_eq!(next.trim(), "Priya Raman", "after {script}");
    }
    // An API error the program catches is its own business.
    let caught = text(&call(&c.client, "run_script", program("try { tickets.get(999999999) } catch (e) { print('caught') }")).await);
    assert_eq!(caught.trim(), "caught");
    let silent = text(&call(&c.client, "run_script", program("users.get(1)")).await);
    assert!(silent.contains("printed nothing"), "{silent}");
    c.close().await;
    b.shutdown().await.unwrap();
}

/// The pattern's one program and the control's calls leave the same tickets and notifications.
#[tokio::test]
async fn both_arms_leave_the_same_state() {
    let b = common::backend().await;
    let p = connect("code_execution", b.url(), Via::Stdio).await;
    let script = r#"
        const g = customers.list({ name: "Globex Retail" }).data[0];
        const sofia = users.list({ q: "Sofia Alvarez" }).data[0];
        const t = tickets.create({ title: "Same outcome A", customer_id: g.id, priority: "urgent", assignee_id: sofia.id });
        notifications.create({ user_id: sofia.id, ticket_id: t.id, message: "Same outcome" });
        print(t.id);
    "#;
    let first: i64 = text(&call(&p.client, "run_script", program(script)).await).trim().parse().unwrap();
    p.close().await;

    let c = connect("code_execution_wrapper", b.url(), Via::Stdio).await;
    let g = ok_json(&call(&c.client, "customers_list", json!({"name": "Globex Retail"})).await)["data"][0]["id"].clone();
    let sofia = ok_json(&call(&c.client, "users_list", json!({"q": "Sofia Alvarez"})).await)["data"][0]["id"].clone();
    let args = json!({"title": "Same outcome B", "priority": "urgent", "customer_id": g, "assignee_id": sofia});
    let second = ok_json(&call(&c.client, "tickets_create", args).await)["id"].as_i64().unwrap();
    call(&c.client, "notifications_create", json!({"user_id": sofia, "ticket_id": second, "message": "Same outcome"})).await;
    c.close().await;

    let row = |id: i64| {
        format!(
            "SELECT status, priority, customer_id, assignee_id, (SELECT count(*) FROM notifications WHERE ticket_id = {id}) AS notes FROM tickets WHERE id = {id}"
        )
    };
    assert_eq!(sql(&b, &row(first)).await, sql(&b, &row(second)).await);
    b.shutdown().await.unwrap();
}

/// The server process's resident memory, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// 1,000 hostile programs through the server (over HTTP, so it runs in this process and its
/// memory is this process's): no panic, every one a tool error, and the resident memory after
/// them within 8 MiB of where it was after the first 100 (measured: 28 KiB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_hostile_programs_leave_the_server_as_it_was() {
    let b = common::backend().await;
    let c = connect("code_execution", b.url(), Via::Http).await;
    let hostile = [
        "let s = 'x'; while (true) s += s;",
        "function f() { return f() + 1 } f()",
        "let x = ;",
        "throw new Error('no')",
        "tickets.update(1, { nope: true })",
        "require('fs')",
        "for (let i = 0; i < 1e6; i++) print('y'.repeat(1000))",
    ];
    let mut baseline = 0;
    for i in 0..1000 {
        let r = call(&c.client, "run_script", program(hostile[i % hostile.len()])).await;
        assert_eq!(r.is_error, Some(true), "program {i} should fail");
        if i == 99 {
            baseline = rss_kib();
        }
    }
    let grown = rss_kib().saturating_sub(baseline);
    eprintln!("resident memory after the first 100 hostile programs: {baseline} KiB; grown by {grown} KiB over the next 900");
    assert!(grown < 8 * 1024, "resident memory grew by {grown} KiB over 900 hostile programs");
    assert_eq!(text(&call(&c.client, "run_script", program("print(1 + 1)")).await).trim(), "2");
    c.close().await;
    b.shutdown().await.unwrap();
}
