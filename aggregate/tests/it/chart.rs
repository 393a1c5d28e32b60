//! The chart plots the values the tables print, in the same unit (per session): every bar and
//! every dashed oracle estimate equals its table cell, to the cell's precision, and a slot the
//! chart leaves empty is a cell the table leaves empty.

use std::path::Path;

use crate::common::*;
use aggregate::chart::Plotted;
use aggregate::{Options, PriceTable, Report};
use records::{Role, Verdict as V};

/// The number a cell starts with, and half a unit of its last printed digit; `None` for "—",
/// "no sessions" and the like.
fn shown(cell: &str) -> Option<(f64, f64)> {
    let text: String = cell.trim().chars().take_while(|c| c.is_ascii_digit() || matches!(c, '-' | '.' | ',')).filter(|c| *c != ',').collect();
    let value: f64 = text.parse().ok()?;
    let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
    Some((value, 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9))
}

fn arm_index(role: Role) -> usize {
    match role {
        Role::Pattern => 0,
        Role::Control => 1,
    }
}

/// The model table's cell for `p`: its row is `p.figure`, its column the arm's; the mean of a
/// "median / mean [CI]" cell.
fn model_cell(rep: &Report, p: &Plotted) -> String {
    let m = rep.summary.models.iter().find(|m| p.row == format!("model {} ({})", m.model, m.provider)).unwrap();
    let t = tables(&rep.document)
        .into_iter()
        .find(|t| t.h2 == format!("Model {} ({})", m.model, m.provider) && t.h3.starts_with(&format!("{} — verdict", p.module)) && t.header[0] == "metric")
        .unwrap_or_else(|| panic!("no table for {p:?}"));
    let row = t.rows.iter().find(|r| r[0] == p.figure).unwrap_or_else(|| panic!("no row {:?} in {}'s table", p.figure, p.module));
    let cell = &row[1 + arm_index(p.role)];
    match cell.split_once(" / ") {
        Some((_median, mean)) if p.figure != "success rate [Wilson 95%]" => mean.to_string(),
        _ => cell.clone(),
    }
}

/// The typed cell behind [`model_cell`]: its value, unit and definition.
fn typed_cell(rep: &Report, p: &Plotted) -> aggregate::document::Cell {
    let m = rep.summary.models.iter().find(|m| p.row == format!("model {} ({})", m.model, m.provider)).unwrap();
    let t = tables(&rep.document)
        .into_iter()
        .find(|t| t.h2 == format!("Model {} ({})", m.model, m.provider) && t.h3.starts_with(&format!("{} — verdict", p.module)) && t.header[0] == "metric")
        .unwrap();
    let i = t.rows.iter().position(|r| r[0] == p.figure).unwrap();
    t.typed.rows[i][1 + arm_index(p.role)].clone()
}

/// The oracle table's "pattern / control" cell of `figure` for `module`, one arm's half.
fn oracle_cell(rep: &Report, module: &str, figure: &str, role: Role) -> String {
    let t = tables(&rep.document).into_iter().find(|t| t.h2 == "Oracle structural floors" && t.header[0] == "module").expect("the oracle table");
    let col = t.header.iter().position(|h| h == figure).unwrap_or_else(|| panic!("no column {figure:?}"));
    let row = t.rows.iter().find(|r| r[0] == module).unwrap();
    let halves: Vec<&str> = row[col].split(" / ").collect();
    assert_eq!(halves.len(), 2, "{}", row[col]);
    halves[arm_index(role)].to_string()
}

fn agree(what: &str, plotted: Option<f64>, cell: &str) {
    match (plotted, shown(cell)) {
        (Some(v), Some((t, tolerance))) => assert!((v - t).abs() <= tolerance, "{what}: the chart plots {v}, the table prints {cell:?}"),
        (None, None) => {}
        (v, _) => panic!("{what}: the chart has {v:?}, the table prints {cell:?}"),
    }
}

fn check(rep: &Report) -> usize {
    let plotted = aggregate::chart::plotted(&rep.summary);
    assert!(!plotted.is_empty());
    for p in &plotted {
        let what = format!("{} · {} · {} · {}", p.row, p.figure, p.module, p.role);
        if rep.summary.models.is_empty() {
            agree(&what, p.value, &oracle_cell(rep, &p.module, p.figure, p.role));
        } else {
            agree(&what, p.value, &model_cell(rep, p));
            // The typed cell carries the very value the bar plots (a rate as a share).
            let typed = typed_cell(rep, p).value.map(|v| if p.figure == "success rate [Wilson 95%]" { v * 100.0 } else { v });
            assert_eq!(typed.map(|v| (v * 1e9).round()), p.value.map(|v| (v * 1e9).round()), "{what}: the document's value");
            let estimate = p.figure == "input tokens / session (median / mean [CI]), all pairs";
            if estimate || p.estimate.is_some() {
                agree(&format!("{what} (oracle estimate)"), p.estimate, &oracle_cell(rep, &p.module, "est. input tokens / session: pattern / control", p.role));
            }
        }
    }
    plotted.len()
}

#[test]
fn the_chart_plots_the_tables_values() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let prices = PriceTable::parse(PRICES, Path::new("prices.toml")).unwrap();
    let rep = aggregate::report(dir.path(), Some(&prices), &Options::default()).unwrap();
    assert_eq!(check(&rep), 2 * 3 * 2, "2 models × 3 panels × 2 arms");
    // The pattern's estimate is missing for one task: the chart draws none, as the table prints
    // none, rather than a mean over the other task.
    let p = aggregate::chart::plotted(&rep.summary);
    let tokens = |role| p.iter().find(|x| x.row.starts_with("model model-a") && x.figure.starts_with("input tokens") && x.role == role).unwrap().estimate;
    assert_eq!((tokens(Role::Pattern), tokens(Role::Control)), (None, Some(900.0)));
}

#[test]
fn the_oracle_only_chart_plots_the_oracle_tables_values() {
    let dir = tempfile::tempdir().unwrap();
    for (task, reps) in [("t1", 1..=2), ("t2", 1..=1)] {
        for rep in reps {
            for role in ["pattern", "control"] {
                let s = S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) };
                write(dir.path(), &record("oracle", "m1", role, task, rep, s), false);
            }
        }
    }
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    assert_eq!(check(&rep), 2 * 2, "2 panels × 2 arms");
    // Per session, not summed: control's calls are 5 in every session of both tasks.
    let p = aggregate::chart::plotted(&rep.summary);
    let calls = p.iter().find(|x| x.figure.starts_with("calls") && x.role == Role::Control).unwrap();
    assert_eq!(calls.value, Some(5.0));
    assert_eq!(oracle_cell(&rep, "m1", "calls / session: pattern / control", Role::Control), "5");
}
