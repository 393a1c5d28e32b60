//! Gates G5 (neutrality) and G7 (ground truth) over every task of every registered module,
//! through the real servers over stdio (`pipeline serve`), against the real backend on real
//! Postgres; and the completeness rule: eight dev tasks and at least four held-out ones per module.
//!
//! The trials are generated from the registry (libtest-mimic), so a new module is gated with no
//! new test code: `cargo nextest run -p pipeline --test task_gates gates_MODULE`.

use backend::WorldSpec;
use backend::local::LocalBackend;
use libtest_mimic::{Arguments, Failed, Trial};
use tasks::gates::{banned_terms, ground_truth_with, neutrality_violations};

/// Eight dev tasks per module, among them traps and one that cannot be done.
const TASKS_PER_MODULE: usize = 8;

/// Held-out tasks per module at least (a family counts once): sealed, never tuned against.
const HELD_OUT_PER_MODULE: usize = 4;

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for module in servers::registry::modules() {
        trials.push(Trial::test(format!("gates_{module}"), move || block_on(gates_for(module))));
        trials.push(Trial::test(format!("eight_tasks_{module}"), move || eight_tasks(module)));
    }
    libtest_mimic::run(&args, trials).exit_code()
}

fn block_on(f: impl Future<Output = Result<(), Failed>>) -> Result<(), Failed> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| Failed::from(format!("tokio runtime: {e}")))?.block_on(f)
}

fn serve_command() -> Vec<String> {
    vec![env!("CARGO_BIN_EXE_pipeline").to_owned(), "serve".to_owned()]
}

fn eight_tasks(module: &str) -> Result<(), Failed> {
    let all = tasks::load_module(&tasks::default_tasks_dir(), module).map_err(|e| e.to_string())?;
    // Task families (one template, a task per size) come on top of the eight.
    let plain = all.iter().filter(|t| t.family.is_none() && t.meta.split == records::Split::Dev).count();
    if plain != TASKS_PER_MODULE {
        return Err(format!(
            "{module} has {plain} dev task(s) besides its task families; a module has {TASKS_PER_MODULE}, among them traps and one \
             that cannot be done (docs/adding-a-pattern-module.md, section 3)"
        )
        .into());
    }
    let held_out: std::collections::BTreeSet<&std::path::Path> =
        all.iter().filter(|t| t.meta.split == records::Split::HeldOut).map(|t| t.dir.as_path()).collect();
    if held_out.len() < HELD_OUT_PER_MODULE {
        return Err(format!(
            "{module} has {} held-out task(s); a module has at least {HELD_OUT_PER_MODULE}, written to its question rather than its \
             pattern and sealed with `pipeline seal` (docs/held-out.md)",
            held_out.len()
        )
        .into());
    }
    Ok(())
}

async fn gates_for(module: &str) -> Result<(), Failed> {
    let all = tasks::load_module(&tasks::default_tasks_dir(), module).map_err(|e| e.to_string())?;
    if all.is_empty() {
        return Err(format!("{module} has no tasks under tasks/{module}/").into());
    }
    let b = LocalBackend::start(WorldSpec::default()).await.map_err(|e| e.to_string())?;
    let result = gate_failures(module, &all, &b).await;
    b.shutdown().await.map_err(|e| e.to_string())?;
    let failures = result?;
    if failures.is_empty() { Ok(()) } else { Err(format!("{} gate failure(s):\n{}", failures.len(), failures.join("\n")).into()) }
}

async fn gate_failures(module: &str, all: &[tasks::Task], b: &LocalBackend) -> Result<Vec<String>, Failed> {
    let (pattern, control) = servers::registry::arms(module).ok_or("not a registered module")?;
    let banned = banned_terms(module, &[], b.url()).await.map_err(|e| e.to_string())?;
    for arm in [pattern.name, control.name] {
        // Every arm offers something, so an empty list means the manifests were not read.
        if !banned.iter().any(|t| t.source.ends_with(&format!(" of {arm}"))) {
            return Err(format!("no tool or resource names were listed for {arm}: {banned:?}").into());
        }
    }
    let mut failures = Vec::new();
    for task in all {
        for v in neutrality_violations(task, &banned) {
            failures.push(format!("G5 {}: the text contains {:?} ({})", task.key(), v.term, v.source));
        }
    }
    // A module with a catalogue is gated at every size its sweep runs: the tasks must be
    // solvable through both arms whatever the catalogue holds.
    let sizes: Vec<Option<u32>> = match servers::registry::module(module).and_then(|m| m.catalogue) {
        Some(_) => servers::modules::tool_search::catalogue::LEVELS.iter().map(|&n| Some(n)).collect(),
        None => vec![None],
    };
    for task in all {
        for &catalogue in &sizes {
            let settings = servers::launch::ArmSettings { catalogue, poison: None };
            let at = catalogue.map(|n| format!(" with a catalogue of {n}")).unwrap_or_default();
            for arm in [pattern, control] {
                match ground_truth_with(task, arm, b.world(), b.url(), &serve_command(), tasks::gates::Under { settings, ..Default::default() }).await {
                    Err(e) => failures.push(format!("G7 {}{at} via {}: {e}", task.key(), arm.name)),
                    Ok(truth) if catalogue.is_some() && arm.role == servers::Role::Pattern => {
                        failures.extend(unsearched(&truth.replay).into_iter().map(|t| format!("G7 {}{at} via {}: {t}", task.key(), arm.name)));
                    }
                    Ok(_) => {}
                }
            }
        }
    }
    Ok(failures)
}

/// The tools a search module's oracle plan called without an earlier search of the same replay
/// having returned them: an ideal agent cannot call what it has not found.
fn unsearched(replay: &tasks::replay::ReplayReport) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for call in &replay.calls {
        match call.name.as_str() {
            "search_tools" => found.extend(servers::modules::tool_search::found(&call.result)),
            "call_tool" => {
                let name = call.arguments["name"].as_str().unwrap_or_default();
                if !found.iter().any(|f| f == name) {
                    out.push(format!("the plan calls {name:?}, which no earlier search returned (searches returned {found:?})"));
                }
            }
            _ => {}
        }
    }
    out
}
