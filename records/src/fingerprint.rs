//! What makes two sessions comparable. Every record carries the [`Fingerprint`] of the plan it
//! ran under; a resume skips only records with the same fingerprint, and `aggregate` pools only
//! records whose fingerprints agree outside the declared treatment.

use serde::{Deserialize, Serialize};

use crate::Transport;
use crate::model::ModelSpec;

/// Everything that must be equal for two sessions of the same (server, task) to be the same
/// measurement. Two arms of a pair differ in [`Self::manifest_sha256`] (the server is the
/// declared treatment); tasks differ in the [`PER_TASK`] fields; nothing else may differ.
///
/// In JSON the model's parameters sit at the top level (`model_id`, `provider`, `temperature`,
/// …; see [`FIELDS`]), as every fingerprint was written: that text is what is hashed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "wire::Fingerprint", into = "wire::Fingerprint")]
pub struct Fingerprint {
    /// The model and every parameter it was asked with.
    pub model: ModelSpec,
    /// The model endpoint (null for the oracle), without any userinfo part.
    pub base_url: Option<String>,
    pub transport: Transport,
    pub world_seed: u64,
    pub world_scale: u32,
    /// `--scale`: the run's own choice of world scale for every task, when it made one. A plan
    /// decision, compared across tasks, where `world_scale` is compared per task.
    pub world_scale_override: Option<u32>,
    /// For a module whose servers list a tool catalogue (tool_search): how many tools of other
    /// systems both arms listed beside the backend's own. Absent for every other module.
    pub catalogue: Option<u32>,
    /// `--distractors N`: how many tools of other, unconnected servers the client listed beside
    /// every arm's own (the same in both arms), and the listing's hash (the tools, their order
    /// and the arm's place among them). Absent with none, so earlier hashes are unchanged.
    pub distractors: Option<u32>,
    pub distractors_sha256: Option<String>,
    pub task_sha256: String,
    pub turn_cap: u32,
    pub manifest_sha256: String,
    /// An external arm's folder hash (its server's own files and oracle plans); absent for the
    /// built-in servers, whose code is pinned by the build.
    pub arm_sha256: Option<String>,
    /// Null for the oracle, which sends no prompt.
    pub system_prompt_sha256: Option<String>,
    /// The commit the running binary was built from, and whether its tracked files differed.
    pub build_commit: Option<String>,
    pub build_dirty: Option<bool>,
    /// The endpoint preflight was skipped (`--skip-preflight`).
    pub preflight_skipped: bool,
    /// `warm`: the session was one task of a conversation through several. Absent for a cold
    /// session.
    pub session_mode: Option<crate::SessionMode>,
    /// `sequential`: the session is one arm of a pair drawn by a sequential experiment
    /// (`--until-decided`), which reads its pairs in draw order with anytime-valid sequences and
    /// stops when decided; its sessions never pool with a fixed design's. Absent for a fixed
    /// design, so earlier hashes are unchanged.
    pub design: Option<String>,
    /// `--attack NAME`: the attack planted in the world, and its file's hash. Absent without
    /// one, so earlier hashes are unchanged.
    pub attack: Option<String>,
    pub attack_sha256: Option<String>,
    /// `--protocol`: the MCP revision the client spoke, when not the default (the newest with
    /// the `initialize` handshake, 2025-11-25). Absent for the default, so earlier hashes are
    /// unchanged; what the server answered is in every record's `server_info`.
    pub protocol: Option<String>,
}

/// The fingerprint as it is written and hashed: field names and order are part of every hash
/// on disk, so they change only with a new optional field that is left out when unset.
mod wire {
    use serde::{Deserialize, Serialize};

    use crate::model::{Dialect, MaxTokensParam, ModelSpec, Temperature};
    use crate::{Provider, Transport};

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Fingerprint {
        model_id: String,
        provider: Provider,
        temperature: Option<Temperature>,
        max_tokens: Option<u32>,
        seed: Option<u64>,
        /// Absent (not null) for the oracle and in fingerprints written before dialects, so
        /// their hashes are unchanged; likewise the two after it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dialect: Option<Dialect>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_tokens_param: Option<MaxTokensParam>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_effort: Option<String>,
        /// A simulated agent's profile; absent for every other model, so their hashes are
        /// unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        profile_sha256: Option<String>,
        /// The oracle's tokenizer; absent without one, so those hashes are unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokenizer: Option<String>,
        base_url: Option<String>,
        transport: Transport,
        world_seed: u64,
        world_scale: u32,
        /// Null when unset; absent in fingerprints written before it (see `hashes_to`).
        #[serde(default)]
        world_scale_override: Option<u32>,
        /// Absent for every module without a catalogue, and before catalogues.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        catalogue: Option<u32>,
        /// Absent with no distractors, and before distractors.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        distractors: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        distractors_sha256: Option<String>,
        task_sha256: String,
        turn_cap: u32,
        manifest_sha256: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arm_sha256: Option<String>,
        system_prompt_sha256: Option<String>,
        build_commit: Option<String>,
        build_dirty: Option<bool>,
        preflight_skipped: bool,
        /// Absent for a cold session and before modes, so cold hashes are unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_mode: Option<crate::SessionMode>,
        /// Absent for a fixed design, and before sequential experiments.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        design: Option<String>,
        /// Absent without an attack, and before attacks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attack: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attack_sha256: Option<String>,
        /// Absent for the default revision, and before `--protocol`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        protocol: Option<String>,
    }

    impl From<Fingerprint> for super::Fingerprint {
        fn from(w: Fingerprint) -> Self {
            Self {
                model: ModelSpec {
                    id: w.model_id,
                    provider: w.provider,
                    temperature: w.temperature,
                    max_tokens: w.max_tokens,
                    seed: w.seed,
                    dialect: w.dialect,
                    max_tokens_param: w.max_tokens_param,
                    reasoning_effort: w.reasoning_effort,
                    profile_sha256: w.profile_sha256,
                    tokenizer: w.tokenizer,
                },
                base_url: w.base_url,
                transport: w.transport,
                world_seed: w.world_seed,
                world_scale: w.world_scale,
                world_scale_override: w.world_scale_override,
                catalogue: w.catalogue,
                distractors: w.distractors,
                distractors_sha256: w.distractors_sha256,
                task_sha256: w.task_sha256,
                turn_cap: w.turn_cap,
                manifest_sha256: w.manifest_sha256,
                arm_sha256: w.arm_sha256,
                system_prompt_sha256: w.system_prompt_sha256,
                build_commit: w.build_commit,
                build_dirty: w.build_dirty,
                preflight_skipped: w.preflight_skipped,
                session_mode: w.session_mode,
                design: w.design,
                attack: w.attack,
                attack_sha256: w.attack_sha256,
                protocol: w.protocol,
            }
        }
    }

    impl From<super::Fingerprint> for Fingerprint {
        fn from(f: super::Fingerprint) -> Self {
            let m = f.model;
            Self {
                model_id: m.id,
                provider: m.provider,
                temperature: m.temperature,
                max_tokens: m.max_tokens,
                seed: m.seed,
                dialect: m.dialect,
                max_tokens_param: m.max_tokens_param,
                reasoning_effort: m.reasoning_effort,
                profile_sha256: m.profile_sha256,
                tokenizer: m.tokenizer,
                base_url: f.base_url,
                transport: f.transport,
                world_seed: f.world_seed,
                world_scale: f.world_scale,
                world_scale_override: f.world_scale_override,
                catalogue: f.catalogue,
                distractors: f.distractors,
                distractors_sha256: f.distractors_sha256,
                task_sha256: f.task_sha256,
                turn_cap: f.turn_cap,
                manifest_sha256: f.manifest_sha256,
                arm_sha256: f.arm_sha256,
                system_prompt_sha256: f.system_prompt_sha256,
                build_commit: f.build_commit,
                build_dirty: f.build_dirty,
                preflight_skipped: f.preflight_skipped,
                session_mode: f.session_mode,
                design: f.design,
                attack: f.attack,
                attack_sha256: f.attack_sha256,
                protocol: f.protocol,
            }
        }
    }
}

/// The field in which the arms of a pair differ by design.
pub const TREATMENT: &[&str] = &["manifest_sha256", "arm_sha256"];

/// Fields that belong to the task (or its world): equal across the arms of one task, different
/// between tasks.
pub const PER_TASK: &[&str] = &["world_seed", "world_scale", "catalogue", "task_sha256", "turn_cap"];

/// One field in which two fingerprints differ, as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldDifference {
    pub field: String,
    pub ours: String,
    pub theirs: String,
}

impl std::fmt::Display for FieldDifference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} vs {}", self.field, self.ours, self.theirs)
    }
}

impl Fingerprint {
    /// sha256 of the canonical JSON (fields in declaration order).
    pub fn sha256(&self) -> String {
        crate::sha256_hex(&serde_json::to_vec(self).expect("a fingerprint serialises"))
    }

    /// Whether `sha` is this fingerprint's hash as some version of the harness wrote it: the
    /// canonical form of [`Self::sha256`], or — for a fingerprint without a `--scale` choice —
    /// the form written before `world_scale_override` existed, which left the field out (it
    /// now serialises as `null`, so the same plan hashes differently today).
    pub fn hashes_to(&self, sha: &str) -> bool {
        let canonical = serde_json::to_string(self).expect("a fingerprint serialises");
        if crate::sha256_hex(canonical.as_bytes()) == sha {
            return true;
        }
        // Compact JSON escapes every quote inside a string, so this text is only ever the field.
        self.world_scale_override.is_none() && crate::sha256_hex(canonical.replacen(",\"world_scale_override\":null", "", 1).as_bytes()) == sha
    }

    /// Every field in which `self` and `other` differ, in declaration order.
    pub fn differences(&self, other: &Self) -> Vec<FieldDifference> {
        self.differences_outside(other, &[])
    }

    /// Like [`Self::differences`], leaving out the fields named in `ignore`.
    pub fn differences_outside(&self, other: &Self, ignore: &[&str]) -> Vec<FieldDifference> {
        let (a, b) = (fields(self), fields(other));
        a.into_iter()
            .zip(b)
            .filter(|((name, x), (_, y))| x != y && !ignore.contains(&name.as_str()))
            .map(|((field, x), (_, y))| FieldDifference { field, ours: show(&x), theirs: show(&y) })
            .collect()
    }
}

/// The fields in declaration order (a test holds this list to the struct).
pub const FIELDS: &[&str] = &[
    "model_id",
    "provider",
    "temperature",
    "max_tokens",
    "seed",
    "dialect",
    "max_tokens_param",
    "reasoning_effort",
    "profile_sha256",
    "tokenizer",
    "base_url",
    "transport",
    "world_seed",
    "world_scale",
    "world_scale_override",
    "catalogue",
    "distractors",
    "distractors_sha256",
    "task_sha256",
    "turn_cap",
    "manifest_sha256",
    "arm_sha256",
    "system_prompt_sha256",
    "build_commit",
    "build_dirty",
    "preflight_skipped",
    "session_mode",
    "design",
    "attack",
    "attack_sha256",
    "protocol",
];

fn fields(f: &Fingerprint) -> Vec<(String, serde_json::Value)> {
    let serde_json::Value::Object(mut map) = serde_json::to_value(f).expect("a fingerprint serialises") else {
        unreachable!("a struct serialises to an object")
    };
    FIELDS.iter().map(|name| ((*name).to_owned(), map.remove(*name).unwrap_or(serde_json::Value::Null))).collect()
}

fn show(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "unset".into(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `url` without a `user:password@` part, which could hold a credential.
pub fn url_without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Provider;
    use crate::model::{Dialect, MaxTokensParam, Temperature};

    pub(crate) fn sample() -> Fingerprint {
        Fingerprint {
            model: ModelSpec {
                id: "m".into(),
                provider: Provider::OpenAiCompatible,
                temperature: Some(Temperature::Value(0.0)),
                max_tokens: None,
                seed: Some(7),
                dialect: Some(Dialect::Compatible),
                max_tokens_param: None,
                reasoning_effort: None,
                profile_sha256: None,
                tokenizer: None,
            },
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
        }
    }

    /// The sample with its model changed by `change`.
    fn with_model(change: impl FnOnce(&mut ModelSpec)) -> Fingerprint {
        let mut f = sample();
        change(&mut f.model);
        f
    }

    #[test]
    fn every_pinned_field_changes_the_hash_and_is_named() {
        let base = sample();
        let variants: Vec<(&str, Fingerprint)> = vec![
            ("model_id", with_model(|m| m.id = "n".into())),
            ("provider", with_model(|m| m.provider = Provider::Oracle)),
            ("temperature", with_model(|m| m.temperature = Some(Temperature::Value(1.0)))),
            ("max_tokens", with_model(|m| m.max_tokens = Some(10))),
            ("seed", with_model(|m| m.seed = None)),
            ("dialect", with_model(|m| m.dialect = Some(Dialect::Openai))),
            ("max_tokens_param", with_model(|m| m.max_tokens_param = Some(MaxTokensParam::MaxCompletionTokens))),
            ("reasoning_effort", with_model(|m| m.reasoning_effort = Some("high".into()))),
            ("profile_sha256", with_model(|m| m.profile_sha256 = Some("p".into()))),
            ("tokenizer", with_model(|m| m.tokenizer = Some("o200k_base".into()))),
            ("base_url", Fingerprint { base_url: Some("http://other/v1".into()), ..sample() }),
            ("transport", Fingerprint { transport: Transport::Http, ..sample() }),
            ("world_seed", Fingerprint { world_seed: 1, ..sample() }),
            ("world_scale", Fingerprint { world_scale: 2, ..sample() }),
            ("world_scale_override", Fingerprint { world_scale_override: Some(2), ..sample() }),
            ("catalogue", Fingerprint { catalogue: Some(100), ..sample() }),
            ("distractors", Fingerprint { distractors: Some(10), ..sample() }),
            ("distractors_sha256", Fingerprint { distractors_sha256: Some("d".into()), ..sample() }),
            ("task_sha256", Fingerprint { task_sha256: "u".into(), ..sample() }),
            ("turn_cap", Fingerprint { turn_cap: 3, ..sample() }),
            ("manifest_sha256", Fingerprint { manifest_sha256: "m2".into(), ..sample() }),
            ("arm_sha256", Fingerprint { arm_sha256: Some("a".into()), ..sample() }),
            ("system_prompt_sha256", Fingerprint { system_prompt_sha256: None, ..sample() }),
            ("build_commit", Fingerprint { build_commit: Some("d".into()), ..sample() }),
            ("build_dirty", Fingerprint { build_dirty: Some(true), ..sample() }),
            ("preflight_skipped", Fingerprint { preflight_skipped: true, ..sample() }),
            ("session_mode", Fingerprint { session_mode: Some(crate::SessionMode::Warm), ..sample() }),
            ("design", Fingerprint { design: Some("sequential".into()), ..sample() }),
            ("attack", Fingerprint { attack: Some("a".into()), ..sample() }),
            ("attack_sha256", Fingerprint { attack_sha256: Some("a".into()), ..sample() }),
            ("protocol", Fingerprint { protocol: Some("2026-07-28".into()), ..sample() }),
        ];
        assert_eq!(variants.len(), FIELDS.len(), "a test variant for every field");
        let every_field_set = Fingerprint {
            model: ModelSpec {
                max_tokens_param: Some(MaxTokensParam::MaxTokens),
                reasoning_effort: Some("low".into()),
                profile_sha256: Some("p".into()),
                tokenizer: Some("o200k_base".into()),
                ..sample().model
            },
            world_scale_override: Some(1),
            catalogue: Some(25),
            distractors: Some(10),
            distractors_sha256: Some("d".into()),
            arm_sha256: Some("a".into()),
            session_mode: Some(crate::SessionMode::Warm),
            design: Some("sequential".into()),
            attack: Some("a".into()),
            attack_sha256: Some("a".into()),
            protocol: Some("2026-07-28".into()),
            ..sample()
        };
        let serde_json::Value::Object(map) = serde_json::to_value(&every_field_set).unwrap() else { panic!() };
        let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
        let mut listed = FIELDS.to_vec();
        keys.sort_unstable();
        listed.sort_unstable();
        assert_eq!(keys, listed, "FIELDS lists every field of Fingerprint");
        for (field, v) in variants {
            assert_ne!(v.sha256(), base.sha256(), "{field} must change the fingerprint");
            let d = base.differences(&v);
            assert_eq!(d.len(), 1, "{field}: {d:?}");
            assert_eq!(d[0].field, field);
        }
        assert_eq!(base.sha256(), sample().sha256());
        assert!(base.differences_outside(&Fingerprint { manifest_sha256: "x".into(), ..sample() }, TREATMENT).is_empty());
    }

    #[test]
    fn fingerprints_written_before_dialects_read_and_hash_as_written() {
        // A model fingerprint as records held it before dialects and the provider default.
        let old = r#"{"model_id":"m","provider":"openai_compatible","temperature":0.0,"max_tokens":null,"seed":7,"base_url":"http://127.0.0.1:1/v1","transport":"stdio","world_seed":42,"world_scale":1,"world_scale_override":null,"task_sha256":"t","turn_cap":12,"manifest_sha256":"m1","system_prompt_sha256":"p","build_commit":"c","build_dirty":false,"preflight_skipped":false}"#;
        let read: Fingerprint = serde_json::from_str(old).unwrap();
        assert_eq!(read.model.temperature, Some(Temperature::Value(0.0)));
        assert_eq!((read.model.dialect, read.model.max_tokens_param, read.model.reasoning_effort.as_deref()), (None, None, None));
        assert_eq!(read.sha256(), crate::sha256_hex(old.as_bytes()), "the canonical form of an old fingerprint is the old bytes");
        // A field no harness wrote is refused, not dropped: it would change nothing in the hash.
        let unknown = old.replacen("\"seed\":7", "\"seed\":7,\"top_p\":0.9", 1);
        let e = serde_json::from_str::<Fingerprint>(&unknown).unwrap_err().to_string();
        assert!(e.contains("unknown field `top_p`"), "{e}");
        // The same run today names its dialect: a different plan, and said so.
        let mut today = read.clone();
        (today.model.dialect, today.model.temperature) = (Some(Dialect::Compatible), Some(Temperature::ProviderDefault));
        let fields: Vec<String> = read.differences(&today).iter().map(ToString::to_string).collect();
        assert_eq!(fields, ["temperature: 0.0 vs provider_default", "dialect: unset vs compatible"]);
    }

    #[test]
    fn a_hash_matches_the_fingerprint_as_it_was_written_then_or_now() {
        let f = sample();
        assert!(f.hashes_to(&f.sha256()));
        assert!(!f.hashes_to(&Fingerprint { world_scale: 2, ..sample() }.sha256()));
        // A fingerprint written before `world_scale_override` existed, with the hash written then.
        let old = r#"{"model_id":"m","provider":"openai_compatible","temperature":0.0,"max_tokens":null,"seed":7,"base_url":"http://127.0.0.1:1/v1","transport":"stdio","world_seed":42,"world_scale":1,"task_sha256":"t","turn_cap":12,"manifest_sha256":"m1","system_prompt_sha256":"p","build_commit":"c","build_dirty":false,"preflight_skipped":false}"#;
        let read: Fingerprint = serde_json::from_str(old).unwrap();
        assert_ne!(read.sha256(), crate::sha256_hex(old.as_bytes()), "today's canonical form writes the field");
        assert!(read.hashes_to(&crate::sha256_hex(old.as_bytes())));
        // That older form exists only for a fingerprint with no `--scale` choice.
        let scaled = Fingerprint { world_scale_override: Some(1), ..read };
        assert!(!scaled.hashes_to(&crate::sha256_hex(old.as_bytes())));
    }

    #[test]
    fn differences_read_as_text() {
        let d = sample().differences(&Fingerprint { world_scale: 2, ..with_model(|m| m.seed = None) });
        let text: Vec<String> = d.iter().map(ToString::to_string).collect();
        assert_eq!(text, ["seed: 7 vs unset", "world_scale: 1 vs 2"]);
    }

    #[test]
    fn userinfo_is_dropped_from_urls() {
        assert_eq!(url_without_userinfo("https://u:secret@host.example/v1"), "https://host.example/v1");
        assert_eq!(url_without_userinfo("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
        assert_eq!(url_without_userinfo("http://h/v1?x=a@b"), "http://h/v1?x=a@b");
    }
}
