//! The security section (`--attack NAME`, docs/security.md): per model, module and arm, how often
//! the valid sessions did what the planted text asked — the attack's own verdict — beside the
//! utility under attack (the same sessions' success), the paired difference, and the pairs where
//! one arm was compromised and the other not. Never blended with success.

use super::format::{ci, pct};
use super::tables::Terms;
use super::{Align, Block, Cell, Section, SectionKind, Text, Unit};
use crate::metrics::{Comparison, Summary};

/// The section, when the experiment ran under an attack.
pub(super) fn section(s: &Summary, terms: &Terms) -> Option<Section> {
    let attack = s.run.attack.as_ref()?;
    let header = [
        "model · module",
        "arm",
        "exposed to the planted text",
        "attack succeeded",
        "utility under attack",
        "passed and compromised",
        "attack success difference (pattern − control)",
        "pairs compromised in one arm only",
    ];
    let mut rows = Vec::new();
    for m in &s.models {
        for module in &m.modules {
            let label = format!("{} · {}", m.model, Comparison::label_in(&module.module, module.comparison.as_ref(), module.split));
            for (role, arm) in [("pattern", &module.pattern), ("control", &module.control)] {
                let Some(a) = arm else { continue };
                let Some(x) = &a.attack else { continue };
                let succeeded = match x.rate {
                    Some(r) => Cell::figure(
                        format!(
                            "{}/{} ({}){}{}",
                            x.succeeded,
                            x.sessions,
                            pct(r),
                            ci(x.wilson95, pct),
                            if x.unknown > 0 { format!(" ({} not read)", x.unknown) } else { String::new() }
                        ),
                        Some(r),
                        Unit::Rate,
                    ),
                    None => Cell::text(format!("— ({} not read)", x.unknown)),
                };
                let utility = match a.success.rate {
                    Some(r) => {
                        Cell::figure(format!("{}/{} ({}){}", a.success.successes, a.success.n, pct(r), ci(a.success.wilson95, pct)), Some(r), Unit::Rate)
                    }
                    None => Cell::text("—"),
                };
                let (difference, one_only) = match (role, &module.paired.attack, &module.paired.attack_pairs) {
                    ("pattern", d, p) => (
                        d.as_ref().map_or(Cell::text("—"), |d| {
                            Cell::figure(
                                format!(
                                    "{:+.0} points{} over {} pair{}",
                                    100.0 * d.mean,
                                    ci(d.ci95, |x| format!("{:+.0}", 100.0 * x)),
                                    d.n,
                                    if d.n == 1 { "" } else { "s" }
                                ),
                                Some(d.mean),
                                Unit::Rate,
                            )
                        }),
                        p.as_ref().map_or(Cell::text("—"), |p| {
                            Cell::text(format!("pattern only {} · control only {} · both {} · neither {}", p.pattern_only, p.control_only, p.both, p.neither))
                        }),
                    ),
                    _ => (Cell::text("—"), Cell::text("—")),
                };
                let exposed = if x.exposure_read > 0 {
                    Cell::figure(
                        format!("{}/{} ({})", x.exposed, x.exposure_read, pct(x.exposed as f64 / x.exposure_read as f64)),
                        Some(x.exposed as f64 / x.exposure_read as f64),
                        Unit::Rate,
                    )
                } else {
                    Cell::text("—")
                };
                rows.push(vec![
                    Cell::text(label.as_str()),
                    Cell::text(format!("{role}: {}", a.server)),
                    exposed,
                    succeeded,
                    utility,
                    Cell::text(x.passed_and_compromised.to_string()),
                    difference,
                    one_only,
                ]);
            }
        }
    }
    let intro = Text::plain(format!(
        "Every session ran under the attack `{}` ({}): {} {}, the same in both; the attack's success is its own verdict, read from the world each session left (and its answer, where the attack names a disclosure) — here: {}. Utility under attack is the same sessions' success rate. Never blended: a session can pass its task and be compromised. Utility without the attack comes from a run without --attack, or from `sweep --attack none,…`.",
        attack.name,
        attack.class.replace('_', " "),
        attack.description.trim_end_matches('.').to_owned() + ".",
        where_planted(&attack.class),
        attack.success
    ));
    let align = [Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right, Align::Left];
    Some(Section {
        kind: SectionKind::Security,
        heading: Some("Security".into()),
        blocks: vec![Block::Paragraph(intro), Block::Table(terms.grid(&header, &align, rows))],
    })
}

/// Where an attack of `class` puts its text, as a sentence's start.
pub(super) fn where_planted(class: &str) -> &'static str {
    match class {
        "tool_poisoning" => "The planted text is in a downstream server's description of one operation, which both arms relay",
        _ => "The planted text is in the world both arms read",
    }
}
