//! Discovering and parsing task folders.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::oracle::OraclePlan;
use crate::verify::Verifier;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {problem}")]
    File { path: PathBuf, problem: String },
    #[error("{path}: {problem}")]
    Folder { path: PathBuf, problem: String },
}

pub(crate) fn file_err(path: &Path, problem: impl std::fmt::Display) -> LoadError {
    LoadError::File { path: path.to_owned(), problem: problem.to_string() }
}

/// `meta.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TaskMeta {
    /// Most model requests a session may make before it is stopped (a valid failure).
    pub turn_cap: u32,
    /// World the backend is reset to before the session.
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_scale")]
    pub scale: u32,
    /// Free-form labels: `trap`, `ambiguous`, `impossible`, `read_only`, `comments_8`, …
    #[serde(default)]
    pub tags: Vec<String>,
    /// For authors and reports: what the task tests, including any trap. Never shown to models.
    #[serde(default)]
    pub notes: String,
    /// `dev` (the default) or `held_out`: a held-out task is sealed by hash and reported apart
    /// from the dev tasks (`docs/held-out.md`).
    #[serde(default, skip_serializing_if = "records::Split::is_dev")]
    pub split: records::Split,
}

fn default_seed() -> u64 {
    backend::WorldSpec::default().seed
}

fn default_scale() -> u32 {
    1
}

/// One loaded task.
#[derive(Debug, Clone)]
pub struct Task {
    pub module: String,
    pub id: String,
    pub dir: PathBuf,
    /// The request given to the agent.
    pub text: String,
    pub meta: TaskMeta,
    pub verifier: Verifier,
    /// Oracle plan per server name: the module's two arms, and the registered external arms of
    /// the module that have one ([`attach_arm_plans`]).
    pub oracle: BTreeMap<String, OraclePlan>,
    /// The file each plan of [`Self::oracle`] was read from (for a family instance, the template
    /// it was rendered from): what an error about a plan names.
    pub oracle_files: BTreeMap<String, PathBuf>,
    /// sha256 over every file of the task folder (names and bytes), for frozen-input checks; for
    /// an instance of a family, over the family folder and the instance's size.
    pub sha256: String,
    /// The family this task was generated from, if any.
    pub family: Option<FamilyInstance>,
    /// `seed.sql`: rows the task adds to the freshly reset world before the session (the state it
    /// works on, e.g. a family's n tickets), run by [`Task::prepare`].
    pub seed_sql: Option<String>,
}

/// Which family a generated task belongs to, and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyInstance {
    /// The family folder's name; the instance's id is `<family>_n<size>`.
    pub id: String,
    pub size: u32,
}

impl Task {
    /// `module/id`, the task's unique key.
    pub fn key(&self) -> String {
        format!("{}/{}", self.module, self.id)
    }

    pub fn spec(&self) -> backend::WorldSpec {
        backend::WorldSpec { seed: self.meta.seed, scale: self.meta.scale }
    }

    pub fn plan_for(&self, server: &str) -> Option<&OraclePlan> {
        self.oracle.get(server)
    }

    /// The file `server`'s plan was read from: a built-in server's in the task folder, an
    /// external arm's own `oracle/<task_id>.toml`, or the built-in plan it borrows.
    pub fn plan_file(&self, server: &str) -> Option<&Path> {
        self.oracle_files.get(server).map(PathBuf::as_path)
    }

    /// Brings `world` to this task's starting state: the seeded world of its spec, then the
    /// task's own `seed.sql`, if any. Every session and G7 start here.
    pub async fn prepare(&self, world: &backend::World) -> Result<(), String> {
        self.prepare_under(world, None).await
    }

    /// [`Self::prepare`] with `attack`'s plant (`--attack`): the world an attacked session starts
    /// from. The attack is planted in the seeded world, before the task's own seed: what the
    /// attacker controls is the company's data, and the rows a task adds for itself are the
    /// task's (their texts are what its verifier may recognise them by).
    pub async fn prepare_under(&self, world: &backend::World, attack: Option<&crate::attack::Attack>) -> Result<(), String> {
        world.reset(self.spec()).await.map_err(|e| format!("resetting the world: {e}"))?;
        if let Some(a) = attack {
            a.plant(world).await?;
        }
        if let Some(sql) = &self.seed_sql {
            backend::world::apply_task_seed(&world.pool(), sql).await.map_err(|e| format!("task {}: {e}", self.key()))?;
        }
        Ok(())
    }
}

/// The `tasks/` folder: `MCPBENCH_TASKS_DIR`, else `./tasks` when it looks like one, else the
/// folder this crate was built from.
pub fn default_tasks_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MCPBENCH_TASKS_DIR") {
        return dir.into();
    }
    let local = PathBuf::from("tasks");
    if local.join("tool_orchestrator").is_dir() {
        return local;
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Folders of the `tasks` crate itself that live beside the module folders (`gold`: the graders'
/// frozen gold set; `sim`: the simulated agent's committed profiles).
const CRATE_FOLDERS: &[&str] = &["src", "tests", "benches", "examples", "target", "gold", "sim", "attacks"];

/// Every task of every registered module, in registry then id order.
pub fn load_all(root: &Path) -> Result<Vec<Task>, LoadError> {
    let mut out = Vec::new();
    for module in servers::registry::modules() {
        out.extend(load_module(root, module)?);
    }
    for entry in std::fs::read_dir(root).map_err(|e| LoadError::Folder { path: root.to_owned(), problem: e.to_string() })? {
        let entry = entry.map_err(|e| LoadError::Folder { path: root.to_owned(), problem: e.to_string() })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() && !CRATE_FOLDERS.contains(&name.as_str()) && !name.starts_with('.') && servers::registry::module(&name).is_none() {
            return Err(LoadError::Folder { path: entry.path(), problem: format!("{name:?} is not a registered module") });
        }
    }
    Ok(out)
}

/// The tasks of one module, sorted by folder (a family's instances by size).
pub fn load_module(root: &Path, module: &str) -> Result<Vec<Task>, LoadError> {
    let dir = root.join(module);
    let mut ids: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| LoadError::Folder { path: dir.clone(), problem: format!("cannot read the module's task folder: {e}") })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    ids.sort();
    let mut out = Vec::new();
    for p in &ids {
        if p.join(crate::family::FILE).is_file() {
            out.extend(crate::family::load_family(module, p)?);
        } else {
            out.push(load_task(module, p)?);
        }
    }
    attach_external_plans(module, &mut out)?;
    Ok(out)
}

/// Adds the oracle plan of every registered external arm of `module` to its tasks
/// ([`attach_arm_plans`]).
fn attach_external_plans(module: &str, tasks: &mut [Task]) -> Result<(), LoadError> {
    for entry in servers::registry::external().filter(|e| e.module == module) {
        if let Some(arm) = entry.external() {
            attach_arm_plans(arm, tasks)?;
        }
    }
    Ok(())
}

/// Adds `arm`'s plan to each of `tasks` (the tasks of its module): its own `oracle/<task_id>.toml`
/// (a variant's `oracle/<name>/<task_id>.toml`; for a family instance, `<family>_n<size>.toml`), else, when its `arm.toml` says
/// `oracle_from = "<server>"`, that built-in server's plan of the task as the task already holds
/// it (a family instance's rendered for its size). A plan that does not parse is refused here,
/// naming its file; a missing one is left out, and G7 names it.
///
/// A borrowed plan needs no hash of its own in the arm's identity: it is a file of the task
/// folder, which [`Task::sha256`] covers (every file, `oracle/` included; for a family, the whole
/// template folder), and that hash is in every session's fingerprint (`task_sha256`) and a frozen
/// spec (`[hashes.tasks]`), so a changed borrowed plan is noticed as a changed task.
pub fn attach_arm_plans(arm: &servers::external::ExternalArm, tasks: &mut [Task]) -> Result<(), LoadError> {
    let module = &arm.module;
    let known: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    if let Ok(files) = std::fs::read_dir(arm.plan_dir()) {
        // Folders in `oracle/` are the plans of the file's variants, each checked as its own arm.
        for f in files.flatten().filter(|f| !f.path().is_dir()) {
            let name = f.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".toml").unwrap_or(&name);
            if !known.contains(&id) {
                return Err(file_err(&f.path(), format!("no task {id:?} in {module}: an arm's plans are named <task_id>.toml after the tasks it answers")));
            }
        }
    }
    for task in tasks.iter_mut() {
        let own = arm.plan_path(&task.id);
        let (plan, path) = if own.is_file() {
            let plan: OraclePlan = parse(&|p: &Path| read(p), &own)?;
            plan.check().map_err(|p| file_err(&own, p))?;
            (plan, own)
        } else if let Some(from) = &arm.oracle_from {
            let (Some(plan), Some(path)) = (task.oracle.get(from), task.oracle_files.get(from)) else {
                return Err(file_err(&arm.file(), format!("oracle_from: {from:?} has no plan for {}: name a built-in server of {module}", task.key())));
            };
            (renamed(plan.clone(), &arm.oracle_rename), path.clone())
        } else {
            continue;
        };
        task.oracle.insert(arm.name.clone(), plan);
        task.oracle_files.insert(arm.name.clone(), path);
    }
    Ok(())
}

/// `plan` with each step's tool renamed by `renames` (an arm's `[oracle_rename]`); tools the table
/// does not name keep their name.
fn renamed(mut plan: OraclePlan, renames: &std::collections::BTreeMap<String, String>) -> OraclePlan {
    for step in &mut plan.steps {
        if let Some(to) = step.tool.as_ref().and_then(|t| renames.get(t)) {
            step.tool = Some(to.clone());
        }
    }
    plan
}

pub(crate) fn read(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path).map_err(|e| file_err(path, format!("cannot read: {e}")))
}

/// How a task file's text becomes what is parsed: as it is, or rendered for one family size.
pub(crate) type Source<'a> = &'a dyn Fn(&Path) -> Result<String, LoadError>;

fn parse<T: serde::de::DeserializeOwned>(source: Source, path: &Path) -> Result<T, LoadError> {
    toml::from_str(&source(path)?).map_err(|e| file_err(path, e.to_string().trim_end()))
}

/// A folder name that can be a task id: lowercase letters, digits and `_`.
pub(crate) fn folder_id(dir: &Path) -> Result<String, LoadError> {
    let id = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
        return Err(LoadError::Folder { path: dir.to_owned(), problem: "a task id must be lowercase letters, digits and _".into() });
    }
    Ok(id)
}

/// Loads and checks one task folder.
pub fn load_task(module: &str, dir: &Path) -> Result<Task, LoadError> {
    let id = folder_id(dir)?;
    build_task(module, id, dir, &read, folder_hash(dir)?, None)
}

/// A task from the files of `dir` as `source` gives them (the one path plain tasks and family
/// instances share, so both are checked alike).
pub(crate) fn build_task(module: &str, id: String, dir: &Path, source: Source, sha256: String, family: Option<FamilyInstance>) -> Result<Task, LoadError> {
    let (pattern, control) =
        servers::registry::arms(module).ok_or_else(|| LoadError::Folder { path: dir.to_owned(), problem: format!("{module:?} is not a registered module") })?;
    let text_path = dir.join("task.md");
    let text = source(&text_path)?.trim().to_owned();
    if text.is_empty() {
        return Err(file_err(&text_path, "the task text is empty"));
    }
    let meta_path = dir.join("meta.toml");
    let mut meta: TaskMeta = parse(source, &meta_path)?;
    if let Some(f) = &family {
        meta.tags.push(format!("size_{}", f.size));
    }
    if meta.turn_cap == 0 {
        return Err(file_err(&meta_path, "turn_cap must be at least 1"));
    }
    if !(1..=backend::seed::MAX_SCALE).contains(&meta.scale) {
        return Err(file_err(&meta_path, format!("scale must be between 1 and {}", backend::seed::MAX_SCALE)));
    }
    let seed_path = dir.join("seed.sql");
    let seed_sql = match seed_path.is_file() {
        false => None,
        true => {
            let sql = source(&seed_path)?;
            if sql.trim().is_empty() {
                return Err(file_err(&seed_path, "seed.sql is empty: remove it, or give the rows the task needs"));
            }
            Some(sql)
        }
    };
    let verify_path = dir.join("verify.toml");
    let verifier: Verifier = parse(source, &verify_path)?;
    verifier.check().map_err(|p| file_err(&verify_path, p))?;
    let oracle_dir = dir.join("oracle");
    let (mut oracle, mut oracle_files) = (BTreeMap::new(), BTreeMap::new());
    for server in [pattern.name, control.name] {
        let path = oracle_dir.join(format!("{server}.toml"));
        let plan: OraclePlan = parse(source, &path)?;
        plan.check().map_err(|p| file_err(&path, p))?;
        oracle.insert(server.to_owned(), plan);
        oracle_files.insert(server.to_owned(), path);
    }
    if let Ok(entries) = std::fs::read_dir(&oracle_dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let server = name.trim_end_matches(".toml");
            if !oracle.contains_key(server) {
                return Err(file_err(&e.path(), format!("not an arm of {module} (its arms are {} and {})", pattern.name, control.name)));
            }
        }
    }
    Ok(Task { module: module.to_owned(), id, dir: dir.to_owned(), text, meta, verifier, oracle, oracle_files, sha256, family, seed_sql })
}

/// sha256 over the relative paths and bytes of every file below `dir`, in sorted order.
pub fn folder_hash(dir: &Path) -> Result<String, LoadError> {
    fn walk(base: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let p = e?.path();
            if p.is_dir() {
                walk(base, &p, files)?;
            } else {
                files.push((p.strip_prefix(base).unwrap_or(&p).to_string_lossy().into_owned(), p));
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files).map_err(|e| LoadError::Folder { path: dir.to_owned(), problem: e.to_string() })?;
    files.sort();
    let mut h = Sha256::new();
    for (rel, path) in files {
        let bytes = std::fs::read(&path).map_err(|e| file_err(&path, e))?;
        h.update(rel.as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(hex::encode(h.finalize()))
}
