//! Every registered server driven by clients no one in this project wrote — the official MCP
//! Python SDK and the MCP Inspector CLI — over stdio and streamable HTTP; and the HTTP
//! transport's answers to foreign origins and hosts and to session termination, as the MCP
//! transport spec requires.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use servers::launch::HttpOptions;

/// Runs `cmd` to completion within `limit`, returning (success, stdout, stderr).
pub(crate) fn run_bounded(mut cmd: Command, stdin: Option<&str>, limit: Duration) -> (bool, String, String) {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!("{cmd:?} ran past {limit:?}:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_sdk_drives_every_server_over_stdio_and_http() {
    let b = common::backend().await;
    let mut plan = Vec::new();
    let mut http_tasks = Vec::new();
    for entry in servers::registry::servers() {
        let (url, task) = servers::launch::serve_http_in_process(entry, b.url()).await.unwrap();
        http_tasks.push(task);
        let args = servers::launch::stdio_args(entry.name, b.url());
        plan.push(json!({ "name": entry.name, "stdio": { "command": env!("CARGO_BIN_EXE_mcp-bench-server"), "args": args }, "http": url }));
    }
    let plan = json!({ "servers": plan }).to_string();
    let mut cmd = Command::new(common::tools::python());
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_sdk_client.py"));
    let started = Instant::now();
    let (ok, stdout, stderr) = tokio::task::spawn_blocking(move || run_bounded(cmd, Some(&plan), Duration::from_secs(240))).await.unwrap();
    assert!(ok, "the Python SDK client failed:\n{stderr}\n{stdout}");
    let sessions: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let expected = servers::registry::servers().count() * 2;
    assert_eq!(sessions.len(), expected, "one line per server and transport:\n{stdout}");
    for s in &sessions {
        // The server told the SDK its own name, and something was called or read through it.
        assert_eq!(s["server_name"], s["server"], "{s}");
        assert!(s["calls"].as_u64().unwrap() + s["resources_read"].as_u64().unwrap() > 0, "{s}");
    }
    let calls: u64 = sessions.iter().map(|s| s["calls"].as_u64().unwrap()).sum();
    eprintln!("Python SDK: {} sessions, {calls} tool calls, in {:.1} s", sessions.len(), started.elapsed().as_secs_f64());
    for t in http_tasks {
        t.abort();
    }
    b.shutdown().await.unwrap();
}

/// Serves `name` over HTTP with `options` on a free loopback port; returns its `/mcp` URL.
async fn serve_with(name: &str, options: HttpOptions) -> (String, tokio::task::JoinHandle<()>) {
    let entry = servers::registry::find(name).unwrap();
    let router = entry.launcher().unwrap().http_router(servers::BackendClient::new(servers::manifest::NO_BACKEND), options);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    (url, tokio::spawn(async move { axum::serve(listener, router).await.unwrap() }))
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}})
}

/// POSTs an initialize request with `headers`; returns the status, the session id and, for an
/// error, its JSON body.
async fn post_initialize(url: &str, headers: &[(&str, &str)]) -> (u16, Option<String>, Value) {
    let mut req = common::http_client().post(url).header("accept", "application/json, text/event-stream").json(&initialize());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let session = resp.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
    let body = if status >= 400 {
        let ctype = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        let text = resp.text().await.unwrap();
        assert!(ctype.starts_with("application/json"), "{status} answered in {ctype:?}: {text}");
        serde_json::from_str(&text).unwrap()
    } else {
        Value::Null
    };
    (status, session, body)
}

#[tokio::test]
async fn http_refuses_foreign_origins_and_hosts_and_ends_sessions_as_the_spec_and_sdks_expect() {
    let options = HttpOptions { allowed_origins: vec!["https://app.example:443".into()], ..HttpOptions::default() };
    let (url, server) = serve_with("wrapper", options).await;
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap().to_owned();
    let own = format!("http://localhost:{port}");
    for (origin, status) in [
        (None, 200),
        (Some(own.as_str()), 200),
        (Some("http://127.0.0.1:5173"), 200),
        (Some("http://[::1]:3000"), 200),
        (Some("https://app.example"), 200),
        (Some("http://evil.example"), 403),
        (Some("https://app.example.evil.example"), 403),
        (Some("http://app.example"), 403),
        (Some("null"), 403),
    ] {
        let headers: Vec<(&str, &str)> = origin.map(|o| ("origin", o)).into_iter().collect();
        let (s, session, body) = post_initialize(&url, &headers).await;
        assert_eq!(s, status, "Origin {origin:?}: {body}");
        if status == 200 {
            assert!(session.is_some(), "Origin {origin:?}: no session id");
        } else {
            // A JSON-RPC error with no id, saying what to do.
            assert_eq!((body["jsonrpc"].as_str(), &body["id"]), (Some("2.0"), &Value::Null), "{body}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains("Origin") && message.contains("--allowed-origin"), "{message}");
        }
    }
    // DNS rebinding: a foreign name resolving to this machine.
    let (s, _, body) = post_initialize(&url, &[("host", "evil.example")]).await;
    assert_eq!(s, 403, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("Host"), "{body}");

    // Session termination: 204 No Content (the Python SDK accepts 200 or 204 and logs
    // "Session termination failed: 202" otherwise); afterwards the session is gone.
    let (_, session, _) = post_initialize(&url, &[]).await;
    let session = session.unwrap();
    let client = common::http_client();
    let resp = client.delete(&url).header("mcp-session-id", &session).header("mcp-protocol-version", "2025-06-18").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 204);
    assert_eq!(resp.text().await.unwrap(), "");
    let resp = client
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    let body: Value = resp.json().await.unwrap();
    assert!((400..500).contains(&status) && body["error"]["message"].is_string(), "a closed session answered {status} {body}");
    server.abort();
}

#[test]
fn mcp_bench_server_takes_allowed_origins_from_its_flags_and_the_environment() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-bench-server"))
        .args(["wrapper", "--transport", "http", "--port", "0", "--backend-url", servers::manifest::NO_BACKEND])
        .args(["--allowed-origin", "https://flag.example:443"])
        .env(servers::launch::ORIGINS_ENV, "https://env.example:8443, https://other.example:*")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{line:?}");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for (origin, status) in [
        ("https://flag.example", 200),
        ("https://env.example:8443", 200),
        ("https://other.example:1234", 200),
        ("https://env.example", 403),
        ("http://evil.example", 403),
    ] {
        let (s, _, body) = runtime.block_on(post_initialize(&url, &[("origin", origin)]));
        assert_eq!(s, status, "Origin {origin}: {body}");
    }
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    assert!(child.wait().unwrap().success(), "the server did not stop cleanly on SIGTERM");
    // Logs on a redirected stderr are plain text.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(!format!("{line}{rest}").contains('\u{1b}'), "colour codes in a redirected log: {rest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_cli_sets_an_optional_numeric_parameter_over_stdio_and_http() {
    let b = common::backend().await;
    let entry = servers::registry::find("wrapper").unwrap();
    let (url, task) = servers::launch::serve_http_in_process(entry, b.url()).await.unwrap();
    let inspector = common::tools::inspector();
    let call = ["--method", "tools/call", "--tool-name", "tickets_list", "--tool-arg", "limit=3"];
    let mut stdio = Command::new(&inspector);
    stdio.arg("--cli").arg(env!("CARGO_BIN_EXE_mcp-bench-server")).args(servers::launch::stdio_args("wrapper", b.url())).args(call);
    let mut http = Command::new(&inspector);
    http.args(["--cli", &url, "--transport", "http"]).args(call);
    for (transport, cmd) in [("stdio", stdio), ("http", http)] {
        let started = Instant::now();
        let (ok, stdout, stderr) = tokio::task::spawn_blocking(move || run_bounded(cmd, None, Duration::from_secs(120))).await.unwrap();
        assert!(ok, "Inspector CLI over {transport} failed:\n{stdout}\n{stderr}");
        let result: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        assert_ne!(result["isError"], true, "over {transport}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{result}"));
        let page: Value = serde_json::from_str(text).unwrap();
        // `limit=3` arrived as the number 3: the schema's `limit` is a plain integer.
        assert_eq!((page["limit"].as_i64(), page["data"].as_array().map(Vec::len)), (Some(3), Some(3)), "over {transport}: {page}");
        eprintln!("Inspector CLI over {transport}: {:.1} s", started.elapsed().as_secs_f64());
    }
    task.abort();
    b.shutdown().await.unwrap();
}

/// A server reaches the bench's plain-HTTP backend on a machine with no CA certificates (a slim
/// container): its backend client never reads the certificate store. Building a client that
/// did failed there and took the server down at start. An `https://` backend on such a machine
/// gets a tool error that names the missing store, and the server stays up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_need_no_ca_certificates_for_a_plain_http_backend() {
    let b = common::backend().await;
    let empty = tempfile::tempdir().unwrap();
    let no_store = |backend_url: &str| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-bench-server"));
        cmd.args(servers::launch::stdio_args("proxy_aggregator", backend_url))
            .env("SSL_CERT_FILE", empty.path().join("none.pem"))
            .env("SSL_CERT_DIR", empty.path())
            .stderr(Stdio::null());
        cmd
    };
    use rmcp::ServiceExt;
    let plain = ().serve(rmcp::transport::TokioChildProcess::new(no_store(b.url())).unwrap()).await.expect("a server starts with no CA store");
    // Every one of the aggregator's backend clients (it holds one per backend) answers.
    for (backend, operation) in [("repos", "get_repo"), ("runbooks", "get_runbook"), ("deploys", "get_deploy")] {
        let got = common::call(&plain, "call_backend", json!({ "backend": backend, "operation": operation, "arguments": { "id": 1 } })).await;
        assert_eq!(common::ok_json(&got)["id"], 1, "{backend} through the plain-HTTP backend: {}", common::text(&got));
    }
    plain.cancel().await.unwrap();

    let tls = ().serve(rmcp::transport::TokioChildProcess::new(no_store("https://127.0.0.1:9")).unwrap()).await.expect("a server starts with no CA store");
    let refused = common::call(&tls, "call_backend", json!({ "backend": "repos", "operation": "get_repo", "arguments": { "id": 1 } })).await;
    let text = common::err_text(&refused);
    assert!(text.contains("no HTTPS client could be built") && text.contains("CA certificate"), "{text}");
    tls.cancel().await.unwrap();
    b.shutdown().await.unwrap();
}

/// The JSON-RPC errors the spec asks for where the SDK gives other ones: a message that is not
/// JSON is a parse error (-32700, id null) over stdio (where it went unanswered) and HTTP (where it
/// was an invalid request); `tools/call` arguments that are not an object are invalid params
/// (-32602, the request's id), not "method not found". The session goes on after either.
#[tokio::test]
async fn malformed_messages_get_the_json_rpc_errors_the_spec_names_over_stdio_and_http() {
    let lines = [
        initialize().to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        "not json at all".to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"customers_get","arguments":"oops"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#.to_owned(),
    ];
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-bench-server"));
    cmd.args(["wrapper", "--backend-url", servers::manifest::NO_BACKEND]).env_remove("RUST_LOG");
    let (ok, out, err) = run_bounded(cmd, Some(&format!("{}\n", lines.join("\n"))), Duration::from_secs(30));
    assert!(ok, "{err}");
    let answers: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let by_id = |id: Value| answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("no answer with id {id}: {out}")).clone();
    assert_eq!(by_id(Value::Null)["error"]["code"], -32700, "{out}");
    assert_eq!(by_id(json!(2))["error"]["code"], -32602, "{out}");
    assert!(by_id(json!(3))["result"].is_object(), "the session goes on: {out}");
    assert_eq!(by_id(json!(1))["result"]["serverInfo"]["name"], "wrapper");

    let (url, server) = serve_with("wrapper", HttpOptions::default()).await;
    let client = common::http_client();
    let post = |body: String, session: Option<String>| {
        let mut r = client.post(&url).header("accept", "application/json, text/event-stream").header("content-type", "application/json").body(body);
        if let Some(s) = session {
            r = r.header("mcp-session-id", s).header("mcp-protocol-version", "2025-06-18");
        }
        r.send()
    };
    let resp = post("not json at all".into(), None).await.unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!((body["error"]["code"].as_i64(), &body["id"]), (Some(-32700), &Value::Null), "{body}");
    let (_, session, _) = post_initialize(&url, &[]).await;
    let resp = post(lines[3].clone(), session).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!((body["error"]["code"].as_i64(), &body["id"]), (Some(-32602), &json!(2)), "{body}");
    server.abort();
}
