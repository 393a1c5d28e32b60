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

/// A single-node Slurm (Debian's `slurm-wlm`, installed by `.ci/test-tools`): `slurmctld` and
/// `slurmd` in the foreground with `auth/none` and no munge, on ports of their own, state in a
/// temporary folder; both killed when dropped.
struct Slurm {
    conf: PathBuf,
    daemons: Vec<std::process::Child>,
    dir: PathBuf,
}

impl Slurm {
    fn start(dir: &Path) -> Self {
        for bin in ["/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch", "/usr/bin/squeue"] {
            assert!(Path::new(bin).exists(), "{bin} is missing: run .ci/test-tools (it installs Debian's slurm-wlm for this test)");
        }
        let out = |cmd: &str, args: &[&str]| String::from_utf8(Command::new(cmd).args(args).output().unwrap().stdout).unwrap().trim().to_owned();
        let (host, user) = (out("hostname", &["-s"]), out("id", &["-un"]));
        // The node's memory as slurmd will find it (a little under, so it is not drained), in MB:
        // the scripts ask for theirs (`--mem`).
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        let kb: u64 = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:")).and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse().ok()).unwrap();
        let memory = kb / 1024 * 9 / 10;
        for sub in ["state", "spool", "log"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let d = dir.display();
        let conf = dir.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=bench\nSlurmctldHost={host}(127.0.0.1)\nAuthType=auth/none\nCredType=cred/none\nProctrackType=proctrack/linuxproc\n\
                 TaskPlugin=task/none\nSchedulerType=sched/backfill\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n\
                 SlurmctldPort={}\nSlurmdPort={}\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
                 SlurmctldPidFile={d}/ctld.pid\nSlurmdPidFile={d}/d.pid\nSlurmctldLogFile={d}/log/ctld.log\nSlurmdLogFile={d}/log/d.log\n\
                 SlurmUser={user}\nSlurmdUser={user}\nMpiDefault=none\nReturnToService=2\nJobCompType=jobcomp/none\n\
                 AccountingStorageType=accounting_storage/none\nNodeName={host} NodeAddr=127.0.0.1 CPUs=2 RealMemory={memory} State=UNKNOWN\n\
                 PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
                common::closed_port(),
                common::closed_port()
            ),
        )
        .unwrap();
        let daemon = |bin: &str| {
            Command::new(bin).args(["-D", "-f"]).arg(&conf).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap()
        };
        let slurm = Self { daemons: vec![daemon("/usr/sbin/slurmctld"), daemon("/usr/sbin/slurmd")], conf, dir: dir.to_owned() };
        // Up when the node is idle.
        let started = std::time::Instant::now();
        while !slurm.cmd("sinfo").args(["-h", "-o", "%t"]).output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle") {
            assert!(started.elapsed().as_secs() < 60, "Slurm did not come up: {}", std::fs::read_to_string(dir.join("log/ctld.log")).unwrap_or_default());
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        slurm
    }

    fn cmd(&self, bin: &str) -> Command {
        let mut c = Command::new(bin);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// Submits `script` from `submit_dir` with `args`; returns the job id.
    fn sbatch(&self, submit_dir: &Path, script: &Path, args: &[&str]) -> String {
        let out = self
            .cmd("sbatch")
            .arg("--parsable")
            .arg(format!("--output={}/slurm-%A_%a.out", self.dir.join("log").display()))
            .args(args)
            .arg(script)
            .current_dir(submit_dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "sbatch: {}", text(&out));
        String::from_utf8(out.stdout).unwrap().trim().split(';').next().unwrap().to_owned()
    }

    /// Waits until no job is queued or running.
    fn drain(&self) {
        let started = std::time::Instant::now();
        loop {
            let out = self.cmd("squeue").args(["-h", "-o", "%i %T"]).output().unwrap();
            if String::from_utf8_lossy(&out.stdout).trim().is_empty() {
                return;
            }
            assert!(started.elapsed().as_secs() < 300, "jobs still queued: {}", String::from_utf8_lossy(&out.stdout));
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for d in &mut self.daemons {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

/// `array.sbatch` and `merge.sbatch` under a real Slurm: the array runs as Slurm runs it, the
/// merge waits on it (`--dependency=afterany`), and the merged report holds the whole plan. Then
/// a node failure: one shard's folder is lost, only its id is resubmitted (`--array=1`), and the
/// merge is whole again.
#[test]
fn the_slurm_array_runs_under_a_real_slurm_and_a_failed_shard_is_resubmitted_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let slurm = Slurm::start(&tmp.path().join("slurm"));
    let results = tmp.path().join("results");
    let dir = repo().join("deploy/slurm");
    let exports = format!("--export=ALL,PIPELINE={},RESULTS_DIR={},MCPBENCH_MODELS=oracle,RUST_LOG=warn", env!("CARGO_BIN_EXE_pipeline"), results.display());
    let array = slurm.sbatch(&repo(), &dir.join("array.sbatch"), &[&exports]);
    slurm.sbatch(&repo(), &dir.join("merge.sbatch"), &[&exports, &format!("--dependency=afterany:{array}")]);
    slurm.drain();
    let script = std::fs::read_to_string(dir.join("array.sbatch")).unwrap();
    let n = slurm_array_ids(&script).len();
    let exp = "tool_orchestrator_k3";
    let shards: Vec<PathBuf> = (1..=n).map(|i| results.join(format!("{exp}_shard{i}of{n}"))).collect();
    let logs = || {
        std::fs::read_dir(tmp.path().join("slurm/log"))
            .unwrap()
            .flatten()
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(results.join(format!("{exp}_merged/summary.json")).exists(), "no merged report; the jobs said:\n{}", logs());
    assert_merged_whole(&results.join(format!("{exp}_merged")), "tool_orchestrator", 3, &shards);

    // The node that ran shard 2 (array id 1) failed and its folder is gone: resubmit that id alone.
    std::fs::remove_dir_all(&shards[1]).unwrap();
    std::fs::remove_dir_all(results.join(format!("{exp}_merged"))).unwrap();
    let again = slurm.sbatch(&repo(), &dir.join("array.sbatch"), &[&exports, "--array=1"]);
    slurm.sbatch(&repo(), &dir.join("merge.sbatch"), &[&exports, &format!("--dependency=afterany:{again}")]);
    slurm.drain();
    assert!(results.join(format!("{exp}_merged/summary.json")).exists(), "no merged report after the resubmission; the jobs said:\n{}", logs());
    assert_merged_whole(&results.join(format!("{exp}_merged")), "tool_orchestrator", 3, &shards);
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
