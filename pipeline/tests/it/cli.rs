//! The machine-readable listings users and scripts rely on: their `--json` shapes.

use std::process::Command;

fn json_lines(args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeline")).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn servers_json_lists_every_server_with_its_launch_command() {
    let all = json_lines(&["servers", "--json", "--backend-url", "http://127.0.0.1:8080"]);
    let (rows, external): (Vec<_>, Vec<_>) = all.into_iter().partition(|r| r["kind"] == "builtin");
    // The five shipped modules' ten servers, and any module added since.
    assert!(rows.len() >= 10);
    assert_eq!(rows.len(), servers::registry::servers().count());
    // Beside them, the external arms of the checkout's arms/ folder, each with its folder.
    let names: Vec<&str> = external.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"domain_adapter_py") && names.contains(&"resource_gateway_ts"), "{external:?}");
    for r in &external {
        assert_eq!(r["kind"], "external");
        assert_eq!(r["external"]["sha256"].as_str().map(str::len), Some(64), "{r}");
        // Its own folder, or (a `[[variant]]`) the folder of the arm it is a variant of.
        let dir = r["external"]["dir"].as_str().unwrap();
        match r["external"]["variant"].as_u64() {
            None => assert!(dir.ends_with(r["name"].as_str().unwrap()), "{r}"),
            Some(n) => {
                assert!(n >= 1, "{r}");
                let own = external.iter().find(|o| o["external"]["dir"] == dir && o["external"]["variant"].is_null()).expect("the folder's own arm is listed");
                assert_eq!(own["external"]["sha256"], r["external"]["sha256"], "one folder, one hash: {r}");
            }
        }
        assert_eq!(r["external"]["env_names"][0], "BACKEND_URL");
    }
    for r in &rows {
        for field in ["name", "module", "role", "paired", "tools", "manifest_sha256", "command"] {
            assert!(!r[field].is_null(), "{field} missing in {r}");
        }
        let cmd: Vec<&str> = r["command"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(&cmd[1..], ["serve", r["name"].as_str().unwrap(), "--transport", "stdio", "--backend-url", "http://127.0.0.1:8080"]);
    }
    let patterns = rows.iter().filter(|r| r["role"] == "pattern").count();
    assert_eq!(patterns, servers::registry::MODULES.len());
}

/// The human table keeps its columns whatever an arm is called: the role of every row starts
/// where the header's does (an external arm's long name once pushed it out of line).
#[test]
fn servers_table_keeps_its_columns_for_long_names() {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeline")).arg("servers").current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().skip_while(|l| !l.starts_with("server "));
    let header = lines.next().expect("the header");
    let at = header.find(" role ").expect("a role column") + 1;
    let rows: Vec<&str> = lines.collect();
    assert!(rows.iter().any(|r| r.split_whitespace().next().is_some_and(|n| n.len() > 18)), "an arm with a long name is listed: {text}");
    for r in rows {
        let cell = r.chars().skip(at).take(7).collect::<String>();
        assert!(cell == "pattern" || cell == "control", "role out of its column in {r:?}");
    }
}

#[tokio::test]
async fn servers_tokens_counts_each_servers_definitions_as_sent() {
    // The built-in servers only (what is checked below): an empty arms folder, so the example
    // arms' Python and Node servers are not started three times for nothing.
    let no_arms = tempfile::tempdir().unwrap();
    let no_arms = no_arms.path().to_str().unwrap();
    let rows = json_lines(&["servers", "--json", "--tokens", "o200k_base", "--arms-dir", no_arms]);
    let builtin: Vec<_> = rows.iter().filter(|r| r["kind"] == "builtin").collect();
    assert_eq!(builtin.len(), servers::registry::builtin().count());
    for r in builtin {
        let name = r["name"].as_str().unwrap();
        assert_eq!(r["tokenizer"], "o200k_base", "{r}");
        // What the agent would send this server's model, listed live: its definitions, each
        // counted in o200k_base, summed — and their bytes.
        let arm = servers::client::ArmClient::open(servers::registry::find(name).unwrap(), servers::manifest::NO_BACKEND).await.unwrap();
        let (tools, resources) = servers::offered::of_server(arm.client.peer()).await.unwrap();
        arm.close().await.unwrap();
        let sent = servers::offered::definitions(&tools, resources.as_deref());
        let tokens: u64 = sent.iter().map(|d| agent::tokens::Encoding::O200kBase.count(&d.to_string())).sum();
        let bytes: usize = sent.iter().map(|d| d.to_string().len()).sum();
        assert_eq!(r["definitions_tokens"].as_u64(), Some(tokens), "{name}");
        assert_eq!(r["definitions_bytes"].as_u64(), Some(bytes as u64), "{name}");
        // JSON in o200k_base runs at 3–6 bytes a token: a count of something else would not.
        let per_token = bytes as f64 / tokens as f64;
        assert!((3.0..6.0).contains(&per_token), "{name}: {bytes} bytes, {tokens} tokens");
    }
    // The table says which tokenizer, and shows the same figures.
    let out = Command::new(env!("CARGO_BIN_EXE_pipeline"))
        .args(["servers", "--tokens", "o200k_base", "--arms-dir", no_arms])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.lines().next().unwrap().ends_with("tokens: o200k_base"), "{table}");
    let orchestrator = rows.iter().find(|r| r["name"] == "orchestrator").unwrap();
    let line: Vec<&str> = table.lines().find(|l| l.starts_with("orchestrator ")).unwrap().split_whitespace().collect();
    assert_eq!(line[5], orchestrator["definitions_bytes"].to_string(), "{table}");
    assert_eq!(line[6], orchestrator["definitions_tokens"].to_string(), "{table}");
    // Without --tokens the listing has the bytes and no token fields.
    let plain = json_lines(&["servers", "--json", "--arms-dir", no_arms]);
    let wrapper = plain.iter().find(|r| r["name"] == "wrapper").unwrap();
    assert!(wrapper["definitions_bytes"].as_u64().unwrap() > 0);
    assert!(wrapper.get("definitions_tokens").is_none() && wrapper.get("tokenizer").is_none(), "{wrapper}");
}

#[test]
fn servers_tokens_refuses_an_unknown_tokenizer_in_one_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeline"))
        .args(["servers", "--tokens", "gpt-4o"])
        .env("RUST_BACKTRACE", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: unknown tokenizer \"gpt-4o\": use o200k_base, cl100k_base, or llama:URL"), "{stderr}");
}

#[test]
fn list_json_has_every_task_with_plan_lengths_per_arm() {
    let rows = json_lines(&["list", "--json"]);
    let on_disk: usize = servers::registry::modules().iter().map(|m| tasks::load_module(&tasks::default_tasks_dir(), m).unwrap().len()).sum();
    assert!(rows.len() >= 40, "the shipped modules have forty tasks");
    assert_eq!(rows.len(), on_disk);
    for r in &rows {
        assert!(r["turn_cap"].as_u64().unwrap() >= 1);
        assert!(r["tags"].is_array());
        let calls = r["oracle_calls"].as_object().unwrap();
        // Both built-in arms, and the external arms (arms/) that answer the module.
        let (pattern, control) = servers::registry::arms(r["module"].as_str().unwrap()).unwrap();
        assert!(calls.contains_key(pattern.name) && calls.contains_key(control.name), "{r}");
        let externals = calls.keys().filter(|k| *k != pattern.name && *k != control.name).count();
        assert_eq!(externals, external_arms_of(r["module"].as_str().unwrap()), "every external arm of the module has a column: {r}");
        assert!(calls.values().all(|c| c.as_u64().unwrap() >= 1));
    }
    let modules: std::collections::BTreeSet<&str> = rows.iter().map(|r| r["module"].as_str().unwrap()).collect();
    assert_eq!(modules, servers::registry::modules().into_iter().collect());
}

/// The external arms in this checkout's `arms/` that answer `module`, by their `arm.toml`.
fn external_arms_of(module: &str) -> usize {
    let arms = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../arms");
    let line = format!("module = \"{module}\"");
    std::fs::read_dir(arms)
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read_to_string(e.path().join("arm.toml")).is_ok_and(|t| t.lines().any(|l| l.trim_start().starts_with(&line))))
        .count()
}

#[test]
fn bench_toolcall_times_any_server_s_tool_and_names_the_flags_when_it_cannot_choose() {
    let rows = json_lines(&["bench", "toolcall", "--n", "3", "--server", "resource_wrapper", "--json"]);
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"toolcall.resource_wrapper.runbooks_get"), "{names:?}");
    let rows = json_lines(&["bench", "toolcall", "--n", "3", "--server", "proxy_aggregator", "--tool", "list_backends", "--args", "{}", "--json"]);
    assert_eq!(rows[0]["name"], "toolcall.proxy_aggregator.list_backends");
    assert_eq!(rows[0]["n"], 3);

    let out = Command::new(env!("CARGO_BIN_EXE_pipeline"))
        .args(["bench", "toolcall", "--n", "3", "--server", "proxy_aggregator"])
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--tool NAME --args JSON") && err.contains("list_backends"), "{err}");
}

/// The status line's code of an MCP `initialize` POSTed to `url` with `headers` (plain HTTP/1.1,
/// so the test needs no client library).
fn initialize_status(url: &str, headers: &[(&str, &str)]) -> u16 {
    use std::io::{Read, Write};
    let authority = url.strip_prefix("http://").and_then(|r| r.split('/').next()).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cli-test","version":"0"}}}"#;
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {authority}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    let line = String::from_utf8_lossy(&head);
    line.strip_prefix("HTTP/1.1 ").and_then(|r| r[..3].parse().ok()).unwrap_or_else(|| panic!("not an HTTP answer: {line:?}"))
}

#[test]
fn serve_over_http_takes_allowed_origins_and_hosts_from_its_flags_and_the_environment() {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pipeline"))
        .args(["serve", "wrapper", "--transport", "http", "--port", "0", "--backend-url", servers::manifest::NO_BACKEND])
        .args(["--allowed-origin", "https://flag.example:443", "--allowed-host", "proxy.example"])
        .env(servers::launch::ORIGINS_ENV, "https://env.example:8443")
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let url = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            let _ = child.kill();
            panic!("pipeline serve exited before listening: {seen}");
        }
        seen.push_str(&line);
        if let Some(at) = line.find("listening on ") {
            break line[at + "listening on ".len()..].trim().to_owned();
        }
    };
    for (headers, status) in [
        (vec![("Origin", "https://flag.example")], 200),
        (vec![("Origin", "https://env.example:8443")], 200),
        (vec![("Origin", "http://evil.example")], 403),
        (vec![("Host", "proxy.example")], 200),
        (vec![("Host", "evil.example")], 403),
    ] {
        assert_eq!(initialize_status(&url, &headers), status, "{headers:?}");
    }
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    assert!(child.wait().unwrap().success(), "the server did not stop cleanly on SIGTERM");
}

fn calibrate(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pipeline")).arg("calibrate").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap()
}

#[test]
fn calibrate_refuses_bad_input_with_the_fix_and_reports_what_it_ran() {
    for (args, says) in [
        (&["--designs", "8x0"][..], "k ≥ 1"),
        (&["--designs", "eight"][..], "expected TASKSxK"),
        (&["--only", "nope"][..], "the committed ones are null,"),
        (&["--experiments", "5"][..], "at least 20"),
    ] {
        let out = calibrate(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(says) && err.lines().count() == 1, "{args:?}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, std::fs::read_to_string("../aggregate/calibration/null.toml").unwrap().replace("share = 0.6", "share = 0.5")).unwrap();
    let out = calibrate(&["--scenario", bad.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("shares sum to"), "{}", String::from_utf8_lossy(&out.stderr));

    let out = calibrate(&["--only", "null", "--designs", "8x3", "--experiments", "40", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let study: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(study["schema"], "mcp-pattern-bench/calibration/v1");
    assert_eq!(study["cells"].as_array().unwrap().len(), 1);
    let cell = &study["cells"][0];
    assert_eq!((cell["design"]["tasks"].as_u64(), cell["design"]["k"].as_u64(), cell["pairs"].as_u64()), (Some(8), Some(3), Some(24)));
    assert_eq!(cell["flip"]["n"].as_u64(), Some(40));
    assert_eq!(study["mde_checks"].as_array().unwrap().len(), 1, "the null's stated MDE is checked");
}

/// `--check` fails when a figure is shown below its stated level: the absolute token interval
/// over strongly skewed task sizes undercovers (docs/calibration), and the check says so.
#[test]
fn calibrate_check_fails_on_a_figure_below_its_stated_level() {
    let out = calibrate(&["--only", "correlated", "--designs", "8x3", "--experiments", "300", "--check"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("below its stated level: correlated at 8 × 3 (24 pairs): the token difference interval covered the truth in"), "{err}");
    let out = calibrate(&["--only", "null", "--designs", "16x3", "--experiments", "300", "--check"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// An arms folder given that does not exist is refused in one line naming it, before anything
/// runs: read as empty, a mistyped path surfaced only later as "no server named …".
#[test]
fn a_missing_arms_folder_is_refused_in_one_line() {
    for args in [&["servers", "--arms-dir", "no/such/arms"][..], &["--arms-dir", "no/such/arms", "--mcp", "starter_py", "--models", "oracle"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_pipeline")).args(args).env("RUST_BACKTRACE", "1").current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: --arms-dir (or MCPBENCH_ARMS_DIR) no/such/arms: no such folder;"), "{stderr}");
    }
}
