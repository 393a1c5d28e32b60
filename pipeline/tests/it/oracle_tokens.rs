//! The oracle's floors counted in a known tokenizer (`--tokens`), beside the bytes / 4 estimate
//! that stays: the records carry the count and its label, the counts are of the pieces a model
//! would be sent, and a run without a tokenizer has no count at all (absent, never 0).

use crate::common::{self, records};

const TASK: &str = "checkout_latency_fix";

fn oracle_run(exp: &str, results: &std::path::Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let out = common::pipeline()
        .args(["--module", "resource_gateway", "--models", "oracle", "--tasks", TASK, "--k", "1", "--exp-name", exp, "--results-dir"])
        .arg(results)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    records(&results.join(exp))
}

fn o200k(text: &str) -> u64 {
    agent::tokens::Encoding::O200kBase.count(text)
}

#[test]
fn oracle_floors_are_counted_in_the_tokenizer_given_and_labelled() {
    let tmp = tempfile::tempdir().unwrap();
    let recs = oracle_run("counted", tmp.path(), &["--tokens", "o200k_base"]);
    assert_eq!(recs.len(), 2, "both arms");
    // What `pipeline servers --tokens o200k_base` says each server's definitions cost.
    // The built-in arms this run used; no example arm's server started for a listing.
    std::fs::create_dir(tmp.path().join("no-arms")).unwrap();
    let out = common::pipeline().args(["servers", "--json", "--tokens", "o200k_base", "--arms-dir"]).arg(tmp.path().join("no-arms")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed: Vec<serde_json::Value> = String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for r in &recs {
        let server = r["server"].as_str().unwrap();
        let o = &r["oracle"];
        assert_eq!(o["tokenizer"], "o200k_base", "{o}");
        assert_eq!(r["model"]["tokenizer"], "o200k_base", "in the fingerprinted model: {}", r["model"]);
        // The estimate stays, labelled as one.
        assert!(o["input_estimate_method"].as_str().unwrap().starts_with("estimate"));
        assert!(o["estimated_input_tokens"].as_u64().unwrap() > 0);
        let definitions = listed.iter().find(|l| l["name"] == server).unwrap()["definitions_tokens"].as_u64().unwrap();
        assert_eq!(o["definitions_tokens"].as_u64(), Some(definitions), "{server}: the footprint `servers` prints");
        // The turns again, from the transcript, each piece counted here.
        let transcript = tmp.path().join("counted").join(format!("oracle__{server}")).join(format!("{TASK}__rep1.transcript.jsonl"));
        let events: Vec<serde_json::Value> = std::fs::read_to_string(transcript).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let task_text = events.iter().find(|e| e["event"] == "start").unwrap()["task"].as_str().unwrap();
        let answer = events.iter().find(|e| e["event"] == "answer").unwrap()["text"].as_str().unwrap();
        let calls: Vec<(u64, u64)> = events
            .iter()
            .filter(|e| e["event"] == "call")
            .map(|e| {
                let args = if e["arguments"].is_null() { String::new() } else { e["arguments"].to_string() };
                (o200k(&args), o200k(e["result"].as_str().unwrap()))
            })
            .collect();
        assert!(!calls.is_empty(), "{server} calls something");
        let fixed = o200k(agent::SYSTEM_PROMPT) + o200k(task_text) + definitions;
        let n = calls.len() as u64;
        let history: u64 = calls.iter().zip(0..).map(|((a, r), j)| (n - j) * (a + r)).sum();
        assert_eq!(o["input_tokens"].as_u64(), Some((n + 1) * fixed + history), "{server}");
        assert_eq!(o["output_tokens"].as_u64(), Some(calls.iter().map(|(a, _)| a).sum::<u64>() + o200k(answer)), "{server}");
    }

    // Without a tokenizer: the estimate alone, and no count field at all.
    let recs = oracle_run("estimated", tmp.path(), &[]);
    for r in &recs {
        for field in ["tokenizer", "definitions_tokens", "input_tokens", "output_tokens"] {
            assert!(r["oracle"].get(field).is_none(), "{field} in {}", r["oracle"]);
        }
        assert!(r["model"].get("tokenizer").is_none());
        assert!(r["oracle"]["estimated_input_tokens"].as_u64().unwrap() > 0);
    }
}

#[test]
fn tokens_flag_refuses_a_bad_name_and_a_run_without_the_oracle_in_one_line() {
    for (args, expected) in [
        (
            &["--module", "resource_gateway", "--models", "oracle", "--tokens", "o200k"][..],
            "error: unknown tokenizer \"o200k\": use o200k_base, cl100k_base, or llama:URL",
        ),
        (
            &["--module", "resource_gateway", "--models", "gpt-4o", "--tokens", "o200k_base"][..],
            "error: --tokens o200k_base: the tokens it counts are the oracle's floors",
        ),
        (
            &["--module", "resource_gateway", "--models", "oracle", "--tokens", "llama:http://127.0.0.1:9"][..],
            "error: --tokens llama:http://127.0.0.1:9: the llama.cpp server at http://127.0.0.1:9 could not be reached",
        ),
    ] {
        let out = common::pipeline().args(args).env("RUST_BACKTRACE", "1").env("OPENAI_API_KEY", "unused").output().unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(expected), "{stderr}");
    }
}
