//! `pipeline freeze`, `pipeline check SPEC`, `pipeline run SPEC`: a frozen oracle spec passes
//! and runs; then one deliberately broken spec or setup per gate (`docs/honesty-rules.md` §2), each of which must
//! print `INVALID — gate failures:` with the gate's name, exit 1 and start zero sessions.
//!
//! Every test pins the build check (G2) to a throwaway clone of this repository at the commit
//! the binary was built from (`MCPBENCH_BUILD_DIR`), so the outcome does not depend on whether
//! this work tree is clean; when the binary itself was built from uncommitted changes, specs are
//! frozen with `--allow-dirty` (G2 holds the binary too). Tests that break a task work on a copy
//! of the tasks (`MCPBENCH_TASKS_DIR`). Runs the real binary.

use crate::common;

use crate::common::{copy_dir, records};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MODULE: &str = "tool_orchestrator";
const TASK: &str = "lena_goes_on_leave";

/// A throwaway clone of the build, and the results folder.
struct Env {
    tmp: tempfile::TempDir,
    tasks_dir: Option<PathBuf>,
    /// The binary was built from uncommitted changes.
    binary_dirty: bool,
}

/// The commit the binary was built from and whether it was dirty, from `pipeline --version`.
fn binary_build() -> (String, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeline")).arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let commit = text.split("(commit ").nth(1).and_then(|r| r.split(',').next()).unwrap_or_default().to_owned();
    assert_eq!(commit.len(), 40, "the binary must embed its commit: {text}");
    (commit, text.contains("dirty: true"))
}

impl Env {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("build");
        let (commit, binary_dirty) = binary_build();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let s = Command::new("git").args(["clone", "-q", "--no-checkout", "--shared"]).arg(root).arg(&repo).status().unwrap();
        assert!(s.success(), "cloning the build");
        git(&repo, &["checkout", "-q", "--detach", &commit]);
        Self { tmp, tasks_dir: None, binary_dirty }
    }

    fn build_dir(&self) -> PathBuf {
        self.tmp.path().join("build")
    }

    fn results(&self) -> PathBuf {
        self.tmp.path().join("results")
    }

    fn spec_path(&self) -> PathBuf {
        self.tmp.path().join("spec.toml")
    }

    /// Copies the module's tasks into the temp dir and points every later command at the copy.
    fn copy_tasks(&mut self) -> PathBuf {
        let dst = self.tmp.path().join("tasks");
        copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks").join(MODULE), &dst.join(MODULE));
        self.tasks_dir = Some(dst.clone());
        dst.join(MODULE).join(TASK)
    }

    fn pipeline(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pipeline"));
        c.env_remove("DATABASE_URL")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("MCPBENCH_MODELS")
            .env("RUST_LOG", "warn")
            .env("MCPBENCH_BUILD_DIR", self.build_dir())
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        match &self.tasks_dir {
            Some(d) => c.env("MCPBENCH_TASKS_DIR", d),
            None => c.env_remove("MCPBENCH_TASKS_DIR"),
        };
        c
    }

    /// `pipeline freeze` of two tasks of the module (allowing a dirty build when the binary is
    /// dirty); returns the spec as a TOML table.
    fn freeze(&self, extra: &[&str]) -> toml::Table {
        let mut args = extra.to_vec();
        if self.binary_dirty {
            args.push("--allow-dirty");
        }
        self.freeze_exactly(&args)
    }

    fn freeze_exactly(&self, extra: &[&str]) -> toml::Table {
        let out = self
            .pipeline()
            .args(["freeze", "--module", MODULE, "--tasks", &format!("{TASK},two_tickets_for_globex"), "--exp-name", "e", "--out"])
            .arg(self.spec_path())
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "freeze failed: {}", String::from_utf8_lossy(&out.stderr));
        std::fs::read_to_string(self.spec_path()).unwrap().parse().unwrap()
    }

    fn write_spec(&self, spec: &toml::Table) {
        std::fs::write(self.spec_path(), toml::to_string(spec).unwrap()).unwrap();
    }

    /// `pipeline check|run SPEC`.
    fn cmd(&self, sub: &str) -> Output {
        self.pipeline().arg(sub).arg(self.spec_path()).arg("--results-dir").arg(self.results()).output().unwrap()
    }

    fn exp_dir(&self) -> PathBuf {
        self.results().join("e")
    }
}

fn git(dir: &Path, args: &[&str]) {
    let s = Command::new("git").arg("-C").arg(dir).args(args).status().unwrap();
    assert!(s.success(), "git {args:?}");
}

/// Exit 1, `INVALID — gate failures:`, a failure line starting with `gate`, zero sessions, and
/// the check manifest saying INVALID for that gate. Returns the output text.
fn assert_invalid(env: &Env, out: &Output, gate: &str) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("INVALID — gate failures:"), "{text}");
    assert!(text.lines().any(|l| l.starts_with(&format!("{gate}: "))), "no line starting with {gate:?}:\n{text}");
    assert!(records(&env.exp_dir()).is_empty(), "a session was started: {text}");
    assert!(!env.exp_dir().join("manifest.json").exists(), "the run loop was entered");
    let check: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(env.exp_dir().join("check.json")).unwrap()).unwrap();
    assert_eq!(check["status"], "INVALID");
    let g = check["gates"].as_array().unwrap().iter().find(|g| g["gate"] == gate).unwrap();
    assert_eq!(g["passed"], false, "{check}");
    text
}

fn lines_of<'a>(text: &'a str, gate: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(&format!("{gate}: "))).collect()
}

#[test]
fn frozen_oracle_spec_passes_check_and_runs() {
    let env = Env::new();
    let spec = env.freeze(&["--models", "oracle"]);
    assert_eq!(spec["treatment"].as_array().unwrap().len(), 1);
    assert_eq!(spec["hashes"]["tasks"].as_table().unwrap().len(), 2);
    let out = env.cmd("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("VALID — all gates passed"), "{err}");
    let check: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(env.exp_dir().join("check.json")).unwrap()).unwrap();
    assert_eq!(check["status"], "VALID");
    assert_eq!(check["gates"].as_array().unwrap().len(), 7);
    assert_eq!(check["git_dirty"], false);
    assert!(records(&env.exp_dir()).is_empty(), "check spends nothing");

    // `run SPEC` exports its traces like a flag run (here to a collector that is down).
    let down = format!("http://127.0.0.1:{}", common::closed_port());
    let out = env.pipeline().arg("run").arg(env.spec_path()).arg("--results-dir").arg(env.results()).args(["--otlp-endpoint", &down]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // It takes the slow gates from the check just made, on a clean build of the same commit.
    let err = String::from_utf8_lossy(&out.stderr);
    let rerun: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(env.exp_dir().join("check.json")).unwrap()).unwrap();
    if env.binary_dirty {
        assert!(rerun.get("reused").is_none() && !err.contains("taken from the check of"), "a dirty build reuses nothing: {err}");
    } else {
        assert_eq!(rerun["reused"], check["checked_at"], "{err}");
        assert!(err.contains("G1's listing, G5 and G7 taken from the check of"), "{err}");
    }
    assert_eq!(rerun["gates"].as_array().unwrap().len(), 7);
    let recs = records(&env.exp_dir());
    assert_eq!(recs.len(), 2 * 2, "2 tasks × 2 arms × 1 rep");
    let otlp = &serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(env.exp_dir().join("manifest.json")).unwrap()).unwrap()["otlp"];
    assert_eq!(
        (otlp["endpoint"].as_str(), otlp["sessions"].as_u64(), otlp["exported_sessions"].as_u64()),
        (Some(format!("{down}/v1/traces").as_str()), Some(4), Some(0)),
        "{otlp}"
    );
    for r in &recs {
        assert_eq!(r["validity"]["class"], "valid", "{r}");
        assert_eq!(r["verifier"]["verdict"], "passed", "{r}");
        assert_eq!(r["git_commit"].as_str(), spec["hashes"]["build"].as_str(), "records carry the checked build");
        let server = r["server"].as_str().unwrap();
        assert_eq!(r["manifest_sha256"].as_str(), spec["hashes"]["manifests"][server]["sha256"].as_str());
        assert_eq!(r["task_sha256"].as_str(), spec["hashes"]["tasks"][r["task"].as_str().unwrap()]["sha256"].as_str());
    }
    let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(env.exp_dir().join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["check"]["status"], "VALID", "the run manifest carries the gate results");

    // The same spec resumes (nothing left to run); another spec may not add to these records.
    let out = env.pipeline().arg("run").arg(env.spec_path()).arg("--results-dir").arg(env.results()).args(["--otlp-endpoint", &down]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains("4 already recorded, 0 to run"), "{err}");
    let otlp = &serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(env.exp_dir().join("manifest.json")).unwrap()).unwrap()["otlp"];
    assert_eq!((otlp["sessions"].as_u64(), otlp["not_exported_sessions"].as_u64()), (Some(0), Some(0)), "nothing ran, nothing to export: {otlp}");
    let mut other = spec.clone();
    other.insert("jobs".into(), toml::Value::Integer(2));
    env.write_spec(&other);
    let out = env.cmd("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("resumes only its own sessions") && err.contains("Nothing was started"), "{err}");
    assert_eq!(records(&env.exp_dir()).len(), 4);

    // The refused spec's check went beside the experiment's own, which still describes its spec.
    let own: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(env.exp_dir().join("check.json")).unwrap()).unwrap();
    assert_eq!(own["spec_sha256"], check["spec_sha256"], "check.json is the experiment's own");
    let beside = std::fs::read_dir(env.exp_dir()).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("check-")).count();
    assert_eq!(beside, 1, "the other spec's check is kept beside it");

    // A spec run's experiment reports like any other: gate files are not session records.
    let report = env.pipeline().args(["aggregate", "--result-dir"]).arg(env.exp_dir()).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    assert!(String::from_utf8_lossy(&report.stdout).contains("Attrition"));
}

#[test]
fn unknown_spec_field_is_refused_by_name() {
    let env = Env::new();
    let mut spec = env.freeze(&["--models", "oracle"]);
    spec["model"].as_table_mut().unwrap().insert("temprature".into(), toml::Value::Float(0.0));
    env.write_spec(&spec);
    let out = env.cmd("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("temprature"), "the error names the field: {err}");
    let mut spec = env.freeze(&["--models", "oracle"]);
    spec.insert("reps".into(), toml::Value::Integer(0));
    env.write_spec(&spec);
    let out = env.cmd("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("reps"), "the error names the field: {err}");
    assert!(!env.exp_dir().exists());
}

/// G1: the frozen manifest of `wrapper` lists one tool fewer than the agent is offered — as if
/// the arm's server (or the agent) added a tool the experiment did not freeze. Only the tool list
/// is edited, so the manifest hash (G3) still matches and G1 alone must catch it.
#[test]
fn g1_an_extra_tool_offered_to_an_arm() {
    let env = Env::new();
    let mut spec = env.freeze(&["--models", "oracle"]);
    let tools = spec["hashes"]["manifests"]["wrapper"]["tools"].as_array_mut().unwrap();
    let before = tools.len();
    tools.retain(|t| t.as_str() != Some("notifications_create"));
    assert_eq!(tools.len(), before - 1);
    env.write_spec(&spec);
    let text = assert_invalid(&env, &env.cmd("check"), "G1 isolation");
    let g1 = lines_of(&text, "G1 isolation");
    assert!(g1.iter().any(|l| l.contains("wrapper") && l.contains("notifications_create")), "{text}");
    assert!(lines_of(&text, "G3 frozen inputs").is_empty(), "{text}");
}

#[test]
fn g2_a_dirty_build() {
    let env = Env::new();
    env.freeze_exactly(&["--models", "oracle"]);
    std::fs::write(env.build_dir().join("README.md"), "edited after the commit\n").unwrap();
    let text = assert_invalid(&env, &env.cmd("run"), "G2 build");
    assert!(text.contains("uncommitted"), "{text}");

    // Allowed by the spec: the check passes, and says dirty loudly.
    let mut spec: toml::Table = std::fs::read_to_string(env.spec_path()).unwrap().parse().unwrap();
    spec.insert("allow_dirty".into(), toml::Value::Boolean(true));
    env.write_spec(&spec);
    let out = env.cmd("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("WARNING — DIRTY BUILD"), "{err}");
    let check: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(env.exp_dir().join("check.json")).unwrap()).unwrap();
    assert_eq!(check["git_dirty"], true);
    assert!(check["build_warning"].as_str().unwrap().contains("DIRTY"));
}

#[test]
fn g3_a_task_edited_after_freeze() {
    let mut env = Env::new();
    let task = env.copy_tasks();
    env.freeze(&["--models", "oracle"]);
    let text = std::fs::read_to_string(task.join("task.md")).unwrap();
    std::fs::write(task.join("task.md"), format!("{text}\nPlease be quick.\n")).unwrap();
    for sub in ["check", "run"] {
        let text = assert_invalid(&env, &env.cmd(sub), "G3 frozen inputs");
        assert!(lines_of(&text, "G3 frozen inputs").iter().any(|l| l.contains(TASK) && l.contains("changed since freeze")), "{text}");
    }
}

#[test]
fn g4_arms_differing_in_an_undeclared_key() {
    let env = Env::new();
    let mut spec = env.freeze(&["--models", "oracle"]);
    spec["arms"].as_array_mut().unwrap()[1].as_table_mut().unwrap().insert("temperature".into(), toml::Value::Float(0.7));
    env.write_spec(&spec);
    let text = assert_invalid(&env, &env.cmd("check"), "G4 declared treatment");
    assert!(lines_of(&text, "G4 declared treatment").iter().any(|l| l.contains("temperature")), "{text}");

    // A different model on one arm is caught the same way.
    let mut spec = env.freeze(&["--models", "oracle"]);
    spec["arms"].as_array_mut().unwrap()[0].as_table_mut().unwrap().insert("model".into(), toml::Value::String("some-other-model".into()));
    env.write_spec(&spec);
    let text = assert_invalid(&env, &env.cmd("check"), "G4 declared treatment");
    assert!(lines_of(&text, "G4 declared treatment").iter().any(|l| l.contains("differ in model")), "{text}");
}

#[test]
fn g5_a_tool_name_in_a_task_text() {
    let mut env = Env::new();
    let task = env.copy_tasks();
    let text = std::fs::read_to_string(task.join("task.md")).unwrap();
    std::fs::write(task.join("task.md"), format!("{text}\nUse reassign_ticket for this.\n")).unwrap();
    env.freeze(&["--models", "oracle"]); // frozen after the edit: G3 holds, G5 must not
    let text = assert_invalid(&env, &env.cmd("check"), "G5 neutrality");
    assert!(lines_of(&text, "G5 neutrality").iter().any(|l| l.contains(TASK) && l.contains("reassign_ticket")), "{text}");
    assert!(lines_of(&text, "G3 frozen inputs").is_empty(), "{text}");
}

#[test]
fn g6_missing_credentials_and_an_unpinned_model() {
    let env = Env::new();
    // No seed given, and the key variable is not set.
    env.freeze(&["--models", "some-model", "--temperature", "0", "--api-key-env", "MCPBENCH_TEST_KEY_THAT_IS_NOT_SET"]);
    let mut c = env.pipeline();
    c.env_remove("MCPBENCH_TEST_KEY_THAT_IS_NOT_SET");
    let out = c.arg("run").arg(env.spec_path()).arg("--results-dir").arg(env.results()).output().unwrap();
    let text = assert_invalid(&env, &out, "G6 model");
    let g6 = lines_of(&text, "G6 model");
    assert!(g6.iter().any(|l| l.contains("seed is not pinned")), "{text}");
    assert!(g6.iter().any(|l| l.contains("no credentials") && l.contains("MCPBENCH_TEST_KEY_THAT_IS_NOT_SET")), "{text}");
    assert!(!g6.iter().any(|l| l.contains("temperature")), "temperature was pinned: {text}");
}

#[test]
fn g7_a_verifier_that_passes_on_the_untouched_seed() {
    let mut env = Env::new();
    let task = env.copy_tasks();
    std::fs::write(task.join("verify.toml"), "[[sql]]\nname = \"ticket 17 exists\"\nquery = \"SELECT count(*) FROM tickets WHERE id = 17\"\nexpect = 1\n")
        .unwrap();
    env.freeze(&["--models", "oracle"]);
    let text = assert_invalid(&env, &env.cmd("check"), "G7 ground truth");
    assert!(lines_of(&text, "G7 ground truth").iter().any(|l| l.contains(TASK) && l.contains("passes on the untouched seeded state")), "{text}");
    assert!(lines_of(&text, "G3 frozen inputs").is_empty(), "{text}");
}

/// G7 checks that a plan is one a model could follow: a plan that reassigns tickets by ids it
/// never looked up still solves the task, but proves nothing a model could reach, and fails by
/// task, step and value.
#[test]
fn g7_a_plan_that_uses_a_value_from_nowhere() {
    let mut env = Env::new();
    let task = env.copy_tasks();
    let plan = "answer = \"Moved Lena Novak's open tickets 17, 95 and 301 to Jonas Weber and notified him about each.\"\n\n\
        [[steps]]\ntool = \"users_list\"\nargs = { q = \"Jonas Weber\" }\nsave = { jonas = \"/data/0/id\" }\n\n\
        [[steps]]\ntool = \"reassign_ticket\"\nargs = { ticket_id = 17, assignee_id = \"${jonas}\" }\n\n\
        [[steps]]\ntool = \"reassign_ticket\"\nargs = { ticket_id = 95, assignee_id = \"${jonas}\" }\n\n\
        [[steps]]\ntool = \"reassign_ticket\"\nargs = { ticket_id = 301, assignee_id = \"${jonas}\" }\n";
    std::fs::write(task.join("oracle").join("orchestrator.toml"), plan).unwrap();
    env.freeze(&["--models", "oracle"]);
    let text = assert_invalid(&env, &env.cmd("check"), "G7 ground truth");
    let lines = lines_of(&text, "G7 ground truth");
    assert!(
        lines.iter().any(|l| l.contains(TASK)
            && l.contains("via orchestrator")
            && l.contains("step 2 (reassign_ticket) uses 17")
            && l.contains("step 4 (reassign_ticket) uses 301")),
        "{text}"
    );
    assert!(!lines.iter().any(|l| l.contains("via wrapper")), "the other arm's plan finds its ids: {text}");
}

/// G6 includes the endpoint preflight: a server that returns the model's calls as text fails the
/// check with the provider's words and the likely fix, before any session; a native one passes.
#[test]
fn g6_an_endpoint_that_returns_calls_as_text() {
    use crate::common::fake_model::{FakeModel, MODEL, Mode};
    let env = Env::new();
    let fake = FakeModel::start(Mode::TextCalls);
    env.freeze(&["--models", MODEL, "--temperature", "0", "--seed", "1", "--base-url", &fake.base_url, "--api-key-env", "MCPBENCH_TEST_FAKE_KEY"]);
    let check =
        |sub: &str| env.pipeline().env("MCPBENCH_TEST_FAKE_KEY", "k").arg(sub).arg(env.spec_path()).arg("--results-dir").arg(env.results()).output().unwrap();
    for sub in ["check", "run"] {
        let text = assert_invalid(&env, &check(sub), "G6 model");
        assert!(lines_of(&text, "G6 model").iter().any(|l| l.contains("tool_call_as_text") && l.contains("--jinja")), "{text}");
    }
    assert_eq!(fake.session_requests(), 0, "the preflight is all that was sent");
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(env.exp_dir().join("check.json")).unwrap()).unwrap();
    assert!(stored["preflight"][MODEL]["probes"].as_array().is_some_and(|p| !p.is_empty()), "the probe's request and answer are recorded: {stored}");

    fake.set_mode(Mode::Native);
    let out = check("check");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A loopback endpoint needs no key: G6 passes with the key variable unset.
    let keyless =
        env.pipeline().env_remove("MCPBENCH_TEST_FAKE_KEY").arg("check").arg(env.spec_path()).arg("--results-dir").arg(env.results()).output().unwrap();
    assert!(keyless.status.success(), "{}", String::from_utf8_lossy(&keyless.stderr));
}

/// A spec states the temperature — a number, or the provider's default with nothing sent — and
/// the dialect and effort its run sends; G6 refuses a model spec silent about the temperature.
#[test]
fn g6_a_spec_states_the_temperature_or_the_provider_default() {
    use crate::common::fake_model::{FakeModel, MODEL, Mode};
    let env = Env::new();
    let fake = FakeModel::start(Mode::Native);
    let mut spec = env.freeze(&["--models", MODEL, "--seed", "1", "--base-url", &fake.base_url, "--reasoning-effort", "low", "--max-tokens", "900"]);
    let model = spec["model"].as_table().unwrap();
    assert_eq!(model["temperature"].as_str(), Some("provider_default"), "the flag's default, written out: {model:?}");
    assert_eq!(model["dialect"].as_str(), Some("compatible"), "resolved from the base URL: {model:?}");
    assert_eq!(model["reasoning_effort"].as_str(), Some("low"));
    let out = env.cmd("check");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    spec["model"].as_table_mut().unwrap().remove("temperature");
    env.write_spec(&spec);
    let text = assert_invalid(&env, &env.cmd("check"), "G6 model");
    assert!(lines_of(&text, "G6 model").iter().any(|l| l.contains("temperature is not stated") && l.contains("provider_default")), "{text}");
}

/// A spec of a catalogue module pins its catalogue size: freeze lists the servers at that size,
/// check and run start them at it, every record's fingerprint carries it; a size the module does
/// not take is refused when the spec is read. Its distractors likewise: G1 holds the arms to
/// their manifests plus exactly the draw, and every record lists them.
#[test]
fn a_catalogue_spec_pins_its_size_from_freeze_to_the_records() {
    let env = Env::new();
    let mut args = vec!["freeze", "--module", "tool_search", "--tasks", "resolve_ticket_77", "--exp-name", "e", "--models", "oracle", "--catalogue", "50"];
    args.extend(["--distractors", "10"]);
    if env.binary_dirty {
        args.push("--allow-dirty");
    }
    let out = env.pipeline().args(&args).arg("--out").arg(env.spec_path()).output().unwrap();
    assert!(out.status.success(), "freeze failed: {}", String::from_utf8_lossy(&out.stderr));
    let spec: toml::Table = std::fs::read_to_string(env.spec_path()).unwrap().parse().unwrap();
    assert_eq!(spec["catalogue"].as_integer(), Some(50));
    assert_eq!(spec["distractors"].as_integer(), Some(10));
    let tools = spec["hashes"]["manifests"]["tool_search_wrapper"]["tools"].as_array().unwrap().len();
    assert_eq!(tools, 26 + 50, "the control was listed at the spec's size");

    let out = env.cmd("check");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = env.cmd("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&env.exp_dir());
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r["fingerprint"]["catalogue"], 50, "{r}");
        assert_eq!((&r["fingerprint"]["distractors"], &r["offered"]["distractors"]), (&10.into(), &10.into()), "{r}");
        assert_eq!(r["verifier"]["verdict"], "passed", "{r}");
    }

    let mut bad = spec.clone();
    bad.insert("catalogue".into(), toml::Value::Integer(10));
    env.write_spec(&bad);
    let out = env.cmd("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("catalogue") && err.contains("25 to 800"), "{err}");
    let mut bad = spec.clone();
    bad.insert("distractors".into(), toml::Value::Integer(10_000));
    env.write_spec(&bad);
    let out = env.cmd("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("distractors: --distractors 10000") && err.contains("at most 600"), "{err}");
}

/// A warm spec: freeze writes `session_mode = "warm"`, run starts one conversation per arm and
/// every record says so; a spec without the key is cold, as before.
#[test]
fn a_warm_spec_runs_conversations_from_freeze_to_the_records() {
    let env = Env::new();
    let mut args = vec!["freeze", "--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave,hand_ticket_77_to_marcus"];
    args.extend(["--exp-name", "e", "--models", "oracle", "--session-mode", "warm"]);
    if env.binary_dirty {
        args.push("--allow-dirty");
    }
    let out = env.pipeline().args(&args).arg("--out").arg(env.spec_path()).output().unwrap();
    assert!(out.status.success(), "freeze failed: {}", String::from_utf8_lossy(&out.stderr));
    let spec: toml::Table = std::fs::read_to_string(env.spec_path()).unwrap().parse().unwrap();
    assert_eq!(spec["session_mode"].as_str(), Some("warm"));
    let out = env.cmd("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&env.exp_dir());
    assert_eq!(recs.len(), 4);
    for r in &recs {
        assert_eq!(r["fingerprint"]["session_mode"], "warm", "{r}");
        assert_eq!(r["conversation"]["tasks"].as_array().unwrap().len(), 2, "{r}");
    }
    // Without the key a spec is cold, and a cold spec is written without it, as before modes.
    let mut cold = spec.clone();
    cold.remove("session_mode");
    let parsed: pipeline::input::spec::Spec = toml::from_str(&toml::to_string(&cold).unwrap()).unwrap();
    assert_eq!(parsed.session_mode, records::SessionMode::Cold);
    assert!(!parsed.to_toml().unwrap().contains("session_mode"), "a cold spec's text is what it was before modes");
}

/// A simulated agent runs from a spec as from flags: its profile is frozen like a task (an edit
/// after freeze is G3), it takes a seed and nothing an endpoint would (G6), and it needs no
/// preflight.
#[test]
fn a_simulated_agent_runs_from_a_spec_with_its_profile_frozen() {
    let env = Env::new();
    let profile = env.tmp.path().join("profile.toml");
    let equal = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks/sim/equal.toml")).unwrap();
    std::fs::write(&profile, &equal).unwrap();
    let id = format!("sim:{}", profile.display());
    let spec = env.freeze(&["--models", &id, "--seed", "3"]);
    assert_eq!(spec["hashes"]["profile"].as_str(), Some(::records::sha256_hex(equal.as_bytes()).as_str()), "{spec:?}");
    let out = env.cmd("check");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = env.cmd("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&env.exp_dir());
    assert_eq!(recs.len(), 2 * 2, "2 tasks × 2 arms × 1 rep");
    for r in &recs {
        assert_eq!((r["model"]["provider"].as_str(), r["model"]["seed"].as_u64()), (Some("simulated"), Some(3)), "{r}");
        assert_eq!(r["validity"]["class"], "valid", "{r}");
    }

    // An endpoint setting is refused by name; so is a profile edited after freeze.
    let mut with_url = spec.clone();
    with_url["model"].as_table_mut().unwrap().insert("base_url".into(), "http://127.0.0.1:9/v1".into());
    env.write_spec(&with_url);
    let text = format!("{:?}", env.cmd("check"));
    assert!(text.contains("a simulated agent asks no endpoint anything; drop base_url"), "{text}");
    env.write_spec(&spec);
    std::fs::write(&profile, equal.replacen("complete = 0.8", "complete = 0.7", 1)).unwrap();
    let out = env.cmd("check");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(lines_of(&text, "G3 frozen inputs").iter().any(|l| l.contains("profile") && l.contains("changed since freeze")), "{text}");
}
