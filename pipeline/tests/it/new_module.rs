//! `pipeline new-module NAME`: bad input is refused with nothing written, a failed write is
//! rolled back, and the generated module, in a copy of this checkout, is formatted, compiles,
//! passes gates G5/G7 and its own server test, keeps the registry and listing tests passing,
//! shows up in `pipeline list`, and is flagged as incomplete (one task of eight) by the
//! completeness test.
//!
//! The copy is built with its own target directory but this build's directory for
//! intermediate artifacts (`CARGO_BUILD_BUILD_DIR`), and with the same package selection as
//! `cargo nextest run --workspace`, so features unify as they did here and compiled artifacts are
//! reused: the copy keeps every file's modification time, so the crates the scaffold leaves alone
//! (records, backend, embedded-pg, aggregate) are fresh, and only `servers` and the crates that
//! depend on it are compiled, and only the test targets the test runs. Cargo hashes
//! path packages relative to the workspace, so those changed crates get a version of their own:
//! otherwise the copy would overwrite this checkout's artifacts under the same names. Alone on
//! two cores this takes ≈ 45 s, against ≈ 120 s when every crate and test binary was rebuilt.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A module name this checkout does not use yet (a user may well have scaffolded `batch_writer`).
fn fresh_module_name() -> String {
    let free =
        |m: &str| servers::registry::module(m).is_none() && servers::registry::find(m).is_none() && servers::registry::find(&format!("{m}_wrapper")).is_none();
    (0..).map(|i| if i == 0 { "scaffold_probe".to_owned() } else { format!("scaffold_probe_{i}") }).find(|m| free(m)).unwrap()
}
/// Top-level entries of the checkout that are not sources.
const NOT_SOURCES: &[&str] = &["target", ".git", "results"];

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

fn copy_sources(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if from == checkout() && NOT_SOURCES.iter().any(|n| name == *n) {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_sources(&entry.path(), &target);
            // Build scripts watch folders too (the backend's, `migrations/`).
            std::fs::File::open(&target).unwrap().set_modified(entry.metadata().unwrap().modified().unwrap()).unwrap();
        } else if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), &target).unwrap();
            // The same modification time, so cargo finds the crates the scaffold leaves alone
            // fresh and reuses this build's artifacts for them (see the file's doc).
            let modified = entry.metadata().unwrap().modified().unwrap();
            std::fs::File::options().write(true).open(&target).unwrap().set_modified(modified).unwrap();
        }
    }
}

/// Every file under `root` and its contents.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.strip_prefix(root).unwrap().to_owned(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn pipeline(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pipeline")).args(args).current_dir(cwd).env("RUST_BACKTRACE", "0").output().unwrap()
}

/// A finished command's stdout and stderr: `Ok` when it succeeded, `Err` otherwise.
fn outcome(out: &Output) -> Result<String, String> {
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() { Ok(text) } else { Err(text) }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A throwaway copy of the checkout's sources (small: no build output).
fn source_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_sources(&checkout(), dir.path());
    dir
}

#[test]
fn bad_input_is_refused_and_nothing_is_written() {
    let copy = source_copy();
    let root = copy.path();
    let before = snapshot(root);
    let root_arg = root.to_str().unwrap();
    for (args, why) in [
        (vec!["new-module", "Batch-Writer", "--root", root_arg], "not snake_case"),
        (vec!["new-module", "tool_orchestrator", "--root", root_arg], "already registered"),
        (vec!["new-module", "batch", "--control", "wrapper", "--root", root_arg], "server named \"wrapper\" is already registered"),
        (vec!["new-module", "match", "--root", root_arg], "Rust keyword"),
        (vec!["new-module", "common", "--root", root_arg], "reserved"),
    ] {
        let out = pipeline(&args, root);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
    }
    // A folder in the way: refused before anything is written.
    let module = fresh_module_name();
    std::fs::create_dir(root.join("tasks").join(&module)).unwrap();
    let out = pipeline(&["new-module", &module], root);
    assert!(!out.status.success() && stderr(&out).contains("already exists"), "{}", stderr(&out));
    std::fs::remove_dir(root.join("tasks").join(&module)).unwrap();
    // Outside a checkout, without --root.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = pipeline(&["new-module", &module], elsewhere.path());
    assert!(!out.status.success() && stderr(&out).contains("not inside an mcp-pattern-bench checkout"), "{}", stderr(&out));
    assert!(snapshot(root) == before, "a refused scaffold changed the checkout");
}

#[test]
fn a_failed_write_is_rolled_back() {
    let copy = source_copy();
    let root = copy.path();
    // The registry edit goes through a temporary file; a folder in its place makes it fail
    // after every new file and the first edit have been written.
    let blocker = root.join("servers/src/registry.rs.new-module");
    std::fs::create_dir(&blocker).unwrap();
    let before = snapshot(root);
    let module = fresh_module_name();
    let out = pipeline(&["new-module", &module], &root.join("pipeline"));
    assert!(!out.status.success(), "the scaffold succeeded despite the blocked write");
    assert!(stderr(&out).contains("registry.rs.new-module"), "{}", stderr(&out));
    assert!(snapshot(root) == before, "a failed scaffold left files behind or edits in place");
    for left in [format!("servers/src/modules/{module}"), format!("tasks/{module}"), format!("servers/tests/it/{module}.rs")] {
        assert!(!root.join(&left).exists(), "{left} was left behind");
    }
}

/// Prefixes of the variables cargo and nextest give a test process.
const TEST_PROCESS_VARS: &[&str] = &[
    "CARGO_PKG_",
    "CARGO_MANIFEST_",
    "CARGO_CRATE_",
    "CARGO_BIN_",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "NEXTEST",
    "__NEXTEST",
    "RUST_TEST_",
    // The package's build-script folder: ring's build script watches it.
    "OUT_DIR",
];

/// Runs cargo in the copy; `Ok` with its output when it succeeded.
fn cargo(ws: &Path, target: &Path, build_dir: &Path, args: &[&str]) -> Result<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    // What cargo and nextest set for this test process must not reach the copy's build: build
    // scripts watch some of it (ring: CARGO_PKG_NAME, CARGO_MANIFEST_DIR), and a changed value
    // would rebuild them here and then again in this checkout's next build.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name == "CARGO" || TEST_PROCESS_VARS.iter().any(|p| name.starts_with(p)) {
            command.env_remove(&*name);
        }
    }
    let out = command
        .args(args)
        .current_dir(ws)
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .env_remove("MCPBENCH_TASKS_DIR")
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_BUILD_BUILD_DIR", build_dir)
        .env("CARGO_INCREMENTAL", "0")
        .env("CARGO_TERM_COLOR", "never")
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    outcome(&out)
}

/// The test executable of target `target` (of kind `kind`: "test", "lib") of `package`, from
/// cargo's JSON messages.
fn test_executable(messages: &str, package: &str, kind: &str, target: &str) -> PathBuf {
    messages
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|m| {
            m["reason"] == "compiler-artifact"
                && m["target"]["name"] == target
                && m["target"]["kind"] == serde_json::json!([kind])
                && m["executable"].is_string()
                && m["package_id"].as_str().is_some_and(|id| id.contains(&format!("/{package}#")) || id.contains(&format!("/{package}@")))
        })
        .and_then(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo built no {kind} test {target} of {package}"))
}

/// The units a build's JSON messages say it compiled (not found fresh).
fn compiled_units(messages: &str) -> impl Iterator<Item = serde_json::Value> + '_ {
    messages.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).filter(|v| v["reason"] == "compiler-artifact" && v["fresh"] == false)
}

/// Runs a test binary of the copy from its package folder, as cargo would.
fn run_test(exe: &Path, package_dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(exe).args(args).current_dir(package_dir).env("RUST_BACKTRACE", "0").env_remove("MCPBENCH_TASKS_DIR").output().unwrap();
    outcome(&out)
}

/// The crates a new module changes: `servers` (its code and registry) and every crate that
/// depends on it. The others are byte-identical in the copy.
const CHANGED_CRATES: &[&str] = &["servers", "tasks", "agent", "pipeline"];

/// Gives each changed crate of the copy's workspace a version of its own (see the file's doc).
fn give_the_copy_its_own_versions(ws: &Path) {
    let mut changed = 0;
    for name in CHANGED_CRATES {
        let manifest = ws.join(name).join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else { continue };
        if let Some(line) = text.lines().find(|l| l.starts_with("version = \"") && text.contains("[package]")) {
            let bumped = line.trim_end_matches('"').to_owned() + "-new-module-test\"";
            std::fs::write(&manifest, text.replacen(line, &bumped, 1)).unwrap();
            changed += 1;
        }
    }
    assert_eq!(changed, CHANGED_CRATES.len(), "expected a literal `version = \"…\"` in the Cargo.toml of each of {CHANGED_CRATES:?}");
}

#[test]
fn the_scaffolded_module_compiles_and_passes_the_gates() {
    // <build dir>/<profile>/deps/<this test>: reuse that build dir and profile.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let build_dir = profile_dir.parent().unwrap();
    let profile = profile_dir.file_name().unwrap().to_str().unwrap();
    let profile_args: Vec<&str> = if profile == "debug" { vec![] } else { vec!["--profile", profile] };

    // A stable place, so a second run recompiles nothing it need not.
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("new-module-test");
    let ws = work.join("ws");
    let target = work.join("target");
    if ws.exists() {
        std::fs::remove_dir_all(&ws).unwrap();
    }
    std::fs::create_dir_all(&ws).unwrap();
    copy_sources(&checkout(), &ws);

    let m = fresh_module_name();
    let control = format!("{m}_wrapper");
    let out = pipeline(&["new-module", &m, "--json", "--root", ws.to_str().unwrap()], &ws);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report["module"].as_str(), report["pattern"].as_str(), report["control"].as_str()), (Some(&*m), Some(&*m), Some(&*control)));
    let created: Vec<&str> = report["created"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for expected in [
        format!("servers/src/modules/{m}/mod.rs"),
        format!("servers/src/modules/{m}/pattern.rs"),
        format!("servers/src/modules/{m}/control.rs"),
        format!("servers/tests/it/{m}.rs"),
        format!("tasks/{m}/globex_checkout_down/task.md"),
        format!("tasks/{m}/globex_checkout_down/oracle/{m}.toml"),
        format!("tasks/{m}/globex_checkout_down/oracle/{control}.toml"),
    ] {
        assert!(created.contains(&expected.as_str()) && ws.join(&expected).is_file(), "{expected} not created: {created:?}");
    }
    let registry = std::fs::read_to_string(ws.join("servers/src/registry.rs")).unwrap();
    assert_eq!(registry.matches(&format!("&crate::modules::{m}::MODULE,")).count(), 1);
    // A second run refuses and changes nothing.
    let again = pipeline(&["new-module", &m, "--root", ws.to_str().unwrap()], &ws);
    assert!(!again.status.success() && stderr(&again).contains("already exists"), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(ws.join("servers/src/registry.rs")).unwrap(), registry);

    // Formatted as the project's formatter would write it.
    let mut rust_files: Vec<String> = created.iter().filter(|p| p.ends_with(".rs")).map(|p| (*p).to_owned()).collect();
    rust_files.extend(["servers/src/modules/mod.rs".to_owned(), "servers/src/registry.rs".to_owned(), "servers/tests/it/main.rs".to_owned()]);
    let edited: Vec<&str> = report["edited"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(edited.contains(&"servers/tests/it/main.rs"), "the module's test is not declared in the servers' test binary: {edited:?}");
    let tests_main = std::fs::read_to_string(ws.join("servers/tests/it/main.rs")).unwrap();
    assert_eq!(tests_main.matches(&format!("\nmod {m};\n")).count(), 1, "{tests_main}");
    let rustfmt = std::env::var("CARGO").ok().map(|c| Path::new(&c).with_file_name("rustfmt")).filter(|p| p.is_file()).unwrap_or_else(|| "rustfmt".into());
    let fmt = Command::new(&rustfmt).args(["--check", "--edition", "2024"]).args(&rust_files).current_dir(&ws).output().expect("rustfmt runs");
    assert!(fmt.status.success(), "generated code is not formatted:\n{}", String::from_utf8_lossy(&fmt.stdout));

    give_the_copy_its_own_versions(&ws);
    // The copy is a repository of its own, so its binary embeds the copy's commit (G2 below).
    // The lock file first takes the versions given above, so the build leaves the tree clean.
    cargo(&ws, &target, build_dir, &["update", "--workspace", "--offline"]).unwrap_or_else(|e| panic!("updating the copy's lock file:\n{e}"));
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "the scaffolded copy"]);
    // The same package selection as `cargo nextest run --workspace`, so features unify as they did
    // for this build and every compiled dependency is reused; but only the test targets run
    // below: the integration tests (`it`, one binary per crate, and the gates), not the crates'
    // unit tests or their binaries' (the registry's tests are in `servers`' `it` for this reason).
    // `--test it` names the `it` binary of every crate: the copy also builds those of crates the
    // scaffold leaves alone (printed below). A narrower package selection would resolve features
    // differently from this build and rebuild dependencies instead.
    let targets = ["--test", "task_gates", "--test", "it"];
    let build: Vec<&str> =
        [&["test", "--offline", "--no-run", "--workspace", "--message-format", "json-render-diagnostics"][..], &targets, &profile_args].concat();
    let messages = cargo(&ws, &target, build_dir, &build).unwrap_or_else(|e| panic!("the scaffolded checkout does not compile:\n{e}"));
    // Only the crates the scaffold changed should be compiled: everything else comes from this build.
    let compiled: Vec<String> = compiled_units(&messages)
        .map(|v| v["package_id"].as_str().unwrap_or_default().to_owned())
        .filter(|id| !CHANGED_CRATES.iter().any(|c| id.contains(&format!("/{c}#"))))
        .collect();
    // Not asserted: after a narrower build (`cargo nextest run -p pipeline`) this checkout's
    // build dir lacks some artifacts of the workspace selection, and the copy builds them.
    if !compiled.is_empty() {
        eprintln!("the copy also compiled {} unit(s) the scaffold does not change (not built here for the workspace selection): {compiled:?}", compiled.len());
    }
    // What the test tools and the tests write under the checkout without committing it (an
    // example arm's venv, Python's bytecode) changes nothing a build reads: the same build again
    // compiles nothing (`pipeline/build.rs` once watched whole folders, and rebuilt `pipeline`
    // and every test binary above it).
    for untracked in ["arms/starter_py/.venv/lib/marker", "arms/starter_py/__pycache__/server.cpython-311.pyc", "docs/draft.md"] {
        std::fs::create_dir_all(ws.join(untracked).parent().unwrap()).unwrap();
        std::fs::write(ws.join(untracked), "written by a tool, not committed").unwrap();
    }
    let again = cargo(&ws, &target, build_dir, &build).unwrap_or_else(|e| panic!("the same build again:\n{e}"));
    let recompiled: Vec<String> = compiled_units(&again).map(|v| format!("{} {}", v["package_id"], v["target"]["name"])).collect();
    assert!(recompiled.is_empty(), "untracked files under the checkout rebuilt {recompiled:?}");

    let gates_exe = test_executable(&messages, "pipeline", "test", "task_gates");
    let servers_exe = test_executable(&messages, "servers", "test", "it");

    let gates = run_test(&gates_exe, &ws.join("pipeline"), &["--exact", &format!("gates_{m}")]).unwrap_or_else(|e| panic!("G5/G7 fail:\n{e}"));
    assert!(gates.contains(&format!("test gates_{m} ... ok")) && gates.contains("1 passed"), "{gates}");
    let servers = run_test(&servers_exe, &ws.join("servers"), &[&format!("{m}::")]).unwrap_or_else(|e| panic!("the generated server test fails:\n{e}"));
    assert!(servers.contains("2 passed; 0 failed"), "{servers}");
    let incomplete = run_test(&gates_exe, &ws.join("pipeline"), &["--exact", &format!("eight_tasks_{m}")]).expect_err("one task passes for eight");
    assert!(incomplete.contains(&format!("{m} has 1 dev task(s)")), "{incomplete}");
    // The tests that walk the registry and the listings hold with a sixth module.
    let registry = run_test(&servers_exe, &ws.join("servers"), &["registry::"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(registry.contains("2 passed; 0 failed"), "{registry}");
    // Its tools' schemas are ones every client can fill, like every registered server's.
    let manifests = run_test(&servers_exe, &ws.join("servers"), &["manifest::"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(manifests.contains("0 failed"), "{manifests}");
    let cli = run_test(&test_executable(&messages, "pipeline", "test", "it"), &ws.join("pipeline"), &["cli::"]).unwrap_or_else(|e| panic!("{e}"));
    // Every listing test passes (their count changes as tests are added; none may fail).
    assert!(cli.contains("test result: ok.") && cli.contains(" passed; 0 failed"), "{cli}");

    let bin = target.join(profile).join("pipeline");
    let list = Command::new(&bin).args(["list", "--json"]).current_dir(&ws).output().unwrap();
    assert!(list.status.success(), "{}", stderr(&list));
    let rows: Vec<serde_json::Value> = String::from_utf8(list.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let row = rows.iter().find(|r| r["module"] == *m).expect("the new module is listed");
    assert_eq!(row["id"], "globex_checkout_down");
    assert_eq!(row["oracle_calls"], serde_json::json!({ m.clone(): 1, control.clone(): 2 }));

    // G2 holds the binary, not the work tree: a commit after the build makes the binary stale.
    let spec = work.join("spec.toml");
    let freeze = Command::new(&bin)
        .args(["freeze", "--module", &m, "--models", "oracle", "--out"])
        .arg(&spec)
        .current_dir(&ws)
        .env_remove("MCPBENCH_BUILD_DIR")
        .env_remove("MCPBENCH_TASKS_DIR")
        .output()
        .unwrap();
    assert!(freeze.status.success(), "{}", stderr(&freeze));
    let check = |what: &str| {
        let out = Command::new(&bin)
            .arg("check")
            .arg(&spec)
            .arg("--results-dir")
            .arg(work.join("results"))
            .current_dir(&ws)
            .env_remove("MCPBENCH_BUILD_DIR")
            .env_remove("MCPBENCH_TASKS_DIR")
            .env_remove("DATABASE_URL")
            .output()
            .unwrap();
        (out.status.code(), format!("{what}: {}", stderr(&out)))
    };
    let (code, text) = check("fresh binary");
    assert_eq!(code, Some(0), "{text}");
    std::fs::write(ws.join("README.md"), "a change committed after the build\n").unwrap();
    git(&ws, &["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qam", "after the build"]);
    let (code, text) = check("stale binary");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.lines().any(|l| l.starts_with("G2 build: the work tree is at commit") && l.contains("rebuild")), "{text}");
}

fn git(dir: &Path, args: &[&str]) {
    let s = Command::new("git").arg("-C").arg(dir).args(args).status().unwrap();
    assert!(s.success(), "git {args:?}");
}
