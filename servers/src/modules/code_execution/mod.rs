//! Code execution ("code mode"): instead of one tool per operation, the model writes a short
//! program against a typed API and a sandbox runs it. Does that cost an agent less — fewer turns,
//! fewer input tokens because intermediate rows stay in the program — or more, because writing
//! and debugging code is output the model pays for and can get wrong?
//!
//! * [`CodeExecutionPattern`] (pattern): one tool that runs a JavaScript program against the API
//!   declared in its description, returning only what the program prints.
//! * [`CodeExecutionControl`] (control): the flat 1:1 tools for the same operations, and nothing
//!   else.

mod control;
mod pattern;

use crate::launch::{Launch, Launcher};
use crate::registry::ModuleEntry;

pub use control::CodeExecutionControl;
pub use pattern::{API_FUNCTIONS, CodeExecutionPattern};

/// Words specific to either server of this module. Task texts must not use them (gate G5,
/// besides every tool and resource name of both arms): the pattern's vocabulary, the name of
/// its technique, anything that would tell the model which arm it is talking to. "script" is
/// not listed: G5 matches substrings, and a task that speaks of a ticket's description would
/// fail it (the tool's own name, `run_script`, is checked anyway).
pub const SPECIFIC_TERMS: &[&str] = &["program", "code", "javascript", "sandbox", "print"];

/// The pattern server: the name `--mcp` takes, and how to start it.
const PATTERN: (&str, &dyn Launch) = ("code_execution", &Launcher::<CodeExecutionPattern>::NEW);
/// The control server.
const CONTROL: (&str, &dyn Launch) = ("code_execution_wrapper", &Launcher::<CodeExecutionControl>::NEW);

/// This module's line in the registry (`crate::registry::MODULES`).
pub static MODULE: ModuleEntry = ModuleEntry::new("code_execution", SPECIFIC_TERMS, PATTERN, CONTROL);
