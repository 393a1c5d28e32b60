//! The side-effects section: per model, module and arm, how many valid sessions changed the world
//! outside their task's footprint, how much, and of which class, with every such session listed
//! so a reader can check it — beside the results, never folded into them.

use super::format::{ci, pct};
use super::tables::Terms;
use super::{Align, Block, Cell, Section, SectionKind, Text, Unit};
use crate::metrics::collateral::CollateralMetrics;
use crate::metrics::{ArmMetrics, Comparison, Summary};

/// Sessions listed in the report; summary.json has them all.
const LISTED: usize = 50;

/// The section, when there are model sessions to read it from.
pub(super) fn section(s: &Summary, terms: &Terms) -> Option<Section> {
    if s.models.is_empty() {
        return None;
    }
    let header = [
        "model · module",
        "arm",
        "sessions held to a footprint (not read)",
        "sessions with collateral writes",
        "writes per session",
        "writes: touched table / untouched table / deletion",
        "passed with collateral writes",
        "paired difference (pattern − control)",
    ];
    let mut rows = Vec::new();
    let mut listed = Vec::new();
    let mut total = 0;
    for m in &s.models {
        for module in &m.modules {
            let label = format!("{} · {}", m.model, Comparison::label_in(&module.module, module.comparison.as_ref(), module.split));
            for (role, arm) in [("pattern", &module.pattern), ("control", &module.control)] {
                let Some(a) = arm else { continue };
                let difference = match (role, &module.paired.collateral) {
                    ("pattern", Some(d)) => Cell::figure(super::format::points_over_pairs(d), Some(d.mean), Unit::Rate),
                    _ => Cell::text("—"),
                };
                rows.push(row(&label, role, a, difference));
                total += a.collateral.sessions_with.len();
                for x in &a.collateral.sessions_with {
                    if listed.len() < LISTED {
                        let writes: Vec<String> = x
                            .writes
                            .iter()
                            .map(|w| {
                                let columns = if w.columns.is_empty() { String::new() } else { format!(" ({})", w.columns.join(", ")) };
                                format!("{} {} {}{columns}: {}", w.table, w.id, w.op, w.class.as_str().replace('_', " "))
                            })
                            .collect();
                        listed.push(vec![
                            Cell::text(label.as_str()),
                            Cell::text(format!("{role}: {}", a.server)),
                            Cell::text(format!("{} rep {}", x.task, x.rep)),
                            Cell::text(if x.passed { "passed" } else { "not passed" }),
                            Cell::text(writes.join("; ")),
                        ]);
                    }
                }
            }
        }
    }
    let align = [Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right];
    let intro = Text::plain(
        "What each valid session changed in the world outside its task's footprint: the rows the arm's own oracle plan changes on the same fresh world. A collateral write is a deletion the footprint does not make, a write to a table it does not touch, or an extra write to one it does (another row, another column, one insert too many). What a footprint row is changed to is the verifier's business, not this table's. Read from the world as each session left it (the transcript's last event); the rules are docs/collateral.md. Beside the results, never folded into them: a pass with collateral writes is still a pass, counted here as one.",
    );
    let mut blocks = vec![Block::Paragraph(intro), Block::Table(terms.grid(&header, &align, rows))];
    if total == 0 {
        blocks.push(Block::Paragraph(Text::plain("No session changed the world outside its task's footprint.")));
    } else {
        let more = if total > listed.len() { format!(" (the first {}; summary.json lists all {total})", listed.len()) } else { String::new() };
        blocks.push(Block::Paragraph(Text::plain(format!("Every session with collateral writes{more}, with the task and rep whose transcript holds it:"))));
        let header = ["model · module", "arm", "session", "passed or not", "rows changed outside the footprint"];
        blocks.push(Block::Table(terms.grid(&header, &[Align::Left; 5], listed)));
    }
    Some(Section { kind: SectionKind::Collateral, heading: Some("Side effects".into()), blocks })
}

fn row(label: &str, role: &str, a: &ArmMetrics, difference: Cell) -> Vec<Cell> {
    let c: &CollateralMetrics = &a.collateral;
    let rate = match c.rate {
        Some(r) => Cell::figure(format!("{} / {} ({}){}", c.with_collateral, c.sessions, pct(r), ci(c.wilson95, pct)), Some(r), Unit::Rate),
        None => Cell::text("— (none read)"),
    };
    let per_session = match c.writes_per_session {
        Some(w) => Cell::figure(format!("{w:.2}"), Some(w), Unit::Rows),
        None => Cell::text("—"),
    };
    let class = |k: &str| c.by_class.get(k).copied().unwrap_or(0);
    vec![
        Cell::text(label),
        Cell::text(format!("{role}: {}", a.server)),
        Cell::figure(format!("{} ({})", c.sessions, c.not_read), Some(c.sessions as f64), Unit::Sessions),
        rate,
        per_session,
        Cell::figure(format!("{} / {} / {}", class("touched_table"), class("untouched_table"), class("deletion")), Some(c.writes as f64), Unit::Rows),
        Cell::figure(c.passed_with_collateral.to_string(), Some(c.passed_with_collateral as f64), Unit::Sessions),
        difference,
    ]
}
