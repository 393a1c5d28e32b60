//! A fixture experiment: what a model run and an oracle run of one module leave behind — the
//! manifest, records with fingerprints and transcripts — written without running anything.
//! `fake-model` with k = 6 and the oracle's rep 1 of two tool_orchestrator tasks: the oracle's
//! reps 2–6 are planned and missing, as in an oracle run cut short.

use std::path::Path;

use records::manifest::{ManifestServer, ManifestTask};
use records::{
    ExperimentManifest, Fingerprint, HarnessTimings, InvalidReason, ModelSpec, Offered, OracleFloor, Provider, Role, SessionRecord, ToolCallRecord, Totals,
    TurnRecord, Usage, Validity, Verdict, VerifierOutcome,
};
use serde_json::{Value, json};

pub const MODEL: &str = "fake-model";
pub const TASKS: [&str; 2] = ["lena_goes_on_leave", "two_tickets_for_globex"];
pub const REPS: u32 = 6;

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
            profile_sha256: None,
            tokenizer: None,
        }
    }
}

fn fingerprint(r: &SessionRecord) -> Fingerprint {
    let oracle = r.model.is_oracle();
    Fingerprint {
        model: r.model.clone(),
        base_url: (!oracle).then(|| "http://127.0.0.1:9/v1".into()),
        transport: records::Transport::Stdio,
        world_seed: 42,
        world_scale: 1,
        world_scale_override: None,
        catalogue: None,
        distractors: None,
        distractors_sha256: None,
        task_sha256: format!("sha-{}", r.task),
        turn_cap: 16,
        manifest_sha256: r.manifest_sha256.clone(),
        arm_sha256: None,
        system_prompt_sha256: (!oracle).then(|| "prompt".into()),
        build_commit: Some("05c1580457ce1a0702ca9fdf64ab3881fcff4ca2".into()),
        build_dirty: Some(false),
        preflight_skipped: false,
        session_mode: None,
        design: None,
        attack: None,
        attack_sha256: None,
        protocol: None,
    }
}

/// One session. The pattern spends fewer tokens; the pattern's rep 2 of the first task fails
/// its verifier, and the control's rep 6 of the second task is invalid.
fn record(experiment: &str, oracle: bool, role: Role, task: &str, rep: u32) -> SessionRecord {
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
        experiment: experiment.into(),
        module: "tool_orchestrator".into(),
        server: server.into(),
        role,
        task: task.into(),
        task_sha256: format!("sha-{task}"),
        split: Default::default(),
        rep,
        draw: None,
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
                distractor: false,
                latency_ms: 2.0,
                at_ms: None,
                arguments_sha256: None,
            })
            .collect(),
        offered: Offered {
            functions: vec!["users_list".into(), "tickets_get".into()],
            resource_functions: false,
            definitions_bytes: 400,
            distractors: 0,
            distractors_bytes: 0,
        },
        final_answer: Some("Moved the tickets.".into()),
        verifier: (!invalid).then(|| VerifierOutcome {
            verdict: if failed { Verdict::Failed } else { Verdict::Passed },
            reasons: if failed { vec!["ticket 301 is still assigned to Lena Novak".into()] } else { vec![] },
            elapsed_ms: 3.0,
            checks: vec![],
            grounding: None,
            class: None,
            changed_tables: None,
            world_diff_sha256: None,
            graded: None,
            collateral: None,
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
            tokenizer: None,
            definitions_tokens: None,
            input_tokens: None,
            output_tokens: None,
        }),
        cost_usd: None,
        harness: HarnessTimings::default(),
        server_info: None,
        external_arm: None,
        retrieval: None,
        conversation: None,
        superseded: None,
        earlier_grades: Vec::new(),
        attack: None,
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

/// Writes the experiment `name` into `dir` (which names the folder); returns how many sessions it
/// recorded.
pub fn write(dir: &Path, name: &str) -> usize {
    let t = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
    let manifest = ExperimentManifest {
        schema_version: 1,
        experiment: name.into(),
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
        distractors: None,
        sequential: None,
        attack: None,
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
                    let r = record(name, oracle, role, task, rep);
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
