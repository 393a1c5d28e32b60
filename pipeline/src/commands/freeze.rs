//! `pipeline freeze`: write an experiment spec ([`crate::input::spec`]) pinning the current
//! inputs by hash.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use records::Dialect;
use servers::registry;
use servers::transport::Transport;

use crate::input::spec::{Arm, ArmManifest, Hashes, InputDirs, ModelParams, Spec, TaskHash};
use crate::plan::{check_runnable, model_plan, select_tasks};

/// `pipeline freeze`.
#[derive(Debug, clap::Args)]
pub struct FreezeArgs {
    /// The pattern module (both its arms).
    #[arg(long)]
    pub module: String,
    /// The model id, or `oracle`.
    #[arg(long)]
    pub models: String,
    /// Repetitions of every task on every arm.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub k: u32,
    /// Write the spec here (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Only these task ids (exact), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tasks: Vec<String>,
    /// Experiment name. Default: `<module>_<model>_k<k>`.
    #[arg(long)]
    pub exp_name: Option<String>,
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: Transport,
    /// `cold` (a fresh conversation per task) or `warm` (one conversation per arm and rep).
    #[arg(long, value_enum, default_value = "cold")]
    pub session_mode: records::SessionMode,
    /// Which tasks by split: `dev`, `held_out` or `all` (written into the spec).
    #[arg(long, value_enum, default_value = "all")]
    pub split: crate::split::SplitSelection,
    /// For a module whose servers list a tool catalogue (tool_search): its size (default: the
    /// module's).
    #[arg(long)]
    pub catalogue: Option<u32>,
    /// How many tools of other, unconnected servers the client lists beside each arm's own
    /// (default: none).
    #[arg(long)]
    pub distractors: Option<u32>,
    /// OpenAI-compatible base URL (model runs only).
    #[arg(long, env = "OPENAI_BASE_URL")]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (model runs only).
    #[arg(long, default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    /// Model runs only; `--temperature default` is written `"provider_default"`, the dialect
    /// resolved.
    #[command(flatten)]
    pub asking: crate::input::flags::AskingFlags,
    #[arg(long)]
    pub seed: Option<i64>,
    /// Let a dirty build pass G2 (recorded loudly).
    #[arg(long)]
    pub allow_dirty: bool,
    /// The arms, comma-separated, when not the module's own pattern and control: e.g. an
    /// external arm beside them (`domain_adapter,domain_adapter_py,domain_wrapper`).
    #[arg(long, value_delimiter = ',')]
    pub mcp: Vec<String>,
    #[command(flatten)]
    pub dirs: InputDirs,
}

/// The spec for the current inputs.
pub async fn freeze(args: &FreezeArgs) -> anyhow::Result<Spec> {
    let (pattern, control) =
        registry::arms(&args.module).with_context(|| format!("no module named {:?}; modules: {}", args.module, registry::modules().join(", ")))?;
    let arms: Vec<&'static servers::ServerEntry> = if args.mcp.is_empty() {
        vec![pattern, control]
    } else {
        let mut arms = Vec::new();
        for name in &args.mcp {
            let s = registry::find(name).with_context(|| format!("--mcp: no server named {name:?}; servers: {}", registry::names().join(", ")))?;
            anyhow::ensure!(s.module == args.module, "--mcp: {name} answers the tasks of {}, not of {}", s.module, args.module);
            arms.push(s);
        }
        anyhow::ensure!(arms.len() >= 2, "--mcp: an experiment compares at least two arms");
        arms
    };
    check_runnable(&arms)?;
    let (tasks, missing) = select_tasks(&args.dirs.tasks_dir(), &args.module, &args.tasks, args.split)?;
    anyhow::ensure!(missing.is_empty(), "no task {missing:?} in {}", args.module);
    anyhow::ensure!(!tasks.is_empty(), "no tasks in {}", args.module);
    // A spec is only as good as its inputs: a held-out tree that left its seal is refused here as
    // `check` and `run` refuse it, before a spec pins hashes of drifted tasks.
    crate::held_out::require_seal(&args.dirs.tasks_dir(), tasks.iter()).await?;
    let work = crate::build_info::BuildInfo::work_tree(args.dirs.build_dir.as_deref());
    let binary = crate::build_info::BuildInfo::binary();
    let commit = binary.commit.clone().context("this binary was not built inside a git work tree, so there is no commit to pin (G2); build it from a clone")?;
    if work.commit.as_deref() != Some(commit.as_str()) {
        eprintln!(
            "warning: the work tree is at {}, the binary was built from {commit}; G2 will refuse until you rebuild (cargo build -p pipeline)",
            work.commit.as_deref().unwrap_or("no commit")
        );
    }
    if work.dirty == Some(true) || binary.dirty == Some(true) {
        eprintln!("warning: the build is dirty; the frozen commit {commit} is not exactly what runs (G2 refuses unless allow_dirty = true)");
    }
    let settings = servers::launch::ArmSettings { catalogue: args.catalogue, poison: None };
    servers::registry::check_settings(settings, &[args.module.as_str()]).map_err(|e| anyhow::anyhow!(e))?;
    let mut manifests = BTreeMap::new();
    for &arm in &arms {
        let m = crate::listing::manifest(arm, settings).await?;
        manifests.insert(
            arm.name.to_owned(),
            ArmManifest { sha256: m.sha256(), tools: m.tool_names().into_iter().map(str::to_owned).collect(), resources: m.resources },
        );
    }
    let oracle = args.models == "oracle";
    let mut profile = None;
    let model = if oracle {
        ModelParams { id: "oracle".into(), ..Default::default() }
    } else if args.models.starts_with(crate::plan::SIM_PREFIX) {
        let params = ModelParams { id: args.models.clone(), seed: args.seed, ..Default::default() };
        anyhow::ensure!(args.session_mode == records::SessionMode::Cold, "model {}: a simulated agent runs cold sessions only for now", args.models);
        profile = crate::plan::ModelPlan::simulated_from(&params, &args.dirs.tasks_dir())?.spec.profile_sha256;
        params
    } else {
        let base_url = args.base_url.clone().unwrap_or_else(|| "https://api.openai.com/v1".into());
        let params = ModelParams {
            id: args.models.clone(),
            dialect: Some(args.asking.dialect.unwrap_or_else(|| Dialect::of_base_url(&base_url))),
            base_url: Some(base_url),
            api_key_env: Some(args.api_key_env.clone()),
            temperature: Some(args.asking.temperature),
            max_tokens: args.asking.max_tokens,
            seed: args.seed,
            reasoning_effort: args.asking.reasoning_effort.clone(),
            max_tokens_param: args.asking.max_tokens_param,
        };
        // Refuses what the endpoint would ignore before a spec that pins it exists.
        model_plan(&params, std::time::Duration::from_secs(120), vec![])?;
        params
    };
    let model_slug: String = args.models.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect();
    Ok(Spec {
        experiment: args.exp_name.clone().unwrap_or_else(|| format!("{}_{model_slug}_k{}", args.module, args.k)),
        module: args.module.clone(),
        tasks: args.tasks.clone(),
        reps: args.k,
        jobs: args.jobs,
        transport: args.transport,
        session_mode: args.session_mode,
        split: args.split,
        catalogue: args.catalogue,
        distractors: args.distractors.filter(|n| *n > 0),
        budget_tokens: None,
        budget_usd: None,
        treatment: vec!["server".into()],
        allow_dirty: args.allow_dirty,
        model,
        arms: arms.iter().map(|a| Arm { server: a.name.into(), ..Default::default() }).collect(),
        hashes: Hashes {
            build: commit,
            system_prompt: agent::system_prompt_sha256(),
            tasks: tasks.iter().map(|t| (t.id.clone(), TaskHash { sha256: t.sha256.clone(), seed: t.meta.seed, scale: t.meta.scale })).collect(),
            manifests,
            arms: arms.iter().filter_map(|a| a.external()).map(|a| (a.name.clone(), a.sha256.clone())).collect(),
            profile,
        },
    })
}

pub async fn freeze_cmd(args: FreezeArgs) -> anyhow::Result<()> {
    let spec = freeze(&args).await?;
    let text = format!(
        "# Experiment spec frozen by `pipeline freeze` at {}. `pipeline check` verifies it; `pipeline run` spends.\n{}",
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        spec.to_toml()?
    );
    match &args.out {
        Some(path) => {
            records::write_atomically(path, text.as_bytes())?;
            eprintln!("spec {} written to {}", spec.experiment, path.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}
