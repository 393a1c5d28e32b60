//! The Markdown writer: `report.md` and `compare.md`, GitHub-flavoured (pipe tables). It walks
//! the [`Document`]; every table cell is escaped for the table it sits in (`|` → `\|`, a line
//! break → a space), so a value can never add a column.

use std::fmt::Write;

use records::Role;

use crate::document::format::pairs;
use crate::document::{Align, Block, Card, Difference, Document, PairSet, Span, Table, Text};

pub fn render(doc: &Document) -> String {
    let mut o = String::new();
    writeln!(o, "# {}\n", doc.title).unwrap();
    for section in &doc.sections {
        if let Some(h) = &section.heading {
            writeln!(o, "## {}\n", text(h)).unwrap();
        }
        for block in &section.blocks {
            write_block(&mut o, block);
        }
    }
    // Every block ends with a blank line; the file ends with one newline.
    let end = o.trim_end_matches('\n').len();
    o.truncate(end);
    o.push('\n');
    o
}

fn text(t: &Text) -> String {
    let mut o = String::new();
    for span in &t.0 {
        match span {
            Span::Plain(s) => o.push_str(s),
            Span::Strong(s) => write!(o, "**{s}**").unwrap(),
            Span::Code(s) if s.contains('`') => write!(o, "`` {s} ``").unwrap(),
            Span::Code(s) => write!(o, "`{s}`").unwrap(),
            Span::Link { text, href } => write!(o, "[{text}]({href})").unwrap(),
        }
    }
    o
}

/// A cell's text, safe inside a pipe table.
fn cell(t: &Text) -> String {
    text(t).replace('|', "\\|").replace('\n', " ")
}

fn write_block(o: &mut String, block: &Block) {
    match block {
        Block::Heading { level, text: t } => writeln!(o, "{} {}\n", "#".repeat(usize::from(*level)), text(t)).unwrap(),
        Block::Paragraph(t) => writeln!(o, "{}\n", text(t)).unwrap(),
        Block::Notice(t) => writeln!(o, "> {}\n", text(t)).unwrap(),
        Block::List(items) => {
            for item in items {
                writeln!(o, "- {}", text(item)).unwrap();
            }
            o.push('\n');
        }
        Block::Table(t) => table(o, t),
        Block::Chart { alt, src, .. } => writeln!(o, "![{alt}]({src})\n").unwrap(),
        Block::Cards(cards) => {
            let oracle = cards.iter().all(|c| c.verdict.is_none());
            for card in cards {
                if card.verdict.is_some() {
                    model_card(o, card);
                } else {
                    oracle_item(o, card);
                }
            }
            if oracle {
                o.push('\n');
            }
        }
    }
}

fn table(o: &mut String, t: &Table) {
    // A key-value table shows its header too ("what | value"): a Markdown table must have one.
    // An empty cell is "| |", a full one "| x |".
    let row = |cells: &mut dyn Iterator<Item = String>| cells.fold("|".to_string(), |r, c| if c.is_empty() { r + " |" } else { format!("{r} {c} |") });
    writeln!(o, "{}", row(&mut t.header.iter().map(|c| cell(&c.text)))).unwrap();
    writeln!(o, "{}", row(&mut t.align.iter().map(|a| if *a == Align::Right { "---:".to_string() } else { "---".to_string() }))).unwrap();
    for r in &t.rows {
        writeln!(o, "{}", row(&mut r.iter().map(|c| cell(&c.text)))).unwrap();
    }
    o.push('\n');
}

fn arm(card: &Card, metric: usize, role: Role) -> Option<&crate::document::Figure> {
    card.metrics.get(metric)?.arms.iter().find(|(r, _)| *r == role).map(|(_, f)| f)
}

fn sessions(card: &Card, role: Role) -> &str {
    card.sessions.iter().find(|(r, _)| *r == role).map_or("—", |(_, s)| s.as_str())
}

/// "**title — verdict.** reason." and the three metrics as a list.
fn model_card(o: &mut String, card: &Card) {
    writeln!(o, "**{} — {}.** {}.\n", card.title, card.verdict.as_deref().unwrap_or_default(), text(&card.reason)).unwrap();
    writeln!(o, "- sessions, valid / attempted: pattern {} · control {}", sessions(card, Role::Pattern), sessions(card, Role::Control)).unwrap();
    for (i, metric) in card.metrics.iter().enumerate() {
        let figure = |role: Role| {
            arm(card, i, role).map_or_else(String::new, |f| {
                let mut s = f.value.clone();
                for part in [&f.counts, &f.interval].into_iter().flatten() {
                    write!(s, " {part}").unwrap();
                }
                s
            })
        };
        // A rate's one difference is over all pairs by definition; the means name their sets.
        let differences: Vec<String> = match metric.differences.as_slice() {
            [only] => vec![only.value.clone().unwrap_or_else(|| "—".into())],
            many => many.iter().map(difference).collect(),
        };
        writeln!(o, "- {}: pattern {} · control {} · difference {}", metric.title, figure(Role::Pattern), figure(Role::Control), differences.join("; "))
            .unwrap();
    }
    o.push('\n');
}

fn difference(d: &Difference) -> String {
    let value = d.value.as_deref().unwrap_or("—");
    match d.over {
        PairSet::All => match &d.over_failures {
            Some(why) => format!("{value} over all {}, {why}", pairs(d.pairs)),
            None => format!("{value} over all {}", pairs(d.pairs)),
        },
        PairSet::BothPassed => match &d.value {
            Some(v) => format!("{v} over the {} where both passed", pairs(d.pairs)),
            None => format!("none over the pairs where both passed ({} such pairs)", d.pairs),
        },
        PairSet::Means => value.into(),
    }
}

/// The oracle's module as one list item: counted calls and estimated tokens per session.
fn oracle_item(o: &mut String, card: &Card) {
    let server = |role: Role| card.servers.iter().find(|(r, _)| *r == role).map_or("—", |(_, s)| s.as_str());
    let value = |i: usize, role: Role| arm(card, i, role).map_or("—", |f| f.value.as_str());
    let change = card.metrics.get(1).and_then(|m| m.differences.first()).and_then(|d| d.relative.as_deref()).map(|r| format!(" ({r})")).unwrap_or_default();
    writeln!(
        o,
        "- **{}** (valid / attempted sessions: pattern {} · control {}): tool calls per session, pattern {} {} · control {} {}; estimated input tokens per session (estimate) {} · {}{change}.",
        card.title,
        sessions(card, Role::Pattern),
        sessions(card, Role::Control),
        server(Role::Pattern),
        value(0, Role::Pattern),
        server(Role::Control),
        value(0, Role::Control),
        value(1, Role::Pattern),
        value(1, Role::Control),
    )
    .unwrap();
}
