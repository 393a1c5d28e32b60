//! Dev and held-out tasks side by side, per model (or the oracle) and module — never one pooled
//! verdict — and every task on which the pattern did worse than the control.

use super::format::{pct, readable, signed_pct};
use super::tables::Terms;
use super::{Align, Block, Cell, Section, SectionKind, Text, Unit};
use crate::metrics::splits::{LosingTask, UnjudgedTask};
use crate::metrics::{Comparison, Summary};
use records::{Role, Split};

/// The section, when the run has held-out tasks or the pattern lost on some task.
pub(super) fn section(s: &Summary, terms: &Terms) -> Option<Section> {
    let held_out = s.models.iter().flat_map(|m| &m.modules).any(|x| x.split == Split::HeldOut) || s.oracle_floors.iter().any(|f| f.split == Split::HeldOut);
    let (mut losing, mut unjudged) = (Vec::new(), Vec::new());
    let unjudged_row = |label: &str, split: Split, t: &UnjudgedTask| {
        vec![Cell::text(label), Cell::text(split.as_str()), Cell::text(t.task.as_str()), Cell::text(t.why.as_str())]
    };
    for m in &s.models {
        for x in &m.modules {
            let label = format!("{} · {}", m.model, Comparison::label(&x.module, x.comparison.as_ref()));
            losing.extend(x.losing_tasks.iter().map(|t| losing_row(&label, x.split, t)));
            unjudged.extend(x.unjudged_tasks.iter().map(|t| unjudged_row(&label, x.split, t)));
        }
    }
    for f in &s.oracle_floors {
        let label = format!("oracle · {}", Comparison::label(&f.module, f.comparison.as_ref()));
        losing.extend(f.losing_tasks.iter().map(|t| losing_row(&label, f.split, t)));
        unjudged.extend(f.unjudged_tasks.iter().map(|t| unjudged_row(&label, f.split, t)));
    }
    if !held_out && losing.is_empty() && unjudged.is_empty() {
        return None;
    }
    let mut blocks = Vec::new();
    if held_out {
        blocks.push(Block::Paragraph(Text::plain(
            "Held-out tasks are sealed by hash (pipeline seal) and never tuned against; each module's dev and held-out tasks are reported apart, with a verdict each, never pooled. Where they disagree, the notice above the headline says so. The rules are docs/held-out.md.",
        )));
        if let Some(seal) = &s.run.seal {
            blocks.push(Block::Paragraph(
                Text::plain(format!(
                    "The seal this run was checked against: held_out.lock sha256 {}…, last changed {}: ",
                    seal.lock_sha256.get(..12).unwrap_or(&seal.lock_sha256),
                    seal.sealed_at.format("%Y-%m-%d %H:%M UTC")
                ))
                .strong(seal.reason.as_str())
                .and("."),
            ));
        }
        let mut rows = Vec::new();
        for m in &s.models {
            for x in &m.modules {
                let rate = |a: &Option<crate::metrics::ArmMetrics>| a.as_ref().and_then(|a| a.success.rate).map_or("—".to_string(), pct);
                let tokens = match &x.paired.input_tokens {
                    Some(d) => match d.relative {
                        Some(r) => Cell::figure(signed_pct(r), Some(r), Unit::Rate),
                        None => Cell::text("—"),
                    },
                    None => Cell::text("— (no pairs)"),
                };
                rows.push(vec![
                    Cell::text(format!("{} · {}", m.model, Comparison::label(&x.module, x.comparison.as_ref()))),
                    Cell::text(x.split.as_str()),
                    Cell::figure(x.tasks.len().to_string(), Some(x.tasks.len() as f64), Unit::Tasks),
                    Cell::text(format!("{} / {}", rate(&x.pattern), rate(&x.control))),
                    tokens,
                    Cell::text(x.verdict.as_str()),
                ]);
            }
        }
        for f in &s.oracle_floors {
            let calls = |role| f.per_session_of(role, |p| p.calls).map_or("—".to_string(), readable);
            let est = |role| f.per_session_of(role, |p| p.estimated_input_tokens).map_or("—".to_string(), readable);
            let tasks = f.rows.iter().map(|r| r.task.as_str()).collect::<std::collections::BTreeSet<_>>().len();
            rows.push(vec![
                Cell::text(format!("oracle · {}", Comparison::label(&f.module, f.comparison.as_ref()))),
                Cell::text(f.split.as_str()),
                Cell::figure(tasks.to_string(), Some(tasks as f64), Unit::Tasks),
                Cell::text(format!("{} / {} calls", calls(Role::Pattern), calls(Role::Control))),
                Cell::text(format!("{} / {} est.", est(Role::Pattern), est(Role::Control))),
                Cell::text("— (no verdict for the oracle)"),
            ]);
        }
        let header = ["model · module", "split", "tasks of the split", "pattern / control", "input tokens: pattern vs control", "verdict of the split"];
        blocks.push(Block::Table(terms.grid(&header, &[Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Left], rows)));
    }
    if losing.is_empty() {
        blocks.push(Block::Paragraph(Text::plain("On no task did the pattern do worse than the control.")));
    } else {
        blocks.push(Block::Paragraph(Text::plain(format!(
            "The {} task{} on which the pattern did worse than the control — a lower pass rate, or as often passed with more input tokens per valid session; for the oracle, a plan with more estimated input, or, costing no more, more calls:",
            losing.len(),
            if losing.len() == 1 { "" } else { "s" }
        ))));
        let header = ["model · module", "split", "task", "the pattern loses on", "pattern", "control"];
        blocks.push(Block::Table(terms.grid(&header, &[Align::Left, Align::Left, Align::Left, Align::Left, Align::Right, Align::Right], losing)));
    }
    if !unjudged.is_empty() {
        blocks.push(Block::Paragraph(Text::plain(format!(
            "{} task{} could not be judged by that rule, so {} on neither side of it:",
            unjudged.len(),
            if unjudged.len() == 1 { "" } else { "s" },
            if unjudged.len() == 1 { "it is" } else { "they are" }
        ))));
        let header = ["model · module", "split", "task", "why"];
        blocks.push(Block::Table(terms.grid(&header, &[Align::Left, Align::Left, Align::Left, Align::Left], unjudged)));
    }
    let heading = if held_out { "Dev and held-out tasks" } else { "Tasks on which the pattern loses" };
    Some(Section { kind: SectionKind::Splits, heading: Some(heading.into()), blocks })
}

fn losing_row(label: &str, split: Split, t: &LosingTask) -> Vec<Cell> {
    let (on, fmt): (&str, fn(f64) -> String) = match t.on.as_str() {
        "success" => ("success rate", pct),
        "input_tokens" => ("input tokens / session", readable),
        "calls" => ("calls (oracle plan; no more est. input)", readable),
        _ => ("est. input tokens (oracle plan)", readable),
    };
    vec![Cell::text(label), Cell::text(split.as_str()), Cell::text(t.task.as_str()), Cell::text(on), Cell::text(fmt(t.pattern)), Cell::text(fmt(t.control))]
}
