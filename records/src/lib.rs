//! The data that crosses crates: what a session leaves behind ([`session::SessionRecord`] and its
//! parts in [`outcome`]), what makes two sessions comparable ([`fingerprint::Fingerprint`]), what
//! an experiment planned ([`manifest::ExperimentManifest`]), and the small enums every crate
//! agrees on ([`Role`], [`Provider`], [`Transport`]).
//!
//! It depends on serde and nothing of the runtime, so `aggregate` can read an experiment without
//! linking the agent, the servers or a database driver. Records are only ever extended: a field
//! added later is optional (`#[serde(default)]`), so records written before it still read.

pub mod fingerprint;
pub mod fsio;
pub mod manifest;
pub mod model;
pub mod outcome;
pub mod rng;
pub mod session;

pub use fingerprint::{FieldDifference, Fingerprint};
pub use fsio::write_atomically;
pub use manifest::ExperimentManifest;
pub use model::{Dialect, MaxTokensParam, Temperature};
pub use outcome::{
    CallKind, Check, CheckKind, ClassNote, Collateral, CollateralClass, CollateralWrite, FailedTurn, Graded, Groundedness, Grounding, InvalidReason,
    JudgeAgreement, JudgeInfo, Offered, OracleFloor, OutcomeClass, ProviderExtras, Reference, ReferenceKind, Retrieval, ToolCallRecord, TurnRecord, Usage,
    Validity, Verdict, VerifierOutcome,
};
pub use session::{
    AttackOutcome, Auth, Contradiction, ConversationPlace, ExternalArmRecord, HarnessTimings, ModelSpec, SCHEMA_VERSION, ServerInfo, SessionRecord, Totals,
};

use serde::{Deserialize, Serialize};

/// Which arm of its module a server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Pattern,
    Control,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pattern => "pattern",
            Self::Control => "control",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who answered a session's turns: the oracle replays plans; every model goes through an
/// OpenAI-compatible endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Provider {
    #[serde(rename = "oracle")]
    Oracle,
    #[serde(rename = "openai_compatible")]
    OpenAiCompatible,
    /// A simulated agent (`--models sim:PROFILE`): the oracle's plans with seeded, planted slips
    /// and synthetic usage. It checks the instrument; its numbers are never evidence about a
    /// pattern.
    #[serde(rename = "simulated")]
    Simulated,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Oracle => "oracle",
            Self::OpenAiCompatible => "openai_compatible",
            Self::Simulated => "simulated",
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the agent reaches a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    Stdio,
    Http,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
        }
    }
}

/// How an agent meets the server: a fresh conversation per task (cold), or one conversation
/// working through a module's tasks one after another (warm). Never pooled: the truth lies
/// between them and the gap is itself a finding.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum SessionMode {
    #[default]
    Cold,
    Warm,
}

impl SessionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cold => "cold",
            Self::Warm => "warm",
        }
    }
}

/// Which side of the tuning line a task is on. Dev tasks are the ones a module's author writes,
/// reads and reruns while building it; held-out tasks are sealed by hash (`pipeline seal`) and
/// reported beside the dev tasks, never pooled with them, so a verdict that only fits the texts
/// it was tuned against shows up as a disagreement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    #[default]
    Dev,
    HeldOut,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dev => "dev",
            Self::HeldOut => "held_out",
        }
    }

    /// `true` for the default, so records and fingerprints of dev tasks keep the bytes they had
    /// before splits existed.
    pub fn is_dev(&self) -> bool {
        *self == Self::Dev
    }
}

impl std::fmt::Display for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_keep_the_strings_records_have_always_had() {
        assert_eq!(serde_json::to_value(Role::Pattern).unwrap(), "pattern");
        assert_eq!(serde_json::to_value(Provider::OpenAiCompatible).unwrap(), "openai_compatible");
        assert_eq!(serde_json::from_value::<Provider>("oracle".into()).unwrap(), Provider::Oracle);
        assert_eq!(serde_json::to_value(Transport::Http).unwrap(), "http");
    }
}
