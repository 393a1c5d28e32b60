//! Embeds the migrations (`../migrations/NNNN_description.sql`) in the crate: writes
//! `$OUT_DIR/migrations.rs`, one `include_str!` per file in version order, which `world.rs`
//! turns into sqlx's migrator. What `sqlx::migrate!` did, without its proc-macro crate (which
//! compiles a second copy of sqlx and tokio for the compiler; docs/performance.md).

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // Relative paths only, in what cargo notes and in the generated file: a copy of the
    // checkout (the scaffold test builds one into the same target folder) then finds this
    // build fresh instead of rebuilding it, with its own paths, over the original's artifacts.
    println!("cargo:rerun-if-changed=../migrations");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    let mut found: Vec<(i64, String, String)> = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let path = entry.expect("a migrations folder entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        let Some(stem) = name.strip_suffix(".sql") else {
            panic!("migrations/{name}: only NNNN_description.sql files belong in migrations/");
        };
        let Some((version, description)) = stem.split_once('_').and_then(|(v, d)| Some((v.parse::<i64>().ok()?, d))) else {
            panic!("migrations/{name}: a migration is named NNNN_description.sql (a version number, '_', a description)");
        };
        assert!(
            name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.'),
            "migrations/{name}: a migration's name holds only letters, digits, '_' and its '.sql'"
        );
        assert!(!stem.ends_with(".up") && !stem.ends_with(".down"), "migrations/{name}: reversible migrations are not used here");
        if found.iter().any(|(v, ..)| *v == version) {
            panic!("migrations/{name}: version {version} is used twice");
        }
        found.push((version, description.replace('_', " "), name));
    }
    found.sort();
    let mut out = String::from("&[\n");
    for (version, description, file) in &found {
        writeln!(out, "    ({version}, {description:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/../migrations/{file}\"))),").unwrap();
    }
    out.push_str("]\n");
    let target = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("migrations.rs");
    std::fs::write(&target, out).unwrap_or_else(|e| panic!("writing {}: {e}", target.display()));
}
