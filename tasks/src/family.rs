//! Task families: one template folder, one task per size of the state it works on.
//!
//! A folder holding `family.toml` is a family rather than a task:
//!
//! ```toml
//! sizes = [1, 2, 4, 8, 16]          # one task per size, distinct and ascending
//! [vars]                             # optional values every template sees as `vars.<name>`
//! paths = ["src/main.rs", "src/lib.rs"]
//! ```
//!
//! Its `task.md`, `meta.toml`, `verify.toml`, `oracle/<server>.toml` and optional `seed.sql` are
//! [MiniJinja](https://docs.rs/minijinja) templates rendered once per size with `n` (the size)
//! and `vars`; an undefined name is an error, and each rendered file is then parsed and checked
//! exactly like a plain task's. The instance of size 8 of family `review_notes` is the task
//! `review_notes_n8`, tagged `size_8`. Its sha256 covers the whole template folder (so the
//! sizes too) and its size, so a frozen spec notices a change to either.

use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::load::{FamilyInstance, LoadError, Task, build_task, file_err, folder_hash, folder_id, read};

/// The file that makes a folder a family.
pub const FILE: &str = "family.toml";

/// `family.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilySpec {
    /// The sizes generated, ascending.
    pub sizes: Vec<u32>,
    /// Values the templates see as `vars.<name>`.
    #[serde(default)]
    pub vars: toml::Table,
    /// Holds the whole family out (`split = "held_out"`); the same as writing it in the
    /// template's `meta.toml`, and refused if the two disagree.
    #[serde(default)]
    pub split: Option<records::Split>,
}

impl FamilySpec {
    fn check(&self) -> Result<(), String> {
        if self.sizes.is_empty() {
            return Err("`sizes` is empty: give the sizes to generate, e.g. sizes = [1, 2, 4, 8]".into());
        }
        if self.sizes.contains(&0) {
            return Err("a size must be at least 1".into());
        }
        if self.sizes.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("`sizes` must be distinct and ascending, got {:?}", self.sizes));
        }
        Ok(())
    }
}

/// The tasks generated from the family folder `dir`, by size.
pub fn load_family(module: &str, dir: &Path) -> Result<Vec<Task>, LoadError> {
    let family = folder_id(dir)?;
    let spec_path = dir.join(FILE);
    let spec: FamilySpec = toml::from_str(&read(&spec_path)?).map_err(|e| file_err(&spec_path, e.to_string().trim_end()))?;
    spec.check().map_err(|p| file_err(&spec_path, p))?;
    let folder = folder_hash(dir)?;
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    // Block tags on lines of their own leave no blank lines in the rendered TOML.
    let syntax = minijinja::syntax::SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).keep_trailing_newline(true).build();
    env.set_syntax(syntax.map_err(|e| file_err(&spec_path, e))?);
    spec.sizes
        .iter()
        .map(|&size| {
            let context = minijinja::context! { n => size, vars => minijinja::value::Value::from(minijinja::value::Serde(&spec.vars)) };
            let render = |path: &Path| -> Result<String, LoadError> {
                let template = read(path)?;
                env.render_str(&template, &context).map_err(|e| file_err(path, format!("rendering for n = {size}: {}", describe(&e))))
            };
            let sha256 = instance_hash(&folder, size);
            let mut task = build_task(module, format!("{family}_n{size}"), dir, &render, sha256, Some(FamilyInstance { id: family.clone(), size }))
                .map_err(|e| at_size(e, size))?;
            if let Some(split) = spec.split {
                if !task.meta.split.is_dev() && task.meta.split != split {
                    return Err(file_err(&spec_path, format!("split = \"{split}\" here, but meta.toml says \"{}\": write it in one place", task.meta.split)));
                }
                task.meta.split = split;
            }
            Ok(task)
        })
        .collect()
}

/// A template error with its line, and what led to it when MiniJinja knows.
fn describe(e: &minijinja::Error) -> String {
    let mut text = match e.line() {
        Some(line) => format!("line {line}: {e}"),
        None => e.to_string(),
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// A problem in a rendered file names the size it was rendered for.
fn at_size(e: LoadError, size: u32) -> LoadError {
    match e {
        LoadError::File { path, problem } if !problem.starts_with("rendering for n = ") => {
            LoadError::File { path, problem: format!("(rendered for n = {size}) {problem}") }
        }
        other => other,
    }
}

fn instance_hash(folder: &str, size: u32) -> String {
    let mut h = Sha256::new();
    h.update(folder.as_bytes());
    h.update(b"\0size=");
    h.update(size.to_le_bytes());
    hex::encode(h.finalize())
}
