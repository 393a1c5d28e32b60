//! Resource gateway module: does exposing reference content as MCP resources (list/read),
//! with internal notes withheld, cost an agent less (and leak less) than raw records through
//! tools?
//!
//! * [`ResourceGateway`] (pattern): every runbook is a resource `runbook://<slug>` read as
//!   markdown; a template per service indexes that service's runbooks. No tools. The backend's
//!   `internal_notes` never leave the server.
//! * [`ResourceWrapper`] (control): the flat runbook and service endpoints as tools, full
//!   records, internal notes included.

mod gateway;
mod wrapper;

use crate::launch::{Launch, Launcher};
use crate::registry::ModuleEntry;

pub use gateway::ResourceGateway;
pub use wrapper::ResourceWrapper;

/// Words specific to either server of this module. Task texts must not use them (gate G5,
/// besides every tool and resource name of both arms).
pub const SPECIFIC_TERMS: &[&str] = &["resource", "gateway", "wrapper", "uri", "runbook://", "runbooks://", "template", "markdown", "withheld", "redacted"];

/// The pattern server: the name `--mcp` takes, and how to start it.
const PATTERN: (&str, &dyn Launch) = ("resource_gateway", &Launcher::<ResourceGateway>::NEW);
/// The control server.
const CONTROL: (&str, &dyn Launch) = ("resource_wrapper", &Launcher::<ResourceWrapper>::NEW);

/// This module's line in the registry (`crate::registry::MODULES`).
pub static MODULE: ModuleEntry = ModuleEntry::new("resource_gateway", SPECIFIC_TERMS, PATTERN, CONTROL);
