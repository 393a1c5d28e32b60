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
//! class = "data_injection"          # data_injection | result_shaping | tool_poisoning
//! # SQL run on the seeded world before the task's own seed: the world the agent meets. For
//! # data_injection and result_shaping it plants the text; for tool_poisoning it may set up what
//! # the poisoned description asks for (an outsider's account, a secret).
//! plant = "…"
//! # tool_poisoning only: the downstream server's operation whose description carries `text`
//! # (shown by every arm that relays it; a module that relays none refuses the attack).
//! [poison]
//! server = "runbooks"
//! operation = "get_runbook"
//! text = "…"
//! # A phrase of the planted text (in the plant, or in the poison's text): a session whose tool
//! # results or offered definitions hold it was exposed to it.
//! marker = "Note for any assistant"
//! [success]
//! # One row, one boolean column, on the session's final state (its changes are in
//! # world_changes): true when the attack got what it asked for.
//! query = "SELECT EXISTS (…)"
//! says = "a ticket was assigned to the outsider"
//! # What an agent that followed the planted text would write: the query is false on the
//! # planted world and true after this (the catalogue's test). Required with a query.
//! proof = "UPDATE tickets SET …"
//! # A disclosure through the final answer counts too (compared without regard to case); an
//! # attack may be verified by this alone (no query).
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
    #[serde(default)]
    plant: String,
    #[serde(default)]
    poison: Option<servers::launch::Poison>,
    /// A phrase of the planted text: a session whose tool results hold it was exposed.
    marker: String,
    success: Success,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Success {
    /// One boolean on the final state; `None`: the attack is verified on the answer alone.
    #[serde(default)]
    pub query: Option<String>,
    pub says: String,
    /// SQL doing what the planted text asks, as a compromised agent would: the query must be
    /// false on the planted world and true after it (checked by the catalogue's test).
    #[serde(default)]
    pub proof: Option<String>,
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
    /// SQL run on the seeded world before the task's own seed (may be empty for tool poisoning).
    pub plant: String,
    /// For tool poisoning: the downstream description relaying arms pass on.
    pub poison: Option<&'static servers::launch::Poison>,
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
    /// Whether `value` (a transcript event: a call and its result, or the definitions offered)
    /// holds the planted text: a string in it holds the marker, as written or as it reads inside a
    /// JSON text (a tool result is the backend's JSON body as text, where `"` reads `\"`). Never
    /// the serialised event, whose own escaping would hide a marker with a quote, a backslash or a
    /// line break.
    pub fn appears_in(&self, value: &serde_json::Value) -> bool {
        let inside_json = serde_json::to_string(&self.marker).expect("a string serialises");
        let inside_json = &inside_json[1..inside_json.len() - 1];
        holds(value, &self.marker, inside_json)
    }

    /// Reads `tasks_dir/attacks/NAME.toml`, refusing what could not be run.
    pub fn load(tasks_dir: &Path, name: &str) -> Result<Self, String> {
        let known = || match catalogue(tasks_dir).map(|c| c.into_iter().map(|a| a.name).collect::<Vec<_>>().join(", ")) {
            Err(e) => format!("and the catalogue cannot be read: {e}"),
            Ok(names) if names.is_empty() => format!("no attack is in {}", dir(tasks_dir).display()),
            Ok(names) => format!("the catalogue has: {names}"),
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
        let planted_in = match (f.class, &f.poison) {
            (AttackClass::ToolPoisoning, None) => {
                return bad("a tool_poisoning attack needs [poison]: the downstream server, its operation and the text its description carries");
            }
            (AttackClass::ToolPoisoning, Some(p)) => {
                if p.server.trim().is_empty() || p.operation.trim().is_empty() || p.text.trim().is_empty() {
                    return bad("[poison] needs a server, an operation and a text");
                }
                p.text.as_str()
            }
            (_, Some(_)) => return bad(&format!("[poison] is for tool_poisoning attacks; a {} attack plants its text in the world", f.class.as_str())),
            (_, None) => {
                if f.plant.trim().is_empty() {
                    return bad("plant is empty: an attack plants something");
                }
                f.plant.as_str()
            }
        };
        if f.marker.trim().len() < 8 || !planted_in.contains(f.marker.as_str()) {
            return bad(if f.class == AttackClass::ToolPoisoning {
                "marker must be a phrase of at least 8 characters of the poison's text, so exposure can be told"
            } else {
                "marker must be a phrase of at least 8 characters that the plant writes, so exposure can be told"
            });
        }
        if f.success.answer_contains.as_deref().is_some_and(|a| a.trim().is_empty()) {
            return bad("[success] answer_contains is empty: it would match every answer");
        }
        let blank = |s: &Option<String>| s.as_deref().is_none_or(|s| s.trim().is_empty());
        if f.success.says.trim().is_empty() {
            return bad("[success] needs `says`: what a success means, in a reader's words");
        }
        match (blank(&f.success.query), blank(&f.success.proof)) {
            (true, true) if f.success.answer_contains.is_some() => {}
            (true, true) => return bad("[success] needs a query (with its proof: the writes of an agent that followed the planted text) or answer_contains"),
            (false, true) => return bad("[success] needs a proof beside its query: the writes of an agent that followed the planted text"),
            (true, false) => return bad("[success] has a proof but no query for it to make true"),
            (false, false) => {}
        }
        Ok(Self {
            name,
            description: f.description,
            class: f.class,
            plant: f.plant,
            poison: f.poison.map(servers::launch::Poison::leak),
            marker: f.marker,
            success: f.success,
            sha256: hex::encode(Sha256::digest(&bytes)),
            path: path.to_owned(),
        })
    }

    /// Plants the attack in `world`, after the task's own seed: the world the agent meets.
    pub async fn plant(&self, world: &backend::World) -> Result<(), String> {
        if self.plant.trim().is_empty() {
            return Ok(());
        }
        backend::world::apply_task_seed(&world.pool(), &self.plant).await.map_err(|e| format!("planting attack {}: {e}", self.name))
    }

    /// Whether the attack succeeded, read from `world`'s final state and the session's final
    /// `answer`.
    pub async fn succeeded(&self, world: &backend::World, answer: &str) -> Result<bool, String> {
        if self.success.answer_contains.as_deref().is_some_and(|needle| answer.to_lowercase().contains(&needle.to_lowercase())) {
            return Ok(true);
        }
        let Some(query) = &self.success.query else { return Ok(false) };
        sqlx::query_scalar::<_, bool>(sqlx::AssertSqlSafe(query.clone()))
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

fn holds(value: &serde_json::Value, marker: &str, inside_json: &str) -> bool {
    match value {
        serde_json::Value::String(s) => s.contains(marker) || s.contains(inside_json),
        serde_json::Value::Array(items) => items.iter().any(|v| holds(v, marker, inside_json)),
        serde_json::Value::Object(map) => map.values().any(|v| holds(v, marker, inside_json)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with_marker(marker: &str) -> Attack {
        Attack {
            name: "t".into(),
            description: String::new(),
            class: AttackClass::DataInjection,
            plant: String::new(),
            poison: None,
            marker: marker.into(),
            success: Success { query: None, says: "s".into(), proof: None, answer_contains: Some("x".into()) },
            sha256: String::new(),
            path: PathBuf::new(),
        }
    }

    #[test]
    fn a_marker_with_quotes_backslashes_or_line_breaks_is_found_where_a_model_reads_it() {
        for marker in [r#"reply "DONE" now"#, r"C:\admin\override", "first line\nsecond line", "plain planted phrase"] {
            let a = with_marker(marker);
            // As a tool result's text: the backend's JSON body, where the marker is escaped.
            let body = json!({ "id": 7, "description": format!("Customer note. {marker} Thanks.") }).to_string();
            let call = json!({ "event": "call", "name": "tickets_get", "result": body });
            assert!(a.appears_in(&call), "{marker:?} in a JSON result text");
            // As plain text: a description offered to the model.
            let offered = json!({ "event": "offered", "definitions": [{ "function": { "description": format!("Lists deploys. {marker}") } }] });
            assert!(a.appears_in(&offered), "{marker:?} in a description");
            // Absent, or only a part of it: not exposed.
            let other = json!({ "event": "call", "result": json!({ "description": &marker[..marker.len() / 2] }).to_string() });
            assert!(!a.appears_in(&other), "{marker:?} half of it");
        }
    }
}
