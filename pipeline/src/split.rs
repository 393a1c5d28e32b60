//! Which tasks a run selects by split (`--split`, a spec's `split`): dev, held-out, or both.

use records::Split;
use serde::{Deserialize, Serialize};

/// Which tasks a run selects: `--split`, a spec's `split`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum SplitSelection {
    /// Only the dev tasks: the tuning loop's runs, which never need the seal.
    Dev,
    /// Only the held-out tasks.
    #[value(name = "held_out")]
    HeldOut,
    /// Both, reported side by side (never pooled).
    #[default]
    All,
}

impl SplitSelection {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dev => "dev",
            Self::HeldOut => "held_out",
            Self::All => "all",
        }
    }

    pub fn admits(self, split: Split) -> bool {
        match self {
            Self::All => true,
            Self::Dev => split == Split::Dev,
            Self::HeldOut => split == Split::HeldOut,
        }
    }
}
