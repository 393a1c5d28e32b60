//! Grouped bars per module — success rate, turns, input tokens — with interval whiskers (Wilson
//! for success, bootstrap CI of the mean for turns and tokens). Oracle floors (estimated input
//! tokens per session, labelled estimate) are drawn as markers on the input-token panel. One row of
//! panels per model; models are never pooled.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use records::Role;

use crate::error::{AggregateError, Result};
use crate::metrics::{ArmMetrics, Summary};
use crate::stats::Interval;

const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const PATTERN: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const CONTROL: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const PANEL_W: u32 = 420;
const ROW_H: u32 = 340;

fn register_font() -> Result<()> {
    static DONE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).map_err(|_| "the bundled DejaVu Sans did not load".to_string()))
        .clone()
        .map_err(AggregateError::Chart)
}

/// One bar: value and optional interval.
#[derive(Debug, Clone, Copy)]
struct Bar {
    value: f64,
    ci: Option<Interval>,
}

/// One module's group: (name, pattern bar, control bar, oracle floor markers [pattern, control]).
type Group = (String, Option<Bar>, Option<Bar>, [Option<f64>; 2]);

struct Panel {
    title: &'static str,
    groups: Vec<Group>,
}

struct Row {
    label: String,
    panels: Vec<Panel>,
}

fn rows(s: &Summary) -> Vec<Row> {
    let floor = |module: &str, role: Role| -> Option<f64> {
        let f = s.oracle_floors.iter().find(|f| f.module == module)?;
        let v: Vec<f64> = f.rows.iter().filter(|r| r.role == role).filter_map(|r| r.estimated_input_tokens).collect();
        crate::stats::mean(&v)
    };
    let success = |a: &Option<ArmMetrics>| {
        a.as_ref()
            .and_then(|a| a.success.rate.map(|r| Bar { value: r * 100.0, ci: a.success.wilson95.map(|i| Interval { lo: i.lo * 100.0, hi: i.hi * 100.0 }) }))
    };
    let turns = |a: &Option<ArmMetrics>| a.as_ref().and_then(|a| a.turns.mean.map(|m| Bar { value: m, ci: a.turns.mean_ci95 }));
    let tokens = |a: &Option<ArmMetrics>| a.as_ref().and_then(|a| a.input_tokens.mean.map(|m| Bar { value: m, ci: a.input_tokens.mean_ci95 }));
    let mut out: Vec<Row> = s
        .models
        .iter()
        .map(|m| {
            let panel = |title, f: &dyn Fn(&Option<ArmMetrics>) -> Option<Bar>, floors: bool| Panel {
                title,
                groups: m
                    .modules
                    .iter()
                    .map(|x| {
                        (
                            x.module.clone(),
                            f(&x.pattern),
                            f(&x.control),
                            if floors { [floor(&x.module, Role::Pattern), floor(&x.module, Role::Control)] } else { [None, None] },
                        )
                    })
                    .collect(),
            };
            Row {
                label: format!("{} ({})", m.model, m.provider),
                panels: vec![
                    panel("success rate % [Wilson 95%]", &success, false),
                    panel("turns, mean [95% CI]", &turns, false),
                    panel("input tokens, mean [95% CI]", &tokens, true),
                ],
            }
        })
        .collect();
    if out.is_empty() && !s.oracle_floors.is_empty() {
        let groups =
            s.oracle_floors.iter().map(|f| (f.module.clone(), None, None, [floor(&f.module, Role::Pattern), floor(&f.module, Role::Control)])).collect();
        out.push(Row {
            label: "no model sessions — oracle floors only".into(),
            panels: vec![Panel { title: "oracle floor: estimated input tokens per session (estimate, not a measurement)", groups }],
        });
    }
    out
}

/// Number of bars drawn (for tests).
pub fn bar_count(s: &Summary) -> usize {
    rows(s).iter().flat_map(|r| &r.panels).flat_map(|p| &p.groups).map(|g| g.1.is_some() as usize + g.2.is_some() as usize).sum()
}

fn size(s: &Summary) -> (u32, u32) {
    let rows = rows(s);
    let groups = rows.iter().flat_map(|r| &r.panels).map(|p| p.groups.len()).max().unwrap_or(1);
    let panel_w = PANEL_W.max(150 * groups as u32);
    (panel_w * 3, ROW_H * rows.len().max(1) as u32)
}

pub fn render_svg(s: &Summary) -> Result<String> {
    register_font()?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size(s)).into_drawing_area();
        draw(&root, s)?;
        root.present().map_err(|e| AggregateError::Chart(e.to_string()))?;
    }
    Ok(out)
}

pub fn render_png(s: &Summary, path: &Path) -> Result<()> {
    register_font()?;
    let root = BitMapBackend::new(path, size(s)).into_drawing_area();
    draw(&root, s)?;
    root.present().map_err(|e| AggregateError::Chart(format!("{}: {e}", path.display())))
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, s: &Summary) -> Result<()> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| AggregateError::Chart(e.to_string());
    root.fill(&WHITE).map_err(err)?;
    let rows = rows(s);
    if rows.is_empty() {
        root.draw(&Text::new("no sessions", (20, 20), ("sans-serif", 16))).map_err(err)?;
        return Ok(());
    }
    let row_areas = root.split_evenly((rows.len(), 1));
    for (row, area) in rows.iter().zip(row_areas) {
        let area = area.titled(&row.label, ("sans-serif", 18)).map_err(err)?;
        for (panel, pa) in row.panels.iter().zip(area.split_evenly((1, row.panels.len().max(1)))) {
            draw_panel(&pa, panel)?;
        }
    }
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel) -> Result<()> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| AggregateError::Chart(e.to_string());
    let n = p.groups.len().max(1);
    let mut ymax: f64 = 0.0;
    for (_, a, b, f) in &p.groups {
        for bar in [a, b].into_iter().flatten() {
            ymax = ymax.max(bar.ci.map_or(bar.value, |i| i.hi.max(bar.value)));
        }
        for v in f.iter().flatten() {
            ymax = ymax.max(*v);
        }
    }
    // Headroom so the legend (upper right) does not cover bars or markers.
    let ymax = if ymax <= 0.0 { 1.0 } else { ymax * 1.4 };
    let mut chart = ChartBuilder::on(area)
        .caption(p.title, ("sans-serif", 14))
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(55)
        .build_cartesian_2d(0f64..n as f64, 0f64..ymax)
        .map_err(err)?;
    chart.configure_mesh().disable_x_mesh().x_labels(0).y_labels(6).label_style(("sans-serif", 11)).draw().map_err(err)?;

    let bar_at = |i: usize, j: usize| -> (f64, f64) {
        let x0 = i as f64 + 0.1 + j as f64 * 0.4;
        (x0, x0 + 0.38)
    };
    for (j, color, name) in [(0usize, PATTERN, "pattern"), (1, CONTROL, "control")] {
        let bars: Vec<(usize, Bar)> = p.groups.iter().enumerate().filter_map(|(i, g)| if j == 0 { g.1 } else { g.2 }.map(|b| (i, b))).collect();
        if bars.is_empty() {
            continue;
        }
        chart
            .draw_series(bars.iter().map(|(i, b)| {
                let (x0, x1) = bar_at(*i, j);
                Rectangle::new([(x0, 0.0), (x1, b.value)], color.filled())
            }))
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
        chart
            .draw_series(bars.iter().filter_map(|(i, b)| {
                let ci = b.ci?;
                let (x0, x1) = bar_at(*i, j);
                let xm = (x0 + x1) / 2.0;
                Some(PathElement::new(vec![(xm, ci.lo), (xm, ci.hi)], BLACK.stroke_width(2)))
            }))
            .map_err(err)?;
    }
    let markers: Vec<(f64, f64, usize)> = p
        .groups
        .iter()
        .enumerate()
        .flat_map(|(i, g)| {
            g.3.iter().enumerate().filter_map(move |(j, v)| {
                let (x0, x1) = bar_at(i, j);
                v.map(|v| ((x0 + x1) / 2.0, v, j))
            })
        })
        .collect();
    // Over bars, arm-coloured crosses would vanish: draw them black at each arm's bar centre.
    let has_bars = p.groups.iter().any(|g| g.1.is_some() || g.2.is_some());
    for (j, arm_color, name) in [(0usize, PATTERN, "pattern oracle floor (estimate)"), (1, CONTROL, "control oracle floor (estimate)")] {
        let color = if has_bars { BLACK } else { arm_color };
        let name = if has_bars && j == 0 { "oracle floor (estimate), per arm" } else { name };
        if has_bars && j == 1 && markers.iter().any(|m| m.2 == 0) {
            // One legend entry is enough for black markers.
            chart.draw_series(markers.iter().filter(|m| m.2 == 1).map(|&(x, y, _)| Cross::new((x, y), 7, color.stroke_width(3)))).map_err(err)?;
            continue;
        }
        let arm: Vec<(f64, f64)> = markers.iter().filter(|m| m.2 == j).map(|m| (m.0, m.1)).collect();
        if arm.is_empty() {
            continue;
        }
        chart
            .draw_series(arm.iter().map(|&(x, y)| Cross::new((x, y), 7, color.stroke_width(3))))
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| Cross::new((x + 5, y), 5, color.stroke_width(2)));
    }
    if p.groups.iter().any(|g| g.1.is_some() || g.2.is_some()) || !markers.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 11))
            .draw()
            .map_err(err)?;
    }
    // Module names under each group.
    for (i, g) in p.groups.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let style = TextStyle::from(("sans-serif", 12).into_font())
            .pos(plotters::style::text_anchor::Pos::new(plotters::style::text_anchor::HPos::Center, plotters::style::text_anchor::VPos::Top));
        area.draw(&Text::new(g.0.clone(), (px - area.get_base_pixel().0, py - area.get_base_pixel().1 + 6), style)).map_err(err)?;
    }
    Ok(())
}
