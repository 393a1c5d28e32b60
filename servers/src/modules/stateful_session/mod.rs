//! Stateful session module: does a server that holds the working state (a code review in
//! progress) behind a handle cost an agent less than a stateless server to which the agent must
//! send that state back on every call? The arms differ only in where the state lives
//! (ADR 0010): the same tools with the same names, arguments and granularity, one comment per
//! call, and one backend write per review.
//!
//! * [`SessionServer`] (pattern): `start_review` opens a draft held here and returns its handle;
//!   `add_review_comment(handle, …)` adds one line comment; `submit_review(handle, verdict)`
//!   writes the review with all its comments in one `POST /change_requests/{id}/reviews` (which
//!   the backend writes transactionally); `show_review_draft` and `discard_review` as named.
//! * [`SessionBaseline`] (control): the same five tools, stateless. `start_review` returns the
//!   draft itself (change request, reviewer, comments so far, and an integrity tag) and every
//!   later call takes it back in full; `add_review_comment` returns the new draft for the next
//!   call. The tag (HMAC-SHA256 under a per-process random key) keeps the agent from writing a
//!   draft with every comment in one go, which would bring back the one-call write.
//!
//! Both arms offer the same reads (repos, users, change requests with their comments and
//! reviews); neither has a one-call "review with all its comments" or a standalone comment.
//!
//! Oracle floors (ADR 0010, the `review_with_n_comments` family): a review of n comments takes
//! the same n + 5 calls in both arms, and the pattern's estimated input tokens are below the
//! control's at every size, from 1.7 % at n = 1 to 72.6 % at n = 32: no crossover in range.
//!
//! The pattern's drafts live in memory, per server instance. Over stdio one process serves one
//! MCP session. Over streamable HTTP, rmcp 3.11 calls the service factory once per `initialize`
//! in legacy session mode (protocol ≤ 2025-11-25, what rmcp's client negotiates), so each MCP
//! session has its own instance and its own drafts; a request on the stateless 2026-07-28 path
//! gets a fresh instance per request, where a draft could never be found again, so
//! `start_review` refuses to open one there (the control works there). Handles are 128 random
//! bits, so they cannot be guessed either.

mod carried;
mod drafts;
mod session_baseline;
mod session_server;

use crate::launch::{Launch, Launcher};
use crate::registry::ModuleEntry;

pub use session_baseline::SessionBaseline;
pub use session_server::{DEFAULT_DRAFT_TTL, DRAFT_TTL_ENV, SessionServer};

/// Words specific to either server of this module. Task texts must not use them (gate G5,
/// besides every tool and resource name of both arms).
pub const SPECIFIC_TERMS: &[&str] =
    &["draft", "session", "stateful", "stateless", "baseline", "server-side", "client-side", "integrity tag", "hmac", "resend", "send back"];

/// The pattern server: the name `--mcp` takes, and how to start it.
const PATTERN: (&str, &dyn Launch) = ("session_server", &Launcher::<SessionServer>::NEW);
/// The control server.
const CONTROL: (&str, &dyn Launch) = ("session_baseline", &Launcher::<SessionBaseline>::NEW);

/// This module's line in the registry (`crate::registry::MODULES`).
pub static MODULE: ModuleEntry = ModuleEntry::new("stateful_session", SPECIFIC_TERMS, PATTERN, CONTROL);
