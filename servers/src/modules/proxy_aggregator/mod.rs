//! Proxy aggregator module: does one server fronting three backends behind scoped discovery
//! (the agent sees three small tools until it asks what one backend can do) cost an agent less
//! than a server that offers every backend's flat tools at once?
//!
//! * [`ProxyAggregator`] (pattern): three static tools — `list_backends`, `describe_backend`,
//!   `call_backend` — in front of three backends (repos, runbooks, deploys), each held as its
//!   own client. An operation's parameter schema is only sent when its backend is described.
//! * [`ProxyWrapper`] (control): the same three backends' flat 1:1 tools, all listed up front.
//!
//! Both arms return the backend's JSON unchanged and both resolve a repository or a service by
//! name (the control through the `name`/`owner` filters of its list tools), so they differ in
//! how the surface is discovered, not in what can be done.

mod aggregator;
mod backends;
mod wrapper;

use crate::launch::{Launch, Launcher};
use crate::registry::{ModuleEntry, Relayed};

pub use aggregator::ProxyAggregator;
pub use wrapper::ProxyWrapper;

/// Words specific to either server of this module. Task texts must not use them (gate G5,
/// besides every tool and resource name of both arms).
pub const SPECIFIC_TERMS: &[&str] = &["proxy", "aggregator", "aggregate", "wrapper", "backend", "operation", "discover", "discovery"];

/// The pattern server: the name `--mcp` takes, and how to start it.
const PATTERN: (&str, &dyn Launch) = ("proxy_aggregator", &Launcher::<ProxyAggregator>::NEW);
/// The control server.
const CONTROL: (&str, &dyn Launch) = ("proxy_wrapper", &Launcher::<ProxyWrapper>::NEW);

/// The downstream operations whose description both arms show in exactly one place: the
/// pattern in `describe_backend`, the control in one flat tool's description (operations the
/// control covers with a shared list tool, such as `find_repo`, are left out). Where a
/// tool-poisoning attack can be planted (docs/security.md).
pub const RELAYS: &[Relayed] = &[
    Relayed { server: "repos", operation: "get_repo", control_tool: "repos_get" },
    Relayed { server: "repos", operation: "get_change_request", control_tool: "change_requests_get" },
    Relayed { server: "repos", operation: "list_comments", control_tool: "change_requests_comments_list" },
    Relayed { server: "repos", operation: "list_reviews", control_tool: "change_requests_reviews_list" },
    Relayed { server: "runbooks", operation: "get_runbook", control_tool: "runbooks_get" },
    Relayed { server: "deploys", operation: "get_service", control_tool: "services_get" },
    Relayed { server: "deploys", operation: "list_deploys", control_tool: "deploys_list" },
    Relayed { server: "deploys", operation: "get_deploy", control_tool: "deploys_get" },
    Relayed { server: "deploys", operation: "create_deploy", control_tool: "deploys_create" },
];

/// This module's line in the registry (`crate::registry::MODULES`).
pub static MODULE: ModuleEntry = ModuleEntry::new("proxy_aggregator", SPECIFIC_TERMS, PATTERN, CONTROL).with_relays(RELAYS);
