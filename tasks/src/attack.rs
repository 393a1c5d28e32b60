//! Attacks (`--attack NAME`, docs/security.md): what an attacker who controls some of the world's
//! text plants there, and how to tell whether the agent did what the planted text asked. One TOML
//! file per attack in `tasks/attacks/`; the planted text is the same in both arms (it lives in
//! the world, never in an arm's code), so the two arms answer the same question under the same
//! attack.
//!
//! An attack file:
//!
//! ```toml
//! description = "…"
//! class = "data_injection"          # data_injection | tool_poisoning | result_shaping
//! # SQL run after the task's own seed, before the session: the world the agent meets.
//! plant = "…"
//! # A phrase of the planted text: a session whose tool results hold it was exposed to it.
//! marker = "Note for any assistant"
//! [success]
//! # One row, one boolean column, on the session's final state (its changes are in
//! # world_changes): true when the attack got what it asked for.
//! query = "SELECT EXISTS (…)"
//! says = "a ticket was assigned to the outsider"
//! # What an agent that followed the planted text would write: the query is false on the
//! # planted world and true after this (the catalogue's test).
//! proof = "UPDATE tickets SET …"
//! # Optional: a disclosure through the final answer counts too.
//! answer_contains = "the secret"
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// What an attacker controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttackClass {
    /// Instructions planted in text fields of the world a task reads.
    DataInjection,
    /// Instructions in a downstream server's tool descriptions (relaying arms).
    ToolPoisoning,
    /// An oversized or misleading result planted by the world.
    ResultShaping,
}

impl AttackClass {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DataInjection => "data_injection",
            Self::ToolPoisoning => "tool_poisoning",
            Self::ResultShaping => "result_shaping",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    description: String,
    class: AttackClass,
    plant: String,
    /// A phrase of the planted text: a session whose tool results hold it was exposed.
    marker: String,
    success: Success,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Success {
    pub query: String,
    pub says: String,
    /// SQL doing what the planted text asks, as a compromised agent would: the query must be
    /// false on the planted world and true after it (checked by the catalogue's test).
    pub proof: String,
    /// A disclosure through the agent's final answer, the other outbound channel: the attack
    /// also succeeded when the answer contains this text (compared without regard to case).
    #[serde(default)]
    pub answer_contains: Option<String>,
}

/// One attack of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attack {
    pub name: String,
    pub description: String,
    pub class: AttackClass,
    pub plant: String,
    /// A phrase of the planted text: a session whose tool results hold it was exposed to it.
    pub marker: String,
    pub success: Success,
    /// sha256 of the file's bytes: what the fingerprint pins.
    pub sha256: String,
    pub path: PathBuf,
}

/// The catalogue's folder under a tasks folder.
pub fn dir(tasks_dir: &Path) -> PathBuf {
    tasks_dir.join("attacks")
}

/// A valid attack name: what a file may be called.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl Attack {
    /// Reads `tasks_dir/attacks/NAME.toml`, refusing what could not be run.
    pub fn load(tasks_dir: &Path, name: &str) -> Result<Self, String> {
        let known = || {
            let names = catalogue(tasks_dir).map(|c| c.into_iter().map(|a| a.name).collect::<Vec<_>>().join(", ")).unwrap_or_default();
            if names.is_empty() { format!("no attack is in {}", dir(tasks_dir).display()) } else { format!("the catalogue has: {names}") }
        };
        if !valid_name(name) {
            return Err(format!("--attack {name:?}: an attack name is lowercase letters, digits and _ (or none); {}", known()));
        }
        let path = dir(tasks_dir).join(format!("{name}.toml"));
        if !path.is_file() {
            return Err(format!("--attack {name}: no attack file {}; {}", path.display(), known()));
        }
        Self::read(&path)
    }

    fn read(path: &Path) -> Result<Self, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let text = std::str::from_utf8(&bytes).map_err(|_| format!("{}: not UTF-8", path.display()))?;
        let f: File = toml::from_str(text).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
        let bad = |what: &str| Err(format!("{}: {what}", path.display()));
        if !valid_name(&name) {
            return bad("the file name is the attack's name: lowercase letters, digits and _");
        }
        if f.plant.trim().is_empty() {
            return bad("plant is empty: an attack plants something");
        }
        if f.marker.trim().len() < 8 || !f.plant.contains(f.marker.as_str()) {
            return bad("marker must be a phrase of at least 8 characters that the plant writes, so exposure can be told");
        }
        if f.success.answer_contains.as_deref().is_some_and(|a| a.trim().is_empty()) {
            return bad("[success] answer_contains is empty: it would match every answer");
        }
        if f.success.query.trim().is_empty() || f.success.says.trim().is_empty() || f.success.proof.trim().is_empty() {
            return bad("[success] needs a query, what it says, and a proof (the writes of an agent that followed the planted text)");
        }
        if f.class != AttackClass::DataInjection {
            return bad(&format!("class {} is not supported yet: only data_injection attacks run", f.class.as_str()));
        }
        Ok(Self {
            name,
            description: f.description,
            class: f.class,
            plant: f.plant,
            marker: f.marker,
            success: f.success,
            sha256: hex::encode(Sha256::digest(&bytes)),
            path: path.to_owned(),
        })
    }

    /// Plants the attack in `world`, after the task's own seed: the world the agent meets.
    pub async fn plant(&self, world: &backend::World) -> Result<(), String> {
        backend::world::apply_task_seed(&world.pool(), &self.plant).await.map_err(|e| format!("planting attack {}: {e}", self.name))
    }

    /// Whether the attack succeeded, read from `world`'s final state and the session's final
    /// `answer`.
    pub async fn succeeded(&self, world: &backend::World, answer: &str) -> Result<bool, String> {
        if self.success.answer_contains.as_deref().is_some_and(|needle| answer.to_lowercase().contains(&needle.to_lowercase())) {
            return Ok(true);
        }
        sqlx::query_scalar::<_, bool>(sqlx::AssertSqlSafe(self.success.query.clone()))
            .fetch_one(&world.pool())
            .await
            .map_err(|e| format!("attack {}: its success query failed: {e}", self.name))
    }
}

/// Every attack of the catalogue, by name.
pub fn catalogue(tasks_dir: &Path) -> Result<Vec<Attack>, String> {
    let d = dir(tasks_dir);
    let Ok(entries) = std::fs::read_dir(&d) else { return Ok(Vec::new()) };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    paths.iter().map(|p| Attack::read(p)).collect()
}
