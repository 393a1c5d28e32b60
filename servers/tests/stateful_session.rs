//! Stateful session module: both servers over both transports against the real backend, plus
//! the draft lifecycle: isolation between sessions, idle expiry, early validation, retry.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{BOTH, Client, Via, call, connect, err_text, ok_json, sql};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};
use servers::BackendClient;
use servers::modules::stateful_session::{DRAFT_TTL_ENV, SessionServer};

fn tool_names(tools: Vec<rmcp::model::Tool>) -> Vec<String> {
    let mut names: Vec<String> = tools.into_iter().map(|t| t.name.to_string()).collect();
    names.sort();
    names
}

/// Serves `router` on a free loopback port; returns its MCP URL and the serving task.
async fn serve_http(router: axum::Router) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    (url, task)
}

async fn http_client(url: &str) -> Client {
    ().serve(StreamableHttpClientTransport::from_uri(url.to_owned())).await.expect("connect over HTTP")
}

/// `session_server` over stdio with the draft TTL set through the environment.
async fn stdio_with_ttl(backend_url: &str, ttl_secs: u64) -> Client {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-bench-server"));
    cmd.args(servers::launch::stdio_args("session_server", backend_url)).env(DRAFT_TTL_ENV, ttl_secs.to_string());
    ().serve(TokioChildProcess::new(cmd).unwrap()).await.expect("connect over stdio")
}

/// `session_server` over HTTP (legacy sessions) with the TTL given to the constructor.
fn http_router_with_ttl(backend_url: &str, ttl: Duration) -> axum::Router {
    let backend = BackendClient::new(backend_url);
    let service = StreamableHttpService::new(
        move || Ok(SessionServer::with_ttl(backend.clone(), ttl)),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    axum::Router::new().nest_service("/mcp", service)
}

async fn start(c: &Client, cr: i64, reviewer: i64) -> String {
    let r = ok_json(&call(c, "start_review", json!({"change_request_id": cr, "reviewer_id": reviewer})).await);
    r["draft"].as_str().unwrap().to_owned()
}

const REVIEW_COMMENTS: [(&str, i32, &str); 4] = [
    ("src/payments/refund.rs", 42, "This unwrap panics on a missing order."),
    ("src/payments/refund.rs", 57, "Log the refund id here."),
    ("src/api/routes.rs", 12, "Route name does not match the handler."),
    ("migrations/0042_refunds.sql", 3, "Add an index on order_id."),
];

fn count_reviews() -> &'static str {
    "SELECT (SELECT count(*) FROM reviews) AS reviews, (SELECT count(*) FROM review_comments) AS comments"
}

#[tokio::test]
async fn every_tool_of_both_arms_works_over_both_transports() {
    let b = common::backend().await;
    let reads = [
        "change_requests_comments_list",
        "change_requests_get",
        "change_requests_list",
        "change_requests_reviews_list",
        "repos_get",
        "repos_list",
        "users_get",
        "users_list",
    ];
    for via in BOTH {
        let c = connect("session_baseline", b.url(), via).await;
        let tools = tool_names(c.client.list_all_tools().await.unwrap());
        let mut expected: Vec<&str> = reads.to_vec();
        expected.extend(["change_requests_comments_create", "change_requests_reviews_create"]);
        expected.sort_unstable();
        assert_eq!(tools, expected, "{via:?}");
        assert_eq!(ok_json(&call(&c.client, "repos_list", json!({"name": "payments-api"})).await)["total"], 2);
        assert_eq!(ok_json(&call(&c.client, "repos_get", json!({"id": 1})).await)["owner"], "platform");
        assert_eq!(ok_json(&call(&c.client, "users_get", json!({"id": 2})).await)["name"], "Marcus Chen");
        assert!(ok_json(&call(&c.client, "users_list", json!({"team": "payments"})).await)["total"].as_i64().unwrap() >= 1);
        assert_eq!(ok_json(&call(&c.client, "change_requests_list", json!({"repo_id": 1, "limit": 1})).await)["data"][0]["repo_id"], 1);
        assert_eq!(ok_json(&call(&c.client, "change_requests_get", json!({"id": 1})).await)["id"], 1);
        let cm = ok_json(
            &call(
                &c.client,
                "change_requests_comments_create",
                json!({"id": 1, "author_id": 2, "path": "README.md", "line": 1, "body": format!("typo {via:?}")}),
            )
            .await,
        );
        assert!(cm["review_id"].is_null());
        let r = ok_json(
            &call(
                &c.client,
                "change_requests_reviews_create",
                json!({"id": 1, "reviewer_id": 2, "verdict": "approve", "body": "ok", "comments": [{"path": "a.rs", "line": 2, "body": "fine"}]}),
            )
            .await,
        );
        assert_eq!((r["review"]["verdict"].as_str(), r["comments"][0]["review_id"].clone()), (Some("approve"), r["review"]["id"].clone()));
        let comments = ok_json(&call(&c.client, "change_requests_comments_list", json!({"id": 1})).await);
        assert!(comments["data"].as_array().unwrap().iter().any(|x| x["id"] == cm["id"]));
        let reviews = ok_json(&call(&c.client, "change_requests_reviews_list", json!({"id": 1})).await);
        assert!(reviews["data"].as_array().unwrap().iter().any(|x| x["id"] == r["review"]["id"]));
        // A backend 4xx is a tool error naming the problem.
        let e = err_text(&call(&c.client, "change_requests_reviews_create", json!({"id": 1, "reviewer_id": 999999, "verdict": "approve"})).await);
        assert!(e.contains("reviewer_id"), "{e}");
        c.close().await;

        let c = connect("session_server", b.url(), via).await;
        let tools = tool_names(c.client.list_all_tools().await.unwrap());
        let mut expected: Vec<&str> = reads.to_vec();
        expected.extend(["add_review_comment", "discard_review", "show_review_draft", "start_review", "submit_review"]);
        expected.sort_unstable();
        assert_eq!(tools, expected, "{via:?}");
        for tool in reads {
            let args =
                if (tool.starts_with("change_requests_") && tool != "change_requests_list") || tool.ends_with("_get") { json!({"id": 2}) } else { json!({}) };
            ok_json(&call(&c.client, tool, args).await);
        }
        let s = ok_json(&call(&c.client, "start_review", json!({"change_request_id": 2, "reviewer_id": 4})).await);
        assert_eq!((s["change_request"]["id"].as_i64(), s["reviewer_id"].as_i64()), (Some(2), Some(4)));
        assert!(s["change_request"]["title"].is_string());
        let d = s["draft"].as_str().unwrap();
        assert_eq!(ok_json(&call(&c.client, "add_review_comment", json!({"draft": d, "path": "x.rs", "line": 9, "body": "why?"})).await)["comments"], 1);
        let shown = ok_json(&call(&c.client, "show_review_draft", json!({"draft": d})).await);
        assert_eq!(shown["comments"], json!([{"path": "x.rs", "line": 9, "body": "why?"}]));
        let sub = ok_json(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "comment", "summary": "one question"})).await);
        assert_eq!((sub["review"]["change_request_id"].as_i64(), sub["review"]["reviewer_id"].as_i64()), (Some(2), Some(4)));
        assert_eq!(sub["comments"].as_array().unwrap().len(), 1);
        // After submit the draft is gone.
        let e = err_text(&call(&c.client, "show_review_draft", json!({"draft": d})).await);
        assert!(e.contains("no open review draft"), "{e}");
        // Discard: nothing is written, and the draft is gone afterwards.
        let before = sql(&b, count_reviews()).await;
        let d = start(&c.client, 2, 4).await;
        ok_json(&call(&c.client, "add_review_comment", json!({"draft": d, "path": "y.rs", "line": 1, "body": "drop me"})).await);
        let r = ok_json(&call(&c.client, "discard_review", json!({"draft": d})).await);
        assert_eq!(r["comments_dropped"], 1);
        err_text(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "approve"})).await);
        err_text(&call(&c.client, "discard_review", json!({"draft": d})).await);
        assert_eq!(sql(&b, count_reviews()).await, before);
        // An empty draft can be submitted: a verdict with no comments.
        let d = start(&c.client, 2, 4).await;
        let sub = ok_json(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "approve"})).await);
        assert_eq!((sub["review"]["verdict"].as_str(), sub["review"]["body"].as_str()), (Some("approve"), Some("")));
        assert_eq!(sub["comments"], json!([]));
        // Unknown references are refused before a draft exists.
        let e = err_text(&call(&c.client, "start_review", json!({"change_request_id": 999999, "reviewer_id": 4})).await);
        assert!(e.contains("change request 999999"), "{e}");
        let e = err_text(&call(&c.client, "start_review", json!({"change_request_id": 2, "reviewer_id": 999999})).await);
        assert!(e.contains("reviewer 999999"), "{e}");
        c.close().await;
    }
    b.shutdown().await.unwrap();
}

/// The same review through the draft (start, 4 × add, submit) and through one control call
/// leaves the same review and comment rows, apart from ids and timestamps.
#[tokio::test]
async fn draft_review_equals_the_one_control_call() {
    let b = common::backend().await;
    let state = |review_id: i64| {
        format!(
            "SELECT r.change_request_id, r.reviewer_id, r.verdict, r.body,
                    (SELECT json_agg(json_build_object('cr', c.change_request_id, 'author', c.author_id, 'path', c.path, 'line', c.line, 'body', c.body) ORDER BY c.id)
                     FROM review_comments c WHERE c.review_id = r.id) AS comments
             FROM reviews r WHERE r.id = {review_id}"
        )
    };
    for via in BOTH {
        let comments: Vec<Value> = REVIEW_COMMENTS.iter().map(|(p, l, t)| json!({"path": p, "line": l, "body": t})).collect();
        let w = connect("session_baseline", b.url(), via).await;
        let r = ok_json(
            &call(
                &w.client,
                "change_requests_reviews_create",
                json!({"id": 10, "reviewer_id": 3, "verdict": "request_changes", "body": "Needs work before merge.", "comments": comments}),
            )
            .await,
        );
        let control = r["review"]["id"].as_i64().unwrap();
        w.close().await;

        let s = connect("session_server", b.url(), via).await;
        let d = start(&s.client, 10, 3).await;
        for (i, (p, l, t)) in REVIEW_COMMENTS.iter().enumerate() {
            let n = ok_json(&call(&s.client, "add_review_comment", json!({"draft": d, "path": p, "line": l, "body": t})).await);
            assert_eq!(n["comments"], i + 1);
        }
        let r = ok_json(&call(&s.client, "submit_review", json!({"draft": d, "verdict": "request_changes", "summary": "Needs work before merge."})).await);
        let pattern = r["review"]["id"].as_i64().unwrap();
        s.close().await;

        assert_ne!(control, pattern);
        let (a, p) = (sql(&b, &state(control)).await, sql(&b, &state(pattern)).await);
        assert_eq!(a, p, "{via:?}");
        assert_eq!((a["verdict"].as_str(), a["comments"].as_array().map(Vec::len)), (Some("request_changes"), Some(4)));
        assert_eq!(a["comments"][3]["path"], "migrations/0042_refunds.sql");
    }
    b.shutdown().await.unwrap();
}

/// Asserts that draft `d` (of another session) cannot be read, changed or submitted from `c`.
async fn assert_foreign(c: &Client, d: &str) {
    for (tool, args) in [
        ("show_review_draft", json!({"draft": d})),
        ("add_review_comment", json!({"draft": d, "path": "x.rs", "line": 1, "body": "hijack"})),
        ("submit_review", json!({"draft": d, "verdict": "approve"})),
        ("discard_review", json!({"draft": d})),
    ] {
        let e = err_text(&call(c, tool, args).await);
        assert!(e.contains("no open review draft"), "{tool}: {e}");
    }
}

/// A draft opened in one session is unknown in another: two processes over stdio, two
/// clients of one HTTP server (rmcp builds one server instance per MCP session).
#[tokio::test]
async fn drafts_are_isolated_between_sessions() {
    let b = common::backend().await;
    let before = sql(&b, count_reviews()).await;

    let a = connect("session_server", b.url(), Via::Stdio).await;
    let z = connect("session_server", b.url(), Via::Stdio).await;
    let (url, server) =
        serve_http(servers::registry::find("session_server").unwrap().launcher.http_router(BackendClient::new(b.url()), Default::default())).await;
    let (ha, hz) = (http_client(&url).await, http_client(&url).await);

    for (one, other) in [(&a.client, &z.client), (&ha, &hz)] {
        let d = start(one, 10, 3).await;
        ok_json(&call(one, "add_review_comment", json!({"draft": d, "path": "a.rs", "line": 1, "body": "mine"})).await);
        // The other session also has a draft on the same change request: still separate.
        let d2 = start(other, 10, 3).await;
        assert_ne!(d, d2);
        assert_foreign(other, &d).await;
        assert_foreign(one, &d2).await;
        let shown = ok_json(&call(one, "show_review_draft", json!({"draft": d})).await);
        assert_eq!(shown["comments"], json!([{"path": "a.rs", "line": 1, "body": "mine"}]), "the foreign calls changed nothing");
        ok_json(&call(one, "discard_review", json!({"draft": d})).await);
        ok_json(&call(other, "discard_review", json!({"draft": d2})).await);
    }
    assert_eq!(sql(&b, count_reviews()).await, before, "nothing was written");

    a.close().await;
    z.close().await;
    ha.cancel().await.unwrap();
    hz.cancel().await.unwrap();
    server.abort();
    b.shutdown().await.unwrap();
}

/// Waits (bounded) until draft `d` has expired. Every successful look renews the idle timer,
/// so only look once a full TTL has passed since the last renewal.
async fn wait_for_expiry(c: &Client, d: &str, ttl: Duration, mut last_touch: Instant) -> String {
    let deadline = Instant::now() + ttl * 4 + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "draft {d} never expired");
        let wake = last_touch + ttl + Duration::from_millis(50);
        tokio::time::sleep_until(wake.into()).await;
        let r = call(c, "show_review_draft", json!({"draft": d})).await;
        if r.is_error == Some(true) {
            return err_text(&r);
        }
        last_touch = Instant::now();
    }
}

/// With a short TTL, an idle draft expires and can no longer be used; nothing is written.
#[tokio::test]
async fn idle_drafts_expire() {
    let b = common::backend().await;
    let before = sql(&b, count_reviews()).await;

    let stdio = stdio_with_ttl(b.url(), 3).await;
    let (url, server) = serve_http(http_router_with_ttl(b.url(), Duration::from_secs(2))).await;
    let http = http_client(&url).await;

    for (c, ttl) in [(&stdio, Duration::from_secs(3)), (&http, Duration::from_secs(2))] {
        let d = start(c, 10, 3).await;
        ok_json(&call(c, "add_review_comment", json!({"draft": d, "path": "a.rs", "line": 1, "body": "soon gone"})).await);
        assert_eq!(ok_json(&call(c, "show_review_draft", json!({"draft": d})).await)["comments"].as_array().unwrap().len(), 1);
        let touched = Instant::now();
        let e = wait_for_expiry(c, &d, ttl, touched).await;
        assert!(e.contains("no open review draft") && e.contains("idle"), "{e}");
        assert!(touched.elapsed() >= ttl);
        err_text(&call(c, "submit_review", json!({"draft": d, "verdict": "approve"})).await);
        err_text(&call(c, "add_review_comment", json!({"draft": d, "path": "a.rs", "line": 2, "body": "late"})).await);
    }
    assert_eq!(sql(&b, count_reviews()).await, before);

    stdio.cancel().await.unwrap();
    http.cancel().await.unwrap();
    server.abort();
    b.shutdown().await.unwrap();
}

/// A bad comment is refused when added (the draft is unchanged); a submit the backend
/// rejects keeps the draft, and a corrected retry writes it.
#[tokio::test]
async fn bad_input_is_caught_early_and_a_failed_submit_keeps_the_draft() {
    let b = common::backend().await;
    for via in BOTH {
        let c = connect("session_server", b.url(), via).await;
        let d = start(&c.client, 10, 3).await;
        ok_json(&call(&c.client, "add_review_comment", json!({"draft": d, "path": "a.rs", "line": 5, "body": "good"})).await);
        for (bad, field) in [
            (json!({"draft": d, "path": "a.rs", "line": 0, "body": "x"}), "line"),
            (json!({"draft": d, "path": "  ", "line": 1, "body": "x"}), "path"),
            (json!({"draft": d, "path": "a.rs", "line": 1, "body": ""}), "body"),
            (json!({"draft": d, "path": "a.rs", "line": 1, "body": "b".repeat(4001)}), "body"),
        ] {
            let e = err_text(&call(&c.client, "add_review_comment", bad).await);
            assert!(e.starts_with(field), "{field}: {e}");
        }
        assert_eq!(ok_json(&call(&c.client, "show_review_draft", json!({"draft": d})).await)["comments"].as_array().unwrap().len(), 1);

        let before = sql(&b, count_reviews()).await;
        // The backend refuses a summary over 4000 characters, and an unknown verdict.
        let e = err_text(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "approve", "summary": "s".repeat(4001)})).await);
        assert!(e.contains("not submitted") && e.contains("still open"), "{e}");
        let e = err_text(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "lgtm"})).await);
        assert!(e.contains("not submitted"), "{e}");
        assert_eq!(sql(&b, count_reviews()).await, before, "a rejected submit writes nothing");
        // The draft is intact and can still grow.
        assert_eq!(ok_json(&call(&c.client, "add_review_comment", json!({"draft": d, "path": "b.rs", "line": 6, "body": "also"})).await)["comments"], 2);
        let r = ok_json(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "approve", "summary": "short"})).await);
        assert_eq!(r["comments"].as_array().unwrap().len(), 2);
        let after = sql(&b, count_reviews()).await;
        assert_eq!(
            (after["reviews"].as_i64(), after["comments"].as_i64()),
            (before["reviews"].as_i64().map(|n| n + 1), before["comments"].as_i64().map(|n| n + 2))
        );
        c.close().await;
    }
    b.shutdown().await.unwrap();
}

/// A client on the stateless 2026-07-28 protocol gets a fresh server per request, so a
/// draft could never be found again: opening one is refused with a clear message.
#[tokio::test]
async fn stateless_http_requests_cannot_open_drafts() {
    use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    let b = common::backend().await;
    let router = servers::registry::find("session_server").unwrap().launcher.http_router(BackendClient::new(b.url()), Default::default());
    let (url, server) = serve_http(router).await;
    let client = ClientConfig::default()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(url),
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] },
        )
        .await
        .expect("a 2026-07-28 client starts");
    let call = |tool: &str, args: Value| client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args.as_object().cloned().unwrap()));
    let r = call("change_requests_get", json!({"id": 10})).await.unwrap();
    assert_ne!(r.is_error, Some(true), "read tools work statelessly");
    let r = call("start_review", json!({"change_request_id": 10, "reviewer_id": 3})).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    let e = common::text(&r);
    assert!(e.contains("need an MCP session"), "{e}");
    client.cancel().await.unwrap();
    server.abort();
    b.shutdown().await.unwrap();
}
