//! The order-effects section of a warm experiment: per arm and position in the conversation, how
//! the tasks fared and what they cost.

use super::format::{pct, readable};
use super::tables::Terms;
use super::{Align, Block, Cell, Section, SectionKind, Text, Unit};
use crate::metrics::Summary;

/// The section, when the experiment has warm sessions.
pub(super) fn section(s: &Summary, terms: &Terms) -> Option<Section> {
    if s.order.is_empty() {
        return None;
    }
    let header = [
        "model · module",
        "arm",
        "position",
        "valid / attempted",
        "passed (rate)",
        "input tokens / task",
        "context at start",
        "est. input tokens / task",
        "after a failure",
    ];
    let mean = |x: Option<f64>, unit| match x {
        Some(v) => Cell::figure(readable(v), Some(v), unit),
        None => Cell::text("—"),
    };
    let rows = s
        .order
        .iter()
        .map(|r| {
            vec![
                Cell::text(format!("{} · {}", r.model, crate::metrics::Comparison::label_in(&r.module, None, r.split))),
                Cell::text(format!("{}: {}", r.role, r.server)),
                Cell::figure(r.position.to_string(), Some(r.position as f64), Unit::Tasks),
                Cell::figure(format!("{} / {}", r.valid, r.attempted), Some(r.valid as f64), Unit::Sessions),
                match r.success_rate {
                    Some(x) => Cell::figure(format!("{} ({})", r.passed, pct(x)), Some(x), Unit::Rate),
                    None => Cell::text("—"),
                },
                mean(r.input_tokens_mean, Unit::Tokens),
                mean(r.context_tokens_at_start_mean, Unit::Tokens),
                mean(r.estimated_input_tokens_mean, Unit::EstimatedTokens),
                Cell::figure(r.after_a_failure.to_string(), Some(r.after_a_failure as f64), Unit::Sessions),
            ]
        })
        .collect();
    let align = [Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right];
    let intro = Text::plain(
        "Warm conversations, task by task in the order each conversation met them (rotated across reps, so every task sits at several positions). Whether the cost per task falls as a conversation goes on — discovery paid once, the server's ways learned — or rises with the context every request carries; and how often a task followed an earlier one that did not pass.",
    );
    Some(Section {
        kind: SectionKind::Order,
        heading: Some("Order effects".into()),
        blocks: vec![Block::Paragraph(intro), Block::Table(terms.grid(&header, &align, rows))],
    })
}
