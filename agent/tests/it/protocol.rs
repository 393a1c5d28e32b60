//! The MCP revision the agent's client speaks: it announces the newest revision that has an
//! `initialize` handshake (never the SDK's newest, 2026-07-28, which has none), says who it is,
//! and a session's record keeps the revision the server answered.

use agent::ServerConnection;

/// A stdio MCP server that answers `initialize` with the revision it was sent, writes the
/// request's params to stderr, and lists no tools.
const ECHO_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        sys.stderr.write("initialize " + json.dumps(m["params"], sort_keys=True) + "\n"); sys.stderr.flush()
        result = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "1.0"}}
    elif m.get("method") == "tools/list":
        result = {"tools": []}
    elif "id" in m:
        result = {}
    else:
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}) + "\n"); sys.stdout.flush()
"#;

#[tokio::test]
async fn the_client_announces_the_newest_revision_with_a_handshake_and_the_record_keeps_the_answer() {
    let conn = ServerConnection::stdio(vec!["python3".into(), "-c".into(), ECHO_SERVER.into()]);
    let (client, server) = agent::mcp::connect(&conn).await.expect("the echo server answers the handshake");
    let info = agent::mcp::server_info(&client).expect("the server said who it is");
    assert_eq!(info.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(info.protocol_version.as_deref(), Some(servers::client::PROTOCOL.to_string().as_str()));
    let toolbox = agent::mcp::Toolbox::from_server(&client).await.unwrap();
    assert!(toolbox.offered.functions.is_empty());
    client.cancel().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let sent = server.stderr.text();
    assert!(sent.contains(r#""protocolVersion": "2025-11-25""#), "{sent}");
    assert!(sent.contains(r#""name": "mcp-pattern-bench""#), "the client names itself: {sent}");
    assert!(!sent.contains("2026-07-28"), "{sent}");
}
