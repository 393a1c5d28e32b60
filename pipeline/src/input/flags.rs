//! The flags of a run without a spec, `pipeline --mcp …` / `--module …` / `--all`. They are
//! lowered into a [`crate::plan::RunPlan`] at once; nothing else reads them.

use std::path::PathBuf;

use records::{Dialect, MaxTokensParam, SessionMode, Temperature, Transport};

#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Servers to run, comma-separated (e.g. `orchestrator` or `orchestrator,wrapper`).
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["module", "all"])]
    pub mcp: Vec<String>,
    /// Pattern modules to run with both arms, comma-separated.
    #[arg(long, value_delimiter = ',', conflicts_with = "all")]
    pub module: Vec<String>,
    /// Run every module with both arms.
    #[arg(long)]
    pub all: bool,
    /// Models, comma-separated; `oracle` replays the oracle plans; `sim:PROFILE` runs the simulated
    /// agent (planted slips, synthetic usage: checks the instrument). Never pooled in reports.
    #[arg(long, value_delimiter = ',', env = "MCPBENCH_MODELS")]
    pub models: Vec<String>,
    /// What the oracle's floors are counted in besides the bytes / 4 estimate: `o200k_base`,
    /// `cl100k_base` (offline), or `llama:URL` (a llama.cpp server's `/tokenize`). Default: the
    /// encoding of the run's models when they are OpenAI models of one encoding (gpt-4o, gpt-4.1,
    /// gpt-5, o3 → o200k_base; gpt-4 → cl100k_base); else none, and the floors are the labelled
    /// estimate alone.
    #[arg(long, value_name = "TOKENIZER")]
    pub tokens: Option<String>,
    /// Repetitions of every task on every arm.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub k: u32,
    /// Experiment name (the folder under results/). Default: derived from the selection.
    #[arg(long)]
    pub exp_name: Option<String>,
    /// Only tasks whose id contains one of these, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tasks: Vec<String>,
    /// Which tasks by split: `dev` (the tuning loop's), `held_out` (sealed; see `pipeline seal`)
    /// or `all` (the default for a run), reported side by side and never pooled. A run that
    /// includes held-out tasks refuses unless they match their seal. A sweep reads one split:
    /// `dev` unless `--split held_out`.
    #[arg(long, value_enum)]
    pub split: Option<crate::split::SplitSelection>,
    /// Override every task's world scale (`pipeline sweep` takes several, comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub scale: Vec<u32>,
    /// Only the instances of task families of this size (`pipeline sweep` takes several,
    /// comma-separated: a sweep over state size).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub size: Vec<u32>,
    /// For a module whose servers list a tool catalogue (tool_search): how many tools of other
    /// systems both arms list beside the backend's own (`pipeline sweep` takes several,
    /// comma-separated). Default: the module's (100).
    #[arg(long, value_delimiter = ',')]
    pub catalogue: Vec<u32>,
    /// How many tools of other, unconnected servers the client lists beside each arm's own —
    /// the same tools, in the same place, for both arms; a call to one is refused by the client
    /// and counted (`pipeline sweep` takes several, comma-separated). Default 0: the arm alone.
    #[arg(long, value_delimiter = ',')]
    pub distractors: Vec<u32>,
    /// Sessions run in parallel, each on its own isolated world. In a cold run with no budget and
    /// no sequential stop, at most one a core, each of them also makes its next session ready
    /// (its world reset, its arm started) and verifies the one before while it runs, on worlds of
    /// its own: up to twice as many arm servers at once, half of them waiting for their turn.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    /// OpenAI-compatible base URL for model runs (OpenAI, a gateway, vLLM, Ollama, llama.cpp…).
    #[arg(long, env = "OPENAI_BASE_URL", default_value = "https://api.openai.com/v1")]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (the key itself is never written).
    #[arg(long, default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    #[command(flatten)]
    pub asking: AskingFlags,
    /// Sampling seed, where the provider supports one.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Seconds before one model request times out (it is then retried, bounded).
    #[arg(long, default_value_t = 120)]
    pub request_timeout_secs: u64,
    /// Extra HTTP header for the model provider, `NAME=VALUE` (repeatable; values are never written).
    #[arg(long = "header", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Export every session as an OpenTelemetry trace (GenAI conventions) to this OTLP/HTTP
    /// collector, e.g. `http://127.0.0.1:4318` (`/v1/traces` is added). Without it, the standard
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT are read (headers from
    /// OTEL_EXPORTER_OTLP_HEADERS). Export never blocks or fails a session; what did not get
    /// there is counted in the manifest.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// How the agent reaches the servers.
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: Transport,
    /// The MCP revision the agent's client speaks: `2025-11-25` (the default: the newest with the
    /// `initialize` handshake) or `2026-07-28` (`server/discover`, every request self-contained;
    /// over streamable HTTP, no session). Fingerprinted when not the default; the revision each
    /// server answered is in every record.
    #[arg(long, value_enum, default_value = "2025-11-25")]
    pub protocol: servers::client::Protocol,
    /// `cold`: a fresh conversation per task. `warm`: per model, arm and rep, one conversation
    /// works through the module's selected tasks one after another (the world reset before each),
    /// in an order rotated across reps and the same for both arms of a pair. Never pooled with
    /// cold; `aggregate --compare COLD WARM --along session_mode` sets them side by side.
    #[arg(long, value_enum, default_value = "cold")]
    pub session_mode: SessionMode,
    /// Run only shard I of N of the plan (`2/3`; 1-based): each shard its own experiment folder,
    /// put back together with `aggregate --merge`. Without it, a Kubernetes Indexed Job's
    /// `JOB_COMPLETION_INDEX` (with `--shard-count`) or a Slurm array's `SLURM_ARRAY_TASK_*`
    /// variables choose the shard.
    #[arg(long, value_parser = crate::shard::flag_value)]
    pub shard: Option<String>,
    /// How many shards the plan is split into, when the engine's task id is the shard's 0-based
    /// index: a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` (its `completions`), or a Slurm
    /// array's `SLURM_ARRAY_TASK_ID` (`--array=0-(N-1)`, and a resubmission of any of those ids).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub shard_count: Option<u32>,
    /// Where experiments are written.
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// Folder holding the tasks.
    #[arg(long, env = "MCPBENCH_TASKS_DIR")]
    pub tasks_dir: Option<PathBuf>,
    /// Rerun the sessions recorded invalid; their old records are kept under `superseded/`.
    #[arg(long)]
    pub retry_invalid: bool,
    /// Do not probe the model endpoint before the run (recorded in the manifest, every record
    /// and the report).
    #[arg(long)]
    pub skip_preflight: bool,
    /// Stop the run when this many sessions in a row are invalid for the same reason.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_consecutive_invalid: u32,
    #[command(flatten)]
    pub budget: BudgetFlags,
    #[command(flatten)]
    pub sequential: SequentialFlags,
    /// Plant an attack from the catalogue (tasks/attacks/NAME.toml) in every session's world (or,
    /// for tool poisoning, in a downstream server's description), the same in both arms, and
    /// verify its success apart from the task's (docs/security.md); `none` (the default) plants
    /// nothing. `pipeline sweep` takes several, comma-separated: `--attack none,A,B`.
    #[arg(long, value_name = "NAME|none", value_delimiter = ',', default_value = "none")]
    pub attack: Vec<String>,
}

/// A sequential experiment: pairs drawn one at a time until the verdict is reached, read by
/// anytime-valid confidence sequences (docs/sequential.md).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SequentialFlags {
    /// Run pairs until the verdict is decided (confirmed or negative) or --max-pairs are drawn:
    /// each pair a task drawn at random, with replacement, from the module's tasks; the report
    /// uses intervals that stay valid however the run stopped. Replaces --k.
    #[arg(long, requires = "max_pairs", conflicts_with = "k")]
    pub until_decided: bool,
    /// The most pairs per model and module a sequential run draws (required with --until-decided).
    #[arg(long, value_name = "N", requires = "until_decided", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_pairs: Option<u32>,
    /// No stop on a verdict before N valid pairs (default: the verdict's own minimum, 10).
    #[arg(long, value_name = "N", requires = "until_decided", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub min_pairs: Option<u32>,
}

/// A hard budget for a run: it stops before a pair that could take it past the budget at the
/// largest session cost seen so far, never in the middle of a pair (exit 4, resumable). Shared by
/// runs from flags and `pipeline run SPEC`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BudgetFlags {
    /// Spend at most N tokens (input + output, as the model's endpoint reports them, over this
    /// invocation's sessions).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub budget_tokens: Option<u64>,
    /// Spend at most this many US dollars, each session priced by --prices.
    #[arg(long, value_name = "USD", value_parser = positive_dollars)]
    pub budget_usd: Option<f64>,
    /// The price table --budget-usd prices sessions with (the format of `aggregate --prices`:
    /// aggregate/prices.example.toml).
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
}

fn positive_dollars(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("{s:?} is not an amount of dollars above 0 (e.g. 2.50)")),
    }
}

/// How a model is asked, beside its seed: shared by runs from flags and `freeze`, so both take
/// the same words and defaults.
#[derive(Debug, Clone, clap::Args)]
pub struct AskingFlags {
    /// Sampling temperature, pinned for the whole experiment: a number, or `default` to send
    /// none and let the provider sample at its own default (reasoning models accept no other).
    #[arg(long, default_value = "default", value_parser = Temperature::parse)]
    pub temperature: Temperature,
    /// Most tokens per model response (sent under the name the endpoint's dialect uses; nothing
    /// is sent without it).
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// Reasoning effort, sent with every request as the endpoint's dialect expects it (e.g.
    /// `low`, `medium`, `high`; the words are the provider's). Unset, none is sent and the
    /// model's own default applies.
    #[arg(long)]
    pub reasoning_effort: Option<String>,
    /// Whose rules the endpoint follows: how the key, the limit and the effort are sent.
    /// Default: from the --base-url host (api.openai.com → openai, *.openai.azure.com → azure,
    /// api.anthropic.com → anthropic, generativelanguage.googleapis.com → gemini,
    /// openrouter.ai → openrouter; anything else → compatible).
    #[arg(long, value_enum)]
    pub dialect: Option<Dialect>,
    /// The name under which --max-tokens goes out, when the dialect's choice is wrong for the
    /// endpoint (a gateway in front of a reasoning model: max_completion_tokens).
    #[arg(long, value_enum)]
    pub max_tokens_param: Option<MaxTokensParam>,
}

pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (name, value) = s.split_once('=').ok_or_else(|| "--header takes NAME=VALUE".to_owned())?;
    Ok((name.trim().to_owned(), value.to_owned()))
}

impl RunArgs {
    /// Parses run flags as the command line would (`pipeline bench suite` runs the suite this
    /// way, exactly as a user would type it).
    pub fn from_flags(flags: &[&str]) -> anyhow::Result<Self> {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            run: RunArgs,
        }
        use clap::Parser;
        Ok(Only::try_parse_from(std::iter::once("pipeline").chain(flags.iter().copied()))?.run)
    }
}
