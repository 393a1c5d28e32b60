//! A run against a local OpenAI-compatible server: no key needed on a loopback address (and the
//! records say `auth: none`), and `--jobs N` reaching the server with N requests at once, as a
//! llama.cpp server started with `-np N` needs to use its N slots. Runs the real binary against
//! the local fake.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::common::fake_model::{FakeModel, MODEL, Mode};
use crate::common::{pipeline, records};

const KEY: &str = "sk-test-local-endpoint-5d1e";

/// Two tasks of one module, both arms: four sessions of one request each.
fn local_run(base_url: &str, results: &Path, exp: &str, extra: &[&str]) -> Command {
    let mut c = pipeline();
    c.env_remove("OPENAI_API_KEY")
        .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave,two_tickets_for_globex", "--models", MODEL, "--seed", "1"])
        .args(["--exp-name", exp, "--base-url", base_url, "--results-dir"])
        .arg(results)
        .args(extra);
    c
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_loopback_endpoint_runs_without_a_key_and_every_record_says_auth_none() {
    let fake = FakeModel::start(Mode::Native);
    assert!(fake.base_url.starts_with("http://127.0.0.1:"));
    let tmp = tempfile::tempdir().unwrap();
    let out = local_run(&fake.base_url, tmp.path(), "e", &[]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("requests carry no key"), "the run says it goes without a key: {t}");
    let seen = fake.authorization();
    assert_eq!(seen.len(), 1 + 1 + 4, "the listing, the probe and four sessions' requests");
    assert!(seen.iter().all(Option::is_none), "no Authorization header at all: {seen:?}");
    let recs = records(&tmp.path().join("e"));
    assert_eq!(recs.len(), 4);
    for r in &recs {
        assert_eq!(r["auth"], "none", "{r}");
        assert_eq!(r["validity"]["class"], "valid");
    }

    // The same endpoint with the key set: it is sent, and the records say so.
    let fake = FakeModel::start(Mode::Native);
    let out = local_run(&fake.base_url, tmp.path(), "with_key", &[]).env("OPENAI_API_KEY", KEY).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(fake.authorization().iter().all(|a| a.as_deref() == Some(format!("Bearer {KEY}").as_str())));
    let recs = records(&tmp.path().join("with_key"));
    assert_eq!(recs.len(), 4);
    assert!(recs.iter().all(|r| r["auth"] == "key"), "{recs:?}");
}

#[test]
fn parallel_jobs_reach_the_server_at_once() {
    // Each session request waits for a second one to arrive: with --jobs 2 they meet.
    let fake = FakeModel::start(Mode::Rendezvous { parties: 2, wait: Duration::from_secs(20) });
    let tmp = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = local_run(&fake.base_url, tmp.path(), "e", &["--jobs", "2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(fake.session_requests(), 4);
    assert_eq!(fake.max_in_flight(), 2, "two jobs, two requests in flight at once");
    assert!(started.elapsed() < Duration::from_secs(20), "the requests met rather than timing out one by one: {:?}", started.elapsed());
    assert_eq!(records(&tmp.path().join("e")).len(), 4);

    // The measure can tell: one job never has two requests in flight.
    let fake = FakeModel::start(Mode::Rendezvous { parties: 2, wait: Duration::from_millis(200) });
    let out = local_run(&fake.base_url, tmp.path(), "one_job", &["--jobs", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(fake.session_requests(), 4);
    assert_eq!(fake.max_in_flight(), 1);
}

/// A gateway whose 400 quotes the headers it was sent: the key and a `--header` value come back
/// in every session's error. Nothing written or printed holds either (issue: a two-session run
/// wrote the key into both records and both transcripts).
#[test]
fn secrets_a_gateway_echoes_reach_no_file_and_no_output() {
    const HEADER_VALUE: &str = "gw-secret-31d7a0c4-never-written";
    let fake = FakeModel::start(Mode::EchoingBadRequestInSessions);
    let tmp = tempfile::tempdir().unwrap();
    let header = format!("X-Gateway-Token={HEADER_VALUE}");
    let out =
        local_run(&fake.base_url, tmp.path(), "echo", &["--header", &header, "--max-consecutive-invalid", "10"]).env("OPENAI_API_KEY", KEY).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(3), "completed with invalid sessions: {t}");
    assert_eq!(fake.session_requests(), 4, "every session reached the gateway: {t}");
    let files = common::all_files(&tmp.path().join("echo"));
    let transcripts = files.iter().filter(|(p, _)| p.to_string_lossy().ends_with(".transcript.jsonl")).count();
    assert_eq!(transcripts, 4, "{files:?}");
    let mut echoed = 0;
    for (path, bytes) in &files {
        let content = String::from_utf8_lossy(bytes);
        for secret in [KEY, HEADER_VALUE] {
            assert!(!content.contains(secret), "{} holds a secret", path.display());
        }
        echoed += usize::from(content.contains("Headers received") && content.contains("<redacted>"));
    }
    assert!(echoed >= 8, "the gateway's words are kept, redacted, in every record and transcript ({echoed} files)");
    for secret in [KEY, HEADER_VALUE] {
        assert!(!t.contains(secret), "printed: {t}");
    }
}
