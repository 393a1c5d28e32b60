//! The grounding section: per model, module and arm, whether the entities the final answers name
//! exist, and every hallucinated one listed so a reader can check it — beside the results, never
//! folded into them.

use super::format::{ci, pct};
use super::tables::Terms;
use super::{Align, Block, Cell, Section, SectionKind, Text, Unit};
use crate::metrics::grounding::GroundingMetrics;
use crate::metrics::{ArmMetrics, Comparison, Summary};

/// Hallucinated references listed in the report; summary.json has them all.
const LISTED: usize = 50;

/// The section, when there are model sessions to read it from.
pub(super) fn section(s: &Summary, terms: &Terms) -> Option<Section> {
    if s.models.is_empty() {
        return None;
    }
    let header = [
        "model · module",
        "arm",
        "sessions read (not read)",
        "citing sessions",
        "references: grounded / unresolved / hallucinated (denied)",
        "grounded share",
        "hallucinated share",
        "sessions citing a hallucination",
    ];
    let mut rows = Vec::new();
    let mut listed = Vec::new();
    let mut total = 0;
    for m in &s.models {
        for module in &m.modules {
            for (role, arm) in [("pattern", &module.pattern), ("control", &module.control)] {
                let Some(a) = arm else { continue };
                let label = format!("{} · {}", m.model, Comparison::label_in(&module.module, module.comparison.as_ref(), module.split));
                rows.push(row(&label, role, a));
                total += a.grounding.hallucinations.len();
                for h in &a.grounding.hallucinations {
                    if listed.len() < LISTED {
                        listed.push(vec![
                            Cell::text(label.as_str()),
                            Cell::text(format!("{role}: {}", a.server)),
                            Cell::text(format!("{} rep {}", h.task, h.rep)),
                            Cell::text(format!("“{}”", h.text)),
                            Cell::text(h.kind.as_str()),
                            Cell::text(h.detail.as_deref().unwrap_or("—")),
                        ]);
                    }
                }
            }
        }
    }
    let align = [Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right];
    let intro = Text::plain(
        "Whether the entities each valid, scored session's final answer names — ids of tickets, change requests and deploys; customers, users, services, repositories, runbooks — exist in the world as it stood after the session, read at verification. Grounded: exactly one has it; unresolved: several, or one only in part; hallucinated: none. What the answer itself says does not exist is denied and left out of the shares. An unknown name is read only after a kind word (customer …, assigned to …), so hallucinations are a lower bound. The rules are docs/grounding.md. Beside the results, never folded into them.",
    );
    let mut blocks = vec![Block::Paragraph(intro), Block::Table(terms.grid(&header, &align, rows))];
    if let Some(j) = &s.method.judge {
        blocks.push(Block::Paragraph(Text::plain(format!(
            "The references are the judge's: the model {} at {} listed the entities each answer names, and the world as the session left it said whether each exists. How far to trust these shares: on the gold set's sealed part, before it graded anything, its references agreed with the hand-read ones on {} of {} (κ {}; {} answers it gave nothing usable for).",
            j.model,
            j.base_url,
            j.grounding.accuracy.map_or("— (none)".into(), |a| format!("{:.0} %", 100.0 * a)),
            j.grounding.items,
            j.grounding.kappa.map_or("undefined".into(), |k| format!("{k:.2}")),
            j.grounding.unanswered
        ))));
    } else if let Some(g) = &s.method.graders
        && let Some(said) = g.sentence("grounding", "hand-read references")
    {
        blocks.push(Block::Paragraph(Text::plain(format!(
            "How far to trust these shares: on answers the graders were never tuned on (the gold set's sealed part, hand-graded before the graders ran; graded {}), the grounding {said}.",
            g.measured
        ))));
    }
    if total == 0 {
        blocks.push(Block::Paragraph(Text::plain("No final answer named an entity that does not exist.")));
    } else {
        let more = if total > listed.len() { format!(" (the first {}; summary.json lists all {total})", listed.len()) } else { String::new() };
        blocks.push(Block::Paragraph(Text::plain(format!("Every hallucinated reference{more}, with the task and rep whose transcript holds it:"))));
        let header = ["model · module", "arm", "session", "reference", "kind", "why it cannot be"];
        blocks.push(Block::Table(terms.grid(&header, &[Align::Left; 6], listed)));
    }
    Some(Section { kind: SectionKind::Grounding, heading: Some("Grounding".into()), blocks })
}

fn row(label: &str, role: &str, a: &ArmMetrics) -> Vec<Cell> {
    let g: &GroundingMetrics = &a.grounding;
    let share = |x: Option<f64>, i| match x {
        Some(x) => Cell::figure(format!("{}{}", pct(x), ci(i, pct)), Some(x), Unit::Rate),
        None => Cell::text("— (nothing cited)"),
    };
    let sessions_hallucinating = match g.session_hallucination_rate {
        Some(r) => {
            Cell::figure(format!("{} / {} ({}){}", g.sessions_hallucinating, g.citing, pct(r), ci(g.session_hallucination_wilson95, pct)), Some(r), Unit::Rate)
        }
        None => Cell::text("—"),
    };
    vec![
        Cell::text(label),
        Cell::text(format!("{role}: {}", a.server)),
        Cell::figure(format!("{} ({})", g.sessions, g.not_read), Some(g.sessions as f64), Unit::Sessions),
        Cell::figure(g.citing.to_string(), Some(g.citing as f64), Unit::Sessions),
        Cell::figure(
            format!("{} / {} / {} ({})", g.grounded, g.unresolved, g.hallucinated, g.denied),
            Some((g.grounded + g.unresolved + g.hallucinated) as f64),
            Unit::References,
        ),
        share(g.grounded_share, g.grounded_share_ci95),
        share(g.hallucinated_share, g.hallucinated_share_ci95),
        sessions_hallucinating,
    ]
}
