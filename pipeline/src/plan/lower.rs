//! Lowering: the two front doors, flags ([`crate::input::flags`]) and specs
//! ([`crate::input::spec`]), each become a [`RunPlan`] here, and nowhere else.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use records::{ModelSpec, Provider, SessionMode};
use servers::registry::ServerEntry;

use super::select::{check_external_plans, manifests_of, modules_of, select_servers};
use super::{Breaker, Endpoint, ModelPlan, ModuleTasks, RunPlan};
use crate::build_info::BuildInfo;
use crate::input::flags::RunArgs;
use crate::input::spec::{InputDirs, ModelParams, Spec};

impl RunPlan {
    /// Lowers the ad-hoc form, `pipeline --mcp/--module/--all …`.
    pub async fn from_flags(args: &RunArgs) -> anyhow::Result<Self> {
        let arms = select_servers(args)?;
        let models = super::model::with_oracle_tokenizer(models_from_flags(args)?, args.tokens.as_deref()).await?;
        if args.session_mode == SessionMode::Warm
            && let Some(m) = models.iter().find(|m| m.sim.is_some())
        {
            bail!("model {}: a simulated agent runs cold sessions only for now; drop --session-mode warm", m.spec.id);
        }
        let tasks_dir = args.tasks_dir.clone().unwrap_or_else(tasks::default_tasks_dir);
        let mut tasks = Vec::new();
        for module in modules_of(&arms) {
            let mut ts = tasks::load_module(&tasks_dir, module).with_context(|| format!("loading the tasks of {module}"))?;
            if !args.tasks.is_empty() {
                ts.retain(|t| args.tasks.iter().any(|f| t.id.contains(f.as_str())));
            }
            ts.retain(|t| args.split.unwrap_or_default().admits(t.meta.split));
            tasks.push(ModuleTasks { module: module.to_owned(), tasks: ts.into_iter().map(Arc::new).collect() });
        }
        if tasks.iter().all(|m| m.tasks.is_empty()) {
            bail!(
                "no task matches --tasks {:?} with --split {} (see `{} list`)",
                args.tasks,
                args.split.unwrap_or_default().as_str(),
                crate::invoked::program()
            );
        }
        match args.size[..] {
            [] => {}
            [size] => keep_size(&mut tasks, size)?,
            _ => bail!("--size {:?} names several levels; a series of sizes is a sweep: `{} sweep … --size …`", args.size, crate::invoked::program()),
        }
        let scale_override = match args.scale[..] {
            [] => None,
            [one] => Some(one),
            _ => bail!("--scale {:?} names several levels; a series of levels is a sweep: `{} sweep … --scale …`", args.scale, crate::invoked::program()),
        };
        if let Some(scale) = scale_override {
            override_scale(&mut tasks, scale);
        }
        let catalogue = match args.catalogue[..] {
            [] => None,
            [one] => Some(one),
            _ => bail!(
                "--catalogue {:?} names several sizes; a series of sizes is a sweep: `{} sweep … --catalogue …`",
                args.catalogue,
                crate::invoked::program()
            ),
        };
        let attack = match &args.attack[..] {
            [] => None,
            [none] if none == "none" => None,
            [name] => Some(Arc::new(tasks::attack::Attack::load(&tasks_dir, name).map_err(anyhow::Error::msg)?)),
            several => bail!(
                "--attack {} names several attacks; a series of attacks is a sweep: `{} sweep --module M --models X --attack none,{}`",
                several.join(","),
                crate::invoked::program(),
                several.iter().filter(|a| *a != "none").cloned().collect::<Vec<_>>().join(",")
            ),
        };
        let poison = attack.as_ref().and_then(|a| a.poison);
        if let (Some(a), Some(external)) = (&attack, poison.and(arms.iter().find(|s| s.external().is_some_and(|e| !e.relays)))) {
            bail!(
                "--attack {}: a tool-poisoning attack is shown by arms that relay the poisoned server's description, and external arm {} does not say it does; an arm that relays opts in with `relays = true` in its arm.toml and shows the text it is given in {} (docs/security.md), or choose a data-injection or result-shaping attack",
                a.name,
                external.name,
                servers::external::POISON_ENV
            );
        }
        let settings = servers::launch::ArmSettings { catalogue, poison };
        servers::registry::check_settings(settings, &modules_of(&arms)).map_err(|e| anyhow::anyhow!(e))?;
        let shard = crate::shard::Shard::resolve(args.shard.as_deref(), args.shard_count, &|k| std::env::var(k).ok()).map_err(|e| anyhow::anyhow!(e))?;
        let experiment = sharded(args.exp_name.clone().unwrap_or_else(|| default_exp_name(args, &arms)), shard);
        check_experiment_name(&experiment).context("--exp-name")?;
        let manifests = manifests_of(&arms, settings).await?;
        check_external_plans(&arms, &tasks, &manifests)?;
        let distractors = match args.distractors[..] {
            [] => servers::distractors::Distractors::none(),
            [one] => drawn(one, &manifests)?,
            _ => bail!(
                "--distractors {:?} names several levels; a series of levels is a sweep: `{} sweep … --distractors …`",
                args.distractors,
                crate::invoked::program()
            ),
        };
        let seal = crate::held_out::require_seal(&tasks_dir, tasks.iter().flat_map(|m| m.tasks.iter().map(|t| &**t))).await?;
        let seal = seal.map(|s| crate::held_out::with_arms(s, &tasks_dir, &arms)).transpose()?;
        let budgets = budgets(&args.budget, &models)?;
        let sequential = sequential(&args.sequential, args.session_mode, shard.is_some(), &arms, &tasks)?;
        let poisoned_lists = match &attack {
            Some(a) if a.poison.is_some() => manifests.iter().filter(|(_, m)| m.lists(&a.marker)).map(|(name, _)| name.clone()).collect(),
            _ => Default::default(),
        };
        Ok(Self {
            attack,
            sequential,
            budgets,
            exp_dir: args.results_dir.join(&experiment),
            experiment,
            poisoned_lists,
            manifests: manifests.into_iter().map(|(name, m)| (name, m.sha256())).collect(),
            arms,
            tasks,
            reps: args.k,
            models,
            transport: args.transport,
            protocol: args.protocol,
            session_mode: args.session_mode,
            jobs: args.jobs,
            scale_override,
            catalogue,
            distractors,
            build: BuildInfo::binary(),
            preflight_skipped: args.skip_preflight,
            retry_invalid: args.retry_invalid,
            breaker: Breaker { max_consecutive_invalid: args.max_consecutive_invalid },
            command: crate::redact::command_line(std::env::args()),
            check: None,
            shard,
            split: args.split.unwrap_or_default(),
            seal,
            otlp: crate::otlp::target(args.otlp_endpoint.as_deref())?,
        })
    }

    /// Lowers a checked spec, `pipeline run SPEC`. The spec's frozen task and manifest hashes
    /// must still hold (they are checked again here: an input may change between the check and
    /// the run).
    pub async fn from_spec(spec: &Spec, dirs: &InputDirs, options: &SpecRunOptions) -> anyhow::Result<Self> {
        let arms = super::arms_of(spec)?;
        let effective: Vec<_> = spec.arms.iter().map(|a| a.effective_model(&spec.model)).collect();
        let first = effective.first().cloned().unwrap_or_else(|| spec.model.clone());
        anyhow::ensure!(
            effective.iter().all(|m| *m == first),
            "the arms use different model settings (declared in treatment {:?}); the run loop runs one model setting for both arms, so this spec can be checked but not run yet",
            spec.treatment
        );
        let model = if first.is_oracle() {
            ModelPlan::oracle()
        } else if first.is_simulated() {
            anyhow::ensure!(spec.session_mode == SessionMode::Cold, "model {}: a simulated agent runs cold sessions only for now", first.id);
            let plan = ModelPlan::simulated_from(&first, &dirs.tasks_dir())?;
            anyhow::ensure!(
                plan.spec.profile_sha256 == spec.hashes.profile,
                "G3 frozen inputs: the simulated agent's profile ({}) changed between the check and the run; nothing was started",
                first.id
            );
            plan
        } else {
            super::model_plan(&first, Duration::from_secs(options.request_timeout_secs), options.headers.clone())?
        };
        let (selected, missing) = super::select_tasks(&dirs.tasks_dir(), &spec.module, &spec.tasks, spec.split)?;
        anyhow::ensure!(missing.is_empty(), "G3 frozen inputs: tasks {missing:?} are in the spec but not in {}", dirs.tasks_dir().display());
        for t in &selected {
            anyhow::ensure!(
                spec.hashes.tasks.get(&t.id).map(|h| &h.sha256) == Some(&t.sha256),
                "G3 frozen inputs: task {} changed between the check and the run; nothing was started",
                t.key()
            );
        }
        let listed = manifests_of(&arms, spec.settings()).await?;
        let modules = [ModuleTasks { module: spec.module.clone(), tasks: selected.iter().cloned().map(Arc::new).collect() }];
        check_external_plans(&arms, &modules, &listed)?;
        let distractors = drawn(spec.distractors.unwrap_or(0), &listed)?;
        let manifests: BTreeMap<String, String> = listed.into_iter().map(|(name, m)| (name, m.sha256())).collect();
        for (name, sha) in &manifests {
            anyhow::ensure!(
                spec.hashes.manifests.get(name).map(|m| &m.sha256) == Some(sha),
                "G3 frozen inputs: the tool manifest of {name} changed between the check and the run; nothing was started"
            );
        }
        for arm in arms.iter().filter_map(|a| a.external()) {
            anyhow::ensure!(
                spec.hashes.arms.get(&arm.name) == Some(&arm.sha256),
                "G3 frozen inputs: the folder of external arm {} ({}) changed between the check and the run; nothing was started",
                arm.name,
                arm.dir.display()
            );
        }
        let seal = crate::held_out::require_seal(&dirs.tasks_dir(), modules.iter().flat_map(|m| m.tasks.iter().map(|t| &**t))).await?;
        let seal = seal.map(|s| crate::held_out::with_arms(s, &dirs.tasks_dir(), &arms)).transpose()?;
        let experiment = sharded(spec.experiment.clone(), options.shard);
        let budgets = spec_budgets(spec, &options.budget, std::slice::from_ref(&model))?;
        Ok(Self {
            attack: None,
            sequential: None,
            budgets,
            exp_dir: options.results_dir.join(&experiment),
            experiment,
            arms,
            tasks: vec![ModuleTasks { module: spec.module.clone(), tasks: selected.into_iter().map(Arc::new).collect() }],
            reps: spec.reps,
            models: vec![model],
            transport: spec.transport,
            protocol: Default::default(),
            session_mode: spec.session_mode,
            jobs: spec.jobs,
            scale_override: None,
            catalogue: spec.catalogue,
            distractors,
            manifests,
            poisoned_lists: Default::default(),
            build: BuildInfo::binary(),
            preflight_skipped: options.skip_preflight,
            retry_invalid: options.retry_invalid,
            breaker: Breaker { max_consecutive_invalid: options.max_consecutive_invalid },
            command: crate::redact::command_line(std::env::args()),
            check: options.check.clone(),
            shard: options.shard,
            split: spec.split,
            seal,
            otlp: crate::otlp::target(options.otlp_endpoint.as_deref())?,
        })
    }
}

/// What `pipeline run SPEC` adds to a spec: settings of this run, not of the experiment.
#[derive(Debug, Clone)]
pub struct SpecRunOptions {
    pub results_dir: PathBuf,
    pub retry_invalid: bool,
    pub skip_preflight: bool,
    pub max_consecutive_invalid: u32,
    pub request_timeout_secs: u64,
    pub headers: Vec<(String, String)>,
    pub check: Option<serde_json::Value>,
    /// `--shard I/N`, or the engine's variables: the part of the plan this run is.
    pub shard: Option<crate::shard::Shard>,
    /// `--otlp-endpoint`.
    pub otlp_endpoint: Option<String>,
    /// `--budget-*` and `--prices` of `run SPEC`.
    pub budget: crate::input::flags::BudgetFlags,
}

/// A shard's experiment is the plan's name with the shard's place (`exp_shard2of3`): every index
/// runs the same command line and writes its own folder.
fn sharded(name: String, shard: Option<crate::shard::Shard>) -> String {
    match shard {
        Some(s) => format!("{name}_shard{}of{}", s.index, s.count),
        None => name,
    }
}

/// An experiment name is one plain folder name.
pub fn check_experiment_name(name: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        !name.is_empty() && !name.contains('/') && !name.contains('\\') && !name.starts_with('.'),
        "the experiment name must be a plain folder name, not {name:?}"
    );
    Ok(())
}

/// `--size`: only the family instances of that size; a size no family has is refused with the
/// sizes there are.
fn keep_size(tasks: &mut [ModuleTasks], size: u32) -> anyhow::Result<()> {
    let mut families: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for m in tasks.iter() {
        for f in m.tasks.iter().filter_map(|t| t.family.as_ref()) {
            families.entry(format!("{}/{}", m.module, f.id)).or_default().push(f.size);
        }
    }
    for m in tasks.iter_mut() {
        m.tasks.retain(|t| t.family.as_ref().is_some_and(|f| f.size == size));
    }
    if tasks.iter().all(|m| m.tasks.is_empty()) {
        if families.is_empty() {
            bail!("--size {size}: the selected tasks hold no task family (a folder with a family.toml); see `{} list`", crate::invoked::program());
        }
        let have: Vec<String> = families.iter().map(|(f, sizes)| format!("{f} has sizes {sizes:?}")).collect();
        bail!("--size {size}: no selected task family has that size ({})", have.join("; "));
    }
    Ok(())
}

fn override_scale(tasks: &mut [ModuleTasks], scale: u32) {
    for m in tasks {
        for t in &mut m.tasks {
            Arc::make_mut(t).meta.scale = scale;
        }
    }
}

fn default_exp_name(args: &RunArgs, arms: &[&ServerEntry]) -> String {
    // A size selects other tasks than the full suite: its own experiment, never a resume of it.
    let size = args.size.first().map_or(String::new(), |n| format!("_size{n}"));
    if args.all {
        return format!("all_k{}{size}", args.k);
    }
    let names: Vec<&str> = arms.iter().map(|s| s.name).collect();
    format!("{}_k{}{size}", names.join("+"), args.k)
}

fn models_from_flags(args: &RunArgs) -> anyhow::Result<Vec<ModelPlan>> {
    if args.models.is_empty() {
        bail!(
            "no model given: pass --models oracle to replay the oracle plans, or --models MODEL_ID for a model-driven run \
             (with the API key in ${} and, for a gateway or a local server, --base-url URL)",
            args.api_key_env
        );
    }
    let mut out: Vec<ModelPlan> = Vec::new();
    for id in &args.models {
        if out.iter().any(|m| &m.spec.id == id) {
            continue;
        }
        if id == "oracle" {
            out.push(ModelPlan::oracle());
            continue;
        }
        if id.starts_with(super::model::SIM_PREFIX) {
            out.push(ModelPlan::simulated(id, &args.tasks_dir.clone().unwrap_or_else(tasks::default_tasks_dir), args.seed)?);
            continue;
        }
        let pinned = ModelSpec {
            id: id.clone(),
            provider: Provider::OpenAiCompatible,
            temperature: Some(args.asking.temperature),
            max_tokens: args.asking.max_tokens,
            seed: args.seed,
            reasoning_effort: args.asking.reasoning_effort.clone(),
            dialect: args.asking.dialect,
            max_tokens_param: args.asking.max_tokens_param,
            profile_sha256: None,
            tokenizer: None,
        };
        let endpoint = Endpoint {
            base_url: args.base_url.clone().unwrap_or_default(),
            api_key_env: args.api_key_env.clone(),
            request_timeout: Duration::from_secs(args.request_timeout_secs),
            headers: args.headers.clone(),
        };
        out.push(ModelPlan::model(pinned, endpoint)?);
    }
    Ok(out)
}

/// The model plan of a spec's (effective) model parameters: what `run SPEC` runs and G6 probes.
pub fn model_plan(m: &ModelParams, request_timeout: std::time::Duration, headers: Vec<(String, String)>) -> anyhow::Result<super::ModelPlan> {
    let seed = m.seed.map(|s| u64::try_from(s).map_err(|_| anyhow::anyhow!("model.seed: must be ≥ 0, not {s}"))).transpose()?;
    let temperature = m.temperature.context("model.temperature: not stated; give a number, or \"provider_default\" to send none")?;
    let pinned = ModelSpec {
        id: m.id.clone(),
        provider: Provider::OpenAiCompatible,
        temperature: Some(temperature),
        max_tokens: m.max_tokens,
        seed,
        reasoning_effort: m.reasoning_effort.clone(),
        dialect: m.dialect,
        max_tokens_param: m.max_tokens_param,
        profile_sha256: None,
        tokenizer: None,
    };
    let endpoint = super::Endpoint {
        base_url: m.base_url.clone().unwrap_or_default(),
        api_key_env: m.api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".into()),
        request_timeout,
        headers,
    };
    super::ModelPlan::model(pinned, endpoint)
}

/// The run's `n` distractors, refused when an arm lists a tool under a distractor's name: the
/// client would list two functions of one name, and a call could not say which it meant.
pub(super) fn drawn(n: u32, manifests: &BTreeMap<String, servers::ToolManifest>) -> anyhow::Result<servers::distractors::Distractors> {
    let distractors = servers::distractors::Distractors::draw(n).map_err(|e| anyhow::anyhow!(e))?;
    for (arm, m) in manifests {
        if let Some(t) = m.tools.iter().find(|t| distractors.contains(&t.name)) {
            bail!(
                "--distractors {n}: arm {arm} lists a tool named {:?}, which is also one of the distractors the client lists beside it; rename that tool, or run with fewer distractors",
                t.name
            );
        }
    }
    Ok(distractors)
}

/// `--until-decided`'s design, refused where a sequential run could not stand behind its
/// verdict: warm conversations and shards (a rep is not one pair; a shard cannot see the others'
/// pairs), a module with more than one arm on a side, and a cap below
/// the fewest pairs that could ever reach a verdict.
fn sequential(
    flags: &crate::input::flags::SequentialFlags,
    mode: SessionMode,
    sharded: bool,
    arms: &[&'static ServerEntry],
    tasks: &[ModuleTasks],
) -> anyhow::Result<Option<super::Sequential>> {
    if !flags.until_decided {
        return Ok(None);
    }
    let max_pairs = flags.max_pairs.context("--until-decided needs --max-pairs N: the most pairs per model and module it may draw")?;
    if mode == SessionMode::Warm {
        bail!("--until-decided draws one pair at a time, and a warm conversation runs every task at once; drop --session-mode warm");
    }
    if sharded {
        bail!("--until-decided decides as pairs come in, which a shard cannot see of the others; run it unsharded");
    }
    for m in tasks.iter().filter(|m| !m.tasks.is_empty()) {
        let roles: Vec<_> = arms.iter().filter(|a| a.module == m.module).map(|a| a.role).collect();
        let (p, c) = (
            roles.iter().filter(|r| **r == servers::registry::Role::Pattern).count(),
            roles.iter().filter(|r| **r == servers::registry::Role::Control).count(),
        );
        if p != 1 || c != 1 {
            bail!(
                "--until-decided compares one pattern with one control per module; {} has {p} pattern arm(s) and {c} control arm(s): select one of each with --mcp",
                m.module
            );
        }
    }
    let opts = aggregate::Options::default();
    let min_pairs = flags.min_pairs.unwrap_or(opts.min_pairs_for_verdict as u32);
    let (any, confirm) = aggregate::sequential::fewest_pairs(&opts);
    if let Some(any) = any
        && (max_pairs as usize) < any
    {
        bail!(
            "--max-pairs {max_pairs} can never reach a verdict: even if every pair favoured one arm, no verdict comes before {any} valid pairs; raise --max-pairs to at least {any} (a saving needs at least {} to be confirmed)",
            confirm.map_or("more".to_string(), |c| c.to_string())
        );
    }
    if min_pairs > max_pairs {
        bail!("--min-pairs {min_pairs} is above --max-pairs {max_pairs}: the run could never stop on a verdict");
    }
    if let Some(c) = confirm
        && (max_pairs as usize) < c
    {
        eprintln!(
            "note: --max-pairs {max_pairs} can stop on a negative verdict but never confirm a saving: even if both arms passed every pair and the pattern always used fewer tokens, confirming takes {c} valid pairs"
        );
    }
    Ok(Some(super::Sequential { rule: aggregate::sequential::Rule { max_pairs, min_pairs } }))
}

/// The budgets `flags` set, refused when nothing they limit is spent (the oracle, a simulated
/// agent), when dollars have no price table, or when the table has no price for a model.
fn budgets(flags: &crate::input::flags::BudgetFlags, models: &[ModelPlan]) -> anyhow::Result<Vec<crate::budget::Limit>> {
    use crate::budget::Limit;
    let mut out = Vec::new();
    if let Some(n) = flags.budget_tokens {
        out.push(Limit::Tokens(n));
    }
    if let Some(usd) = flags.budget_usd {
        let Some(path) = &flags.prices else {
            bail!("--budget-usd {usd} needs --prices FILE: the price table each session is priced with (the format of aggregate/prices.example.toml)")
        };
        let prices = aggregate::PriceTable::load(path).with_context(|| format!("--prices {}", path.display()))?;
        for m in models.iter().filter(|m| m.spec.needs_endpoint()) {
            anyhow::ensure!(
                prices.models.contains_key(&m.spec.id),
                "--prices {}: no price for model {:?}, so --budget-usd could not be kept; add a [models.\"{}\"] table",
                path.display(),
                m.spec.id,
                m.spec.id
            );
        }
        out.push(Limit::Usd { usd, prices });
    }
    if let Some(first) = out.first() {
        anyhow::ensure!(
            models.iter().any(|m| m.spec.needs_endpoint()),
            "{}: the oracle and simulated agents spend nothing, so there is nothing to budget; a budget is for a model run",
            first.flag()
        );
    }
    Ok(out)
}

/// A spec's budgets: its own `budget_tokens`/`budget_usd`, or the command line's when it pins
/// none (pinned and given both is refused: which one holds would be a guess).
fn spec_budgets(spec: &crate::input::spec::Spec, flags: &crate::input::flags::BudgetFlags, models: &[ModelPlan]) -> anyhow::Result<Vec<crate::budget::Limit>> {
    let pinned = spec.budget_tokens.is_some() || spec.budget_usd.is_some();
    let given = flags.budget_tokens.is_some() || flags.budget_usd.is_some();
    anyhow::ensure!(
        !(pinned && given),
        "the spec pins its budget (budget_tokens / budget_usd) and the command line gives one too; edit the spec, or drop --budget-tokens / --budget-usd"
    );
    if !pinned {
        return budgets(flags, models);
    }
    let from_spec = crate::input::flags::BudgetFlags { budget_tokens: spec.budget_tokens, budget_usd: spec.budget_usd, prices: flags.prices.clone() };
    budgets(&from_spec, models)
}
