//! The registry: one explicit list of every server, by name. Adding a pattern module adds two
//! lines here (its pattern and its control); nothing else discovers servers.

use crate::launch::{Launch, Launcher};
use crate::modules::domain_adapter::{DomainAdapter, DomainWrapper};
use crate::modules::proxy_aggregator::{ProxyAggregator, ProxyWrapper};
use crate::modules::resource_gateway::{ResourceGateway, ResourceWrapper};
use crate::modules::stateful_session::{SessionBaseline, SessionServer};
use crate::modules::tool_orchestrator::{Orchestrator, Wrapper};

/// Which arm of its module a server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Pattern,
    Control,
}

/// One registered server.
#[derive(Debug)]
pub struct ServerEntry {
    /// What users pass to `--mcp`.
    pub name: &'static str,
    /// The pattern module it belongs to (also its folder under `servers/src/modules/`).
    pub module: &'static str,
    pub role: Role,
    /// The other arm of the same module.
    pub paired: &'static str,
    pub launcher: &'static dyn Launch,
}

/// Every server, pattern then control, module by module.
pub static SERVERS: &[ServerEntry] = &[
    ServerEntry { name: "orchestrator", module: "tool_orchestrator", role: Role::Pattern, paired: "wrapper", launcher: &Launcher::<Orchestrator>::NEW },
    ServerEntry { name: "wrapper", module: "tool_orchestrator", role: Role::Control, paired: "orchestrator", launcher: &Launcher::<Wrapper>::NEW },
    ServerEntry { name: "domain_adapter", module: "domain_adapter", role: Role::Pattern, paired: "domain_wrapper", launcher: &Launcher::<DomainAdapter>::NEW },
    ServerEntry { name: "domain_wrapper", module: "domain_adapter", role: Role::Control, paired: "domain_adapter", launcher: &Launcher::<DomainWrapper>::NEW },
    ServerEntry {
        name: "session_server",
        module: "stateful_session",
        role: Role::Pattern,
        paired: "session_baseline",
        launcher: &Launcher::<SessionServer>::NEW,
    },
    ServerEntry {
        name: "session_baseline",
        module: "stateful_session",
        role: Role::Control,
        paired: "session_server",
        launcher: &Launcher::<SessionBaseline>::NEW,
    },
    ServerEntry {
        name: "proxy_aggregator",
        module: "proxy_aggregator",
        role: Role::Pattern,
        paired: "proxy_wrapper",
        launcher: &Launcher::<ProxyAggregator>::NEW,
    },
    ServerEntry {
        name: "proxy_wrapper",
        module: "proxy_aggregator",
        role: Role::Control,
        paired: "proxy_aggregator",
        launcher: &Launcher::<ProxyWrapper>::NEW,
    },
    ServerEntry {
        name: "resource_gateway",
        module: "resource_gateway",
        role: Role::Pattern,
        paired: "resource_wrapper",
        launcher: &Launcher::<ResourceGateway>::NEW,
    },
    ServerEntry {
        name: "resource_wrapper",
        module: "resource_gateway",
        role: Role::Control,
        paired: "resource_gateway",
        launcher: &Launcher::<ResourceWrapper>::NEW,
    },
];

/// One pattern module: its name and the words specific to its servers' designs.
#[derive(Debug)]
pub struct ModuleEntry {
    pub name: &'static str,
    /// Words a neutral task text must not use (gate G5), besides every tool and resource name.
    pub specific_terms: &'static [&'static str],
}

/// Every module, in the order reports list them.
pub static MODULES: &[ModuleEntry] = &[
    ModuleEntry { name: "tool_orchestrator", specific_terms: crate::modules::tool_orchestrator::SPECIFIC_TERMS },
    ModuleEntry { name: "domain_adapter", specific_terms: crate::modules::domain_adapter::SPECIFIC_TERMS },
    ModuleEntry { name: "stateful_session", specific_terms: crate::modules::stateful_session::SPECIFIC_TERMS },
    ModuleEntry { name: "proxy_aggregator", specific_terms: crate::modules::proxy_aggregator::SPECIFIC_TERMS },
    ModuleEntry { name: "resource_gateway", specific_terms: crate::modules::resource_gateway::SPECIFIC_TERMS },
];

/// The module called `name`.
pub fn module(name: &str) -> Option<&'static ModuleEntry> {
    MODULES.iter().find(|m| m.name == name)
}

/// The pattern and control servers of `module`, in that order.
pub fn arms(module: &str) -> Option<(&'static ServerEntry, &'static ServerEntry)> {
    let pattern = SERVERS.iter().find(|s| s.module == module && s.role == Role::Pattern)?;
    let control = find(pattern.paired)?;
    Some((pattern, control))
}

/// The server called `name`.
pub fn find(name: &str) -> Option<&'static ServerEntry> {
    SERVERS.iter().find(|s| s.name == name)
}

/// The names of all servers, for error messages.
pub fn names() -> Vec<&'static str> {
    SERVERS.iter().map(|s| s.name).collect()
}

/// Module names in registry order.
pub fn modules() -> Vec<&'static str> {
    MODULES.iter().map(|m| m.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_consistent() {
        let mut names: Vec<_> = SERVERS.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SERVERS.len(), "server names are unique");
        for s in SERVERS {
            let other = find(s.paired).unwrap_or_else(|| panic!("{} is paired with unknown {}", s.name, s.paired));
            assert_eq!(other.paired, s.name, "{} and {} pair each other", s.name, other.name);
            assert_eq!(other.module, s.module, "{} and {} are in one module", s.name, other.name);
            assert_ne!(other.role, s.role, "{} and {} are a pattern and a control", s.name, other.name);
        }
        for m in modules() {
            let arms: Vec<_> = SERVERS.iter().filter(|s| s.module == m).collect();
            assert_eq!(arms.len(), 2, "module {m} has exactly one pattern and one control");
            assert!(super::arms(m).is_some());
        }
        for s in SERVERS {
            assert!(module(s.module).is_some(), "{} names unregistered module {}", s.name, s.module);
        }
    }
}
