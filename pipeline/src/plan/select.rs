//! What a plan selects: its servers, their tool manifests, its tasks, and the checks that each
//! external arm can start and answers every task it is given.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use servers::registry::{self, ServerEntry};
use tasks::Task;

use super::ModuleTasks;
use crate::input::flags::RunArgs;
use crate::input::spec::Spec;

/// The selected servers. `--mcp` names servers one by one; `--module` and `--all` take both arms
/// of modules; clap refuses to combine them.
pub(super) fn select_servers(args: &RunArgs) -> anyhow::Result<Vec<&'static ServerEntry>> {
    let mut out: Vec<&'static ServerEntry> = Vec::new();
    let mut push = |s: &'static ServerEntry| {
        if !out.iter().any(|o| o.name == s.name) {
            out.push(s);
        }
    };
    // External arms run only when named (`--mcp`): `--all` is the built-in suite.
    if args.all {
        registry::builtin().for_each(&mut push);
    }
    for m in &args.module {
        let (p, c) = registry::arms(m).with_context(|| format!("no module named {m:?}; modules: {}", registry::modules().join(", ")))?;
        push(p);
        push(c);
    }
    for name in &args.mcp {
        let s = registry::find(name).with_context(|| format!("no server named {name:?}; servers: {}", registry::names().join(", ")))?;
        push(s);
    }
    check_runnable(&out)?;
    if out.is_empty() {
        bail!("nothing to run: give --mcp SERVER[,SERVER], --module MODULE or --all (see `{} servers`)", crate::invoked::program());
    }
    Ok(out)
}

pub(super) fn modules_of(arms: &[&'static ServerEntry]) -> Vec<&'static str> {
    let mut modules: Vec<&'static str> = Vec::new();
    for s in arms {
        if !modules.contains(&s.module) {
            modules.push(s.module);
        }
    }
    modules
}

/// The servers of a spec's arms, each a server of the spec's module (built-in or an external
/// arm registered from the arms folder).
pub fn arms_of(spec: &Spec) -> anyhow::Result<Vec<&'static servers::ServerEntry>> {
    let mut out = Vec::new();
    for a in &spec.arms {
        let s = registry::find(&a.server).with_context(|| {
            format!("arms: no server named {:?}; servers: {} (external arms are read from --arms-dir)", a.server, registry::names().join(", "))
        })?;
        anyhow::ensure!(s.module == spec.module, "arms: {} answers the tasks of {}, not of {}", s.name, s.module, spec.module);
        out.push(s);
    }
    crate::plan::check_runnable(&out)?;
    Ok(out)
}

pub(super) async fn manifests_of(
    arms: &[&'static ServerEntry],
    settings: servers::launch::ArmSettings,
) -> anyhow::Result<BTreeMap<String, servers::ToolManifest>> {
    let mut out = BTreeMap::new();
    for s in arms {
        let m = crate::listing::manifest(s, settings).await.with_context(|| format!("listing the tool manifest of {}", s.name))?;
        out.insert(s.name.to_owned(), m);
    }
    Ok(out)
}

/// Every external arm's program can be found (a bare name on `PATH`, a path under its folder).
pub fn check_runnable(arms: &[&'static ServerEntry]) -> anyhow::Result<()> {
    for arm in arms.iter().filter_map(|a| a.external()) {
        arm.program()?;
    }
    Ok(())
}

/// An external arm has its own oracle plan for every task it answers (its ground truth: an arm
/// without one is refused, each missing plan named), and its plans call only what its server
/// offers: its tools, and the two resource functions when it has resources — checked against
/// the manifest the server really lists, before anything runs.
pub fn check_external_plans(arms: &[&'static ServerEntry], tasks: &[ModuleTasks], manifests: &BTreeMap<String, servers::ToolManifest>) -> anyhow::Result<()> {
    for arm in arms.iter().filter_map(|a| a.external()) {
        let Some(manifest) = manifests.get(&arm.name) else { continue };
        let tools = manifest.tool_names();
        let answered: Vec<&Arc<Task>> = tasks.iter().filter(|m| m.module == arm.module).flat_map(|m| m.tasks.iter()).collect();
        let missing: Vec<String> = answered.iter().filter(|t| t.plan_for(&arm.name).is_none()).map(|t| arm.plan_path(&t.id).display().to_string()).collect();
        if !missing.is_empty() {
            anyhow::bail!(
                "external arm {} has no oracle plan (its ground truth, G7) for {} task(s) it answers; write: {} (or, if its tools are a built-in server's, say oracle_from = \"<server>\" in its arm.toml)",
                arm.name,
                missing.len(),
                missing.join(", ")
            );
        }
        for task in answered {
            let Some(plan) = task.plan_for(&arm.name) else { continue };
            let own = arm.plan_path(&task.id);
            let path = task.plan_file(&arm.name).unwrap_or(own.as_path());
            // A borrowed plan's file is a built-in server's: the fix is the arm's own file.
            let fix = if path == own.as_path() {
                String::new()
            } else {
                format!("; borrowed through oracle_from: write {} to give {} its own", own.display(), arm.name)
            };
            for (i, step) in plan.steps.iter().enumerate() {
                if let Some(tool) = step.tool.as_deref().filter(|t| !tools.contains(t)) {
                    anyhow::bail!("{}: steps[{i}].tool: {} does not list a tool {tool:?} (it lists: {}){fix}", path.display(), arm.name, tools.join(", "));
                }
                if (step.read.is_some() || step.list_resources) && !manifest.resources {
                    anyhow::bail!("{}: steps[{i}]: reads a resource, but {} offers no resources{fix}", path.display(), arm.name);
                }
            }
        }
    }
    Ok(())
}

/// The tasks a spec selects, from the module's folder: exactly `ids` if given, else all.
/// Ids that do not exist are returned as the second value.
pub fn select_tasks(tasks_dir: &Path, module: &str, ids: &[String], split: crate::split::SplitSelection) -> anyhow::Result<(Vec<tasks::Task>, Vec<String>)> {
    let mut all = tasks::load_module(tasks_dir, module).with_context(|| format!("loading the tasks of {module}"))?;
    if let Some(t) = all.iter().find(|t| ids.contains(&t.id) && !split.admits(t.meta.split)) {
        anyhow::bail!(
            "task {} is {}, but the selection is split = {:?}: list only {} tasks, or change the split",
            t.key(),
            t.meta.split,
            split.as_str(),
            split.as_str()
        );
    }
    all.retain(|t| split.admits(t.meta.split));
    if ids.is_empty() {
        return Ok((all, vec![]));
    }
    let missing = ids.iter().filter(|id| !all.iter().any(|t| &t.id == *id)).cloned().collect();
    Ok((all.into_iter().filter(|t| ids.contains(&t.id)).collect(), missing))
}
