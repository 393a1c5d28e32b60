//! The MCP servers of the bench: seven pattern servers and their plain controls (`docs/patterns.md`).
//!
//! * [`modules`]: one folder per pattern module, holding its pattern server, its control and
//!   what they share. Controls are built from [`flat`]'s 1:1 vendor-named wrapper tools.
//! * [`registry`]: the one explicit list of servers (name → module, role, pair, launcher), and
//!   the external arms a run was given ([`external`]: any MCP server, in any language, as a folder).
//! * [`launch`] and [`transport`]: stdio (default), streamable HTTP, or in-process.
//! * [`contain`]: every server process the bench spawns, and all it starts, ends with its
//!   session (a cgroup per server, else its process tree).
//! * [`manifest`]: the canonical tool manifest of a server and its sha256.
//! * [`schema`]: tool input schemas whose optional parameters are their plain type.
//! * [`sandbox`]: runs a model-written JavaScript program against a small API, within limits.
//!
//! Servers reach the backend only over HTTP ([`backend_client`]). Run one with
//! `pipeline serve NAME [--transport stdio|http]`; list them with `pipeline servers`.

pub mod backend_client;
pub mod client;
pub mod contain;
pub mod distractors;
pub mod external;
pub mod flat;
pub mod jsonrpc;
pub mod launch;
pub mod manifest;
pub mod modules;
pub mod offered;
pub mod registry;
pub mod sandbox;
pub mod schema;
pub mod stdout_guard;
pub mod tls;
pub mod transport;

pub use backend_client::BackendClient;
pub use manifest::ToolManifest;
pub use registry::{ModuleEntry, Role, ServerEntry};
