//! `pipeline calibrate`: the report's intervals and verdicts checked against a known truth —
//! simulated experiments from populations with planted effects, analysed by the report's own
//! code (aggregate::calibrate; docs/calibration/).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use aggregate::calibrate::{self, Design, Scenario, Study, StudyConfig};
use anyhow::{Context, bail};

use crate::exit::Exit;

#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// A scenario file (TOML: a population of tasks with planted arm differences; see
    /// aggregate/calibration/ for the committed ones, the default). Repeat for several.
    #[arg(long = "scenario", value_name = "FILE")]
    scenarios: Vec<PathBuf>,
    /// Only the committed scenarios with these names (comma-separated).
    #[arg(long, value_delimiter = ',', conflicts_with = "scenarios")]
    only: Vec<String>,
    /// Designs as TASKSxK, comma-separated (8x3: 8 tasks, 3 pairs each).
    #[arg(long, value_delimiter = ',', default_value = "8x1,8x3,8x5,16x3,27x3")]
    designs: Vec<String>,
    /// Simulated experiments per scenario and design (each with an identical twin for the flip rate).
    #[arg(long, default_value_t = 400)]
    experiments: usize,
    /// The study's seed: the same seed gives the same figures on any machine.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (default: the machine's cores). The figures do not depend on it.
    #[arg(long)]
    jobs: Option<usize>,
    /// Write the study here: study.json, README.md (the tables) and calibration.svg (the chart).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the study as one JSON object instead of the tables.
    #[arg(long)]
    json: bool,
    /// Exit 1 when an interval covers its truth less than 93 % of the time, a null's false
    /// verdicts exceed their α, or a stated MDE is detected less than 70 % of the time (each
    /// beyond the simulation's own sampling error): what CI runs.
    #[arg(long)]
    check: bool,
    /// Study the sequential design (`--until-decided`) instead: its false verdicts under an exact
    /// null beside peeking at the report after every batch, and the pairs it spends to the right
    /// verdict beside the fixed design as likely to reach it (docs/calibration/sequential/).
    #[arg(long)]
    sequential: bool,
    /// With --sequential: tasks per simulated experiment.
    #[arg(long, default_value_t = 16, requires = "sequential")]
    tasks: usize,
    /// With --sequential: the sequential design's cap.
    #[arg(long, default_value_t = 200, requires = "sequential")]
    max_pairs: u32,
    /// With --sequential: pairs between two looks at the report when peeking.
    #[arg(long, default_value_t = 10, requires = "sequential")]
    batch: usize,
    /// With --sequential: the fixed designs' reps per task (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,6,8,12", requires = "sequential")]
    fixed_k: Vec<u32>,
    /// With --sequential: fixed numbers of drawn pairs, each read once by fixed-sample intervals
    /// of the sequences' own question (comma-separated; capped at --max-pairs).
    #[arg(long, value_delimiter = ',', default_value = "20,40,60,80,100,120,150,200", requires = "sequential")]
    fixed_pairs: Vec<usize>,
}

fn scenarios(args: &CalibrateArgs) -> anyhow::Result<Vec<Scenario>> {
    if args.scenarios.is_empty() {
        let all = calibrate::committed_scenarios();
        if args.only.is_empty() {
            return Ok(all);
        }
        let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        return args
            .only
            .iter()
            .map(|want| {
                all.iter()
                    .find(|s| &s.name == want)
                    .cloned()
                    .with_context(|| format!("no committed scenario `{want}`: the committed ones are {}", names.join(", ")))
            })
            .collect();
    }
    args.scenarios.iter().map(|p| read_scenario(p)).collect()
}

fn read_scenario(path: &Path) -> anyhow::Result<Scenario> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the scenario {}", path.display()))?;
    let s: Scenario = toml::from_str(&text).with_context(|| format!("{}: not a scenario (see aggregate/calibration/null.toml for one)", path.display()))?;
    s.check().map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(s)
}

pub fn run(args: CalibrateArgs) -> anyhow::Result<Exit> {
    if args.experiments < 20 {
        bail!("--experiments {}: at least 20 per scenario and design, or the rates mean nothing (400 is the default)", args.experiments);
    }
    if args.sequential {
        return run_sequential(&args);
    }
    let designs: Vec<Design> = args.designs.iter().map(|d| Design::parse(d)).collect::<Result<_, _>>().map_err(anyhow::Error::msg)?;
    let scenarios = scenarios(&args)?;
    let mut names = std::collections::BTreeSet::new();
    if let Some(dup) = scenarios.iter().find(|s| !names.insert(s.name.as_str())) {
        bail!("two scenarios are named `{}`: names key the results", dup.name);
    }
    let threads = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)).max(1);
    let config = StudyConfig { scenarios, designs, experiments: args.experiments, seed: args.seed, threads };
    let cells = config.scenarios.len() * config.designs.len();
    let started = std::time::Instant::now();
    let mut done = 0;
    let study = calibrate::run(&config, |c| {
        done += 1;
        eprintln!(
            "[{done}/{cells}] {} at {}: token interval covered {}, right verdict {}",
            c.scenario,
            c.design.label(),
            c.coverage.token_difference.rate.map_or("—".into(), |r| format!("{:.1} %", 100.0 * r)),
            c.reached_right_verdict.rate.map_or("—".into(), |r| format!("{:.1} %", 100.0 * r)),
        );
    });
    eprintln!("{} simulated experiments (with their twins) in {:.1} s", 2 * cells * args.experiments, started.elapsed().as_secs_f64());
    if let Some(dir) = &args.out {
        write_study(dir, &study)?;
        eprintln!("wrote {}", dir.display());
    }
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut stdout, &study)?;
        writeln!(stdout)?;
    } else if args.out.is_none() {
        write!(stdout, "{}", calibrate::render::markdown(&study))?;
    }
    Ok(shortfalls(&calibrate::shortfalls(&study, calibrate::COVERAGE_FLOOR, calibrate::MDE_FLOOR), args.check))
}

/// Says every figure below its stated level; with --check, they fail the command.
fn shortfalls(short: &[String], check: bool) -> Exit {
    for s in short {
        eprintln!("below its stated level: {s}");
    }
    if check && !short.is_empty() {
        eprintln!("error: {} figure(s) below their stated level (above)", short.len());
        return Exit::Refused;
    }
    Exit::Ok
}

fn run_sequential(args: &CalibrateArgs) -> anyhow::Result<Exit> {
    use aggregate::calibrate::sequential;
    if args.tasks < 2 || args.batch == 0 || args.fixed_k.contains(&0) || args.fixed_pairs.contains(&0) {
        bail!("--tasks needs at least 2, --batch at least 1, --fixed-k reps and --fixed-pairs of at least 1");
    }
    let scenarios = if args.scenarios.is_empty() && args.only.is_empty() { sequential::default_scenarios() } else { scenarios(args)? };
    let threads = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)).max(1);
    let config = sequential::SequentialConfig {
        scenarios,
        tasks: args.tasks,
        rule: aggregate::sequential::Rule { max_pairs: args.max_pairs, min_pairs: aggregate::Options::default().min_pairs_for_verdict as u32 },
        batch: args.batch,
        fixed_k: args.fixed_k.clone(),
        fixed_n: args.fixed_pairs.iter().map(|&n| n.min(args.max_pairs as usize)).collect(),
        experiments: args.experiments,
        seed: args.seed,
        threads,
    };
    let started = std::time::Instant::now();
    let study = sequential::run(&config, |c| {
        eprintln!(
            "{}: sequential right verdict {}, confirmed {}; peeking right {}, confirmed {}",
            c.scenario,
            c.sequential.right.rate.map_or("—".into(), |r| format!("{:.1} %", 100.0 * r)),
            c.sequential.verdicts.confirmed.rate.map_or("—".into(), |r| format!("{:.1} %", 100.0 * r)),
            c.peeking.right.rate.map_or("—".into(), |r| format!("{:.1} %", 100.0 * r)),
            c.peeking.verdicts.confirmed.rate.map_or("—".into(), |r| format!("{:.1} %", 100.0 * r)),
        );
    });
    eprintln!("{} scenario(s) in {:.1} s", study.cells.len(), started.elapsed().as_secs_f64());
    let mut json = serde_json::to_string_pretty(&study)?;
    json.push('\n');
    let markdown = sequential::markdown(&study);
    if let Some(dir) = &args.out {
        write_files(dir, &[("study.json", json.clone()), ("README.md", markdown.clone())])?;
        eprintln!("wrote {}", dir.display());
    }
    let mut stdout = std::io::stdout().lock();
    if args.json {
        write!(stdout, "{json}")?;
    } else if args.out.is_none() {
        write!(stdout, "{markdown}")?;
    }
    Ok(shortfalls(&sequential::shortfalls(&study), args.check))
}

/// study.json, README.md and calibration.svg, each written whole (a temporary file renamed).
fn write_study(dir: &Path, study: &Study) -> anyhow::Result<()> {
    let svg = calibrate::render::svg(study)?;
    let mut json = serde_json::to_string_pretty(study)?;
    json.push('\n');
    write_files(dir, &[("study.json", json), ("README.md", calibrate::render::markdown(study)), ("calibration.svg", svg)])
}

/// Each file written whole (a temporary file renamed) into `dir`.
fn write_files(dir: &Path, files: &[(&str, String)]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, text) in files {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.part"));
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
