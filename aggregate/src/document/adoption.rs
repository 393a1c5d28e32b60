//! The adoption section: per model, module and arm, which tools the valid sessions called and how
//! much of that was wasted — a second layer beside the results, never folded into them.

use super::format::pct;
use super::tables::Terms;
use super::{Align, Block, Cell, Section, SectionKind, Text, Unit};
use crate::metrics::{ArmMetrics, Comparison, Summary};

/// Tools named in the "most called" cell.
const TOP: usize = 3;

/// The section, when there are model sessions to read it from.
pub(super) fn section(s: &Summary, terms: &Terms) -> Option<Section> {
    if s.models.is_empty() {
        return None;
    }
    let mut header =
        vec!["model · module", "arm", "calls", "most called", "to the pattern's own tools", "wasted: errors / unknown / not JSON", "exact repeats"];
    let mut align = vec![Align::Left, Align::Left, Align::Right, Align::Left, Align::Right, Align::Right, Align::Right];
    let listed =
        s.models.iter().flat_map(|m| &m.modules).flat_map(|module| [&module.pattern, &module.control]).flatten().any(|a| a.adoption.distractors.is_some());
    if listed {
        header.push("to distractors: calls (sessions)");
        align.push(Align::Right);
    }
    let mut rows = Vec::new();
    for m in &s.models {
        for module in &m.modules {
            for (role, arm) in [("pattern", &module.pattern), ("control", &module.control)] {
                let Some(a) = arm else { continue };
                let mut cells = row(&format!("{} · {}", m.model, Comparison::label_in(&module.module, module.comparison.as_ref(), module.split)), role, a);
                if listed {
                    cells.push(distractor_cell(a));
                }
                rows.push(cells);
            }
        }
    }
    let mut intro = "How each arm's valid sessions used what they were offered. A control has no tools of its own design: its share is a structural zero, not a failure to adopt. Beside the results, never folded into them.".to_owned();
    if listed {
        intro.push_str(" Distractors are tools of other servers the client listed beside both arms' own (the same in both); a call to one never reached the arm and was refused.");
    }
    let intro = Text::plain(intro);
    Some(Section {
        kind: SectionKind::Adoption,
        heading: Some("Adoption".into()),
        blocks: vec![Block::Paragraph(intro), Block::Table(terms.grid(&header, &align, rows))],
    })
}

fn row(label: &str, role: &str, a: &ArmMetrics) -> Vec<Cell> {
    let d = &a.adoption;
    let top: Vec<String> = d.by_tool.iter().take(TOP).map(|t| format!("{} ({})", t.tool, t.calls)).collect();
    let more = d.by_tool.len().saturating_sub(TOP);
    let top = if top.is_empty() {
        "—".to_owned()
    } else if more > 0 {
        format!("{} and {more} more", top.join(", "))
    } else {
        top.join(", ")
    };
    let own = match (role, d.distinctive_calls) {
        ("control", _) => Cell::text("structural 0"),
        (_, Some(n)) => {
            Cell::figure(format!("{n}{}", d.distinctive_share.map(|s| format!(" ({})", pct(s))).unwrap_or_default()), d.distinctive_share, Unit::Rate)
        }
        (_, None) => Cell::text("—"),
    };
    let wasted = Cell::figure(
        format!("{} / {} / {}", d.errors, d.unknown_tools, d.invalid_arguments),
        Some((d.errors + d.unknown_tools + d.invalid_arguments) as f64),
        Unit::Calls,
    );
    let repeats = match d.repeats {
        Some(n) => Cell::figure(n.to_string(), Some(n as f64), Unit::Calls),
        None => Cell::text("unknown (arguments not kept)"),
    };
    vec![
        Cell::text(label),
        Cell::text(format!("{role}: {}", a.server)),
        Cell::figure(d.calls.to_string(), Some(d.calls as f64), Unit::Calls),
        Cell::text(top),
        own,
        wasted,
        repeats,
    ]
}

/// Calls to distractors and the sessions that made one, of the valid sessions.
fn distractor_cell(a: &ArmMetrics) -> Cell {
    match &a.adoption.distractors {
        Some(d) => {
            Cell::figure(format!("{} ({} of {} sessions, {} listed)", d.calls, d.sessions_with_calls, d.sessions, d.listed), Some(d.calls as f64), Unit::Calls)
        }
        None => Cell::text("none listed"),
    }
}
