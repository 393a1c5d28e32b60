//! Domain adapter module: do tools that take business references (a customer's name, a
//! ticket's title, a person's name) and resolve them server-side cost an agent less than
//! id-only flat tools plus the list calls to find the ids?
//!
//! * [`DomainAdapter`] (pattern): six tools in the support desk's words. References are
//!   resolved through the backend's list filters: `#id`; else an exact case-insensitive match;
//!   else a unique substring match; else a tool error listing the candidates (never a guess).
//!   Results name customers and assignees next to their ids.
//! * [`DomainWrapper`] (control): the flat, id-only customer, user and ticket endpoints.

mod adapter;
mod resolve;
mod wrapper;

use crate::launch::{Launch, Launcher};
use crate::registry::ModuleEntry;

pub use adapter::DomainAdapter;
pub use wrapper::DomainWrapper;

/// Words specific to either server of this module. Task texts must not use them (gate G5,
/// besides every tool and resource name of both arms).
pub const SPECIFIC_TERMS: &[&str] = &["adapter", "wrapper", "business reference", "resolve", "resolution", "server-side", "ambiguous", "disambiguate"];

/// The pattern server: the name `--mcp` takes, and how to start it.
const PATTERN: (&str, &dyn Launch) = ("domain_adapter", &Launcher::<DomainAdapter>::NEW);
/// The control server.
const CONTROL: (&str, &dyn Launch) = ("domain_wrapper", &Launcher::<DomainWrapper>::NEW);

/// This module's line in the registry (`crate::registry::MODULES`).
pub static MODULE: ModuleEntry = ModuleEntry::new("domain_adapter", SPECIFIC_TERMS, PATTERN, CONTROL);
