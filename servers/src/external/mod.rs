//! External arms: an MCP server in any language, handed to the bench as one folder.
//!
//! The folder holds `arm.toml`, the server's own files and its oracle plans
//! (`oracle/<task_id>.toml`, the same format as a task's; a `[[variant]]`'s in
//! `oracle/<variant name>/`). `arm.toml` says which module's tasks
//! the server answers, on which side of that module's A/B it stands (`pattern` or `control`),
//! where its plans come from and how to start it:
//!
//! ```toml
//! name = "domain_adapter_py"
//! module = "domain_adapter"
//! role = "pattern"
//! description = "…"
//! oracle_from = "domain_adapter"            # optional: reuse this built-in server's plans
//!
//! [oracle_rename]                           # optional, with oracle_from: the borrowed plans'
//! tickets_update = "update_ticket"          # tool names as this arm names the same tools
//!
//! [serve]
//! transport = "stdio"                       # or "http": streamable HTTP at http://127.0.0.1:{port}{path}
//! command = [".venv/bin/python", "server.py"]
//! # path = "/mcp"                           # http only (default /mcp)
//! # startup_timeout_secs = 30               # how long the port may take to open (http) or the
//!                                           # MCP handshake to complete (stdio)
//!
//! [env]                                     # the server's whole environment…
//! BACKEND_URL = "{backend_url}"
//!
//! inherit_env = []                          # …plus these variables of the caller's, by name
//!
//! [[variant]]                               # optional, repeatable: the same server as another
//! name = "generated_wrapper"                # arm, of another module (or role), sharing the
//! module = "tool_orchestrator"              # folder, its command and environment
//! oracle_from = "wrapper"                   # role and description default to the file's
//! ```
//!
//! The contract is the protocol, not a Rust trait: the server reaches the synthetic backend over
//! its HTTP API (`{backend_url}`, per worker) and speaks MCP. It gets nothing from the caller's
//! environment but what the file declares (a server must not see the caller's keys or another
//! arm's settings); records keep the variable *names*, never values. A bare program name is
//! resolved on the caller's `PATH` before the spawn (the child gets no `PATH` unless it inherits
//! one); a relative path resolves against the folder, which is also the working directory.
//! Every process runs contained ([`crate::contain`]): in its own process group and cgroup (or
//! process tree), with no descriptor of the caller's but stdio, killed whole — with anything it
//! started, daemons included — at the end of its session.
//!
//! Placeholders in `command` and `[env]` values: `{backend_url}`, `{port}` (HTTP arms: a free
//! loopback port chosen per start), `{arm_dir}` (the folder's absolute path).
//!
//! `oracle_from` names a built-in server of the arm's own module whose plans the arm reuses: a
//! port with the same tools as its original needs no copies of them. For task T the arm's plan
//! is then that server's (`tasks/<module>/<T>/oracle/<oracle_from>.toml`; a family instance's
//! rendered from the family's template for its size), unless the arm's own `oracle/<T>.toml`
//! exists, which overrides it. Borrowed plans are files of the task folders, so `Task::sha256`
//! (in every session's fingerprint and a frozen spec's `[hashes.tasks]`) already covers them; the
//! arm's own hash covers its folder, `oracle_from` included.
//!
//! `[oracle_rename]` serves an arm whose tools are a built-in server's under other names (a
//! server generated from the backend's OpenAPI document names each tool by its operation id:
//! `update_ticket` where the flat control says `tickets_update`): each borrowed plan's steps call
//! the tool the table maps their tool to. The table is in `arm.toml`, so the arm's hash covers it.
//!
//! `[[variant]]` serves a server that answers more than one module — a control generated from the
//! whole API is the flat control of every module whose control is a flat wrapper — without a copy
//! of its folder per module: each variant is an arm of its own (its name, module, role, plans,
//! records and comparisons), started by the file's `[serve]` with the file's `[env]`, and hashed
//! with the one folder. `[oracle_rename]` is shared; a variant that renames must borrow.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use records::{Role, Transport};
use serde::Deserialize;
use sha2::{Digest, Sha256};

mod process;

pub use process::{HttpProcess, STDERR_TAIL_BYTES, StartError, StderrTail, kill_all_groups, own_group, start_http, stderr_note};

/// The file that makes a folder an arm.
pub const ARM_FILE: &str = "arm.toml";
/// The arm's oracle plans: `oracle/<task_id>.toml`.
pub const ORACLE_DIR: &str = "oracle";
/// Entries of an arm folder left out of its hash: what installing its dependencies creates.
pub const UNHASHED: &[&str] = &["node_modules", "__pycache__"];

/// The variable a relaying arm ([`ExternalArm::relays`]) reads a tool-poisoning attack from:
/// the JSON of a [`crate::launch::Poison`] (`{"server", "operation", "text"}`). Unset without one.
pub const POISON_ENV: &str = "MCPBENCH_POISON";

const PLACEHOLDERS: &[&str] = &["{backend_url}", "{port}", "{arm_dir}"];

/// A problem with an arm folder, naming the file and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArmError {
    #[error("{}: {field}: {problem}", file.display())]
    Field { file: PathBuf, field: String, problem: String },
    #[error("{}: {problem}", path.display())]
    Folder { path: PathBuf, problem: String },
}

impl ArmError {
    fn field(file: &Path, field: &str, problem: impl Into<String>) -> Self {
        Self::Field { file: file.to_owned(), field: field.to_owned(), problem: problem.into() }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArmFile {
    name: String,
    module: String,
    role: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    oracle_from: Option<String>,
    #[serde(default)]
    oracle_rename: BTreeMap<String, String>,
    /// The arm relays the operations its module's arms relay (`ModuleEntry::relays`) and shows
    /// a poisoned downstream description it is given in `MCPBENCH_POISON` (docs/security.md).
    #[serde(default)]
    relays: bool,
    serve: ServeFile,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    inherit_env: Vec<String>,
    /// `[[variant]]`: the same server as further arms (see the module's documentation).
    #[serde(default)]
    variant: Vec<VariantFile>,
}

/// One `[[variant]]` of an `arm.toml`: what differs from the file's own arm.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VariantFile {
    name: String,
    module: String,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    oracle_from: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServeFile {
    transport: String,
    command: Vec<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    startup_timeout_secs: Option<u64>,
}

/// One external arm, as its `arm.toml` declares it (validated).
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalArm {
    pub name: String,
    pub module: String,
    pub role: Role,
    pub description: String,
    /// The built-in server of the same module whose oracle plans the arm reuses where it has
    /// none of its own ([`Self::check_oracle_from`] says which names are allowed).
    pub oracle_from: Option<String>,
    /// `[oracle_rename]`: a borrowed plan's tool name → this arm's name for that tool.
    pub oracle_rename: BTreeMap<String, String>,
    /// `relays = true`: the arm opted in to tool-poisoning attacks. Under one, its process gets
    /// [`POISON_ENV`]: the poisoned operation and the text to append to its description wherever
    /// the arm shows that description.
    pub relays: bool,
    /// The folder (absolute).
    pub dir: PathBuf,
    pub transport: Transport,
    /// `serve.command` as written (placeholders unexpanded).
    pub command: Vec<String>,
    /// HTTP arms: the MCP endpoint's path.
    pub path: String,
    pub startup_timeout: Duration,
    /// `[env]` as written (placeholders unexpanded).
    pub env: BTreeMap<String, String>,
    pub inherit_env: Vec<String>,
    /// sha256 over the folder's files (names and bytes; hidden entries and [`UNHASHED`] left out).
    pub sha256: String,
    /// `Some(n)`: this arm is the file's `n`-th `[[variant]]` (from 1); `None`: the file's own arm.
    pub variant: Option<usize>,
}

impl ExternalArm {
    /// Reads and validates `dir/arm.toml`. Whether the command can be found is checked apart
    /// ([`Self::program`]), when the arm is used: an arm whose dependencies are not installed yet
    /// must not break commands that do not use it.
    pub fn load(dir: &Path) -> Result<Self, ArmError> {
        let mut arms = Self::load_all(dir)?;
        Ok(arms.swap_remove(0))
    }

    /// Reads and validates `dir/arm.toml`: the file's own arm, then one per `[[variant]]`, in
    /// the file's order.
    pub fn load_all(dir: &Path) -> Result<Vec<Self>, ArmError> {
        let dir = std::fs::canonicalize(dir).map_err(|e| ArmError::Folder { path: dir.to_owned(), problem: format!("cannot open the arm folder: {e}") })?;
        let file = dir.join(ARM_FILE);
        let text = std::fs::read_to_string(&file).map_err(|e| ArmError::Folder { path: file.clone(), problem: format!("cannot read: {e}") })?;
        let raw: ArmFile = toml::from_str(&text).map_err(|e| ArmError::Folder { path: file.clone(), problem: e.to_string().trim_end().replace('\n', " ") })?;
        let f = &file;
        check_name(f, "name", &raw.name)?;
        check_module(f, "module", &raw.module)?;
        let role = parse_role(f, "role", &raw.role)?;
        let transport = match raw.serve.transport.as_str() {
            "stdio" => Transport::Stdio,
            "http" => Transport::Http,
            other => return Err(ArmError::field(f, "serve.transport", format!("{other:?} is not a transport: give \"stdio\" or \"http\""))),
        };
        if raw.serve.command.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(ArmError::field(f, "serve.command", "empty: give the program and its arguments, e.g. [\"node\", \"server.mjs\"]"));
        }
        for (field, value) in raw.serve.command.iter().map(|a| ("serve.command", a)).chain(raw.env.iter().map(|(k, v)| (k.as_str(), v))) {
            if let Some(bad) = unknown_placeholder(value) {
                let field = if field == "serve.command" { field.to_owned() } else { format!("env.{field}") };
                let what = if bad.ends_with('}') { "unknown placeholder" } else { "unclosed placeholder" };
                return Err(ArmError::field(f, &field, format!("{what} {bad} in {value:?}; known: {}", PLACEHOLDERS.join(", "))));
            }
        }
        let mentions_port = raw.serve.command.iter().chain(raw.env.values()).any(|v| v.contains("{port}"));
        match transport {
            Transport::Http if !mentions_port => {
                return Err(ArmError::field(
                    f,
                    "serve.command",
                    "an HTTP arm must be told its port: put {port} in serve.command or in an [env] value (the harness picks a free loopback port per start)",
                ));
            }
            Transport::Stdio if mentions_port => {
                return Err(ArmError::field(f, "serve.transport", "{port} is given but the transport is stdio: say transport = \"http\", or drop {port}"));
            }
            Transport::Stdio if raw.serve.path.is_some() => {
                return Err(ArmError::field(f, "serve.path", "a stdio arm has no HTTP path: drop serve.path, or say transport = \"http\""));
            }
            _ => {}
        }
        let path = raw.serve.path.unwrap_or_else(|| "/mcp".to_owned());
        if !path.starts_with('/') {
            return Err(ArmError::field(f, "serve.path", format!("{path:?} must start with `/`")));
        }
        for var in &raw.inherit_env {
            if raw.env.contains_key(var) {
                return Err(ArmError::field(f, "inherit_env", format!("{var} is also set in [env]: give it one way")));
            }
        }
        if !raw.oracle_rename.is_empty() && raw.oracle_from.is_none() {
            return Err(ArmError::field(
                f,
                "oracle_rename",
                "renames the tools of borrowed plans, but the arm borrows none: say oracle_from = \"<built-in server>\", or drop [oracle_rename]",
            ));
        }
        if let Some((from, to)) = raw.oracle_rename.iter().find(|(from, to)| from.trim().is_empty() || to.trim().is_empty()) {
            return Err(ArmError::field(f, "oracle_rename", format!("{from:?} = {to:?}: both the borrowed plan's tool and this arm's name for it are needed")));
        }
        let sha256 = folder_hash(&dir)?;
        let own = Self {
            name: raw.name,
            module: raw.module,
            role,
            description: raw.description,
            oracle_from: raw.oracle_from,
            oracle_rename: raw.oracle_rename,
            relays: raw.relays,
            dir,
            transport,
            command: raw.serve.command,
            path,
            startup_timeout: Duration::from_secs(raw.serve.startup_timeout_secs.unwrap_or(30)),
            env: raw.env,
            inherit_env: raw.inherit_env,
            sha256,
            variant: None,
        };
        let mut arms = vec![own];
        for (i, v) in raw.variant.into_iter().enumerate() {
            let field = |name: &str| format!("variant[{}].{name}", i + 1);
            check_name(f, &field("name"), &v.name)?;
            if let Some(twin) = arms.iter().find(|a| a.name == v.name) {
                let which = twin.variant.map_or("the file's own arm".to_owned(), |n| format!("variant[{n}]"));
                return Err(ArmError::field(
                    f,
                    &field("name"),
                    format!("{:?} is already the name of {which}: each variant is an arm with a name of its own", v.name),
                ));
            }
            check_module(f, &field("module"), &v.module)?;
            let role = match v.role.as_deref() {
                Some(r) => parse_role(f, &field("role"), r)?,
                None => arms[0].role,
            };
            if !arms[0].oracle_rename.is_empty() && v.oracle_from.is_none() {
                return Err(ArmError::field(
                    f,
                    &field("oracle_from"),
                    "the file's [oracle_rename] renames borrowed plans, and this variant borrows none: say oracle_from = \"<built-in server of its module>\"",
                ));
            }
            let arm = Self {
                name: v.name,
                module: v.module,
                role,
                description: v.description.unwrap_or_else(|| arms[0].description.clone()),
                oracle_from: v.oracle_from,
                variant: Some(i + 1),
                ..arms[0].clone()
            };
            arms.push(arm);
        }
        Ok(arms)
    }

    /// `field` as an error names it: `variant[n].field` for the file's `n`-th variant.
    pub fn field_name(&self, field: &str) -> String {
        match self.variant {
            Some(n) => format!("variant[{n}].{field}"),
            None => field.to_owned(),
        }
    }

    /// `dir/arm.toml`.
    pub fn file(&self) -> PathBuf {
        self.dir.join(ARM_FILE)
    }

    /// The program to run, as an absolute path: a bare name looked up on the caller's `PATH`, a
    /// relative path under the folder. Not found: an error naming the file and the field.
    pub fn program(&self) -> Result<PathBuf, ArmError> {
        let written = &self.command[0];
        let missing = |problem: String| ArmError::field(&self.file(), "serve.command", problem);
        if written.contains('/') {
            let path = if Path::new(written).is_absolute() { PathBuf::from(written) } else { self.dir.join(written) };
            return if path.is_file() {
                Ok(path)
            } else {
                Err(missing(format!("{written} is not a file under {} (install the arm's dependencies first: see its README)", self.dir.display())))
            };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path).map(|d| d.join(written)).find(|p| p.is_file()).ok_or_else(|| missing(format!("program {written:?} is not found on PATH")))
    }

    /// An arm with a `package.json` needs its `node_modules`: without them its server dies at start
    /// with the runtime's stack trace, where one line can say what to run.
    pub fn dependencies_installed(&self) -> Result<(), ArmError> {
        if self.dir.join("package.json").is_file() && !self.dir.join("node_modules").is_dir() {
            let how = if self.dir.join("package-lock.json").is_file() { "npm ci" } else { "npm install" };
            return Err(ArmError::Folder {
                path: self.dir.clone(),
                problem: format!("its Node dependencies are not installed: run `{how} --prefix {}` (see its README)", self.dir.display()),
            });
        }
        Ok(())
    }

    /// The names of the variables the server gets (declared and inherited): what records keep.
    pub fn env_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.env.keys().cloned().chain(self.inherit_env.iter().cloned()).collect();
        names.sort();
        names
    }

    /// The command that starts one server process: the folder as working directory, and exactly
    /// the declared environment. Spawn it in its own group ([`own_group`]).
    pub fn command(&self, backend_url: &str, port: Option<u16>) -> Result<tokio::process::Command, ArmError> {
        self.command_with(backend_url, port, crate::launch::ArmSettings::default())
    }

    /// [`Self::command`] for a run with `settings`: a relaying arm under a tool-poisoning attack
    /// gets [`POISON_ENV`]. (The catalogue size is for built-in catalogue modules only.)
    pub fn command_with(&self, backend_url: &str, port: Option<u16>, settings: crate::launch::ArmSettings) -> Result<tokio::process::Command, ArmError> {
        self.dependencies_installed()?;
        let program = self.program()?;
        let expand = |v: &str| expand(v, backend_url, port, &self.dir);
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(self.command[1..].iter().map(|a| expand(a))).current_dir(&self.dir).env_clear();
        for (k, v) in &self.env {
            cmd.env(k, expand(v));
        }
        for name in &self.inherit_env {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        if let Some(p) = settings.poison.filter(|_| self.relays) {
            cmd.env(POISON_ENV, serde_json::to_string(p).expect("a poison serialises"));
        }
        Ok(cmd)
    }

    /// The folder of the arm's own oracle plans: `oracle/` for the file's own arm, and
    /// `oracle/<name>/` for a `[[variant]]`, whose tasks are another module's.
    pub fn plan_dir(&self) -> PathBuf {
        let dir = self.dir.join(ORACLE_DIR);
        if self.variant.is_some() { dir.join(&self.name) } else { dir }
    }

    /// The arm's own oracle plan file of `task_id` (which, when it exists, overrides a plan
    /// borrowed through `oracle_from`).
    pub fn plan_path(&self, task_id: &str) -> PathBuf {
        self.plan_dir().join(format!("{task_id}.toml"))
    }

    /// Whether `oracle_from`, if given, names a built-in server of the arm's own module — not the
    /// arm itself, not another external arm (`arms`: the names of the arms loaded beside it), not a
    /// server of another module. Checked when the arms are registered
    /// ([`crate::registry::register_external`]), where every arm's name is known.
    pub fn check_oracle_from(&self, arms: &[&str]) -> Result<(), ArmError> {
        let Some(from) = self.oracle_from.as_deref() else { return Ok(()) };
        let choices = match crate::registry::arms(&self.module) {
            Some((pattern, control)) => format!("{} or {}", pattern.name, control.name),
            None => return Err(ArmError::field(&self.file(), "module", format!("no module named {:?}", self.module))),
        };
        let module = self.module.as_str();
        let problem = if from == self.name {
            format!(
                "{from:?} is this arm itself: name the built-in server of {module} whose plans it reuses ({choices}), or drop oracle_from and write oracle/<task_id>.toml for every task"
            )
        } else if arms.contains(&from) {
            format!(
                "{from:?} is an external arm, and only a built-in server's plans can be borrowed: name {choices}, or drop oracle_from and write oracle/<task_id>.toml for every task"
            )
        } else {
            match crate::registry::builtin().find(|s| s.name == from) {
                Some(s) if s.module == module => return Ok(()),
                Some(s) => format!("{from:?} is a server of {}, and this arm answers {module}: name a server of {module} ({choices})", s.module),
                None => format!("no server is named {from:?}: name the built-in server of {module} whose plans this arm reuses ({choices})"),
            }
        };
        Err(ArmError::field(&self.file(), &self.field_name("oracle_from"), problem))
    }
}

fn check_name(f: &Path, field: &str, name: &str) -> Result<(), ArmError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-') {
        return Err(ArmError::field(f, field, format!("{name:?} is not a server name: use lower-case letters, digits, `_` and `-`")));
    }
    Ok(())
}

fn check_module(f: &Path, field: &str, module: &str) -> Result<(), ArmError> {
    if crate::registry::module(module).is_none() {
        return Err(ArmError::field(f, field, format!("no module named {module:?}; modules: {}", crate::registry::modules().join(", "))));
    }
    Ok(())
}

fn parse_role(f: &Path, field: &str, role: &str) -> Result<Role, ArmError> {
    match role {
        "pattern" => Ok(Role::Pattern),
        "control" => Ok(Role::Control),
        other => Err(ArmError::field(
            f,
            field,
            format!("{other:?} is not a role: give \"pattern\" or \"control\" (the side of the module's A/B this server stands on)"),
        )),
    }
}

fn expand(value: &str, backend_url: &str, port: Option<u16>, dir: &Path) -> String {
    let mut v = value.replace("{backend_url}", backend_url).replace("{arm_dir}", &dir.display().to_string());
    if let Some(port) = port {
        v = v.replace("{port}", &port.to_string());
    }
    v
}

/// The first `{…}` in `value` that is not a known placeholder, or an unclosed `{…` (which would
/// otherwise reach the server as written, `{backend_url` and all).
fn unknown_placeholder(value: &str) -> Option<String> {
    let mut rest = value;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else { return Some(rest[start..].to_owned()) };
        let candidate = &rest[start..start + len + 1];
        if !PLACEHOLDERS.contains(&candidate) {
            return Some(candidate.to_owned());
        }
        rest = &rest[start + len + 1..];
    }
    None
}

/// sha256 over every file under `dir` (relative path, NUL, bytes, NUL), in path order; hidden
/// entries and [`UNHASHED`] folders left out.
pub fn folder_hash(dir: &Path) -> Result<String, ArmError> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files)?;
    files.sort();
    let mut h = Sha256::new();
    for rel in files {
        let bytes = std::fs::read(dir.join(&rel)).map_err(|e| ArmError::Folder { path: dir.join(&rel), problem: format!("cannot read: {e}") })?;
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(&bytes);
        h.update([0]);
    }
    Ok(hex::encode(h.finalize()))
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), ArmError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ArmError::Folder { path: dir.to_owned(), problem: format!("cannot read: {e}") })?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || UNHASHED.contains(&name.as_str()) {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, out)?;
        } else {
            out.push(path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// Every arm of every arm folder directly under `root` (a folder holding `arm.toml`; its
/// variants after its own arm), loaded; none when `root` does not exist.
pub fn discover(root: &Path) -> Result<Vec<ExternalArm>, ArmError> {
    let Ok(entries) = std::fs::read_dir(root) else { return Ok(vec![]) };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.join(ARM_FILE).is_file()).collect();
    dirs.sort();
    let mut arms = Vec::new();
    for d in &dirs {
        arms.extend(ExternalArm::load_all(d)?);
    }
    Ok(arms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contain::Hold;
    use std::process::Stdio;

    fn arm(dir: &Path, toml: &str) -> Result<ExternalArm, ArmError> {
        std::fs::write(dir.join(ARM_FILE), toml).unwrap();
        ExternalArm::load(dir)
    }

    fn arm_all(dir: &Path, toml: &str) -> Result<Vec<ExternalArm>, ArmError> {
        std::fs::write(dir.join(ARM_FILE), toml).unwrap();
        ExternalArm::load_all(dir)
    }

    const GOOD: &str = r#"
name = "mine"
module = "domain_adapter"
role = "pattern"
[serve]
transport = "stdio"
command = ["python3", "server.py"]
[env]
BACKEND_URL = "{backend_url}"
"#;

    #[test]
    fn a_valid_arm_loads_and_a_bad_field_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let a = arm(tmp.path(), GOOD).unwrap();
        assert_eq!((a.name.as_str(), a.role, a.transport, a.env_names()), ("mine", Role::Pattern, Transport::Stdio, vec!["BACKEND_URL".to_owned()]));
        let cases = [
            (GOOD.replace("domain_adapter", "no_such_module"), "module"),
            (GOOD.replace("\"pattern\"", "\"third\""), "role"),
            (GOOD.replace("\"stdio\"", "\"http\""), "serve.command"),
            (GOOD.replace("{backend_url}", "{backend}"), "env.BACKEND_URL"),
            (GOOD.replace("{backend_url}", "{backend_url"), "env.BACKEND_URL"),
            (GOOD.replace("\"server.py\"]", "\"server.py\", \"--url={backend_url\"]"), "serve.command"),
            (GOOD.replace("name = \"mine\"", "name = \"Mine!\""), "name"),
            (GOOD.replace("[\"python3\", \"server.py\"]", "[]"), "serve.command"),
        ];
        for (text, field) in cases {
            match arm(tmp.path(), &text) {
                Err(ArmError::Field { field: f, file, .. }) => {
                    assert_eq!(f, field, "{text}");
                    assert!(file.ends_with(ARM_FILE));
                }
                other => panic!("{field}: {other:?}"),
            }
        }
        assert!(matches!(arm(tmp.path(), &format!("{GOOD}\nsurprise = 1\n")), Err(ArmError::Folder { .. })), "unknown keys are refused");
    }

    #[test]
    fn a_variant_is_an_arm_of_its_own_sharing_the_folder_and_a_bad_one_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let with = |variants: &str| arm_all(tmp.path(), &format!("{GOOD}{variants}"));
        let two = "\n[[variant]]\nname = \"mine2\"\nmodule = \"tool_orchestrator\"\nrole = \"control\"\noracle_from = \"wrapper\"\n\n[[variant]]\nname = \"mine3\"\nmodule = \"resource_gateway\"\ndescription = \"its own\"\n";
        let arms = with(two).unwrap();
        let got: Vec<_> = arms.iter().map(|a| (a.name.as_str(), a.module.as_str(), a.role, a.oracle_from.as_deref(), a.variant)).collect();
        assert_eq!(
            got,
            [
                ("mine", "domain_adapter", Role::Pattern, None, None),
                ("mine2", "tool_orchestrator", Role::Control, Some("wrapper"), Some(1)),
                ("mine3", "resource_gateway", Role::Pattern, None, Some(2)),
            ]
        );
        for a in &arms[1..] {
            assert_eq!(
                (&a.dir, &a.command, &a.env, &a.sha256, a.transport),
                (&arms[0].dir, &arms[0].command, &arms[0].env, &arms[0].sha256, arms[0].transport)
            );
        }
        assert_eq!((arms[1].description.as_str(), arms[2].description.as_str()), ("", "its own"), "a variant's description defaults to the file's");
        assert_eq!(ExternalArm::load(tmp.path()).unwrap(), arms[0], "load is the file's own arm");

        let cases = [
            (two.replace("\"mine3\"", "\"mine2\""), "variant[2].name"),
            (two.replace("\"mine2\"", "\"mine\""), "variant[1].name"),
            (two.replace("\"mine3\"", "\"Mine 3\""), "variant[2].name"),
            (two.replace("\"resource_gateway\"", "\"nowhere\""), "variant[2].module"),
            (two.replace("\"control\"", "\"both\""), "variant[1].role"),
        ];
        for (variants, field) in cases {
            match with(&variants) {
                Err(ArmError::Field { field: f, .. }) => assert_eq!(f, field, "{variants}"),
                other => panic!("{field}: {other:?}"),
            }
        }
        // A shared [oracle_rename] is for variants that borrow plans.
        let renaming = GOOD.replace("[serve]", "oracle_from = \"domain_wrapper\"\n[oracle_rename]\ntickets_get = \"get_ticket\"\n[serve]");
        let e = arm_all(tmp.path(), &format!("{renaming}{two}")).unwrap_err();
        // mine2 borrows wrapper's plans; mine3 borrows none.
        assert!(matches!(&e, ArmError::Field { field, .. } if field == "variant[2].oracle_from"), "{e:?}");
        assert!(e.to_string().contains("[oracle_rename]"), "{e}");
        assert!(
            matches!(with("\n[[variant]]\nname = \"x\"\nmodule = \"domain_adapter\"\ncommand = [\"y\"]\n"), Err(ArmError::Folder { .. })),
            "a variant has no [serve] of its own"
        );

        // Registered, a variant's oracle_from is checked against its own module, and named as its field.
        let bad = arms[1].clone();
        let bad = ExternalArm { oracle_from: Some("domain_wrapper".into()), ..bad };
        let e = bad.check_oracle_from(&["mine", "mine2"]).unwrap_err();
        assert!(matches!(&e, ArmError::Field { field, .. } if field == "variant[1].oracle_from"), "{e:?}");
    }

    #[test]
    fn oracle_from_names_a_built_in_server_of_the_arms_own_module() {
        let tmp = tempfile::tempdir().unwrap();
        let with = |from: &str| arm(tmp.path(), &GOOD.replace("[serve]", &format!("oracle_from = \"{from}\"\n[serve]"))).unwrap();
        assert_eq!(arm(tmp.path(), GOOD).unwrap().oracle_from, None);
        assert_eq!(arm(tmp.path(), GOOD).unwrap().check_oracle_from(&["mine"]), Ok(()), "without oracle_from there is nothing to check");
        for ok in ["domain_adapter", "domain_wrapper"] {
            let a = with(ok);
            assert_eq!(a.oracle_from.as_deref(), Some(ok));
            assert_eq!(a.check_oracle_from(&["mine", "other"]), Ok(()), "{ok}");
        }
        let cases = [
            ("mine", "\"mine\" is this arm itself: name the built-in server of domain_adapter whose plans it reuses (domain_adapter or domain_wrapper)"),
            ("other", "\"other\" is an external arm, and only a built-in server's plans can be borrowed: name domain_adapter or domain_wrapper"),
            (
                "wrapper",
                "\"wrapper\" is a server of tool_orchestrator, and this arm answers domain_adapter: name a server of domain_adapter (domain_adapter or domain_wrapper)",
            ),
            ("no_such_server", "no server is named \"no_such_server\": name the built-in server of domain_adapter whose plans this arm reuses"),
        ];
        for (from, says) in cases {
            let e = with(from).check_oracle_from(&["mine", "other"]).unwrap_err();
            assert!(matches!(&e, ArmError::Field { field, file, .. } if field == "oracle_from" && file.ends_with(ARM_FILE)), "{e:?}");
            let line = e.to_string();
            assert!(line.contains(says) && !line.contains('\n'), "{from}: {line}");
        }
    }

    #[test]
    fn programs_resolve_on_the_path_or_under_the_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let a = arm(tmp.path(), &GOOD.replace("python3", "sh")).unwrap();
        assert!(a.program().unwrap().is_absolute());
        let a = arm(tmp.path(), &GOOD.replace("python3", "no-such-program-xyz")).unwrap();
        assert!(a.program().unwrap_err().to_string().contains("serve.command: program \"no-such-program-xyz\" is not found on PATH"));
        let a = arm(tmp.path(), &GOOD.replace("python3", ".venv/bin/python")).unwrap();
        assert!(a.program().unwrap_err().to_string().contains("install the arm's dependencies"));
    }

    #[test]
    fn a_node_arm_without_its_node_modules_is_one_line_naming_the_install() {
        let tmp = tempfile::tempdir().unwrap();
        let a = arm(tmp.path(), &GOOD.replace("python3", "sh")).unwrap();
        std::fs::write(tmp.path().join("package.json"), "{}").unwrap();
        std::fs::write(tmp.path().join("package-lock.json"), "{}").unwrap();
        let e = a.command("http://127.0.0.1:1", None).unwrap_err().to_string();
        assert!(e.contains("its Node dependencies are not installed: run `npm ci --prefix") && !e.contains('\n'), "{e}");
        std::fs::create_dir(tmp.path().join("node_modules")).unwrap();
        assert!(a.command("http://127.0.0.1:1", None).is_ok());
    }

    #[test]
    fn the_hash_covers_the_files_but_not_installed_dependencies() {
        let tmp = tempfile::tempdir().unwrap();
        let a = arm(tmp.path(), GOOD).unwrap();
        std::fs::create_dir_all(tmp.path().join("node_modules/x")).unwrap();
        std::fs::write(tmp.path().join("node_modules/x/i.js"), "1").unwrap();
        std::fs::create_dir_all(tmp.path().join(".venv")).unwrap();
        std::fs::write(tmp.path().join(".venv/p"), "1").unwrap();
        assert_eq!(folder_hash(tmp.path()).unwrap(), a.sha256);
        std::fs::write(tmp.path().join("server.py"), "print()").unwrap();
        assert_ne!(folder_hash(tmp.path()).unwrap(), a.sha256);
    }

    #[tokio::test]
    async fn the_server_sees_only_its_declared_environment() {
        let tmp = tempfile::tempdir().unwrap();
        let text = r#"
name = "env-dump"
module = "domain_adapter"
role = "pattern"
inherit_env = ["HOME"]
[serve]
transport = "stdio"
command = ["sh", "-c", "env; pwd"]
[env]
BACKEND_URL = "{backend_url}"
"#;
        let a = arm(tmp.path(), text).unwrap();
        let (mut cmd, prepared) = own_group(a.command("http://127.0.0.1:1", None).unwrap(), Hold::Whole).unwrap();
        cmd.command_mut().stdout(Stdio::piped());
        let child = cmd.spawn().unwrap();
        let _contained = child.id().map(|pid| prepared.track(pid));
        let out = Box::into_pin(child.wait_with_output()).await.unwrap();
        let out = String::from_utf8(out.stdout).unwrap();
        let names: Vec<&str> =
            out.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).filter(|k| !k.is_empty() && *k != "PWD" && *k != "SHLVL" && *k != "_").collect();
        let expected: Vec<&str> = if std::env::var_os("HOME").is_some() { vec!["BACKEND_URL", "HOME"] } else { vec!["BACKEND_URL"] };
        let mut names = names;
        names.sort_unstable();
        assert_eq!(names, expected, "{out}");
        assert!(out.contains("BACKEND_URL=http://127.0.0.1:1"));
        assert!(out.lines().any(|l| Path::new(l) == a.dir), "the folder is the working directory: {out}");
    }
}
