//! `pipeline servers` and `pipeline serve`: list the registered MCP servers, run one.

use std::net::{IpAddr, SocketAddr};

use anyhow::{Context, bail};
use serde::Serialize;
use servers::backend_client::DEFAULT_BACKEND_URL;
use servers::transport::Transport;
use servers::{Role, ToolManifest};

#[derive(Debug, clap::Args)]
pub struct ServersArgs {
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Backend URL written into the launch command lines (the servers are listed as a run lists
    /// them: an external arm against a freshly seeded world of its own).
    #[arg(long, env = "BACKEND_URL", default_value = DEFAULT_BACKEND_URL)]
    pub backend_url: String,
    /// Also print each server's tool-list footprint in tokens of TOKENIZER, beside its bytes:
    /// `o200k_base` (GPT-4o, GPT-4.1, GPT-5, o-series), `cl100k_base` (GPT-4, GPT-3.5), both
    /// counted offline, or `llama:URL`, a llama.cpp server's own `/tokenize` (its root, e.g.
    /// `llama:http://127.0.0.1:8080`). What is counted is every function definition a model is
    /// offered, as the JSON the request's `tools` array carries.
    #[arg(long, value_name = "TOKENIZER")]
    pub tokens: Option<String>,
    /// Also give each server's footprint with N distractors listed beside it (tools of other
    /// servers the client lists, as a run's `--distractors N`): bytes, and tokens with `--tokens`.
    #[arg(long, value_name = "N")]
    pub distractors: Option<u32>,
    /// List every server as a run under this attack lists it (tasks/attacks/NAME.toml): a
    /// tool-poisoning attack changes what relaying servers offer, and each row says whether the
    /// poisoned description is in the server's own tool list (`poison_listed`).
    #[arg(long, value_name = "NAME")]
    pub attack: Option<String>,
    /// Folder holding the tasks (and the attack catalogue).
    #[arg(long, env = "MCPBENCH_TASKS_DIR")]
    pub tasks_dir: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Server name (see `pipeline servers`).
    pub name: String,
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: Transport,
    /// Port for `--transport http` (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Address for `--transport http`.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Where the backend API answers.
    #[arg(long, env = "BACKEND_URL", default_value = DEFAULT_BACKEND_URL)]
    pub backend_url: String,
    /// For `--transport http`: a browser origin allowed besides loopback (`https://app.example:443`,
    /// `http://host:*`); repeatable, added to `MCPBENCH_ALLOWED_ORIGINS`. Requests with any other
    /// `Origin` get 403.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// For `--transport http`: a `Host` accepted besides loopback (behind a proxy or in a
    /// container); repeatable, added to `MCPBENCH_ALLOWED_HOSTS`.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// For a module that lists a tool catalogue (tool_search): how many tools of other systems
    /// it lists beside the backend's own (default: the module's).
    #[arg(long, value_name = "N")]
    pub catalogue: Option<u32>,
    /// A tool-poisoning attack's downstream description, as JSON `{server, operation, text}`:
    /// a relaying server shows `text` after that operation's description (the harness passes
    /// it under `--attack`; docs/security.md).
    #[arg(long, value_name = "JSON", value_parser = servers::launch::Poison::parse)]
    pub poison: Option<&'static servers::launch::Poison>,
}

#[derive(Debug, Serialize)]
struct ServerRow {
    name: &'static str,
    module: &'static str,
    role: Role,
    paired: &'static str,
    /// Null when the server could not be listed (an external arm that does not start: `error`).
    tools: Option<usize>,
    resource_templates: Option<usize>,
    /// Whether the agent offers this server's resources (`list_resources`/`read_resource`): it
    /// declares the capability and has a template or a resource to list.
    resources: Option<bool>,
    manifest_sha256: Option<String>,
    /// Bytes of the function definitions a model is offered (the tools, and the two resource
    /// functions where the server has resources), each definition's JSON as sent, summed.
    definitions_bytes: Option<usize>,
    /// With `--tokens`: those definitions in tokens of [`Self::tokenizer`] (null when the
    /// server could not be listed).
    #[serde(skip_serializing_if = "Option::is_none")]
    definitions_tokens: Option<Option<u64>>,
    /// With `--tokens`: the tokenizer that counted them (`o200k_base`, `cl100k_base`, `llama:URL`).
    #[serde(skip_serializing_if = "Option::is_none")]
    tokenizer: Option<String>,
    /// With `--distractors N`: N, and the definitions with the distractors listed around the
    /// server's own, in bytes (and in tokens with `--tokens`; null when not listed).
    #[serde(skip_serializing_if = "Option::is_none")]
    distractors: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    with_distractors_bytes: Option<Option<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    with_distractors_tokens: Option<Option<u64>>,
    /// Whether the server relays other servers' operations, where a tool-poisoning attack is
    /// shown (a built-in module that declares them; an external arm with `relays = true`).
    relays: bool,
    /// With `--attack` naming a tool-poisoning attack: whether the poisoned description is in
    /// the server's own tool list, and so in every request a model gets (null when not listed).
    /// A relaying server may show it only when asked instead (proxy_aggregator's
    /// `describe_backend`).
    #[serde(skip_serializing_if = "Option::is_none")]
    poison_listed: Option<Option<bool>>,
    /// The exact command line that runs this server over stdio (an external arm: its own
    /// command, placeholders unexpanded).
    command: Vec<String>,
    /// `builtin`, or `external` (a folder with an `arm.toml`).
    kind: &'static str,
    /// External arms: the folder, its sha256, the transport it serves over, the variables it is
    /// given (names only), the built-in server whose plans it borrows.
    #[serde(skip_serializing_if = "Option::is_none")]
    external: Option<ExternalRow>,
    /// Why the server could not be listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Debug, Serialize)]
struct ExternalRow {
    dir: String,
    sha256: String,
    transport: Transport,
    env_names: Vec<String>,
    /// The built-in server whose oracle plans it reuses where it has none of its own (null: its
    /// plans are all its own).
    oracle_from: Option<String>,
    /// `[oracle_rename]`: a borrowed plan's tool → the arm's name for it (empty: none renamed).
    oracle_rename: std::collections::BTreeMap<String, String>,
    /// `n`: this arm is the `n`-th `[[variant]]` of its folder's `arm.toml` (from 1), the same
    /// server as the folder's own arm for another module; null: the folder's own arm.
    variant: Option<usize>,
}

/// The command line that serves `name` over stdio with this very binary.
pub fn stdio_command(name: &str, backend_url: &str) -> anyhow::Result<Vec<String>> {
    let exe = std::env::current_exe().context("locating the pipeline binary")?;
    Ok(servers::launch::stdio_argv(&[exe.display().to_string(), "serve".into()], name, backend_url, Default::default()))
}

pub async fn list(args: ServersArgs) -> anyhow::Result<()> {
    // Refused before anything is started, in one line that names the accepted values.
    let tokenizer = args.tokens.as_deref().map(agent::tokens::Tokenizer::parse).transpose()?;
    let distractors = args.distractors.map(servers::distractors::Distractors::draw).transpose().map_err(|e| anyhow::anyhow!(e))?;
    let attack = match args.attack.as_deref().filter(|a| *a != "none") {
        Some(name) => Some(tasks::attack::Attack::load(&args.tasks_dir.clone().unwrap_or_else(tasks::default_tasks_dir), name).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let settings = servers::launch::ArmSettings { catalogue: None, poison: attack.as_ref().and_then(|a| a.poison) };
    let mut rows = Vec::new();
    for s in servers::registry::servers() {
        // A built-in server always lists; an external arm may not start (its dependencies not
        // installed): its row says why instead of failing the whole listing.
        // Listed as a run lists them: an external arm against a freshly seeded world.
        let manifest = match (crate::listing::manifest(s, settings).await, s.external()) {
            (Ok(m), _) => Ok(m),
            (Err(e), Some(_)) => Err(format!("{e:#}")),
            (Err(e), None) => return Err(e.context(format!("listing the tools of {}", s.name))),
        };
        let external = s.external().map(|a| ExternalRow {
            dir: a.dir.display().to_string(),
            sha256: a.sha256.clone(),
            transport: a.transport,
            env_names: a.env_names(),
            oracle_from: a.oracle_from.clone(),
            oracle_rename: a.oracle_rename.clone(),
            variant: a.variant,
        });
        let command = match s.external() {
            Some(a) => a.command.clone(),
            None => stdio_command(s.name, &args.backend_url)?,
        };
        let definitions = manifest.as_ref().ok().map(servers::offered::definitions_of_manifest);
        let definitions_tokens = match (&tokenizer, &definitions) {
            (Some(t), Some(d)) => Some(Some(t.count_definitions(d).await.with_context(|| format!("counting the tokens of {}'s definitions", s.name))?)),
            (Some(_), None) => Some(None),
            (None, _) => None,
        };
        let with = distractors.as_ref().map(|d| definitions.clone().map(|own| d.around(own)));
        let with_distractors_tokens = match (&tokenizer, &with) {
            (Some(t), Some(Some(d))) => {
                Some(Some(t.count_definitions(d).await.with_context(|| format!("counting the tokens of {}'s definitions with distractors", s.name))?))
            }
            (Some(_), Some(None)) => Some(None),
            _ => None,
        };
        rows.push(ServerRow {
            name: s.name,
            module: s.module,
            role: s.role,
            paired: s.paired,
            tools: manifest.as_ref().ok().map(|m| m.tools.len()),
            resource_templates: manifest.as_ref().ok().map(|m| m.resource_templates.len()),
            resources: manifest.as_ref().ok().map(|m| m.resources),
            manifest_sha256: manifest.as_ref().ok().map(ToolManifest::sha256),
            definitions_bytes: definitions.as_deref().map(agent::tokens::definitions_bytes),
            definitions_tokens,
            tokenizer: tokenizer.as_ref().map(agent::tokens::Tokenizer::label),
            distractors: distractors.as_ref().map(servers::distractors::Distractors::len),
            with_distractors_bytes: with.as_ref().map(|d| d.as_deref().map(agent::tokens::definitions_bytes)),
            with_distractors_tokens,
            relays: match s.external() {
                Some(a) => a.relays,
                None => servers::registry::module(s.module).is_some_and(|m| !m.relays.is_empty()),
            },
            poison_listed: attack.as_ref().filter(|a| a.poison.is_some()).map(|a| manifest.as_ref().ok().map(|m| m.lists(&a.marker))),
            command,
            kind: if external.is_some() { "external" } else { "builtin" },
            external,
            error: manifest.err(),
        });
    }
    if args.json {
        for r in &rows {
            println!("{}", serde_json::to_string(r)?);
        }
        return Ok(());
    }
    if let Some(d) = &distractors {
        let bytes = agent::tokens::definitions_bytes(d.definitions());
        let tokens = match &tokenizer {
            Some(t) => format!(", {} tokens of {}", t.count_definitions(d.definitions()).await.context("counting the distractors' tokens")?, t.label()),
            None => String::new(),
        };
        println!(
            "with --distractors {}: {} definitions of other servers listed beside each server's own, {bytes} bytes{tokens}; the JSON rows give each server's total",
            d.len(),
            d.len()
        );
    }
    if let Some(t) = &tokenizer {
        return print_with_tokens(&rows, &t.label());
    }
    let (w, m) = widths(&rows);
    println!("{:<w$} {:<m$} {:<8} {:<w$} {:>5}  manifest sha256", "server", "module", "role", "paired with", "tools");
    for r in &rows {
        let tools = r.tools.map_or("—".to_owned(), |t| t.to_string());
        let (role, sha, note) = row_parts(r);
        println!("{:<w$} {:<m$} {:<8} {:<w$} {:>5}  {sha}{note}", r.name, r.module, role, r.paired, tools);
    }
    Ok(())
}

/// The widths of the server and module columns: every name in full, however long an external
/// arm's (at least the header's 18).
fn widths(rows: &[ServerRow]) -> (usize, usize) {
    let widest = |f: fn(&ServerRow) -> usize| rows.iter().map(f).max().unwrap_or(0).max(18);
    (widest(|r| r.name.chars().count().max(r.paired.chars().count())), widest(|r| r.module.chars().count()))
}

/// A row's role, the first 16 digits of its manifest hash, and the note an external arm gets.
fn row_parts(r: &ServerRow) -> (&'static str, &str, String) {
    let role = match r.role {
        Role::Pattern => "pattern",
        Role::Control => "control",
    };
    let sha = r.manifest_sha256.as_deref().map_or("—", |s| &s[..16]);
    let note = match (&r.external, &r.error) {
        (Some(_), Some(e)) => format!("  external, not startable: {e}"),
        (Some(x), None) => format!("  external: {}", x.dir),
        _ => String::new(),
    };
    (role, sha, note)
}

/// The table with each server's definitions in bytes and in tokens of `tokenizer`.
fn print_with_tokens(rows: &[ServerRow], tokenizer: &str) -> anyhow::Result<()> {
    println!("definitions: every function a model is offered, as the JSON of the request's tools array; tokens: {tokenizer}");
    let (w, m) = widths(rows);
    println!(
        "{:<w$} {:<m$} {:<8} {:<w$} {:>5} {:>10} {:>8} {:>11}  manifest sha256",
        "server", "module", "role", "paired with", "tools", "def. bytes", "tokens", "bytes/token"
    );
    for r in rows {
        let dash = || "—".to_owned();
        let tokens = r.definitions_tokens.flatten();
        let per_token = r.definitions_bytes.zip(tokens).filter(|(_, t)| *t > 0).map_or_else(dash, |(b, t)| format!("{:.2}", b as f64 / t as f64));
        let (role, sha, note) = row_parts(r);
        println!(
            "{:<w$} {:<m$} {:<8} {:<w$} {:>5} {:>10} {:>8} {:>11}  {sha}{note}",
            r.name,
            r.module,
            role,
            r.paired,
            r.tools.map_or_else(dash, |t| t.to_string()),
            r.definitions_bytes.map_or_else(dash, |b| b.to_string()),
            tokens.map_or_else(dash, |t| t.to_string()),
            per_token
        );
    }
    Ok(())
}

pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let Some(entry) = servers::registry::find(&args.name) else {
        bail!("no server named {:?}; known servers: {}", args.name, servers::registry::names().join(", "));
    };
    // The same settings as `mcp-bench-server`: the environment's, plus the flags'.
    let mut options = servers::launch::HttpOptions::from_env();
    options.allowed_origins.extend(args.allowed_origins);
    options.allowed_hosts.extend(args.allowed_hosts);
    servers::transport::serve_with(
        entry,
        args.transport,
        SocketAddr::new(args.host, args.port),
        &args.backend_url,
        options,
        servers::launch::ArmSettings { catalogue: args.catalogue, poison: args.poison },
    )
    .await
}
