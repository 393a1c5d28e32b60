//! Tool orchestrator module: does one call that runs a fixed dependent sequence (create a
//! ticket → attach the customer → assign → notify) cost an agent less than driving the four
//! vendor endpoints itself?
//!
//! * [`Orchestrator`] (pattern): the read tools, plus composite tools that run the sequence
//!   server-side and undo a half-done ticket if a later step fails.
//! * [`Wrapper`] (control): the same read tools and the flat write endpoints, one per call.

mod orchestrator;
mod wrapper;

use crate::launch::{Launch, Launcher};
use crate::registry::ModuleEntry;

pub use orchestrator::Orchestrator;
pub use wrapper::Wrapper;

/// Words specific to either server of this module. Task texts must not use them (gate G5,
/// besides every tool and resource name of both arms).
pub const SPECIFIC_TERMS: &[&str] = &["orchestrator", "orchestrate", "wrapper", "composite", "in one call", "single call"];

/// The pattern server: the name `--mcp` takes, and how to start it.
const PATTERN: (&str, &dyn Launch) = ("orchestrator", &Launcher::<Orchestrator>::NEW);
/// The control server.
const CONTROL: (&str, &dyn Launch) = ("wrapper", &Launcher::<Wrapper>::NEW);

/// This module's line in the registry (`crate::registry::MODULES`).
pub static MODULE: ModuleEntry = ModuleEntry::new("tool_orchestrator", SPECIFIC_TERMS, PATTERN, CONTROL);
