//! Embeds the commit this binary is built from, and whether tracked files differed from it, so
//! records and gate G2 speak about the binary that runs, not about whatever the work tree holds
//! when it runs. Outside a git work tree both are empty (then G2 refuses to pin the build).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().unwrap_or(&manifest_dir).to_path_buf();
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    // `--no-optional-locks`: a plain `git status` refreshes the index's stat cache and rewrites
    // `.git/index`, which is watched below, so every build would have run this script again.
    let dirty = match git(&["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"]) {
        Some(status) if !commit.is_empty() => (!status.is_empty()).to_string(),
        _ => String::new(),
    };
    println!("cargo:rustc-env=MCPBENCH_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=MCPBENCH_BUILD_DIRTY={dirty}");

    // Run again when the commit moves, the index changes (a file staged, added or removed) or a
    // tracked file may have changed: exactly what the status above reads. Tracked files, not the
    // folders holding them: cargo scans a watched folder for any newer file, and untracked ones
    // (an example arm's venv or node_modules, Python's `__pycache__`, written by the test tools
    // and the tests) rebuilt this crate and everything above it on the next build. A tracked file
    // that is missing is watched all the same, so deleting one counts (cargo treats a missing path
    // as changed until it is back or the deletion is committed).
    let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) else {
        // Outside a git work tree both values are empty whatever the files hold.
        println!("cargo:rerun-if-changed=build.rs");
        return;
    };
    let git_dir = Path::new(&git_dir);
    // Only paths that exist: a missing one is always changed, which rebuilt this crate on every
    // build in a repository without packed refs. A first `packed-refs` comes with a change under
    // `refs/` or to HEAD, which are watched.
    for f in ["HEAD", "index", "packed-refs", "refs"] {
        let path = git_dir.join(f);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    for file in git(&["ls-files", "-z"]).unwrap_or_default().split('\0').filter(|f| !f.is_empty()) {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
    }
}
