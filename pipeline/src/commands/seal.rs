//! `pipeline seal`: write or check the seal of the held-out tasks ([`crate::held_out`]).

use std::path::PathBuf;

use anyhow::bail;
use chrono::SecondsFormat;
use serde::Serialize;

use crate::held_out::{Lock, current};

/// `pipeline seal`.
#[derive(Debug, clap::Args)]
pub struct SealArgs {
    /// Why the seal is made or changed (required to write it): kept in the lock and repeated by
    /// every report of a run that includes held-out tasks.
    #[arg(long)]
    pub reason: Option<String>,
    /// Only check: exit 1, naming every drift, when the tree differs from the seal; write nothing.
    #[arg(long, conflicts_with = "reason")]
    pub check: bool,
    /// The tasks folder (default: `MCPBENCH_TASKS_DIR`, `./tasks`, or this checkout's).
    #[arg(long, env = "MCPBENCH_TASKS_DIR")]
    pub tasks_dir: Option<PathBuf>,
    /// Print what was found and done as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
struct SealReport {
    lock: String,
    /// `sealed` (written), `unchanged` (already matched), `drifted` (--check, or no reason given).
    status: &'static str,
    held_out_tasks: usize,
    servers: usize,
    gold: bool,
    changed: Vec<String>,
    sealed_at: Option<String>,
    reason: Option<String>,
}

pub async fn seal_cmd(args: SealArgs) -> anyhow::Result<crate::exit::Exit> {
    let tasks_dir = args.tasks_dir.clone().unwrap_or_else(tasks::default_tasks_dir);
    let now = current(&tasks_dir).await?;
    let old = Lock::read(&tasks_dir)?;
    let changed = match &old {
        Some(lock) => lock.drift(&now).into_iter().chain(lock.arm_drift(&now)).collect(),
        None => vec![format!(
            "no seal yet: {} held-out task folder(s), {} server manifest(s){}",
            now.tasks.len(),
            now.manifests.len(),
            if now.gold.is_some() { ", the gold set" } else { "" }
        )],
    };
    let path = Lock::path(&tasks_dir);
    let mut report = SealReport {
        lock: path.display().to_string(),
        status: "unchanged",
        held_out_tasks: now.tasks.len(),
        servers: now.manifests.len(),
        gold: now.gold.is_some(),
        changed: changed.clone(),
        sealed_at: old.as_ref().map(|l| l.sealed_at.to_rfc3339_opts(SecondsFormat::Secs, true)),
        reason: old.as_ref().map(|l| l.reason.clone()),
    };
    let program = crate::invoked::program();
    let exit = if changed.is_empty() {
        if !args.json {
            println!(
                "{}: the held-out tasks, their servers' manifests and the gold set match the seal ({}); nothing written",
                path.display(),
                old.as_ref().map(Lock::describe).unwrap_or_default()
            );
        }
        crate::exit::Exit::Ok
    } else if args.check || args.reason.is_none() {
        report.status = "drifted";
        if !args.json {
            eprintln!("{}: the tree differs from the seal:\n  {}", path.display(), changed.join("\n  "));
            if !args.check {
                eprintln!("nothing written: sealing needs a reason, kept in the lock and shown in reports: `{program} seal --reason \"…\"`");
            }
        }
        crate::exit::Exit::Refused
    } else {
        let reason = args.reason.as_deref().unwrap_or_default().trim().to_owned();
        if reason.is_empty() {
            bail!("--reason is empty: say why the seal is made or changed (it is kept in the lock and shown in reports)");
        }
        if now.tasks.is_empty() {
            bail!("no task under {} is held out (split = \"held_out\" in its meta.toml): there is nothing to seal", tasks_dir.display());
        }
        let lock = Lock::seal(old.as_ref(), now, reason.clone(), changed.clone());
        lock.write(&tasks_dir)?;
        let sealed_at = lock.sealed_at;
        report.status = "sealed";
        report.sealed_at = Some(sealed_at.to_rfc3339_opts(SecondsFormat::Secs, true));
        report.reason = Some(reason);
        if !args.json {
            println!(
                "{}: sealed {} held-out task folder(s), {} server manifest(s){}:\n  {}",
                path.display(),
                lock.tasks.len(),
                lock.manifests.len(),
                if lock.gold.is_some() { " and the gold set" } else { "" },
                changed.join("\n  ")
            );
        }
        crate::exit::Exit::Ok
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(exit)
}
