//! Fixture helpers shared by the integration tests: records with known answers, written in the
//! pipeline's layout, with or without fingerprints, manifests and replaced attempts.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use records::manifest::{ManifestServer, ManifestTask, RunStop};
use records::{
    ExperimentManifest, Fingerprint, HarnessTimings, InvalidReason, ModelSpec, Offered, OracleFloor, SessionRecord, ToolCallRecord, Totals, Validity,
};
use records::{Verdict as V, VerifierOutcome as Outcome};

#[derive(Clone, Copy)]
pub struct S {
    pub verdict: Option<V>,
    pub invalid: Option<InvalidReason>,
    pub turns: usize,
    pub input: Option<u64>,
    pub cached: Option<u64>,
    pub output: Option<u64>,
    /// The conversation outgrew the context window.
    pub overflow: bool,
}

pub fn ok(v: V, input: u64, turns: usize) -> S {
    S { verdict: Some(v), invalid: None, turns, input: Some(input), cached: Some(0), output: Some(10), overflow: false }
}

pub fn bad(reason: InvalidReason) -> S {
    S { verdict: None, invalid: Some(reason), turns: 1, input: Some(50), cached: Some(0), output: Some(5), overflow: false }
}

pub fn model(id: &str) -> ModelSpec {
    if id == "oracle" {
        ModelSpec::oracle()
    } else {
        ModelSpec {
            id: id.into(),
            provider: records::Provider::OpenAiCompatible,
            temperature: Some(records::Temperature::Value(0.0)),
            max_tokens: None,
            seed: None,
            dialect: None,
            max_tokens_param: None,
            reasoning_effort: None,
            profile_sha256: None,
            tokenizer: None,
        }
    }
}

pub fn record(m: &str, module: &str, role: &str, task: &str, rep: u32, s: S) -> SessionRecord {
    let oracle = m == "oracle";
    let t = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
    SessionRecord {
        schema_version: 1,
        experiment: "fixture".into(),
        module: module.into(),
        server: format!("{module}_{role}"),
        role: if role == "pattern" { records::Role::Pattern } else { records::Role::Control },
        task: task.into(),
        task_sha256: "00".into(),
        split: Default::default(),
        rep,
        draw: None,
        arm_position: 1,
        model: model(m),
        auth: None,
        manifest_sha256: "00".into(),
        system_prompt_sha256: None,
        git_commit: None,
        git_dirty: None,
        world_seed: 1,
        world_scale: 1,
        transport: None,
        fingerprint: None,
        fingerprint_sha256: None,
        attempt: None,
        started_at: t,
        ended_at: t,
        turn_cap: 20,
        turn_cap_hit: false,
        context_exceeded: s.overflow,
        tool_call_as_text: false,
        unparseable_output: false,
        turns: s.turns,
        turn_records: vec![],
        totals: Totals { input_tokens: s.input, cached_input_tokens: s.cached, uncached_input_tokens: None, output_tokens: s.output, reasoning_tokens: None },
        provider_retries: None,
        failed_turn: None,
        tool_calls: vec![ToolCallRecord {
            turn: 1,
            kind: records::CallKind::Tool,
            name: "x".into(),
            args_bytes: 2,
            result_bytes: 2,
            is_error: task == "t2" && role == "control",
            invalid_arguments: false,
            unknown_tool: false,
            distractor: false,
            latency_ms: 1.0,
            at_ms: None,
            arguments_sha256: None,
        }],
        offered: Offered::default(),
        final_answer: None,
        verifier: s.verdict.map(|verdict| Outcome {
            verdict,
            reasons: if verdict == V::Passed { vec![] } else { vec!["no".into()] },
            elapsed_ms: 1.0,
            checks: vec![],
            grounding: grounding(task, rep, verdict),
            class: None,
            changed_tables: None,
            world_diff_sha256: None,
            graded: None,
            // One side effect in the fixture: t1's first pattern session also wrote a row of a
            // table its task leaves alone.
            collateral: Some(records::Collateral {
                footprint: "g7".into(),
                footprint_sha256: None,
                writes: if task == "t1" && role == "pattern" && rep == 1 {
                    vec![records::CollateralWrite {
                        table: "customers".into(),
                        id: 4,
                        op: "updated".into(),
                        class: records::CollateralClass::UntouchedTable,
                        columns: vec!["tier".into()],
                    }]
                } else {
                    vec![]
                },
            }),
        }),
        validity: match s.invalid {
            None => Validity::Valid,
            Some(r) => Validity::invalid(r, "boom"),
        },
        oracle: oracle.then(|| OracleFloor {
            calls: if role == "pattern" { 2 } else { 5 },
            schema_bytes: 400,
            args_bytes: 40,
            result_bytes: if role == "pattern" { 200 } else { 800 },
            estimated_tokens: if role == "pattern" { 160 } else { 310 },
            estimate_method: "bytes/4".into(),
            // t2's pattern record predates the input estimate: that role's total must be absent.
            estimated_input_tokens: (task != "t2" || role == "control").then_some(if role == "pattern" { 300 } else { 900 }),
            input_estimate_method: Some("turns".into()),
            tokenizer: None,
            definitions_tokens: None,
            input_tokens: None,
            output_tokens: None,
        }),
        cost_usd: None,
        harness: HarnessTimings::default(),
        // What the arm's server answered: every fixture session spoke the default revision.
        server_info: Some(records::ServerInfo { name: format!("{module}_{role}"), version: "0.1.0".into(), protocol_version: Some("2025-11-25".into()) }),
        external_arm: None,
        retrieval: None,
        conversation: None,
        superseded: None,
        earlier_grades: Vec::new(),
        attack: None,
    }
}

/// The record folder the pipeline writes `r` into.
pub fn cell_dir(dir: &Path, r: &SessionRecord) -> PathBuf {
    dir.join(format!("{}__{}", r.model.id, r.server))
}

/// Writes `r` where the pipeline would (`<model>__<server>/<task>__rep<k>.json`); returns the path.
pub fn write(dir: &Path, r: &SessionRecord, transcript: bool) -> PathBuf {
    let path = cell_dir(dir, r).join(format!("{}__rep{}.json", r.task, r.rep));
    write_at(&path, r, transcript);
    path
}

pub fn write_at(path: &Path, r: &SessionRecord, transcript: bool) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(r).unwrap()).unwrap();
    if transcript {
        std::fs::write(path.with_extension("transcript.jsonl"), "{\"role\":\"user\",\"content\":\"<do the task> & report\"}\n").unwrap();
    }
}

/// Writes `r` as a replaced attempt: `<model>__<server>/superseded/<task>__rep<k>.attempt<n>.json`,
/// its `superseded` field set.
pub fn write_superseded(dir: &Path, r: &SessionRecord, attempt: u32, reason: &str) -> PathBuf {
    let mut r = r.clone();
    r.attempt = Some(attempt);
    r.superseded = Some(records::session::Superseded { at: r.ended_at, reason: reason.into() });
    let path = cell_dir(dir, &r).join("superseded").join(format!("{}__rep{}.attempt{attempt}.json", r.task, r.rep));
    write_at(&path, &r, true);
    path
}

/// The fingerprint a record of this fixture runs under: consistent with its other fields.
pub fn fingerprint_of(r: &SessionRecord) -> Fingerprint {
    let oracle = r.model.is_oracle();
    Fingerprint {
        model: r.model.clone(),
        base_url: (!oracle).then(|| "http://127.0.0.1:1/v1".into()),
        transport: records::Transport::Stdio,
        world_seed: r.world_seed,
        world_scale: r.world_scale,
        world_scale_override: None,
        catalogue: None,
        distractors: None,
        distractors_sha256: None,
        task_sha256: r.task_sha256.clone(),
        turn_cap: r.turn_cap,
        manifest_sha256: r.manifest_sha256.clone(),
        arm_sha256: None,
        system_prompt_sha256: (!oracle).then(|| "p".into()),
        build_commit: Some("c0ffee".into()),
        build_dirty: Some(false),
        preflight_skipped: false,
        session_mode: None,
        design: None,
        attack: None,
        attack_sha256: None,
        protocol: None,
    }
}

/// `r` with its fingerprint (and the fingerprint's sha256) set, and the fields it holds twice
/// made to agree with it, as the harness writes a record.
pub fn fingerprinted(r: SessionRecord) -> SessionRecord {
    let fp = fingerprint_of(&r);
    under(r, fp)
}

/// `r` under the plan `f` changes its fingerprint to: the record's own copies of the changed
/// fields change with it, so it stays a record the harness could have written.
pub fn with_fingerprint(r: SessionRecord, f: impl FnOnce(&mut Fingerprint)) -> SessionRecord {
    let mut fp = fingerprint_of(&r);
    f(&mut fp);
    under(r, fp)
}

/// `r` carrying `fp`: every field the record holds twice copied from it, its hash set.
fn under(mut r: SessionRecord, fp: Fingerprint) -> SessionRecord {
    r.model = fp.model.clone();
    (r.world_seed, r.world_scale, r.task_sha256, r.turn_cap) = (fp.world_seed, fp.world_scale, fp.task_sha256.clone(), fp.turn_cap);
    (r.manifest_sha256, r.system_prompt_sha256) = (fp.manifest_sha256.clone(), fp.system_prompt_sha256.clone());
    (r.git_commit, r.git_dirty, r.transport) = (fp.build_commit.clone(), fp.build_dirty, Some(fp.transport));
    r.fingerprint_sha256 = Some(fp.sha256());
    r.fingerprint = Some(fp);
    r
}

/// A manifest planning `k` reps of `tasks` (module m1) for `models` on the two m1 arms, matching
/// what [`record`] writes.
pub fn manifest(models: &[&str], tasks: &[&str], k: u32) -> ExperimentManifest {
    let t = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
    ExperimentManifest {
        schema_version: 1,
        experiment: "fixture".into(),
        command: vec!["pipeline".into(), "run".into()],
        git_commit: None,
        git_dirty: None,
        models: models.iter().map(|m| model(m)).collect(),
        servers: [records::Role::Pattern, records::Role::Control]
            .into_iter()
            .map(|role| ManifestServer { name: format!("m1_{role}"), module: "m1".into(), role, manifest_sha256: "00".into() })
            .collect(),
        tasks: tasks
            .iter()
            .map(|t| ManifestTask { key: format!("m1/{t}"), sha256: "00".into(), turn_cap: 20, seed: 1, scale: 1, split: Default::default() })
            .collect(),
        k,
        jobs: 1,
        transport: records::Transport::Stdio,
        session_mode: None,
        created_at: t,
        binary_version: None,
        base_url: None,
        preflight_skipped: false,
        preflight: None,
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
    }
}

pub fn stop(kind: &str, detail: &str) -> RunStop {
    RunStop { kind: kind.into(), detail: detail.into(), at: chrono::DateTime::from_timestamp(1_800_000_100, 0).unwrap() }
}

pub fn write_manifest(dir: &Path, m: &ExperimentManifest) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec_pretty(m).unwrap()).unwrap();
}

/// Writes a passing pair (pattern 100 input tokens, control 200) for each (task, rep).
pub fn pairs(dir: &Path, m: &str, tasks: &[&str], reps: std::ops::RangeInclusive<u32>, map: impl Fn(SessionRecord) -> SessionRecord) {
    for task in tasks {
        for rep in reps.clone() {
            write(dir, &map(record(m, "m1", "pattern", task, rep, ok(V::Passed, 100 + rep as u64, 2))), false);
            write(dir, &map(record(m, "m1", "control", task, rep, ok(V::Passed, 200 + 2 * rep as u64, 4))), false);
        }
    }
}

pub fn opts() -> aggregate::Options {
    aggregate::Options::default()
}

/// An experiment with known answers: null usage, invalid sessions of several reasons, an
/// unpaired session, a could-not-score, two models and oracle floors (one arm lacking an input
/// estimate for t2).
pub fn fixture(dir: &Path) {
    use InvalidReason::*;
    let a = "model-a";
    let null_usage = S { verdict: Some(V::Failed), invalid: None, turns: 2, input: None, cached: None, output: None, overflow: true };
    let no_cached = S { cached: None, ..ok(V::Passed, 110, 2) };
    let cns = S { verdict: Some(V::CouldNotScore), ..ok(V::Passed, 90, 2) };
    let rows: Vec<(&str, &str, &str, u32, S)> = vec![
        // model-a pattern: 7 attempted, 1 invalid, 1 null usage, 1 could-not-score, t2 rep4 unpaired
        (a, "pattern", "t1", 1, ok(V::Passed, 100, 2)),
        (a, "pattern", "t1", 2, no_cached),
        (a, "pattern", "t1", 3, ok(V::Passed, 120, 2)),
        (a, "pattern", "t2", 1, ok(V::Passed, 130, 2)),
        (a, "pattern", "t2", 2, null_usage),
        (a, "pattern", "t2", 3, bad(ProviderError)),
        (a, "pattern", "t2", 4, cns),
        // model-a control: 6 attempted, 1 invalid
        (a, "control", "t1", 1, ok(V::Passed, 200, 4)),
        (a, "control", "t1", 2, bad(McpTransport)),
        (a, "control", "t1", 3, ok(V::Passed, 210, 4)),
        (a, "control", "t2", 1, ok(V::Passed, 220, 4)),
        (a, "control", "t2", 2, ok(V::Passed, 230, 4)),
        (a, "control", "t2", 3, ok(V::Passed, 240, 4)),
        // model-b: never pooled with model-a
        ("model-b", "pattern", "t1", 1, ok(V::Passed, 1000, 3)),
        ("model-b", "pattern", "t1", 2, bad(HarnessError)),
        ("model-b", "control", "t1", 1, ok(V::Failed, 2000, 5)),
        ("model-b", "control", "t1", 2, ok(V::Passed, 2100, 5)),
        // oracle floors
        ("oracle", "pattern", "t1", 1, S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) }),
        ("oracle", "control", "t1", 1, S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) }),
        ("oracle", "pattern", "t2", 1, S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) }),
        ("oracle", "control", "t2", 1, S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) }),
    ];
    for (m, role, task, rep, s) in rows {
        let mut r = record(m, "m1", role, task, rep, s);
        // model-a's sessions carry retrieval, as a catalogue module's do: the pattern searched
        // and found its one needed tool at rank 2 (t1) or not at all (t2); the control listed
        // it, and called an unconnected tool once per t2 session.
        if m == a {
            let searched = role == "pattern";
            r.retrieval = Some(records::Retrieval {
                needed: vec!["tickets_list".into()],
                best_rank: vec![(searched && task == "t1").then_some(2)],
                searches: u32::from(searched),
                unconnected_calls: u32::from(!searched && task == "t2"),
            });
        }
        write(dir, &r, true);
    }
    // What else a spec run leaves in the folder: gate results, a lock, a dotfile. None is a record.
    std::fs::write(dir.join("check.json"), "{\"gates\": []}").unwrap();
    std::fs::write(dir.join("check-20260101T000000Z.json"), "{\"gates\": []}").unwrap();
    std::fs::write(dir.join(".lock"), "4242").unwrap();
    std::fs::write(dir.join(".hidden.json"), "garbage").unwrap();
}

/// Prices for model-a only (model-b is unpriced).
pub const PRICES: &str = "[models.\"model-a\"]\ninput = 1.0\ncached_input = 0.5\noutput = 2.0\n";

/// One table of a report's document, with the headings it sits under, its cells as a reader
/// sees them (the text without markup).
#[derive(Debug, Clone)]
pub struct Table {
    /// The last level-2 and level-3 headings above it ("" when none).
    pub h2: String,
    pub h3: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// The typed table itself (values, units, definitions).
    pub typed: aggregate::document::Table,
}

/// Every table of a report's document, in order: read from the typed document, not from any
/// writer's output.
pub fn tables(doc: &aggregate::document::Document) -> Vec<Table> {
    use aggregate::document::Block;
    let (mut h2, mut h3) = (String::new(), String::new());
    let mut out = Vec::new();
    for section in &doc.sections {
        if let Some(h) = &section.heading {
            (h2, h3) = (h.to_plain(), String::new());
        }
        for block in &section.blocks {
            match block {
                Block::Heading { level: 2, text } => (h2, h3) = (text.to_plain(), String::new()),
                Block::Heading { text, .. } => h3 = text.to_plain(),
                Block::Table(t) => out.push(Table {
                    h2: h2.clone(),
                    h3: h3.clone(),
                    header: t.header.iter().map(|c| c.text.to_plain()).collect(),
                    rows: t.rows.iter().map(|r| r.iter().map(|c| c.text.to_plain()).collect()).collect(),
                    typed: t.clone(),
                }),
                _ => {}
            }
        }
    }
    out
}

/// What the fixture's answers cite: a passed session one ticket that exists; a failed one that
/// ticket and one that does not; t2's first rep was written before grounding was read.
fn grounding(task: &str, rep: u32, verdict: V) -> Option<records::Grounding> {
    use records::{Groundedness as G, Reference, ReferenceKind as K};
    if task == "t2" && rep == 1 {
        return None;
    }
    let r = |text: &str, status, detail: Option<&str>| Reference { text: text.into(), kind: K::Ticket, status, detail: detail.map(Into::into) };
    let mut references = vec![r("ticket 77", G::Grounded, None)];
    if verdict == V::Failed {
        references.push(r("ticket 4711", G::Hallucinated, Some("no ticket 4711")));
    }
    Some(records::Grounding { references })
}

/// Dev and held-out tasks of one module (t1 dev, t2 held out): the model's pattern fails t2,
/// which its control passes, and the oracle's pattern plan for t2 takes more calls.
pub fn held_out_fixture(dir: &Path) {
    for (task, split) in [("t1", records::Split::Dev), ("t2", records::Split::HeldOut)] {
        for role in ["pattern", "control"] {
            let verdict = if task == "t2" && role == "pattern" { V::Failed } else { V::Passed };
            let mut r = record("m", "m1", role, task, 1, ok(verdict, 100, 2));
            r.split = split;
            write(dir, &r, false);
            let mut o = record("oracle", "m1", role, task, 1, S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) });
            o.split = split;
            if task == "t2" && role == "pattern" {
                // More calls, as much estimated input as the control's plan (900).
                let floor = o.oracle.as_mut().unwrap();
                (floor.calls, floor.estimated_input_tokens) = (9, Some(900));
            }
            write(dir, &o, false);
        }
    }
}

/// A sequential experiment (`--until-decided`, cap `max_pairs`) of model `m` over tasks t0–t2,
/// drawn in turn: pair `d` is task `t{d % 3}`, its rep how often that task was drawn so far.
/// `outcome(d)` gives (pattern passed, control passed, pattern input, control input).
pub fn sequential_fixture(dir: &Path, max_pairs: u32, draws: u32, outcome: impl Fn(u32) -> (bool, bool, u64, u64)) {
    let mut m = manifest(&["m"], &["t0", "t1", "t2"], 1);
    m.sequential = Some(records::manifest::ManifestSequential {
        max_pairs,
        min_pairs: 10,
        alpha: 0.05,
        success_margin: 0.1,
        draw: "in turn".into(),
        rule: "sequential: a fixture's rule".into(),
    });
    write_manifest(dir, &m);
    let mut reps = [0u32; 3];
    for d in 1..=draws {
        let t = (d % 3) as usize;
        reps[t] += 1;
        let (pp, cp, pi, ci) = outcome(d);
        for (role, passed, input) in [("pattern", pp, pi), ("control", cp, ci)] {
            let mut r = record("m", "m1", role, &format!("t{t}"), reps[t], ok(if passed { V::Passed } else { V::Failed }, input, 3));
            r.draw = Some(d);
            write(dir, &r, true);
        }
    }
}
