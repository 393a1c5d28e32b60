//! report.html in a real browser. `pipeline aggregate` writes the report of a fixture
//! experiment; Debian's headless Chromium (`/usr/bin/chromium`, or `$MCPBENCH_CHROMIUM`; installed
//! by `.ci/test-tools`) renders it. From `--dump-dom` and over the DevTools protocol (on a pipe,
//! `--remote-debugging-pipe`) the test asserts what a person sees: the headline, the chart at a
//! readable size, the provenance, a rendered conversation, a filter and a sort that work, a page
//! that fits a phone — and that nothing is fetched from the network. Screenshots at 1280×2000
//! and 390×844 land in the target's tmp folder for a person to look at.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use common::pipeline;
use records::manifest::{ManifestServer, ManifestTask};
use records::{
    ExperimentManifest, Fingerprint, HarnessTimings, InvalidReason, ModelSpec, Offered, OracleFloor, Provider, Role, SessionRecord, ToolCallRecord, Totals,
    TurnRecord, Usage, Validity, Verdict, VerifierOutcome,
};
use serde_json::{Value, json};

const MODEL: &str = "fake-model";
const TASKS: [&str; 2] = ["lena_goes_on_leave", "two_tickets_for_globex"];
const REPS: u32 = 6;

fn chromium() -> PathBuf {
    let path = std::env::var_os("MCPBENCH_CHROMIUM").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(path.is_file(), "{} is missing: run .ci/test-tools (it installs Debian's chromium), or set MCPBENCH_CHROMIUM", path.display());
    path
}

// ---------------------------------------------------------------------------------------------
// The fixture: what a model run and an oracle run of one module leave behind.

fn model_spec(oracle: bool) -> ModelSpec {
    if oracle {
        ModelSpec::oracle()
    } else {
        ModelSpec {
            id: MODEL.into(),
            provider: Provider::OpenAiCompatible,
            temperature: Some(records::Temperature::Value(0.0)),
            max_tokens: None,
            seed: Some(1),
            dialect: None,
            max_tokens_param: None,
            reasoning_effort: None,
        }
    }
}

fn fingerprint(r: &SessionRecord) -> Fingerprint {
    let oracle = r.model.is_oracle();
    Fingerprint {
        model_id: r.model.id.clone(),
        provider: r.model.provider,
        temperature: r.model.temperature,
        max_tokens: r.model.max_tokens,
        seed: r.model.seed,
        dialect: r.model.dialect,
        max_tokens_param: r.model.max_tokens_param,
        reasoning_effort: r.model.reasoning_effort.clone(),
        base_url: (!oracle).then(|| "http://127.0.0.1:9/v1".into()),
        transport: records::Transport::Stdio,
        world_seed: 42,
        world_scale: 1,
        world_scale_override: None,
        catalogue: None,
        task_sha256: format!("sha-{}", r.task),
        turn_cap: 16,
        manifest_sha256: r.manifest_sha256.clone(),
        arm_sha256: None,
        system_prompt_sha256: (!oracle).then(|| "prompt".into()),
        build_commit: Some("05c1580457ce1a0702ca9fdf64ab3881fcff4ca2".into()),
        build_dirty: Some(false),
        preflight_skipped: false,
        session_mode: None,
    }
}

/// One session. The pattern spends fewer tokens; the pattern's rep 2 of the first task fails
/// its verifier, and the control's rep 6 of the second task is invalid.
fn record(oracle: bool, role: Role, task: &str, rep: u32) -> SessionRecord {
    let t = chrono::DateTime::from_timestamp(1_800_000_000 + rep as i64 * 60, 0).unwrap();
    let server = if role == Role::Pattern { "orchestrator" } else { "wrapper" };
    let failed = !oracle && role == Role::Pattern && task == TASKS[0] && rep == 2;
    let invalid = !oracle && role == Role::Control && task == TASKS[1] && rep == 6;
    let base = if role == Role::Pattern { 2_600 } else { 3_100 } + 37 * rep as u64;
    let turns: Vec<TurnRecord> = if oracle {
        vec![]
    } else {
        (1..=2)
            .map(|i| TurnRecord {
                index: i,
                usage: Usage {
                    prompt_tokens: Some(base / 2 + i as u64),
                    completion_tokens: Some(20),
                    cached_prompt_tokens: Some(base / 4),
                    reasoning_tokens: None,
                    total_tokens: None,
                },
                retries: 0,
                latency_ms: 400.0 + i as f64,
                at_ms: None,
                finish_reason: Some(if i == 1 { "tool_calls" } else { "stop" }.into()),
                tool_calls: if i == 1 { 2 } else { 0 },
                extras: Default::default(),
            })
            .collect()
    };
    let mut r = SessionRecord {
        schema_version: 1,
        experiment: "browser".into(),
        module: "tool_orchestrator".into(),
        server: server.into(),
        role,
        task: task.into(),
        task_sha256: format!("sha-{task}"),
        split: Default::default(),
        rep,
        arm_position: 1,
        model: model_spec(oracle),
        auth: None,
        manifest_sha256: format!("manifest-{server}"),
        system_prompt_sha256: (!oracle).then(|| "prompt".into()),
        git_commit: Some("05c1580457ce1a0702ca9fdf64ab3881fcff4ca2".into()),
        git_dirty: Some(false),
        world_seed: 42,
        world_scale: 1,
        transport: Some(records::Transport::Stdio),
        fingerprint: None,
        fingerprint_sha256: None,
        attempt: Some(1),
        started_at: t,
        ended_at: t + chrono::Duration::seconds(3),
        turn_cap: 16,
        turn_cap_hit: false,
        context_exceeded: false,
        tool_call_as_text: false,
        unparseable_output: false,
        turns: turns.len(),
        totals: if oracle { Totals::default() } else { Totals::of(&turns) },
        turn_records: turns,
        provider_retries: Some(0),
        failed_turn: None,
        tool_calls: ["users_list", "tickets_get"]
            .iter()
            .enumerate()
            .map(|(i, name)| ToolCallRecord {
                turn: if oracle { 0 } else { 1 },
                kind: records::CallKind::Tool,
                name: (*name).into(),
                args_bytes: 20,
                result_bytes: 60,
                is_error: i == 1 && failed,
                invalid_arguments: false,
                unknown_tool: false,
                latency_ms: 2.0,
                at_ms: None,
                arguments_sha256: None,
            })
            .collect(),
        offered: Offered { functions: vec!["users_list".into(), "tickets_get".into()], resource_functions: false, definitions_bytes: 400 },
        final_answer: Some("Moved the tickets.".into()),
        verifier: (!invalid).then(|| VerifierOutcome {
            verdict: if failed { Verdict::Failed } else { Verdict::Passed },
            reasons: if failed { vec!["ticket 301 is still assigned to Lena Novak".into()] } else { vec![] },
            elapsed_ms: 3.0,
            checks: vec![],
            grounding: None,
        }),
        validity: if invalid { Validity::invalid(InvalidReason::ProviderError, "502 Bad Gateway after 5 retries") } else { Validity::Valid },
        oracle: oracle.then(|| OracleFloor {
            calls: 2,
            schema_bytes: 400,
            args_bytes: 40,
            result_bytes: 120,
            estimated_tokens: 200,
            estimate_method: "estimate: bytes / 4".into(),
            estimated_input_tokens: Some(if role == Role::Pattern { 1_900 } else { 2_400 }),
            input_estimate_method: Some("estimate: one call per turn; bytes / 4".into()),
        }),
        cost_usd: None,
        harness: HarnessTimings::default(),
        server_info: None,
        external_arm: None,
        retrieval: None,
        conversation: None,
        superseded: None,
    };
    let fp = fingerprint(&r);
    r.fingerprint_sha256 = Some(fp.sha256());
    r.fingerprint = Some(fp);
    r
}

/// The agent's transcript events for a session (agent/src/session.rs), or the oracle's.
fn transcript(r: &SessionRecord) -> String {
    let failed = r.verifier.as_ref().is_some_and(|v| v.verdict == Verdict::Failed);
    let events: Vec<Value> = if r.model.is_oracle() {
        vec![
            json!({"event": "start", "provider": "oracle", "task": "Lena Novak is going on leave."}),
            json!({"event": "call", "name": "users_list", "arguments": {"q": "Lena Novak"}, "result": "{\"data\":[{\"id\":7}]}", "is_error": false}),
            json!({"event": "answer", "text": "Moved 2 tickets."}),
        ]
    } else {
        vec![
            json!({"event": "start", "params": {"model": MODEL}, "turn_cap": 16}),
            json!({"event": "offered", "functions": ["users_list", "tickets_get"], "definitions": [{"type": "function"}]}),
            json!({"event": "message", "turn": 0, "message": {"role": "system", "content": "You are an assistant that completes the user's request."}}),
            json!({"event": "message", "turn": 0, "message": {"role": "user", "content": "Lena Novak is going on leave. Move her open tickets to Jonas Weber."}}),
            json!({"event": "message", "turn": 1, "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "users_list", "arguments": "{\"q\":\"Lena Novak\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "tickets_get", "arguments": "{\"id\":301}"}}]}}),
            json!({"event": "call", "turn": 1, "tool_call_id": "c1", "name": "users_list", "arguments": "{\"q\":\"Lena Novak\"}", "result": "{\"data\":[{\"id\":7,\"name\":\"Lena Novak\"}]}", "is_error": false, "invalid_arguments": false, "unknown_tool": false, "latency_ms": 2.0}),
            json!({"event": "call", "turn": 1, "tool_call_id": "c2", "name": "tickets_get", "arguments": "{\"id\":301}", "result": if failed { "Error: ticket 301 is locked" } else { "{\"id\":301,\"status\":\"open\"}" }, "is_error": failed, "invalid_arguments": false, "unknown_tool": false, "latency_ms": 2.0}),
            json!({"event": "message", "turn": 2, "message": {"role": "assistant", "content": "Moved the tickets."}}),
            json!({"event": "end", "validity": {"class": "valid"}}),
        ]
    };
    events.iter().map(|e| format!("{e}\n")).collect()
}

fn fixture(dir: &Path) -> usize {
    let t = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
    let manifest = ExperimentManifest {
        schema_version: 1,
        experiment: "browser".into(),
        command: vec![
            "pipeline".into(),
            "--module".into(),
            "tool_orchestrator".into(),
            "--models".into(),
            format!("{MODEL},oracle"),
            "--header".into(),
            "X-Token=<redacted>".into(),
        ],
        git_commit: Some("05c1580457ce1a0702ca9fdf64ab3881fcff4ca2".into()),
        git_dirty: Some(false),
        models: vec![model_spec(false), model_spec(true)],
        servers: [("orchestrator", Role::Pattern), ("wrapper", Role::Control)]
            .into_iter()
            .map(|(name, role)| ManifestServer { name: name.into(), module: "tool_orchestrator".into(), role, manifest_sha256: format!("manifest-{name}") })
            .collect(),
        tasks: TASKS
            .iter()
            .map(|t| ManifestTask {
                key: format!("tool_orchestrator/{t}"),
                sha256: format!("sha-{t}"),
                turn_cap: 16,
                seed: 42,
                scale: 1,
                split: Default::default(),
            })
            .collect(),
        k: REPS,
        jobs: 2,
        transport: records::Transport::Stdio,
        session_mode: None,
        created_at: t,
        binary_version: Some("0.1.0 (commit 0000000000000000000000000000000000000000, dirty: false)".into()),
        base_url: Some("http://127.0.0.1:9/v1".into()),
        preflight_skipped: false,
        preflight: Some(json!({MODEL: {"passed": true, "checks": [
            {"name": "endpoint", "passed": true, "detail": "answered"},
            {"name": "model", "passed": true, "detail": "served"},
            {"name": "native_tool_calls", "passed": true, "detail": "called preflight_echo natively"}]}})),
        check: None,
        shard: None,
        stopped: None,
        otlp: None,
        postgres: None,
        split: None,
        seal: None,
    };
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    let mut n = 0;
    for oracle in [false, true] {
        for role in [Role::Pattern, Role::Control] {
            for task in TASKS {
                for rep in 1..=(if oracle { 1 } else { REPS }) {
                    let r = record(oracle, role, task, rep);
                    let path = dir.join(format!("{}__{}", r.model.id, r.server)).join(format!("{task}__rep{rep}.json"));
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(path.with_extension("transcript.jsonl"), transcript(&r)).unwrap();
                    std::fs::write(&path, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
                    n += 1;
                }
            }
        }
    }
    n
}

// ---------------------------------------------------------------------------------------------
// The DevTools protocol over a pipe: JSON messages separated by NUL bytes on fds 3 (to the
// browser) and 4 (from it), here two FIFOs a shell hands the browser.

struct Browser {
    child: Child,
    to: std::fs::File,
    from: Receiver<Value>,
    next: u64,
    /// Every event received so far (responses are returned, not kept).
    events: Vec<Value>,
    /// The page target's session.
    session: String,
}

const WAIT: Duration = Duration::from_secs(30);

impl Browser {
    fn start(profile: &Path) -> Self {
        let (to, from) = (profile.join("to-browser"), profile.join("from-browser"));
        for fifo in [&to, &from] {
            nix::unistd::mkfifo(fifo.as_path(), nix::sys::stat::Mode::S_IRWXU).unwrap();
        }
        let child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --remote-debugging-pipe --user-data-dir="$1" about:blank 3<"$2" 4>"$3""#)
            .arg(chromium())
            .arg(profile.join("profile"))
            .arg(&to)
            .arg(&from)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Opening a FIFO blocks until its other end is opened: done aside, so a browser that
        // never starts fails the test instead of hanging it.
        let (tx, rx) = channel();
        let (to2, from2) = (to.clone(), from.clone());
        std::thread::spawn(move || {
            let w = std::fs::OpenOptions::new().write(true).open(&to2);
            let r = std::fs::File::open(&from2);
            let _ = tx.send(w.and_then(|w| r.map(|r| (w, r))));
        });
        let (writer, mut reader) = match rx.recv_timeout(WAIT) {
            Ok(Ok(pair)) => pair,
            other => panic!("chromium did not open its DevTools pipe: {other:?}"),
        };
        let (tx, from) = channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            while let Ok(n) = reader.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.iter().position(|b| *b == 0) {
                    let msg: Vec<u8> = buf.drain(..=end).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&msg[..msg.len() - 1])
                        && tx.send(v).is_err()
                    {
                        return;
                    }
                }
            }
        });
        let mut b = Browser { child, to: writer, from, next: 0, events: Vec::new(), session: String::new() };
        let targets = b.call("Target.getTargets", json!({}), false);
        let page = targets["targetInfos"].as_array().unwrap().iter().find(|t| t["type"] == "page").expect("a page target")["targetId"].clone();
        b.session = b.call("Target.attachToTarget", json!({"targetId": page, "flatten": true}), false)["sessionId"].as_str().unwrap().to_owned();
        b
    }

    /// Sends `method` (to the page's session when `page`) and returns its result.
    fn call(&mut self, method: &str, params: Value, page: bool) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if page {
            msg["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from.recv_timeout(left) {
                Ok(v) if v["id"] == id => {
                    assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                    return v["result"].clone();
                }
                Ok(v) => self.events.push(v),
                Err(RecvTimeoutError::Timeout) => panic!("{method}: no answer in {WAIT:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("{method}: the browser went away"),
            }
        }
    }

    /// Waits for the event `method` after the first `seen` events.
    fn wait_for(&mut self, method: &str, seen: usize) {
        let deadline = Instant::now() + WAIT;
        while !self.events[seen.min(self.events.len())..].iter().any(|e| e["method"] == method) {
            match self.from.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(v) => self.events.push(v),
                Err(e) => panic!("waiting for {method}: {e:?}"),
            }
        }
    }

    /// Evaluates `js` in the page and returns its value.
    fn eval(&mut self, js: &str) -> Value {
        let r = self.call("Runtime.evaluate", json!({"expression": js, "returnByValue": true, "awaitPromise": true}), true);
        assert!(r.get("exceptionDetails").is_none(), "{js}: {}", r["exceptionDetails"]);
        r["result"]["value"].clone()
    }

    fn navigate(&mut self, url: &str) {
        let seen = self.events.len();
        self.call("Page.navigate", json!({"url": url}), true);
        self.wait_for("Page.loadEventFired", seen);
    }

    fn viewport(&mut self, width: u32, height: u32, mobile: bool) {
        let scale = if mobile { 2 } else { 1 };
        self.call("Emulation.setDeviceMetricsOverride", json!({"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile}), true);
    }

    /// A real mouse click at the centre of the element `selector` finds.
    fn click(&mut self, selector: &str) {
        let js = format!(
            "(function(){{var e=document.querySelector({selector:?});e.scrollIntoView({{block:'center'}});var r=e.getBoundingClientRect();return [r.x+r.width/2,r.y+r.height/2];}})()"
        );
        let at = self.eval(&js);
        let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.call("Input.dispatchMouseEvent", json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}), true);
        }
    }

    fn screenshot(&mut self, path: &Path) -> Vec<u8> {
        let r = self.call("Page.captureScreenshot", json!({"format": "png", "captureBeyondViewport": false}), true);
        let png = base64_decode(r["data"].as_str().unwrap());
        std::fs::write(path, &png).unwrap();
        png
    }

    /// The URL of every request the page made.
    fn requests(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .map(|e| e["params"]["request"]["url"].as_str().unwrap_or("").to_owned())
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let mut bytes = serde_json::to_vec(&json!({"id": 0, "method": "Browser.close"})).unwrap();
        bytes.push(0);
        let _ = self.to.write_all(&bytes);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let clean: Vec<u8> = s.bytes().filter(|c| *c != b'=' && !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let v: Vec<u32> = chunk.iter().map(|c| value(*c) as u32).collect();
        let n = v.iter().enumerate().fold(0u32, |acc, (i, x)| acc | (x << (18 - 6 * i)));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

/// A PNG's width and height, from its IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    (u32::from_be_bytes(png[16..20].try_into().unwrap()), u32::from_be_bytes(png[20..24].try_into().unwrap()))
}

// ---------------------------------------------------------------------------------------------

/// The experiment and its report, written by the real CLI.
fn report(root: &Path) -> (PathBuf, usize) {
    let exp = root.join("browser");
    let sessions = fixture(&exp);
    let out = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (exp.join("report.html"), sessions)
}

fn url(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn shots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_dom_after_load_has_the_headline_chart_provenance_and_a_conversation() {
    let root = tempfile::tempdir().unwrap();
    let (html, sessions) = report(root.path());
    let out = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,2000", "--dump-dom"])
        .arg(format!("--user-data-dir={}", root.path().join("profile").display()))
        .arg(url(&html))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8_lossy(&out.stdout);
    let at = |needle: &str| dom.find(needle).unwrap_or_else(|| panic!("{needle} is not in the DOM"));
    // What was found, first: the verdict card of the module.
    assert!(at("id=\"headline\"") < at("id=\"chart\""));
    assert!(dom.contains("<h3>tool_orchestrator</h3><span class=\"badge v-"), "a verdict card");
    assert!(dom.contains("valid / attempted sessions: pattern 12/12 · control 11/12 (provider_error: 1)"));
    // The chart, inline.
    assert!(dom[at("id=\"chart\"")..].contains("<svg role=\"img\""));
    // The provenance.
    assert!(dom.contains("<th>work tree</th><td>05c1580457ce1a0702ca9fdf64ab3881fcff4ca2 (clean)</td>"));
    assert!(dom.contains("--header 'X-Token=&lt;redacted&gt;'"), "the recorded command, redacted");
    assert!(dom.contains("<th>endpoint preflight</th><td>passed — fake-model: endpoint passed, model passed, native_tool_calls passed</td>"));
    // A rendered conversation, and the script has run (the controls shown, the count written).
    assert!(dom.contains("<div class=\"msg assistant\"><div class=\"who\">assistant · turn 1"));
    assert!(dom.contains("result of tickets_get · 2 ms · <span class=\"err\">error</span>"));
    assert!(dom.contains(&format!("<span id=\"session-count\">{sessions} of {sessions} sessions shown</span>")), "the script ran");
    assert!(!dom.contains("<div id=\"session-controls\" hidden"), "the controls are shown once the script runs");
}

#[test]
fn in_chromium_the_report_reads_filters_sorts_fits_a_phone_and_fetches_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (html, sessions) = report(root.path());
    let started = Instant::now();
    let mut b = Browser::start(root.path());
    b.call("Network.enable", json!({}), true);
    b.call("Page.enable", json!({}), true);

    // Desktop, 1280 px wide.
    b.viewport(1280, 2000, false);
    let load = Instant::now();
    b.navigate(&url(&html));
    eprintln!("report.html of {sessions} sessions loaded in {:?} ({} bytes)", load.elapsed(), std::fs::metadata(&html).unwrap().len());
    let (w, h) = png_size(&b.screenshot(&shots().join("report-1280x2000.png")));
    assert_eq!((w, h), (1280, 2000));
    // The chart is shown at the size it was drawn, so its smallest text is what it says.
    let chart = b.eval(
        "(function(){var s=document.querySelector('#chart svg');var k=s.getBoundingClientRect().width/s.width.baseVal.value;\
         var f=[].map.call(s.querySelectorAll('text'),function(t){return parseFloat(t.getAttribute('font-size'))*k;});\
         return {width:s.getBoundingClientRect().width,min:Math.min.apply(null,f),texts:f.length};})()",
    );
    assert_eq!(chart["width"], 960, "{chart}");
    assert!(chart["min"].as_f64().unwrap() >= 11.99 && chart["texts"].as_u64().unwrap() > 20, "chart text ≥ 12 px at 1280 px: {chart}");
    let smallest_cell =
        b.eval("Math.min.apply(null,[].map.call(document.querySelectorAll('td,th'),function(c){return parseFloat(getComputedStyle(c).fontSize);}))");
    assert!(smallest_cell.as_f64().unwrap() >= 12.0, "table text ≥ 12 px: {smallest_cell}");
    let headline_first = b.eval("document.querySelector('main').firstElementChild.id || document.querySelector('section').id");
    assert_eq!(headline_first, "headline", "nothing stands before what was found but the run's notices");

    // A filter: the outcome "failed" leaves the one failed session.
    let count = "document.getElementById('session-count').textContent";
    assert_eq!(b.eval(count), format!("{sessions} of {sessions} sessions shown"));
    b.eval("(function(){var s=document.querySelector('select[data-filter=outcome]');s.value='failed';s.dispatchEvent(new Event('change'));})()");
    assert_eq!(b.eval(count), format!("1 of {sessions} sessions shown"));
    let visible = "[].filter.call(document.querySelectorAll('details.session'),function(d){return !d.hidden&&d.offsetHeight>0;}).map(function(d){return d.dataset.outcome+'/'+d.dataset.arm+'/'+d.dataset.task;})";
    assert_eq!(b.eval(visible), json!(["failed/pattern/lena_goes_on_leave"]));
    assert_eq!(b.eval("location.hash"), "#outcome=failed", "the view can be shared");
    // Opening it with a real click shows its conversation and the verifier's reasons.
    b.click("details.session[data-outcome=failed] > summary");
    let opened = b.eval(
        "(function(){var d=document.querySelector('details.session[data-outcome=failed]');\
         return {open:d.open,msgs:d.querySelectorAll('.msg').length,errors:d.querySelectorAll('.msg.error').length,\
         reasons:d.querySelector('.meta').textContent.indexOf('ticket 301 is still assigned to Lena Novak')>=0,\
         height:d.querySelector('.conversation').getBoundingClientRect().height};})()",
    );
    assert_eq!((opened["open"].as_bool(), opened["errors"].as_u64(), opened["reasons"].as_bool()), (Some(true), Some(1), Some(true)), "{opened}");
    assert!(opened["msgs"].as_u64().unwrap() >= 6 && opened["height"].as_f64().unwrap() > 200.0, "{opened}");

    // Back to all, then a sort by input tokens with a real click: most expensive first.
    b.eval("(function(){var s=document.querySelector('select[data-filter=outcome]');s.value='';s.dispatchEvent(new Event('change'));})()");
    b.eval("(function(){var s=document.querySelector('select[data-filter=model]');s.value='fake-model';s.dispatchEvent(new Event('change'));})()");
    b.click("button[data-sort=tokens]");
    let tokens = b.eval("[].filter.call(document.querySelectorAll('details.session'),function(d){return !d.hidden;}).map(function(d){return d.dataset.tokens===''?null:+d.dataset.tokens;})");
    let tokens: Vec<Option<u64>> = serde_json::from_value(tokens).unwrap();
    assert_eq!(tokens.len(), sessions - 4, "the model's sessions, the oracle's filtered out");
    let known: Vec<u64> = tokens.iter().flatten().copied().collect();
    assert!(known.windows(2).all(|w| w[0] >= w[1]) && known.len() > 10, "descending: {tokens:?}");
    assert_eq!(b.eval("location.hash"), "#model=fake-model&sort=tokens-desc");
    // A shared view opens as it was left (from another page: a fragment-only change would not
    // load the page again).
    b.navigate("about:blank");
    b.navigate(&format!("{}#arm=control&task=lena_goes_on_leave", url(&html)));
    assert_eq!(b.eval(count), format!("7 of {sessions} sessions shown"), "6 model sessions and the oracle's");

    // A phone, 390 px wide: laid out at its width (the viewport meta), nothing wider than the
    // screen but the tables and the chart, which scroll in their own boxes.
    b.viewport(390, 844, true);
    b.navigate(&url(&html));
    let (w, h) = png_size(&b.screenshot(&shots().join("report-390x844.png")));
    assert_eq!((w, h), (780, 1688), "390×844 at a device pixel ratio of 2");
    let phone = b.eval(
        "(function(){var d=document.documentElement;var wraps=[].filter.call(document.querySelectorAll('.table-wrap,.chart'),function(w){return w.scrollWidth>w.clientWidth+1;}).length;\
         return {layout:d.clientWidth,page:d.scrollWidth,scrolling_boxes:wraps,\
         text:Math.min.apply(null,[].map.call(document.querySelectorAll('td,th,p,li'),function(c){return parseFloat(getComputedStyle(c).fontSize);}))};})()",
    );
    assert_eq!(phone["layout"], 390, "the layout viewport is the phone's width: {phone}");
    assert!(phone["page"].as_u64().unwrap() <= 390, "no sideways scrolling of the page: {phone}");
    assert!(phone["scrolling_boxes"].as_u64().unwrap() >= 2, "wide tables scroll in their own box: {phone}");
    assert!(phone["text"].as_f64().unwrap() >= 12.0, "{phone}");

    // Nothing left the machine: every request is the file itself, and the page fetched no
    // resource at all.
    let requests = b.requests();
    assert!(!requests.is_empty(), "the network log works");
    assert!(requests.iter().all(|u| u.starts_with("file://") && u.contains("report.html")), "{requests:?}");
    assert_eq!(b.eval("performance.getEntriesByType('resource').length"), 0);
    // The log would have seen a fetch: the instrument is checked, not trusted.
    let before = b.requests().len();
    b.eval("fetch('http://127.0.0.1:9/probe').then(function(){},function(){}).then(function(){return 1;})");
    std::thread::sleep(Duration::from_millis(300));
    b.call("Runtime.evaluate", json!({"expression": "1"}), true);
    assert!(b.requests()[before..].iter().any(|u| u.starts_with("http://127.0.0.1:9/probe")), "{:?}", b.requests());
    eprintln!("browser checks took {:?}; screenshots in {}", started.elapsed(), shots().display());
}
