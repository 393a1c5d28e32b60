//! The simulated agent (`--models sim:PROFILE`) through the real binary: real arms, resets,
//! verifiers and records. What each session was planted to do is recomputed without running
//! anything and must be what it did; a planted failure the verifiers must see (stopping early)
//! always fails; a session replays exactly; a planted harm is found; the report says the numbers
//! are not evidence; a profile that is missing or describes no agent is refused before anything
//! is written.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use sha2::Digest;

use crate::common::{pipeline, records};

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn run(results: &Path, exp: &str, args: &[&str]) -> Output {
    pipeline().args(args).args(["--exp-name", exp, "--results-dir"]).arg(results).output().unwrap()
}

fn tasks_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("tasks")
}

/// The `simulated` event of a session's transcript.
fn planted(exp: &Path, r: &serde_json::Value) -> serde_json::Value {
    transcript_event(exp, r, "simulated").expect("a simulated event")
}

/// The transcript's first event named `event` (its line as written, parsed).
fn transcript_event(exp: &Path, r: &serde_json::Value, event: &str) -> Option<serde_json::Value> {
    let model = r["model"]["id"].as_str().unwrap().replace(':', "_");
    let path =
        exp.join(format!("{model}__{}", r["server"].as_str().unwrap())).join(format!("{}__rep{}.transcript.jsonl", r["task"].as_str().unwrap(), r["rep"]));
    let transcript = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    transcript.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).find(|e| e["event"] == event)
}

/// (task, server, rep) → (what was done, verdict, input tokens).
fn outcomes(exp: &Path) -> BTreeMap<(String, String, u64), (String, String, u64)> {
    records(exp)
        .iter()
        .map(|r| {
            let key = (r["task"].as_str().unwrap().to_owned(), r["server"].as_str().unwrap().to_owned(), r["rep"].as_u64().unwrap());
            let done = planted(exp, r)["done"].as_str().unwrap().to_owned();
            (key, (done, r["verifier"]["verdict"].as_str().unwrap().to_owned(), r["totals"]["input_tokens"].as_u64().unwrap()))
        })
        .collect()
}

#[test]
fn a_simulated_agent_drives_the_real_arms_as_its_profile_plans_and_replays_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--module", "tool_orchestrator", "--module", "domain_adapter", "--models", "sim:slips_only", "--k", "2"];
    let out = run(dir.path(), "slips", &args);
    assert!(out.status.success(), "{}", text(&out));
    let exp = dir.path().join("slips");
    let recs = records(&exp);
    let profile_text = std::fs::read_to_string(tasks_dir().join("sim/slips_only.toml")).unwrap();
    let profile = agent::sim::Profile::parse(&profile_text).unwrap();
    let all = tasks::load_module(&tasks_dir(), "tool_orchestrator").unwrap().into_iter().chain(tasks::load_module(&tasks_dir(), "domain_adapter").unwrap());
    let by_id: BTreeMap<String, tasks::Task> = all.map(|t| (t.id.clone(), t)).collect();
    assert_eq!(recs.len(), by_id.len() * 2 * 2, "every task, both arms, two reps");

    let mut verdicts: BTreeMap<(String, String), usize> = BTreeMap::new();
    for r in &recs {
        assert_eq!(r["validity"]["class"], "valid", "{r}");
        assert_eq!((r["model"]["id"].as_str(), r["model"]["provider"].as_str()), (Some("sim:slips_only"), Some("simulated")));
        assert_eq!(r["model"]["profile_sha256"].as_str(), Some(records::sha256_hex(profile_text.as_bytes()).as_str()));
        assert_eq!(r["model"]["seed"].as_u64(), Some(profile.seed), "no --seed: the profile's");
        // The record-level simulation: what the session was planted to do, recomputed from the
        // record's place alone, is what it did.
        let task = &by_id[r["task"].as_str().unwrap()];
        let server = r["server"].as_str().unwrap();
        let role = if r["role"] == "pattern" { records::Role::Pattern } else { records::Role::Control };
        let place = agent::sim::Place { task, plan: task.plan_for(server).unwrap(), role, rep: r["rep"].as_u64().unwrap() as u32 };
        let (decision, done) = agent::sim::planned(&profile, profile.seed, &place);
        let event = planted(&exp, r);
        assert_eq!(event["done"].as_str(), Some(done.slip.as_str()), "{}", r["task"]);
        assert_eq!((event["did_the_task"].as_bool(), event["extra_turns"].as_u64()), (Some(false), Some(u64::from(decision.extra_turns))));
        // Synthetic usage, whole: one turn per call, the extra turns, the answer.
        let turns = r["turn_records"].as_array().unwrap();
        assert_eq!(turns.len(), r["tool_calls"].as_array().unwrap().len() + decision.extra_turns as usize + 1);
        let input: u64 = turns.iter().map(|t| t["usage"]["prompt_tokens"].as_u64().unwrap()).sum();
        assert_eq!(r["totals"]["input_tokens"].as_u64(), Some(input));
        *verdicts.entry((done.slip.as_str().to_owned(), r["verifier"]["verdict"].as_str().unwrap().to_owned())).or_default() += 1;
        // The record keeps its class with the claim that decided it; the report grades the same.
        let rec: ::records::SessionRecord = serde_json::from_value(r.clone()).unwrap();
        let kept = rec.verifier.as_ref().and_then(|v| v.class.clone()).unwrap_or_else(|| panic!("no class kept: {r}"));
        assert_eq!(aggregate::metrics::classes::classify(&rec).map(|(c, _)| c), Some(kept.class));
        assert!(!kept.decided_by.is_empty());
        // Against the planted truth: a session that says it stopped is an honest failure; one that
        // left out the write and claimed success, when it failed, is wrong but confident.
        let class = kept.class;
        match done.slip {
            agent::sim::Planned::StopEarly => assert_eq!(class, ::records::OutcomeClass::HonestFailure, "{}: {}", r["task"], kept.decided_by),
            agent::sim::Planned::SkipStep if r["verifier"]["verdict"] == "failed" => {
                assert_eq!(class, ::records::OutcomeClass::WrongConfident, "{}: {}", r["task"], kept.decided_by)
            }
            _ => {}
        }
    }
    // Every session of this profile fails its task by construction: a pass is a false pass.
    // Stopping early leaves the task undone and says so: no verifier may pass it.
    eprintln!("planted slip → verdict: {verdicts:?}");
    assert!(verdicts.keys().all(|(done, _)| done != "complete"));
    assert!(verdicts.get(&("stop_early".into(), "failed".into())).is_some_and(|n| *n > 0));
    assert_eq!(verdicts.get(&("stop_early".into(), "passed".into())), None, "a verifier passed a session that stopped early");
    // A write to the next id leaves the task's own record as it was: no verifier may pass it
    // (a notification filed against another ticket passed while its message named the right one).
    assert!(verdicts.get(&("wrong_id".into(), "failed".into())).is_some_and(|n| *n > 0), "{verdicts:?}");
    assert_eq!(verdicts.get(&("wrong_id".into(), "passed".into())), None, "a verifier passed a write to the wrong id");

    // Replays exactly (one module of the two, run again alone); another seed draws otherwise.
    let one = ["--module", "domain_adapter", "--models", "sim:slips_only", "--k", "2"];
    let again = run(dir.path(), "again", &one);
    assert!(again.status.success(), "{}", text(&again));
    let replayed = outcomes(&dir.path().join("again"));
    let first: BTreeMap<_, _> = outcomes(&exp).into_iter().filter(|(key, _)| replayed.contains_key(key)).collect();
    assert_eq!((first.len(), &first), (replayed.len(), &replayed));
    let seeded = run(dir.path(), "seeded", &[&one[..], &["--seed", "7"]].concat());
    assert!(seeded.status.success(), "{}", text(&seeded));
    assert_ne!(replayed, outcomes(&dir.path().join("seeded")));
    assert!(records(&dir.path().join("seeded")).iter().all(|r| r["model"]["seed"] == 7));
}

#[test]
fn a_planted_harm_is_found_and_the_report_says_it_is_not_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), "worse", &["--module", "tool_orchestrator", "--split", "dev", "--models", "sim:pattern_worse", "--k", "3"]);
    assert!(out.status.success(), "{}", text(&out));
    let exp = dir.path().join("worse");
    let agg = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    assert!(agg.status.success(), "{}", text(&agg));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(exp.join("summary.json")).unwrap()).unwrap();
    let model = &summary["models"][0];
    assert_eq!(model["provider"], "simulated");
    // The profile plants a pattern that completes 55 % against 85 % on a median task.
    assert_eq!(model["modules"][0]["verdict"], "negative", "{}", model["modules"][0]);
    let md = std::fs::read_to_string(exp.join("report.md")).unwrap();
    assert!(md.contains("Planted effects: this checks the instrument, not the pattern."), "{md}");
    assert!(md.contains("negative (planted effects, not evidence)"), "{md}");
    // Like the oracle, it asks no endpoint anything.
    assert_eq!(summary["provenance"]["preflight"]["status"], "not_needed", "{}", summary["provenance"]["preflight"]);
}

#[test]
fn a_missing_or_impossible_profile_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), "nope", &["--module", "tool_orchestrator", "--models", "sim:nope", "--k", "1"]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("model sim:nope: cannot read the simulated agent's profile")
            && t.contains("sim:equal, sim:pattern_worse, sim:slips_only, sim:trivial, sim:vandal, sim:vandal_only"),
        "{t}"
    );
    assert_eq!(t.trim().lines().count(), 1, "one clean line: {t}");

    let bad = dir.path().join("bad.toml");
    let good = std::fs::read_to_string(tasks_dir().join("sim/equal.toml")).unwrap();
    std::fs::write(&bad, good.replacen("complete = 0.8", "complete = 1.8", 1)).unwrap();
    let id = format!("sim:{}", bad.display());
    let out = run(dir.path(), "bad", &["--module", "tool_orchestrator", "--models", &id, "--k", "1"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("control.complete must lie in [0, 1], not 1.8"), "{}", text(&out));
    let warm = run(dir.path(), "warm", &["--module", "tool_orchestrator", "--models", "sim:equal", "--k", "1", "--session-mode", "warm"]);
    assert!(!warm.status.success() && text(&warm).contains("a simulated agent runs cold sessions only"), "{}", text(&warm));
    assert!(std::fs::read_dir(dir.path()).unwrap().flatten().all(|e| e.path() == bad), "nothing but the profile was written");
}

/// The committed profiles `names` over every task of every module, both arms, once, in one run:
/// the results folder (kept while the first value lives), the experiment and its records, and the
/// number of tasks.
fn everywhere(names: &[&str]) -> (tempfile::TempDir, std::path::PathBuf, Vec<serde_json::Value>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let models: Vec<String> = names.iter().map(|n| format!("sim:{n}")).collect();
    let out = run(dir.path(), names[0], &["--all", "--models", &models.join(","), "--k", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    let exp = dir.path().join(names[0]);
    let recs = records(&exp);
    let every_task: usize = servers::registry::modules().iter().map(|m| tasks::load_module(&tasks_dir(), m).unwrap().len()).sum();
    assert_eq!(recs.len(), every_task * 2 * names.len(), "every task of every module, both arms, each profile");
    (dir, exp, recs, every_task)
}

/// Trivial agents — no call, then a confident claim or an empty answer — over every task of every
/// module, both arms: none may pass anything (a pass would be a task the bench lets through
/// without the work).
#[test]
fn trivial_agents_pass_no_task_in_either_arm() {
    let (_dir, exp, recs, _) = everywhere(&["trivial"]);
    let mut done: BTreeMap<String, usize> = BTreeMap::new();
    for r in &recs {
        assert_eq!(r["validity"]["class"], "valid", "{r}");
        assert_eq!(r["tool_calls"].as_array().map(Vec::len), Some(0), "{r}");
        assert_ne!(r["verifier"]["verdict"], "passed", "{} on {} passed without a call: {}", r["task"], r["server"], r["final_answer"]);
        *done.entry(planted(&exp, r)["done"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    assert_eq!(done.keys().map(String::as_str).collect::<Vec<_>>(), ["empty_answer", "no_work"], "both kinds ran: {done:?}");
}

/// A vandal — every write it can reach, on the first ids it sees — over every task of every
/// module, both arms. On a change it does nothing else, so it must never pass; on a question it
/// also does the work and gives the right answer, so it may pass only where the world it leaves
/// is the seeded one (the tables the harness saw change, whatever the verifier asks). A pass with
/// a changed table is a verifier blind to a changed world.
#[test]
fn a_vandal_passes_no_task_and_fails_every_task_whose_world_it_damaged() {
    let (_dir, exp, all, every_task) = everywhere(&["vandal", "vandal_only"]);
    // The vandal with nothing else — its writes, then "Done", on a question too — passes nothing.
    let (only, recs): (Vec<serde_json::Value>, Vec<serde_json::Value>) = all.into_iter().partition(|r| r["model"]["id"] == "sim:vandal_only");
    assert_eq!(only.len(), every_task * 2);
    let mut damaged_only = 0;
    for r in &only {
        assert_eq!(r["validity"]["class"], "valid", "{r}");
        assert_eq!(planted(&exp, r)["done"], "vandal_only");
        assert_ne!(r["verifier"]["verdict"], "passed", "{} on {} passed a vandal that did nothing else: {}", r["task"], r["server"], r["verifier"]);
        damaged_only += usize::from(!r["verifier"]["changed_tables"].as_array().unwrap().is_empty());
    }
    assert!(damaged_only > every_task / 2, "the vandal alone reached writes in {damaged_only} sessions");
    let (mut damaged, mut blind) = (BTreeMap::<String, usize>::new(), Vec::new());
    let mut collateral_writes = BTreeMap::<String, usize>::new();
    for r in &recs {
        assert_eq!(r["validity"]["class"], "valid", "{r}");
        assert_eq!(planted(&exp, r)["done"], "vandal");
        let changed = r["verifier"]["changed_tables"].as_array().unwrap_or_else(|| panic!("no changed tables recorded: {}", r["verifier"]));
        // The rows behind them, in the transcript, hashed in the record.
        let world = transcript_event(&exp, r, "world").expect("a world event");
        assert_eq!(r["verifier"]["world_diff_sha256"].as_str(), Some(hex::encode(sha2::Sha256::digest(world.to_string().as_bytes()))).as_deref());
        let tables: std::collections::BTreeSet<&str> = world["changes"].as_array().unwrap().iter().map(|c| c["table"].as_str().unwrap()).collect();
        assert_eq!(tables, changed.iter().map(|t| t.as_str().unwrap()).collect(), "{world}");
        // Its side effects, against what the arm's oracle plan changes (replayed by the run,
        // since no G7 ran before a simulated agent): every row it changed on a question is one.
        let collateral = &r["verifier"]["collateral"];
        let writes = collateral["writes"].as_array().unwrap_or_else(|| panic!("no collateral read: {collateral}"));
        if changed.is_empty() {
            assert_eq!((collateral["footprint"].as_str(), writes.len()), (Some("no change"), 0), "{collateral}");
        } else {
            assert_eq!(collateral["footprint"], "oracle replay", "{collateral}");
            *collateral_writes.entry(r["role"].as_str().unwrap().to_owned()).or_default() += usize::from(!writes.is_empty());
        }
        let question = r["verifier"]["checks"].as_array().unwrap().iter().any(|c| c["name"] == "every table unchanged");
        if question && collateral["footprint_sha256"].as_str() == Some(EMPTY_FOOTPRINT) {
            assert_eq!(writes.len(), world["changes"].as_array().unwrap().len(), "{} on {}: {collateral}", r["task"], r["server"]);
        }
        if !changed.is_empty() {
            *damaged.entry(r["role"].as_str().unwrap().to_owned()).or_default() += 1;
            if r["verifier"]["verdict"] != "failed" {
                blind.push(format!("{} on {} changed {changed:?}: {}", r["task"], r["server"], r["verifier"]["verdict"]));
            }
        } else if r["verifier"]["verdict"] == "passed" {
            // A question done right, the world as seeded: the vandal reached no write here. A
            // change it never made must not pass.
            assert!(question, "{} on {} passed a change the vandal never made: {}", r["task"], r["server"], r["verifier"]);
        }
    }
    assert!(blind.is_empty(), "{} sessions changed the world and were not failed:\n{}", blind.len(), blind.join("\n"));
    assert!(damaged.get("control").is_some_and(|n| *n > every_task / 2), "the vandal reached the controls' writes: {damaged:?}");
    assert!(damaged.get("pattern").is_some_and(|n| *n > every_task / 4), "the vandal reached the patterns' writes: {damaged:?}");
    // Damage is a side effect: nearly every session that changed the world wrote outside the
    // task's footprint (a write that lands only on rows the task itself changes is not one).
    for (role, n) in &damaged {
        let with = collateral_writes.get(role).copied().unwrap_or(0);
        assert!(with * 10 >= n * 9, "{role}: {with} of {n} damaging sessions have collateral writes");
    }
}

/// The hash of a footprint with no rows: what a question's oracle changes.
const EMPTY_FOOTPRINT: &str = "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945";
