//! Stateful session module: does a server that holds working state (a code review in
//! progress) so the agent does not resend it each call cost an agent less than a stateless
//! server where every call carries the full state?
//!
//! * [`SessionServer`] (pattern): a review draft is opened, line comments accumulate in
//!   server-held state one call at a time, and the draft is submitted in one go (one
//!   `POST /change_requests/{id}/reviews`, which the backend writes transactionally).
//! * [`SessionBaseline`] (control): stateless flat tools; the review and all its comments
//!   travel in one `change_requests_reviews_create` call.
//!
//! Drafts live in memory, per server instance. Over stdio one process serves one MCP session.
//! Over streamable HTTP, rmcp 3.11 calls the service factory once per `initialize` in legacy
//! session mode (protocol ≤ 2025-11-25, what rmcp's client negotiates), so each MCP session
//! has its own instance and its own drafts; a request on the stateless 2026-07-28 path gets a
//! fresh instance per request, where a draft could never be found again, so `start_review`
//! refuses to open one there. Handles are 128 random bits, so they cannot be guessed either.

mod drafts;
mod session_baseline;
mod session_server;

use crate::launch::{Launch, Launcher};
use crate::registry::ModuleEntry;

pub use session_baseline::SessionBaseline;
pub use session_server::{DEFAULT_DRAFT_TTL, DRAFT_TTL_ENV, SessionServer};

/// Words specific to either server of this module. Task texts must not use them (gate G5,
/// besides every tool and resource name of both arms).
pub const SPECIFIC_TERMS: &[&str] = &["draft", "session", "stateful", "stateless", "baseline", "server-side"];

/// The pattern server: the name `--mcp` takes, and how to start it.
const PATTERN: (&str, &dyn Launch) = ("session_server", &Launcher::<SessionServer>::NEW);
/// The control server.
const CONTROL: (&str, &dyn Launch) = ("session_baseline", &Launcher::<SessionBaseline>::NEW);

/// This module's line in the registry (`crate::registry::MODULES`).
pub static MODULE: ModuleEntry = ModuleEntry::new("stateful_session", SPECIFIC_TERMS, PATTERN, CONTROL);
