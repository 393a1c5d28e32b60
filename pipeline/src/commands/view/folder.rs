//! What is in the results folder, read from its listing: experiments at the top, and folders of
//! experiments one level down (a sweep's levels, or experiments a user grouped by hand). A name
//! from a URL is only ever looked up in these listings — never joined onto a path as given — so
//! `..`, an absolute path or a name the listing does not hold reaches nothing.

use std::path::{Path, PathBuf};

/// One experiment: `name` at the top of the results folder, or `group/name` one level down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpRef {
    pub id: String,
    pub dir: PathBuf,
}

/// A folder that is no experiment but holds experiments: a sweep (its levels) or a user's group.
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub dir: PathBuf,
    /// `scale`, `size` or `catalogue` when every level is named `<factor><N>` (how `pipeline
    /// sweep` names them).
    pub factor: Option<&'static str>,
    pub levels: Vec<ExpRef>,
}

/// The results folder's experiments and groups.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub experiments: Vec<ExpRef>,
    pub groups: Vec<Group>,
}

/// One path component as a listing can hold it: not empty, not `.` or `..`, no separator, no
/// NUL, not hidden (a run's lock and temporary files start with a dot).
pub fn plain_component(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\', '\0'])
}

/// An experiment folder: it has a plan (`manifest.json`), or — written before manifests —
/// `<model>__<server>/` record folders (the layout `aggregate` reads).
pub fn is_experiment(dir: &Path) -> bool {
    dir.join(records::manifest::FILE).is_file() || subdirs(dir).iter().any(|(name, _)| name.contains("__"))
}

/// `dir`'s sub-folders that a listing shows (plain names), sorted by name.
fn subdirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            (plain_component(&name) && e.path().is_dir()).then(|| (name, e.path()))
        })
        .collect();
    out.sort();
    out
}

impl Listing {
    /// Reads the listing of `results` (nothing is opened for writing).
    pub fn read(results: &Path) -> Self {
        let mut listing = Self::default();
        for (name, dir) in subdirs(results) {
            if is_experiment(&dir) {
                listing.experiments.push(ExpRef { id: name, dir });
                continue;
            }
            let levels: Vec<ExpRef> =
                subdirs(&dir).into_iter().filter(|(_, d)| is_experiment(d)).map(|(level, d)| ExpRef { id: format!("{name}/{level}"), dir: d }).collect();
            if levels.is_empty() {
                continue;
            }
            let factor = ["scale", "size", "catalogue", "distractors"].into_iter().find(|f| levels.iter().all(|l| level_number(l, f).is_some()));
            let mut group = Group { name, dir, factor, levels };
            if let Some(f) = group.factor {
                group.levels.sort_by_key(|l| level_number(l, f));
            }
            listing.groups.push(group);
        }
        listing
    }

    /// The experiment `id` names, if the listing holds it.
    pub fn find(&self, id: &str) -> Option<&ExpRef> {
        self.experiments.iter().chain(self.groups.iter().flat_map(|g| &g.levels)).find(|e| e.id == id)
    }

    pub fn all(&self) -> impl Iterator<Item = &ExpRef> {
        self.experiments.iter().chain(self.groups.iter().flat_map(|g| &g.levels))
    }

    /// Splits a URL path (already percent-decoded) into the experiment it starts with and the
    /// rest: `exp/…` or `group/exp/…`. `None` when no experiment of the listing starts it.
    pub fn split<'a>(&self, path: &'a str) -> Option<(&ExpRef, &'a str)> {
        let mut parts = path.splitn(3, '/');
        let first = parts.next().filter(|c| plain_component(c))?;
        let rest_after = |n: usize| path.splitn(n + 1, '/').nth(n).unwrap_or("");
        if let Some(e) = self.experiments.iter().find(|e| e.id == first) {
            return Some((e, rest_after(1)));
        }
        let second = parts.next().filter(|c| plain_component(c))?;
        let id = format!("{first}/{second}");
        self.groups.iter().flat_map(|g| &g.levels).find(|e| e.id == id).map(|e| (e, rest_after(2)))
    }
}

fn level_number(e: &ExpRef, factor: &str) -> Option<u32> {
    e.id.rsplit('/').next()?.strip_prefix(factor)?.parse().ok()
}

/// A file of an experiment that a report links to, by its path relative to the experiment
/// folder: a record or transcript in a `<model>__<server>/` folder (or its `superseded/`), or the
/// manifest. Every component is checked; the file must exist as a regular file.
pub fn record_file(exp: &Path, rel: &str) -> Option<PathBuf> {
    let parts: Vec<&str> = rel.split('/').collect();
    if !parts.iter().all(|c| plain_component(c)) {
        return None;
    }
    let ok = match parts.as_slice() {
        [file] => *file == records::manifest::FILE,
        [arm, file] => arm.contains("__") && data_file(file),
        [arm, sub, file] => arm.contains("__") && *sub == crate::experiment::SUPERSEDED && data_file(file),
        _ => false,
    };
    let path = parts.iter().fold(exp.to_path_buf(), |p, c| p.join(c));
    (ok && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file())).then_some(path)
}

fn data_file(name: &str) -> bool {
    name.ends_with(".json") || name.ends_with(".transcript.jsonl")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_urls_reach_only_what_the_listing_holds() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("exp/m__s")).unwrap();
        std::fs::write(r.join("exp/manifest.json"), "{}").unwrap();
        std::fs::write(r.join("exp/m__s/t__rep1.json"), "{}").unwrap();
        std::fs::create_dir_all(r.join("sw/scale2")).unwrap();
        std::fs::write(r.join("sw/scale2/manifest.json"), "{}").unwrap();
        std::fs::create_dir_all(r.join("sw/scale10")).unwrap();
        std::fs::write(r.join("sw/scale10/manifest.json"), "{}").unwrap();
        std::fs::create_dir_all(r.join("empty")).unwrap();
        let l = Listing::read(r);
        assert_eq!(l.experiments.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["exp"]);
        assert_eq!(l.groups.len(), 1);
        assert_eq!(l.groups[0].factor, Some("scale"));
        assert_eq!(l.groups[0].levels.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["sw/scale2", "sw/scale10"]);
        assert_eq!(l.split("exp/report.html").map(|(e, rest)| (e.id.as_str(), rest)), Some(("exp", "report.html")));
        assert_eq!(l.split("exp").map(|(e, rest)| (e.id.as_str(), rest)), Some(("exp", "")));
        assert_eq!(l.split("sw/scale2/").map(|(e, rest)| (e.id.as_str(), rest)), Some(("sw/scale2", "")));
        for bad in ["..", "../exp", "/exp", "exp/..", "", ".", "sw", "sw/..", "sw/../exp", "empty", "nope", "%2e%2e"] {
            assert!(l.find(bad).is_none(), "{bad}");
        }
        for bad in ["..", "/etc/passwd", "", "sw", "sw/x", ".lock/x"] {
            assert!(l.split(bad).is_none(), "{bad}");
        }
        let exp = r.join("exp");
        assert!(record_file(&exp, "m__s/t__rep1.json").is_some());
        assert!(record_file(&exp, "manifest.json").is_some());
        for bad in ["../exp/manifest.json", "m__s/../manifest.json", "/etc/passwd", "m__s/.x.json", "m__s/t__rep1.txt", "other/x.json", "m__s/nope.json"] {
            assert!(record_file(&exp, bad).is_none(), "{bad}");
        }
    }
}
