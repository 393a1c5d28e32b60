//! The model dialects end to end: the real binary against fakes that follow each provider's
//! documented rules and answer with their verbatim error bodies (`common::provider_fakes`).
//! For each provider: the preflight passes, or refuses with the provider's words and a hint
//! naming the flag to change (exit 1, nothing written); a two-session run is valid; the
//! parameters go out under the provider's names and only when the plan sets them; usage
//! (cached, reasoning) lands in the records.

use crate::common;

use std::path::Path;
use std::process::Output;

use crate::common::provider_fakes::{Provider, ProviderFake, REASONING_MODEL};
use crate::common::{pipeline, records};
use serde_json::{Value, json};

const KEY_ENV: &str = "DIALECT_TEST_KEY";
const KEY: &str = "sk-dialect-test-9a4f7c21e0";

/// One task of one module, both arms: two sessions of one request each.
fn run(base_url: &str, results: &Path, exp: &str, model: &str, extra: &[&str]) -> Output {
    pipeline()
        .env(KEY_ENV, KEY)
        .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--k", "1", "--models", model])
        .args(["--api-key-env", KEY_ENV, "--exp-name", exp, "--base-url", base_url, "--results-dir"])
        .arg(results)
        .args(extra)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A valid two-session run: exit 0, two valid records.
fn valid_run(out: &Output, exp: &Path) -> Vec<Value> {
    let t = text(out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let recs = records(exp);
    assert_eq!(recs.len(), 2, "{t}");
    for r in &recs {
        assert_eq!(r["validity"]["class"], "valid", "{r}");
    }
    recs
}

/// Refused before any session: exit 1, the provider's words and the hint on stderr, nothing
/// written under the results folder.
fn refused(out: &Output, results: &Path, says: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(out));
    for s in says {
        assert!(err.contains(s), "stderr lacks {s:?}:\n{err}");
    }
    assert!(!err.contains("stack backtrace"), "one clean error, no backtrace:\n{err}");
    let written: Vec<_> = std::fs::read_dir(results).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    assert!(written.is_empty(), "nothing written: {written:?}");
}

/// Every session request and the probe carry the same parameters: the preflight sends nothing
/// the run would not send.
fn same_parameters_everywhere(fake: &ProviderFake) -> Value {
    let sessions = fake.session_requests();
    assert_eq!(sessions.len(), 2);
    let probe = fake.probes().pop().expect("a probe");
    let mut params = probe.parameters();
    for s in &sessions {
        assert_eq!(s.parameters(), params, "a session sent other parameters than the probe");
    }
    params.as_object_mut().unwrap().remove("model");
    params
}

#[test]
fn a_reasoning_model_runs_from_the_readme_command_with_no_extra_flag() {
    let fake = ProviderFake::start(Provider::OpenAiReasoning, KEY, REASONING_MODEL);
    let tmp = tempfile::tempdir().unwrap();
    let recs = valid_run(&run(&fake.base_url, tmp.path(), "plain", REASONING_MODEL, &[]), &tmp.path().join("plain"));
    // Neither a temperature nor a limit: the provider's default, and the records say so.
    assert_eq!(same_parameters_everywhere(&fake), json!({ "stream": false }));
    for r in &recs {
        assert_eq!(r["model"]["temperature"], "provider_default", "{r}");
        assert_eq!(r["fingerprint"]["temperature"], "provider_default");
        assert_eq!(r["model"].get("reasoning_effort"), None);
        assert_eq!(r["totals"]["reasoning_tokens"], 32, "the reasoning part of the output, as reported");
        assert_eq!(r["totals"]["cached_input_tokens"], 64);
        assert_eq!(r["totals"]["output_tokens"], 40);
    }
}

#[test]
fn openai_dialect_pins_the_effort_and_sends_the_limit_as_max_completion_tokens() {
    let fake = ProviderFake::start(Provider::OpenAiReasoning, KEY, REASONING_MODEL);
    let tmp = tempfile::tempdir().unwrap();
    let flags = ["--dialect", "openai", "--reasoning-effort", "low", "--max-tokens", "4000", "--seed", "5"];
    let out = run(&fake.base_url, tmp.path(), "pinned", REASONING_MODEL, &flags);
    let recs = valid_run(&out, &tmp.path().join("pinned"));
    assert_eq!(same_parameters_everywhere(&fake), json!({ "stream": false, "max_completion_tokens": 4000, "reasoning_effort": "low", "seed": 5 }));
    assert!(fake.seen().iter().all(|s| s.header("authorization") == Some(&format!("Bearer {KEY}"))));
    for r in &recs {
        for at in ["model", "fingerprint"] {
            assert_eq!((r[at]["dialect"].as_str(), r[at]["reasoning_effort"].as_str()), (Some("openai"), Some("low")), "{at}: {r}");
            assert_eq!(r[at]["max_tokens_param"], "max_completion_tokens");
        }
    }
    let manifest = common::manifest(&tmp.path().join("pinned"));
    assert!(manifest.to_string().contains("\"reasoning_effort\":\"low\""), "the manifest pins the effort: {manifest}");

    // The report shows the effort in its provenance and reasoning tokens beside output tokens.
    let out = pipeline().args(["aggregate", "--exp-name", "pinned", "--results-dir"]).arg(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let md = std::fs::read_to_string(tmp.path().join("pinned/report.md")).unwrap();
    assert!(md.contains("dialect openai") && md.contains("reasoning effort low") && md.contains("4000 (as max_completion_tokens)"), "{md}");
    assert!(md.lines().any(|l| l.starts_with("| reasoning tokens") && l.contains("32")), "a reasoning-token row with the recorded figure:\n{md}");

    // Another effort is another plan: the resume refuses, naming the field.
    let out = run(
        &fake.base_url,
        tmp.path(),
        "pinned",
        REASONING_MODEL,
        &["--dialect", "openai", "--reasoning-effort", "high", "--max-tokens", "4000", "--seed", "5"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("reasoning_effort: now high, recorded low"), "{}", text(&out));
}

#[test]
fn what_a_reasoning_model_rejects_is_refused_with_its_words_and_the_flag_to_change() {
    let fake = ProviderFake::start(Provider::OpenAiReasoning, KEY, REASONING_MODEL);
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["--temperature", "0"],
            &["Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.", "--temperature default"],
        ),
        (&["--reasoning-effort", "extreme"], &["Supported values are: 'minimal', 'low', 'medium', and 'high'.", "--reasoning-effort"]),
        (
            &["--max-tokens", "900", "--max-tokens-param", "max_tokens"],
            &["Use 'max_completion_tokens' instead.", "--max-tokens-param max_completion_tokens", "rejected_parameter"],
        ),
    ];
    for (flags, says) in cases {
        let tmp = tempfile::tempdir().unwrap();
        refused(&run(&fake.base_url, tmp.path(), "bad", REASONING_MODEL, flags), tmp.path(), says);
    }
    assert!(fake.session_requests().is_empty(), "nothing spent past the probe");
}

#[test]
fn a_chat_model_takes_a_pinned_temperature_and_refuses_one_out_of_range() {
    let fake = ProviderFake::start(Provider::OpenAiChat, KEY, "gpt-4.1-mini");
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&fake.base_url, tmp.path(), "t0", "gpt-4.1-mini", &["--dialect", "openai", "--temperature", "0", "--seed", "1", "--max-tokens", "800"]);
    let recs = valid_run(&out, &tmp.path().join("t0"));
    assert_eq!(same_parameters_everywhere(&fake), json!({ "stream": false, "temperature": 0.0, "seed": 1, "max_completion_tokens": 800 }));
    assert_eq!(recs[0]["model"]["temperature"], 0.0);

    let tmp = tempfile::tempdir().unwrap();
    let out = run(&fake.base_url, tmp.path(), "hot", "gpt-4.1-mini", &["--dialect", "openai", "--temperature", "2.5"]);
    refused(&out, tmp.path(), &["Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 2.5 instead.", "--temperature"]);
}

#[test]
fn azure_sends_the_key_as_api_key_keeps_the_api_version_and_refuses_a_url_without_it() {
    let fake = ProviderFake::start(Provider::Azure, KEY, REASONING_MODEL);
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&fake.base_url, tmp.path(), "az", REASONING_MODEL, &["--dialect", "azure", "--reasoning-effort", "medium", "--max-tokens", "2000"]);
    let recs = valid_run(&out, &tmp.path().join("az"));
    assert_eq!(same_parameters_everywhere(&fake), json!({ "stream": false, "reasoning_effort": "medium", "max_completion_tokens": 2000 }));
    for s in fake.seen() {
        assert_eq!(s.header("api-key"), Some(KEY), "{s:?}");
        assert_eq!(s.header("authorization"), None, "Azure's key goes in api-key only");
        assert_eq!(s.query.as_deref(), Some("api-version=2024-10-21"), "every request keeps the version: {s:?}");
    }
    assert!(fake.seen().iter().any(|s| s.path.ends_with(&format!("/openai/deployments/{REASONING_MODEL}/chat/completions"))));
    assert_eq!(recs[0]["fingerprint"]["base_url"], fake.base_url, "the version is part of the pinned endpoint");

    // The same deployment URL without its version: Azure's 404, and the fix.
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&fake.base_url_without_query, tmp.path(), "az", REASONING_MODEL, &["--dialect", "azure"]);
    refused(&out, tmp.path(), &[r#"Resource not found"#, "api-version", "--base-url"]);
}

#[test]
fn anthropic_runs_although_its_listing_refuses_a_bearer_key_and_what_it_ignores_is_refused_first() {
    let model = "claude-sonnet-4-5";
    let fake = ProviderFake::start(Provider::Anthropic, KEY, model);
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&fake.base_url, tmp.path(), "claude", model, &["--dialect", "anthropic", "--temperature", "0", "--max-tokens", "1024"]);
    let recs = valid_run(&out, &tmp.path().join("claude"));
    assert_eq!(same_parameters_everywhere(&fake), json!({ "stream": false, "temperature": 0.0, "max_tokens": 1024 }));
    let check = common::manifest(&tmp.path().join("claude"));
    assert!(check.to_string().contains("invalid x-api-key"), "the listing's refusal is recorded in the preflight: {check}");
    assert_eq!(recs[0]["totals"]["reasoning_tokens"], Value::Null, "not reported: null, never 0");

    let before = fake.seen().len();
    for (flags, says) in [
        (&["--dialect", "anthropic", "--reasoning-effort", "high"][..], "ignores reasoning_effort"),
        (&["--dialect", "anthropic", "--seed", "3"][..], "ignores seed"),
        (&["--dialect", "anthropic", "--temperature", "1.5"][..], "caps temperature at 1"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        refused(&run(&fake.base_url, tmp.path(), "claude", model, flags), tmp.path(), &[says]);
    }
    assert_eq!(fake.seen().len(), before, "refused before any request: nothing spent");
}

#[test]
fn gemini_lists_models_with_a_prefix_rejects_unknown_fields_and_says_a_bad_key_with_a_400() {
    let model = "gemini-2.5-flash";
    let fake = ProviderFake::start(Provider::Gemini, KEY, model);
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&fake.base_url, tmp.path(), "gem", model, &["--dialect", "gemini", "--reasoning-effort", "low", "--temperature", "0.2"]);
    let recs = valid_run(&out, &tmp.path().join("gem"));
    assert_eq!(same_parameters_everywhere(&fake), json!({ "stream": false, "reasoning_effort": "low", "temperature": 0.2 }));
    assert!(common::manifest(&tmp.path().join("gem")).to_string().contains(&format!("lists `{model}`")), "models/{model} is the model");
    assert_eq!(recs[0]["totals"]["reasoning_tokens"], 32);

    let tmp = tempfile::tempdir().unwrap();
    let out = pipeline()
        .env(KEY_ENV, "wrong-key-123456")
        .args(["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--models", model, "--dialect", "gemini"])
        .args(["--api-key-env", KEY_ENV, "--base-url", &fake.base_url, "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    refused(&out, tmp.path(), &["unauthorized", "API key not valid. Please pass a valid API key.", KEY_ENV]);

    let tmp = tempfile::tempdir().unwrap();
    refused(
        &run(&fake.base_url, tmp.path(), "gem", model, &["--dialect", "gemini", "--reasoning-effort", "minimal"]),
        tmp.path(),
        &["Invalid reasoning_effort: minimal. Valid values are: high, low, medium, none", "--reasoning-effort"],
    );
}

#[test]
fn openrouter_gets_the_effort_as_its_reasoning_object_and_its_usage_lands_in_the_records() {
    let model = "openai/gpt-5-mini";
    let fake = ProviderFake::start(Provider::OpenRouter, KEY, model);
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&fake.base_url, tmp.path(), "or", model, &["--dialect", "openrouter", "--reasoning-effort", "high", "--max-tokens", "3000"]);
    let recs = valid_run(&out, &tmp.path().join("or"));
    assert_eq!(same_parameters_everywhere(&fake), json!({ "stream": false, "reasoning": { "effort": "high" }, "max_tokens": 3000 }));
    for r in &recs {
        assert_eq!((r["totals"]["reasoning_tokens"].as_u64(), r["totals"]["cached_input_tokens"].as_u64()), (Some(32), Some(64)), "{r}");
        assert_eq!(r["model"]["dialect"], "openrouter");
    }
}
