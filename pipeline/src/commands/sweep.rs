//! `pipeline sweep`: one module, one model, a series of levels of one factor — world scale
//! (`--scale 1,2,4,8`), the size of the state a task family works on (`--size 1,2,4,8`), or the
//! number of tools a catalogue module lists (`--catalogue 25,50,…,800`) — where does the pattern
//! start to pay? Every level is its own experiment (`results/<sweep>/scale<L>/`, `size<L>/` or
//! `catalogue<L>/`, its own manifest, lock and fingerprints, so levels can never be pooled), run and
//! reported exactly as `pipeline --module …` would; then `sweep.md`, `sweep.json` and
//! `sweep.svg` beside them give, per level and arm, success, calls, turns and input tokens with
//! their intervals, and the crossover: the level from which the pattern's cost stays below the
//! control's, bracketed by the levels around it, or "no crossover in range".
//!
//! The cost compared is what the experiment measures: the paired input-token difference with its
//! bootstrap interval for a model, the structural floor's estimated input tokens for the oracle
//! (deterministic: no interval, labelled an estimate).

use std::path::{Path, PathBuf};

use aggregate::Summary;
use aggregate::metrics::ModuleReport;
use anyhow::Context;
use records::Role;
use serde::Serialize;

use crate::exit::Exit;
use crate::input::flags::RunArgs;
use crate::plan::RunPlan;
use crate::split::SplitSelection;

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// The run's flags, as for `pipeline --module …`; `--scale`, `--size` or `--catalogue` takes
    /// the levels, comma-separated (the others may fix one value).
    #[command(flatten)]
    pub run: RunArgs,
    /// Run nothing: write sweep.md, sweep.json and sweep.svg from the levels already recorded
    /// (e.g. after an upgrade, whose new build would not resume the old levels).
    #[arg(long)]
    pub report_only: bool,
}

/// One level's figures per arm.
#[derive(Debug, Clone, Serialize)]
pub struct LevelArm {
    pub server: String,
    pub attempted: usize,
    pub valid: usize,
    pub success_rate: Option<f64>,
    pub success_wilson95: Option<[f64; 2]>,
    /// Model sessions: mean tool calls, turns and input tokens (the last with its 95% interval).
    /// Null for the oracle.
    pub calls_mean: Option<f64>,
    pub turns_mean: Option<f64>,
    pub turns_ci95: Option<[f64; 2]>,
    pub input_tokens_mean: Option<f64>,
    pub input_tokens_ci95: Option<[f64; 2]>,
    /// The oracle: Σ over tasks of the structural floor (median per task), an estimate.
    pub floor_calls: Option<f64>,
    pub floor_estimated_input_tokens: Option<u64>,
    /// The oracle per session: the mean over tasks of each task's median floor (what the table
    /// and the chart show, in the report's unit).
    pub floor_calls_per_session: Option<f64>,
    pub floor_estimated_input_tokens_per_session: Option<f64>,
    /// The oracle per session: what a model would write (arguments and answer), an estimate.
    #[serde(default)]
    pub floor_estimated_output_tokens_per_session: Option<f64>,
}

/// What a sweep varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Factor {
    /// `--scale`: the world's size (`docs/patterns.md`, the synthetic world).
    WorldScale,
    /// `--size`: the size parameter of the module's task families.
    StateSize,
    /// `--catalogue`: how many tools of other systems a catalogue module's arms list.
    Catalogue,
    /// `--distractors`: how many tools of other servers the client lists beside both arms'.
    Distractors,
}

impl Factor {
    /// The word for one level ("scale 4", "size 4") and the level folders' prefix.
    pub fn word(self) -> &'static str {
        match self {
            Self::WorldScale => "scale",
            Self::StateSize => "size",
            Self::Catalogue => "catalogue",
            Self::Distractors => "distractors",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Self::WorldScale => "world scale",
            Self::StateSize => "state size",
            Self::Catalogue => "catalogue size",
            Self::Distractors => "distractors listed",
        }
    }
}

/// One level of the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Level {
    /// The factor's value at this level.
    pub level: u32,
    /// The world scale of this level's sessions: the level in a scale sweep, the fixed `--scale`
    /// (or null: each task's own) in a size sweep.
    pub scale: Option<u32>,
    /// The family size of this level (size sweeps).
    pub size: Option<u32>,
    /// The catalogue size of this level's servers (catalogue sweeps; the fixed `--catalogue` of
    /// another sweep of a catalogue module, or null: the module's default).
    pub catalogue: Option<u32>,
    /// The distractors listed beside both arms at this level (distractor sweeps; the fixed
    /// `--distractors` of another sweep, or null: none).
    pub distractors: Option<u32>,
    pub experiment: String,
    pub pattern: Option<LevelArm>,
    pub control: Option<LevelArm>,
    /// Pattern − control cost at this level: the paired mean per session for a model; for the
    /// oracle the difference of the floors summed over tasks (`floor_estimated_input_tokens`).
    pub cost_difference: Option<f64>,
    /// The same per session: for a model equal to `cost_difference`, for the oracle the
    /// difference of the per-session floors.
    pub cost_difference_per_session: Option<f64>,
    pub cost_difference_ci95: Option<[f64; 2]>,
    pub verdict: Option<String>,
    /// The level report's reason for its verdict.
    pub verdict_reason: Option<String>,
    /// The level report found the model too weak to show a difference (its costs are of failing).
    pub model_too_weak: Option<bool>,
}

/// The sweep's result, as written to `sweep.json`.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    pub sweep: String,
    pub module: String,
    /// The tasks the levels ran and the figures read: `dev` or `held_out`, never both pooled.
    pub split: records::Split,
    pub model: String,
    /// `world scale`, `state size` or `catalogue size`.
    pub factor: &'static str,
    pub factor_kind: Factor,
    /// `estimated input tokens (oracle floor)` or `input tokens (paired, measured)`.
    pub cost: String,
    pub levels: Vec<Level>,
    pub crossover: Crossover,
    /// How the pattern's cost difference, and its success difference, move from the smallest
    /// level to the largest: grows, shrinks, stays or flips (point differences; each level's
    /// intervals are in its row).
    pub cost_trend: String,
    pub success_trend: String,
    /// The attack every level ran under (`--attack NAME` beside the factor), from the levels'
    /// own manifests; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<String>,
}

/// Where the pattern starts to pay within the levels run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Crossover {
    /// The pattern is cheaper at every level from `from` up, and not at `after` (the level
    /// below, if any): the crossover lies in (after, from].
    At { from: u32, after: Option<u32> },
    /// The pattern is cheaper from the smallest level on.
    FromTheStart { from: u32 },
    /// At no level from which it stays cheaper.
    NoneInRange,
    /// Some level lacks a difference to stand behind (no valid pairs, no floor, no interval, a
    /// withheld verdict, a model too weak to show a difference): nothing can be said.
    Unknown {
        missing: Vec<u32>,
        /// Why, per level missing, in the level report's words.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasons: Vec<String>,
    },
}

impl Crossover {
    pub fn sentence(&self, cost: &str, factor: Factor) -> String {
        let w = factor.word();
        match self {
            Self::At { from, after: Some(a) } => {
                format!("the pattern's {cost} falls below the control's between {w} {a} and {w} {from} and stays below up to the largest level")
            }
            Self::At { from, after: None } | Self::FromTheStart { from } => {
                format!("the pattern's {cost} is below the control's from {w} {from}, the smallest level run")
            }
            Self::NoneInRange => format!("no crossover in range: at no level does the pattern's {cost} stay below the control's"),
            Self::Unknown { missing, reasons } if reasons.is_empty() => format!("unknown: {w}(s) {missing:?} have no {cost} difference to compare"),
            Self::Unknown { missing, reasons } => {
                format!("unknown: {w}(s) {missing:?} have no {cost} difference to stand behind ({})", reasons.join("; "))
            }
        }
    }
}

/// Reads the crossover off per-level differences (pattern − control; `hi` the upper end of its
/// interval, the value itself when there is none): the smallest level from which every
/// difference's upper end is below zero.
pub fn crossover(levels: &[(u32, Option<f64>)]) -> Crossover {
    let missing: Vec<u32> = levels.iter().filter(|(_, d)| d.is_none()).map(|(l, _)| *l).collect();
    if !missing.is_empty() {
        return Crossover::Unknown { missing, reasons: Vec::new() };
    }
    let below: Vec<bool> = levels.iter().map(|(_, d)| d.is_some_and(|hi| hi < 0.0)).collect();
    let Some(first) = (0..levels.len()).find(|&i| below[i..].iter().all(|b| *b)) else { return Crossover::NoneInRange };
    if first == 0 {
        return Crossover::FromTheStart { from: levels[0].0 };
    }
    Crossover::At { from: levels[first].0, after: Some(levels[first - 1].0) }
}

pub async fn run(args: SweepArgs) -> anyhow::Result<Exit> {
    let several = [
        (Factor::WorldScale, &args.run.scale),
        (Factor::StateSize, &args.run.size),
        (Factor::Catalogue, &args.run.catalogue),
        (Factor::Distractors, &args.run.distractors),
    ]
    .into_iter()
    .filter(|(_, levels)| levels.len() >= 2)
    .map(|(f, levels)| (f, levels.clone()))
    .collect::<Vec<_>>();
    let attacks = super::sweep_attacks::levels(&args.run.attack);
    if attacks.len() >= 2 {
        anyhow::ensure!(
            several.is_empty(),
            "a sweep varies one factor: give several attacks to --attack, or several levels to one of --scale, --size, --catalogue and --distractors, not both"
        );
    }
    // The factor, when it is a quantity (`None`: a sweep over attacks, a category).
    let numeric = match &several[..] {
        _ if attacks.len() >= 2 => None,
        [one] => Some(one.clone()),
        [] => anyhow::bail!(
            "a sweep needs at least two levels: --scale 1,2,4,8 (world scale), --size 1,2,4,8 (task family size), --catalogue 25,50,100 (catalogue size), --distractors 0,10,50,200 (tools of other servers listed) or --attack none,A,B (attacks of tasks/attacks/)"
        ),
        _ => anyhow::bail!("a sweep varies one factor: give several levels to one of --scale, --size, --catalogue and --distractors, not to two"),
    };
    let word = numeric.as_ref().map_or("attack", |(f, _)| f.word());
    anyhow::ensure!(args.run.module.len() == 1 && args.run.mcp.is_empty() && !args.run.all, "a sweep runs one module with both arms: --module M");
    anyhow::ensure!(args.run.models.len() == 1, "a sweep runs one model (or the oracle): --models M");
    anyhow::ensure!(
        args.run.budget.budget_tokens.is_none() && args.run.budget.budget_usd.is_none(),
        "a sweep does not take a budget yet: each level is its own run, so a budget would bound each level, not the sweep. Run the levels one by one (`--{word} L --budget-…`), or the sweep without one"
    );
    anyhow::ensure!(
        !args.run.sequential.until_decided,
        "a sweep does not run --until-decided yet: each level would stop on its own verdict, and the sweep's trend reads levels of equal design. Run the levels one by one (`--{word} L --until-decided …`), or the sweep with --k"
    );
    let shard = crate::shard::Shard::resolve(args.run.shard.as_deref(), args.run.shard_count, &|k| std::env::var(k).ok()).map_err(|e| anyhow::anyhow!(e))?;
    anyhow::ensure!(
        shard.is_none(),
        "a sweep is not split into shards yet (shard {} was asked for): run each level as its own sharded experiment (`--scale L --shard I/N`) and merge each level's shards with `aggregate --merge`",
        shard.map(|s| s.to_string()).unwrap_or_default()
    );
    // A level's figures are one report cell: dev and held-out tasks are never pooled, so a sweep
    // reads one split.
    let split = match args.run.split {
        None | Some(SplitSelection::Dev) => records::Split::Dev,
        Some(SplitSelection::HeldOut) => records::Split::HeldOut,
        Some(SplitSelection::All) => anyhow::bail!(
            "a sweep reads one split (dev and held-out tasks are never pooled into one figure): --split dev (the default for a sweep) or --split held_out"
        ),
    };
    let module = args.run.module[0].clone();
    let model = args.run.models[0].clone();
    let Some((factor, mut levels)) = numeric else {
        return super::sweep_attacks::run(args, attacks, split, module, model).await;
    };
    levels.sort_unstable();
    levels.dedup();
    let name = args.run.exp_name.clone().unwrap_or_else(|| format!("sweep_{module}_{}_{}", model.replace(['/', ':'], "_"), factor.word()));
    crate::plan::check_experiment_name(&name).context("--exp-name")?;
    let sweep_dir = args.run.results_dir.join(&name);
    let mut worst = Exit::Ok;
    for &level in levels.iter().filter(|_| !args.report_only) {
        let mut run = args.run.clone();
        run.split = Some(if split == records::Split::Dev { SplitSelection::Dev } else { SplitSelection::HeldOut });
        match factor {
            Factor::WorldScale => run.scale = vec![level],
            Factor::StateSize => run.size = vec![level],
            Factor::Catalogue => run.catalogue = vec![level],
            Factor::Distractors => run.distractors = vec![level],
        }
        let w = factor.word();
        run.exp_name = Some(format!("{w}{level}"));
        run.results_dir = sweep_dir.clone();
        match run_level(&run, &name, &format!("{w} {level}"), "levels above it").await? {
            Exit::StoppedEarly => return Ok(Exit::StoppedEarly),
            Exit::Ok => {}
            exit => worst = exit,
        }
    }
    let fixed = Fixed {
        scale: args.run.scale.first().copied().filter(|_| factor != Factor::WorldScale),
        catalogue: args.run.catalogue.first().copied().filter(|_| factor != Factor::Catalogue),
        distractors: args.run.distractors.first().copied().filter(|_| factor != Factor::Distractors),
    };
    let report = report(&sweep_dir, &name, &module, &model, factor, &levels, fixed, split)?;
    records::write_atomically(&sweep_dir.join("sweep.json"), &serde_json::to_vec_pretty(&report)?)?;
    let md = markdown(&report);
    let svg = aggregate::sweep_chart::render_svg(&chart(&report)).context("drawing the sweep's chart")?;
    records::write_atomically(&sweep_dir.join("sweep.svg"), svg.as_bytes())?;
    records::write_atomically(&sweep_dir.join("sweep.md"), md.as_bytes())?;
    print!("{md}");
    eprintln!(
        "wrote {}, {} and {}; each level's own report is in its folder",
        sweep_dir.join("sweep.md").display(),
        sweep_dir.join("sweep.json").display(),
        sweep_dir.join("sweep.svg").display()
    );
    Ok(worst)
}

/// Runs one level of a sweep (`what`: "scale 4", "attack none") as its own experiment, exactly as
/// a run from flags would, and prints its summary. A level stopped early stops the sweep: the
/// message says that `rest` were not run and how to resume.
pub(super) async fn run_level(run: &RunArgs, sweep: &str, what: &str, rest: &str) -> anyhow::Result<Exit> {
    eprintln!("sweep {sweep}: {what}");
    let plan = RunPlan::from_flags(run).await?;
    let summary = crate::run::run(plan, |_| Ok(())).await?;
    crate::run::print_summary(&summary);
    let exit = summary.exit();
    if exit == Exit::StoppedEarly {
        eprintln!("sweep {sweep}: stopped at {what}; {rest} were not run. Resume with the same command.");
    }
    Ok(exit)
}

/// What a sweep held fixed besides its factor (the one value of another factor's flag).
#[derive(Debug, Clone, Copy, Default)]
pub struct Fixed {
    pub scale: Option<u32>,
    pub catalogue: Option<u32>,
    pub distractors: Option<u32>,
}

/// Reports every level (writing its own report into its folder) and reads the sweep off them.
#[allow(clippy::too_many_arguments)]
pub fn report(
    sweep_dir: &Path,
    name: &str,
    module: &str,
    model: &str,
    factor: Factor,
    levels: &[u32],
    fixed: Fixed,
    split: records::Split,
) -> anyhow::Result<SweepReport> {
    let oracle = model == "oracle";
    let w = factor.word();
    let mut out = Vec::new();
    let mut attacks = std::collections::BTreeSet::new();
    for &level in levels {
        let dir: PathBuf = sweep_dir.join(format!("{w}{level}"));
        let r = aggregate::report(&dir, None, &aggregate::Options::default()).with_context(|| format!("reporting {w} {level} ({})", dir.display()))?;
        r.write(&dir).with_context(|| format!("writing the report of {w} {level}"))?;
        attacks.insert(r.summary.run.attack.as_ref().map(|a| a.name.clone()));
        let (scale, size, catalogue, distractors) = match factor {
            Factor::WorldScale => (Some(level), None, fixed.catalogue, fixed.distractors),
            Factor::StateSize => (fixed.scale, Some(level), fixed.catalogue, fixed.distractors),
            Factor::Catalogue => (fixed.scale, None, Some(level), fixed.distractors),
            Factor::Distractors => (fixed.scale, None, fixed.catalogue, Some(level)),
        };
        out.push(Level { experiment: format!("{w}{level}"), scale, size, catalogue, distractors, ..level_of(&r.summary, level, module, split, oracle) });
    }
    let (diffs, reasons) = comparable(&out, oracle, w);
    let crossover = match crossover(&diffs) {
        Crossover::Unknown { missing, .. } => {
            Crossover::Unknown { reasons: reasons.into_iter().filter(|(l, _)| missing.contains(l)).map(|(_, r)| r).collect(), missing }
        }
        found => found,
    };
    let cost_points: Vec<(u32, Option<f64>)> = out.iter().map(|l| (l.level, l.cost_difference_per_session)).collect();
    let success_points: Vec<(u32, Option<f64>)> = out
        .iter()
        .map(|l| (l.level, l.pattern.as_ref().and_then(|p| p.success_rate).zip(l.control.as_ref().and_then(|c| c.success_rate)).map(|(p, c)| (p - c) * 100.0)))
        .collect();
    // The same difference as a share of the control's cost, at the smallest and largest level:
    // a fixed cost both arms pay (distractors, say) grows the one and shrinks the other.
    let share = |l: &Level| {
        let control = l.control.as_ref().and_then(|c| if oracle { c.floor_estimated_input_tokens_per_session } else { c.input_tokens_mean });
        l.cost_difference_per_session.zip(control).filter(|(_, c)| *c > 0.0).map(|(d, c)| d / c * 100.0)
    };
    let mut cost_trend = trend(&cost_points, true, w, "tokens");
    if let (Some(first), Some(last)) = (out.first(), out.last())
        && let (Some(a), Some(b)) = (share(first), share(last))
        && out.len() > 1
    {
        cost_trend.push_str(&format!("; as a share of the control's cost, {a:+.1} % at {w} {} and {b:+.1} % at {w} {}", first.level, last.level));
    }
    // One sweep, one attack (or none): levels recorded under different ones are not a series.
    anyhow::ensure!(
        attacks.len() <= 1,
        "{}: its levels were recorded under different attacks ({}); a sweep's levels differ in its factor only",
        sweep_dir.display(),
        attacks.iter().map(|a| a.as_deref().unwrap_or("none")).collect::<Vec<_>>().join(", ")
    );
    Ok(SweepReport {
        attack: attacks.into_iter().next().flatten(),
        cost_trend,
        success_trend: trend(&success_points, false, w, "points"),
        sweep: name.to_owned(),
        module: module.to_owned(),
        split,
        model: model.to_owned(),
        factor: factor.title(),
        factor_kind: factor,
        cost: if oracle { "estimated input tokens (oracle floor, an estimate)".into() } else { "input tokens (paired, measured)".into() },
        crossover,
        levels: out,
    })
}

/// Why a level has no difference to stand behind, by level.
type LevelReasons = Vec<(u32, String)>;

/// The difference each level can stand behind (pattern − control, the upper end of its interval
/// for a model), and why a level has none. The oracle's floor is deterministic: its value is the
/// figure. A model's point difference alone is not: without an interval, under a withheld
/// verdict, or when the model is too weak for its costs to be anything but costs of failing, the
/// level says nothing about where the pattern pays.
fn comparable(levels: &[Level], oracle: bool, word: &str) -> (Vec<(u32, Option<f64>)>, LevelReasons) {
    let mut reasons = Vec::new();
    let diffs = levels
        .iter()
        .map(|l| {
            if oracle {
                return (l.level, l.cost_difference);
            }
            let why = if l.verdict.as_deref() == Some("withheld") {
                Some(l.verdict_reason.clone().unwrap_or_else(|| "verdict withheld".into()))
            } else if l.model_too_weak == Some(true) {
                Some("the model is too weak to show a difference (see the level report)".into())
            } else if l.cost_difference.is_some() && l.cost_difference_ci95.is_none() {
                Some("too few valid pairs for an interval".into())
            } else {
                None
            };
            match why {
                Some(why) => {
                    reasons.push((l.level, format!("{word} {}: {why}", l.level)));
                    (l.level, None)
                }
                None => (l.level, l.cost_difference_ci95.map(|ci| ci[1])),
            }
        })
        .collect();
    (diffs, reasons)
}

/// One level's figures from its report; the caller fills in `experiment`, `scale` and `size`.
fn level_of(s: &Summary, level: u32, module: &str, split: records::Split, oracle: bool) -> Level {
    let m: Option<&ModuleReport> = s.models.iter().flat_map(|m| m.modules.iter()).find(|m| m.module == module && m.split == split);
    let floor = s.oracle_floors.iter().find(|f| f.module == module && f.split == split);
    let arm = |role: Role| -> Option<LevelArm> {
        let metrics = m.and_then(|m| if role == Role::Pattern { m.pattern.as_ref() } else { m.control.as_ref() });
        let rows: Vec<_> = floor.map(|f| f.rows.iter().filter(|r| r.role == role).collect()).unwrap_or_default();
        let server = metrics.map(|a| a.server.clone()).or_else(|| rows.first().map(|r| r.server.clone()))?;
        let attempted = metrics.map(|a| a.attempted).unwrap_or_else(|| rows.iter().map(|r| r.sessions).sum());
        let valid = metrics.map(|a| a.valid).unwrap_or_else(|| rows.iter().map(|r| r.valid).sum());
        let passed: usize = metrics.map(|a| a.passed).unwrap_or_else(|| rows.iter().map(|r| r.passed).sum());
        Some(LevelArm {
            server,
            attempted,
            valid,
            success_rate: metrics.and_then(|a| a.success.rate).or_else(|| (valid > 0).then(|| passed as f64 / valid as f64)),
            success_wilson95: metrics.and_then(|a| a.success.wilson95.as_ref()).map(|i| [i.lo, i.hi]),
            calls_mean: metrics.filter(|a| a.valid > 0).map(|a| a.tool_calls as f64 / a.valid as f64),
            turns_mean: metrics.and_then(|a| a.turns.mean),
            turns_ci95: metrics.and_then(|a| a.turns.mean_ci95.as_ref()).map(|i| [i.lo, i.hi]),
            input_tokens_mean: metrics.and_then(|a| a.input_tokens.mean),
            input_tokens_ci95: metrics.and_then(|a| a.input_tokens.mean_ci95.as_ref()).map(|i| [i.lo, i.hi]),
            floor_calls: (!rows.is_empty() && rows.iter().all(|r| r.calls.is_some())).then(|| rows.iter().filter_map(|r| r.calls).map(|c| c as f64).sum()),
            floor_estimated_input_tokens: floor.and_then(|f| f.total_estimated_input_tokens.get(&role).copied()),
            floor_calls_per_session: floor.and_then(|f| f.per_session_of(role, |p| p.calls).ok()),
            floor_estimated_input_tokens_per_session: floor.and_then(|f| f.per_session_of(role, |p| p.estimated_input_tokens).ok()),
            floor_estimated_output_tokens_per_session: floor.and_then(|f| f.per_session_of(role, |p| p.estimated_output_tokens).ok()),
        })
    };
    let (pattern, control) = (arm(Role::Pattern), arm(Role::Control));
    let (cost_difference, cost_difference_ci95, cost_difference_per_session) = if oracle {
        let d = pattern.as_ref().and_then(|p| p.floor_estimated_input_tokens).zip(control.as_ref().and_then(|c| c.floor_estimated_input_tokens));
        let per = pattern
            .as_ref()
            .and_then(|p| p.floor_estimated_input_tokens_per_session)
            .zip(control.as_ref().and_then(|c| c.floor_estimated_input_tokens_per_session));
        (d.map(|(p, c)| p as f64 - c as f64), None, per.map(|(p, c)| p - c))
    } else {
        let d = m.and_then(|m| m.paired.input_tokens.as_ref());
        (d.map(|d| d.mean), d.and_then(|d| d.ci95.as_ref()).map(|i| [i.lo, i.hi]), d.map(|d| d.mean))
    };
    Level {
        level,
        scale: None,
        size: None,
        catalogue: None,
        distractors: None,
        experiment: String::new(),
        pattern,
        control,
        cost_difference,
        cost_difference_ci95,
        cost_difference_per_session,
        verdict: m.map(|m| format!("{:?}", m.verdict).to_lowercase()),
        verdict_reason: m.map(|m| m.verdict_reason.clone()),
        model_too_weak: m.map(|m| m.model_too_weak),
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or("—".into(), |x| format!("{x:.1}"))
}

fn ci(v: Option<[f64; 2]>) -> String {
    v.map_or(String::new(), |[lo, hi]| format!(" [{lo:.1}, {hi:.1}]"))
}

/// How the pattern's difference from the control (pattern − control, in `unit`) moves over
/// `points` (level, difference; null where a level has none): "grows", "shrinks" or "stays"
/// when the pattern is on one side throughout, "flips" when it changes side. A difference is
/// an advantage when it is below zero (`lower_is_better`: a cost) or above it (success).
pub fn trend(points: &[(u32, Option<f64>)], lower_is_better: bool, w: &str, unit: &str) -> String {
    let known: Vec<(u32, f64)> = points.iter().filter_map(|(l, d)| d.map(|d| (*l, d))).collect();
    if known.len() < 2 {
        return "unknown (fewer than two levels have a difference)".into();
    }
    let advantage = |d: f64| if lower_is_better { -d } else { d };
    let at = |(l, d): (u32, f64)| format!("{d:+.0} {unit} at {w} {l}");
    let (first, last) = (known[0], known[known.len() - 1]);
    let side = |d: f64| {
        let a = advantage(d);
        if a > 0.0 {
            1
        } else if a < 0.0 {
            -1
        } else {
            0
        }
    };
    if let Some(pair) = known.windows(2).find(|p| side(p[0].1) * side(p[1].1) < 0) {
        let now = if side(pair[1].1) > 0 { "ahead" } else { "behind" };
        return format!("flips between {w} {} and {w} {} (from {} to {}: the pattern is {now} from there)", pair[0].0, pair[1].0, at(pair[0]), at(pair[1]));
    }
    let (a0, a1) = (advantage(first.1), advantage(last.1));
    let span = format!("from {} to {}", at(first), at(last));
    if (a1 - a0).abs() <= 0.01 * a0.abs().max(a1.abs()) {
        return format!("stays level ({span})");
    }
    let behind = a0 < 0.0 || a1 < 0.0;
    match (behind, a1.abs() > a0.abs()) {
        (false, true) => format!("the pattern's advantage grows ({span})"),
        (false, false) => format!("the pattern's advantage shrinks ({span})"),
        (true, true) => format!("the pattern's disadvantage grows ({span})"),
        (true, false) => format!("the pattern's disadvantage shrinks ({span})"),
    }
}

/// The sweep as a table a person reads.
pub fn markdown(r: &SweepReport) -> String {
    let mut o = format!("# Sweep {} — {} with {}, over {}\n\n", r.sweep, r.module, r.model, r.factor);
    let w = r.factor_kind.word();
    o.push_str(&format!("**Crossover:** {}.\n\n", r.crossover.sentence(&r.cost, r.factor_kind)));
    o.push_str(&format!(
        "**From the smallest level to the largest** (pattern − control, point differences): cost per session {}; success {}.\n\n",
        r.cost_trend, r.success_trend
    ));
    o.push_str(&format!("Cost compared: {}. Every level is its own experiment (`{w}<L>/`, with its own report); levels are never pooled.\n\n", r.cost));
    if let Some(a) = &r.attack {
        o.push_str(&format!(
            "**Under attack:** every level ran with the attack `{a}` planted (docs/security.md): success is utility under attack, and each level's Security section gives the attack's own verdict.\n\n"
        ));
    }
    o.push_str(match r.split {
        records::Split::Dev => "Tasks: the module's dev tasks (`--split held_out` sweeps its held-out tasks; the two are never pooled).\n\n",
        records::Split::HeldOut => {
            "Tasks: the module's **held-out** tasks (sealed; the dev tasks are swept with `--split dev`, and the two are never pooled).\n\n"
        }
    });
    o.push_str(&format!(
        "| {w} | arm | server | valid / attempted | success | calls / session | turns / session (mean [95% CI]) | input tokens / session (mean [95% CI]) | floor est. input tokens / session | pattern − control / session | floor est. output tokens / session |\n"
    ));
    o.push_str("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for l in &r.levels {
        for (role, arm) in [("pattern", &l.pattern), ("control", &l.control)] {
            let Some(a) = arm else {
                o.push_str(&format!("| {} | {role} | — | 0 / 0 | — | — | — | — | — | — | — |\n", l.level));
                continue;
            };
            let diff = if role == "pattern" { format!("{}{}", num(l.cost_difference_per_session), ci(l.cost_difference_ci95)) } else { String::new() };
            o.push_str(&format!(
                "| {} | {role} | {} | {} / {} | {}{} | {} | {}{} | {}{} | {} | {diff} | {} |\n",
                l.level,
                a.server,
                a.valid,
                a.attempted,
                a.success_rate.map_or("—".into(), |x| format!("{:.0}%", x * 100.0)),
                a.success_wilson95.map_or(String::new(), |[lo, hi]| format!(" [{:.0}%, {:.0}%]", lo * 100.0, hi * 100.0)),
                num(a.calls_mean.or(a.floor_calls_per_session)),
                num(a.turns_mean),
                ci(a.turns_ci95),
                num(a.input_tokens_mean),
                ci(a.input_tokens_ci95),
                a.floor_estimated_input_tokens_per_session.map_or("—".into(), |x| format!("{x:.0}")),
                a.floor_estimated_output_tokens_per_session.map_or("—".into(), |x| format!("{x:.0}")),
            ));
        }
    }
    o.push_str(&format!(
        "\n![cost by {w}](sweep.svg)\n\n\
         Per session: a model's figures are means over its valid sessions at that level (the difference a mean over \
         pairs, with its bootstrap interval); the oracle's floor is the mean over the level's tasks of each task's \
         median (the unit of the level reports). Calls are a model's tool calls per valid session, or the oracle \
         plan's calls. Success is over valid sessions, with its Wilson 95% interval. \
         Est. input tokens are the oracle plan's bytes resent turn after turn, divided by four; est. output tokens \
         are what the plan writes (its calls' arguments and its answer), divided by four: estimates, never \
         measurements (see a level report's Method). sweep.json also gives the floors summed over tasks.\n"
    ));
    o
}

/// The chart of cost against level, per arm, in the table's unit.
pub fn chart(r: &SweepReport) -> aggregate::sweep_chart::SweepChart {
    let oracle = r.model == "oracle";
    let series = |role: Role| -> aggregate::sweep_chart::Series {
        let arm = |l: &Level| if role == Role::Pattern { l.pattern.clone() } else { l.control.clone() };
        let server = r.levels.iter().find_map(|l| arm(l).map(|a| a.server)).unwrap_or_else(|| "—".into());
        let points = r
            .levels
            .iter()
            .map(|l| match arm(l) {
                None => (None, None),
                Some(a) if oracle => (a.floor_estimated_input_tokens_per_session, None),
                Some(a) => (a.input_tokens_mean, a.input_tokens_ci95),
            })
            .collect();
        aggregate::sweep_chart::Series { role, server, points }
    };
    aggregate::sweep_chart::SweepChart {
        title: format!("{} with {}: cost by {}", r.module, r.model, r.factor),
        x_label: r.factor.to_owned(),
        y_label: if oracle { "est. input tokens / session (oracle floor)".into() } else { "input tokens / session (mean, 95% CI)".into() },
        levels: r.levels.iter().map(|l| l.level).collect(),
        series: vec![series(Role::Pattern), series(Role::Control)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_says_whether_the_advantage_grows_shrinks_stays_or_flips() {
        let t = |p: &[(u32, Option<f64>)], lower: bool| trend(p, lower, "distractors", "tokens");
        assert!(t(&[(0, Some(-100.0)), (10, Some(-150.0)), (200, Some(-400.0))], true).starts_with("the pattern's advantage grows (from -100"));
        assert!(t(&[(0, Some(-400.0)), (200, Some(-100.0))], true).starts_with("the pattern's advantage shrinks"));
        assert!(t(&[(0, Some(100.0)), (200, Some(300.0))], true).starts_with("the pattern's disadvantage grows"));
        let flip = t(&[(0, Some(-50.0)), (10, Some(-10.0)), (50, Some(30.0))], true);
        assert!(flip.starts_with("flips between distractors 10 and distractors 50") && flip.ends_with("behind from there)"), "{flip}");
        // Success: higher is better for the pattern.
        let flip = t(&[(0, Some(-5.0)), (50, Some(10.0))], false);
        assert!(flip.contains("ahead from there"), "{flip}");
        assert!(t(&[(0, Some(0.0)), (50, Some(0.0))], false).starts_with("stays level"));
        // A missing level is skipped; fewer than two known is unknown.
        assert!(t(&[(0, Some(-1.0)), (10, None), (50, Some(-3.0))], true).contains("grows"));
        assert!(t(&[(0, None), (50, Some(-3.0))], true).starts_with("unknown"));
    }

    #[test]
    fn the_crossover_is_where_the_pattern_stays_cheaper() {
        assert_eq!(crossover(&[(1, Some(50.0)), (2, Some(10.0)), (4, Some(-5.0)), (8, Some(-40.0))]), Crossover::At { from: 4, after: Some(2) });
        assert_eq!(crossover(&[(1, Some(-1.0)), (2, Some(-3.0))]), Crossover::FromTheStart { from: 1 });
        // Cheaper at one level but not above it: it does not pay from there.
        assert_eq!(crossover(&[(1, Some(5.0)), (2, Some(-3.0)), (4, Some(2.0))]), Crossover::NoneInRange);
        assert_eq!(crossover(&[(1, Some(5.0)), (2, None)]), Crossover::Unknown { missing: vec![2], reasons: vec![] });
        // An interval's upper end at zero is not below it.
        assert_eq!(crossover(&[(1, Some(0.0)), (2, Some(-0.5))]), Crossover::At { from: 2, after: Some(1) });
    }

    fn level(level: u32, verdict: &str, too_weak: bool, diff: Option<f64>, ci: Option<[f64; 2]>) -> Level {
        Level {
            level,
            scale: None,
            size: Some(level),
            catalogue: None,
            distractors: None,
            experiment: format!("size{level}"),
            pattern: None,
            control: None,
            cost_difference: diff,
            cost_difference_ci95: ci,
            cost_difference_per_session: diff,
            verdict: Some(verdict.into()),
            verdict_reason: Some(format!("{verdict} because")),
            model_too_weak: Some(too_weak),
        }
    }

    /// A model's level counts only with an interval, a verdict not withheld and a model able to
    /// pass: a point difference between two ways of failing is no crossover.
    #[test]
    fn a_model_level_without_a_difference_to_stand_behind_is_no_crossover() {
        let levels = [
            level(1, "withheld", false, Some(-50.0), Some([-80.0, -20.0])),
            level(2, "inconclusive", true, Some(-40.0), Some([-60.0, -10.0])),
            level(4, "inconclusive", false, Some(-30.0), None),
            level(8, "confirmed", false, Some(-20.0), Some([-30.0, -5.0])),
        ];
        let (diffs, reasons) = comparable(&levels, false, "size");
        assert_eq!(diffs, [(1, None), (2, None), (4, None), (8, Some(-5.0))]);
        assert_eq!(reasons.iter().map(|(l, _)| *l).collect::<Vec<_>>(), [1, 2, 4]);
        assert!(reasons[0].1.contains("withheld because") && reasons[1].1.contains("too weak") && reasons[2].1.contains("interval"), "{reasons:?}");
        // The oracle's floor is deterministic: its value is the figure.
        let (diffs, reasons) = comparable(&levels, true, "size");
        assert_eq!(diffs.iter().map(|d| d.1).collect::<Vec<_>>(), [Some(-50.0), Some(-40.0), Some(-30.0), Some(-20.0)]);
        assert!(reasons.is_empty());
    }
}
