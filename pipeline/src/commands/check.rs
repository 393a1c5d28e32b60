//! `pipeline check SPEC` (the gates and their record, no sessions) and `pipeline run SPEC` (the
//! gates, then the run loop with exactly the spec's settings). A failing gate prints
//! `INVALID — gate failures:` and one line per failure that starts with the gate's name, starts
//! no session and exits 1.
//!
//! `check.json` belongs to the experiment it describes: it is written only when the folder is new
//! or already holds this spec's experiment, and — for `run` — only after the resume check has
//! accepted the plan. Any other check (a failing one, or one of another spec) is written beside
//! it as `check-<time>.json`, so a finished experiment's gate record is never overwritten.

use std::path::{Path, PathBuf};

use anyhow::Context;
use records::ExperimentManifest;

use crate::exit::{Exit, Reported};
use crate::gates::CheckManifest;
use crate::input::spec::{InputDirs, Spec};
use crate::plan::{RunPlan, SpecRunOptions};

/// `pipeline check SPEC` / `pipeline run SPEC`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The experiment spec (TOML), e.g. from `pipeline freeze`.
    pub spec: Option<PathBuf>,
    /// Where experiments are written.
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    #[command(flatten)]
    pub dirs: InputDirs,
    /// Do not probe the model endpoint (G6); recorded in check.json, the manifest, every record
    /// and the report.
    #[arg(long)]
    pub skip_preflight: bool,
    /// `run`: rerun the sessions recorded invalid; their old records are kept under `superseded/`.
    #[arg(long)]
    pub retry_invalid: bool,
    /// `run`: stop when this many sessions in a row are invalid for the same reason.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_consecutive_invalid: u32,
    /// `run`: seconds before one model request times out.
    #[arg(long, default_value_t = 120)]
    pub request_timeout_secs: u64,
    /// `run`: extra HTTP header for the model provider, `NAME=VALUE` (values are never written).
    #[arg(long = "header", value_parser = crate::input::flags::parse_header)]
    pub headers: Vec<(String, String)>,
    /// `run`: export every session as an OpenTelemetry trace (GenAI conventions) to this OTLP/HTTP
    /// collector, e.g. `http://127.0.0.1:4318` (`/v1/traces` is added). Without it, the standard
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT are read (headers from
    /// OTEL_EXPORTER_OTLP_HEADERS). Export never blocks or fails a session; what did not get
    /// there is counted in the manifest.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// `run`: a budget for this run (a spec's own `budget_tokens`/`budget_usd` take its place;
    /// `--prices` prices either).
    #[command(flatten)]
    pub budget: crate::input::flags::BudgetFlags,
    /// `run`: only shard I of N of the spec's plan (`2/3`); see `pipeline --help`.
    #[arg(long, value_parser = crate::shard::flag_value)]
    pub shard: Option<String>,
    /// `run`: how many shards the plan is split into, when the engine's task id is the shard's
    /// 0-based index (`JOB_COMPLETION_INDEX`, or `SLURM_ARRAY_TASK_ID`); see `pipeline --help`.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub shard_count: Option<u32>,
    /// Selection flags belong to the ad-hoc form (`pipeline --module …`); given here they are
    /// refused with a pointer to it.
    #[arg(long, hide = true, value_delimiter = ',')]
    pub mcp: Vec<String>,
    #[arg(long, hide = true, value_delimiter = ',')]
    pub module: Vec<String>,
    #[arg(long, hide = true)]
    pub all: bool,
}

impl CheckArgs {
    fn spec_path(&self, sub: &str) -> anyhow::Result<&Path> {
        if !self.mcp.is_empty() || !self.module.is_empty() || self.all {
            let p = crate::invoked::program();
            anyhow::bail!(
                "`{p} {sub}` takes a spec file, not selection flags. For an ad-hoc run leave out `{sub}`: \
                 `{p} --module M --models oracle --k 3`; for a gated experiment write a spec first: \
                 `{p} freeze --module M --models oracle --out spec.toml`, then `{p} {sub} spec.toml`"
            );
        }
        self.spec.as_deref().with_context(|| {
            let p = crate::invoked::program();
            format!("`{p} {sub}` needs a spec file: `{p} {sub} spec.toml` (write one with `{p} freeze`)")
        })
    }
}

/// Loads the spec and runs the gates (`run` takes what it may from the experiment's own check,
/// [`crate::gates::check`]). On INVALID prints the failures, records the check where it
/// may go, and refuses.
async fn gated(args: &CheckArgs, sub: &str) -> anyhow::Result<(Spec, CheckManifest)> {
    let path = args.spec_path(sub)?;
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the spec {}", path.display()))?;
    let spec = Spec::parse(&text).with_context(|| format!("the spec {} is not a valid experiment spec", path.display()))?;
    let earlier = (sub == "run").then(|| crate::gates::Earlier::read(&exp_dir_of(&spec, &args.results_dir).join("check.json"))).flatten();
    let manifest = crate::gates::check(&spec, &text, path, &args.dirs, args.skip_preflight, earlier.as_ref()).await?;
    if let Some(at) = manifest.reused {
        eprintln!(
            "G1's listing, G5 and G7 taken from the check of {} (the same spec, on the same clean commit, its inputs unchanged); G2, G3, G4 and G6 checked again",
            at.format("%Y-%m-%d %H:%M:%S UTC")
        );
    }
    if let Some(w) = &manifest.build_warning {
        eprintln!("WARNING — {w}");
    }
    if manifest.preflight_skipped {
        eprintln!("WARNING — the endpoint preflight is skipped (--skip-preflight); the manifest, every record and the report say so");
    }
    if !manifest.valid() {
        let written = write_check(&exp_dir_of(&spec, &args.results_dir), &manifest)?;
        eprint!("{}", manifest.invalid_text());
        eprintln!("no session was started; gate results: {}", written.display());
        return Err(Reported.into());
    }
    Ok((spec, manifest))
}

fn exp_dir_of(spec: &Spec, results_dir: &Path) -> PathBuf {
    results_dir.join(&spec.experiment)
}

/// Whether `dir` already holds an experiment: a manifest or any session record.
fn holds_experiment(dir: &Path) -> bool {
    dir.join(records::manifest::FILE).is_file()
        || std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().is_dir())
                    .any(|arm| std::fs::read_dir(arm.path()).is_ok_and(|mut f| f.any(|x| x.is_ok_and(|x| x.file_name().to_string_lossy().ends_with(".json")))))
            })
            .unwrap_or(false)
}

/// The spec sha256 of the check an experiment was run from (none for a flag run).
fn experiment_spec_sha(dir: &Path) -> anyhow::Result<Option<String>> {
    Ok(ExperimentManifest::read(dir)?.and_then(|m| m.check).and_then(|c| c["spec_sha256"].as_str().map(str::to_owned)))
}

/// Writes the check as the experiment's own `check.json` when it may (a valid check of a new
/// folder, or of this spec's experiment), else beside it as `check-<time>.json`.
fn write_check(dir: &Path, manifest: &CheckManifest) -> anyhow::Result<PathBuf> {
    let own = !holds_experiment(dir) || (manifest.valid() && experiment_spec_sha(dir)?.as_deref() == Some(manifest.spec_sha256.as_str()));
    let path = if own { dir.join("check.json") } else { dir.join(format!("check-{}.json", manifest.checked_at.format("%Y%m%dT%H%M%S%.3fZ"))) };
    records::write_atomically(&path, &serde_json::to_vec_pretty(manifest)?)?;
    Ok(path)
}

/// `pipeline check SPEC`: gates and their record only; spends nothing.
pub async fn check_cmd(args: CheckArgs) -> anyhow::Result<Exit> {
    let (spec, manifest) = gated(&args, "check").await?;
    let written = write_check(&exp_dir_of(&spec, &args.results_dir), &manifest)?;
    eprintln!("VALID — all gates passed (G1–G7) for {}: {}", spec.experiment, written.display());
    if written.file_name().is_some_and(|n| n != "check.json") {
        eprintln!("note: {} holds another run's sessions, so this check was written beside its own", written.parent().unwrap_or(Path::new(".")).display());
    }
    Ok(Exit::Ok)
}

/// `pipeline run SPEC`: check, then the run loop with exactly the spec's settings.
pub async fn run_cmd(args: CheckArgs) -> anyhow::Result<Exit> {
    let (spec, manifest) = gated(&args, "run").await?;
    let exp_dir = exp_dir_of(&spec, &args.results_dir);
    // Resuming is for the same spec only: sessions of another spec (or of a flag-started run)
    // are never mixed into this experiment's records.
    if holds_experiment(&exp_dir) {
        let sha = experiment_spec_sha(&exp_dir)?;
        if sha.as_deref() != Some(manifest.spec_sha256.as_str()) {
            let written = write_check(&exp_dir, &manifest)?;
            anyhow::bail!(
                "{} holds sessions of {}; a spec run resumes only its own sessions. Nothing was started: give the spec a new experiment name (this check: {})",
                exp_dir.display(),
                sha.map_or("a run started without this spec".to_owned(), |s| format!("another spec (sha256 {s})")),
                written.display()
            );
        }
    }
    let options = SpecRunOptions {
        results_dir: args.results_dir.clone(),
        retry_invalid: args.retry_invalid,
        skip_preflight: args.skip_preflight,
        max_consecutive_invalid: args.max_consecutive_invalid,
        request_timeout_secs: args.request_timeout_secs,
        headers: args.headers.clone(),
        check: Some(serde_json::to_value(&manifest)?),
        shard: crate::shard::Shard::resolve(args.shard.as_deref(), args.shard_count, &|k| std::env::var(k).ok()).map_err(|e| anyhow::anyhow!(e))?,
        otlp_endpoint: args.otlp_endpoint.clone(),
        budget: args.budget.clone(),
    };
    let plan = RunPlan::from_spec(&spec, &args.dirs, &options).await?;
    let summary = crate::run::run(plan, |experiment| {
        let path = experiment.dir.join("check.json");
        records::write_atomically(&path, &serde_json::to_vec_pretty(&manifest)?)?;
        eprintln!("VALID — all gates passed (G1–G7) for {}: {}", spec.experiment, path.display());
        Ok(())
    })
    .await?;
    crate::run::print_summary(&summary);
    Ok(summary.exit())
}
