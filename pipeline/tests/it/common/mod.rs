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

pub mod chromium;
pub mod fake_model;
pub mod fixture;
pub mod provider_fakes;

/// The pipeline binary, with no ambient database, model defaults or noisy logs.
pub fn pipeline() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_pipeline"));
    c.env_remove("DATABASE_URL")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("MCPBENCH_MODELS")
        .env_remove("MCPBENCH_TASKS_DIR")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_HEADERS")
        .env_remove("OTEL_EXPORTER_OTLP_TIMEOUT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        .env("RUST_LOG", "warn")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// A loopback port nothing listens on (bound, then let go): a collector or server that is down.
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Every file under `dir`, recursively, with its bytes.
pub fn all_files(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(all_files(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out
}

/// The experiment's manifest.json.
pub fn manifest(exp: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(exp.join("manifest.json")).unwrap()).unwrap()
}

/// Copies a folder tree (a module's tasks, to edit one in a test).
pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let to = dst.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// How many tasks a module has (its eight and its families' instances), as a run loads them.
pub fn task_count(module: &str) -> usize {
    tasks::load_module(&tasks::default_tasks_dir(), module).unwrap().len()
}

/// The module's dev tasks (what a sweep runs by default), family instances included.
pub fn dev_task_count(module: &str) -> usize {
    tasks::load_module(&tasks::default_tasks_dir(), module).unwrap().iter().filter(|t| t.meta.split == records::Split::Dev).count()
}
