//! The experiment manifest, `results/<exp>/manifest.json`: what a run planned (arms, tasks,
//! reps, model, transport, build) and how it ended. Written by the pipeline only after the
//! resume check has accepted the plan; read by `aggregate` for the planned k and the arms.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{ModelSpec, Role, Transport};

/// The file name inside an experiment folder.
pub const FILE: &str = "manifest.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentManifest {
    pub schema_version: u32,
    pub experiment: String,
    /// The command line, with header values and any key redacted.
    pub command: Vec<String>,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub models: Vec<ModelSpec>,
    pub servers: Vec<ManifestServer>,
    pub tasks: Vec<ManifestTask>,
    /// Planned repetitions of every task on every arm.
    pub k: u32,
    pub jobs: u32,
    pub transport: Transport,
    /// `warm`: one conversation per model, arm and rep through every task. Absent for cold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_mode: Option<crate::SessionMode>,
    pub created_at: DateTime<Utc>,
    /// `pipeline --version` of the binary that ran (version and commit). Null in older manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_version: Option<String>,
    /// The model endpoint, without userinfo (null for oracle-only runs and older manifests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The endpoint preflight was skipped (`--skip-preflight`): the report says so first.
    #[serde(default)]
    pub preflight_skipped: bool,
    /// The preflight's probes, requests and answers (no credentials), per model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<serde_json::Value>,
    /// The spec check (gate results) this run was started from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<serde_json::Value>,
    /// Set when the run was one shard of a plan split across machines: which, of how many, and
    /// what said so (`flag`, `kubernetes`, `slurm`). The plan, its tasks and k are the whole plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ManifestShard>,
    /// Where the run's worlds lived: `DATABASE_URL <address>` (no user, no password) or an
    /// embedded cluster of the run's own. Absent in older manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres: Option<String>,
    /// Which tasks the run selected (`--split`): `dev`, `held_out` or `all`. Absent in manifests
    /// written before splits existed (every task was dev then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// The held-out seal the run was checked against, when it included held-out tasks: when it
    /// was last changed, why, and the lockfile's sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<ManifestSeal>,
    /// Set when the run stopped before every planned session had run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<RunStop>,
    /// Set when the last run of this experiment exported its sessions as OpenTelemetry traces
    /// (`--otlp-endpoint`): where to, and how many got there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp: Option<OtlpExport>,
    /// The distractors the client listed beside every arm's own tools (`--distractors`); absent
    /// with none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distractors: Option<ManifestDistractors>,
    /// `--until-decided`: the experiment is sequential, and this is its stopping rule. Absent
    /// for a fixed design.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<ManifestSequential>,
    /// `--attack NAME`: what was planted in every session's world. Absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<ManifestAttack>,
}

/// The attack an experiment ran under (docs/security.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestAttack {
    pub name: String,
    pub class: String,
    pub sha256: String,
    pub description: String,
    /// What its success means.
    pub success: String,
}

/// A sequential experiment's design: pairs drawn one at a time and read by anytime-valid
/// sequences, stopping when decided or at the cap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestSequential {
    /// The most pairs of each comparison (model, module) the run draws.
    pub max_pairs: u32,
    /// No stop on a verdict before this many valid pairs.
    pub min_pairs: u32,
    /// The sequences' level (two-sided).
    pub alpha: f64,
    /// The success margin the stopping rule applied.
    pub success_margin: f64,
    /// How a draw picks its task, so anyone can recompute the order.
    pub draw: String,
    /// The rule in words.
    pub rule: String,
}

/// The distractors of an experiment (see [`ExperimentManifest::distractors`]): every session
/// of either arm listed exactly these, in this order, the arm's own tools after `before_arm` of
/// them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestDistractors {
    pub count: u32,
    /// sha256 of the definitions as offered and the arm's place among them.
    pub sha256: String,
    pub before_arm: u32,
    /// Their names, in listing order.
    pub names: Vec<String>,
}

/// The trace export of a run (see [`ExperimentManifest::otlp`]). Export never fails a session:
/// what did not reach the collector is counted here, never retried into the results. The counts
/// are null while the run is going (and stay null if it was killed before it could write them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtlpExport {
    /// The OTLP/HTTP traces URL, without userinfo or query (header values are never written).
    pub endpoint: String,
    /// Sessions this run handed to the exporter, one trace each.
    pub sessions: Option<u64>,
    /// Of those, sessions whose trace the collector accepted.
    pub exported_sessions: Option<u64>,
    /// Spans in the accepted traces.
    pub exported_spans: Option<u64>,
    /// Sessions whose trace was refused, failed to send, or was still unsent when the run ended.
    pub not_exported_sessions: Option<u64>,
    /// The last export error, verbatim (null when every export succeeded).
    pub last_error: Option<String>,
}

/// One shard of a plan (see [`ExperimentManifest::shard`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestShard {
    /// 1-based.
    pub index: u32,
    pub count: u32,
    pub source: String,
    /// Sessions the split gave this shard. A shard of a plan with fewer units than shards may get
    /// none: its folder, with no records, is then still a complete part of the merge. Absent in
    /// manifests written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<u64>,
}

/// The seal of the held-out tasks a run was checked against (see [`ExperimentManifest::seal`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestSeal {
    pub sealed_at: DateTime<Utc>,
    pub reason: String,
    pub lock_sha256: String,
    /// Each external arm of the run, its folder's hash now and as the seal holds it (null: not
    /// in the seal): an arm that changed after the seal may have been tuned against the held-out
    /// tasks. Absent for a run of built-in servers only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arms: Vec<SealedArm>,
}

/// An external arm against the held-out seal (see [`ManifestSeal::arms`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedArm {
    pub name: String,
    pub sha256: String,
    pub sealed_sha256: Option<String>,
}

impl SealedArm {
    /// The arm is not as the seal holds it: changed since, or not in it.
    pub fn after_seal(&self) -> bool {
        self.sealed_sha256.as_deref() != Some(self.sha256.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestServer {
    pub name: String,
    pub module: String,
    pub role: Role,
    pub manifest_sha256: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestTask {
    /// `module/task_id`.
    pub key: String,
    pub sha256: String,
    pub turn_cap: u32,
    pub seed: u64,
    pub scale: u32,
    /// `held_out` for a sealed held-out task; absent for dev tasks.
    #[serde(default, skip_serializing_if = "crate::Split::is_dev")]
    pub split: crate::Split,
}

/// Why a run stopped early.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStop {
    /// `quota`, `circuit_breaker`, `infrastructure`, `interrupted` or `budget`.
    pub kind: String,
    pub detail: String,
    pub at: DateTime<Utc>,
}

impl ExperimentManifest {
    pub fn read(dir: &std::path::Path) -> std::io::Result<Option<Self>> {
        let path = dir.join(FILE);
        match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map(Some).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}
