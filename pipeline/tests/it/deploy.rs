//! The files in `deploy/`, run as their engines would run them, so what a user copies works as
//! written: the Kubernetes manifests pass the official schemas offline (the pinned
//! `kubernetes-validate` from the venv `.ci/test-tools` installs, which bundles them per
//! Kubernetes version) and a broken copy does not; then the commands the files contain — the
//! Indexed Job's container command and args, the Slurm array script, the CI matrix's shard step
//! — run as N local processes with the variables each engine sets, and the files' own merge
//! commands must report every planned session, all valid. Only the model (to `oracle`, which the
//! files document as the free first run) and where results go are changed, through the
//! variables the files expose, never by editing them. The Dockerfile's default command is the
//! README's main job. What runs in real containers is `.ci/containers`.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The Kubernetes versions the manifests are validated for: the first where every field they use
/// is GA (backoffLimitPerIndex, podFailurePolicy with FailIndex), and the newest the pinned
/// validator bundles.
const KUBERNETES_VERSIONS: [&str; 2] = ["1.33.0", "1.37.0"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn venv_bin(name: &str) -> PathBuf {
    let p = repo().join("target/test-tools/venv/bin").join(name);
    assert!(p.is_file(), "{} is missing: run .ci/test-tools (it installs the pinned Python tools the tests use)", p.display());
    p
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Every document of a YAML file, read by PyYAML (pinned in the same venv) into JSON.
fn yaml_documents(path: &Path) -> Vec<Value> {
    let out = Command::new(venv_bin("python"))
        .args(["-c", "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{} is not YAML: {}", path.display(), text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn yaml_document(path: &Path) -> Value {
    let mut docs = yaml_documents(path);
    assert_eq!(docs.len(), 1, "{}: one document expected", path.display());
    docs.remove(0)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("a list expected: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap_or_else(|| panic!("a string expected: {s}")).to_owned())
        .collect()
}

/// `kubernetes-validate --strict` (unknown fields rejected) for one Kubernetes version.
fn kubernetes_validate(version: &str, files: &[PathBuf]) -> (bool, String) {
    let out = Command::new(venv_bin("kubernetes-validate")).args(["--strict", "-k", version]).args(files).output().unwrap();
    let t = text(&out);
    assert!(!t.contains("Traceback"), "the validator itself failed: {t}");
    (out.status.success(), t)
}

fn kubernetes_manifests() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("deploy/kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_kubernetes_manifests_pass_the_official_schemas_and_broken_copies_do_not() {
    let files = kubernetes_manifests();
    assert!(files.len() >= 3, "the Indexed Job, its merge job and the results claim: {files:?}");
    for version in KUBERNETES_VERSIONS {
        let (ok, out) = kubernetes_validate(version, &files);
        assert!(ok, "Kubernetes {version}: {out}");
        let minor = version.trim_end_matches(".0");
        assert_eq!(out.matches("passed for resource").count(), files.len(), "one resource a file, each checked against {minor}: {out}");
        assert!(out.contains(&format!("against version {minor}")), "{out}");
    }

    // The check can fail: a misspelled field and a value of the wrong type are each rejected,
    // naming the place.
    let job = std::fs::read_to_string(repo().join("deploy/kubernetes/indexed-job.yaml")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let broken = |name: &str, from: &str, to: &str| {
        assert!(job.contains(from), "the manifest no longer holds {from:?}");
        let path = tmp.path().join(name);
        std::fs::write(&path, job.replacen(from, to, 1)).unwrap();
        path
    };
    for (path, says) in [
        (broken("misspelled.yaml", "backoffLimitPerIndex:", "backoffLimitPerIndx:"), "backoffLimitPerIndx"),
        (broken("wrong-type.yaml", "completions: 3", "completions: three"), "spec.completions"),
    ] {
        let (ok, out) = kubernetes_validate(KUBERNETES_VERSIONS[0], std::slice::from_ref(&path));
        assert!(!ok, "{} passed: {out}", path.display());
        assert!(out.contains(says), "{out}");
    }
    // What the schemas cannot see, and docs/deploy.md says: they carry no enumerations, so a
    // value outside a field's documented set passes; only an API server refuses it.
    let (ok, out) = kubernetes_validate(KUBERNETES_VERSIONS[0], &[broken("sideways.yaml", "completionMode: Indexed", "completionMode: Sideways")]);
    assert!(ok, "the pinned schemas now check completionMode's values: update docs/deploy.md ({out})");
}

/// Kubernetes' expansion of `$(VAR)` in a container's command and args: a variable of the
/// container's env is replaced by its value, `$$` is a literal `$`, anything else stays as written.
fn kubernetes_expand(arg: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = arg;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(a) = after.strip_prefix('$') {
            out.push('$');
            rest = a;
            continue;
        }
        if let Some((value, a)) = after.strip_prefix('(').and_then(|a| a.split_once(')')).and_then(|(name, a)| Some((env.get(name)?, a))) {
            out.push_str(value);
            rest = a;
            continue;
        }
        out.push('$');
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A Kubernetes container's command line after expansion, and its env: the literal values it
/// sets, with `overrides` on top (as `kubectl set env` would). Entries from Secrets are left
/// out: the oracle needs no key.
fn kubernetes_container(job: &Value, overrides: &[(&str, &str)]) -> (Vec<String>, BTreeMap<String, String>) {
    let containers = job["spec"]["template"]["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1, "one container a pod");
    let c = &containers[0];
    let mut env = BTreeMap::new();
    for e in c["env"].as_array().into_iter().flatten() {
        if let Some(v) = e["value"].as_str() {
            env.insert(e["name"].as_str().unwrap().to_owned(), v.to_owned());
        } else {
            assert!(e["valueFrom"].is_object(), "{e}");
        }
    }
    for (k, v) in overrides {
        assert!(env.contains_key(*k), "the manifest documents no variable {k}");
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    let line: Vec<String> = strings(&c["command"]).into_iter().chain(strings(&c["args"])).map(|a| kubernetes_expand(&a, &env)).collect();
    assert!(line.iter().all(|a| !a.contains("$(")), "a $(VAR) the container's env does not define: {line:?}");
    (line, env)
}

/// The value after `flag` in a command line.
fn flag<'a>(line: &'a [String], name: &str) -> &'a str {
    let i = line.iter().position(|a| a == name).unwrap_or_else(|| panic!("no {name} in {line:?}"));
    &line[i + 1]
}

/// `pipeline` (or a path ending in it) replaced by the binary under test.
fn pipeline_command(line: &[String]) -> Command {
    assert!(line[0] == "pipeline" || line[0].ends_with("/pipeline"), "{line:?} does not run pipeline");
    let mut c = common::pipeline();
    c.args(&line[1..]).current_dir(repo());
    c
}

/// The merged report's attrition: every planned session of the plan is there and valid — the
/// plan being `--module M --k K` on the model `oracle`, both arms of every task of M.
fn assert_merged_whole(out_dir: &Path, module: &str, k: usize, shards: &[PathBuf]) {
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap()).unwrap();
    let rows = summary["attrition"].as_array().unwrap();
    let sum = |key: &str| rows.iter().map(|r| r[key].as_u64().unwrap()).sum::<u64>() as usize;
    let expected = common::task_count(module) * 2 * k;
    assert_eq!(sum("planned"), expected, "the merge plans the whole plan: {rows:?}");
    assert_eq!(sum("valid"), expected, "every planned session recorded and valid: {rows:?}");
    let recorded: usize = shards.iter().map(|d| common::records(d).len()).sum();
    assert_eq!(recorded, expected, "the shards hold each session once");
    assert!(shards.iter().all(|d| !common::records(d).is_empty()), "no shard is empty");
}

#[test]
fn the_indexed_job_runs_as_kubernetes_runs_it_and_its_merge_job_merges_it() {
    let dir = repo().join("deploy/kubernetes");
    let job = yaml_document(&dir.join("indexed-job.yaml"));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap() as usize;
    assert!(spec["parallelism"].as_u64().unwrap() as usize <= n && spec["backoffLimitPerIndex"].as_u64().is_some(), "{spec}");
    let c = &spec["template"]["spec"]["containers"][0];
    let key = c["env"].as_array().unwrap().iter().find(|e| e["name"] == "OPENAI_API_KEY").expect("the model key");
    assert!(key["value"].is_null() && key["valueFrom"]["secretKeyRef"].is_object(), "the key comes from a Secret, never a literal: {key}");

    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().to_str().unwrap();
    let overrides = [("MCPBENCH_MODELS", "oracle"), ("RESULTS_DIR", results)];
    let (line, env) = kubernetes_container(&job, &overrides);
    assert_eq!(flag(&line, "--shard-count"), n.to_string(), "--shard-count is the Job's completions");
    let mounts = c["volumeMounts"].as_array().unwrap();
    let (_, default_env) = kubernetes_container(&job, &[]);
    assert!(mounts.iter().any(|m| m["mountPath"] == default_env["RESULTS_DIR"].as_str()), "results go to a mounted volume: {mounts:?}");

    // N pods at once, each told its index as an Indexed Job tells it.
    let children: Vec<_> = (0..n)
        .map(|i| {
            let mut c = pipeline_command(&line);
            c.envs(&env).env("JOB_COMPLETION_INDEX", i.to_string()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    let exp = flag(&line, "--exp-name").to_owned();
    let mut shards = Vec::new();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(0), "index {i}: {t}");
        assert!(t.contains(&format!("shard {}/{n} of the plan (from kubernetes)", i + 1)), "{t}");
        shards.push(tmp.path().join(format!("{exp}_shard{}of{n}", i + 1)));
    }

    let merge = yaml_document(&dir.join("merge-job.yaml"));
    let (merge_line, merge_env) = kubernetes_container(&merge, &[("RESULTS_DIR", results)]);
    let parts: Vec<String> = flag(&merge_line, "--merge").split(',').map(str::to_owned).collect();
    assert_eq!(parts, (1..=n).map(|i| format!("{exp}_shard{i}of{n}")).collect::<Vec<_>>(), "the merge job lists exactly the Job's shards");
    let out = pipeline_command(&merge_line).envs(&merge_env).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_merged_whole(Path::new(flag(&merge_line, "--out")), flag(&line, "--module"), flag(&line, "--k").parse().unwrap(), &shards);
}

/// The ids of `#SBATCH --array=A-B[:S][%P]`.
fn slurm_array_ids(script: &str) -> Vec<u64> {
    let spec = script.lines().find_map(|l| l.strip_prefix("#SBATCH --array=")).expect("an #SBATCH --array= line");
    let range = spec.split('%').next().unwrap();
    let (range, step) = range.split_once(':').map_or((range, 1), |(r, s)| (r, s.parse().unwrap()));
    let (a, b) = range.split_once('-').unwrap_or_else(|| panic!("--array={spec}: this test reads A-B[:S] only"));
    (a.parse().unwrap()..=b.parse().unwrap()).step_by(step as usize).collect()
}

#[test]
fn the_slurm_array_runs_as_slurm_runs_it_and_merge_sbatch_merges_it() {
    let dir = repo().join("deploy/slurm");
    let script = std::fs::read_to_string(dir.join("array.sbatch")).unwrap();
    let ids = slurm_array_ids(&script);
    let n = ids.len();
    let cpus = script.lines().find_map(|l| l.strip_prefix("#SBATCH --cpus-per-task=")).unwrap_or("1");
    let tmp = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_pipeline");
    // What sbatch exports to every array task, and what the script documents it reads.
    let common_env = |c: &mut Command| {
        c.env_remove("DATABASE_URL")
            .env("RUST_LOG", "warn")
            .env("SLURM_SUBMIT_DIR", repo())
            .env("PIPELINE", bin)
            .env("RESULTS_DIR", tmp.path())
            .env("MCPBENCH_MODELS", "oracle");
    };
    let children: Vec<_> = ids
        .iter()
        .map(|id| {
            let mut c = Command::new("bash");
            c.arg(dir.join("array.sbatch")).current_dir(tmp.path());
            common_env(&mut c);
            c.env("SLURM_JOB_ID", format!("{}", 900 + id))
                .env("SLURM_ARRAY_JOB_ID", "900")
                .env("SLURM_ARRAY_TASK_ID", id.to_string())
                .env("SLURM_ARRAY_TASK_MIN", ids[0].to_string())
                .env("SLURM_ARRAY_TASK_MAX", ids[n - 1].to_string())
                .env("SLURM_ARRAY_TASK_COUNT", n.to_string())
                .env("SLURM_ARRAY_TASK_STEP", if n > 1 { (ids[1] - ids[0]).to_string() } else { "1".into() })
                .env("SLURM_CPUS_PER_TASK", cpus)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(0), "array task {}: {t}", ids[i]);
        assert!(t.contains(&format!("shard {}/{n} of the plan (from slurm)", i + 1)), "{t}");
    }

    let mut c = Command::new("bash");
    c.arg(dir.join("merge.sbatch")).current_dir(tmp.path());
    common_env(&mut c);
    let out = c.env("SLURM_JOB_ID", "904").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let exp = "tool_orchestrator_k3";
    assert!(script.contains(&format!("--module tool_orchestrator --k 3 --exp-name {exp} ")), "the plan this test checks is the script's");
    let shards: Vec<PathBuf> = (1..=n).map(|i| tmp.path().join(format!("{exp}_shard{i}of{n}"))).collect();
    assert_merged_whole(&tmp.path().join(format!("{exp}_merged")), "tool_orchestrator", 3, &shards);
}

/// A step's shell script, found by the start of its name.
fn workflow_step<'a>(workflow: &'a Value, job: &str, name: &str) -> &'a Value {
    workflow["jobs"][job]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with(name)))
        .unwrap_or_else(|| panic!("no step {name:?} in job {job}"))
}

#[test]
fn the_ci_matrix_runs_its_shards_and_its_merge_job_merges_them() {
    let workflow = yaml_document(&repo().join("deploy/ci/github-actions-matrix.yml"));
    let shards_list: Vec<u64> = workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let n = shards_list.len();
    assert_eq!(shards_list, (1..=n as u64).collect::<Vec<_>>(), "the matrix lists shards 1 … N");
    let run = workflow_step(&workflow, "shard", "Run shard")["run"].as_str().unwrap().to_owned();
    let upload = &workflow_step(&workflow, "shard", "Upload")["with"];
    let merge = workflow_step(&workflow, "merge", "Merge")["run"].as_str().unwrap().to_owned();
    let download = &workflow_step(&workflow, "merge", "Download")["with"];
    assert_eq!(workflow["jobs"]["merge"]["needs"], "shard");
    assert!(workflow["env"]["MCPBENCH_MODELS"].is_string(), "the model is the workflow's MCPBENCH_MODELS");

    // A checkout whose Build step has run: target/debug/pipeline, and the tasks.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("target/debug")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_pipeline"), tmp.path().join("target/debug/pipeline")).unwrap();
    std::os::unix::fs::symlink(repo().join("tasks"), tmp.path().join("tasks")).unwrap();
    let bash = |script: &str| {
        assert!(!script.contains("${{"), "an expression this test does not stand in for: {script}");
        let mut c = Command::new("bash");
        c.args(["-e", "-c", script]).current_dir(tmp.path()).env_remove("DATABASE_URL").env("RUST_LOG", "warn").env("MCPBENCH_MODELS", "oracle");
        c
    };
    let children: Vec<_> = shards_list
        .iter()
        .map(|i| {
            bash(&run.replace("${{ matrix.shard }}", &i.to_string())).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
        })
        .collect();
    let mut shards = Vec::new();
    for (i, child) in shards_list.iter().zip(children) {
        let out = child.wait_with_output().unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(0), "shard {i}: {t}");
        assert!(t.contains(&format!("shard {i}/{n} of the plan (from flag)")), "{t}");
        // What the upload step sends, the download step puts back at the same path: an
        // artifact named after the folder, downloaded into results/<artifact name>.
        let name = upload["name"].as_str().unwrap().replace("${{ matrix.shard }}", &i.to_string());
        assert_eq!(upload["path"].as_str().unwrap().replace("${{ matrix.shard }}", &i.to_string()), format!("results/{name}"));
        let pattern = download["pattern"].as_str().unwrap();
        assert!(name.starts_with(pattern.trim_end_matches('*')), "{name} is downloaded by {pattern}");
        assert_eq!(download["path"], "results");
        let folder = tmp.path().join("results").join(&name);
        assert!(folder.join("manifest.json").is_file(), "{name}: the run wrote {}", folder.display());
        shards.push(folder);
    }
    let out = bash(&merge).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let words: Vec<String> = run.split_whitespace().map(str::to_owned).collect();
    let out_dir = tmp.path().join(flag(&merge.split_whitespace().map(str::to_owned).collect::<Vec<_>>(), "--out"));
    assert_merged_whole(&out_dir, flag(&words, "--module"), flag(&words, "--k").parse().unwrap(), &shards);
}

/// The words of a Dockerfile's exec-form instruction (`CMD ["a", "b"]`).
fn exec_form(dockerfile: &str, instruction: &str) -> Vec<String> {
    let line = dockerfile.lines().rev().find_map(|l| l.strip_prefix(&format!("{instruction} "))).unwrap_or_else(|| panic!("no {instruction}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{instruction} {line}: not the exec form ({e})"))
}

#[test]
fn the_images_default_command_is_the_readmes_main_job_and_the_manifests_use_the_image() {
    let dockerfile = std::fs::read_to_string(repo().join("Dockerfile")).unwrap();
    let image_line: Vec<String> = exec_form(&dockerfile, "ENTRYPOINT").into_iter().chain(exec_form(&dockerfile, "CMD")).collect();
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let main_job = readme.lines().find(|l| l.contains("# the main job")).expect("the README's main job line");
    let main_job: Vec<String> = main_job.split('#').next().unwrap().split_whitespace().map(str::to_owned).collect();
    let (cargo_run, args) = main_job.split_at(4);
    assert_eq!(cargo_run, ["cargo", "run", "-p", "pipeline"]);
    assert_eq!(args[0], "--");
    assert_eq!(image_line[0], "pipeline");
    assert_eq!(image_line[1..], args[1..], "the image's default command is the README's main job");

    // The image the manifests run is the one the Dockerfile says to build.
    let tag = dockerfile.lines().find_map(|l| l.trim_start_matches('#').trim().strip_prefix("docker build -t ")).expect("how to build the image");
    let tag = tag.split_whitespace().next().unwrap();
    for file in kubernetes_manifests() {
        for doc in yaml_documents(&file).iter().filter(|d| d["kind"] == "Job") {
            let image = doc["spec"]["template"]["spec"]["containers"][0]["image"].as_str().unwrap();
            assert!(image == tag || image.starts_with(&format!("{tag}:")), "{}: {image} is not the Dockerfile's {tag}", file.display());
            let user = doc["spec"]["template"]["spec"]["securityContext"]["runAsUser"].as_u64().unwrap();
            assert!(dockerfile.contains(&format!("USER {user}:")), "{}: runs as {user}, the image's user", file.display());
        }
    }
}
