//! The commit this binary was built from, embedded by `build.rs`.

use serde::Serialize;

/// A build: its commit and whether its tracked files differed from it (both unknown outside a
/// git work tree).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuildInfo {
    pub commit: Option<String>,
    pub dirty: Option<bool>,
}

impl BuildInfo {
    /// The running binary's build.
    pub fn binary() -> Self {
        let commit = option_env!("MCPBENCH_BUILD_COMMIT").filter(|c| !c.is_empty()).map(str::to_owned);
        let dirty = match option_env!("MCPBENCH_BUILD_DIRTY") {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        };
        Self { commit, dirty }
    }

    /// The work tree at `dir` (or the current directory): its commit and whether tracked files
    /// differ from it.
    pub fn work_tree(dir: Option<&std::path::Path>) -> Self {
        let run = |args: &[&str]| {
            let mut c = std::process::Command::new("git");
            if let Some(d) = dir {
                c.arg("-C").arg(d);
            }
            c.args(args).output().ok().filter(|o| o.status.success())
        };
        let commit = run(&["rev-parse", "HEAD"]).map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
        let dirty = commit.as_ref().and(run(&["status", "--porcelain", "--untracked-files=no"])).map(|o| !o.stdout.is_empty());
        Self { commit, dirty }
    }
}

/// `pipeline --version`: the package version and the commit the binary was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("MCPBENCH_BUILD_COMMIT"), ", dirty: ", env!("MCPBENCH_BUILD_DIRTY"), ")");
