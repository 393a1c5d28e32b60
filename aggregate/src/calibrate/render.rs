//! A study as Markdown tables and one SVG chart: coverage (worst over scenarios) and the rate of
//! the right verdict, against the design.

use std::fmt::Write as _;

use plotters::prelude::*;

use super::{Cell, Design, Rate, Study};
use crate::chart::{font, register_font};
use crate::error::{AggregateError, Result};

fn pct(r: &Rate) -> String {
    match (r.rate, r.ci95) {
        (Some(x), Some(i)) => format!("{:.1} % ({:.1}–{:.1})", 100.0 * x, 100.0 * i.lo, 100.0 * i.hi),
        _ => "—".into(),
    }
}

/// A coverage, with where its misses fell.
fn cov(r: &Rate) -> String {
    let misses = r.truth_below + r.truth_above;
    if misses == 0 { pct(r) } else { format!("{} ↓{} ↑{}", pct(r), r.truth_below, r.truth_above) }
}

fn short(r: &Rate) -> String {
    r.rate.map_or_else(|| "—".into(), |x| format!("{:.1} %", 100.0 * x))
}

fn absent_note(rates: &[(&str, &Rate)]) -> Option<String> {
    let absent: Vec<String> = rates.iter().filter(|(_, r)| r.absent > 0).map(|(what, r)| format!("{what} {}", r.absent)).collect();
    (!absent.is_empty()).then(|| absent.join(", "))
}

/// The study as Markdown: what was run, then per scenario its truth and one row per design.
pub fn markdown(study: &Study) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Calibration: the report's intervals and verdicts against a known truth\n");
    let _ = writeln!(
        md,
        "Made by `pipeline calibrate` (the committed study: `scripts/calibrate.sh`, from the scenarios in aggregate/calibration/); \
the method and what it changed: docs/adr/0018-calibration-by-simulation.md. \
The sequential design (`--until-decided`) has a study of its own: [sequential/](sequential/README.md).\n"
    );
    let _ = writeln!(
        md,
        "{} simulated experiments per scenario and design (seed {}), each analysed by the code every report uses; each has an identical twin \
(the same tasks, fresh sessions) for the flip rate. A rate's interval is its Wilson 95 % interval: the simulation's own sampling error. \
Intervals claim {:.0} % coverage; under a null, a false \"confirmed\" should come out at most {:.1} % of the time and a false \"negative\" at most {:.0} %.\n",
        study.experiments_per_cell,
        study.seed,
        100.0 * study.nominal_coverage,
        100.0 * study.confirmed_alpha,
        100.0 * study.negative_alpha
    );
    for s in &study.scenarios {
        let cells: Vec<&Cell> = study.cells.iter().filter(|c| c.scenario == s.name).collect();
        let Some(first) = cells.first() else { continue };
        let t = first.truth;
        let _ = writeln!(md, "## {}\n\n{}.\n", s.name, s.description);
        let _ = writeln!(
            md,
            "Truth: token difference {:+.1} tokens per session ({:+.1} %), pass rates {:.1} % (pattern) and {:.1} % (control), difference {:+.1} points. The right verdict: **{}**.\n",
            t.token_difference,
            100.0 * t.relative_token_difference,
            100.0 * t.pattern_pass_rate,
            100.0 * t.control_pass_rate,
            100.0 * t.success_difference,
            first.right_verdict.as_str()
        );
        let _ = writeln!(
            md,
            "Coverage of the 95 % intervals (↓ misses with the truth below the interval — for a token difference, a larger saving than shown; ↑ above):\n"
        );
        let _ = writeln!(md, "| tasks × k | pairs | token difference | relative | success difference | pattern pass rate | control pass rate |");
        let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
        let mut absent = vec![];
        for c in &cells {
            let v = &c.coverage;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} |",
                c.design.label(),
                c.pairs,
                cov(&v.token_difference),
                cov(&v.relative_token_difference),
                cov(&v.success_difference),
                cov(&v.pattern_pass_rate),
                cov(&v.control_pass_rate)
            );
            if let Some(note) = absent_note(&[("relative", &v.relative_token_difference), ("success", &v.success_difference)]) {
                absent.push(format!("{}: {note}", c.design.label()));
            }
        }
        if !absent.is_empty() {
            let _ = writeln!(md, "\nExperiments where the report gave no interval (left out of the rate above): {}.", absent.join("; "));
        }
        let _ = writeln!(md, "\nVerdicts:\n");
        let _ = writeln!(
            md,
            "| tasks × k | confirmed | negative | inconclusive | withheld | right verdict ({}) | flip rate | median MDE, tokens | median MDE, success |",
            first.right_verdict.as_str()
        );
        let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        for c in &cells {
            let v = &c.verdicts;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                c.design.label(),
                short(&v.confirmed),
                short(&v.negative),
                short(&v.inconclusive),
                short(&v.withheld),
                pct(&c.reached_right_verdict),
                pct(&c.flip),
                c.median_relative_token_mde.map_or_else(|| "—".into(), |m| format!("{:.1} %", 100.0 * m)),
                c.median_success_mde.map_or_else(|| "—".into(), |m| format!("{:.1} pts", 100.0 * m)),
            );
        }
        let _ = writeln!(md);
    }
    let short = super::shortfalls(study, super::COVERAGE_FLOOR, super::MDE_FLOOR);
    let _ = writeln!(md, "## Below the stated level\n");
    if short.is_empty() {
        let _ = writeln!(
            md,
            "Nothing: every interval's coverage reaches {:.0} % within its sampling error, a null's false verdicts stay within their α, and every stated MDE is detected at least {:.0} % of the time.\n",
            100.0 * super::COVERAGE_FLOOR,
            100.0 * super::MDE_FLOOR
        );
    } else {
        let _ = writeln!(
            md,
            "Figures shown below their stated level (coverage below {:.0} %, a null's false verdicts above their α, a stated MDE detected less than {:.0} % of the time — each beyond the simulation's own sampling error):\n",
            100.0 * super::COVERAGE_FLOOR,
            100.0 * super::MDE_FLOOR
        );
        for s in &short {
            let _ = writeln!(md, "- {s}");
        }
        let _ = writeln!(md);
    }
    if !study.mde_checks.is_empty() {
        let _ = writeln!(md, "## The stated minimum detectable difference, checked\n");
        let _ = writeln!(
            md,
            "A report states beside each verdict the smallest token difference it could have detected (80 % power). Here each null scenario's median stated MDE \
is planted as a saving, and the rate at which the token interval then lies entirely below 0 is counted: it should be near 80 %.\n"
        );
        let _ = writeln!(md, "| scenario | tasks × k | planted saving | detected |");
        let _ = writeln!(md, "| --- | --- | ---: | ---: |");
        for m in &study.mde_checks {
            let _ = writeln!(md, "| {} | {} | {:.1} % | {} |", m.scenario, m.design.label(), 100.0 * m.planted_relative_effect.abs(), pct(&m.detected));
        }
        let _ = writeln!(md);
    }
    md
}

const SIZE: (u32, u32) = (1280, 520);
const LINE_COLORS: [RGBColor; 8] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xe0, 0x6c, 0x00),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0x55, 0x55, 0x55),
    RGBColor(0xbc, 0xbd, 0x22),
];

/// Two panels over the designs (in the study's order): the worst coverage over scenarios of
/// each interval, with the nominal 95 % drawn; and each scenario's rate of the right verdict.
pub fn svg(study: &Study) -> Result<String> {
    register_font()?;
    let mut designs: Vec<Design> = vec![];
    for c in &study.cells {
        if !designs.contains(&c.design) {
            designs.push(c.design);
        }
    }
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        draw(&root, study, &designs).map_err(|e| AggregateError::Chart(e.to_string()))?;
        root.present().map_err(|e| AggregateError::Chart(e.to_string()))?;
    }
    Ok(out)
}

type Panel<'a, DB> = DrawingArea<DB, plotters::coord::Shift>;

fn draw<DB: DrawingBackend>(root: &Panel<'_, DB>, study: &Study, designs: &[Design]) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(SIZE.0 / 2);
    let worst = |pick: fn(&Cell) -> &Rate, d: Design| study.cells.iter().filter(|c| c.design == d).filter_map(|c| pick(c).rate).reduce(f64::min);
    let coverage: Vec<(&str, Vec<Option<f64>>)> = vec![
        ("token difference", designs.iter().map(|&d| worst(|c| &c.coverage.token_difference, d)).collect()),
        ("relative", designs.iter().map(|&d| worst(|c| &c.coverage.relative_token_difference, d)).collect()),
        ("success difference", designs.iter().map(|&d| worst(|c| &c.coverage.success_difference, d)).collect()),
        ("pattern pass rate", designs.iter().map(|&d| worst(|c| &c.coverage.pattern_pass_rate, d)).collect()),
    ];
    let lowest = coverage.iter().flat_map(|(_, v)| v.iter().flatten()).copied().fold(0.9_f64, f64::min);
    panel(
        &left,
        "coverage of the 95 % intervals (worst scenario)",
        designs,
        &coverage,
        (lowest - 0.02).max(0.0)..1.0,
        Some(study.nominal_coverage),
        SeriesLabelPosition::LowerRight,
    )?;
    let power: Vec<(&str, Vec<Option<f64>>)> = study
        .scenarios
        .iter()
        .map(|s| {
            let v = designs
                .iter()
                .map(|&d| study.cells.iter().find(|c| c.scenario == s.name && c.design == d).and_then(|c| c.reached_right_verdict.rate))
                .collect();
            (s.name.as_str(), v)
        })
        .collect();
    panel(&right, "rate of the right verdict, per scenario", designs, &power, 0.0..1.0, None, SeriesLabelPosition::MiddleLeft)
}

fn panel<DB: DrawingBackend>(
    area: &Panel<'_, DB>,
    title: &str,
    designs: &[Design],
    series: &[(&str, Vec<Option<f64>>)],
    y: std::ops::Range<f64>,
    nominal: Option<f64>,
    legend: SeriesLabelPosition,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let n = designs.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(title, font(16.0))
        .margin(14)
        .x_label_area_size(46)
        .y_label_area_size(52)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), y)?;
    chart
        .configure_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() > 0.01 || i < 0.0 {
                return String::new();
            }
            designs.get(i as usize).map_or_else(String::new, |d| format!("{}×{} ({})", d.tasks, d.k, d.pairs()))
        })
        .y_label_formatter(&|v| format!("{:.0} %", 100.0 * v))
        .x_desc("tasks × k (pairs)")
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .disable_x_mesh()
        .draw()?;
    if let Some(level) = nominal {
        chart
            .draw_series(std::iter::once(PathElement::new(vec![(-0.5, level), (n as f64 - 0.5, level)], ShapeStyle::from(&BLACK.mix(0.5)).stroke_width(1))))?;
    }
    for (i, (name, values)) in series.iter().enumerate() {
        let color = LINE_COLORS[i % LINE_COLORS.len()];
        let points: Vec<(f64, f64)> = values.iter().enumerate().filter_map(|(x, v)| v.map(|v| (x as f64, v))).collect();
        chart
            .draw_series(LineSeries::new(points.clone(), ShapeStyle::from(&color).stroke_width(2)))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], ShapeStyle::from(&color).stroke_width(2)));
        chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, ShapeStyle::from(&color).filled())))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK.mix(0.3)).label_font(font(12.0)).position(legend).draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::{self, StudyConfig};

    #[test]
    fn the_tables_and_the_chart_name_every_scenario_and_design() {
        let scenarios: Vec<_> = calibrate::committed_scenarios().into_iter().filter(|s| s.name == "null" || s.name == "harm").collect();
        let config = StudyConfig { scenarios, designs: vec![Design { tasks: 8, k: 3 }, Design { tasks: 12, k: 2 }], experiments: 30, seed: 3, threads: 1 };
        let study = calibrate::run(&config, |_| {});
        let md = markdown(&study);
        for needle in
            ["## null", "## harm", "| 8 × 3 | 24 |", "| 12 × 2 | 24 |", "## Below the stated level", "## The stated minimum detectable difference, checked"]
        {
            assert!(md.contains(needle), "{needle}: {md}");
        }
        let svg = svg(&study).unwrap();
        for needle in ["null", "harm", "8×3 (24)", "12×2 (24)", "coverage of the 95 % intervals"] {
            assert!(svg.contains(needle), "{needle} missing from the chart");
        }
    }
}
