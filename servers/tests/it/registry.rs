//! The registry of built-in servers: every shipped module is registered, names are unique, and
//! each module has its folder and two arms that name each other. (Integration tests, not unit
//! tests, so that the scaffold test of `pipeline new-module` runs them from the one test binary it
//! builds per crate.)

use servers::registry::{MODULES, Role, arms, external, module, modules, names, servers};
#[test]
fn the_shipped_modules_are_registered() {
    for m in ["tool_orchestrator", "domain_adapter", "stateful_session", "proxy_aggregator", "resource_gateway", "code_execution", "tool_search"] {
        assert!(module(m).is_some(), "{m} is not in MODULES");
    }
}

#[test]
fn names_are_unique_and_modules_have_folders() {
    assert_eq!(external().count(), 0, "nothing registers arms in these tests");
    let mut names = names();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), servers().count(), "server names are unique across modules");
    let mut mods = modules();
    mods.sort_unstable();
    mods.dedup();
    assert_eq!(mods.len(), MODULES.len(), "module names are unique");
    for m in MODULES {
        assert_ne!(m.pattern.name, m.control.name, "{}: the two arms need two names", m.name);
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/modules").join(m.name);
        assert!(folder.is_dir(), "module {} has no folder {}", m.name, folder.display());
        let (p, c) = arms(m.name).unwrap();
        assert_eq!((p.role, c.role, p.paired, c.paired), (Role::Pattern, Role::Control, c.name, p.name));
    }
}
