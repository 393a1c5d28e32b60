//! Side effects in the report: per arm the sessions with collateral writes, the writes by class,
//! the passes that had them, the paired difference, and the notice when the pattern raises them —
//! all from records whose collateral writes are known.

use crate::common::*;
use records::{Collateral, CollateralClass, CollateralWrite, Verdict as V};

fn write_of(table: &str, id: i64, op: &str, class: CollateralClass) -> CollateralWrite {
    CollateralWrite { table: table.into(), id, op: op.into(), class, columns: if op == "updated" { vec!["status".into()] } else { vec![] } }
}

fn with(mut r: records::SessionRecord, writes: Option<Vec<CollateralWrite>>) -> records::SessionRecord {
    if let Some(v) = r.verifier.as_mut() {
        v.collateral = writes.map(|writes| Collateral { footprint: "g7".into(), footprint_sha256: Some("ab".into()), writes });
    }
    r
}

#[test]
fn collateral_writes_are_counted_per_arm_by_class_and_paired_never_folded_into_success() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t11", "t12"];
    for (i, task) in tasks.iter().enumerate() {
        for rep in 1..=2 {
            // The pattern: a write to another ticket on every task but the last four, a deletion
            // on t1 too; it passes everything. t12 rep 2's changes were not read.
            let pattern_writes = match i {
                0 => Some(vec![write_of("tickets", 6, "updated", CollateralClass::TouchedTable), write_of("users", 3, "deleted", CollateralClass::Deletion)]),
                11 if rep == 2 => None,
                1..8 => Some(vec![write_of("notifications", 90 + i as i64, "inserted", CollateralClass::UntouchedTable)]),
                _ => Some(vec![]),
            };
            let p = with(record("m", "m1", "pattern", task, rep, ok(V::Passed, 100, 2)), pattern_writes);
            // The control: one side effect, on t9 rep 1, which failed.
            let control_writes = if i == 8 && rep == 1 { vec![write_of("tickets", 7, "updated", CollateralClass::TouchedTable)] } else { vec![] };
            let verdict = if i == 8 && rep == 1 { V::Failed } else { V::Passed };
            let c = with(record("m", "m1", "control", task, rep, ok(verdict, 100, 2)), Some(control_writes));
            write(dir.path(), &p, false);
            write(dir.path(), &c, false);
        }
    }
    let rep = aggregate::report(dir.path(), None, &opts()).unwrap();
    let module = &rep.summary.models[0].modules[0];
    let (p, c) = (&module.pattern.as_ref().unwrap().collateral, &module.control.as_ref().unwrap().collateral);
    assert_eq!((p.sessions, p.not_read, p.with_collateral, p.writes, p.passed_with_collateral), (23, 1, 16, 18, 16), "{p:?}");
    assert_eq!((p.by_class["touched_table"], p.by_class["untouched_table"], p.by_class["deletion"]), (2, 14, 2));
    assert!((p.rate.unwrap() - 16.0 / 23.0).abs() < 1e-12 && (p.writes_per_session.unwrap() - 18.0 / 23.0).abs() < 1e-12);
    let w = p.wilson95.unwrap();
    assert!(w.lo < 16.0 / 23.0 && 16.0 / 23.0 < w.hi);
    assert_eq!((c.sessions, c.with_collateral, c.writes, c.passed_with_collateral), (24, 1, 1, 0), "{c:?}");
    assert_eq!(p.sessions_with.len(), 16);
    assert_eq!(c.sessions_with[0].task, "t9");
    // Success is untouched by them: every pattern session passed.
    assert_eq!(module.pattern.as_ref().unwrap().success.successes, 24);
    // Paired over the 23 pairs read in both arms, by task: 8 tasks +1, t9 −1/2 (rep 1 only), the
    // rest 0 → (8 − 0.5) / 12.
    let d = module.paired.collateral.as_ref().expect("a paired difference");
    assert_eq!((d.n, d.tasks, d.missing), (23, 12, 1));
    assert!((d.mean - 7.5 / 12.0).abs() < 1e-12, "{d:?}");
    assert!(d.ci95.unwrap().lo > 0.0, "{d:?}");
    let notice = module.notices.iter().find(|n| n.starts_with("Side effects: the pattern raises collateral writes")).expect("the notice");
    assert!(notice.contains("+62 points") && notice.contains("over 23 pairs"), "{notice}");
    // Said above the headline, and the section lists the sessions.
    let md = &rep.markdown;
    let above = md.split("## Headline").next().unwrap();
    assert!(above.contains("The pattern raises side effects") && above.contains("(69.6% of its sessions against 4.2% of the control's)"), "{above}");
    let table =
        tables(&rep.document).into_iter().find(|t| t.header.get(3).is_some_and(|h| h == "sessions with collateral writes")).expect("the side-effects table");
    assert!(table.rows[0][3].starts_with("16 / 23 (69.6%) ["), "{:?}", table.rows[0]);
    assert_eq!(table.rows[0][5], "2 / 14 / 2");
    assert!(md.contains("| t1 rep 1 | passed | tickets 6 updated (status): touched table; users 3 deleted: deletion |"), "{md}");
}

#[test]
fn without_a_pattern_raising_them_there_is_no_notice_and_unread_sessions_are_missing_not_zero() {
    let dir = tempfile::tempdir().unwrap();
    for task in ["t1", "t2", "t3"] {
        write(dir.path(), &with(record("m", "m1", "pattern", task, 1, ok(V::Passed, 100, 2)), None), false);
        write(dir.path(), &with(record("m", "m1", "control", task, 1, ok(V::Passed, 100, 2)), Some(vec![])), false);
    }
    let rep = aggregate::report(dir.path(), None, &opts()).unwrap();
    let module = &rep.summary.models[0].modules[0];
    let p = &module.pattern.as_ref().unwrap().collateral;
    assert_eq!((p.sessions, p.not_read, p.rate, p.writes_per_session), (0, 3, None, None));
    assert!(module.paired.collateral.is_none());
    assert!(!module.notices.iter().any(|n| n.contains("collateral")));
    assert!(!rep.markdown.contains("raises side effects"));
    let table = tables(&rep.document).into_iter().find(|t| t.header.get(3).is_some_and(|h| h == "sessions with collateral writes")).unwrap();
    assert_eq!(table.rows[0][3], "— (none read)");
}
