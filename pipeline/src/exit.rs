//! Exit codes a script can trust (documented in the README):
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | every planned session ran (now or before) and is valid |
//! | 1 | refused before any session started: bad input, a failing gate or preflight, a locked experiment |
//! | 2 | the command line itself is wrong (clap's usage error); nothing ran |
//! | 3 | completed, with invalid sessions among the planned ones |
//! | 4 | stopped early: quota or session limit, circuit breaker, broken infrastructure, interrupt, a budget |

use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok,
    Refused,
    CompletedWithInvalid,
    StoppedEarly,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Refused => 1,
            Self::CompletedWithInvalid => 3,
            Self::StoppedEarly => 4,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e.code())
    }
}

/// An error whose message was already printed (e.g. a gate report): exit 1 without repeating it.
#[derive(Debug)]
pub struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("refused (reported above)")
    }
}

impl std::error::Error for Reported {}
