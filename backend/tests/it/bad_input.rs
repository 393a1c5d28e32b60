//! Client mistakes of every kind get a 4xx with a JSON body naming the problem, never a 500,
//! and leave the data exactly as it was.

use crate::common;

use crate::common::TestBackend;
use reqwest::Method;
use serde_json::{Value, json};

struct Case {
    method: Method,
    path: &'static str,
    body: Option<Value>,
    status: u16,
    field: Option<&'static str>,
}

fn case(method: Method, path: &'static str, body: Option<Value>, status: u16, field: Option<&'static str>) -> Case {
    Case { method, path, body, status, field }
}

#[tokio::test]
async fn bad_input_is_a_named_4xx_and_changes_nothing() {
    let b = TestBackend::start().await;
    let before = b.dump_hash().await;
    let long = "x".repeat(201);
    let huge = "y".repeat(300 * 1024);
    let cases = vec![
        // Wrong types.
        case(Method::POST, "/tickets", Some(json!({"title": 5})), 422, Some("title")),
        case(Method::POST, "/tickets", Some(json!({"title": "t", "customer_id": "one"})), 422, Some("customer_id")),
        case(Method::PATCH, "/users/1", Some(json!({"on_call": "yes"})), 422, Some("on_call")),
        case(Method::GET, "/tickets?limit=ten", None, 400, Some("limit")),
        case(Method::GET, "/users?on_call=maybe", None, 400, Some("on_call")),
        case(Method::GET, "/tickets/abc", None, 400, Some("id")),
        // Missing fields.
        case(Method::POST, "/tickets", Some(json!({"description": "no title"})), 422, Some("title")),
        case(Method::POST, "/notifications", Some(json!({"user_id": 1})), 422, Some("message")),
        case(Method::POST, "/change_requests/1/reviews", Some(json!({"reviewer_id": 1})), 422, Some("verdict")),
        // Unknown enum values.
        case(Method::POST, "/tickets", Some(json!({"title": "t", "priority": "apocalyptic"})), 422, Some("priority")),
        case(Method::GET, "/tickets?status=pending", None, 400, Some("status")),
        case(Method::POST, "/deploys", Some(json!({"service_id": 1, "version": "1", "environment": "moon"})), 422, Some("environment")),
        // Unknown ids, as a path and as a reference.
        case(Method::GET, "/tickets/999999", None, 404, None),
        case(Method::PATCH, "/tickets/999999", Some(json!({"status": "closed"})), 404, None),
        case(Method::GET, "/change_requests/999999/comments", None, 404, None),
        case(Method::POST, "/tickets", Some(json!({"title": "t", "customer_id": 999999})), 422, Some("customer_id")),
        case(Method::PATCH, "/tickets/1", Some(json!({"assignee_id": 999999})), 422, Some("assignee_id")),
        case(Method::POST, "/notifications", Some(json!({"user_id": 999999, "message": "hi"})), 422, Some("user_id")),
        case(Method::POST, "/deploys", Some(json!({"service_id": 999999, "version": "1.0", "environment": "staging"})), 422, Some("service_id")),
        // A review whose last comment is bad: nothing of it may be written.
        case(
            Method::POST,
            "/change_requests/1/reviews",
            Some(
                json!({"reviewer_id": 1, "verdict": "approve", "comments": [{"path": "a", "line": 1, "body": "ok"}, {"path": "b", "line": 0, "body": "bad"}]}),
            ),
            422,
            Some("comments[1].line"),
        ),
        case(
            Method::POST,
            "/change_requests/1/reviews",
            Some(json!({"reviewer_id": 999999, "verdict": "approve", "comments": [{"path": "a", "line": 1, "body": "ok"}]})),
            422,
            Some("reviewer_id"),
        ),
        // Oversize and blank strings.
        case(Method::POST, "/tickets", Some(json!({"title": long})), 422, Some("title")),
        case(Method::POST, "/tickets", Some(json!({"title": "   "})), 422, Some("title")),
        case(Method::POST, "/tickets", Some(json!({"title": huge})), 413, None),
        case(Method::GET, "/tickets?limit=201", None, 400, Some("limit")),
        case(Method::GET, "/tickets?offset=-1", None, 400, Some("offset")),
        // Unknown fields and query parameters.
        case(Method::POST, "/tickets", Some(json!({"title": "t", "colour": "red"})), 422, Some("colour")),
        case(Method::GET, "/tickets?colour=red", None, 400, Some("colour")),
        case(Method::PATCH, "/tickets/1", Some(json!({})), 400, None),
        // Invalid transitions.
        case(Method::PATCH, "/deploys/1", Some(json!({"status": "succeeded"})), 422, Some("status")),
    ];
    for c in &cases {
        let mut req = b.client.request(c.method.clone(), b.url(c.path));
        if let Some(body) = &c.body {
            req = req.json(body);
        }
        let (status, body) = common::decode(req.send().await.unwrap()).await;
        let what = format!("{} {} {:?}", c.method, c.path, c.body.as_ref().map(|b| b.to_string().chars().take(120).collect::<String>()));
        assert_eq!(status, c.status, "{what}: {body}");
        assert!(body["error"].is_string() && body["message"].is_string(), "{what}: {body}");
        assert_eq!(body["field"].as_str(), c.field, "{what}: {body}");
    }

    // Not JSON at all, wrong content type, malformed JSON.
    for (ctype, payload, status) in
        [("text/plain", "title=x", 415), ("application/json", "{\"title\": ", 400), ("application/json", "{\"title\": \"x\"} {}", 400)]
    {
        let resp = b.client.post(b.url("/tickets")).header("content-type", ctype).body(payload).send().await.unwrap();
        let (s, body) = common::decode(resp).await;
        assert_eq!(s, status, "{ctype} {payload}: {body}");
    }
    let resp = b.client.patch(b.url("/tickets/1")).header("if-match", "not-a-number").json(&json!({"status": "closed"})).send().await.unwrap();
    let (s, body) = common::decode(resp).await;
    assert_eq!((s, body["field"].as_str()), (400, Some("If-Match")));

    // Text Postgres cannot store — a NUL, bytes that are not UTF-8, a lone surrogate — is a 400
    // naming the field, from every text filter and every JSON body, never a 500.
    let text_filters = [
        ("/customers", "name"),
        ("/customers", "q"),
        ("/customers", "tier"),
        ("/customers", "region"),
        ("/users", "team"),
        ("/users", "q"),
        ("/tickets", "q"),
        ("/repos", "owner"),
        ("/repos", "name"),
        ("/repos", "q"),
        ("/services", "name"),
        ("/services", "team"),
        ("/change_requests", "status"),
        ("/runbooks", "service"),
        ("/runbooks", "slug"),
        ("/runbooks", "q"),
        ("/deploys", "status"),
    ];
    for (path, param) in text_filters {
        for bad in ["a%00b", "%ED%A0%80", "%FF"] {
            let (s, body) = b.get(&format!("{path}?{param}={bad}")).await;
            assert_eq!((s, body["field"].as_str()), (400, Some(param)), "{path}?{param}={bad}: {body}");
        }
    }
    for (path, body, field) in [
        ("/tickets", r#"{"title": "a\u0000b"}"#, "title"),
        ("/tickets", r#"{"title": "\ud800"}"#, "title"),
        ("/notifications", r#"{"user_id": 1, "message": "\u0000"}"#, "message"),
        (
            "/change_requests/1/reviews",
            r#"{"reviewer_id": 1, "verdict": "approve", "comments": [{"path": "a", "line": 1, "body": "x\u0000"}]}"#,
            "comments[0].body",
        ),
    ] {
        let resp = b.client.post(b.url(path)).header("content-type", "application/json").body(body).send().await.unwrap();
        let (s, answer) = common::decode(resp).await;
        assert_eq!((s, answer["field"].as_str()), (400, Some(field)), "{path} {body}: {answer}");
    }

    // SQL metacharacters are data, not SQL.
    let evil = "'; DROP TABLE tickets; --";
    let (s, page) = b.get(&format!("/tickets?q={}", urlencode(evil))).await;
    assert_eq!((s, page["total"].as_i64()), (200, Some(0)));
    let (s, page) = b.get(&format!("/customers?name={}", urlencode("x' OR '1'='1"))).await;
    assert_eq!((s, page["total"].as_i64()), (200, Some(0)));
    let (s, page) = b.get(&format!("/tickets?q={}", urlencode("%"))).await;
    assert_eq!((s, page["total"].as_i64()), (200, Some(0)), "% is not a wildcard");

    assert_eq!(b.dump_hash().await, before, "a rejected request changed the data");

    // And the metacharacters survive a round trip when they are legitimately stored.
    let (s, t) = b.post("/tickets", json!({"title": evil, "description": "Robert'); DROP TABLE students;--"})).await;
    assert_eq!(s, 201);
    let (_, found) = b.get(&format!("/tickets?q={}", urlencode("drop table"))).await;
    assert_eq!(found["data"][0]["id"], t["id"]);
    b.shutdown().await;
}

fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// One request on a fresh connection, read until the server closes it or 5 s pass.
async fn raw_exchange(base: &str, request: Vec<u8>) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(base.trim_start_matches("http://")).await.unwrap();
    // The server may answer (and close) before it has read all of an oversized head.
    let _ = stream.write_all(&request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no response head: {text:?}"));
    let status = head[9..12].parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_owned())
}

#[tokio::test]
async fn requests_hyper_refuses_before_routing_get_json_errors_too() {
    let b = TestBackend::start().await;
    let long_uri = format!("GET /tickets?q={} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70 * 1024)).into_bytes();
    let many_headers = format!("GET /tickets HTTP/1.1\r\nHost: x\r\n{}\r\n", (0..120).map(|i| format!("x-h{i}: 1\r\n")).collect::<String>()).into_bytes();
    let huge_header = format!("GET /tickets HTTP/1.1\r\nHost: x\r\nx-big: {}\r\n\r\n", "a".repeat(500 * 1024)).into_bytes();
    let malformed = b"GE\x01T /tickets HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    for (what, request, status, kind) in [
        ("a 70 KiB URI", long_uri, 414, "uri_too_long"),
        ("120 headers", many_headers, 431, "headers_too_large"),
        ("a 500 KiB header", huge_header, 431, "headers_too_large"),
        ("a malformed request line", malformed, 400, "bad_request"),
    ] {
        let (s, head, body) = raw_exchange(&b.base, request).await;
        assert_eq!(s, status, "{what}: {head}");
        assert!(head.contains("content-type: application/json"), "{what}: {head}");
        let json: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{what}: body is not JSON ({e}): {body:?}"));
        assert_eq!(json["error"], kind, "{what}: {json}");
        assert!(json["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {json}");
    }
    // The wrapper leaves the application's answers as they were, on one kept-alive connection.
    let client = common::http_client();
    for _ in 0..3 {
        let (s, page) = common::decode(client.get(b.url("/tickets?limit=200")).send().await.unwrap()).await;
        assert_eq!((s, page["data"].as_array().map(Vec::len)), (200, Some(200)));
        let (s, body) = common::decode(client.get(b.url("/tickets/999999")).send().await.unwrap()).await;
        assert_eq!((s, body["error"].as_str()), (404, Some("not_found")));
    }
    b.shutdown().await;
}

/// A review goes only to an open change request: a merged or closed one answers 409, naming its
/// status, and nothing is written; an open one takes it.
#[tokio::test]
async fn a_review_of_a_merged_or_closed_change_request_is_a_conflict() {
    let b = TestBackend::start().await;
    let review = json!({"reviewer_id": 1, "verdict": "approve", "body": "looks good"});
    for status in ["merged", "closed"] {
        let (s, page) = b.get(&format!("/change_requests?status={status}&limit=1")).await;
        assert_eq!(s, 200, "{page}");
        let id = page["data"][0]["id"].as_i64().unwrap_or_else(|| panic!("the seeded world has a {status} change request: {page}"));
        let before = b.dump_hash().await;
        let (s, body) = b.post(&format!("/change_requests/{id}/reviews"), review.clone()).await;
        assert_eq!(s, 409, "{body}");
        let error = body.to_string();
        assert!(error.contains(&format!("change request {id} is {status}; only an open change request takes reviews")), "{body}");
        assert_eq!(b.dump_hash().await, before, "a refused review changed the data");
    }
    let (_, page) = b.get("/change_requests?status=open&limit=1").await;
    let open = page["data"][0]["id"].as_i64().unwrap();
    let (s, body) = b.post(&format!("/change_requests/{open}/reviews"), review).await;
    assert_eq!(s, 201, "{body}");
    b.shutdown().await;
}
