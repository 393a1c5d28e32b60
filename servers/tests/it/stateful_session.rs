//! Stateful session module: both servers over both transports against the real backend, the
//! same operations reaching the same state through either arm, one backend write per review;
//! the pattern's drafts (isolation between sessions, idle expiry) and the control's (a changed,
//! made-up or foreign draft refused); early validation and retry in both.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{BOTH, Client, Via, call, connect, err_text, ok_json, sql};
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
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
    ().serve(servers::tls::http_transport(url.to_owned())).await.expect("connect over HTTP")
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

const ARMS: [&str; 2] = ["session_server", "session_baseline"];

const REVIEW_TOOLS: [&str; 5] = ["add_review_comment", "discard_review", "show_review_draft", "start_review", "submit_review"];

/// Starts a review through either arm; returns the draft to send next (a handle from the
/// pattern, the whole draft object from the control).
async fn start_any(c: &Client, cr: i64, reviewer: i64) -> Value {
    ok_json(&call(c, "start_review", json!({"change_request_id": cr, "reviewer_id": reviewer})).await)["draft"].clone()
}

/// Adds one comment through either arm; returns the draft to send next and the count.
async fn add_any(c: &Client, d: &Value, (path, line, body): (&str, i32, &str)) -> (Value, i64) {
    let r = ok_json(&call(c, "add_review_comment", json!({"draft": d, "path": path, "line": line, "body": body})).await);
    (r["draft"].clone(), r["comments"].as_i64().unwrap())
}

/// Both arms offer the same tools (the same reads, the same five review operations); every one
/// works over both transports, through the same sequence of calls.
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
    let mut expected: Vec<&str> = reads.iter().chain(REVIEW_TOOLS.iter()).copied().collect();
    expected.sort_unstable();
    for via in BOTH {
        for arm in ARMS {
            let c = connect(arm, b.url(), via).await;
            assert_eq!(tool_names(c.client.list_all_tools().await.unwrap()), expected, "{arm} {via:?}");
            assert_eq!(ok_json(&call(&c.client, "repos_list", json!({"name": "payments-api"})).await)["total"], 2);
            assert_eq!(ok_json(&call(&c.client, "repos_get", json!({"id": 1})).await)["owner"], "platform");
            assert_eq!(ok_json(&call(&c.client, "users_get", json!({"id": 2})).await)["name"], "Marcus Chen");
            assert!(ok_json(&call(&c.client, "users_list", json!({"team": "payments"})).await)["total"].as_i64().unwrap() >= 1);
            assert_eq!(ok_json(&call(&c.client, "change_requests_list", json!({"repo_id": 1, "limit": 1})).await)["data"][0]["repo_id"], 1);
            assert_eq!(ok_json(&call(&c.client, "change_requests_get", json!({"id": 1})).await)["id"], 1);
            ok_json(&call(&c.client, "change_requests_comments_list", json!({"id": 2})).await);
            ok_json(&call(&c.client, "change_requests_reviews_list", json!({"id": 2})).await);

            let s = ok_json(&call(&c.client, "start_review", json!({"change_request_id": 2, "reviewer_id": 4})).await);
            assert_eq!((s["change_request"]["id"].as_i64(), s["reviewer_id"].as_i64()), (Some(2), Some(4)), "{arm}");
            assert!(s["change_request"]["title"].is_string());
            let (d, n) = add_any(&c.client, &s["draft"], ("x.rs", 9, "why?")).await;
            assert_eq!(n, 1);
            let shown = ok_json(&call(&c.client, "show_review_draft", json!({"draft": d})).await);
            assert_eq!(shown["comments"], json!([{"path": "x.rs", "line": 9, "body": "why?"}]), "{arm}");
            assert_eq!((shown["change_request_id"].as_i64(), shown["reviewer_id"].as_i64()), (Some(2), Some(4)));
            let sub = ok_json(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "comment", "summary": "one question"})).await);
            assert_eq!((sub["review"]["change_request_id"].as_i64(), sub["review"]["reviewer_id"].as_i64()), (Some(2), Some(4)));
            assert_eq!(sub["comments"].as_array().unwrap().len(), 1);
            // Discard: nothing is written.
            let before = sql(&b, count_reviews()).await;
            let d = start_any(&c.client, 2, 4).await;
            let (d, _) = add_any(&c.client, &d, ("y.rs", 1, "drop me")).await;
            let r = ok_json(&call(&c.client, "discard_review", json!({"draft": d})).await);
            assert_eq!(r["comments_dropped"], 1);
            assert_eq!(sql(&b, count_reviews()).await, before);
            // An empty draft can be submitted: a verdict with no comments.
            let d = start_any(&c.client, 2, 4).await;
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
    }
    b.shutdown().await.unwrap();
}

/// Where the state lives shows after a draft ends: the pattern forgets a submitted or
/// discarded draft, while the control, holding nothing, cannot tell (a resent draft would be
/// written again). Tasks that ask for one review count reviews, so that mistake fails in both.
#[tokio::test]
async fn a_finished_draft_is_gone_from_the_pattern_and_still_valid_in_the_control() {
    let b = common::backend().await;
    for via in BOTH {
        let p = connect("session_server", b.url(), via).await;
        let d = start_any(&p.client, 2, 4).await;
        ok_json(&call(&p.client, "submit_review", json!({"draft": d, "verdict": "approve"})).await);
        let e = err_text(&call(&p.client, "show_review_draft", json!({"draft": d})).await);
        assert!(e.contains("no open review draft"), "{e}");
        let d = start_any(&p.client, 2, 4).await;
        ok_json(&call(&p.client, "discard_review", json!({"draft": d})).await);
        err_text(&call(&p.client, "submit_review", json!({"draft": d, "verdict": "approve"})).await);
        err_text(&call(&p.client, "discard_review", json!({"draft": d})).await);
        p.close().await;

        let c = connect("session_baseline", b.url(), via).await;
        let d = start_any(&c.client, 2, 4).await;
        ok_json(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "approve"})).await);
        assert_eq!(ok_json(&call(&c.client, "show_review_draft", json!({"draft": d})).await)["comments"], json!([]));
        c.close().await;
    }
    b.shutdown().await.unwrap();
}

/// The same review through either arm (start, 4 × add, submit) leaves the same review and
/// comment rows, apart from ids and timestamps.
#[tokio::test]
async fn the_same_review_through_either_arm_leaves_the_same_rows() {
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
        let mut ids = Vec::new();
        for arm in ARMS {
            let c = connect(arm, b.url(), via).await;
            let mut d = start_any(&c.client, 10, 3).await;
            for (i, comment) in REVIEW_COMMENTS.into_iter().enumerate() {
                let (next, n) = add_any(&c.client, &d, comment).await;
                assert_eq!(n as usize, i + 1);
                d = next;
            }
            let r = ok_json(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "request_changes", "summary": "Needs work before merge."})).await);
            ids.push(r["review"]["id"].as_i64().unwrap());
            c.close().await;
        }
        assert_ne!(ids[0], ids[1]);
        let (p, c) = (sql(&b, &state(ids[0])).await, sql(&b, &state(ids[1])).await);
        assert_eq!(p, c, "{via:?}");
        assert_eq!((p["verdict"].as_str(), p["comments"].as_array().map(Vec::len)), (Some("request_changes"), Some(4)));
        assert_eq!(p["comments"][3]["path"], "migrations/0042_refunds.sql");
    }
    b.shutdown().await.unwrap();
}

/// A loopback HTTP proxy in front of the backend that records every request it forwards
/// (method and path); returns its URL, the log and the serving task.
async fn recording_proxy(target: &str) -> (String, Arc<Mutex<Vec<String>>>, tokio::task::JoinHandle<()>) {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let (target, seen, http) = (target.trim_end_matches('/').to_owned(), log.clone(), crate::common::http_client());
    let forward = move |req: axum::extract::Request| {
        let (target, seen, http) = (target.clone(), seen.clone(), http.clone());
        async move {
            let (parts, body) = req.into_parts();
            let path = parts.uri.path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_default();
            seen.lock().unwrap().push(format!("{} {}", parts.method, parts.uri.path()));
            let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            let mut out = http.request(parts.method, format!("{target}{path}")).body(bytes);
            if let Some(ct) = parts.headers.get("content-type") {
                out = out.header("content-type", ct);
            }
            let resp = out.send().await.unwrap();
            let status = resp.status();
            let ct = resp.headers().get("content-type").cloned();
            let mut answer = axum::response::Response::new(axum::body::Body::from(resp.bytes().await.unwrap()));
            *answer.status_mut() = status;
            if let Some(ct) = ct {
                answer.headers_mut().insert("content-type", ct);
            }
            answer
        }
    };
    let (url, task) = serve_http(axum::Router::new().fallback(forward)).await;
    (url.trim_end_matches("/mcp").to_owned(), log, task)
}

/// Through either arm, starting a draft makes the same two lookups, filling and showing it reach
/// no backend, and the submit writes the review with all its comments in exactly one request.
#[tokio::test]
async fn either_arm_writes_the_whole_review_with_one_backend_request() {
    let b = common::backend().await;
    let (proxy, log, task) = recording_proxy(b.url()).await;
    for via in BOTH {
        for arm in ARMS {
            let c = connect(arm, &proxy, via).await;
            let before = sql(&b, count_reviews()).await;
            let mut d = start_any(&c.client, 10, 3).await;
            let taken = |log: &Mutex<Vec<String>>| std::mem::take(&mut *log.lock().unwrap());
            assert_eq!(taken(&log), ["GET /change_requests/10", "GET /users/3"], "{arm} {via:?}: start looks both up");
            for comment in REVIEW_COMMENTS {
                d = add_any(&c.client, &d, comment).await.0;
            }
            ok_json(&call(&c.client, "show_review_draft", json!({"draft": d})).await);
            assert_eq!(taken(&log), Vec::<String>::new(), "{arm} {via:?}: adding and showing reach no backend");
            let r = ok_json(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "comment"})).await);
            assert_eq!(r["comments"].as_array().unwrap().len(), REVIEW_COMMENTS.len());
            assert_eq!(taken(&log), ["POST /change_requests/10/reviews"], "{arm} {via:?}");
            let after = sql(&b, count_reviews()).await;
            assert_eq!(after["reviews"].as_i64(), before["reviews"].as_i64().map(|n| n + 1));
            assert_eq!(after["comments"].as_i64(), before["comments"].as_i64().map(|n| n + REVIEW_COMMENTS.len() as i64));
            c.close().await;
        }
    }
    task.abort();
    b.shutdown().await.unwrap();
}

/// The control's draft cannot be edited, extended or made up by the agent: any change to it
/// is refused with the fix, nothing is written, and the draft as issued still works.
#[tokio::test]
async fn a_changed_or_made_up_draft_is_refused_by_the_control() {
    let b = common::backend().await;
    for via in BOTH {
        let c = connect("session_baseline", b.url(), via).await;
        let before = sql(&b, count_reviews()).await;
        let d = start_any(&c.client, 10, 3).await;
        let (d, _) = add_any(&c.client, &d, REVIEW_COMMENTS[0]).await;
        let mut forged = Vec::new();
        for (pointer, value) in [
            ("/change_request_id", json!(11)),
            ("/reviewer_id", json!(4)),
            ("/comments/0/body", json!("Something else entirely.")),
            ("/comments/0/line", json!(43)),
        ] {
            let mut f = d.clone();
            *f.pointer_mut(pointer).unwrap() = value;
            forged.push(f);
        }
        // All the review's comments at once, under the tag of the one-comment draft.
        let mut all = d.clone();
        all["comments"] = json!(REVIEW_COMMENTS.iter().map(|(p, l, t)| json!({"path": p, "line": l, "body": t})).collect::<Vec<_>>());
        forged.push(all.clone());
        // A draft written from scratch, with a tag that looks right.
        let mut scratch = all.clone();
        scratch["tag"] = json!("0123456789abcdef0123456789abcdef");
        forged.push(scratch);
        for f in &forged {
            for (tool, args) in [
                ("submit_review", json!({"draft": f, "verdict": "request_changes"})),
                ("add_review_comment", json!({"draft": f, "path": "b.rs", "line": 1, "body": "more"})),
                ("show_review_draft", json!({"draft": f})),
                ("discard_review", json!({"draft": f})),
            ] {
                let e = err_text(&call(&c.client, tool, args).await);
                assert!(e.contains("the draft's tag does not match its contents") && e.contains("pass the draft exactly as"), "{tool}: {e}");
            }
        }
        // A draft without its tag, or not a draft at all: the shape is named, with the fix.
        let mut untagged = d.clone();
        untagged.as_object_mut().unwrap().remove("tag");
        for bad in [untagged, json!({"change_request_id": 10}), json!({"handle": "x"})] {
            let e = err_text(&call(&c.client, "submit_review", json!({"draft": bad, "verdict": "approve"})).await);
            assert!(e.starts_with("draft: expected the JSON object") && e.contains("pass the draft exactly as"), "{e}");
        }
        assert_eq!(sql(&b, count_reviews()).await, before, "a refused draft writes nothing");
        // The draft as issued, re-serialised and sent as a JSON string, is still accepted.
        let shown = ok_json(&call(&c.client, "show_review_draft", json!({"draft": serde_json::to_string_pretty(&d).unwrap()})).await);
        assert_eq!(shown["comments"].as_array().unwrap().len(), 1);
        let r = ok_json(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "comment"})).await);
        assert_eq!(r["comments"].as_array().unwrap().len(), 1);
        c.close().await;
    }
    b.shutdown().await.unwrap();
}

/// Each control process signs with its own random key: a draft made by one process is refused
/// by another (stdio: one process per connection), and still accepted where it was made.
#[tokio::test]
async fn a_control_draft_from_another_process_is_refused() {
    let b = common::backend().await;
    let before = sql(&b, count_reviews()).await;
    let one = connect("session_baseline", b.url(), Via::Stdio).await;
    let two = connect("session_baseline", b.url(), Via::Stdio).await;
    let d = start_any(&one.client, 10, 3).await;
    let (d, _) = add_any(&one.client, &d, REVIEW_COMMENTS[0]).await;
    for (tool, args) in [
        ("show_review_draft", json!({"draft": d})),
        ("add_review_comment", json!({"draft": d, "path": "x.rs", "line": 1, "body": "elsewhere"})),
        ("submit_review", json!({"draft": d, "verdict": "approve"})),
        ("discard_review", json!({"draft": d})),
    ] {
        let e = err_text(&call(&two.client, tool, args).await);
        assert!(e.contains("tag does not match") && e.contains("other than the one that made it"), "{tool}: {e}");
    }
    // And the other way round.
    let d2 = start_any(&two.client, 10, 3).await;
    err_text(&call(&one.client, "show_review_draft", json!({"draft": d2})).await);
    assert_eq!(sql(&b, count_reviews()).await, before, "nothing was written");
    assert_eq!(ok_json(&call(&one.client, "submit_review", json!({"draft": d, "verdict": "approve"})).await)["comments"].as_array().unwrap().len(), 1);
    one.close().await;
    two.close().await;
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
        serve_http(servers::registry::find("session_server").unwrap().launcher().unwrap().http_router(BackendClient::new(b.url()), Default::default())).await;
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

/// With a short TTL, an idle draft stays open for most of its TTL and is gone once the TTL has
/// passed without use; nothing is written. Each look renews the idle timer, so the draft is
/// looked at once before the TTL (it must still be there: an early expiry fails here) and once
/// after it (it must be gone: a late or missing expiry fails there).
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
        // The server renewed the draft before this call returned, so its idle time is never
        // longer than the test's count from here.
        let touched = Instant::now();
        tokio::time::sleep_until((touched + ttl * 3 / 4).into()).await;
        let r = call(c, "show_review_draft", json!({"draft": d})).await;
        assert_ne!(r.is_error, Some(true), "the draft expired after {:?} idle, before its TTL of {ttl:?}: {}", touched.elapsed(), err_text(&r));
        let touched = Instant::now();
        tokio::time::sleep_until((touched + ttl + Duration::from_millis(100)).into()).await;
        let e = err_text(&call(c, "show_review_draft", json!({"draft": d})).await);
        assert!(e.contains("no open review draft") && e.contains("idle"), "{e}");
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
/// rejects keeps the draft usable, and a corrected retry writes it. The same in both arms.
#[tokio::test]
async fn bad_input_is_caught_early_and_a_failed_submit_keeps_the_draft() {
    let b = common::backend().await;
    for via in BOTH {
        for arm in ARMS {
            let c = connect(arm, b.url(), via).await;
            let d = start_any(&c.client, 10, 3).await;
            let (d, _) = add_any(&c.client, &d, ("a.rs", 5, "good")).await;
            for (bad, field) in [
                (json!({"draft": d, "path": "a.rs", "line": 0, "body": "x"}), "line"),
                (json!({"draft": d, "path": "  ", "line": 1, "body": "x"}), "path"),
                (json!({"draft": d, "path": "a.rs", "line": 1, "body": ""}), "body"),
                (json!({"draft": d, "path": "a.rs", "line": 1, "body": "b".repeat(4001)}), "body"),
            ] {
                let e = err_text(&call(&c.client, "add_review_comment", bad).await);
                assert!(e.starts_with(field), "{arm} {field}: {e}");
            }
            assert_eq!(ok_json(&call(&c.client, "show_review_draft", json!({"draft": d})).await)["comments"].as_array().unwrap().len(), 1);

            let before = sql(&b, count_reviews()).await;
            // The backend refuses a summary over 4000 characters, and an unknown verdict.
            let e = err_text(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "approve", "summary": "s".repeat(4001)})).await);
            assert!(e.contains("not submitted") && (e.contains("still open") || e.contains("unchanged")), "{arm}: {e}");
            let e = err_text(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "lgtm"})).await);
            assert!(e.contains("not submitted"), "{e}");
            assert_eq!(sql(&b, count_reviews()).await, before, "a rejected submit writes nothing");
            // The draft is intact and can still grow.
            let (d, n) = add_any(&c.client, &d, ("b.rs", 6, "also")).await;
            assert_eq!(n, 2, "{arm}");
            let r = ok_json(&call(&c.client, "submit_review", json!({"draft": d, "verdict": "approve", "summary": "short"})).await);
            assert_eq!(r["comments"].as_array().unwrap().len(), 2);
            let after = sql(&b, count_reviews()).await;
            assert_eq!(
                (after["reviews"].as_i64(), after["comments"].as_i64()),
                (before["reviews"].as_i64().map(|n| n + 1), before["comments"].as_i64().map(|n| n + 2))
            );
            c.close().await;
        }
    }
    b.shutdown().await.unwrap();
}

/// A client on the stateless 2026-07-28 protocol gets a fresh server per request, so a
/// pattern draft could never be found again: opening one is refused with a clear message.
/// The control, which keeps nothing, works there.
#[tokio::test]
async fn stateless_http_requests_cannot_open_pattern_drafts_but_can_use_the_control() {
    use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    let b = common::backend().await;
    let router = servers::registry::find("session_server").unwrap().launcher().unwrap().http_router(BackendClient::new(b.url()), Default::default());
    let (url, server) = serve_http(router).await;
    let client = ClientConfig::default()
        .serve_with_lifecycle(servers::tls::http_transport(url), ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] })
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

    // The control holds nothing, so it reviews on the same path, each request on a fresh instance.
    let router = servers::registry::find("session_baseline").unwrap().launcher().unwrap().http_router(BackendClient::new(b.url()), Default::default());
    let (url, server) = serve_http(router).await;
    let client = ClientConfig::default()
        .serve_with_lifecycle(servers::tls::http_transport(url), ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] })
        .await
        .expect("a 2026-07-28 client starts");
    let call = |tool: &str, args: Value| client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args.as_object().cloned().unwrap()));
    let ok = |r: rmcp::model::CallToolResult| common::ok_json(&r);
    let d = ok(call("start_review", json!({"change_request_id": 10, "reviewer_id": 3})).await.unwrap())["draft"].clone();
    let d = ok(call("add_review_comment", json!({"draft": d, "path": "a.rs", "line": 1, "body": "fine"})).await.unwrap())["draft"].clone();
    let r = ok(call("submit_review", json!({"draft": d, "verdict": "comment"})).await.unwrap());
    assert_eq!(r["comments"].as_array().unwrap().len(), 1);
    client.cancel().await.unwrap();
    server.abort();
    b.shutdown().await.unwrap();
}
