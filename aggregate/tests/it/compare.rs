//! Two experiments side by side: cells compared only where the records are one measurement
//! outside the declared difference.

use std::path::{Path, PathBuf};

use crate::common::*;
use aggregate::AggregateError;
use aggregate::compare::{CellMetrics, compare};
use records::{SessionRecord, Verdict as V};

fn named(name: &'static str) -> impl Fn(SessionRecord) -> SessionRecord {
    move |mut r| {
        r.experiment = name.into();
        fingerprinted(r)
    }
}

fn two(root: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = (root.join("a"), root.join("b"));
    pairs(&a, "m", &["t1", "t2"], 1..=3, named("a"));
    pairs(&b, "m", &["t1", "t2"], 1..=3, named("b"));
    (a, b)
}

#[test]
fn repeats_of_one_plan_compare_cell_by_cell() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = two(root.path());
    let c = compare(&a, &b, &[], &opts()).unwrap();
    assert_eq!(c.cells.len(), 1);
    assert!(c.refused.is_empty() && c.differences.is_empty());
    let cell = &c.cells[0];
    assert_eq!((cell.module.as_str(), cell.model_a.as_str(), cell.tasks), ("m1", "m", 2));
    let CellMetrics::Model(ma) = &cell.a else { panic!() };
    assert_eq!(ma.paired.pairs_used, 6);
    let md = c.markdown();
    assert!(md.contains("# mcp-pattern-bench comparison — A: a · B: b"), "{md}");
    assert!(md.contains("no difference across the experiments is computed or tested"));
    // Two tasks: a pass rate over the tasks such a set stands for rests on one degree of freedom.
    assert!(md.contains("| pattern: success rate [Wilson 95%] | 100.0% (6/6) [6.0%, 100.0%] | 100.0% (6/6) [6.0%, 100.0%] |"), "{md}");

    let out = root.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let written = c.write(&out).unwrap();
    assert!(written.iter().all(|p| p.is_file()));
    let html = std::fs::read_to_string(&written[2]).unwrap();
    assert!(html.contains("<meta name=\"viewport\"") && !html.contains("://") && html.contains("<div class=\"table-wrap\"><table>"));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&written[1]).unwrap()).unwrap();
    assert_eq!(json["schema"], "mcp-pattern-bench/aggregate-compare/v1");
    assert_eq!(json["cells"][0]["a"]["kind"], "model");
}

#[test]
fn an_undeclared_difference_is_refused_and_a_declared_one_compared() {
    let root = tempfile::tempdir().unwrap();
    let a = root.path().join("a");
    let b = root.path().join("b");
    pairs(&a, "m", &["t1"], 1..=3, named("a"));
    pairs(&b, "m", &["t1"], 1..=3, |r| with_fingerprint(named("b")(r), |f| f.model.temperature = Some(records::Temperature::Value(1.0))));

    let e = compare(&a, &b, &[], &opts()).unwrap_err();
    assert!(matches!(e, AggregateError::Uncomparable { .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains("temperature: 0.0 vs 1.0") && text.contains("not a declared difference (--along)"), "{text}");
    assert!(text.contains("a/m__m1_") && text.contains("b/m__m1_"), "one file of each side: {text}");

    let c = compare(&a, &b, &["temperature".into()], &opts()).unwrap();
    assert_eq!(c.cells.len(), 1);
    let found: Vec<String> = c.differences.iter().map(ToString::to_string).collect();
    assert_eq!(found, ["temperature: 0.0 vs 1.0"]);
    assert!(
        c.markdown().contains("Declared difference (--along): temperature. Found in the compared cells: temperature 0.0 (A) vs 1.0 (B)."),
        "{}",
        c.markdown()
    );

    let e = compare(&a, &b, &["temprature".into()], &opts()).unwrap_err();
    assert!(e.to_string().contains("--along temprature: not a fingerprint field; the fields are model_id, provider, temperature"), "{e}");
}

#[test]
fn cells_over_other_tasks_or_only_on_one_side_are_refused_with_why() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    pairs(&a, "m", &["t1", "t2"], 1..=2, named("a"));
    pairs(&b, "m", &["t1"], 1..=2, named("b"));
    // Module m2 only in A, compared nowhere; a cell that does match is still compared.
    for rep in 1..=2 {
        for role in ["pattern", "control"] {
            let mut r = named("a")(record("m", "m2", role, "t1", rep, ok(V::Passed, 100, 2)));
            r.manifest_sha256 = format!("{role}-m2");
            write(&a, &fingerprinted(r), false);
            let mut r = named("b")(record("m", "m2", role, "t1", rep, ok(V::Failed, 100, 2)));
            r.manifest_sha256 = format!("{role}-m2");
            write(&b, &fingerprinted(r), false);
        }
    }
    let mut r = named("a")(record("m", "m3", "pattern", "t1", 1, ok(V::Passed, 1, 1)));
    r.manifest_sha256 = "m3".into();
    write(&a, &fingerprinted(r), false);
    let c = compare(&a, &b, &[], &opts()).unwrap();
    assert_eq!(c.cells.iter().map(|c| c.module.as_str()).collect::<Vec<_>>(), ["m2"]);
    let why = |m: &str| c.refused.iter().find(|r| r.module == m).map(|r| r.reason.clone()).unwrap();
    assert!(why("m1").contains("different tasks (only in A: t2; only in B: none)"), "{}", why("m1"));
    assert!(why("m3").starts_with("only in A"), "{}", why("m3"));
    assert!(c.markdown().contains("## Not compared\n\n- **m1** (model `m`): the experiments cover different tasks"), "{}", c.markdown());
}

#[test]
fn along_model_id_pairs_the_one_model_of_each_side() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    pairs(&a, "m", &["t1"], 1..=2, named("a"));
    pairs(&b, "n", &["t1"], 1..=2, named("b"));
    let e = compare(&a, &b, &[], &opts()).unwrap_err();
    assert!(e.to_string().contains("they share no model"), "{e}");
    let c = compare(&a, &b, &["model_id".into()], &opts()).unwrap();
    assert_eq!((c.cells[0].model_a.as_str(), c.cells[0].model_b.as_str()), ("m", "n"));
    assert!(c.markdown().contains("### m1 — model `m` (A) vs `n` (B), 1 tasks"), "{}", c.markdown());
}

#[test]
fn records_without_fingerprints_are_not_compared() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    pairs(&a, "m", &["t1"], 1..=2, named("a"));
    pairs(&b, "m", &["t1"], 1..=2, |r| r);
    let e = compare(&a, &b, &[], &opts()).unwrap_err();
    assert!(e.to_string().contains("its records have no fingerprints"), "{e}");
}

#[test]
fn oracle_runs_compare_their_floors() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    for (dir, name, scale) in [(&a, "a", 1), (&b, "b", 2)] {
        for role in ["pattern", "control"] {
            let s = S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) };
            let r = with_fingerprint(named(name)(record("oracle", "m1", role, "t1", 1, s)), |f| f.world_scale_override = Some(scale));
            write(dir, &r, false);
        }
    }
    assert!(compare(&a, &b, &[], &opts()).is_err(), "another scale is another measurement");
    let c = compare(&a, &b, &["world_scale_override".into()], &opts()).unwrap();
    assert!(matches!(c.cells[0].a, CellMetrics::Oracle(_)));
    assert!(c.markdown().contains("| pattern: input tokens Σ over tasks (estimate) | ≈300 | ≈300 |"), "{}", c.markdown());
}

/// Along session_mode the gap B − A is paired by task: each task's B − A of its sessions' means,
/// their mean, and a t interval over the tasks (the task being the sampled unit, as in a report's
/// paired differences) — not sessions resampled as if independent, which at k = 3 made an
/// interval about √3 narrower than the tasks support.
#[test]
fn a_session_mode_gap_is_paired_by_task_with_an_interval_over_tasks() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("cold"), root.path().join("warm"));
    let tasks = ["t1", "t2", "t3", "t4", "t5", "t6"];
    // A task's warm cost over its cold cost differs by task: +100·t, with small session noise.
    let input = |t: u64, rep: u32, warm: bool| 1_000 + 50 * t + u64::from(rep) * 3 + if warm { 100 * t } else { 0 };
    for (i, task) in tasks.iter().enumerate() {
        let t = i as u64 + 1;
        for rep in 1..=3 {
            for role in ["pattern", "control"] {
                let cold = record("m", "m1", role, task, rep, ok(V::Passed, input(t, rep, false), 3));
                write(&a, &named("cold")(cold), false);
                let mut warm = record("m", "m1", role, task, rep, ok(V::Passed, input(t, rep, true), 3));
                warm.conversation = Some(records::ConversationPlace {
                    id: format!("m__{role}__rep{rep}"),
                    position: t as u32,
                    tasks: tasks.iter().map(|s| (*s).to_owned()).collect(),
                    messages_before: 0,
                    context_tokens_at_start: None,
                    earlier_not_passed: 0,
                });
                warm.experiment = "warm".into();
                write(&b, &with_fingerprint(warm, |f| f.session_mode = Some(records::SessionMode::Warm)), false);
            }
        }
    }
    let c = compare(&a, &b, &["session_mode".into()], &opts()).unwrap();
    let g = c.gaps.iter().find(|g| g.role == records::Role::Pattern && g.metric == "input_tokens").expect("an input-token gap");
    let per_task: Vec<f64> = (1..=6).map(|t| 100.0 * t as f64).collect();
    assert_eq!(g.tasks, Some(6), "{g:?}");
    assert_eq!((g.n_a, g.n_b), (18, 18), "sessions with a value");
    assert!((g.difference.unwrap() - 350.0).abs() < 1e-9, "{g:?}");
    assert!((g.mean_b.unwrap() - g.mean_a.unwrap() - 350.0).abs() < 1e-9);
    let want = aggregate::stats::cluster_mean_ci(&per_task).unwrap();
    let got = g.ci95.unwrap();
    assert!((got.lo - want.lo).abs() < 1e-6 && (got.hi - want.hi).abs() < 1e-6, "{got:?} vs {want:?}");
    // Six tasks' spread of 100–600 gives a wide interval around 350 (t with 5 degrees of freedom).
    assert!(got.lo < 200.0 && got.hi > 500.0, "{got:?}");
    let success = c.gaps.iter().find(|g| g.role == records::Role::Pattern && g.metric == "success").unwrap();
    assert_eq!((success.difference, success.tasks), (Some(0.0), Some(6)));
    assert!(c.markdown().contains("paired by task"), "{}", c.markdown());
}
