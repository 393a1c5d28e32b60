//! Sessions exported as OpenTelemetry traces (`--otlp-endpoint`, `OTEL_EXPORTER_OTLP_ENDPOINT`).
//! A real receiver users run — Arize Phoenix, from PyPI, installed by `.ci/test-tools` — takes a
//! fake-model experiment's traces, and its own API is read back: one trace per session, the span
//! counts, names and token attributes the records hold. Without a collector, or with one that
//! never answers, the run is the same run: a warning, a count in the manifest, a bounded wait.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::fake_model::{FakeModel, MODEL, Mode};
use crate::common::{closed_port, manifest, pipeline, records};
use serde_json::Value;

/// One module's two arms on two tasks with the fake model: four sessions of two requests each.
fn model_run(base_url: &str, results: &Path, exp: &str) -> Command {
    let mut c = pipeline();
    c.args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave,two_tickets_for_globex", "--k", "1", "--models", MODEL, "--seed", "7"])
        .args(["--temperature", "0", "--exp-name", exp, "--base-url", base_url, "--results-dir"])
        .arg(results);
    c
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_dead_collector_is_one_warning_and_a_count_in_the_manifest_never_a_failed_session() {
    let fake = FakeModel::start(Mode::CallThenAnswer);
    let tmp = tempfile::tempdir().unwrap();
    let endpoint = format!("http://127.0.0.1:{}", closed_port());
    let out = model_run(&fake.base_url, tmp.path(), "dead").args(["--otlp-endpoint", &endpoint]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "a collector that is down must not fail the run: {t}");
    let recs = records(&tmp.path().join("dead"));
    assert_eq!(recs.len(), 4, "{t}");
    assert!(recs.iter().all(|r| r["validity"]["class"] == "valid"), "{t}");
    assert_eq!(t.matches("warning: exporting traces to").count(), 1, "one warning, not one per session: {t}");
    let otlp = &manifest(&tmp.path().join("dead"))["otlp"];
    assert_eq!(otlp["endpoint"], format!("{endpoint}/v1/traces"));
    assert_eq!(otlp["sessions"], 4, "{otlp}");
    assert_eq!(otlp["exported_sessions"], 0, "{otlp}");
    assert_eq!(otlp["not_exported_sessions"], 4, "{otlp}");
    assert!(otlp["last_error"].as_str().is_some_and(|e| !e.is_empty()), "{otlp}");
    assert!(t.contains("traces: 0 of 4 session(s) exported"), "{t}");
}

#[test]
fn a_collector_that_never_answers_costs_the_run_a_bounded_wait() {
    // Accepts connections and reads, never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
            let _ = s.read(&mut buf);
            held.push(s);
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = pipeline()
        // The standard variable, in milliseconds: each request gives up after 1 s, the run's end
        // waits at most 3 s.
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
        .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--k", "1", "--models", "oracle", "--exp-name", "silent"])
        .args(["--otlp-endpoint", &format!("http://user:pw@127.0.0.1:{port}/?key=k3y"), "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let took = started.elapsed();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert_eq!(records(&tmp.path().join("silent")).len(), 2, "{t}");
    // Sessions ≈ 1–2 s, then at most 3 s for the queue (it would be 15 s without the variable).
    assert!(took < Duration::from_secs(12), "the run waited {took:?} on a collector that never answers: {t}");
    let m = manifest(&tmp.path().join("silent"));
    assert_eq!(m["otlp"]["exported_sessions"], 0, "{m}");
    assert_eq!(m["otlp"]["not_exported_sessions"], 2, "{m}");
    let written = serde_json::to_string(&m).unwrap();
    assert!(!written.contains("pw@") && !written.contains("k3y"), "the collector's credentials reached the manifest: {written}");
}

#[test]
fn an_endpoint_that_is_not_a_url_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline()
        .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--k", "1", "--models", "oracle", "--exp-name", "bad"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318")
        .arg("--results-dir")
        .arg(tmp.path())
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("OTEL_EXPORTER_OTLP_ENDPOINT \"localhost:4318\" is not an http(s) URL"), "{t}");
    assert!(!tmp.path().join("bad").exists(), "a refused run left a folder: {t}");
}

// ---------------------------------------------------------------------------------------------
// Arize Phoenix: a throwaway server on free ports, its database in a temporary folder, nothing
// fetched from the network; stopped (SIGTERM, then SIGKILL) when the test ends.

struct Phoenix {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    fn start() -> Self {
        let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-tools/phoenix/bin/phoenix");
        assert!(bin.is_file(), "{} is missing: run .ci/test-tools (it installs Arize Phoenix from PyPI, pinned)", bin.display());
        let dir = tempfile::tempdir().unwrap();
        let port = closed_port();
        let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
        let child = Command::new(bin)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_SQL_DATABASE_URL", format!("sqlite:///{}", dir.path().join("phoenix.db").display()))
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", "0")
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
            .env("PHOENIX_DISABLE_AGENT_ASSISTANT", "true")
            .env("PHOENIX_ENABLE_MCP_SERVER", "false")
            .env("PHOENIX_LOG_MIGRATIONS", "false")
            .env("TMPDIR", dir.path())
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("PHOENIX_COLLECTOR_ENDPOINT")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut p = Self { child, url: format!("http://127.0.0.1:{port}"), _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if get(&format!("{}/readyz", p.url)).is_some_and(|(status, _)| status == 200) {
                return p;
            }
            if let Some(status) = p.child.try_wait().unwrap() {
                let log = std::fs::read_to_string(p._dir.path().join("server.log")).unwrap_or_default();
                panic!("Phoenix exited ({status}) before it was ready:\n{log}");
            }
            assert!(Instant::now() < deadline, "Phoenix was not ready after 120 s");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Every span of a project, oldest first (all pages).
    fn spans(&self, project: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!("{}/v1/projects/{project}/spans?limit=1000&sort=start_time&order=asc", self.url);
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let (status, body) = get(&url).unwrap_or_else(|| panic!("Phoenix did not answer {url}"));
            if status == 404 {
                return out; // no span written yet: the project does not exist
            }
            assert_eq!(status, 200, "{url}: {body}");
            let page: Value = serde_json::from_str(&body).unwrap();
            out.extend(page["data"].as_array().cloned().unwrap_or_default());
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => return out,
            }
        }
    }
}

/// A GET's status and body; `None` when nothing answers.
fn get(url: &str) -> Option<(u16, String)> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        servers::tls::install_crypto_provider();
        let response = reqwest::get(url).await.ok()?;
        let status = response.status().as_u16();
        Some((status, response.text().await.ok()?))
    })
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn attr(span: &Value, key: &str) -> Value {
    span["attributes"][key].clone()
}

#[test]
fn in_phoenix_each_session_is_one_trace_whose_spans_and_tokens_match_its_record() {
    let phoenix = Phoenix::start();
    let fake = FakeModel::start(Mode::CallThenAnswer);
    let tmp = tempfile::tempdir().unwrap();
    // The standard variable, as a user with a collector already configured has it.
    let out = model_run(&fake.base_url, tmp.path(), "traced").env("OTEL_EXPORTER_OTLP_ENDPOINT", &phoenix.url).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let exp = tmp.path().join("traced");
    let recs = records(&exp);
    assert_eq!(recs.len(), 4, "{t}");
    let otlp = manifest(&exp)["otlp"].clone();
    assert_eq!(otlp["exported_sessions"], 4, "{otlp} {t}");
    assert_eq!(otlp["not_exported_sessions"], 0, "{otlp}");
    assert_eq!(otlp["last_error"], Value::Null, "{otlp}");
    let exported_spans = otlp["exported_spans"].as_u64().unwrap();

    // Phoenix writes what it received asynchronously: wait until every exported span is readable.
    let deadline = Instant::now() + Duration::from_secs(60);
    let spans = loop {
        let spans = phoenix.spans("traced");
        if spans.len() as u64 >= exported_spans || Instant::now() > deadline {
            break spans;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(spans.len() as u64, exported_spans, "Phoenix holds {} spans of the {exported_spans} exported", spans.len());

    let roots: Vec<&Value> = spans.iter().filter(|s| s["parent_id"].is_null()).collect();
    assert_eq!(roots.len(), recs.len(), "one trace per session");
    for r in &recs {
        let (task, arm) = (r["task"].as_str().unwrap(), r["server"].as_str().unwrap());
        let matching: Vec<&&Value> = roots.iter().filter(|s| attr(s, "mcpbench.task") == task && attr(s, "mcpbench.arm") == arm).collect();
        assert_eq!(matching.len(), 1, "{task} on {arm}: {} root spans", matching.len());
        let root = matching[0];
        let trace = root["context"]["trace_id"].as_str().unwrap();
        let root_id = root["context"]["span_id"].as_str().unwrap();
        let mine: Vec<&Value> = spans.iter().filter(|s| s["context"]["trace_id"] == trace).collect();
        let children: Vec<&Value> = mine.iter().copied().filter(|s| !s["parent_id"].is_null()).collect();
        assert!(children.iter().all(|s| s["parent_id"] == root_id), "{task} on {arm}: a span outside the session's root");

        // The root: what the record says of the session.
        assert_eq!(root["name"], format!("invoke_agent {arm}"));
        assert_eq!(attr(root, "gen_ai.operation.name"), "invoke_agent");
        assert_eq!(attr(root, "gen_ai.request.model"), MODEL);
        assert_eq!(attr(root, "mcpbench.experiment"), "traced");
        assert_eq!(attr(root, "mcpbench.module"), r["module"]);
        assert_eq!(attr(root, "mcpbench.rep"), r["rep"]);
        assert_eq!(attr(root, "mcpbench.validity"), "valid");
        assert_eq!(attr(root, "mcpbench.outcome"), r["verifier"]["verdict"]);
        assert_eq!(attr(root, "gen_ai.usage.input_tokens"), r["totals"]["input_tokens"]);
        assert_eq!(attr(root, "gen_ai.usage.output_tokens"), r["totals"]["output_tokens"]);
        assert_eq!(attr(root, "gen_ai.usage.cache_read.input_tokens"), r["totals"]["cached_input_tokens"]);
        assert_eq!(root["span_kind"], "AGENT", "Phoenix reads invoke_agent as an agent span");

        // A span per model request, with that request's usage and finish reason.
        let turns = r["turn_records"].as_array().unwrap();
        let chats: Vec<&Value> = children.iter().copied().filter(|s| attr(s, "gen_ai.operation.name") == "chat").collect();
        assert_eq!(chats.len(), turns.len(), "{task} on {arm}: chat spans");
        assert_eq!(turns.len(), 2, "the fake model calls a tool, then answers");
        for turn in turns {
            let chat = chats.iter().find(|s| attr(s, "mcpbench.turn") == turn["index"]).unwrap_or_else(|| panic!("no span for turn {}", turn["index"]));
            assert_eq!(chat["name"], format!("chat {MODEL}"));
            assert_eq!(chat["span_kind"], "LLM");
            assert_eq!(attr(chat, "gen_ai.usage.input_tokens"), turn["usage"]["prompt_tokens"]);
            assert_eq!(attr(chat, "gen_ai.usage.output_tokens"), turn["usage"]["completion_tokens"]);
            assert_eq!(attr(chat, "gen_ai.usage.cache_read.input_tokens"), turn["usage"]["cached_prompt_tokens"]);
            assert_eq!(attr(chat, "gen_ai.response.finish_reasons"), serde_json::json!([turn["finish_reason"]]));
            assert_eq!(attr(chat, "gen_ai.request.seed"), 7);
        }
        // A span per tool call: its name, sizes and error, under the turn that asked for it.
        let calls = r["tool_calls"].as_array().unwrap();
        let tools: Vec<&Value> = children.iter().copied().filter(|s| attr(s, "gen_ai.operation.name") == "execute_tool").collect();
        assert_eq!(tools.len(), calls.len(), "{task} on {arm}: tool spans");
        for (span, call) in tools.iter().zip(calls) {
            assert_eq!(span["name"], format!("execute_tool {}", call["name"].as_str().unwrap()));
            assert_eq!(span["span_kind"], "TOOL");
            assert_eq!(attr(span, "gen_ai.tool.name"), call["name"]);
            assert_eq!(attr(span, "mcp.method.name"), "tools/call");
            assert_eq!(attr(span, "mcpbench.arguments_bytes"), call["args_bytes"]);
            assert_eq!(attr(span, "mcpbench.result_bytes"), call["result_bytes"]);
            assert_eq!(span["status_code"] == "ERROR", call["is_error"] == true, "{span}");
        }
        // The reset before the agent and the verification after it, and nothing else.
        assert_eq!(children.iter().filter(|s| s["name"] == "reset world").count(), 1);
        assert_eq!(children.iter().filter(|s| s["name"] == "verify").count(), 1);
        assert_eq!(mine.len(), 1 + 1 + turns.len() + calls.len() + 1, "{task} on {arm}: spans in the trace");
        // Spans sit inside the root's time.
        let (start, end) = (root["start_time"].as_str().unwrap(), root["end_time"].as_str().unwrap());
        for s in &children {
            assert!(s["start_time"].as_str().unwrap() >= start && s["end_time"].as_str().unwrap() <= end, "{s} outside [{start}, {end}]");
        }
    }
}

/// The spans of records the Phoenix test does not make: a session whose request got no answer
/// (invalid), and the oracle's (calls with no model request, resources read by URI).
#[test]
fn an_unanswered_request_and_the_oracles_calls_become_spans_as_their_records_say() {
    let fake = FakeModel::start(Mode::BadRequestInSessions);
    let tmp = tempfile::tempdir().unwrap();
    let out = model_run(&fake.base_url, tmp.path(), "refused").output().unwrap();
    let recs = records(&tmp.path().join("refused"));
    assert!(!recs.is_empty(), "{}", text(&out));
    for r in recs {
        let record: records::SessionRecord = serde_json::from_value(r).unwrap();
        assert!(record.failed_turn.is_some() && !record.validity.is_valid(), "the fake refuses every session request");
        let spans = pipeline::otlp::spans_of(&record);
        let root = &spans[0];
        assert!(matches!(&root.status, opentelemetry::trace::Status::Error { description } if description.contains("invalid session")), "{:?}", root.status);
        let failed: Vec<_> =
            spans.iter().filter(|s| s.attributes.iter().any(|kv| kv.key.as_str() == "error.type" && kv.value.as_str() == "no_answer")).collect();
        assert_eq!(failed.len(), 1, "one span for the request that got no answer");
        assert!(failed[0].name.starts_with("chat "), "{}", failed[0].name);
        assert!(!spans.iter().any(|s| s.name == "verify"), "an invalid session is not verified");
    }

    let out = pipeline()
        .args(["--module", "resource_gateway", "--tasks", "auth_latency_steps", "--k", "1", "--models", "oracle", "--exp-name", "oracle", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let recs = records(&tmp.path().join("oracle"));
    assert_eq!(recs.len(), 2, "{}", text(&out));
    for r in recs {
        let record: records::SessionRecord = serde_json::from_value(r).unwrap();
        let spans = pipeline::otlp::spans_of(&record);
        let tools: Vec<_> = spans.iter().filter(|s| s.name.starts_with("execute_tool ")).collect();
        assert_eq!(tools.len(), record.tool_calls.len());
        assert!(!tools.is_empty() && spans.iter().all(|s| !s.name.starts_with("chat ")), "the oracle makes calls, no model requests");
        for (span, call) in tools.iter().zip(&record.tool_calls) {
            let at = call.at_ms.expect("the oracle records when each call was made");
            let started = std::time::SystemTime::from(record.started_at);
            let offset = span.start_time.duration_since(started).unwrap().as_secs_f64() * 1000.0;
            assert!((offset - at).abs() < 0.01, "{}: span at {offset} ms, call at {at} ms", span.name);
            let method = span.attributes.iter().find(|kv| kv.key.as_str() == "mcp.method.name").map(|kv| kv.value.as_str().into_owned());
            let expected = match call.kind {
                records::outcome::CallKind::Tool => "tools/call",
                records::outcome::CallKind::ReadResource => "resources/read",
                records::outcome::CallKind::ListResources => "resources/list",
            };
            assert_eq!(method.as_deref(), Some(expected), "{}", span.name);
        }
        // Calls in the order they were made, one after the other.
        let starts: Vec<_> = tools.iter().map(|s| s.start_time).collect();
        assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
    }
}
