//! Shared helpers of the pipeline's binary tests.
#![allow(dead_code)]

use std::path::Path;

/// Session records (not the experiment's own manifests or reports) under the experiment folder.
pub fn records(exp: &Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let Ok(arms) = std::fs::read_dir(exp) else { return out };
    for arm in arms.flatten().filter(|e| e.path().is_dir()) {
        for f in std::fs::read_dir(arm.path()).unwrap().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") && !name.starts_with('.') {
                out.push(serde_json::from_str(&std::fs::read_to_string(f.path()).unwrap()).unwrap());
            }
        }
    }
    out
}
