//! `pipeline view`, the real binary, against a results folder with a run in progress.
//!
//! In headless Chromium (`common::chromium`): the index lists the running experiment with its
//! plan; its counts rise and its sessions appear without the page reloading (a marker set on
//! `window` after the first load survives); when the run ends the experiment reads complete and
//! aggregate's headline appears; the report is aggregate's, and a session's conversation is
//! reached from it; two experiments compare, and a refused pair shows aggregate's refusal word
//! for word. Outside the browser (plain HTTP over TCP): a foreign `Host` and a cross-site
//! `Origin` get 403, names that would leave the results folder reach nothing, a stopped
//! experiment shows its kind and detail, an incomplete one the command that resumes it. Both
//! tests snapshot the results folder — every file's bytes and every file's and folder's mtime —
//! and find it unchanged by the viewer.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant, SystemTime};

use crate::common::chromium::Browser;
use crate::common::fake_model::{FakeModel, Mode};
use crate::common::pipeline;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The viewer, the run, and what they leave on disk.

struct Viewer {
    child: Child,
    port: u16,
    url: String,
    /// Lines the viewer wrote to stderr after its first.
    log: Receiver<String>,
}

impl Viewer {
    fn start(results: &Path, extra: &[&str]) -> Self {
        let mut child = pipeline()
            .args(["view", "--port", "0", "--results-dir"])
            .arg(results)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, log) = channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        // Built first, so a failed check below still kills the viewer (on drop).
        let mut viewer = Self { child, port: 0, url: String::new(), log };
        let first = viewer.log.recv_timeout(Duration::from_secs(30)).expect("the viewer prints its address");
        let rest = first.strip_prefix("view: http://").unwrap_or_else(|| panic!("the first line names the address: {first}"));
        assert!(rest.contains(&format!("(results: {}; Ctrl-C stops)", results.display())), "{first}");
        let addr = rest.split('/').next().unwrap().to_owned();
        viewer.port = addr.rsplit(':').next().unwrap().parse().unwrap();
        assert!(addr.starts_with("127.0.0.1:"), "loopback by default: {first}");
        viewer.url = format!("http://{addr}");
        viewer
    }

    /// Ctrl-C: the viewer stops cleanly, saying so.
    fn stop(mut self) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "the viewer did not stop on Ctrl-C");
            std::thread::sleep(Duration::from_millis(50));
        };
        let said: Vec<String> = self.log.try_iter().collect();
        assert_eq!(status.code(), Some(0), "{said:?}");
        assert!(said.iter().any(|l| l == "view: stopped"), "{said:?}");
        assert!(!said.iter().any(|l| l.contains("panicked") || l.contains("backtrace")), "{said:?}");
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Every entry under `dir` (dotfiles too): a file's bytes and mtime, a folder's mtime.
type Snapshot = BTreeMap<PathBuf, (Option<Vec<u8>>, SystemTime)>;

fn snapshot(dir: &Path) -> Snapshot {
    let mut out = BTreeMap::new();
    fn walk(dir: &Path, out: &mut Snapshot) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            if meta.is_dir() {
                out.insert(e.path(), (None, meta.modified().unwrap()));
                walk(&e.path(), out);
            } else {
                out.insert(e.path(), (Some(std::fs::read(e.path()).unwrap()), meta.modified().unwrap()));
            }
        }
    }
    out.insert(dir.to_path_buf(), (None, std::fs::metadata(dir).unwrap().modified().unwrap()));
    walk(dir, &mut out);
    out
}

fn assert_unchanged(before: &Snapshot, after: &Snapshot, what: &str) {
    let added: Vec<&PathBuf> = after.keys().filter(|p| !before.contains_key(*p)).collect();
    let removed: Vec<&PathBuf> = before.keys().filter(|p| !after.contains_key(*p)).collect();
    let changed: Vec<&PathBuf> = before.iter().filter(|(p, v)| after.get(*p).is_some_and(|w| w != *v)).map(|(p, _)| p).collect();
    assert!(added.is_empty() && removed.is_empty() && changed.is_empty(), "{what}: added {added:?}, removed {removed:?}, changed {changed:?}");
}

/// Lines of the kernel's lock table held by `pid`.
fn locks_of(pid: u32) -> Vec<String> {
    std::fs::read_to_string("/proc/locks").unwrap().lines().filter(|l| l.split_whitespace().nth(4) == Some(&pid.to_string())).map(str::to_owned).collect()
}

/// One plain HTTP/1.1 GET (or another method), the `Host` and `Origin` as given: (status, body).
fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no status line: {text}"));
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

fn api(port: u16, path: &str) -> Value {
    let (status, body) = http(port, "GET", path, &[]);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

const KEY: &str = "sk-view-test";

/// A fake-model run of two tasks × both arms × k 2 whose every model request takes `slow`,
/// exporting its traces to a collector that is down (`otlp`).
fn slow_run(base_url: &str, results: &Path, otlp: &str) -> Child {
    pipeline()
        .env("OPENAI_API_KEY", KEY)
        .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave,two_tickets_for_globex", "--models", common::fake_model::MODEL, "--seed", "1"])
        .args(["--k", "2", "--exp-name", "e", "--base-url", base_url, "--otlp-endpoint", otlp, "--results-dir"])
        .arg(results)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A child killed if the test ends before it does.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn js_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

// ---------------------------------------------------------------------------------------------

#[test]
fn a_run_in_progress_updates_in_chromium_without_a_reload_and_the_viewer_writes_nothing() {
    let started = Instant::now();
    let root = tempfile::tempdir().unwrap();
    let results = root.path().join("results");
    common::fixture::write(&results.join("fix_a"), "fix_a");
    common::fixture::write(&results.join("fix_b"), "fix_b");
    let fixtures_before = snapshot(&results);

    let viewer = Viewer::start(&results, &[]);
    let mut b = Browser::start(root.path());
    b.call("Page.enable", json!({}), true);
    b.viewport(1280, 1600, false);
    b.navigate(&format!("{}/", viewer.url));
    b.wait_until("the index lists the fixtures", "document.querySelectorAll('article.exp').length === 2", Duration::from_secs(20));
    b.eval("window.__viewMarker = 'index'");

    // The run starts while the index polls: the viewer never stands in its way.
    let fake = FakeModel::start(Mode::SlowSessions(Duration::from_millis(1200)));
    let otlp = format!("http://127.0.0.1:{}", common::closed_port());
    let mut run = KillOnDrop(slow_run(&fake.base_url, &results, &otlp));
    let exp = results.join("e");

    // The index: the experiment appears, running, with its plan; the holder is the run's pid.
    let row = "document.querySelector('article.exp[data-exp=\"e\"]')";
    b.wait_until("the index lists e as running", &format!("{row} && {row}.dataset.state === 'running'"), Duration::from_secs(60));
    let text = b.eval(&format!("{row}.textContent")).as_str().unwrap().to_owned();
    for needle in [
        "running",
        &format!("pid {}", run.0.id()),
        "fake-model",
        "tool_orchestrator (2 dev tasks; orchestrator (pattern) vs wrapper (control))",
        "k = 2",
        "of 8 planned sessions recorded",
        "The headline is rendered once the run stops",
    ] {
        assert!(text.contains(needle), "{needle:?} is not in the index's entry: {text}");
    }
    // The viewer holds no lock, ever; the run holds its own (the instrument is checked).
    assert!(locks_of(viewer.child.id()).is_empty(), "{:?}", locks_of(viewer.child.id()));
    assert!(!locks_of(run.0.id()).is_empty(), "the run's flock is in /proc/locks");

    // Counts rise without a reload.
    let recorded = |b: &mut Browser, sel: &str| b.eval(&format!("+document.querySelector({}).dataset.recorded", js_str(sel))).as_u64().unwrap();
    let on_index = "article.exp[data-exp=\"e\"] .recorded";
    let first = recorded(&mut b, on_index);
    assert!(first < 8, "the run is not over yet: {first}");
    b.wait_until("the index's count rises", &format!("+document.querySelector({}).dataset.recorded > {first}", js_str(on_index)), Duration::from_secs(20));
    assert_eq!(b.eval("window.__viewMarker"), "index", "the index was not reloaded");

    // The experiment's page: its sessions appear as they finish, newest first, without a reload.
    b.navigate(&format!("{}/e/e/", viewer.url));
    b.wait_until("the page has drawn", "document.querySelector('#progress .recorded')", Duration::from_secs(10));
    b.eval("window.__viewMarker = 'experiment'");
    let rows = "document.querySelectorAll('#sessions tbody tr').length";
    let (rows_then, recorded_then) = (b.eval(rows).as_u64().unwrap(), recorded(&mut b, "#progress .recorded"));
    assert!(recorded_then < 8, "still running: {recorded_then}");
    b.wait_until("a session appears", &format!("{rows} > {rows_then}"), Duration::from_secs(20));
    assert!(recorded(&mut b, "#progress .recorded") > recorded_then);
    assert_eq!(b.eval("document.querySelector('#status [data-status]').dataset.status"), "running");
    let valid = b.eval("+document.querySelector('#progress .valid').dataset.valid").as_u64().unwrap();
    assert!(valid >= 1, "valid sessions counted: {valid}");
    assert_eq!(b.eval("window.__viewMarker"), "experiment", "the page was not reloaded");
    let plan = || "document.getElementById('plan').textContent";
    let shown = b.eval(plan()).as_str().unwrap().to_owned();
    assert!(shown.contains(&format!("exporting to {otlp}/v1/traces (counted when the run ends)")), "{shown}");

    // The run ends: complete, and aggregate's headline appears — still without a reload.
    let mut err = String::new();
    let status = run.0.wait().unwrap();
    run.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    b.wait_until("complete", "document.querySelector('#status [data-status]').dataset.status === 'complete'", Duration::from_secs(15));
    b.wait_until("the headline", "document.querySelector('#headline .headline[data-ready]')", Duration::from_secs(30));
    assert_eq!(b.eval("window.__viewMarker"), "experiment", "the page was not reloaded when the run ended");
    assert_eq!(b.eval(rows), 8, "every session listed");
    b.wait_until("the export's counts", &format!("{}.includes('0 of 8 sessions exported')", plan()), Duration::from_secs(10));
    let shown = b.eval(plan()).as_str().unwrap().to_owned();
    assert!(shown.contains(&format!("0 of 8 sessions exported to {otlp}/v1/traces (0 spans); 8 not exported: ")), "{shown}");
    assert_eq!(recorded(&mut b, "#progress .recorded"), 8);
    let report = aggregate::report(&exp, None, &aggregate::Options::default()).unwrap();
    let cards: Vec<(String, String)> = report
        .document
        .sections
        .iter()
        .flat_map(|s| &s.blocks)
        .filter_map(|b| if let aggregate::document::Block::Cards(c) = b { Some(c) } else { None })
        .flatten()
        .map(|c| (c.verdict.clone().unwrap_or_default(), c.reason.to_plain()))
        .collect();
    assert!(!cards.is_empty());
    let shown = b.eval("document.getElementById('headline').textContent").as_str().unwrap().to_owned();
    for (verdict, reason) in &cards {
        assert!(shown.contains(verdict.as_str()) && shown.contains(reason.as_str()), "aggregate's headline {verdict}: {reason} is not shown: {shown}");
    }
    assert!(!shown.contains("part of the plan"), "a complete experiment's headline is not marked partial: {shown}");
    // The whole results folder now, written by the run and never by the viewer.
    let after_run = snapshot(&results);

    // The report below is aggregate's page, loaded again when the run ended: every session.
    let in_frame = "document.getElementById('report').contentDocument";
    b.wait_until(
        "the final report in the page",
        &format!(
            "{in_frame} && {in_frame}.getElementById('session-count') && {in_frame}.getElementById('session-count').textContent === '8 of 8 sessions shown'"
        ),
        Duration::from_secs(30),
    );
    let title = b.eval(&format!("{in_frame}.title"));
    assert_eq!(title, report.document.title.as_str());
    assert!(b.eval(&format!("{in_frame}.getElementById('headline').textContent")).as_str().unwrap().contains("What was found"));

    // A session's conversation, from the list: the report opens at it.
    let (task, arm) = (
        b.eval("document.querySelector('#sessions tbody tr td code').textContent").as_str().unwrap().to_owned(),
        b.eval("document.querySelector('#sessions tbody tr td:nth-child(4)').textContent").as_str().unwrap().to_owned(),
    );
    let seen = b.events.len();
    b.click("#sessions tbody tr a.conversation");
    b.wait_for("Page.loadEventFired", seen);
    assert_eq!(b.eval("location.pathname"), "/e/e/report.html");
    let opened = b.eval(
        "(function(){var d=document.querySelectorAll('details.session[open]');return d.length===1?{task:d[0].dataset.task,arm:d[0].dataset.arm,msgs:d[0].querySelectorAll('.msg').length}:d.length;})()",
    );
    assert_eq!(opened["task"], task.as_str(), "{opened}");
    assert!(arm.contains(opened["arm"].as_str().unwrap()), "{arm} vs {opened}");
    assert!(opened["msgs"].as_u64().unwrap() >= 3, "the conversation is shown: {opened}");

    // Compare: two experiments picked on the index.
    b.navigate(&format!("{}/", viewer.url));
    b.wait_until("the selects are filled", "document.getElementById('compare-b').options.length >= 3", Duration::from_secs(10));
    b.eval("document.getElementById('compare-a').value = 'fix_a'; document.getElementById('compare-b').value = 'fix_b'");
    let seen = b.events.len();
    b.click("#compare-go");
    b.wait_for("Page.loadEventFired", seen);
    let comparison = aggregate::compare::compare(&results.join("fix_a"), &results.join("fix_b"), &[], &aggregate::Options::default()).unwrap();
    assert_eq!(b.eval("document.title"), aggregate::document::of_comparison(&comparison).title.as_str());
    let page = b.eval("document.body.textContent").as_str().unwrap().to_owned();
    assert!(page.contains("No declared difference") && page.contains("Compared cells"), "{page}");
    // A refused pair: aggregate's refusal, word for word.
    let refused = aggregate::compare::compare(&results.join("fix_a"), &exp, &[], &aggregate::Options::default()).unwrap_err().to_string();
    b.navigate(&format!("{}/compare?a=fix_a&b=e&along=", viewer.url));
    assert_eq!(b.eval("document.querySelector('pre.refusal').textContent"), refused.as_str());

    // Nothing the viewer did wrote anything: not the run's experiment after the run, not the
    // fixtures at all.
    drop(b);
    assert!(locks_of(viewer.child.id()).is_empty());
    viewer.stop();
    let end = snapshot(&results);
    assert_unchanged(&after_run, &end, "after the run");
    let fixtures_now: Snapshot = end.iter().filter(|(p, _)| fixtures_before.contains_key(*p) && *p != &results).map(|(p, v)| (p.clone(), v.clone())).collect();
    let fixtures_then: Snapshot = fixtures_before.into_iter().filter(|(p, _)| p != &results).collect();
    assert_unchanged(&fixtures_then, &fixtures_now, "the fixtures");
    eprintln!("the live test took {:?}", started.elapsed());
}

#[test]
fn outside_the_browser_it_refuses_foreign_hosts_origins_and_paths_and_shows_stops() {
    let root = tempfile::tempdir().unwrap();
    let results = root.path().join("results");
    let secret = "not-for-the-viewer-6c1d";
    std::fs::write(root.path().join("secret.txt"), secret).unwrap();
    std::fs::write(root.path().join("manifest.json"), secret).unwrap();
    common::fixture::write(&results.join("fix"), "fix");
    common::fixture::write(&results.join("halted"), "halted");
    let mut m: Value = serde_json::from_slice(&std::fs::read(results.join("halted/manifest.json")).unwrap()).unwrap();
    m["stopped"] = json!({"kind": "quota", "detail": "429 insufficient_quota: You exceeded your current quota", "at": "2027-01-01T00:00:00Z"});
    std::fs::write(results.join("halted/manifest.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    common::fixture::write(&results.join("sw/scale1"), "scale1");
    common::fixture::write(&results.join("sw/scale2"), "scale2");
    let before = snapshot(&results);
    let viewer = Viewer::start(&results, &["--allowed-host", "view.example", "--allowed-origin", "https://view.example:443"]);
    let port = viewer.port;

    // Host and Origin, as the MCP HTTP transport checks them.
    let get = |path: &str, headers: &[(&str, &str)]| http(port, "GET", path, headers);
    let local = format!("127.0.0.1:{port}");
    for host in [local.as_str(), &format!("localhost:{port}"), &format!("[::1]:{port}"), "view.example"] {
        assert_eq!(get("/api/index", &[("Host", host)]).0, 200, "Host {host}");
    }
    for host in ["evil.example", &format!("evil.example:{port}"), "view.example.evil.example"] {
        let (status, body) = get("/api/index", &[("Host", host)]);
        assert_eq!(status, 403, "Host {host}: {body}");
        assert!(body.contains("Host header is not allowed") && !body.contains("experiments"), "{body}");
    }
    for origin in [&format!("http://127.0.0.1:{port}"), "http://localhost:1234", "https://view.example"] {
        assert_eq!(get("/", &[("Origin", origin)]).0, 200, "Origin {origin}");
    }
    for origin in ["http://evil.example", "https://view.example.evil.example", "null"] {
        let (status, body) = get("/api/index", &[("Origin", origin)]);
        assert_eq!(status, 403, "Origin {origin}: {body}");
        assert!(body.contains("Origin header is not allowed"), "{body}");
    }
    assert_eq!(http(port, "POST", "/api/index", &[]).0, 405, "the viewer only reads");

    // Names from the URL reach only what the results folder lists.
    assert_eq!(get("/e/fix/manifest.json", &[]).0, 200, "the instrument: a file that may be served is");
    assert_eq!(get("/e/sw/scale1/fake-model__orchestrator/lena_goes_on_leave__rep1.json", &[]).0, 200);
    for path in [
        "/e/../secret.txt",
        "/e/..%2Fsecret.txt",
        "/e/%2E%2E/secret.txt",
        "/e/..%2F/manifest.json",
        "/e/fix/..%2F..%2Fsecret.txt",
        "/e/fix/../../secret.txt",
        "/e/fix/fake-model__orchestrator/..%2F..%2F..%2Fsecret.txt",
        "/e/fix/fake-model__orchestrator/%2E%2E/%2E%2E/%2E%2E/manifest.json",
        &format!("/e/{}/", root.path().display()),
        &format!("/e/{}", root.path().join("secret.txt").display().to_string().replace('/', "%2F")),
        "/e/sw/",
        "/e/sw/..%2F..%2Fsecret.txt",
        "/e/fix/.lock",
        "/api/e/..",
        "/api/e/..%2F..",
        "/api/e/%2Fetc",
        "/sweep/..%2F../sweep.md",
        "/sweep/sw/..%2F..%2Fsecret.txt",
        "/compare?a=..&b=%2Fetc",
    ] {
        let (status, body) = get(path, &[]);
        assert!(status == 404 || status == 400, "{path}: {status} {body}");
        assert!(!body.contains(secret), "{path} reached a file outside the results folder");
    }
    assert_eq!(get("/e/fix", &[]).0, 308, "the experiment's page is /e/fix/ (its report links are relative)");

    // The index: a stopped experiment with its kind and detail, an incomplete one with the
    // command that resumes it, a sweep with its levels.
    let index = api(port, "/api/index");
    let exp = |id: &str| index["experiments"].as_array().unwrap().iter().find(|x| x["id"] == id).cloned().unwrap_or_else(|| panic!("{id} listed: {index}"));
    let halted = exp("halted");
    assert_eq!(halted["status"]["state"], "stopped");
    assert_eq!(halted["status"]["kind"], "quota");
    assert_eq!(halted["status"]["detail"], "429 insufficient_quota: You exceeded your current quota");
    let fix = exp("fix");
    assert_eq!(fix["status"]["state"], "incomplete", "the oracle's reps 2–6 are planned and missing: {fix}");
    assert_eq!(fix["status"]["missing"], 20);
    assert_eq!(fix["status"]["resume"], "pipeline --module tool_orchestrator --models fake-model,oracle --header 'X-Token=<redacted>'");
    assert_eq!(fix["progress"]["planned"], 48);
    assert_eq!(fix["progress"]["recorded"], 28);
    assert_eq!(fix["progress"]["valid"], 27);
    assert_eq!(fix["progress"]["invalid"], json!({"provider_error": 1}));
    assert_eq!(fix["plan"]["k"], 6);
    assert_eq!(index["groups"].as_array().unwrap().len(), 1, "{index}");
    let sweep = &index["groups"][0];
    assert_eq!((sweep["name"].as_str(), sweep["factor"].as_str()), (Some("sw"), Some("scale")));
    let levels: Vec<&str> = sweep["levels"].as_array().unwrap().iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(levels, ["sw/scale1", "sw/scale2"]);
    assert!(sweep["sweep_report"].is_null(), "no sweep.md written: {sweep}");
    // The stopped experiment's page shows the same (the page draws it from this document).
    let halted_page = api(port, "/api/e/halted");
    assert_eq!(halted_page["status"], halted["status"]);
    assert_eq!(halted_page["sessions"]["total"], 28);

    // Its report is aggregate's, with aggregate's stop notice first; a report aggregate refuses
    // is that refusal.
    let (status, page) = get("/e/halted/report.html", &[]);
    assert_eq!(status, 200);
    assert!(page.contains("The run stopped early") && page.contains("You exceeded your current quota"), "aggregate's notice");
    let headline = (0..100)
        .find_map(|_| {
            let h = api(port, "/api/e/halted")["headline"].clone();
            if h["state"] == "pending" {
                std::thread::sleep(Duration::from_millis(100));
                None
            } else {
                Some(h)
            }
        })
        .expect("the headline is rendered");
    assert_eq!(headline["state"], "ready", "{headline}");
    assert!(headline["notices"][0].as_str().unwrap().starts_with("The run stopped early (quota"), "{headline}");

    viewer.stop();
    assert_unchanged(&before, &snapshot(&results), "the results folder");
}

#[tokio::test]
async fn the_planned_sessions_read_off_a_manifest_are_the_plans_for_every_shard_and_mode() {
    for mode in ["cold", "warm"] {
        let mut whole = std::collections::BTreeSet::new();
        for shard in [None, Some("1/3"), Some("2/3"), Some("3/3")] {
            let tmp = tempfile::tempdir().unwrap();
            let mut flags = vec!["--module", "tool_orchestrator", "--models", "oracle", "--k", "2", "--session-mode", mode, "--results-dir"];
            let dir = tmp.path().to_str().unwrap().to_owned();
            flags.push(&dir);
            if let Some(s) = shard {
                flags.extend(["--shard", s]);
            }
            let plan = pipeline::plan::RunPlan::from_flags(&pipeline::input::flags::RunArgs::from_flags(&flags).unwrap()).await.unwrap();
            let exp = pipeline::experiment::Experiment::lock(&plan.exp_dir).unwrap();
            exp.write_manifest(&plan, None).unwrap();
            let manifest = records::ExperimentManifest::read(&plan.exp_dir).unwrap().unwrap();
            let read = pipeline::commands::view::planned_sessions(&manifest).unwrap();
            let planned: std::collections::BTreeSet<_> =
                plan.sessions().iter().map(|s| (plan.models[s.model].spec.id.clone(), s.server.name.to_owned(), s.task.id.clone(), s.rep)).collect();
            assert_eq!(read, planned, "{mode}, shard {shard:?}");
            match shard {
                None => whole = planned,
                Some(_) => {
                    assert!(!planned.is_empty() && planned.len() < whole.len(), "{mode} {shard:?}: a part");
                    assert!(planned.is_subset(&whole));
                }
            }
        }
    }
}
