//! The backend against tools no one in this project wrote: its OpenAPI document checked by
//! openapi-spec-validator, and the API fuzzed from that document by schemathesis (fixed seed and
//! example count, so a run is reproducible and bounded). Both come from the venv
//! `.ci/test-tools` installs.

use crate::common;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::TestBackend;

/// The validator's verdict on `doc`: the error messages, one per line (none when valid).
const VALIDATE: &str = r#"
import json, sys
from openapi_spec_validator import OpenAPIV31SpecValidator
doc = json.load(open(sys.argv[1]))
errors = list(OpenAPIV31SpecValidator(doc).iter_errors())
for e in errors:
    print("/".join(str(p) for p in e.absolute_path) + ": " + e.message.splitlines()[0])
print(f"{len(errors)} errors")
"#;

#[test]
fn the_openapi_document_is_valid_openapi_3_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.json");
    let doc = backend::openapi_document();
    assert_eq!(doc["openapi"].as_str().map(|v| &v[..4]), Some("3.1."), "the document declares OpenAPI 3.1");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = std::process::Command::new(common::tools::python()).arg("-c").arg(VALIDATE).arg(&path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the validator failed to run: {}{}", stdout, String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.lines().last(), Some("0 errors"), "openapi-spec-validator rejects the document:\n{stdout}");

    // What the validator cannot know: every operation declares the errors its extractors answer,
    // and every response says what it means.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            let mut expected = vec!["414", "431", "500"];
            if op.get("parameters").is_some_and(|p| p.as_array().is_some_and(|p| !p.is_empty())) || op.get("requestBody").is_some() {
                expected.push("400");
            }
            if op.get("requestBody").is_some() {
                expected.extend(["413", "415", "422"]);
            }
            for status in expected {
                assert!(responses.contains_key(status), "{method} {path} does not declare {status}");
            }
        }
    }
    // The schemas say what the handlers enforce.
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["NewTicket"]["properties"]["title"]["maxLength"], 200);
    assert_eq!(schemas["NewTicket"]["properties"]["title"]["minLength"], 1);
    assert!(schemas["NewTicket"]["properties"]["title"]["pattern"].as_str().unwrap().contains("\\u3000"), "non-blank pattern");
    assert_eq!(schemas["NewReview"]["properties"]["comments"]["maxItems"], 100);
    assert_eq!(schemas["NewComment"]["properties"]["line"]["minimum"], 1);
    assert!(schemas["NewComment"].get("allOf").is_none(), "NewComment is one closed object that can be satisfied");
    let list = &doc["paths"]["/tickets"]["get"]["parameters"];
    let limit = list.as_array().unwrap().iter().find(|p| p["name"] == "limit").unwrap();
    assert_eq!((&limit["schema"]["minimum"], &limit["schema"]["maximum"], &limit["schema"]["type"]), (&1.into(), &200.into(), &"integer".into()));
    let q = list.as_array().unwrap().iter().find(|p| p["name"] == "q").unwrap();
    assert_eq!(q["schema"]["pattern"], backend::openapi::NO_NUL_PATTERN);
}

/// Flags of every schemathesis run: reproducible (fixed seed, one worker, no example database)
/// and bounded (examples per operation, a request timeout).
fn schemathesis(base: &str, mode: &str, examples: u32, extra: &[&str]) -> (bool, String, Duration) {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/schemathesis.toml");
    // schemathesis writes a cache into the current directory: a scratch folder keeps it out.
    let scratch = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut child = std::process::Command::new(common::tools::python())
        .current_dir(scratch.path())
        .args(["-c", "import sys; from schemathesis.cli import schemathesis; sys.argv[0] = 'st'; sys.exit(schemathesis())"])
        .args(["--no-color", "--config-file", config, "run", &format!("{base}/openapi.json")])
        .args(["--mode", mode, "--max-examples", &examples.to_string(), "--seed", "20261201", "--workers", "1"])
        .args(["--generation-database", "none", "--request-timeout", "10"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A hung run fails the test instead of stalling CI.
    let deadline = started + Duration::from_secs(240);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("schemathesis ran past 240 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text, started.elapsed())
}

/// "2327 generated, 2327 passed" → 2327.
fn generated(output: &str) -> u64 {
    output
        .lines()
        .find_map(|l| l.trim().split_once(" generated").and_then(|(n, _)| n.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no test case count in the schemathesis output:\n{output}"))
}

async fn row_counts(b: &TestBackend) -> BTreeMap<String, i64> {
    let pool = b.world.pool();
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE '\\_sqlx%' ORDER BY 1")
            .fetch_all(&pool)
            .await
            .unwrap();
    let mut counts = BTreeMap::new();
    for t in tables {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM \"{t}\""))).fetch_one(&pool).await.unwrap();
        counts.insert(t, n);
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzzing_from_the_openapi_document_finds_nothing_and_rejected_writes_leave_no_row() {
    let b = TestBackend::start().await;

    // Invalid input only, every operation (reset included: a rejected reset must not reset).
    let counts_before = row_counts(&b).await;
    let hash_before = b.dump_hash().await;
    let base = b.base.clone();
    let (ok, output, took) = tokio::task::spawn_blocking(move || schemathesis(&base, "negative", 40, &["--phases", "coverage,fuzzing"])).await.unwrap();
    assert!(ok, "schemathesis found failures with invalid input:\n{output}");
    let negative = generated(&output);
    assert!(negative > 500, "only {negative} invalid requests were generated:\n{output}");
    assert_eq!(row_counts(&b).await, counts_before, "rejected requests added or removed rows");
    assert_eq!(b.dump_hash().await, hash_before, "rejected requests changed the data");
    eprintln!("schemathesis --mode negative: {negative} test cases in {:.1} s, no row changed", took.as_secs_f64());

    // Valid and invalid input, all phases, checks as configured in tests/schemathesis.toml:
    // no 5xx, every status declared, every body (errors included) JSON that matches its schema,
    // valid input accepted, invalid input refused. The control plane (reset) is not in the
    // document: it is not part of the API servers are given.
    let base = b.base.clone();
    let (ok, output, took) = tokio::task::spawn_blocking(move || schemathesis(&base, "all", 60, &[])).await.unwrap();
    assert!(ok, "schemathesis found failures:\n{output}");
    let all = generated(&output);
    assert!(all > 2000, "only {all} test cases were generated:\n{output}");
    // Warnings stay allowed: schemathesis warns where most generated writes are refused for
    // what no schema can say (an id that refers to no row, an `If-Match` version that is stale).
    assert!(output.contains(&format!("{all} generated, {all} passed")), "not every test case passed:\n{output}");
    eprintln!("schemathesis --mode all: {all} test cases in {:.1} s", took.as_secs_f64());
    b.shutdown().await;
}
