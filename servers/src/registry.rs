//! The registry: one explicit list of every pattern module. Each module's `mod.rs` declares
//! its [`ModuleEntry`] (name, specific terms, pattern server, control server); adding a module
//! adds one line to [`MODULES`]. Beside them, the external arms a run was given (folders with an
//! `arm.toml`, [`crate::external`]), registered once at start ([`register_external`]) and then
//! found like the built-in servers. Nothing else discovers servers.

use std::sync::OnceLock;

use crate::external::{ArmError, ExternalArm};
use crate::launch::Launch;

pub use records::Role;

/// One registered server.
#[derive(Debug)]
pub struct ServerEntry {
    /// What users pass to `--mcp`.
    pub name: &'static str,
    /// The pattern module it belongs to (also its folder under `servers/src/modules/`).
    pub module: &'static str,
    pub role: Role,
    /// The other arm of the same module (for an external arm: the built-in server of the
    /// other role).
    pub paired: &'static str,
    pub serve: Serve,
}

/// How a server is run: compiled into this workspace, or an external arm's own process.
#[derive(Debug, Clone, Copy)]
pub enum Serve {
    Builtin(&'static dyn Launch),
    External(&'static ExternalArm),
}

impl ServerEntry {
    /// The launcher of a built-in server; `None` for an external arm.
    pub fn launcher(&self) -> Option<&'static dyn Launch> {
        match self.serve {
            Serve::Builtin(l) => Some(l),
            Serve::External(_) => None,
        }
    }

    /// The external arm behind this entry, if it is one.
    pub fn external(&self) -> Option<&'static ExternalArm> {
        match self.serve {
            Serve::Builtin(_) => None,
            Serve::External(a) => Some(a),
        }
    }
}

/// One pattern module: its name, the words specific to its servers' designs, and its two arms.
#[derive(Debug)]
pub struct ModuleEntry {
    pub name: &'static str,
    /// Words a neutral task text must not use (gate G5), besides every tool and resource name.
    pub specific_terms: &'static [&'static str],
    pub pattern: ServerEntry,
    pub control: ServerEntry,
    /// For a module whose servers list a tool catalogue: the size they list when the run does
    /// not choose one, and the largest they can list (`--catalogue N`).
    pub catalogue: Option<CatalogueSizes>,
    /// For a module whose arms relay other servers' operations (proxy_aggregator): the
    /// downstream operations both arms show the description of, each in one place — where a
    /// tool-poisoning attack ([`crate::launch::Poison`]) can reach the model. Empty: the module
    /// relays nothing.
    pub relays: &'static [Relayed],
}

/// A downstream operation both arms of a module relay: the downstream server's name for it, and
/// the control's tool that carries its description (the pattern shows it as the module's design
/// does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Relayed {
    pub server: &'static str,
    pub operation: &'static str,
    pub control_tool: &'static str,
}

/// The catalogue sizes a module's servers take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogueSizes {
    pub min: u32,
    pub default: u32,
    pub max: u32,
}

impl ModuleEntry {
    /// The module `name`, whose pattern and control servers (name, launcher) pair each other.
    pub const fn new(
        name: &'static str,
        specific_terms: &'static [&'static str],
        pattern: (&'static str, &'static dyn Launch),
        control: (&'static str, &'static dyn Launch),
    ) -> Self {
        Self {
            name,
            specific_terms,
            pattern: ServerEntry { name: pattern.0, module: name, role: Role::Pattern, paired: control.0, serve: Serve::Builtin(pattern.1) },
            control: ServerEntry { name: control.0, module: name, role: Role::Control, paired: pattern.0, serve: Serve::Builtin(control.1) },
            catalogue: None,
            relays: &[],
        }
    }

    /// This module's arms relay `relays` (see [`Self::relays`]).
    pub const fn with_relays(mut self, relays: &'static [Relayed]) -> Self {
        self.relays = relays;
        self
    }

    /// This module's servers list a catalogue of `sizes.default` tools unless the run chooses
    /// another size in `sizes.min..=sizes.max` (both arms the same:
    /// [`crate::launch::ArmSettings::catalogue`]).
    pub const fn with_catalogue(mut self, sizes: CatalogueSizes) -> Self {
        self.catalogue = Some(sizes);
        self
    }

    /// The catalogue size this module's servers list under `settings`; `None` for a module
    /// without a catalogue.
    pub fn catalogue_size(&self, settings: crate::launch::ArmSettings) -> Option<u32> {
        self.catalogue.map(|c| settings.catalogue.unwrap_or(c.default))
    }
}

/// Whether `settings` can be served: a chosen catalogue size needs a module with a catalogue
/// among `modules`, and must be within its range. The error names the flag and the fix.
pub fn check_settings(settings: crate::launch::ArmSettings, modules: &[&str]) -> Result<(), String> {
    if let Some(p) = settings.poison {
        check_poison(p, modules)?;
    }
    let Some(n) = settings.catalogue else { return Ok(()) };
    let with: Vec<&ModuleEntry> = modules.iter().filter_map(|m| module(m)).filter(|m| m.catalogue.is_some()).collect();
    if with.is_empty() {
        let listing: Vec<&str> = MODULES.iter().filter(|m| m.catalogue.is_some()).map(|m| m.name).collect();
        return Err(format!(
            "--catalogue {n}: none of the selected modules ({}) lists a tool catalogue; it applies to {}",
            modules.join(", "),
            listing.join(", ")
        ));
    }
    for m in with {
        let Some(c) = m.catalogue else { continue };
        if !(c.min..=c.max).contains(&n) {
            return Err(format!(
                "--catalogue {n}: {} lists {} to {} tools of other systems (its tasks are written against at least {}); choose a size in that range",
                m.name, c.min, c.max, c.min
            ));
        }
    }
    Ok(())
}

/// A poisoned downstream description reaches a model only through an arm that relays it: every
/// module of the run must relay the poisoned operation, in both arms, or the attack would be
/// planted in one arm and not the other (or in neither, and measure nothing).
fn check_poison(p: &crate::launch::Poison, modules: &[&str]) -> Result<(), String> {
    let relaying: Vec<&str> = MODULES.iter().filter(|m| !m.relays.is_empty()).map(|m| m.name).collect();
    for name in modules {
        let Some(m) = module(name) else { continue };
        if m.relays.is_empty() {
            return Err(format!(
                "--attack: this attack poisons the description of {}'s operation {}, but the arms of {name} relay no other server's operations, so no arm of it can show it; a tool-poisoning attack runs on {} (choose those with --module), or choose a data-injection or result-shaping attack",
                p.server,
                p.operation,
                relaying.join(", ")
            ));
        }
        if !m.relays.iter().any(|r| r.server == p.server && r.operation == p.operation) {
            let ops: Vec<String> = m.relays.iter().map(|r| format!("{}.{}", r.server, r.operation)).collect();
            return Err(format!(
                "--attack: this attack poisons {}.{}, which {name}'s arms do not both relay in one place; they relay {}",
                p.server,
                p.operation,
                ops.join(", ")
            ));
        }
    }
    Ok(())
}

/// Every module, in the order reports list them. Adding a module adds its line here.
pub static MODULES: &[&ModuleEntry] = &[
    &crate::modules::tool_orchestrator::MODULE,
    &crate::modules::domain_adapter::MODULE,
    &crate::modules::stateful_session::MODULE,
    &crate::modules::proxy_aggregator::MODULE,
    &crate::modules::resource_gateway::MODULE,
    &crate::modules::code_execution::MODULE,
    &crate::modules::tool_search::MODULE,
];

static EXTERNAL: OnceLock<Vec<&'static ServerEntry>> = OnceLock::new();

/// Registers the external arms of this process, once, before anything looks servers up. A name
/// already taken (by a built-in server or another arm) is refused, naming the file, and so is an
/// `oracle_from` that does not name a built-in server of the arm's module.
pub fn register_external(arms: Vec<ExternalArm>) -> Result<(), ArmError> {
    let names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut entries: Vec<&'static ServerEntry> = Vec::new();
    for arm in arms {
        if builtin().any(|s| s.name == arm.name) || entries.iter().any(|e| e.name == arm.name) {
            return Err(ArmError::Field {
                file: arm.file(),
                field: arm.field_name("name"),
                problem: format!("{:?} is already the name of another server", arm.name),
            });
        }
        let module = module(&arm.module).ok_or_else(|| ArmError::Field {
            file: arm.file(),
            field: arm.field_name("module"),
            problem: "not a registered module".into(),
        })?;
        if module.catalogue.is_some() {
            // Its servers list a catalogue whose size each run chooses and fingerprints; an
            // external server would list whatever it lists, under the run's number.
            return Err(ArmError::Field {
                file: arm.file(),
                field: arm.field_name("module"),
                problem: format!(
                    "{} lists a tool catalogue whose size the run chooses, and an external arm cannot be told it yet; answer another module's tasks",
                    module.name
                ),
            });
        }
        arm.check_oracle_from(&names)?;
        let paired = if arm.role == Role::Pattern { module.control.name } else { module.pattern.name };
        // The registry lives as long as the process: leaking gives the `'static` every built-in has.
        let arm: &'static ExternalArm = Box::leak(Box::new(arm));
        let name: &'static str = Box::leak(arm.name.clone().into_boxed_str());
        entries.push(Box::leak(Box::new(ServerEntry { name, module: module.name, role: arm.role, paired, serve: Serve::External(arm) })));
    }
    EXTERNAL.set(entries).map_err(|_| ArmError::Folder { path: ".".into(), problem: "external arms were already registered".into() })
}

/// The servers compiled into this workspace (what `--all` runs).
pub fn builtin() -> impl Iterator<Item = &'static ServerEntry> {
    MODULES.iter().flat_map(|m| [&m.pattern, &m.control])
}

/// The registered external arms.
pub fn external() -> impl Iterator<Item = &'static ServerEntry> {
    EXTERNAL.get().into_iter().flatten().copied()
}

/// Every server: the built-in ones, pattern then control, module by module; then the external
/// arms.
pub fn servers() -> impl Iterator<Item = &'static ServerEntry> {
    builtin().chain(external())
}

/// The module called `name`.
pub fn module(name: &str) -> Option<&'static ModuleEntry> {
    MODULES.iter().copied().find(|m| m.name == name)
}

/// The pattern and control servers of `module`, in that order.
pub fn arms(module: &str) -> Option<(&'static ServerEntry, &'static ServerEntry)> {
    self::module(module).map(|m| (&m.pattern, &m.control))
}

/// The server called `name`.
pub fn find(name: &str) -> Option<&'static ServerEntry> {
    servers().find(|s| s.name == name)
}

/// The names of all servers, for error messages.
pub fn names() -> Vec<&'static str> {
    servers().map(|s| s.name).collect()
}

/// Module names in registry order.
pub fn modules() -> Vec<&'static str> {
    MODULES.iter().map(|m| m.name).collect()
}
