//! A broken setup yields a named refusal and zero sessions, not numbers: the endpoint preflight
//! (dead endpoint, unknown model, calls written as text), exit codes a script can trust, stops on
//! quota, on the circuit breaker and on broken infrastructure, explicit reruns, Ctrl-C, one writer
//! per experiment, and secrets that reach no file. Runs the real binary against a local fake
//! that speaks OpenAI's wire format.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::fake_model::{FakeModel, MODEL, Mode};
use crate::common::{all_files, manifest, pipeline, records};

const KEY: &str = "sk-test-fail-closed-7f3a9c";

/// A model run of one module's first two tasks against `base_url`.
fn model_run(base_url: &str, results: &Path, extra: &[&str]) -> Command {
    let mut c = pipeline();
    c.env("OPENAI_API_KEY", KEY)
        .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave,two_tickets_for_globex", "--models", MODEL, "--seed", "1"])
        .args(["--exp-name", "e", "--base-url", base_url, "--results-dir"])
        .arg(results)
        .args(extra);
    c
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn nothing_written(results: &Path) -> bool {
    std::fs::read_dir(results).map(|d| d.count() == 0).unwrap_or(true)
}

#[test]
fn a_dead_endpoint_is_refused_before_any_session() {
    let tmp = tempfile::tempdir().unwrap();
    let out = model_run("http://127.0.0.1:1/v1", tmp.path(), &[]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("G6 model") && t.contains("unreachable") && t.contains("--base-url"), "{t}");
    assert!(!t.contains("Stack backtrace"), "one clean message, no backtrace: {t}");
    assert!(nothing_written(tmp.path()), "a refusal writes nothing");
}

#[test]
fn an_unknown_model_is_refused_with_the_providers_words() {
    let fake = FakeModel::start(Mode::UnknownModel);
    let tmp = tempfile::tempdir().unwrap();
    let out = model_run(&fake.base_url, tmp.path(), &[]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("unknown_model") && t.contains("some-other-model"), "names the problem and what the server serves: {t}");
    assert_eq!(fake.session_requests(), 0, "no session spent anything");
    assert!(nothing_written(tmp.path()));
}

#[test]
fn calls_written_as_text_are_refused_with_the_likely_fix() {
    let fake = FakeModel::start(Mode::TextCalls);
    let tmp = tempfile::tempdir().unwrap();
    let out = model_run(&fake.base_url, tmp.path(), &[]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("tool_call_as_text") && t.contains("--jinja") && t.contains("--tool-call-parser"), "{t}");
    assert_eq!(fake.session_requests(), 0);
    assert!(nothing_written(tmp.path()));
}

#[test]
fn skip_preflight_runs_and_says_so_in_every_file_and_the_report() {
    let fake = FakeModel::start(Mode::TextCalls);
    let tmp = tempfile::tempdir().unwrap();
    let out = model_run(&fake.base_url, tmp.path(), &["--skip-preflight"]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "every session ran and is valid: {t}");
    assert!(t.contains("preflight is skipped"), "{t}");
    let exp = tmp.path().join("e");
    assert_eq!(manifest(&exp)["preflight_skipped"], true);
    let recs = records(&exp);
    assert_eq!(recs.len(), 4);
    for r in &recs {
        assert_eq!(r["fingerprint"]["preflight_skipped"], true, "{r}");
        assert_eq!(r["validity"]["class"], "valid");
        assert_eq!(r["tool_call_as_text"], true, "the call written as text is flagged: {r}");
    }
    let report = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    let md = String::from_utf8_lossy(&report.stdout).to_lowercase();
    assert!(report.status.success(), "{}", text(&report));
    assert!(md.contains("preflight") && md.contains("skipped"), "{md}");
    assert!(md.contains("not parsing tool calls"), "{md}");
}

#[test]
fn a_quota_answer_stops_the_run_and_a_resume_reruns_it_keeping_the_old_record() {
    let fake = FakeModel::start(Mode::QuotaInSessions);
    let tmp = tempfile::tempdir().unwrap();
    let out = model_run(&fake.base_url, tmp.path(), &[]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(4), "stopped early: {t}");
    assert!(t.contains("STOPPED EARLY (quota)") && t.contains("resume with:"), "{t}");
    let exp = tmp.path().join("e");
    assert_eq!(manifest(&exp)["stopped"]["kind"], "quota");
    assert_eq!(fake.session_requests(), 1, "no session starts after the refusal");
    assert_eq!(records(&exp).len(), 1);

    fake.set_mode(Mode::Native);
    let out = model_run(&fake.base_url, tmp.path(), &[]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let recs = records(&exp);
    assert_eq!(recs.len(), 4);
    assert!(recs.iter().all(|r| r["validity"]["class"] == "valid"));
    let kept: Vec<_> =
        all_files(&exp).into_iter().filter(|(p, _)| p.to_string_lossy().contains("/superseded/") && p.extension().is_some_and(|e| e == "json")).collect();
    assert_eq!(kept.len(), 1, "the refused attempt is kept, not deleted");
    let old: serde_json::Value = serde_json::from_slice(&kept[0].1).unwrap();
    assert_eq!(old["validity"]["reason"], "quota_or_session_limit");
    assert!(old["superseded"]["reason"].as_str().unwrap().contains("quota_or_session_limit"));
    assert!(manifest(&exp).get("stopped").is_none(), "the finished resume is not marked stopped");
    assert!(recs.iter().any(|r| r["attempt"] == 2), "the rerun is the second attempt");
}

/// A budget stops the run before a pair that could exceed it — never between the arms of a pair —
/// with exit 4, its reason in the manifest and the report, and the command that resumes; the
/// resume spends a budget of its own. A budget nothing could be measured against is refused.
#[test]
fn a_budget_stops_before_a_pair_it_could_not_pay_and_the_resume_finishes() {
    let fake = FakeModel::start(Mode::Native);
    let tmp = tempfile::tempdir().unwrap();
    // Each session costs 128 tokens (120 in, 8 out): the first pair runs without an estimate
    // (256), the second could take the run to 512.
    let out = model_run(&fake.base_url, tmp.path(), &["--budget-tokens", "300"]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(4), "{t}");
    assert!(t.contains("STOPPED EARLY (budget): --budget-tokens 300: 256 tokens of the budget (300 tokens) spent"), "{t}");
    assert!(t.contains("128 tokens each") && t.contains("budget: 256 tokens of --budget-tokens 300 spent") && t.contains("resume with:"), "{t}");
    let exp = tmp.path().join("e");
    let recs = records(&exp);
    assert_eq!(recs.len(), 2, "one whole pair");
    assert_eq!(recs[0]["task"], recs[1]["task"], "both arms of the same task");
    assert_ne!(recs[0]["server"], recs[1]["server"]);
    assert_eq!(manifest(&exp)["stopped"]["kind"], "budget");
    let report = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    assert!(report.status.success(), "{}", text(&report));
    let md = std::fs::read_to_string(exp.join("report.md")).unwrap();
    assert!(md.contains("**The budget ended the run**") && md.contains("--budget-tokens 300"), "{md}");

    let out = model_run(&fake.base_url, tmp.path(), &["--budget-tokens", "600"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(records(&exp).len(), 4);
    assert!(manifest(&exp).get("stopped").is_none());

    // Refused before anything is written: dollars without prices, a price table without the
    // model, and a budget for the oracle, which spends nothing.
    let other = tmp.path().join("other");
    let out = model_run(&fake.base_url, &other, &["--budget-usd", "1.5"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("--budget-usd 1.5 needs --prices FILE"), "{}", text(&out));
    let prices = tmp.path().join("prices.toml");
    std::fs::write(&prices, "[models.\"gpt-4o-mini\"]\ninput = 0.15\noutput = 0.6\n").unwrap();
    let out = model_run(&fake.base_url, &other, &["--budget-usd", "1.5", "--prices"]).arg(&prices).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains(&format!("no price for model \"{MODEL}\"")), "{}", text(&out));
    let out = pipeline().args(["--module", "tool_orchestrator", "--models", "oracle", "--budget-tokens", "5", "--results-dir"]).arg(&other).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("the oracle and simulated agents spend nothing"), "{}", text(&out));
    assert!(nothing_written(&other));
}

#[test]
fn consecutive_invalid_sessions_trip_the_breaker_and_reruns_are_explicit() {
    let fake = FakeModel::start(Mode::BadRequestInSessions);
    let tmp = tempfile::tempdir().unwrap();
    let exp = tmp.path().join("e");
    let all_tasks = |extra: &[&str]| {
        let mut c = pipeline();
        c.env("OPENAI_API_KEY", KEY)
            .args(["--module", "tool_orchestrator", "--models", MODEL, "--seed", "1", "--exp-name", "e", "--base-url", &fake.base_url, "--results-dir"])
            .arg(tmp.path())
            .args(extra)
            .output()
            .unwrap()
    };
    let out = all_tasks(&["--max-consecutive-invalid", "3"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(4), "{t}");
    assert!(t.contains("circuit_breaker") && t.contains("3 sessions in a row invalid (provider_error)"), "{t}");
    assert_eq!(manifest(&exp)["stopped"]["kind"], "circuit_breaker");
    assert_eq!(records(&exp).len(), 3, "no session starts after the breaker trips");
    assert_eq!(fake.session_requests(), 3, "a 400 is not retried");

    // The endpoint is fixed. A plain resume runs what is left and leaves the invalid ones alone.
    fake.set_mode(Mode::Native);
    let out = all_tasks(&[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(3), "completed, with invalid sessions among the planned: {t}");
    assert!(t.contains("3 invalid session(s) of earlier runs left as recorded (provider_error 3)"), "{t}");
    assert!(t.contains("--retry-invalid"), "says how to rerun them: {t}");
    let sessions = 2 * common::task_count("tool_orchestrator");
    assert_eq!(records(&exp).len(), sessions, "every task × 2 arms");

    let out = all_tasks(&["--retry-invalid"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains(&format!("{} already recorded, 3 to run (3 of them reruns of invalid sessions: provider_error 3)", sessions - 3)), "{t}");
    let recs = records(&exp);
    assert_eq!(recs.len(), sessions);
    assert!(recs.iter().all(|r| r["validity"]["class"] == "valid"));
    let superseded =
        all_files(&exp).iter().filter(|(p, _)| p.to_string_lossy().contains("/superseded/") && !p.to_string_lossy().ends_with(".transcript.jsonl")).count();
    assert_eq!(superseded, 3, "replacements are kept, never silent");
    let report = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    assert!(report.status.success(), "{}", text(&report));
}

fn wait_for(what: &str, child: &mut Child, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < deadline, "the run did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn cluster_dirs_of(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("{}{pid}-", embedded_pg::DIR_PREFIX);
    [Path::new("/dev/shm").to_path_buf(), std::env::temp_dir()]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

#[test]
fn sigint_stops_the_run_records_the_session_in_flight_and_removes_the_cluster() {
    let fake = FakeModel::start(Mode::SlowSessions(Duration::from_secs(60)));
    let tmp = tempfile::tempdir().unwrap();
    let mut child = model_run(&fake.base_url, tmp.path(), &[]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    wait_for("a session in flight", &mut child, || fake.session_requests() >= 1);
    let pid = child.id();
    assert!(!cluster_dirs_of(pid).is_empty(), "the run has an embedded cluster");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = wait_exit(&mut child, Duration::from_secs(30));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(4), "stopped early: {err}");
    assert!(err.contains("SIGINT") && err.contains("resume with:"), "{err}");
    assert!(cluster_dirs_of(pid).is_empty(), "the embedded cluster is removed on Ctrl-C");
    let exp = tmp.path().join("e");
    let recs = records(&exp);
    assert_eq!(recs.len(), 1, "only the session in flight is recorded");
    assert_eq!(recs[0]["validity"]["reason"], "interrupted");
    // How long it ran before the signal is measured, not left at zero.
    assert!(recs[0]["harness"]["session_ms"].as_f64().unwrap() > 0.0, "{}", recs[0]);
    assert!(recs[0]["started_at"].as_str().unwrap() < recs[0]["ended_at"].as_str().unwrap(), "{}", recs[0]);
    assert_eq!(manifest(&exp)["stopped"]["kind"], "interrupted");

    fake.set_mode(Mode::Native);
    let out = model_run(&fake.base_url, tmp.path(), &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(records(&exp).len(), 4);
}

#[test]
fn a_second_run_on_the_same_experiment_refuses_at_once() {
    let fake = FakeModel::start(Mode::SlowSessions(Duration::from_secs(60)));
    let tmp = tempfile::tempdir().unwrap();
    let mut first = model_run(&fake.base_url, tmp.path(), &[]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_for("the first run's session", &mut first, || fake.session_requests() >= 1);
    let started = Instant::now();
    let out = model_run(&fake.base_url, tmp.path(), &[]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("being written by another run") && t.contains(&format!("pid {}", first.id())), "{t}");
    assert!(started.elapsed() < Duration::from_secs(20), "refused at once, not after waiting");
    assert_eq!(fake.session_requests(), 1, "the second run started nothing");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    assert_eq!(wait_exit(&mut first, Duration::from_secs(30)).code(), Some(4));
}

#[test]
fn keys_and_header_values_reach_no_file_the_run_writes() {
    let fake = FakeModel::start(Mode::Native);
    let tmp = tempfile::tempdir().unwrap();
    let header_secret = "hdr-secret-5b1e07";
    let out = model_run(&fake.base_url, tmp.path(), &["--header", &format!("X-Gateway-Token={header_secret}"), &format!("--header=X-Other={header_secret}")])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(!t.contains(KEY) && !t.contains(header_secret), "nor the terminal: {t}");
    let report = pipeline().args(["aggregate", "--result-dir"]).arg(tmp.path().join("e")).output().unwrap();
    assert!(report.status.success(), "{}", text(&report));
    let files = all_files(tmp.path());
    assert!(files.len() >= 4 + 4 + 2, "records, transcripts, manifest, lock and reports: {}", files.len());
    for (path, bytes) in &files {
        let body = String::from_utf8_lossy(bytes);
        assert!(!body.contains(KEY), "the API key is in {}", path.display());
        assert!(!body.contains(header_secret), "a header value is in {}", path.display());
    }
    let command = manifest(&tmp.path().join("e"))["command"].to_string();
    assert!(command.contains("X-Gateway-Token=<redacted>") && command.contains("--header=X-Other=<redacted>"), "{command}");
}

#[test]
fn postgres_dying_mid_run_stops_the_run_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = tmp.path().join("pg");
    let mut child = pipeline()
        .args(["--all", "--models", "oracle", "--k", "1", "--exp-name", "pg", "--results-dir"])
        .arg(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("some records", &mut child, || records(&exp).len() >= 5);
    let postmasters = children_named(child.id(), "postgres");
    assert!(!postmasters.is_empty(), "the run's postgres is its child");
    for pm in postmasters {
        // SIGQUIT: an immediate stop, as when the server dies under the run — but unlike SIGKILL it
        // releases its shared memory, which other tests on this machine check for leaks.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pm as i32), nix::sys::signal::Signal::SIGQUIT);
    }
    let status = wait_exit(&mut child, Duration::from_secs(90));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(4), "{err}");
    assert!(err.contains("STOPPED EARLY (infrastructure)"), "{err}");
    assert_eq!(manifest(&exp)["stopped"]["kind"], "infrastructure");
    let invalid: Vec<_> = records(&exp).into_iter().filter(|r| r["validity"]["class"] == "invalid").collect();
    assert!((1..=3).contains(&invalid.len()), "the run stops at the first broken session, not after grinding through the rest: {}", invalid.len());
    // The session that meets the broken database is `infrastructure`; those already in flight
    // when it died — one running, the one before it being verified (a worker verifies a session
    // while the next runs) — may end otherwise (their calls or their verification fail), so are
    // counted but not named.
    assert!(invalid.iter().any(|r| r["validity"]["reason"] == "infrastructure"), "{invalid:?}");

    // With the database back, a resume reruns what the breakage cost, keeping the old records.
    let out =
        pipeline().args(["--all", "--models", "oracle", "--k", "1", "--exp-name", "pg", "--retry-invalid", "--results-dir"]).arg(tmp.path()).output().unwrap();
    let t = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains(&format!("({} of them reruns of invalid sessions", invalid.len())), "{t}");
    assert!(records(&exp).iter().all(|r| r["validity"]["class"] == "valid"));
}

/// Pids of the processes whose parent is `parent` and whose command name is `name`.
fn children_named(parent: u32, name: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // pid (comm) state ppid …
        let Some((comm, rest)) = stat.split_once(") ").map(|(a, b)| (a.split_once(" (").map_or("", |x| x.1), b)) else { continue };
        let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        if comm == name && ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn a_model_run_at_a_scale_its_tasks_do_not_hold_at_is_refused_before_spending() {
    let fake = FakeModel::start(Mode::Native);
    let tmp = tempfile::tempdir().unwrap();
    // Every committed task holds at every scale; this copy of one counts a whole table with a
    // fixed number, which holds at scale 1 only.
    let tasks = tmp.path().join("tasks");
    common::copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks/tool_orchestrator"), &tasks.join("tool_orchestrator"));
    let verify = tasks.join("tool_orchestrator/lena_goes_on_leave/verify.toml");
    let text_of = std::fs::read_to_string(&verify).unwrap();
    std::fs::write(&verify, format!("{text_of}\n[[sql]]\nname = \"no ticket was added\"\nquery = \"SELECT count(*) FROM tickets\"\nexpect = 400\n")).unwrap();
    let results = tmp.path().join("results");
    let mut c = pipeline();
    c.env("OPENAI_API_KEY", KEY)
        .env("MCPBENCH_TASKS_DIR", &tasks)
        .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave,two_tickets_for_globex", "--models", MODEL, "--seed", "1"])
        .args(["--scale", "2", "--exp-name", "e", "--base-url", &fake.base_url, "--results-dir"])
        .arg(&results);
    let out = c.output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.lines().any(|l| l.starts_with("G7 ground truth: task tool_orchestrator/lena_goes_on_leave at world scale 2")), "{t}");
    assert!(!t.contains("two_tickets_for_globex at world scale"), "a task that holds at scale 2 is not reported: {t}");
    assert_eq!(fake.session_requests(), 0, "nothing was spent");
    assert!(nothing_written(&results));
}
