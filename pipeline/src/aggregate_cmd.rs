//! `pipeline aggregate`: records → report.md, summary.json, chart.png, chart.svg, report.html.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

#[derive(Debug, Args)]
pub struct AggregateArgs {
    /// The experiment to report on: `<results-dir>/<exp-name>`.
    #[arg(long, conflicts_with_all = ["result_dir", "merge"], required_unless_present_any = ["result_dir", "merge"])]
    pub exp_name: Option<String>,
    /// Where experiments live.
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// The experiment folder itself (instead of --exp-name).
    #[arg(long, conflicts_with = "merge")]
    pub result_dir: Option<PathBuf>,
    /// Report on several experiments as one — shards of one plan run apart — named under
    /// `--results-dir`, comma-separated. Refused unless every record of every part has the same
    /// fingerprint outside the treatment and the plans agree. Needs `--out`.
    #[arg(long, value_delimiter = ',', requires = "out")]
    pub merge: Vec<String>,
    /// Where a merged report is written (a new folder; the parts stay untouched).
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
}

pub fn run(args: AggregateArgs) -> anyhow::Result<()> {
    let prices = args.prices.as_deref().map(aggregate::PriceTable::load).transpose()?;
    let opts = aggregate::Options { power_relative_difference: args.power_difference, min_pairs_for_verdict: args.min_pairs, ..Default::default() };
    let (dir, report) = if !args.merge.is_empty() {
        let parts: Vec<PathBuf> = args.merge.iter().map(|n| args.results_dir.join(n)).collect();
        let out = args.out.clone().context("--merge needs --out DIR")?;
        anyhow::ensure!(!parts.contains(&out), "--out must be a new folder, not one of the parts (their reports stay their own)");
        let merged = aggregate::merge_experiments(&parts)?;
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        (out, aggregate::report_from(&merged, prices.as_ref(), &opts)?)
    } else {
        let dir = match (&args.result_dir, &args.exp_name) {
            (Some(d), _) => d.clone(),
            (None, Some(name)) => args.results_dir.join(name),
            (None, None) => anyhow::bail!("give --exp-name, --result-dir or --merge"),
        };
        anyhow::ensure!(dir.is_dir(), "{} is not an experiment folder", dir.display());
        let report = aggregate::report(&dir, prices.as_ref(), &opts)?;
        (dir, report)
    };
    let written = report.write(&dir).with_context(|| format!("writing the report into {}", dir.display()))?;
    print!("{}", report.markdown);
    eprintln!(
        "wrote {}, {}, {}, {}, {}",
        written.markdown.display(),
        written.json.display(),
        written.png.display(),
        written.svg.display(),
        written.html.display()
    );
    Ok(())
}
