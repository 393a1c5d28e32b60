//! The chart: per model, three panels stacked — success rate, turns and input tokens per session
//! — with the pattern and control bars of every module side by side and their 95% intervals
//! (Wilson for success, bootstrap of the mean for turns and tokens). Drawn at the size the HTML
//! page shows it (no scaling at 1280 px wide), so its text is what the font sizes say.
//!
//! What is not a measurement never looks like one: the oracle's token figure is an estimate,
//! drawn as a dashed line (over model bars) or a dashed hollow bar (oracle-only runs) and
//! labelled "estimate". A missing value is a note in its slot, never an empty axis; a 0% bar
//! carries its "0%" label so it is not mistaken for a missing one. Where an arm passed too little
//! to compare (see `metrics::few_passes`), the turn and token groups say they were spent
//! failing.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use records::Role;

use crate::error::{AggregateError, Result};
use crate::metrics::{ArmMetrics, Summary};
use crate::stats::Interval;

const FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
pub(crate) const PATTERN: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
pub(crate) const CONTROL: RGBColor = RGBColor(0xe0, 0x6c, 0x00);
pub(crate) const GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);
const WARN: RGBColor = RGBColor(0x8a, 0x4f, 0x00);
/// The chart's width in pixels: the HTML page shows it at this size.
pub const WIDTH: u32 = 960;
const LEGEND_H: u32 = 44;
const ROW_TITLE_H: u32 = 36;
const PANEL_H: u32 = 280;

/// A font of `px` pixels. Plotters shrinks every requested size by 1.24 when it renders (SVG
/// and bitmap alike); asking for the size times 1.24 makes the text exactly `px` high.
pub(crate) fn font(px: f64) -> FontDesc<'static> {
    ("sans-serif", px * 1.24).into_font()
}

pub(crate) fn register_font() -> Result<()> {
    static DONE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).map_err(|_| "the bundled DejaVu Sans did not load".to_string()))
        .clone()
        .map_err(AggregateError::Chart)
}

/// One bar: its value, its interval and the label printed above it.
#[derive(Debug, Clone)]
struct Bar {
    value: f64,
    ci: Option<Interval>,
    label: String,
}

/// One arm's slot in a module's group: a bar, or why there is none.
#[derive(Debug, Clone)]
enum Slot {
    Bar(Bar),
    Missing(&'static str),
}

#[derive(Debug, Clone)]
struct Group {
    module: String,
    /// Pattern, control.
    arms: [Slot; 2],
    /// The oracle plan's estimate for each arm, drawn dashed over the bars.
    estimates: [Option<f64>; 2],
    /// Said under the module's name: the bars are spent failing, so they are no saving.
    note: Option<&'static str>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Bars are measurements.
    Measured,
    /// Bars are estimates: hollow and dashed, never solid.
    Estimate,
}

struct Panel {
    title: String,
    /// The table row (model tables) or column (the oracle table) that prints the same values.
    figure: &'static str,
    y_title: &'static str,
    percent: bool,
    kind: Kind,
    groups: Vec<Group>,
}

struct Row {
    label: String,
    panels: Vec<Panel>,
}

pub use crate::document::format::readable;

fn missing(a: &Option<ArmMetrics>) -> &'static str {
    match a {
        None => "no sessions",
        Some(a) if a.valid == 0 => "no valid sessions",
        Some(_) => "not reported",
    }
}

/// Every value is per session, never summed over tasks, and is the value the tables print:
/// model bars are the arm's success rate and means over its valid sessions (the model tables'
/// mean columns), oracle values are [`crate::metrics::OraclePerSession`] (the oracle table's
/// module rows). Per session because that is what a reader compares across arms and modules:
/// a sum over tasks grows with a module's task count, and a model session is billed per session.
fn rows(s: &Summary) -> Vec<Row> {
    let estimate = |module: &str, split: records::Split, role: Role| -> Option<f64> {
        let f = s.oracle_floors.iter().find(|f| f.module == module && f.split == split)?;
        f.per_session_of(role, |m| m.estimated_input_tokens).ok()
    };
    let success = |a: &Option<ArmMetrics>| match a.as_ref().and_then(|m| m.success.rate.map(|r| (m, r))) {
        Some((m, r)) => Slot::Bar(Bar {
            value: r * 100.0,
            ci: m.success.wilson95.map(|i| Interval { lo: i.lo * 100.0, hi: i.hi * 100.0 }),
            // The precision of the headline and the tables, so the two never disagree.
            label: if (r * 100.0).fract() == 0.0 { format!("{:.0}%", r * 100.0) } else { format!("{:.1}%", r * 100.0) },
        }),
        None => Slot::Missing(missing(a)),
    };
    let mean_of = |pick: fn(&ArmMetrics) -> &crate::metrics::Dist| {
        move |a: &Option<ArmMetrics>| match a.as_ref().and_then(|m| pick(m).mean.map(|v| (pick(m), v))) {
            Some((d, v)) => Slot::Bar(Bar { value: v, ci: d.mean_ci95, label: readable(v) }),
            None => Slot::Missing(missing(a)),
        }
    };
    let mut out: Vec<Row> = s
        .models
        .iter()
        .map(|m| {
            let panel = |title: &str, figure, y_title, percent, f: &dyn Fn(&Option<ArmMetrics>) -> Slot, estimates: bool| Panel {
                title: title.into(),
                figure,
                y_title,
                percent,
                kind: Kind::Measured,
                groups: m
                    .modules
                    .iter()
                    .map(|x| Group {
                        module: crate::metrics::Comparison::label_in(&x.module, None, x.split),
                        arms: [f(&x.pattern), f(&x.control)],
                        estimates: if estimates {
                            [estimate(&x.module, x.split, Role::Pattern), estimate(&x.module, x.split, Role::Control)]
                        } else {
                            [None, None]
                        },
                        note: (!percent && !x.few_passes.is_empty()).then_some("spent failing — no saving"),
                    })
                    .collect(),
            };
            Row {
                label: format!("model {} ({})", m.model, m.provider),
                panels: vec![
                    panel("Success rate, with its Wilson 95% interval", "success rate [Wilson 95%]", "success rate (%)", true, &success, false),
                    panel(
                        "Turns per session: mean, with its 95% interval",
                        "turns / session (median / mean [CI]), all pairs",
                        "turns per session",
                        false,
                        &mean_of(|a| &a.turns),
                        false,
                    ),
                    panel(
                        "Input tokens per session: mean, with its 95% interval",
                        "input tokens / session (median / mean [CI]), all pairs",
                        "input tokens per session",
                        false,
                        &mean_of(|a| &a.input_tokens),
                        true,
                    ),
                ],
            }
        })
        .collect();
    if out.is_empty() && !s.oracle_floors.is_empty() {
        let groups = |pick: fn(&crate::metrics::OraclePerSession) -> Option<f64>| -> Vec<Group> {
            s.oracle_floors
                .iter()
                .map(|f| {
                    let slot = |role: Role| match f.per_session_of(role, pick) {
                        Ok(v) => Slot::Bar(Bar { value: v, ci: None, label: readable(v) }),
                        Err(why) => Slot::Missing(why),
                    };
                    Group {
                        module: crate::metrics::Comparison::label_in(&f.module, None, f.split),
                        arms: [slot(Role::Pattern), slot(Role::Control)],
                        estimates: [None, None],
                        note: None,
                    }
                })
                .collect()
        };
        out.push(Row {
            label: "oracle plans — no model sessions: structural floors".into(),
            panels: vec![
                Panel {
                    title: "Tool calls per session (counted over the oracle plans; mean over tasks)".into(),
                    figure: "calls / session: pattern / control",
                    y_title: "tool calls per session",
                    percent: false,
                    kind: Kind::Measured,
                    groups: groups(|m| m.calls),
                },
                Panel {
                    title: "Input tokens per session — an ESTIMATE from bytes / 4, not a measurement".into(),
                    figure: "est. input tokens / session: pattern / control",
                    y_title: "estimated input tokens",
                    percent: false,
                    kind: Kind::Estimate,
                    groups: groups(|m| m.estimated_input_tokens),
                },
            ],
        });
    }
    out
}

/// One arm's slot of one panel, as drawn: for checking the chart against the tables.
#[derive(Debug, Clone, PartialEq)]
pub struct Plotted {
    /// The chart's row: "model ID (provider)", or the oracle plans' row.
    pub row: String,
    /// The table row or column that prints the same values.
    pub figure: &'static str,
    pub module: String,
    pub role: Role,
    /// The bar's value (a rate in percent); `None` where the slot says why there is none.
    pub value: Option<f64>,
    /// The oracle's estimate drawn dashed over the bar.
    pub estimate: Option<f64>,
}

pub fn plotted(s: &Summary) -> Vec<Plotted> {
    let mut out = Vec::new();
    for row in rows(s) {
        for p in &row.panels {
            for g in &p.groups {
                for (j, role) in [Role::Pattern, Role::Control].into_iter().enumerate() {
                    out.push(Plotted {
                        row: row.label.clone(),
                        figure: p.figure,
                        module: g.module.clone(),
                        role,
                        value: match &g.arms[j] {
                            Slot::Bar(b) => Some(b.value),
                            Slot::Missing(_) => None,
                        },
                        estimate: g.estimates[j],
                    });
                }
            }
        }
    }
    out
}

/// Solid bars drawn for model sessions (for tests).
pub fn bar_count(s: &Summary) -> usize {
    rows(s)
        .iter()
        .flat_map(|r| &r.panels)
        .filter(|p| p.kind == Kind::Measured)
        .flat_map(|p| &p.groups)
        .flat_map(|g| &g.arms)
        .filter(|a| matches!(a, Slot::Bar(_)))
        .count()
}

fn size(s: &Summary) -> (u32, u32) {
    let rows = rows(s);
    let h: u32 = rows.iter().map(|r| ROW_TITLE_H + PANEL_H * r.panels.len() as u32).sum();
    (WIDTH, LEGEND_H + h.max(PANEL_H))
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

fn text_at(x: i32, y: i32, text: &str, px: f64, color: &'static RGBColor, pos: Pos) -> Text<'static, (i32, i32), String> {
    Text::new(text.to_owned(), (x, y), TextStyle::from(font(px)).color(color).pos(pos))
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, s: &Summary) -> Result<()> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| AggregateError::Chart(e.to_string());
    root.fill(&WHITE).map_err(err)?;
    let rows = rows(s);
    let (legend, body) = root.split_vertically(LEGEND_H);
    if rows.is_empty() {
        body.draw(&text_at(20, 20, "No sessions: nothing to chart.", 16.0, &GREY, Pos::new(HPos::Left, VPos::Top))).map_err(err)?;
        return Ok(());
    }
    let panels = || rows.iter().flat_map(|r| &r.panels);
    let estimates = panels().any(|p| p.kind == Kind::Estimate || p.groups.iter().any(|g| g.estimates.iter().any(Option::is_some)));
    let intervals = panels().flat_map(|p| &p.groups).flat_map(|g| &g.arms).any(|a| matches!(a, Slot::Bar(b) if b.ci.is_some()));
    draw_legend(&legend, intervals, estimates)?;
    let mut rest = body;
    for row in &rows {
        let (area, below) = rest.split_vertically(ROW_TITLE_H + PANEL_H * row.panels.len() as u32);
        rest = below;
        let (title, mut panels) = area.split_vertically(ROW_TITLE_H);
        title.draw(&text_at(12, ROW_TITLE_H as i32 / 2, &row.label, 17.0, &BLACK, Pos::new(HPos::Left, VPos::Center))).map_err(err)?;
        for panel in &row.panels {
            let (pa, below) = panels.split_vertically(PANEL_H);
            panels = below;
            draw_panel(&pa, panel)?;
        }
    }
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, intervals: bool, estimates: bool) -> Result<()> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| AggregateError::Chart(e.to_string());
    let y = LEGEND_H as i32 / 2;
    let mut x = 14;
    let left = Pos::new(HPos::Left, VPos::Center);
    for (color, name) in [(PATTERN, "pattern"), (CONTROL, "control")] {
        area.draw(&Rectangle::new([(x, y - 8), (x + 16, y + 8)], color.filled())).map_err(err)?;
        area.draw(&text_at(x + 22, y, name, 14.0, &BLACK, left)).map_err(err)?;
        x += 110;
    }
    if intervals {
        area.draw(&PathElement::new(vec![(x + 8, y - 9), (x + 8, y + 9)], BLACK.stroke_width(2))).map_err(err)?;
        area.draw(&PathElement::new(vec![(x + 3, y - 9), (x + 13, y - 9)], BLACK.stroke_width(2))).map_err(err)?;
        area.draw(&PathElement::new(vec![(x + 3, y + 9), (x + 13, y + 9)], BLACK.stroke_width(2))).map_err(err)?;
        area.draw(&text_at(x + 22, y, "95% interval", 14.0, &BLACK, left)).map_err(err)?;
        x += 140;
    }
    if estimates {
        area.draw(&DashedPathElement::new(vec![(x, y), (x + 26, y)], 5, 3, BLACK.stroke_width(2))).map_err(err)?;
        area.draw(&text_at(x + 32, y, "oracle plan, estimated (bytes / 4) — not a measurement", 14.0, &BLACK, left)).map_err(err)?;
    }
    Ok(())
}

/// Where arm `j` of group `i` sits on the x axis.
fn bar_span(i: usize, j: usize) -> (f64, f64) {
    let x0 = i as f64 + 0.12 + j as f64 * 0.39;
    (x0, x0 + 0.37)
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel) -> Result<()> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| AggregateError::Chart(e.to_string());
    let n = p.groups.len().max(1);
    let mut top: f64 = 0.0;
    for g in &p.groups {
        for slot in &g.arms {
            if let Slot::Bar(b) = slot {
                top = top.max(b.ci.map_or(b.value, |i| i.hi.max(b.value)));
            }
        }
        for e in g.estimates.iter().flatten() {
            top = top.max(*e);
        }
    }
    // Headroom for the labels above the bars.
    let ymax = if p.percent {
        112.0
    } else if top <= 0.0 {
        1.0
    } else {
        top * 1.2
    };
    let percent_ticks = |v: &f64| format!("{v:.0}%");
    let number_ticks = |v: &f64| readable(*v);
    let formatter: &dyn Fn(&f64) -> String = if p.percent { &percent_ticks } else { &number_ticks };
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, font(15.0))
        .margin_left(8)
        .margin_right(16)
        .margin_top(4)
        .margin_bottom(4)
        .x_label_area_size(if p.groups.iter().any(|g| g.note.is_some()) { 52 } else { 34 })
        .y_label_area_size(86)
        .build_cartesian_2d(0f64..n as f64, 0f64..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .x_labels(0)
        .y_labels(if p.percent { 6 } else { 5 })
        .y_label_formatter(formatter)
        .y_label_style(font(13.0))
        .y_desc(p.y_title)
        .axis_desc_style(font(13.0))
        .draw()
        .map_err(err)?;
    let plot = chart.plotting_area();
    let base = area.get_base_pixel();
    // Labels are placed in the panel's pixels, from data coordinates.
    let at = |x: f64, y: f64| {
        let (px, py) = chart.backend_coord(&(x, y));
        (px - base.0, py - base.1)
    };
    for (i, g) in p.groups.iter().enumerate() {
        for (j, (slot, color)) in g.arms.iter().zip([PATTERN, CONTROL]).enumerate() {
            let (x0, x1) = bar_span(i, j);
            let xm = (x0 + x1) / 2.0;
            match slot {
                Slot::Bar(b) => {
                    match p.kind {
                        Kind::Measured => plot.draw(&Rectangle::new([(x0, 0.0), (x1, b.value)], color.filled())).map_err(err)?,
                        Kind::Estimate => {
                            plot.draw(&Rectangle::new([(x0, 0.0), (x1, b.value)], color.mix(0.12).filled())).map_err(err)?;
                            let outline = vec![(x0, 0.0), (x0, b.value), (x1, b.value), (x1, 0.0)];
                            plot.draw(&DashedPathElement::new(outline, 6, 4, color.stroke_width(2))).map_err(err)?;
                        }
                    }
                    let mut label_y = b.value;
                    if let Some(ci) = b.ci {
                        let cap = (x1 - x0) * 0.18;
                        plot.draw(&PathElement::new(vec![(xm, ci.lo), (xm, ci.hi)], BLACK.stroke_width(2))).map_err(err)?;
                        for y in [ci.lo, ci.hi] {
                            plot.draw(&PathElement::new(vec![(xm - cap, y), (xm + cap, y)], BLACK.stroke_width(2))).map_err(err)?;
                        }
                        label_y = label_y.max(ci.hi);
                    }
                    let label = if p.kind == Kind::Estimate { format!("≈{}", b.label) } else { b.label.clone() };
                    let (lx, ly) = at(xm, label_y);
                    area.draw(&text_at(lx, ly - 4, &label, 12.0, &BLACK, Pos::new(HPos::Center, VPos::Bottom))).map_err(err)?;
                }
                Slot::Missing(why) => {
                    let (lx, ly) = at(xm, 0.0);
                    area.draw(&text_at(lx, ly - 6, why, 12.0, &GREY, Pos::new(HPos::Center, VPos::Bottom))).map_err(err)?;
                }
            }
            if let Some(e) = g.estimates[j] {
                plot.draw(&DashedPathElement::new(vec![(x0 - 0.02, e), (x1 + 0.02, e)], 6, 4, BLACK.stroke_width(2))).map_err(err)?;
                let (lx, ly) = at(x1, e);
                area.draw(&text_at(lx - 2, ly - 3, "est.", 12.0, &BLACK, Pos::new(HPos::Right, VPos::Bottom))).map_err(err)?;
            }
        }
        // The module's name under its group.
        let (mx, my) = at(i as f64 + 0.5, 0.0);
        area.draw(&text_at(mx, my + 8, &g.module, 14.0, &BLACK, Pos::new(HPos::Center, VPos::Top))).map_err(err)?;
        if let Some(note) = g.note {
            area.draw(&text_at(mx, my + 27, note, 12.0, &WARN, Pos::new(HPos::Center, VPos::Top))).map_err(err)?;
        }
    }
    if p.groups.is_empty() {
        let (lx, ly) = at(0.5, ymax / 2.0);
        area.draw(&text_at(lx, ly, "no modules to show", 14.0, &GREY, Pos::new(HPos::Center, VPos::Center))).map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn numbers_read_as_numbers() {
        assert_eq!(readable(10_000.0), "10,000");
        assert_eq!(readable(1_234_567.4), "1,234,567");
        assert_eq!(readable(-2_824.0), "-2,824");
        assert_eq!(readable(999.0), "999");
        assert_eq!(readable(4.25), "4.2");
        assert_eq!(readable(0.0), "0");
        assert_eq!(readable(150.6), "151");
    }
}
