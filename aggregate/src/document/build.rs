//! The report's document, section by section, in the order a reader needs it: how the run went,
//! what was found, the chart, attrition, the detailed tables, the oracle's floors, provenance and
//! method.

use super::tables::Terms;
use super::{Block, Document, Section, SectionKind, Span, Text};
use crate::metrics::Summary;

/// The document of one experiment's (or a merge's) summary.
pub fn of_summary(s: &Summary) -> Document {
    let exp = if s.experiments.is_empty() { "(none)".to_string() } else { s.experiments.join(", ") };
    let terms = Terms::new(&s.method.definitions);
    let mut sections = vec![notices(s), super::headline::section(s), chart(), super::tables::attrition(s, &terms), super::tables::models(s, &terms)];
    sections.extend(super::adoption::section(s, &terms));
    sections.extend(super::grounding::section(s, &terms));
    sections.extend(super::collateral::section(s, &terms));
    sections.extend(super::security::section(s, &terms));
    sections.extend(super::splits::section(s, &terms));
    sections.extend(super::order::section(s, &terms));
    sections.extend(super::tables::oracle(s, &terms));
    sections.push(super::method::provenance(s, &terms));
    sections.push(super::method::method(s));
    Document { title: format!("mcp-pattern-bench report — {exp}"), sections }
}

/// How the run went comes before any number: a stopped run is missing sessions, and a skipped
/// preflight means nothing checked the endpoint could call tools.
fn notices(s: &Summary) -> Section {
    let mut blocks = Vec::new();
    if let Some(stop) = s.run.stopped.as_ref().filter(|s| s.kind == "budget") {
        blocks.push(Block::Notice(Text::default().strong("The budget ended the run").and(format!(
            " (at {}): {}. It stopped before a pair it could not pay for, never between the arms of a pair; the sessions it never reached are missing, not failed, and a resume with a budget of its own completes them.",
            stop.at.to_rfc3339(),
            stop.detail
        ))));
    } else if let Some(stop) = &s.run.stopped {
        blocks.push(Block::Notice(Text::default().strong("The run stopped early").and(format!(
            " ({}, at {}): {}. Sessions it never reached are missing, not failed; resume the run to complete it.",
            stop.kind,
            stop.at.to_rfc3339(),
            stop.detail
        ))));
    }
    if s.run.preflight_skipped {
        blocks.push(Block::Notice(Text::default().strong("The endpoint preflight was skipped").and(" (--skip-preflight): nothing checked before the sessions that the endpoint answers, serves the model id and returns tool calls natively; a broken setup can look like valid failures.")));
    }
    // Above the headline: a verdict that only the texts it was tuned against support is the
    // failure held-out tasks exist to catch.
    for d in &s.split_disagreements {
        blocks.push(Block::Notice(Text::default().strong("Held-out tasks disagree").and(format!(": {}", d.message))));
    }
    // An arm changed after the seal may have been tuned against the tasks the seal keeps apart.
    if let Some(seal) = &s.run.seal {
        for arm in seal.arms.iter().filter(|a| a.after_seal()) {
            let how = if arm.sealed_sha256.is_some() { "changed after the held-out seal" } else { "is not in the held-out seal" };
            blocks.push(Block::Notice(Text::default().strong(format!("Arm {} {how}", arm.name)).and(format!(
                " (sealed {}; its folder now sha256 {}…): whoever wrote it could have seen the held-out tasks, so its held-out figures are not the untouched test the seal stands for. Re-seal with the arm as it is (pipeline seal --reason …) once that is known not to be so.",
                seal.sealed_at.format("%Y-%m-%d %H:%M UTC"),
                arm.sha256.get(..12).unwrap_or(&arm.sha256)
            ))));
        }
    }
    // Above the headline: the attack every session ran under, and a pattern it compromises more
    // often than the control, as a success regression would be.
    if let Some(a) = &s.run.attack {
        blocks.push(Block::Notice(Text::default().strong(format!("Under attack: {}", a.name)).and(format!(
            " ({}). {}, the same in both arms; the success rates are utility under attack, and the Security section gives how often each arm did what the attacker asked ({}).",
            a.class.replace('_', " "),
            super::security::where_planted(&a.class),
            a.success
        ))));
    }
    raises(
        &mut blocks,
        s,
        "The pattern raises attack success",
        "the attack got what it asked for in more sessions",
        ", whatever the pattern saves. See Security.",
        |x| (x.paired.attack.as_ref(), x.pattern.as_ref().and_then(|a| a.attack.as_ref()?.rate), x.control.as_ref().and_then(|a| a.attack.as_ref()?.rate)),
    );
    // Above the headline too: a pattern that passes as often but changes more of the world than
    // the task needs is what users of write tools fear most, and success does not show it.
    raises(
        &mut blocks,
        s,
        "The pattern raises side effects",
        "more sessions change the world outside the task's footprint",
        ". See Side effects; never folded into success.",
        |x| (x.paired.collateral.as_ref(), x.pattern.as_ref().and_then(|a| a.collateral.rate), x.control.as_ref().and_then(|a| a.collateral.rate)),
    );
    blocks.extend(s.notices.iter().map(|n| Block::Notice(n.as_str().into())));
    Section { kind: SectionKind::Notices, heading: None, blocks }
}

/// The chart's values are per session, as the tables' are (see `render::chart`).
fn chart() -> Section {
    let link = |text: &str, href: &str| Span::Link { text: text.into(), href: href.into() };
    Section {
        kind: SectionKind::Chart,
        heading: Some("Chart".into()),
        blocks: vec![
            Block::Chart { alt: "Success rate, turns and input tokens per module and arm".into(), src: "chart.svg".into(), png: "chart.png".into() },
            Block::Paragraph(
                Text::plain("Every value is per session, as in the tables: the success rate and the means over the arm's valid sessions (the mean columns of the model tables), and the oracle's estimate per session (mean over tasks, the oracle table's est. input tokens / session); nothing is summed over tasks. The same chart as ")
                    .push(link("SVG", "chart.svg"))
                    .and(" and ")
                    .push(link("PNG", "chart.png"))
                    .and(", beside this file."),
            ),
        ],
    }
}

/// A notice for every module whose pattern shows a rate raised over the control's (the paired
/// difference's interval entirely above 0): `pick` gives the difference and each arm's rate.
fn raises(
    blocks: &mut Vec<Block>,
    s: &Summary,
    title: &str,
    what: &str,
    then: &str,
    pick: impl Fn(&crate::metrics::ModuleReport) -> (Option<&crate::metrics::Diff>, Option<f64>, Option<f64>),
) {
    for m in &s.models {
        for x in &m.modules {
            let (d, p, c) = pick(x);
            let Some(d) = d.filter(|d| d.ci95.is_some_and(|i| i.lo > 0.0)) else { continue };
            let rates = match (p, c) {
                (Some(p), Some(c)) => format!(" ({} of its sessions against {} of the control's)", super::format::pct(p), super::format::pct(c)),
                _ => String::new(),
            };
            blocks.push(Block::Notice(Text::default().strong(title).and(format!(
                " ({} · {}): {what}{rates}, {}{then}",
                m.model,
                crate::metrics::Comparison::label_in(&x.module, x.comparison.as_ref(), x.split),
                super::format::points_over_pairs(d)
            ))));
        }
    }
}
