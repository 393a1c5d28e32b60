//! A sequential experiment's report: the verdict read from the confidence sequences in draw
//! order, the stop found where the run's rule would find it, and no fixed-sample interval
//! anywhere (it would be optimistic after a stop that depended on the data).

use aggregate::metrics::sequential::Ended;
use aggregate::{Verdict, summarise};

use records::Verdict as V;

use crate::common::*;

fn module(dir: &std::path::Path) -> aggregate::metrics::ModuleReport {
    let exp = aggregate::load_experiment(dir).unwrap();
    let s = summarise(&exp, None, &opts()).unwrap();
    s.models[0].modules[0].clone()
}

/// Every `ci95`, `relative_ci95`, `wilson95` and `mean_ci95` in `v` that is not null.
fn intervals(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if ["ci95", "relative_ci95", "wilson95", "mean_ci95", "mde", "relative_mde"].contains(&k.as_str()) && !x.is_null() {
                    out.push(format!("{at}.{k}"));
                }
                intervals(x, &format!("{at}.{k}"), out);
            }
        }
        serde_json::Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| intervals(x, &format!("{at}[{i}]"), out)),
        _ => {}
    }
}

#[test]
fn a_saving_is_confirmed_where_the_rule_stops_and_no_fixed_interval_is_given() {
    let dir = tempfile::tempdir().unwrap();
    // Both arms pass every pair and the pattern always costs less: the fastest confirmation
    // (47 valid pairs at the sequences' level). Three more pairs were running at the stop.
    sequential_fixture(dir.path(), 200, 50, |_| (true, true, 100, 200));
    let m = module(dir.path());
    let s = m.sequential.as_ref().expect("a sequential report");
    assert_eq!((s.ended, s.decided_at, s.drawn), (Ended::Decided, Some(47), 50), "{}", s.why);
    assert_eq!(s.decided_look.as_ref().unwrap().pairs, 47);
    assert_eq!(s.look.pairs, 50);
    assert!(s.why.contains("3 more valid pair(s) already running"), "{}", s.why);
    assert_eq!(m.verdict, Verdict::Confirmed, "{}", m.verdict_reason);
    assert!(m.verdict_reason.contains("fewer input tokens is shown above ½"), "{}", m.verdict_reason);
    let share = s.look.cheaper.unwrap();
    assert!(share.lo > 0.5 && share.hi <= 1.0, "{share:?}");
    // The fixed design's intervals, MDEs, power and flip rate are gone from the whole module.
    let mut found = Vec::new();
    intervals(&serde_json::to_value(&m).unwrap(), "module", &mut found);
    assert!(found.is_empty(), "fixed-sample figures left in a sequential report: {found:?}");
    assert!(m.power.is_none() && m.flip_rate.is_none());
    assert!(m.notices[0].starts_with("Sequential experiment: decided at pair 47"), "{}", m.notices[0]);
    // What was planned is what was drawn: nothing reads as missing.
    assert_eq!(m.paired.pairs_planned, Some(50));
}

#[test]
fn equal_arms_run_to_the_cap_undecided_and_a_budget_stop_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // Ties in tokens, the same pass pattern in both arms: nothing to decide.
    sequential_fixture(dir.path(), 60, 60, |d| (d % 4 != 0, d % 4 != 0, 150, 150));
    let m = module(dir.path());
    let s = m.sequential.as_ref().unwrap();
    assert_eq!((s.ended, s.decided_at), (Ended::Cap, None), "{}", s.why);
    assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.verdict_reason);
    assert!(m.verdict_reason.contains("may still be ½"), "{}", m.verdict_reason);
    let succ = s.look.success.unwrap();
    assert!(succ.lo < 0.0 && succ.hi > 0.0, "{succ:?}");

    // The same at 30 of 60 pairs, stopped by a budget: stopped, not capped, and never missing
    // pairs it did not draw.
    let dir = tempfile::tempdir().unwrap();
    sequential_fixture(dir.path(), 60, 30, |d| (d % 4 != 0, d % 4 != 0, 150, 150));
    let mut manifest: records::ExperimentManifest = serde_json::from_slice(&std::fs::read(dir.path().join("manifest.json")).unwrap()).unwrap();
    manifest.stopped = Some(stop("budget", "--budget-tokens 1000: spent"));
    write_manifest(dir.path(), &manifest);
    let m = module(dir.path());
    let s = m.sequential.as_ref().unwrap();
    assert_eq!(s.ended, Ended::Stopped);
    assert!(s.why.contains("stopped early (budget) at pair 30 of at most 60"), "{}", s.why);
}

#[test]
fn a_record_without_a_draw_in_a_sequential_experiment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    sequential_fixture(dir.path(), 60, 12, |_| (true, true, 100, 200));
    // A fixed design's record (no draw) beside them: another design, never pooled.
    write(dir.path(), &record("m", "m1", "pattern", "t0", 9, ok(V::Passed, 100, 3)), true);
    let exp = aggregate::load_experiment(dir.path()).unwrap();
    let e = summarise(&exp, None, &opts()).unwrap_err().to_string();
    assert!(e.contains("it has no draw, and the experiment is sequential"), "{e}");
}
