//! The graders' gold set (`tasks/gold/cases.toml`, docs/gold-set.md): final answers with the end
//! state each session left, graded by hand. For every case this prepares the task's world, applies
//! the case's end state, and runs the three grading layers as a session's verification would —
//! the verdict ([`tasks::Verifier::verify`]), the outcome class
//! ([`aggregate::metrics::classes::explain_answer`]) and the grounding of every reference the
//! answer makes — then measures each layer's agreement with the human: accuracy and Cohen's kappa.
//! Whoever writes the graders also tunes them; this is the anchor that does not move with them.
//!
//! `cargo nextest run -p pipeline -E 'test(/^gold::/)' --no-capture` prints the table and every
//! disagreement even when the bar is met.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use aggregate::metrics::classes::explain_answer;
use aggregate::stats::cohen_kappa;
use pipeline::gold::{Case, Part, label, pair_references};

/// The project's bar: every layer must agree with the human on at least this share of its items…
/// Lowering it (or [`MIN_KAPPA`]) needs a reason in the commit that does it: the bar is what
/// "the graders judge as a person would" means here, and a grader change that cannot meet it has
/// changed what is measured.
const MIN_ACCURACY: f64 = 0.90;
/// … and by at least this Cohen's kappa (agreement beyond what the two raters' label frequencies
/// give by chance; an undefined kappa does not meet it).
const MIN_KAPPA: f64 = 0.80;

/// The gold set's `part` with each case's task; panics naming every problem at once.
fn load(part: Part) -> Vec<(Case, tasks::Task)> {
    pipeline::gold::load(part).unwrap_or_else(|problems| panic!("{}", problems.join("\n  ")))
}

#[test]
fn the_gold_set_is_well_formed() {
    let dev = load(Part::Dev);
    assert!(dev.len() >= 36, "the gold set's dev part holds at least 36 cases, it has {}", dev.len());
    let modules: BTreeSet<&str> = dev.iter().map(|(c, _)| c.module.as_str()).collect();
    assert!(modules.len() >= 5, "the gold set's dev part covers at least five modules, it covers {modules:?}");
    // The held-out part is at least as large, covers every module, and shares no case with dev.
    let held = load(Part::HeldOut);
    assert!(held.len() >= dev.len(), "the held-out part holds at least as many cases as the dev part ({}), it has {}", dev.len(), held.len());
    let covered: BTreeSet<&str> = held.iter().map(|(c, _)| c.module.as_str()).collect();
    let every: BTreeSet<&str> = servers::registry::modules().into_iter().collect();
    assert_eq!(covered, every, "the held-out part covers every module");
    let dev_ids: BTreeSet<&str> = dev.iter().map(|(c, _)| c.id.as_str()).collect();
    let shared: Vec<&str> = held.iter().map(|(c, _)| c.id.as_str()).filter(|id| dev_ids.contains(id)).collect();
    assert!(shared.is_empty(), "ids in both parts: {shared:?}");
    let answers: BTreeSet<(&str, &str)> = dev.iter().map(|(c, _)| (c.task.as_str(), c.answer.as_str())).collect();
    let copied: Vec<&str> = held.iter().filter(|(c, _)| answers.contains(&(c.task.as_str(), c.answer.as_str()))).map(|(c, _)| c.id.as_str()).collect();
    assert!(copied.is_empty(), "held-out cases that repeat a dev case's task and answer: {copied:?}");
}

/// One layer's paired labels: (case id, human, grader) per item.
#[derive(Default)]
struct Layer {
    items: Vec<(String, String, String)>,
}

impl Layer {
    fn push(&mut self, case: &str, human: String, grader: String) {
        self.items.push((case.to_owned(), human, grader));
    }

    fn accuracy(&self) -> Option<f64> {
        (!self.items.is_empty()).then(|| self.items.iter().filter(|(_, h, g)| h == g).count() as f64 / self.items.len() as f64)
    }

    fn kappa(&self) -> Option<f64> {
        let pairs: Vec<(&str, &str)> = self.items.iter().map(|(_, h, g)| (h.as_str(), g.as_str())).collect();
        cohen_kappa(&pairs)
    }

    fn meets_the_bar(&self) -> bool {
        self.accuracy().is_some_and(|a| a >= MIN_ACCURACY) && self.kappa().is_some_and(|k| k >= MIN_KAPPA)
    }
}

/// One part's three layers, graded, and what the verifier saw per case.
struct Graded {
    layers: [(&'static str, Layer); 3],
    checks: BTreeMap<String, String>,
    cases: usize,
}

/// Applies every case of `part` to a fresh world and grades it; with `grade` false, only applies
/// (what a writer of cases runs to check the SQL, without seeing any grader's output).
async fn grade(part: Part, grade: bool) -> Graded {
    let cases = pipeline::gold::verified(part, grade).await.unwrap_or_else(|e| panic!("{e:#}"));
    let (mut verdicts, mut classes, mut grounding) = (Layer::default(), Layer::default(), Layer::default());
    // What the verifier saw, per case, to read a disagreement by.
    let mut checks: BTreeMap<String, String> = BTreeMap::new();
    for (case, _, outcome) in &cases {
        let Some(outcome) = outcome else { continue };
        let explained = explain_answer(outcome, Some(&case.answer));
        let class = explained.as_ref().map(|c| c.class);

        verdicts.push(&case.id, label(&case.verdict), label(&outcome.verdict));
        classes.push(&case.id, label(&case.class), class.as_ref().map_or_else(|| "none (could not score)".to_owned(), label));
        let held = outcome.checks.iter().filter(|c| c.held).count();
        let failed: Vec<&str> = outcome.checks.iter().filter(|c| !c.held).map(|c| c.name.as_str()).collect();
        let failed = if failed.is_empty() { String::new() } else { format!("; failed: {}", failed.join(", ")) };
        let why = explained.map_or_else(String::new, |c| format!("; class decided by: {}", c.decided_by));
        checks.insert(case.id.clone(), format!("{held} of {} checks held{failed}{why}", outcome.checks.len()));
        for (what, human, theirs) in pair_references(&case.grounding, outcome.grounding.as_ref()) {
            grounding.push(&format!("{} {what}", case.id), human, theirs);
        }
    }
    Graded { layers: [("verdict", verdicts), ("class", classes), ("grounding", grounding)], checks, cases: cases.len() }
}

/// The table of one graded part, and every disagreement with what the verifier saw.
fn table(part: Part, g: &Graded) -> String {
    let mut report = String::new();
    let shown = |x: Option<f64>| x.map_or_else(|| "undefined".to_owned(), |v| format!("{v:.3}"));
    let _ = writeln!(report, "gold set, {} part: {} cases ({})", part.name(), g.cases, part.path().display());
    let _ = writeln!(report, "{:<10} {:>4} {:>9} {:>9}   bar: accuracy >= {MIN_ACCURACY}, kappa >= {MIN_KAPPA}", "layer", "n", "accuracy", "kappa");
    for (name, layer) in &g.layers {
        let mark = if layer.meets_the_bar() { "" } else { "   BELOW THE BAR" };
        let _ = writeln!(report, "{name:<10} {:>4} {:>9} {:>9}{mark}", layer.items.len(), shown(layer.accuracy()), shown(layer.kappa()));
    }
    let _ = writeln!(report, "disagreements (layer, case: human vs grader):");
    for (name, layer) in &g.layers {
        for (item, human, theirs) in layer.items.iter().filter(|(_, h, g)| h != g) {
            // The verifier's checks explain a verdict or class; a reference explains itself.
            let why = g.checks.get(item).map(|c| format!("  [{c}]")).unwrap_or_default();
            let _ = writeln!(report, "  {name:<9} {item}: {human} vs {theirs}{why}");
        }
    }
    report
}

#[tokio::test]
async fn the_graders_agree_with_the_gold_set() {
    let dev = grade(Part::Dev, true).await;
    println!("{}", table(Part::Dev, &dev));
    let below: Vec<&str> = dev.layers.iter().filter(|(_, l)| !l.meets_the_bar()).map(|(n, _)| *n).collect();
    assert!(
        below.is_empty(),
        "the graders agree with the human gold set below the bar on {below:?} (the table and every disagreement are printed above). \
         Fix the grader — a rule change must keep the set agreeing — never the human grades; a case that is itself wrong is changed \
         only with a reason, and the set re-sealed (docs/gold-set.md)."
    );
}

/// The held-out part is graded and its agreement is what every report states
/// ([`aggregate::graders::agreement`]): a grader change that moves it must restate it, so no
/// report claims an agreement the graders no longer have. No bar: the figure is stated, whatever
/// it is; a rule change that raises the dev agreement but lowers this one is wrong.
#[tokio::test]
async fn the_held_out_agreement_is_what_reports_state() {
    let held = grade(Part::HeldOut, true).await;
    println!("{}", table(Part::HeldOut, &held));
    let stated = aggregate::graders::agreement();
    assert_eq!(stated.cases, held.cases, "aggregate/src/graders.rs states another number of held-out cases");
    for (name, layer) in &held.layers {
        let s = stated.layer(name).unwrap_or_else(|| panic!("aggregate/src/graders.rs states no {name} layer"));
        let round = |x: Option<f64>| x.map(|v| (v * 1000.0).round() / 1000.0);
        assert_eq!(
            (s.n, Some(s.accuracy), Some(s.kappa)),
            (layer.items.len(), round(layer.accuracy()), round(layer.kappa())),
            "the {name} layer's held-out agreement differs from what reports state (aggregate/src/graders.rs): restate it there, in docs/gold-set.md and the README"
        );
    }
}

/// Applies every held-out case's end state, and grades nothing: what a writer of cases runs.
#[tokio::test]
async fn the_held_out_part_applies() {
    let g = grade(Part::HeldOut, false).await;
    assert!(g.cases > 0);
}

/// The set is sealed with the held-out tasks: a changed case needs `pipeline seal --reason …`.
#[test]
fn the_gold_set_matches_its_seal() {
    let root = tasks::default_tasks_dir();
    let lock = pipeline::held_out::Lock::read(&root).unwrap().expect("tasks/held_out.lock exists (pipeline seal --reason …)");
    let now = tasks::folder_hash(&root.join("gold")).unwrap();
    assert_eq!(
        lock.gold.as_deref(),
        Some(now.as_str()),
        "tasks/gold/ differs from its seal: a gold case changes only with a reason — re-seal with `cargo run -p pipeline -- seal --reason \"…\"`"
    );
}
