//! `pipeline new-module NAME`: scaffold a new pattern module that compiles and passes the gates
//! as generated.
//!
//! It writes the module's server folder (a pattern server with one tool, a control built from
//! flat groups), a server test over both transports, a task folder with one example task, its
//! verifier and both oracle plans, and registers the module (`pub mod` in
//! `servers/src/modules/mod.rs`, one line in `MODULES` of `servers/src/registry.rs`).
//! Everything is checked before anything is written; if a write fails, what was written is
//! removed and the two edited files are put back.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail, ensure};
use serde::Serialize;

#[derive(Debug, clap::Args)]
pub struct NewModuleArgs {
    /// The module's name, in snake_case (e.g. `batch_writer`); also the pattern server's name
    /// unless --pattern is given.
    pub name: String,
    /// Name of the pattern server [default: NAME].
    #[arg(long)]
    pub pattern: Option<String>,
    /// Name of the control server [default: NAME_wrapper].
    #[arg(long)]
    pub control: Option<String>,
    /// The mcp-pattern-bench checkout to write into [default: the one containing the current
    /// directory].
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Print what was created as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Longest module name: keeps every generated line within the formatter's width.
const MAX_MODULE_LEN: usize = 32;
/// Longest server name.
const MAX_SERVER_LEN: usize = 40;
/// The example task's folder under `tasks/NAME/`.
const EXAMPLE_TASK: &str = "globex_checkout_down";
const MODULES_RS: &str = "servers/src/modules/mod.rs";
const REGISTRY_RS: &str = "servers/src/registry.rs";
/// The servers crate's one integration-test binary: each module's test is a module of it.
const SERVERS_TESTS_RS: &str = "servers/tests/it/main.rs";
const MODULES_LIST_START: &str = "pub static MODULES: &[&ModuleEntry] = &[";

/// Folder names a module may not take: they already mean something under `tasks/` (the crate's
/// own folders) or `servers/tests/it/` (the shared fixture).
const RESERVED: &[&str] = &["src", "tests", "benches", "examples", "target", "common"];

const RUST_KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate", "do", "dyn", "else", "enum", "extern", "false", "final", "fn",
    "for", "gen", "if", "impl", "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return", "self", "static",
    "struct", "super", "trait", "true", "try", "type", "typeof", "union", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// The names one scaffold fills into its templates.
#[derive(Debug, Clone, Serialize)]
pub struct Names {
    pub module: String,
    pub pattern: String,
    pub control: String,
    #[serde(skip)]
    pattern_type: String,
    #[serde(skip)]
    control_type: String,
    #[serde(skip)]
    title: String,
}

impl Names {
    /// Checks the names (shape, keywords, clashes with the registered modules and servers).
    pub fn new(module: &str, pattern: Option<&str>, control: Option<&str>) -> anyhow::Result<Self> {
        check_identifier("module name", module, MAX_MODULE_LEN)?;
        ensure!(!RESERVED.contains(&module), "module name {module:?} is reserved: a folder of that name already has a role");
        let pattern = pattern.map_or_else(|| module.to_owned(), str::to_owned);
        let control = control.map_or_else(|| format!("{module}_wrapper"), str::to_owned);
        check_identifier("pattern server name", &pattern, MAX_SERVER_LEN)?;
        check_identifier("control server name", &control, MAX_SERVER_LEN)?;
        ensure!(pattern != control, "the pattern and the control server need different names (both are {pattern:?})");
        if servers::registry::module(module).is_some() {
            bail!("a module named {module:?} is already registered; modules: {}", servers::registry::modules().join(", "));
        }
        for name in [&pattern, &control] {
            if servers::registry::find(name).is_some() {
                bail!(
                    "a server named {name:?} is already registered; pass another with --pattern/--control (servers: {})",
                    servers::registry::names().join(", ")
                );
            }
        }
        let camel = camel_case(module);
        Ok(Self {
            module: module.to_owned(),
            pattern,
            control,
            pattern_type: format!("{camel}Pattern"),
            control_type: format!("{camel}Control"),
            title: title_case(module),
        })
    }

    fn render(&self, template: &str) -> String {
        let out = template
            .replace("{{module}}", &self.module)
            .replace("{{pattern}}", &self.pattern)
            .replace("{{control}}", &self.control)
            .replace("{{Pattern}}", &self.pattern_type)
            .replace("{{Control}}", &self.control_type)
            .replace("{{Title}}", &self.title);
        debug_assert!(!out.contains("{{"), "a template placeholder was left unfilled");
        out
    }
}

fn check_identifier(what: &str, name: &str, max: usize) -> anyhow::Result<()> {
    let shape = name.split('_').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
        && name.starts_with(|c: char| c.is_ascii_lowercase());
    ensure!(shape, "{what} {name:?} is not snake_case: use lowercase letters, digits and single underscores, starting with a letter (e.g. batch_writer)");
    ensure!(name.len() <= max, "{what} {name:?} is {} characters long; at most {max}", name.len());
    ensure!(!RUST_KEYWORDS.contains(&name), "{what} {name:?} is a Rust keyword");
    Ok(())
}

fn camel_case(snake: &str) -> String {
    snake.split('_').map(|p| p[..1].to_ascii_uppercase() + &p[1..]).collect()
}

fn title_case(snake: &str) -> String {
    let words = snake.replace('_', " ");
    words[..1].to_ascii_uppercase() + &words[1..]
}

/// Everything one scaffold writes, relative to the checkout's root.
#[derive(Debug)]
pub struct Scaffold {
    pub names: Names,
    /// New files and their contents.
    pub files: Vec<(PathBuf, String)>,
    /// Existing files and their new contents.
    pub edits: Vec<(PathBuf, String)>,
}

/// The scaffold for `names` in the checkout at `root`, checked against what is on disk.
pub fn plan(root: &Path, names: Names) -> anyhow::Result<Scaffold> {
    let m = &names.module;
    let task = format!("tasks/{m}/{EXAMPLE_TASK}");
    let templates: [(String, &str); 10] = [
        (format!("servers/src/modules/{m}/mod.rs"), include_str!("../../templates/new_module/mod.rs.tmpl")),
        (format!("servers/src/modules/{m}/pattern.rs"), include_str!("../../templates/new_module/pattern.rs.tmpl")),
        (format!("servers/src/modules/{m}/control.rs"), include_str!("../../templates/new_module/control.rs.tmpl")),
        (format!("servers/src/modules/{m}/parity.toml"), include_str!("../../templates/new_module/parity.toml.tmpl")),
        (format!("servers/tests/it/{m}.rs"), include_str!("../../templates/new_module/servers_test.rs.tmpl")),
        (format!("{task}/task.md"), include_str!("../../templates/new_module/task/task.md")),
        (format!("{task}/meta.toml"), include_str!("../../templates/new_module/task/meta.toml")),
        (format!("{task}/verify.toml"), include_str!("../../templates/new_module/task/verify.toml")),
        (format!("{task}/oracle/{}.toml", names.pattern), include_str!("../../templates/new_module/task/oracle/pattern.toml")),
        (format!("{task}/oracle/{}.toml", names.control), include_str!("../../templates/new_module/task/oracle/control.toml")),
    ];
    for taken in [format!("servers/src/modules/{m}"), format!("servers/tests/it/{m}.rs"), format!("servers/tests/it/{m}"), format!("tasks/{m}")] {
        let path = root.join(&taken);
        if path.exists() {
            bail!("{} already exists; nothing was written (remove it, or pick another module name)", path.display());
        }
    }
    let files = templates.into_iter().map(|(path, t)| (PathBuf::from(path), names.render(t))).collect();
    let modules_rs = read(root, MODULES_RS)?;
    let registry_rs = read(root, REGISTRY_RS)?;
    let servers_tests_rs = read(root, SERVERS_TESTS_RS)?;
    let edits = vec![
        (PathBuf::from(MODULES_RS), with_module_declared(&modules_rs, "pub mod", m).with_context(|| format!("editing {MODULES_RS}"))?),
        (PathBuf::from(SERVERS_TESTS_RS), with_module_declared(&servers_tests_rs, "mod", m).with_context(|| format!("editing {SERVERS_TESTS_RS}"))?),
        (PathBuf::from(REGISTRY_RS), with_module_registered(&registry_rs, m).with_context(|| format!("editing {REGISTRY_RS}"))?),
    ];
    Ok(Scaffold { names, files, edits })
}

fn read(root: &Path, rel: &str) -> anyhow::Result<String> {
    let path = root.join(rel);
    std::fs::read_to_string(&path).with_context(|| format!("reading {}; is {} an mcp-pattern-bench checkout?", path.display(), root.display()))
}

/// `source` (`modules/mod.rs`, the servers' test binary) with `KEYWORD NAME;` among its other
/// `KEYWORD …;` declarations (`pub mod`, `mod`), in the sorted place the formatter keeps them in.
fn with_module_declared(source: &str, keyword: &str, module: &str) -> anyhow::Result<String> {
    let line = format!("{keyword} {module};");
    let lines: Vec<&str> = source.lines().collect();
    let decls: Vec<usize> =
        lines.iter().enumerate().filter(|(_, l)| l.strip_prefix(keyword).is_some_and(|r| r.starts_with(' ')) && l.ends_with(';')).map(|(i, _)| i).collect();
    let Some(&last) = decls.last() else {
        bail!("found no `{keyword} …;` lines to add `{line}` to");
    };
    ensure!(!decls.iter().any(|&i| lines[i] == line), "`{line}` is already there");
    let at = decls.iter().copied().find(|&i| lines[i] > line.as_str()).unwrap_or(last + 1);
    Ok(insert_line(&lines, at, &line))
}

/// `registry.rs` with the module's line at the end of `MODULES`.
fn with_module_registered(source: &str, module: &str) -> anyhow::Result<String> {
    let entry = format!("&crate::modules::{module}::MODULE,");
    let lines: Vec<&str> = source.lines().collect();
    let start = lines.iter().position(|l| l.trim() == MODULES_LIST_START).with_context(|| format!("found no line `{MODULES_LIST_START}`"))?;
    let end = (start..lines.len()).find(|&i| lines[i].trim() == "];").with_context(|| format!("found no `];` closing `{MODULES_LIST_START}`"))?;
    ensure!(!lines[start..end].iter().any(|l| l.trim() == entry), "`{entry}` is already there");
    Ok(insert_line(&lines, end, &format!("    {entry}")))
}

fn insert_line(lines: &[&str], at: usize, line: &str) -> String {
    let mut out: Vec<&str> = lines.to_vec();
    out.insert(at, line);
    out.join("\n") + "\n"
}

/// Writes `scaffold` under `root`: all of it, or (after a failure) none of it.
pub fn write(root: &Path, scaffold: &Scaffold) -> anyhow::Result<()> {
    let mut created: Vec<PathBuf> = Vec::new();
    let mut edited: Vec<(PathBuf, String)> = Vec::new();
    let result = write_all(root, scaffold, &mut created, &mut edited);
    if result.is_err() {
        for (path, original) in edited.iter().rev() {
            let _ = std::fs::write(path, original);
        }
        for path in created.iter().rev() {
            let _ = if path.is_dir() { std::fs::remove_dir(path) } else { std::fs::remove_file(path) };
        }
    }
    result
}

fn write_all(root: &Path, scaffold: &Scaffold, created: &mut Vec<PathBuf>, edited: &mut Vec<(PathBuf, String)>) -> anyhow::Result<()> {
    for (rel, contents) in &scaffold.files {
        let path = root.join(rel);
        let parent = path.parent().context("a generated file has a parent folder")?;
        let mut missing: Vec<PathBuf> = parent.ancestors().take_while(|p| !p.exists()).map(Path::to_path_buf).collect();
        missing.reverse();
        for dir in missing {
            std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
            created.push(dir);
        }
        std::fs::OpenOptions::new().write(true).create_new(true).open(&path).with_context(|| format!("creating {}", path.display()))?;
        created.push(path.clone());
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
    }
    for (rel, contents) in &scaffold.edits {
        let path = root.join(rel);
        let original = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let tmp = path.with_extension("rs.new-module");
        let replaced = std::fs::write(&tmp, contents)
            .with_context(|| format!("writing {}", tmp.display()))
            .and_then(|()| std::fs::rename(&tmp, &path).with_context(|| format!("replacing {}", path.display())));
        if replaced.is_err() && tmp.is_file() {
            let _ = std::fs::remove_file(&tmp);
        }
        replaced?;
        edited.push((path, original));
    }
    Ok(())
}

/// The checkout containing `start`: the nearest ancestor with `servers/src/registry.rs`.
fn find_root(start: &Path) -> anyhow::Result<PathBuf> {
    start.ancestors().find(|d| d.join(REGISTRY_RS).is_file() && d.join("tasks").is_dir()).map(Path::to_path_buf).with_context(|| {
        format!("{} is not inside an mcp-pattern-bench checkout (no {REGISTRY_RS} above it); run this from the checkout or pass --root DIR", start.display())
    })
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    #[serde(flatten)]
    names: &'a Names,
    root: String,
    created: Vec<String>,
    edited: Vec<String>,
    example_task: String,
    next: Vec<String>,
}

pub fn run(args: NewModuleArgs) -> anyhow::Result<()> {
    let root = match args.root {
        Some(root) => root,
        None => find_root(&std::env::current_dir().context("reading the current directory")?)?,
    };
    let names = Names::new(&args.name, args.pattern.as_deref(), args.control.as_deref())?;
    let scaffold = plan(&root, names)?;
    write(&root, &scaffold)?;
    let m = &scaffold.names.module;
    let report = Report {
        names: &scaffold.names,
        root: root.display().to_string(),
        created: scaffold.files.iter().map(|(p, _)| p.display().to_string()).collect(),
        edited: scaffold.edits.iter().map(|(p, _)| p.display().to_string()).collect(),
        example_task: format!("{m}/{EXAMPLE_TASK}"),
        next: vec![
            format!("cargo nextest run -p pipeline --test task_gates gates_{m}"),
            format!("cargo nextest run -p servers -E 'test(/^{m}::/)'"),
            format!("cargo run -p pipeline -- --module {m} --models oracle --k 1"),
        ],
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!("Created module {m}: pattern server {}, control server {}.", scaffold.names.pattern, scaffold.names.control);
    for p in &report.created {
        println!("  new   {p}");
    }
    for p in &report.edited {
        println!("  edit  {p}");
    }
    println!("\nIt compiles and passes the gates as generated. Check with:");
    for c in &report.next {
        println!("  {c}");
    }
    println!(
        "\nThen make the pattern the design you want to measure, keep the control flat, and replace the example with the\n\
         module's eight tasks (the test eight_tasks_{m} fails until there are eight). Recipe: docs/adding-a-pattern-module.md"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_before_anything_else() {
        for (bad, why) in [
            ("Batch", "snake_case"),
            ("batch-writer", "snake_case"),
            ("batch__writer", "snake_case"),
            ("_batch", "snake_case"),
            ("batch_", "snake_case"),
            ("9lives", "snake_case"),
            ("", "snake_case"),
            ("type", "keyword"),
            ("tests", "reserved"),
            ("tool_orchestrator", "already registered"),
            ("wrapper", "already registered"),
            ("a_module_name_that_is_far_too_long", "at most 32"),
        ] {
            let e = Names::new(bad, None, None).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        let e = Names::new("batch", Some("same"), Some("same")).unwrap_err().to_string();
        assert!(e.contains("different names"), "{e}");
        let n = Names::new("batch_writer_2", None, None).unwrap();
        assert_eq!(
            (n.pattern.as_str(), n.control.as_str(), n.pattern_type.as_str(), n.title.as_str()),
            ("batch_writer_2", "batch_writer_2_wrapper", "BatchWriter2Pattern", "Batch writer 2")
        );
    }

    #[test]
    fn the_declaration_goes_in_sorted_order_and_the_entry_at_the_end() {
        let mods = "//! Doc.\n\npub mod beta;\npub mod delta;\n";
        assert_eq!(with_module_declared(mods, "pub mod", "alpha").unwrap(), "//! Doc.\n\npub mod alpha;\npub mod beta;\npub mod delta;\n");
        assert_eq!(with_module_declared(mods, "pub mod", "charlie").unwrap(), "//! Doc.\n\npub mod beta;\npub mod charlie;\npub mod delta;\n");
        assert_eq!(with_module_declared(mods, "pub mod", "omega").unwrap(), "//! Doc.\n\npub mod beta;\npub mod delta;\npub mod omega;\n");
        assert!(with_module_declared(mods, "pub mod", "beta").unwrap_err().to_string().contains("already there"));
        assert!(with_module_declared("//! Nothing here.\n", "pub mod", "alpha").is_err());
        // A private declaration is another keyword: the test binary's `mod` lines.
        let tests = "//! Doc.\n\nmod common;\nmod zeta;\n";
        assert_eq!(with_module_declared(tests, "mod", "alpha").unwrap(), "//! Doc.\n\nmod alpha;\nmod common;\nmod zeta;\n");
        assert!(with_module_declared("pub mod x;\n", "mod", "alpha").is_err(), "`pub mod` is not `mod`");

        let reg = format!("x\n{MODULES_LIST_START}\n    &crate::modules::a::MODULE,\n];\n\nfn f() {{}}\n");
        let out = with_module_registered(&reg, "b").unwrap();
        assert_eq!(out, format!("x\n{MODULES_LIST_START}\n    &crate::modules::a::MODULE,\n    &crate::modules::b::MODULE,\n];\n\nfn f() {{}}\n"));
        assert!(with_module_registered(&reg, "a").unwrap_err().to_string().contains("already there"));
        assert!(with_module_registered("pub static OTHER: &[u8] = &[\n];\n", "b").unwrap_err().to_string().contains("found no line"));
    }

    #[test]
    fn every_placeholder_is_filled() {
        let names = Names::new("batch_writer", None, None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("servers/src/modules")).unwrap();
        std::fs::write(root.join(MODULES_RS), "pub mod a;\n").unwrap();
        std::fs::write(root.join(REGISTRY_RS), format!("{MODULES_LIST_START}\n];\n")).unwrap();
        std::fs::create_dir_all(root.join("servers/tests/it")).unwrap();
        std::fs::write(root.join(SERVERS_TESTS_RS), "mod common;\n").unwrap();
        let s = plan(root, names).unwrap();
        for (path, text) in s.files.iter().chain(&s.edits) {
            assert!(!text.contains("{{"), "{}", path.display());
            for line in text.lines().filter(|_| path.extension().is_some_and(|e| e == "rs")) {
                assert!(line.chars().count() <= 160, "{}: a line longer than rustfmt's width: {line}", path.display());
            }
        }
    }
}
