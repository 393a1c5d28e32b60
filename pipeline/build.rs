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
    let dirty = match git(&["status", "--porcelain", "--untracked-files=no"]) {
        Some(status) if !commit.is_empty() => (!status.is_empty()).to_string(),
        _ => String::new(),
    };
    println!("cargo:rustc-env=MCPBENCH_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=MCPBENCH_BUILD_DIRTY={dirty}");

    // Run again when the commit moves or a tracked file may have changed. Directories are scanned
    // by cargo for any modified file; target/ is deliberately not among them.
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let git_dir = Path::new(&git_dir);
        // Only paths that exist: cargo treats a missing one as always changed, which rebuilt
        // this crate on every build in a repository without packed refs. A first `packed-refs`
        // comes with a change under `refs/` or to HEAD, which are watched.
        for f in ["HEAD", "index", "packed-refs", "refs"] {
            let path = git_dir.join(f);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name != ".ci" && name != ".config" || name == "target" || name == "results" {
            continue;
        }
        println!("cargo:rerun-if-changed={}", entry.path().display());
    }
}
