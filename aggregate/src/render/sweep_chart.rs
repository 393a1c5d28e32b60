//! The chart of a sweep: one cost per level and arm, a line per arm, so where the pattern's line
//! crosses below the control's reads off the picture as it does off `sweep.md`.
//!
//! Levels are spaced evenly (they are usually doublings: 1, 2, 4, 8), labelled with their value.
//! A point without a value is left out and its level marked "no value" rather than drawn at zero.
//! An interval, when the cost has one (model runs), is drawn as a bar through the point.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use records::Role;

use crate::chart::{CONTROL, GREY, PATTERN, font, register_font};
use crate::error::{AggregateError, Result};

/// One arm's costs over the levels.
#[derive(Debug, Clone)]
pub struct Series {
    pub role: Role,
    /// The server, shown in the legend.
    pub server: String,
    /// Per level (in the chart's level order): the value and its interval, if any.
    pub points: Vec<(Option<f64>, Option<[f64; 2]>)>,
}

/// What the chart shows.
#[derive(Debug, Clone)]
pub struct SweepChart {
    pub title: String,
    /// The factor, e.g. "world scale" or "state size".
    pub x_label: String,
    /// The cost and its unit, e.g. "est. input tokens / session (oracle floor)".
    pub y_label: String,
    pub levels: Vec<u32>,
    pub series: Vec<Series>,
}

const SIZE: (u32, u32) = (960, 520);

pub fn render_svg(c: &SweepChart) -> Result<String> {
    register_font()?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        draw(&root, c).map_err(|e| AggregateError::Chart(e.to_string()))?;
        root.present().map_err(|e| AggregateError::Chart(e.to_string()))?;
    }
    Ok(out)
}

fn color(role: Role) -> RGBColor {
    match role {
        Role::Pattern => PATTERN,
        Role::Control => CONTROL,
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, plotters::coord::Shift>, c: &SweepChart) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let values = || c.series.iter().flat_map(|s| &s.points).flat_map(|(v, ci)| v.iter().copied().chain(ci.iter().flat_map(|[lo, hi]| [*lo, *hi])));
    let top = values().fold(0.0_f64, f64::max);
    if c.levels.is_empty() || top <= 0.0 {
        root.draw(&Text::new("No level has a value: nothing to chart.", (20, 20), font(16.0).color(&GREY)))?;
        return Ok(());
    }
    let n = c.levels.len();
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, font(18.0))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(84)
        .build_cartesian_2d(-0.5_f64..(n as f64 - 0.5), 0.0_f64..top * 1.12)?;
    let levels = c.levels.clone();
    chart
        .configure_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-9 && i >= 0.0 && (i as usize) < levels.len() { levels[i as usize].to_string() } else { String::new() }
        })
        .y_label_formatter(&|y| crate::chart::readable(*y))
        .x_desc(&c.x_label)
        .y_desc(&c.y_label)
        .label_style(font(13.0))
        .axis_desc_style(font(14.0))
        .disable_x_mesh()
        .light_line_style(WHITE)
        .draw()?;
    for s in &c.series {
        let col = color(s.role);
        let pts: Vec<(f64, f64)> = s.points.iter().enumerate().filter_map(|(i, (v, _))| v.map(|v| (i as f64, v))).collect();
        let label = format!("{} ({})", s.server, if s.role == Role::Pattern { "pattern" } else { "control" });
        chart
            .draw_series(LineSeries::new(pts.clone(), col.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], col.stroke_width(2)));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, col.filled())))?;
        for (i, (_, ci)) in s.points.iter().enumerate() {
            if let Some([lo, hi]) = ci {
                let x = i as f64;
                chart.draw_series(std::iter::once(PathElement::new([(x, *lo), (x, *hi)], col.stroke_width(1))))?;
            }
        }
    }
    for (i, _) in c.levels.iter().enumerate() {
        if c.series.iter().any(|s| s.points.get(i).is_none_or(|(v, _)| v.is_none())) {
            chart.draw_series(std::iter::once(Text::new(
                "no value",
                (i as f64, top * 0.04),
                font(12.0).color(&GREY).pos(Pos::new(HPos::Center, VPos::Bottom)),
            )))?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(GREY)
        .label_font(font(13.0))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: Vec<(Option<f64>, Option<[f64; 2]>)>) -> SweepChart {
        SweepChart {
            title: "t".into(),
            x_label: "world scale".into(),
            y_label: "est. input tokens / session".into(),
            levels: vec![1, 2, 4],
            series: vec![
                Series { role: Role::Pattern, server: "orchestrator".into(), points },
                Series { role: Role::Control, server: "wrapper".into(), points: vec![(Some(10.0), None), (Some(20.0), None), (Some(40.0), None)] },
            ],
        }
    }

    #[test]
    fn a_sweep_chart_labels_its_levels_arms_and_axes() {
        let svg = render_svg(&chart(vec![(Some(12.0), None), (Some(15.0), Some([13.0, 17.0])), (Some(18.0), None)])).unwrap();
        for text in ["orchestrator (pattern)", "wrapper (control)", "world scale", "est. input tokens / session", "\n4\n"] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert!(!svg.contains("no value"));
    }

    #[test]
    fn a_missing_value_is_marked_not_drawn_at_zero() {
        let svg = render_svg(&chart(vec![(Some(12.0), None), (None, None), (Some(18.0), None)])).unwrap();
        assert_eq!(svg.matches("no value").count(), 1);
    }
}
