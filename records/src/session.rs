//! The session record: one JSON document per session, written atomically by the pipeline and
//! read by `aggregate`. Experiment-level fields sit beside the agent's outcome.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::fingerprint::Fingerprint;
pub use crate::model::ModelSpec;
use crate::outcome::{Offered, OracleFloor, ToolCallRecord, TurnRecord, Validity, VerifierOutcome};
use crate::{Role, Transport};

/// Bump when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// Token totals over the session's turns; each is null if any turn lacked the field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Σ prompt tokens (cached included): the headline "input tokens".
    pub input_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
    pub uncached_input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
}

impl Totals {
    pub fn of(turns: &[TurnRecord]) -> Self {
        let input = total(turns, |u| u.prompt_tokens);
        let cached = total(turns, |u| u.cached_prompt_tokens);
        Self {
            input_tokens: input,
            cached_input_tokens: cached,
            uncached_input_tokens: input.zip(cached).map(|(i, c)| i.saturating_sub(c)),
            output_tokens: total(turns, |u| u.completion_tokens),
            reasoning_tokens: total(turns, |u| u.reasoning_tokens),
        }
    }
}

/// Sum of a usage field over turns; `None` if any turn lacks it or there are no turns.
pub fn total(turns: &[TurnRecord], field: impl Fn(&crate::Usage) -> Option<u64>) -> Option<u64> {
    if turns.is_empty() {
        return None;
    }
    turns.iter().map(|t| field(&t.usage)).sum()
}

/// Milliseconds the harness itself spent around the session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessTimings {
    pub reset_ms: f64,
    /// Connect + list + the agent or oracle run (includes the model for model sessions).
    pub session_ms: f64,
    pub verify_ms: f64,
    pub write_ms: f64,
    /// Of `session_ms`, starting the arm's server and listing what it offers (its process or
    /// in-process server, the MCP handshake, the listings): the arm's own cost, reported apart
    /// and never counted as the harness's. Null when the session started none (a warm
    /// conversation's later tasks) and in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_start_ms: Option<f64>,
}

/// How the harness authenticated to the model endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Auth {
    /// A bearer key read from the named environment variable.
    Key,
    /// No key: a loopback endpoint and the key variable unset.
    None,
}

/// What a server said it was in its MCP handshake (`serverInfo`), and the protocol revision it
/// answered the client's `initialize` with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    /// The MCP revision the session spoke (`protocolVersion` of the server's answer). Absent in
    /// records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
}

/// An external arm as a session ran it: its folder's hash and the names (never the values) of
/// the variables its process was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalArmRecord {
    pub sha256: String,
    pub env_names: Vec<String>,
}

/// Set on a record that a later attempt of the same session replaced (`--retry-invalid`, or a
/// resume after a quota stop or an interrupt). The record is kept, moved under `superseded/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Superseded {
    pub at: DateTime<Utc>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub schema_version: u32,
    pub experiment: String,
    pub module: String,
    pub server: String,
    pub role: Role,
    pub task: String,
    pub task_sha256: String,
    /// `held_out` for a task sealed apart from tuning (`docs/held-out.md`); absent for dev tasks
    /// and in records written before splits existed, which were all dev.
    #[serde(default, skip_serializing_if = "crate::Split::is_dev")]
    pub split: crate::Split,
    pub rep: u32,
    /// A sequential experiment's pairs are drawn one at a time: this pair's place in the draw
    /// order, from 1 (its task is the draw's, its rep how often the task was drawn so far).
    /// Absent for a fixed design.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw: Option<u32>,
    /// 1 if this arm ran first for its (task, rep) pair, 2 if second (ABBA rotation).
    pub arm_position: u32,
    pub model: ModelSpec,
    /// How the endpoint was authenticated; null for the oracle and in older records.
    #[serde(default)]
    pub auth: Option<Auth>,
    pub manifest_sha256: String,
    pub system_prompt_sha256: Option<String>,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub world_seed: u64,
    pub world_scale: u32,
    /// How the agent reached the server. Null in records written before it was recorded.
    #[serde(default)]
    pub transport: Option<Transport>,
    /// Everything that must be equal for this session to be compared or pooled with another
    /// (see [`Fingerprint`]). Null in records written before fingerprints: such records are
    /// "unknown" and never pooled with newer ones.
    #[serde(default)]
    pub fingerprint: Option<Fingerprint>,
    /// sha256 of [`Self::fingerprint`].
    #[serde(default)]
    pub fingerprint_sha256: Option<String>,
    /// 1 for the first attempt of this (model, server, task, rep); n when n − 1 earlier attempts
    /// were superseded. Null in records written before attempts were counted.
    #[serde(default)]
    pub attempt: Option<u32>,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    pub turn_cap: u32,
    pub turn_cap_hit: bool,
    /// The conversation outgrew the model's context window: a valid failure, flagged.
    #[serde(default)]
    pub context_exceeded: bool,
    /// The final answer holds a function call written as text (JSON naming an offered function)
    /// instead of a native tool call: a valid failure, flagged; when most of an arm's sessions
    /// have it, the endpoint is probably not parsing tool calls.
    #[serde(default)]
    pub tool_call_as_text: bool,
    /// The model endpoint answered that it could not parse the model's own output (llama.cpp's
    /// "does not match the expected … format", and the like): the arm failed, it is not an
    /// infrastructure fault. A valid failure, flagged; the server's text is in `failed_turn`.
    #[serde(default)]
    pub unparseable_output: bool,
    /// Number of model requests that got an answer.
    pub turns: usize,
    pub turn_records: Vec<TurnRecord>,
    pub totals: Totals,
    /// Provider retries over the whole session: every turn's `retries` plus those of a last turn
    /// that never got an answer (which has no turn record). Null in records written before.
    #[serde(default)]
    pub provider_retries: Option<u32>,
    /// The request that got no answer and ended the session, if one did.
    #[serde(default)]
    pub failed_turn: Option<crate::FailedTurn>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub offered: Offered,
    pub final_answer: Option<String>,
    /// Null when the session was invalid (nothing to score).
    pub verifier: Option<VerifierOutcome>,
    pub validity: Validity,
    pub oracle: Option<OracleFloor>,
    /// Null when the model has no price (never 0 for unknown).
    pub cost_usd: Option<f64>,
    pub harness: HarnessTimings,
    /// The `serverInfo` the arm's server reported in its handshake; null when it never answered
    /// (and in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<ServerInfo>,
    /// Set when the arm is an external one (a folder with an `arm.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_arm: Option<ExternalArmRecord>,
    /// For a module with a tool catalogue: whether its searches found the tools the task needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<crate::outcome::Retrieval>,
    /// Warm sessions only: where this task sat in its conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<ConversationPlace>,
    /// Present only on a record kept under `superseded/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<Superseded>,
    /// The outcomes `verifier` replaced, oldest first: each `pipeline regrade` that changed the
    /// grading keeps the one before (docs/regrade.md). Empty for a record graded once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_grades: Vec<crate::VerifierOutcome>,
    /// `--attack NAME`: what was planted in the world, and whether the agent did what it asked
    /// (a verdict of its own, never blended with the task's). Absent without an attack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<AttackOutcome>,
}

/// A session under an attack: the attack, and its own verdict on the final state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttackOutcome {
    pub name: String,
    /// `data_injection`, `tool_poisoning` or `result_shaping`.
    pub class: String,
    pub sha256: String,
    /// Whether the attack got what it asked for; null when its check could not be read (then
    /// `detail` says why), reported as missing, never as resisted.
    pub succeeded: Option<bool>,
    /// What success means ("a ticket was assigned to the outsider"), or why it is unknown.
    pub detail: String,
    /// Whether the planted text reached the model: a tool result of the session held the
    /// attack's marker. An arm that keeps it out of the context defends by that alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed: Option<bool>,
}

/// Where a warm session's task sat in its conversation, and what the conversation carried into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationPlace {
    /// `<model>__<server>__rep<k>`: the records of one conversation share it.
    pub id: String,
    /// 1 for the conversation's first task.
    pub position: u32,
    /// The conversation's tasks, in the order it worked through them.
    pub tasks: Vec<String>,
    /// Messages of earlier tasks the conversation carried into this one (the system prompt not
    /// counted).
    pub messages_before: u32,
    /// Input tokens of this task's first request as the endpoint reported them: the context when
    /// the task started, its own text included. Null when no request was answered or the
    /// endpoint reported none (and for the oracle, which has no usage).
    pub context_tokens_at_start: Option<u64>,
    /// Earlier tasks of this conversation that did not pass (failed, not scored or invalid):
    /// whether this task met a conversation an earlier failure may have left in a bad state.
    pub earlier_not_passed: u32,
}

impl SessionRecord {
    /// Passed by the verifier (false when invalid or not scored).
    pub fn passed(&self) -> bool {
        self.verifier.as_ref().is_some_and(|v| v.verdict == crate::Verdict::Passed)
    }

    /// Where the record contradicts its own fingerprint: every field it holds twice (in its own
    /// fields and in [`Self::fingerprint`]) whose two values differ, and a
    /// [`Self::fingerprint_sha256`] that is not the fingerprint's hash. The harness writes both
    /// from one plan, so any entry means a harness bug or an edited file: such a record is not
    /// data, and is refused rather than compared by either half. Empty for a record written
    /// before fingerprints (it holds nothing twice).
    pub fn contradictions(&self) -> Vec<Contradiction> {
        let Some(fp) = &self.fingerprint else { return Vec::new() };
        let mut out = Vec::new();
        let mut pair = |field: &'static str, in_fingerprint: &'static str, record: serde_json::Value, fingerprint: serde_json::Value| {
            if record != fingerprint {
                out.push(Contradiction { field, in_fingerprint, record: show(&record), fingerprint: show(&fingerprint) });
            }
        };
        // The model's parameters, each under its own name in both (the id is `model_id` there).
        for (field, in_fingerprint, record, fingerprint) in model_pairs(&self.model, &fp.model) {
            pair(field, in_fingerprint, record, fingerprint);
        }
        pair("world_seed", "world_seed", j(&self.world_seed), j(&fp.world_seed));
        pair("world_scale", "world_scale", j(&self.world_scale), j(&fp.world_scale));
        pair("task_sha256", "task_sha256", j(&self.task_sha256), j(&fp.task_sha256));
        pair("turn_cap", "turn_cap", j(&self.turn_cap), j(&fp.turn_cap));
        pair("manifest_sha256", "manifest_sha256", j(&self.manifest_sha256), j(&fp.manifest_sha256));
        pair("external_arm.sha256", "arm_sha256", j(&self.external_arm.as_ref().map(|a| &a.sha256)), j(&fp.arm_sha256));
        pair("system_prompt_sha256", "system_prompt_sha256", j(&self.system_prompt_sha256), j(&fp.system_prompt_sha256));
        pair("git_commit", "build_commit", j(&self.git_commit), j(&fp.build_commit));
        pair("git_dirty", "build_dirty", j(&self.git_dirty), j(&fp.build_dirty));
        // A warm session says where it sat in its conversation; a cold one has no conversation.
        let mode = self.conversation.as_ref().map(|_| crate::SessionMode::Warm);
        pair("conversation", "session_mode", j(&mode), j(&fp.session_mode));
        // A fingerprinted record has always recorded its transport: null here is a contradiction too.
        pair("transport", "transport", j(&self.transport), j(&Some(fp.transport)));
        let hash_ok = self.fingerprint_sha256.as_deref().is_some_and(|sha| fp.hashes_to(sha));
        if !hash_ok {
            out.push(Contradiction {
                field: "fingerprint_sha256",
                in_fingerprint: SHA256_OF_FINGERPRINT,
                record: self.fingerprint_sha256.clone().unwrap_or_else(|| "unset".into()),
                fingerprint: fp.sha256(),
            });
        }
        out
    }
}

/// [`Contradiction::in_fingerprint`] for a `fingerprint_sha256` that is not the fingerprint's hash.
pub const SHA256_OF_FINGERPRINT: &str = "(its sha256)";

/// One field a record holds twice with two values (see [`SessionRecord::contradictions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contradiction {
    /// The record's own field (`model.temperature`, `git_commit`, `fingerprint_sha256`).
    pub field: &'static str,
    /// The same field's name in the fingerprint (`temperature`, `build_commit`), or
    /// [`SHA256_OF_FINGERPRINT`].
    pub in_fingerprint: &'static str,
    pub record: String,
    pub fingerprint: String,
}

impl std::fmt::Display for Contradiction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.in_fingerprint == SHA256_OF_FINGERPRINT {
            write!(f, "fingerprint_sha256: the record says {}, but its fingerprint hashes to {}", self.record, self.fingerprint)
        } else if self.field == self.in_fingerprint {
            write!(f, "{}: the record says {}, its fingerprint {}", self.field, self.record, self.fingerprint)
        } else {
            write!(f, "{}: the record says {}, its fingerprint's {} {}", self.field, self.record, self.in_fingerprint, self.fingerprint)
        }
    }
}

fn show(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "unset".into(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Each parameter of the record's model beside the fingerprint's: (the record's field, the
/// fingerprint's, both values). Destructured whole, so a new parameter does not compile until
/// it is compared here too.
fn model_pairs(record: &ModelSpec, fingerprint: &ModelSpec) -> [(&'static str, &'static str, serde_json::Value, serde_json::Value); 10] {
    let ModelSpec { id, provider, temperature, max_tokens, seed, dialect, max_tokens_param, reasoning_effort, profile_sha256, tokenizer } = record;
    let f = fingerprint;
    [
        ("model.id", "model_id", j(id), j(&f.id)),
        ("model.provider", "provider", j(provider), j(&f.provider)),
        ("model.temperature", "temperature", j(temperature), j(&f.temperature)),
        ("model.max_tokens", "max_tokens", j(max_tokens), j(&f.max_tokens)),
        ("model.seed", "seed", j(seed), j(&f.seed)),
        ("model.dialect", "dialect", j(dialect), j(&f.dialect)),
        ("model.max_tokens_param", "max_tokens_param", j(max_tokens_param), j(&f.max_tokens_param)),
        ("model.reasoning_effort", "reasoning_effort", j(reasoning_effort), j(&f.reasoning_effort)),
        ("model.profile_sha256", "profile_sha256", j(profile_sha256), j(&f.profile_sha256)),
        ("model.tokenizer", "tokenizer", j(tokenizer), j(&f.tokenizer)),
    ]
}

/// A field as JSON, so both halves of a pair compare (and print) as the record file spells them.
fn j<T: Serialize>(x: &T) -> serde_json::Value {
    serde_json::to_value(x).expect("a record field serialises")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Provider;
    use crate::Usage;
    use crate::{Dialect, MaxTokensParam, Temperature};

    fn turns(usages: Vec<Usage>) -> Vec<TurnRecord> {
        usages
            .into_iter()
            .enumerate()
            .map(|(i, usage)| TurnRecord {
                index: i as u32 + 1,
                usage,
                retries: 0,
                latency_ms: 0.0,
                at_ms: None,
                finish_reason: None,
                tool_calls: 0,
                extras: Default::default(),
            })
            .collect()
    }

    /// A record whose own fields agree with its fingerprint, as the harness writes one.
    fn consistent() -> SessionRecord {
        let t = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let model = ModelSpec {
            id: "m".into(),
            provider: Provider::OpenAiCompatible,
            temperature: Some(Temperature::Value(0.0)),
            max_tokens: Some(100),
            seed: Some(7),
            dialect: Some(Dialect::Openai),
            max_tokens_param: Some(MaxTokensParam::MaxCompletionTokens),
            reasoning_effort: Some("low".into()),
            profile_sha256: None,
            tokenizer: None,
        };
        let fp = Fingerprint {
            model: model.clone(),
            base_url: Some("http://127.0.0.1:1/v1".into()),
            transport: Transport::Stdio,
            world_seed: 42,
            world_scale: 1,
            world_scale_override: None,
            catalogue: None,
            distractors: None,
            distractors_sha256: None,
            task_sha256: "t".into(),
            turn_cap: 12,
            manifest_sha256: "m1".into(),
            arm_sha256: None,
            system_prompt_sha256: Some("p".into()),
            build_commit: Some("c".into()),
            build_dirty: Some(false),
            preflight_skipped: false,
            session_mode: None,
            design: None,
            attack: None,
            attack_sha256: None,
            protocol: None,
        };
        SessionRecord {
            schema_version: SCHEMA_VERSION,
            experiment: "e".into(),
            module: "mod".into(),
            server: "s".into(),
            role: Role::Pattern,
            task: "t".into(),
            task_sha256: "t".into(),
            split: Default::default(),
            rep: 1,
            draw: None,
            arm_position: 1,
            model,
            auth: None,
            manifest_sha256: "m1".into(),
            system_prompt_sha256: Some("p".into()),
            git_commit: Some("c".into()),
            git_dirty: Some(false),
            world_seed: 42,
            world_scale: 1,
            transport: Some(Transport::Stdio),
            fingerprint_sha256: Some(fp.sha256()),
            fingerprint: Some(fp),
            attempt: Some(1),
            started_at: t,
            ended_at: t,
            turn_cap: 12,
            turn_cap_hit: false,
            context_exceeded: false,
            tool_call_as_text: false,
            unparseable_output: false,
            turns: 0,
            turn_records: vec![],
            totals: Totals::default(),
            provider_retries: Some(0),
            failed_turn: None,
            tool_calls: vec![],
            offered: Offered::default(),
            final_answer: None,
            verifier: None,
            validity: Validity::Valid,
            oracle: None,
            cost_usd: None,
            harness: HarnessTimings::default(),
            server_info: None,
            external_arm: None,
            retrieval: None,
            conversation: None,
            superseded: None,
            earlier_grades: Vec::new(),
            attack: None,
        }
    }

    #[test]
    fn every_field_held_twice_is_compared_with_the_fingerprint() {
        assert_eq!(consistent().contradictions(), vec![], "the harness's own record agrees with itself");
        type Edit = fn(&mut SessionRecord);
        let cases: Vec<(&str, Edit, &str)> = vec![
            ("model.id", |r| r.model.id = "n".into(), "model.id: the record says n, its fingerprint's model_id m"),
            ("model.provider", |r| r.model.provider = Provider::Oracle, "model.provider: the record says oracle, its fingerprint's provider openai_compatible"),
            (
                "model.temperature",
                |r| r.model.temperature = Some(Temperature::ProviderDefault),
                "model.temperature: the record says provider_default, its fingerprint's temperature 0.0",
            ),
            ("model.max_tokens", |r| r.model.max_tokens = None, "model.max_tokens: the record says unset, its fingerprint's max_tokens 100"),
            ("model.seed", |r| r.model.seed = Some(8), "model.seed: the record says 8, its fingerprint's seed 7"),
            ("model.dialect", |r| r.model.dialect = Some(Dialect::Azure), "model.dialect: the record says azure, its fingerprint's dialect openai"),
            (
                "model.max_tokens_param",
                |r| r.model.max_tokens_param = Some(MaxTokensParam::MaxTokens),
                "model.max_tokens_param: the record says max_tokens, its fingerprint's max_tokens_param max_completion_tokens",
            ),
            (
                "model.reasoning_effort",
                |r| r.model.reasoning_effort = None,
                "model.reasoning_effort: the record says unset, its fingerprint's reasoning_effort low",
            ),
            ("world_seed", |r| r.world_seed = 1, "world_seed: the record says 1, its fingerprint 42"),
            ("world_scale", |r| r.world_scale = 2, "world_scale: the record says 2, its fingerprint 1"),
            ("task_sha256", |r| r.task_sha256 = "u".into(), "task_sha256: the record says u, its fingerprint t"),
            ("turn_cap", |r| r.turn_cap = 3, "turn_cap: the record says 3, its fingerprint 12"),
            ("manifest_sha256", |r| r.manifest_sha256 = "m2".into(), "manifest_sha256: the record says m2, its fingerprint m1"),
            ("system_prompt_sha256", |r| r.system_prompt_sha256 = None, "system_prompt_sha256: the record says unset, its fingerprint p"),
            ("git_commit", |r| r.git_commit = None, "git_commit: the record says unset, its fingerprint's build_commit c"),
            ("git_dirty", |r| r.git_dirty = Some(true), "git_dirty: the record says true, its fingerprint's build_dirty false"),
            ("transport", |r| r.transport = Some(Transport::Http), "transport: the record says http, its fingerprint stdio"),
            ("transport", |r| r.transport = None, "transport: the record says unset, its fingerprint stdio"),
        ];
        for (field, edit, text) in cases {
            let mut r = consistent();
            edit(&mut r);
            let c = r.contradictions();
            assert_eq!(c.len(), 1, "{field}: {c:?}");
            assert_eq!((c[0].field, c[0].to_string().as_str()), (field, text));
        }
        // The hash: edited, missing, or stale after the fingerprint itself was edited.
        let mut r = consistent();
        r.fingerprint_sha256 = Some("beef".into());
        assert_eq!(
            r.contradictions()[0].to_string(),
            format!("fingerprint_sha256: the record says beef, but its fingerprint hashes to {}", r.fingerprint.as_ref().unwrap().sha256())
        );
        r.fingerprint_sha256 = None;
        assert_eq!(r.contradictions()[0].record, "unset");
        let mut r = consistent();
        r.fingerprint.as_mut().unwrap().base_url = Some("http://elsewhere/v1".into());
        assert_eq!(r.contradictions().iter().map(|c| c.field).collect::<Vec<_>>(), ["fingerprint_sha256"]);
        // A record from before fingerprints holds nothing twice.
        let mut old = consistent();
        (old.fingerprint, old.fingerprint_sha256, old.world_scale) = (None, None, 9);
        assert!(old.contradictions().is_empty());
    }

    #[test]
    fn totals_are_null_when_any_turn_is_missing_the_field() {
        let full = |p| Usage { prompt_tokens: Some(p), ..Default::default() };
        assert_eq!(total(&turns(vec![full(10), full(5)]), |u| u.prompt_tokens), Some(15));
        assert_eq!(total(&turns(vec![full(10), Usage::default()]), |u| u.prompt_tokens), None);
        assert_eq!(total(&turns(vec![]), |u| u.prompt_tokens), None);
        assert_eq!(Totals::of(&turns(vec![full(10)])).cached_input_tokens, None);
    }
}
