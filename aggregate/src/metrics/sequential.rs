//! A sequential experiment's report (`--until-decided`): its pairs read again in draw order by
//! the same sequences and stopping rule the run used (`crate::sequential`), the verdict from
//! those sequences, and no fixed-sample interval anywhere — after a stop that depended on the
//! data, a fixed-sample interval would be optimistic (docs/adr/0021-sequential-experiments.md).

use records::{Role, SessionRecord};
use serde::{Deserialize, Serialize};

use super::paired::{Diff, ModuleReport};
use super::{ArmMetrics, Options};
use crate::sequential::{ALPHA, Look, PairObs, Rule, Sequence};

/// How a sequential comparison ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// The stopping rule was met: the verdict was reached.
    Decided,
    /// `max_pairs` were drawn without a verdict.
    Cap,
    /// The run stopped before either (a budget, an interrupt, a quota…; the manifest says).
    Stopped,
    /// Neither, and no stop recorded: the run is unfinished (still running, or killed).
    Unfinished,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequentialReport {
    /// The stopping rule, in words.
    pub rule: String,
    pub max_pairs: u32,
    pub min_pairs: u32,
    pub alpha: f64,
    /// Pairs drawn: the highest draw recorded in either arm.
    pub drawn: u32,
    pub ended: Ended,
    /// The draw at which the stopping rule was met (decided only), and what the sequences said
    /// there: pairs already running then finished after it, and are in [`Self::look`].
    pub decided_at: Option<u32>,
    pub decided_look: Option<Look>,
    /// How it ended, in words.
    pub why: String,
    /// The sequences over every valid pair recorded: what the verdict reads.
    pub look: Look,
}

/// The report of a sequential comparison over `pattern` and `control`'s records, or `None` when
/// no record carries a draw (not a sequential experiment's).
pub(super) fn report(
    pattern: &[&SessionRecord],
    control: &[&SessionRecord],
    rule: Rule,
    rule_text: &str,
    stopped: Option<&str>,
    opts: &Options,
) -> Option<SequentialReport> {
    let mut draws: std::collections::BTreeMap<u32, (Option<&SessionRecord>, Option<&SessionRecord>)> = Default::default();
    for (records, role) in [(pattern, Role::Pattern), (control, Role::Control)] {
        for r in records {
            let Some(d) = r.draw else { continue };
            let e = draws.entry(d).or_default();
            match role {
                Role::Pattern => e.0 = Some(r),
                Role::Control => e.1 = Some(r),
            }
        }
    }
    let drawn = *draws.keys().next_back()?;
    let mut sequence = Sequence::new();
    let mut decided: Option<(u32, Look)> = None;
    for (d, pair) in &draws {
        if let (Some(p), Some(c)) = pair
            && let Some(obs) = PairObs::of(p, c)
        {
            sequence.push(&obs);
        }
        if decided.is_none() {
            let look = sequence.look(opts);
            if rule.stops(&look) {
                decided = Some((*d, look));
            }
        }
    }
    let look = sequence.look(opts);
    let (ended, why) = match (&decided, stopped) {
        (Some((at, l)), _) => (
            Ended::Decided,
            format!(
                "decided at pair {at} ({} valid): {}{}",
                l.pairs,
                l.verdict.as_str(),
                if look.pairs > l.pairs {
                    format!("; {} more valid pair(s) already running then finished and are read too", look.pairs - l.pairs)
                } else {
                    String::new()
                }
            ),
        ),
        (None, _) if drawn >= rule.max_pairs => (Ended::Cap, format!("reached the cap of {} pairs undecided", rule.max_pairs)),
        (None, Some(kind)) => (Ended::Stopped, format!("stopped early ({kind}) at pair {drawn} of at most {}, undecided", rule.max_pairs)),
        (None, None) => (Ended::Unfinished, format!("unfinished: {drawn} of at most {} pairs drawn, undecided, no stop recorded", rule.max_pairs)),
    };
    Some(SequentialReport {
        rule: rule_text.to_owned(),
        max_pairs: rule.max_pairs,
        min_pairs: rule.min_pairs,
        alpha: ALPHA,
        drawn,
        ended,
        decided_at: decided.as_ref().map(|(d, _)| *d),
        decided_look: decided.map(|(_, l)| l),
        why,
        look,
    })
}

/// Makes `m` a sequential experiment's report: the verdict from the sequences, and every
/// fixed-sample interval, minimum detectable difference and power estimate taken out.
pub(super) fn apply(m: &mut ModuleReport, s: SequentialReport) {
    m.verdict = s.look.verdict;
    m.verdict_reason = s.look.verdict_reason.clone();
    for d in [
        &mut m.paired.success,
        &mut m.paired.turns,
        &mut m.paired.input_tokens,
        &mut m.paired.output_tokens,
        &mut m.paired.collateral,
        &mut m.paired.attack,
        &mut m.paired.both_passed.turns,
        &mut m.paired.both_passed.input_tokens,
        &mut m.paired.both_passed.output_tokens,
    ]
    .into_iter()
    .flatten()
    {
        strip_diff(d);
    }
    for a in [&mut m.pattern, &mut m.control].into_iter().flatten() {
        strip_arm(a);
    }
    m.power = None;
    m.flip_rate = None;
    m.notices.retain(|n| !n.starts_with("What this design could detect") && !n.starts_with("How repeatable a verdict is"));
    // The success difference the sequence is centred on: the mean over pairs (each a uniform
    // draw of a task), not the mean of per-task means.
    if let (Some(d), Some(mean)) = (m.paired.success.as_mut(), s.look.success_mean) {
        d.mean = mean;
    }
    let l = &s.look;
    let range = |i: Option<crate::stats::Interval>, f: fn(f64) -> String| i.map_or("—".to_owned(), |i| format!("[{}, {}]", f(i.lo), f(i.hi)));
    let points = |x: f64| format!("{:+.1}", 100.0 * x);
    let share = |x: f64| format!("{:.0} %", 100.0 * x);
    m.notices.insert(
        0,
        format!(
            "Sequential experiment: {}. Over {} valid pairs, the success difference is {} points {}; the pattern used fewer input tokens in {} of {} pairs {}, and in {} of the {} pairs both arms passed {}. These are anytime-valid 95 % confidence sequences over these tasks — the difference on this task set, not over tasks like them; fixed-sample intervals are not shown, since after a stop that depended on the data they would be optimistic.",
            s.why,
            l.pairs,
            l.success_mean.map_or("—".to_owned(), points),
            range(l.success, points),
            l.cheaper_share.map_or("—".to_owned(), share),
            l.cheaper_pairs,
            range(l.cheaper, share),
            l.cheaper_both_share.map_or("—".to_owned(), share),
            l.cheaper_both_pairs,
            range(l.cheaper_both, share),
        ),
    );
    m.sequential = Some(s);
}

fn strip_diff(d: &mut Diff) {
    d.ci95 = None;
    d.relative_ci95 = None;
    d.mde = None;
    d.relative_mde = None;
}

fn strip_arm(a: &mut ArmMetrics) {
    a.success.wilson95 = None;
    a.collateral.wilson95 = None;
    if let Some(x) = a.attack.as_mut() {
        x.wilson95 = None;
    }
    for c in &mut a.outcome_classes.classes {
        c.wilson95 = None;
    }
    for d in [&mut a.turns, &mut a.input_tokens, &mut a.cached_input_tokens, &mut a.output_tokens, &mut a.reasoning_tokens, &mut a.cost_usd] {
        d.mean_ci95 = None;
    }
}
