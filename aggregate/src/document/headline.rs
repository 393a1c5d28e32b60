//! What was found, first: per model and module a card with the verdict and the three metrics
//! side by side, attempted vs valid sessions beside them; without model sessions, the oracle's
//! counted calls and estimated tokens.

use records::Role;

use super::format::{delta, invalid_list, pct, readable, signed_pct, signed_readable, valued};
use super::{Block, Card, CardMetric, Difference, Figure, PairSet, Section, SectionKind, Text};
use crate::metrics::{ArmMetrics, Comparison, Dist, ModuleReport, OracleModule, OraclePerSession, Summary};

pub(super) fn section(s: &Summary) -> Section {
    let mut blocks = Vec::new();
    if s.models.is_empty() {
        blocks.push(Block::Paragraph(
            Text::plain("No model sessions: the oracle's scripted plans only, no model. Calls are counted; tokens are ")
                .strong("estimates")
                .and(" (bytes / 4), never measurements."),
        ));
        blocks.push(Block::Cards(s.oracle_floors.iter().map(oracle_card).collect()));
    }
    for m in &s.models {
        blocks.push(Block::Heading { level: 3, text: Text::plain("Model ").and_code(&m.model).and(format!(" ({})", m.provider)) });
        let simulated = m.provider == records::Provider::Simulated;
        if simulated {
            blocks.push(Block::Paragraph(
                Text::plain("")
                    .strong("Planted effects: this checks the instrument, not the pattern.")
                    .and(" This model is a simulated agent: it follows the oracle plans, slips as its profile plants, and its tokens are ")
                    .strong("synthetic")
                    .and(" (estimated from each session's real bytes). Its verdicts say whether the bench finds what was planted; they are not evidence about a pattern."),
            ));
        }
        blocks.push(Block::Cards(m.modules.iter().map(|x| model_card(x, simulated)).collect()));
    }
    Section { kind: SectionKind::Headline, heading: Some("Headline".into()), blocks }
}

/// "11/12 (provider_error: 1)", "no sessions".
fn sessions_line(a: &Option<ArmMetrics>) -> String {
    match a {
        None => "no sessions".into(),
        Some(a) if a.invalid.is_empty() => format!("{}/{}", a.valid, a.attempted),
        Some(a) => format!("{}/{} ({})", a.valid, a.attempted, invalid_list(&a.invalid)),
    }
}

fn arms(x: &ModuleReport, figure: impl Fn(&ArmMetrics) -> Figure) -> Vec<(Role, Figure)> {
    [(Role::Pattern, &x.pattern), (Role::Control, &x.control)]
        .into_iter()
        .map(|(role, a)| (role, a.as_ref().map(&figure).unwrap_or_else(|| Figure::none("no sessions"))))
        .collect()
}

fn interval(i: Option<crate::stats::Interval>, f: fn(f64) -> String) -> Option<String> {
    i.map(|i| format!("[{}, {}]", f(i.lo), f(i.hi)))
}

fn mean_figure(d: &Dist) -> Figure {
    match d.mean {
        Some(m) => Figure { value: readable(m), counts: None, interval: interval(d.mean_ci95, readable), missing: d.missing },
        None => Figure { missing: d.missing, ..Figure::none("—") },
    }
}

/// The label the all-pairs turn and token differences carry when an arm passed too little: they
/// are then computed over failures and must not read as savings.
pub(super) fn over_failures(m: &ModuleReport) -> Option<String> {
    if m.few_passes.is_empty() {
        return None;
    }
    let arms: Vec<&str> = m.few_passes.iter().map(|r| r.as_str()).collect();
    Some(format!(
        "computed over failures ({} passed too little; {} of {} pairs passed in neither arm), not a saving",
        arms.join(" and "),
        m.paired.outcomes.neither,
        m.paired.pairs_used
    ))
}

fn model_card(x: &ModuleReport, simulated: bool) -> Card {
    let success = CardMetric {
        title: "success rate [Wilson 95%]".into(),
        estimate: false,
        arms: arms(x, |a| match a.success.rate {
            Some(r) => Figure {
                value: pct(r),
                counts: Some(format!("({}/{})", a.success.successes, a.success.n)),
                interval: interval(a.success.wilson95, pct),
                missing: 0,
            },
            None => Figure::none("—"),
        }),
        differences: vec![Difference {
            over: PairSet::All,
            value: x.paired.success.as_ref().map(|d| valued(Some(d.mean), d.ci95, signed_pct)),
            pairs: x.paired.pairs_used,
            relative: None,
            over_failures: None,
        }],
    };
    let both = &x.paired.both_passed;
    let mut metrics = vec![success];
    for (title, pick, all, succ) in [
        ("turns per session, mean [95% CI]", (|a: &ArmMetrics| &a.turns) as fn(&ArmMetrics) -> &Dist, &x.paired.turns, &both.turns),
        ("input tokens per session, mean [95% CI]", |a: &ArmMetrics| &a.input_tokens, &x.paired.input_tokens, &both.input_tokens),
    ] {
        metrics.push(CardMetric {
            title: title.into(),
            estimate: false,
            arms: arms(x, |a| mean_figure(pick(a))),
            differences: vec![
                Difference {
                    over: PairSet::All,
                    value: all.as_ref().map(|_| delta(all)),
                    relative: None,
                    pairs: x.paired.pairs_used,
                    over_failures: over_failures(x),
                },
                Difference {
                    over: PairSet::BothPassed,
                    value: succ.as_ref().map(|_| delta(succ)),
                    relative: None,
                    pairs: succ.as_ref().map_or(both.pairs, |d| d.n),
                    over_failures: None,
                },
            ],
        });
    }
    Card {
        module: x.module.clone(),
        title: Comparison::label_in(&x.module, x.comparison.as_ref(), x.split),
        verdict: Some(if simulated { format!("{} (planted effects, not evidence)", x.verdict.as_str()) } else { x.verdict.as_str().into() }),
        reason: Text::plain(x.verdict_reason.clone()),
        servers: vec![],
        sessions: vec![(Role::Pattern, sessions_line(&x.pattern)), (Role::Control, sessions_line(&x.control))],
        metrics,
        // The few-passes notices repeat the verdict's reason and the differences' labels; the
        // module's own section keeps them.
        notes: x.notices.iter().filter(|n| !(n.starts_with("Model too weak") || n.starts_with("The pattern passed in"))).cloned().collect(),
    }
}

fn oracle_card(f: &OracleModule) -> Card {
    let mean = |role: Role, pick: fn(&OraclePerSession) -> Option<f64>| f.per_session_of(role, pick).ok();
    let metric = |title: &str, estimate: bool, pick: fn(&OraclePerSession) -> Option<f64>| {
        let (p, c) = (mean(Role::Pattern, pick), mean(Role::Control, pick));
        let change = match (p, c) {
            (Some(p), Some(c)) if c > 0.0 => Some((signed_readable(p - c), signed_pct(p / c - 1.0))),
            _ => None,
        };
        CardMetric {
            title: title.into(),
            estimate,
            arms: [(Role::Pattern, p), (Role::Control, c)].map(|(r, v)| (r, Figure::none(&v.map(readable).unwrap_or_else(|| "—".into())))).to_vec(),
            differences: vec![Difference {
                over: PairSet::Means,
                value: change.as_ref().map(|(abs, rel)| format!("{abs} ({rel})")),
                relative: change.map(|(_, rel)| rel),
                pairs: 0,
                over_failures: None,
            }],
        }
    };
    let sessions = |role: Role| {
        let rows = || f.rows.iter().filter(move |r| r.role == role);
        format!("{}/{}", rows().map(|r| r.valid).sum::<usize>(), rows().map(|r| r.sessions).sum::<usize>())
    };
    let (sp, sc) = (f.server(Role::Pattern), f.server(Role::Control));
    Card {
        module: f.module.clone(),
        title: Comparison::label_in(&f.module, f.comparison.as_ref(), f.split),
        verdict: None,
        reason: Text::plain("pattern ").and_code(sp.clone()).and(" vs control ").and_code(sc.clone()),
        servers: vec![(Role::Pattern, sp), (Role::Control, sc)],
        sessions: vec![(Role::Pattern, sessions(Role::Pattern)), (Role::Control, sessions(Role::Control))],
        metrics: vec![
            metric("tool calls per session (counted)", false, |m| m.calls),
            metric("input tokens per session — estimate, not a measurement", true, |m| m.estimated_input_tokens),
        ],
        notes: vec![],
    }
}
