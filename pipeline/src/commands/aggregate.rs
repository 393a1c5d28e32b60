//! `pipeline aggregate`: records → report.md, summary.json, chart.png, chart.svg, report.html
//! (and, for a large experiment, `report-sessions/`); `--compare A B` sets two experiments side by
//! side in compare.md, compare.json and compare.html.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

#[derive(Debug, Args)]
pub struct AggregateArgs {
    /// The experiment to report on: `<results-dir>/<exp-name>`.
    #[arg(long, conflicts_with_all = ["result_dir", "merge", "compare"], required_unless_present_any = ["result_dir", "merge", "compare"])]
    pub exp_name: Option<String>,
    /// Where experiments live.
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// The experiment folder itself (instead of --exp-name).
    #[arg(long, conflicts_with_all = ["merge", "compare"])]
    pub result_dir: Option<PathBuf>,
    /// Report on several experiments as one — shards of one plan run apart — named under
    /// `--results-dir` (or given by path), comma-separated. Refused unless every record of every part has the same
    /// fingerprint outside the treatment and the plans agree. Needs `--out`.
    #[arg(long, value_delimiter = ',', requires = "out", conflicts_with = "compare")]
    pub merge: Vec<String>,
    /// With `--merge`: report even when planned sessions are missing from every part (a shard
    /// that never ran), listing them above the headline; without it such a merge is refused.
    #[arg(long, requires = "merge")]
    pub allow_incomplete: bool,
    /// Compare two experiments, named under `--results-dir` (or given by path): their cells side by side where the
    /// records are the same measurement, every other cell refused with why. Needs `--out`.
    #[arg(long, num_args = 2, value_names = ["A", "B"], requires = "out")]
    pub compare: Vec<String>,
    /// With `--compare`: the fingerprint fields the experiments may differ in (the declared
    /// difference), comma-separated, e.g. `temperature` or `model_id` or
    /// `world_scale,world_scale_override`.
    #[arg(long, value_delimiter = ',', requires = "compare")]
    pub along: Vec<String>,
    /// Where a merged report or a comparison is written (a new folder; the experiments stay
    /// untouched).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Price table (TOML: `[models."<id>"] input = …, cached_input = …, output = …`, USD per
    /// million tokens). Without it every cost is null.
    #[arg(long)]
    pub prices: Option<PathBuf>,
    /// Relative input-token difference the power estimate targets.
    #[arg(long, default_value_t = 0.10)]
    pub power_difference: f64,
    /// Fewest valid pairs that can support a confirmed or negative verdict.
    #[arg(long, default_value_t = 10)]
    pub min_pairs: usize,
    /// Fewest passing pairs an arm needs for a verdict (and both-passed pairs a "confirmed"
    /// needs); below it, with as many failures, the model is too weak to show a difference.
    #[arg(long, default_value_t = 5)]
    pub min_passes: usize,
    /// The success margin, in points: a "confirmed" needs the pattern shown not worse than the
    /// control by more than this (the success-difference interval's lower bound above −POINTS).
    #[arg(long, default_value_t = 10.0, value_name = "POINTS")]
    pub success_margin: f64,
}

pub fn run(args: AggregateArgs) -> anyhow::Result<()> {
    let opts = aggregate::Options {
        power_relative_difference: args.power_difference,
        min_pairs_for_verdict: args.min_pairs,
        min_passes_for_verdict: args.min_passes,
        success_margin: args.success_margin / 100.0,
        ..Default::default()
    };
    anyhow::ensure!(
        args.success_margin.is_finite() && (0.0..=100.0).contains(&args.success_margin),
        "--success-margin {}: give points between 0 and 100 (10 means the pattern may be at most 10 points less successful than the control)",
        args.success_margin
    );
    if !args.compare.is_empty() {
        return compare(&args, &opts);
    }
    let prices = args.prices.as_deref().map(aggregate::PriceTable::load).transpose()?;
    let mut invocation = aggregate::Invocation {
        generator: Some(format!("pipeline {}", crate::build_info::VERSION)),
        command: Some(crate::redact::command_line(std::env::args())),
        generated_at: Some(chrono::Utc::now()),
        report_dir: None,
    };
    let (dir, report) = if !args.merge.is_empty() {
        let parts: Vec<PathBuf> = args.merge.iter().map(|n| experiment_dir(&args.results_dir, n)).collect::<anyhow::Result<_>>()?;
        let out = args.out.clone().context("--merge needs --out DIR")?;
        anyhow::ensure!(!parts.contains(&out), "--out must be a new folder, not one of the parts (their reports stay their own)");
        let merged = aggregate::merge_experiments_with(&parts, args.allow_incomplete)?;
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        invocation.report_dir = Some(out.clone());
        (out, aggregate::report_with(&merged, prices.as_ref(), &opts, &invocation)?)
    } else {
        let dir = match (&args.result_dir, &args.exp_name) {
            (Some(d), _) => d.clone(),
            (None, Some(name)) => args.results_dir.join(name),
            (None, None) => anyhow::bail!("give --exp-name, --result-dir, --merge or --compare"),
        };
        anyhow::ensure!(dir.is_dir(), "{} is not an experiment folder", dir.display());
        let exp = aggregate::load_experiment(&dir)?;
        let report = aggregate::report_with(&exp, prices.as_ref(), &opts, &invocation)?;
        (dir, report)
    };
    let written = report.write(&dir).with_context(|| format!("writing the report into {}", dir.display()))?;
    print!("{}", report.markdown);
    let pages = if written.session_pages.is_empty() {
        String::new()
    } else {
        format!(", and {} session pages in {}", written.session_pages.len(), dir.join(aggregate::html::SESSION_DIR).display())
    };
    eprintln!(
        "wrote {}, {}, {}, {}, {}{pages}",
        written.markdown.display(),
        written.json.display(),
        written.png.display(),
        written.svg.display(),
        written.html.display()
    );
    // The next step: the page a person reads (self-contained, no network).
    eprintln!("open {} in a browser (it needs no network)", written.html.display());
    Ok(())
}

fn compare(args: &AggregateArgs, opts: &aggregate::Options) -> anyhow::Result<()> {
    let (a, b) = (experiment_dir(&args.results_dir, &args.compare[0])?, experiment_dir(&args.results_dir, &args.compare[1])?);
    let out = args.out.clone().context("--compare needs --out DIR")?;
    anyhow::ensure!(out != a && out != b, "--out must be a new folder, not one of the experiments (their reports stay their own)");
    let comparison = aggregate::compare::compare(&a, &b, &args.along, opts)?;
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let written = comparison.write(&out)?;
    print!("{}", comparison.markdown());
    eprintln!("wrote {}", written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
    Ok(())
}

/// An experiment `--merge` or `--compare` names: a folder under `--results-dir` by that name, or
/// else the folder at that path (`results/exp` typed as the shell completes it), or neither —
/// refused naming both places looked at.
fn experiment_dir(results_dir: &std::path::Path, name: &str) -> anyhow::Result<PathBuf> {
    let under = results_dir.join(name);
    if under.is_dir() {
        return Ok(under);
    }
    let path = PathBuf::from(name);
    anyhow::ensure!(
        path.is_dir(),
        "no experiment {name:?}: neither {} nor {} is a folder (name an experiment under --results-dir, or give its path)",
        under.display(),
        path.display()
    );
    Ok(path)
}
