//! Where a report's numbers come from: the run's command, build, date, k, seeds, model
//! parameters, spec and preflight (from the manifest and the records), and what wrote the report.
//! Everything the run did not record stays null and is shown as "not recorded"; nothing is
//! guessed.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use records::{ExperimentManifest, Transport};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::load::Experiment;

/// What wrote the report, given by the caller (the CLI); all optional, so a report rendered in
/// a test or twice in a row is byte-identical.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    /// The program that wrote the report, e.g. `pipeline 0.1.0 (commit …, dirty: false)`.
    pub generator: Option<String>,
    /// The report's own command line, secrets already redacted.
    pub command: Option<Vec<String>>,
    pub generated_at: Option<DateTime<Utc>>,
    /// Where the report will be written, when not in the experiment folder (a merged report's
    /// `--out`): the HTML's links to records and transcripts are relative to it.
    pub report_dir: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The run's command line as the manifest recorded it (header values redacted by the run).
    pub command: Option<Vec<String>>,
    /// When the experiment was first run (the manifest's creation time).
    pub started_at: Option<DateTime<Utc>>,
    /// The first session's start and the last session's end, from the records.
    pub first_session_at: Option<DateTime<Utc>>,
    pub last_session_at: Option<DateTime<Utc>>,
    /// The work tree the run was started from, and whether its tracked files had changes.
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    /// The builds of the binary that ran the sessions (from the records' fingerprints), with how
    /// many sessions each ran; more than one only when models ran under different builds.
    pub binaries: Vec<Build>,
    /// The version of the binary that ran the sessions, from the manifest (null for older runs).
    pub binary_version: Option<String>,
    /// Where the run's worlds lived (the manifest's `postgres`); null for older runs.
    #[serde(default)]
    pub postgres: Option<String>,
    /// Planned repetitions per task and arm (null without a manifest).
    pub k: Option<u32>,
    pub jobs: Option<u32>,
    pub transport: Option<Transport>,
    /// The MCP revisions the sessions spoke (`--protocol`): what each server answered the agent's
    /// client with (the records' `server_info.protocol_version`), with the sessions each; empty
    /// when no record kept it.
    #[serde(default)]
    pub protocols: BTreeMap<String, usize>,
    pub base_url: Option<String>,
    /// Every model and the parameters it was asked with.
    #[serde(with = "models_json")]
    pub models: Vec<records::ModelSpec>,
    /// The worlds the tasks ran in: each (seed, scale) with the number of tasks using it.
    pub worlds: Vec<World>,
    /// The bootstrap's seed (also in `method`), a string like every seed here.
    #[serde(with = "crate::u64_string")]
    pub bootstrap_seed: u64,
    /// The spec the run was started from (`pipeline run SPEC`); null for a flag run.
    pub spec: Option<Spec>,
    pub preflight: Preflight,
    pub report: ReportInfo,
    /// Which verifiers and grader graded the valid sessions (every record agrees: the check
    /// refuses to pool others), and how many a regrade wrote. Null in summaries made before.
    #[serde(default)]
    pub grading: Option<Grading>,
}

/// The versions the valid sessions' outcomes were graded under (`records::Graded`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Grading {
    /// sha256 of the grading rules' source; null when the records did not keep it.
    pub grader_sha256: Option<String>,
    /// Tasks whose verifier's hash the records kept.
    pub verifiers: usize,
    /// Graded sessions whose records kept no versions (written before they were kept).
    pub unknown: usize,
    /// Sessions whose outcome `pipeline regrade` wrote, and when it last did.
    pub regraded: usize,
    pub last_regraded_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Build {
    pub commit: Option<String>,
    pub dirty: Option<bool>,
    pub sessions: usize,
}

/// `models` as summary.json writes it: one object per model with every parameter present (null
/// when unset) and the seed as a string, like every seed here.
mod models_json {
    use records::{Dialect, MaxTokensParam, ModelSpec, Provider, Temperature};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Model {
        id: String,
        provider: Provider,
        /// A number, or `"provider_default"` (none was sent).
        temperature: Option<Temperature>,
        max_tokens: Option<u32>,
        #[serde(with = "crate::u64_string::option")]
        seed: Option<u64>,
        /// Whose rules the endpoint followed; null for the oracle and older records.
        #[serde(default)]
        dialect: Option<Dialect>,
        /// The field that carried `max_tokens`; null when no limit was sent.
        #[serde(default)]
        max_tokens_param: Option<MaxTokensParam>,
        /// The reasoning effort sent with every request; null when none was.
        #[serde(default)]
        reasoning_effort: Option<String>,
        /// A simulated agent's profile (absent for every other model, so reports keep their bytes).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        profile_sha256: Option<String>,
        /// The oracle's tokenizer (absent for every other model and an oracle without one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokenizer: Option<String>,
    }

    pub fn serialize<S: Serializer>(models: &[ModelSpec], s: S) -> Result<S::Ok, S::Error> {
        let wire: Vec<Model> =
            models
                .iter()
                .cloned()
                .map(|ModelSpec { id, provider, temperature, max_tokens, seed, dialect, max_tokens_param, reasoning_effort, profile_sha256, tokenizer }| {
                    Model { id, provider, temperature, max_tokens, seed, dialect, max_tokens_param, reasoning_effort, profile_sha256, tokenizer }
                })
                .collect();
        wire.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ModelSpec>, D::Error> {
        let wire = Vec::<Model>::deserialize(d)?;
        Ok(wire
            .into_iter()
            .map(|Model { id, provider, temperature, max_tokens, seed, dialect, max_tokens_param, reasoning_effort, profile_sha256, tokenizer }| ModelSpec {
                id,
                provider,
                temperature,
                max_tokens,
                seed,
                dialect,
                max_tokens_param,
                reasoning_effort,
                profile_sha256,
                tokenizer,
            })
            .collect())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct World {
    #[serde(with = "crate::u64_string")]
    pub seed: u64,
    pub scale: u32,
    pub tasks: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    pub sha256: Option<String>,
    pub path: Option<String>,
    /// The check's status (`VALID`).
    pub status: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreflightStatus {
    Passed,
    Failed,
    /// `--skip-preflight`: nothing checked the endpoint before the sessions.
    Skipped,
    /// Oracle only: no endpoint to check.
    NotNeeded,
    /// The manifest does not say (no manifest, or one written before preflights).
    #[default]
    NotRecorded,
}

impl PreflightStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::NotNeeded => "not needed (oracle only)",
            Self::NotRecorded => "not recorded",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Preflight {
    pub status: PreflightStatus,
    pub models: Vec<PreflightModel>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreflightModel {
    pub model: String,
    pub passed: Option<bool>,
    /// `name: passed|failed` per check the preflight could decide, in order.
    pub checks: Vec<PreflightCheck>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreflightCheck {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportInfo {
    /// This library's version.
    pub aggregate_version: String,
    pub generator: Option<String>,
    pub command: Option<Vec<String>>,
    pub generated_at: Option<DateTime<Utc>>,
}

/// Collects the provenance of `exp`.
pub fn of(exp: &Experiment, bootstrap_seed: u64, invocation: &Invocation) -> Provenance {
    let manifest = exp.manifest.as_ref();
    let records = || exp.sessions.iter().map(|s| &s.record);
    let mut builds: BTreeMap<(Option<String>, Option<bool>), usize> = BTreeMap::new();
    for r in records() {
        let (commit, dirty) = match &r.fingerprint {
            Some(f) => (f.build_commit.clone(), f.build_dirty),
            None => (r.git_commit.clone(), r.git_dirty),
        };
        *builds.entry((commit, dirty)).or_default() += 1;
    }
    let models = match manifest {
        Some(m) => m.models.clone(),
        None => {
            let mut seen: Vec<records::ModelSpec> = Vec::new();
            for r in records() {
                if !seen.iter().any(|x| x.id == r.model.id) {
                    seen.push(r.model.clone());
                }
            }
            seen
        }
    };
    let mut worlds: BTreeMap<(u64, u32), std::collections::BTreeSet<String>> = BTreeMap::new();
    match manifest {
        Some(m) => m.tasks.iter().for_each(|t| {
            worlds.entry((t.seed, t.scale)).or_default().insert(t.key.clone());
        }),
        None => records().for_each(|r| {
            worlds.entry((r.world_seed, r.world_scale)).or_default().insert(format!("{}/{}", r.module, r.task));
        }),
    }
    Provenance {
        command: manifest.map(|m| m.command.clone()),
        started_at: manifest.map(|m| m.created_at),
        first_session_at: records().map(|r| r.started_at).min(),
        last_session_at: records().map(|r| r.ended_at).max(),
        git_commit: manifest.and_then(|m| m.git_commit.clone()),
        git_dirty: manifest.and_then(|m| m.git_dirty),
        binaries: builds.into_iter().map(|((commit, dirty), sessions)| Build { commit, dirty, sessions }).collect(),
        binary_version: manifest.and_then(|m| m.binary_version.clone()),
        postgres: manifest.and_then(|m| m.postgres.clone()),
        k: manifest.map(|m| m.k),
        jobs: manifest.map(|m| m.jobs),
        transport: manifest.map(|m| m.transport).or_else(|| records().find_map(|r| r.transport)),
        protocols: records().filter_map(|r| r.server_info.as_ref()?.protocol_version.clone()).fold(BTreeMap::new(), |mut m, p| {
            *m.entry(p).or_default() += 1;
            m
        }),
        base_url: manifest.and_then(|m| m.base_url.clone()),
        models,
        worlds: worlds.into_iter().map(|((seed, scale), tasks)| World { seed, scale, tasks: tasks.len() }).collect(),
        bootstrap_seed,
        spec: manifest.and_then(|m| m.check.as_ref()).map(|c| Spec { sha256: text(c, "spec_sha256"), path: text(c, "spec_path"), status: text(c, "status") }),
        preflight: preflight(exp, manifest),
        grading: Some(grading(records().filter_map(|r| r.verifier.as_ref()))),
        report: ReportInfo {
            aggregate_version: env!("CARGO_PKG_VERSION").into(),
            generator: invocation.generator.clone(),
            command: invocation.command.clone(),
            generated_at: invocation.generated_at,
        },
    }
}

/// The grading versions of `outcomes`.
fn grading<'a>(outcomes: impl Iterator<Item = &'a records::VerifierOutcome>) -> Grading {
    let mut g = Grading::default();
    let mut verifiers = std::collections::BTreeSet::new();
    for o in outcomes {
        match &o.graded {
            None => g.unknown += 1,
            Some(v) => {
                g.grader_sha256.get_or_insert_with(|| v.grader_sha256.clone());
                verifiers.insert(v.verifier_sha256.clone());
                if let Some(at) = v.regraded_at {
                    g.regraded += 1;
                    g.last_regraded_at = g.last_regraded_at.max(Some(at));
                }
            }
        }
    }
    g.verifiers = verifiers.len();
    g
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The preflight as recorded: per model in the manifest (flag runs) or in its spec check (spec
/// runs), which hold the `Preflight` the agent wrote (`passed`, `checks`).
fn preflight(exp: &Experiment, manifest: Option<&ExperimentManifest>) -> Preflight {
    let skipped =
        manifest.is_some_and(|m| m.preflight_skipped) || exp.sessions.iter().any(|s| s.record.fingerprint.as_ref().is_some_and(|f| f.preflight_skipped));
    if skipped {
        return Preflight { status: PreflightStatus::Skipped, models: vec![] };
    }
    if exp.sessions.iter().all(|s| !s.record.model.needs_endpoint()) {
        return Preflight { status: PreflightStatus::NotNeeded, models: vec![] };
    }
    let recorded = manifest.and_then(|m| m.preflight.as_ref().or_else(|| m.check.as_ref().and_then(|c| c.get("preflight"))));
    let Some(Value::Object(per_model)) = recorded else {
        return Preflight::default();
    };
    let models: Vec<PreflightModel> = per_model
        .iter()
        .map(|(model, p)| PreflightModel {
            model: model.clone(),
            passed: p.get("passed").and_then(Value::as_bool),
            checks: p
                .get("checks")
                .and_then(Value::as_array)
                .map(|cs| {
                    cs.iter()
                        .filter_map(|c| {
                            Some(PreflightCheck {
                                name: text(c, "name")?,
                                passed: c.get("passed").and_then(Value::as_bool)?,
                                detail: text(c, "detail").unwrap_or_default(),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect();
    let status = if models.is_empty() || models.iter().any(|m| m.passed.is_none()) {
        PreflightStatus::NotRecorded
    } else if models.iter().all(|m| m.passed == Some(true)) {
        PreflightStatus::Passed
    } else {
        PreflightStatus::Failed
    };
    Preflight { status, models }
}
