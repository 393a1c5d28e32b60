//! The agent: runs one session of a task against one arm's MCP server.
//!
//! * [`mcp`]: connect to the server (stdio child process by default, or streamable HTTP), turn its
//!   tools — plus two generic resource functions when it has resources — into the functions a
//!   model is offered, and execute calls through it.
//! * [`oracle`]: the oracle provider, which replays the task's oracle plan instead of asking a
//!   model; labelled `oracle` everywhere and never mixed into model results.
//! * [`sim`]: the simulated agent, which follows the oracle plan with the slips a profile plants
//!   and synthetic usage; labelled `simulated`, a check of the instrument, never evidence.
//! * [`config`]: what pins the model side ([`ProviderConfig`], [`RetryPolicy`]), which endpoints
//!   may go without a key, and what setting up refuses; it holds the key's variable, never the key.
//! * [`dialect`]: how each kind of endpoint is spoken to (auth header, query, parameter names) and
//!   which settings it ignores, refused before anything is spent.
//! * [`provider`]: the OpenAI-compatible model provider: its client (retries it decides and
//!   counts itself, secrets redacted from whatever comes back), failure classification
//!   (quota/session limits, context overflow, output the endpoint could not parse) and tolerant
//!   wire types with exact usage; the API key never leaves it.
//! * [`preflight`](mod@preflight): before a run, a few tokens check that the endpoint answers, serves the model
//!   and returns native tool calls; it fails closed, naming what to fix.
//! * [`judge`]: a pinned model as a grader of a failed answer's outcome class, asked only what
//!   the class definitions leave open.
//! * [`session`]: the model-driven agent loop, the fixed system prompt, the run-wide stop signal.
//! * [`text_call`]: a function call the model wrote as text instead of a native tool call.
//! * [`tokens`]: token counts of what a model is sent — one of OpenAI's encodings (offline), a
//!   llama.cpp server's `/tokenize`, or the bytes / 4 estimate, each figure labelled with which.
//! * [`record`]: what a session produced ([`SessionOutcome`]); the record it becomes, and its
//!   parts, are in the `records` crate.
//!
//! The modules use each other one way only, so that each can be read from the ones below it:
//! `record`, `config`, `text_call`, `tokens` at the bottom; `dialect` on `config`; `mcp` on `record`;
//! `provider` on those; `session` on `provider` and `mcp`; `judge`, `preflight` and `oracle` above; `sim`,
//! on `oracle`, at the top.

pub mod config;
pub mod dialect;
pub mod judge;
pub mod mcp;
pub mod oracle;
pub mod preflight;
pub mod provider;
pub mod record;
pub mod session;
pub mod sim;
pub mod text_call;
pub mod tokens;

pub use config::{ProviderConfig, RetryPolicy};
pub use mcp::ServerConnection;
pub use preflight::{Preflight, PreflightCheck, PreflightFailure, PreflightFailureKind, preflight};
pub use provider::OpenAiCompatible;
pub use record::{InvalidReason, SessionOutcome, Usage, Validity};
pub use session::{SYSTEM_PROMPT, StopSignal, system_prompt_sha256, transcript_jsonl};
pub use text_call::tool_call_as_text;
