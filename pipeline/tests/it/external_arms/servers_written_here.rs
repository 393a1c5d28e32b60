//! Servers written by the tests themselves, for what no example arm does: a tool named like a
//! word of a task, an empty resources capability, a broken stdio transport, a server that reads
//! the API when it starts.

use super::*;

/// A run from flags holds every arm to G5 as `check` holds a spec's: an external arm generated
/// from an API offers a tool named `reset`, a task's text says "reset", and the run refuses
/// before any session, naming the gate, the task, the term and the arm, with nothing written.
#[test]
fn a_flag_run_refuses_a_task_whose_text_names_a_tool_of_an_external_arm() {
    installed("domain_adapter_py", ".venv/bin/python");
    let tmp = tempfile::tempdir().unwrap();
    let py = std::fs::canonicalize(arms_root().join("domain_adapter_py")).unwrap();
    let server = "from mcp.server.mcpserver import MCPServer\n\napp = MCPServer(\"generated\")\n\n\n@app.tool()\ndef reset() -> str:\n    \"\"\"Restore the freshly seeded state.\"\"\"\n    return \"ok\"\n\n\napp.run()\n";
    let command = format!("[\"{}/.venv/bin/python\", \"server.py\"]", py.display());
    let dir = arm_dir(tmp.path(), "generated", &arm_toml("generated", "domain_adapter", "stdio", &command));
    std::fs::write(dir.join("server.py"), server).unwrap();
    let task = "victor_dubois_password_reset_to_low";
    std::fs::write(dir.join("oracle").join(format!("{task}.toml")), "answer = \"Done.\"\n\n[[steps]]\ntool = \"reset\"\nargs = {}\n").unwrap();
    refused(
        tmp.path(),
        &["--mcp", "generated,domain_wrapper", "--models", "oracle", "--tasks", task],
        &["INVALID — gate failures:", &format!("G5 neutrality: task domain_adapter/{task}"), "\"reset\" (tool of generated)", "no session was started"],
    );
}

/// A server that declares the resources capability with nothing behind it (generated servers
/// always declare it) is offered no `list_resources`/`read_resource`: they would cost every turn
/// their definitions for nothing. `servers --json` says so, and so does a session's record.
#[test]
fn an_empty_resources_capability_is_offered_no_resource_functions() {
    installed("domain_adapter_py", ".venv/bin/python");
    let tmp = tempfile::tempdir().unwrap();
    let py = std::fs::canonicalize(arms_root().join("domain_adapter_py")).unwrap();
    let server = "from mcp.server.mcpserver import MCPServer\n\napp = MCPServer(\"generated\")\n\n\n@app.tool()\ndef noop() -> str:\n    \"\"\"Does nothing.\"\"\"\n    return \"ok\"\n\n\napp.run()\n";
    let command = format!("[\"{}/.venv/bin/python\", \"server.py\"]", py.display());
    let dir = arm_dir(tmp.path(), "generated", &arm_toml("generated", "domain_adapter", "stdio", &command));
    std::fs::write(dir.join("server.py"), server).unwrap();
    let task = "victor_dubois_password_reset_to_low";
    std::fs::write(dir.join("oracle").join(format!("{task}.toml")), "answer = \"Done.\"\n\n[[steps]]\ntool = \"noop\"\nargs = {}\n").unwrap();

    let out = pipeline().args(["servers", "--json", "--arms-dir"]).arg(tmp.path()).output().unwrap();
    let row = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|r| r["name"] == "generated").unwrap();
    assert_eq!((row["tools"].as_u64(), row["resource_templates"].as_u64(), row["resources"].as_bool()), (Some(1), Some(0), Some(false)), "{row}");

    let results = tmp.path().join("results");
    let out = pipeline()
        .arg("--arms-dir")
        .arg(tmp.path())
        .args(["--mcp", "generated", "--models", "oracle", "--tasks", task, "--exp-name", "empty", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    let recs = records(&results.join("empty"));
    assert_eq!(recs.len(), 1, "{}", text(&out));
    let offered = &recs[0]["offered"];
    assert_eq!((offered["functions"].clone(), offered["resource_functions"].as_bool()), (serde_json::json!(["noop"]), Some(false)), "{offered}");
}

/// Two servers that break the stdio transport mid-session: one answers with a result over the
/// 16 MiB a stdio message may be, one prints a debug line to stdout before it answers. Each
/// session is the arm's transport failure at once — not a 120 s wait recorded as a timeout, not a
/// line skipped in silence — and its record says what the server wrote, with the size.
#[test]
fn a_server_that_breaks_the_stdio_transport_fails_its_session_at_once_and_says_how() {
    installed("domain_adapter_py", ".venv/bin/python");
    let tmp = tempfile::tempdir().unwrap();
    let py = std::fs::canonicalize(arms_root().join("domain_adapter_py")).unwrap();
    // A hand-written stdio server (the SDK guards its stdout: print() and even descriptor 1 go to
    // stderr there): one tool answers with 17 MB, the other writes a debug line before answering.
    let server = r#"import json, sys
TOOLS = [{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in ("fetch_everything", "chatty_lookup")]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, result = msg["method"], {}
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "broken", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        if msg["params"]["name"] == "fetch_everything":
            result = {"content": [{"type": "text", "text": "x" * 17_000_000}]}
        else:
            sys.stdout.write("DEBUG: looking it up\n")
            result = {"content": [{"type": "text", "text": "found"}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"#;
    let command = format!("[\"{}/.venv/bin/python\", \"../server.py\"]", py.display());
    std::fs::write(tmp.path().join("server.py"), server).unwrap();
    let task = "victor_dubois_password_reset_to_low";
    for (name, tool) in [("huge", "fetch_everything"), ("chatty", "chatty_lookup")] {
        let dir = arm_dir(tmp.path(), name, &arm_toml(name, "domain_adapter", "stdio", &command));
        std::fs::write(dir.join("oracle").join(format!("{task}.toml")), format!("answer = \"Done.\"\n\n[[steps]]\ntool = \"{tool}\"\nargs = {{}}\n")).unwrap();
    }
    let results = tmp.path().join("results");
    let started = std::time::Instant::now();
    let out = pipeline()
        .arg("--arms-dir")
        .arg(tmp.path())
        .args(["--mcp", "huge,chatty", "--models", "oracle", "--tasks", task, "--exp-name", "broken", "--max-consecutive-invalid", "10", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "no session waited out its call timeout: {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(3), "completed, with invalid sessions: {}", text(&out));
    let recs = records(&results.join("broken"));
    assert_eq!(recs.len(), 2, "{}", text(&out));
    for r in &recs {
        assert_eq!((r["validity"]["class"].as_str(), r["validity"]["reason"].as_str()), (Some("invalid"), Some("mcp_transport")), "{r}");
        let detail = r["validity"]["detail"].as_str().unwrap();
        let says = if r["server"] == "huge" {
            "the server wrote a message of 17000".to_owned()
        } else {
            "not a JSON-RPC message (\"DEBUG: looking it up\")".to_owned()
        };
        assert!(detail.contains(&says), "{}: {detail}", r["server"]);
    }
}

/// A server built from the API when it starts (as generated servers are) reads the backend's
/// OpenAPI document before it can list a tool: `pipeline servers` and a run list it against a
/// freshly seeded world, as its sessions see it, never against a closed port.
#[test]
fn a_server_that_reads_the_api_at_start_is_listed_and_runs() {
    installed("domain_adapter_py", ".venv/bin/python");
    let tmp = tempfile::tempdir().unwrap();
    let py = std::fs::canonicalize(arms_root().join("domain_adapter_py")).unwrap();
    let server = r#"import json, os, sys, urllib.request
from mcp.server.mcpserver import MCPServer

try:
    doc = json.load(urllib.request.urlopen(os.environ["BACKEND_URL"] + "/openapi.json", timeout=5))
except Exception as e:
    sys.exit(f"cannot read the API at start: {e}")
app = MCPServer("generated")


@app.tool(name=f"customers_of_{len(doc['paths'])}_paths")
def customers() -> str:
    """The customers."""
    return urllib.request.urlopen(os.environ["BACKEND_URL"] + "/customers?limit=1", timeout=5).read().decode()


app.run()
"#;
    let command = format!("[\"{}/.venv/bin/python\", \"server.py\"]", py.display());
    let dir = arm_dir(tmp.path(), "generated", &arm_toml("generated", "domain_adapter", "stdio", &command));
    std::fs::write(dir.join("server.py"), server).unwrap();
    let out = pipeline().args(["servers", "--json", "--arms-dir"]).arg(tmp.path()).output().unwrap();
    let row = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|r| r["name"] == "generated").unwrap();
    assert_eq!((row["tools"].as_u64(), row.get("error")), (Some(1), None), "listed against a real world: {row}");
    let tool = format!("customers_of_{}_paths", backend::openapi_document()["paths"].as_object().unwrap().len());
    let task = "victor_dubois_password_reset_to_low";
    std::fs::write(dir.join("oracle").join(format!("{task}.toml")), format!("answer = \"Done.\"\n\n[[steps]]\ntool = \"{tool}\"\nargs = {{}}\n")).unwrap();
    let results = tmp.path().join("results");
    let out = pipeline()
        .arg("--arms-dir")
        .arg(tmp.path())
        .args(["--mcp", "generated", "--models", "oracle", "--tasks", task, "--exp-name", "gen", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    let recs = records(&results.join("gen"));
    assert_eq!(recs.len(), 1, "{}", text(&out));
    assert_eq!(recs[0]["validity"]["class"], "valid", "{}", recs[0]);
    assert_eq!(recs[0]["tool_calls"][0]["is_error"], false, "the call reached the session's world: {}", recs[0]);
}

/// An external arm opts in to tool-poisoning attacks with `relays = true`: it is given the
/// poisoned description in `MCPBENCH_POISON` and shows it where it shows that operation, and
/// `servers --attack` lists it so. An arm that does not opt in is given nothing, and a run that
/// would poison it is refused before anything is written, naming the field.
#[test]
fn an_external_arm_that_relays_is_given_a_poisoned_description_and_one_that_does_not_is_refused() {
    installed("domain_adapter_py", ".venv/bin/python");
    let tmp = tempfile::tempdir().unwrap();
    let py = std::fs::canonicalize(arms_root().join("domain_adapter_py")).unwrap();
    let server = "import json, os\nfrom mcp.server.mcpserver import MCPServer\n\napp = MCPServer(\"relaying\")\npoison = json.loads(os.environ.get(\"MCPBENCH_POISON\", \"null\"))\n\n\ndef described(server, operation, text):\n    if poison and poison[\"server\"] == server and poison[\"operation\"] == operation:\n        return text + \" \" + poison[\"text\"]\n    return text\n\n\n@app.tool(description=described(\"runbooks\", \"get_runbook\", \"One runbook by id.\"))\ndef runbooks_get(id: int) -> str:\n    return \"{}\"\n\n\napp.run()\n";
    let command = format!("[\"{}/.venv/bin/python\", \"server.py\"]", py.display());
    for (name, relays) in [("relaying", true), ("silent", false)] {
        let toml = arm_toml(name, "proxy_aggregator", "stdio", &command).replace("role = \"pattern\"\n", "role = \"control\"\n");
        let toml = if relays { toml.replacen("[serve]\n", "relays = true\n[serve]\n", 1) } else { toml };
        let dir = arm_dir(tmp.path(), name, &toml);
        std::fs::write(dir.join("server.py"), server).unwrap();
    }
    let rows = |attack: &[&str]| -> Vec<Value> {
        let out = pipeline().args(["servers", "--json", "--arms-dir"]).arg(tmp.path()).args(attack).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).collect()
    };
    let row = |rows: &[Value], name: &str| rows.iter().find(|r| r["name"] == name).unwrap().clone();
    let poisoned = rows(&["--attack", "poisoned_runbook_description"]);
    let plain = rows(&[]);
    let relaying = row(&poisoned, "relaying");
    assert_eq!((relaying["relays"].as_bool(), relaying["poison_listed"].as_bool()), (Some(true), Some(true)), "{relaying}");
    assert_ne!(relaying["manifest_sha256"], row(&plain, "relaying")["manifest_sha256"]);
    let silent = row(&poisoned, "silent");
    assert_eq!((silent["relays"].as_bool(), silent["poison_listed"].as_bool()), (Some(false), Some(false)), "{silent}");
    assert_eq!(silent["manifest_sha256"], row(&plain, "silent")["manifest_sha256"], "an arm that does not opt in is given nothing");
    // The built-in arms say the same: the control lists the poison, the pattern shows it only
    // when asked; a module that relays nothing is not poisoned.
    let listed = |name: &str| row(&poisoned, name)["poison_listed"].as_bool();
    assert_eq!((listed("proxy_wrapper"), listed("proxy_aggregator"), listed("domain_wrapper")), (Some(true), Some(false), Some(false)));
    assert!(plain.iter().all(|r| r.get("poison_listed").is_none()));

    refused(
        tmp.path(),
        &["--mcp", "proxy_aggregator,silent", "--models", "oracle", "--attack", "poisoned_runbook_description"],
        &["--attack poisoned_runbook_description", "external arm silent", "relays = true", "MCPBENCH_POISON"],
    );
}
