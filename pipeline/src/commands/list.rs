//! `pipeline list`: modules, their servers, and their tasks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// One JSON object per task per line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Folder holding the task folders (default: ./tasks, else the one the binary was built from).
    #[arg(long, env = "MCPBENCH_TASKS_DIR")]
    pub tasks_dir: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct TaskRow<'a> {
    module: &'a str,
    id: &'a str,
    turn_cap: u32,
    /// `dev` or `held_out`.
    split: records::Split,
    tags: &'a [String],
    /// Oracle plan length (calls and reads) per server.
    oracle_calls: BTreeMap<&'a str, usize>,
}

pub fn run(args: ListArgs) -> anyhow::Result<()> {
    let dir = args.tasks_dir.unwrap_or_else(tasks::default_tasks_dir);
    let all = tasks::load_all(&dir).with_context(|| format!("loading tasks from {}", dir.display()))?;
    if args.json {
        for t in &all {
            let row = TaskRow {
                module: &t.module,
                id: &t.id,
                turn_cap: t.meta.turn_cap,
                split: t.meta.split,
                tags: &t.meta.tags,
                oracle_calls: t.oracle.iter().map(|(s, p)| (s.as_str(), p.len())).collect(),
            };
            println!("{}", serde_json::to_string(&row)?);
        }
        return Ok(());
    }
    for module in servers::registry::modules() {
        let (pattern, control) = servers::registry::arms(module).context("registry")?;
        let external: Vec<&str> = servers::registry::external().filter(|e| e.module == module).map(|e| e.name).collect();
        let mine: Vec<_> = all.iter().filter(|t| t.module == module).collect();
        let beside = external.iter().map(|e| format!(" · external {e}")).collect::<String>();
        let held_out = mine.iter().filter(|t| t.meta.split == records::Split::HeldOut).count();
        println!(
            "{module}: pattern {} · control {}{beside} · {} tasks ({} dev, {held_out} held out)",
            pattern.name,
            control.name,
            mine.len(),
            mine.len() - held_out
        );
        let arms: Vec<&str> = [pattern.name, control.name].into_iter().chain(external.iter().copied()).collect();
        // A column per arm, as wide as its name: the oracle plan's length through that arm.
        let header: String = arms.iter().map(|a| format!(" {a:>9}")).collect();
        println!("  {:<42} {:>8} {:>4}{header}  tags", "task", "split", "cap");
        for t in mine {
            let calls: String =
                arms.iter().map(|a| format!(" {:>w$}", t.plan_for(a).map_or("-".to_owned(), |p| p.len().to_string()), w = a.len().max(9))).collect();
            println!("  {:<42} {:>8} {:>4}{calls}  {}", t.id, t.meta.split.as_str(), t.meta.turn_cap, t.meta.tags.join(", "));
        }
        println!();
    }
    Ok(())
}
