//! Tasks, verifiers and oracle plans (`docs/patterns.md`, Tasks).
//!
//! A task is a folder `tasks/<module>/<task_id>/` holding:
//!
//! * `task.md` — the request, in neutral words (no tool, resource or server-specific term);
//! * `meta.toml` — turn cap, world seed and scale, tags ([`TaskMeta`]);
//! * `verify.toml` — the verifier: SQL assertions over the final state, checks on the final
//!   answer text, and tables that must be unchanged ([`verify::Verifier`]);
//! * `oracle/<server>.toml` — one oracle plan per arm: the reference tool calls and resource
//!   reads that solve the task through that server, and the answer ([`oracle::OraclePlan`]);
//! * optionally `seed.sql` — rows the task adds to the reset world before the session
//!   ([`Task::prepare`]).
//!
//! A folder with a `family.toml` is a **family**: the same files as templates, rendered into one
//! task per size of the state the task works on ([`family`]).
//!
//! Tasks are discovered from the folders ([`load_all`]); a malformed one is an error naming the
//! file and the problem. [`replay::replay`] runs a plan over real MCP; [`call`] is the one way
//! a call's result becomes text, shared with the agent.

pub mod attack;
pub mod call;
pub mod collateral;
pub mod discover;
pub mod family;
pub mod gates;
pub mod grounding;
pub mod load;
pub mod oracle;
pub mod replay;
pub mod verify;

/// The source of the rules this crate grades with (the verifier's checks of state and answer,
/// the grounding extractor): part of the grader version (`records::Graded::grader_sha256`).
pub const RULE_SOURCES: [&str; 2] = [include_str!("verify.rs"), include_str!("grounding.rs")];

pub use load::{FamilyInstance, LoadError, Task, TaskMeta, default_tasks_dir, folder_hash, load_all, load_module};
pub use oracle::{OraclePlan, Step};
pub use replay::{ReplayReport, replay};
pub use verify::{Outcome, Verdict, Verifier};
