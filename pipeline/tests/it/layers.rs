//! The module layers of `pipeline` and `agent`, checked from their sources (and the workspace's
//! test layout, one integration-test binary per crate): each module may use
//! only the modules below it in its crate's order, so no import circle can come back unnoticed.
//! A folder module and its children count as one module. Sources are parsed (syn): comments,
//! strings and `#[cfg(test)]` code are not imports (a test may drive a crate from the top).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// `pipeline/src`, top to bottom (the order `pipeline/src/lib.rs` describes).
const PIPELINE: &[&str] = &[
    "commands",
    "run",
    "session",
    "gates",
    "context",
    "sequential",
    "experiment",
    "plan",
    "input",
    "held_out",
    "gold",
    "grading",
    "split",
    "shard",
    "budget",
    "otlp",
    "listing",
    "arm",
    "signals",
    "redact",
    "invoked",
    "build_info",
    "exit",
];

/// `agent/src`, top to bottom (the order `agent/src/lib.rs` describes).
const AGENT: &[&str] = &["sim", "oracle", "preflight", "judge", "session", "provider", "mcp", "dialect", "text_call", "config", "record", "tokens"];

/// Collects the second segment of every `crate::…` path, in code and in macro arguments.
#[derive(Default)]
struct Uses(BTreeSet<String>);

impl Uses {
    fn tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, t) in tokens.iter().enumerate() {
            match t {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) if id == "crate" => {
                    let colons = tokens[i + 1..].iter().take(2).all(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ':'));
                    if colons && let Some(TokenTree::Ident(name)) = tokens.get(i + 3) {
                        self.0.insert(name.to_string());
                    }
                }
                _ => {}
            }
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string().split(|c: char| !c.is_alphanumeric()).any(|w| w == "test"))
    })
}

impl<'a> Visit<'a> for Uses {
    fn visit_item(&mut self, item: &'a syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Impl(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_path(&mut self, path: &'a syn::Path) {
        let mut segments = path.segments.iter();
        if let (Some(first), Some(second)) = (segments.next(), segments.next())
            && first.ident == "crate"
        {
            self.0.insert(second.ident.to_string());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_use_tree(&mut self, tree: &'a syn::UseTree) {
        if let syn::UseTree::Path(p) = tree
            && p.ident == "crate"
        {
            let mut names = Vec::new();
            first_names(&p.tree, &mut names);
            self.0.extend(names);
            return;
        }
        syn::visit::visit_use_tree(self, tree);
    }

    fn visit_macro(&mut self, mac: &'a syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

/// The first name of each path in a use tree: `a::x` and `{b, c::y}` give a, b, c.
fn first_names(tree: &syn::UseTree, out: &mut Vec<String>) {
    match tree {
        syn::UseTree::Path(p) => out.push(p.ident.to_string()),
        syn::UseTree::Name(n) => out.push(n.ident.to_string()),
        syn::UseTree::Rename(r) => out.push(r.ident.to_string()),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| first_names(t, out)),
        syn::UseTree::Glob(_) => {}
    }
}

/// The crate-local modules each top-level module of `src` uses.
fn crate_uses(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).unwrap();
        if rel.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let top = rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut uses = Uses::default();
        uses.visit_file(&parsed);
        let used = out.entry(top.clone()).or_default();
        used.extend(uses.0.into_iter().filter(|u| *u != top));
    }
    out
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Every use that does not point strictly down `order`, and every module `order` leaves out.
fn violations(order: &[&str], uses: &BTreeMap<String, BTreeSet<String>>, roots: &[&str]) -> Vec<String> {
    let rank = |m: &str| order.iter().position(|o| *o == m);
    let mut out = Vec::new();
    for (module, used) in uses {
        if roots.contains(&module.as_str()) {
            continue;
        }
        let Some(r) = rank(module) else {
            out.push(format!("{module}: not in the layer order; add it where it belongs"));
            continue;
        };
        for u in used {
            match rank(u) {
                Some(ru) if ru > r => {}
                Some(_) => out.push(format!("{module} uses {u}, which is not below it")),
                None => out.push(format!("{module} uses {u}, which is not in the layer order")),
            }
        }
    }
    out
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name).join("src")
}

#[test]
fn pipeline_modules_use_only_the_modules_below_them() {
    let v = violations(PIPELINE, &crate_uses(&crate_src("pipeline")), &["lib", "main"]);
    assert!(v.is_empty(), "pipeline/src:\n  {}", v.join("\n  "));
}

#[test]
fn agent_modules_use_only_the_modules_below_them() {
    // `bin/` holds binaries, each a crate of its own.
    let v = violations(AGENT, &crate_uses(&crate_src("agent")), &["lib", "bin"]);
    assert!(v.is_empty(), "agent/src:\n  {}", v.join("\n  "));
}

#[test]
fn the_checker_sees_an_import_that_points_up_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("low")).unwrap();
    std::fs::write(dir.path().join("low/mod.rs"), "//! crate::high in a comment\nfn f() { let _ = format!(\"{}\", crate::high::g()); }\n").unwrap();
    std::fs::write(
        dir.path().join("high.rs"),
        concat!(
            "use crate::{low, other::x};\n",
            "const T: &str = \"crate::quoted\";\n",
            "const R: &str = r#\"crate::raw \"q\" \"#;\n",
            "fn l<'a>(c: char) -> bool { c == '\"' }\n",
            "#[cfg(test)]\nmod tests { use crate::nowhere; }\n",
        ),
    )
    .unwrap();
    let uses = crate_uses(dir.path());
    assert_eq!(uses["low"], BTreeSet::from(["high".to_owned()]));
    assert_eq!(uses["high"], BTreeSet::from(["low".to_owned(), "other".to_owned()]));
    let v = violations(&["high", "low"], &uses, &[]);
    assert_eq!(v, vec!["high uses other, which is not in the layer order".to_owned(), "low uses high, which is not below it".to_owned()]);
}

#[test]
fn each_crate_has_one_integration_test_binary() {
    // A file directly under a crate's tests/ is a binary of its own, linking every dependency
    // again; tests go under tests/it/ and into its main.rs. task_gates has a harness of its own.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut stray = Vec::new();
    for krate in std::fs::read_dir(&root).unwrap().flatten().filter(|e| e.path().join("Cargo.toml").is_file()) {
        let Ok(files) = std::fs::read_dir(krate.path().join("tests")) else { continue };
        for f in files.flatten().map(|f| f.path()).filter(|p| p.extension().is_some_and(|x| x == "rs")) {
            let rel = f.strip_prefix(&root).unwrap().display().to_string();
            if rel != "pipeline/tests/task_gates.rs" {
                stray.push(rel);
            }
        }
        if let Ok(main) = std::fs::read_to_string(krate.path().join("tests/it/main.rs")) {
            for m in std::fs::read_dir(krate.path().join("tests/it")).unwrap().flatten() {
                let name = m.file_name().to_string_lossy().trim_end_matches(".rs").to_owned();
                if name != "main" && !main.contains(&format!("mod {name};")) {
                    stray.push(format!("{} (not declared in tests/it/main.rs)", m.path().strip_prefix(&root).unwrap().display()));
                }
            }
        }
    }
    assert!(
        stray.is_empty(),
        "test files outside their crate's one test binary; move each under tests/it/ and declare it in main.rs:\n  {}",
        stray.join("\n  ")
    );
}
