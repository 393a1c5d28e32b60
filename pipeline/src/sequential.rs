//! A sequential run's looks (`--until-decided`): as each pair ends, its comparison (model,
//! module, split) reads the pairs ended so far in draw order — never past a pair still running, so the
//! sequence is the same whatever the workers' timing — and stops drawing once the stopping rule
//! says the verdict is reached. A resumed run starts from the pairs already recorded, so a
//! comparison decided before is not drawn again.

use std::collections::BTreeMap;
use std::sync::Mutex;

use aggregate::sequential::{Look, PairObs, Sequence};
use records::{Role, SessionRecord};

use crate::plan::Sequential;

/// Both arms of one drawn pair, as far as they have ended.
#[derive(Debug, Default)]
struct Pair {
    pattern: Option<SessionRecord>,
    control: Option<SessionRecord>,
}

/// One comparison's state.
#[derive(Debug, Default)]
struct Comparison {
    pairs: BTreeMap<u32, Pair>,
    /// Draws read so far: 1..=read.
    read: u32,
    sequence: Sequence,
    decided: Option<Decision>,
}

/// Where and why a comparison stopped drawing.
#[derive(Debug, Clone)]
pub struct Decision {
    pub model: String,
    pub module: String,
    pub split: records::Split,
    /// The draw at which the rule was met.
    pub at_draw: u32,
    pub look: Look,
}

impl Decision {
    /// One line for the run's output.
    pub fn line(&self) -> String {
        format!(
            "{} · {}{}: decided at pair {} ({} valid): {} — {}",
            self.model,
            self.module,
            if self.split.is_dev() { "" } else { " (held-out)" },
            self.at_draw,
            self.look.pairs,
            self.look.verdict.as_str(),
            self.look.verdict_reason
        )
    }
}

/// The looks of every comparison of a run.
#[derive(Debug)]
pub struct Looks {
    design: Sequential,
    opts: aggregate::Options,
    comparisons: Mutex<BTreeMap<(String, String, records::Split), Comparison>>,
}

impl Looks {
    /// The state after `earlier` (the experiment's records so far).
    pub fn new(design: Sequential, earlier: &[SessionRecord]) -> Self {
        let looks = Self { design, opts: aggregate::Options::default(), comparisons: Mutex::new(BTreeMap::new()) };
        for r in earlier {
            looks.ended(r);
        }
        looks
    }

    /// A session ended as `record`; returns the decision it brought about, if any.
    pub fn ended(&self, record: &SessionRecord) -> Option<Decision> {
        let draw = record.draw?;
        let mut all = self.comparisons.lock().expect("looks");
        let key = (record.model.id.clone(), record.module.clone(), record.split);
        let c = all.entry(key.clone()).or_default();
        let pair = c.pairs.entry(draw).or_default();
        match record.role {
            Role::Pattern => pair.pattern = Some(record.clone()),
            Role::Control => pair.control = Some(record.clone()),
        }
        if c.decided.is_some() {
            return None;
        }
        // Read on in draw order while the next pair has ended in both arms.
        while let Some(Pair { pattern: Some(p), control: Some(k) }) = c.pairs.get(&(c.read + 1)) {
            if let Some(obs) = PairObs::of(p, k) {
                c.sequence.push(&obs);
            }
            c.read += 1;
            let look = c.sequence.look(&self.opts);
            if self.design.rule.stops(&look) {
                let d = Decision { model: key.0.clone(), module: key.1.clone(), split: key.2, at_draw: c.read, look };
                c.decided = Some(d.clone());
                return Some(d);
            }
        }
        None
    }

    /// Whether the comparison of `model`, `module` and `split` still draws pairs.
    pub fn drawing(&self, model: &str, module: &str, split: records::Split) -> bool {
        self.comparisons.lock().expect("looks").get(&(model.to_owned(), module.to_owned(), split)).is_none_or(|c| c.decided.is_none())
    }

    /// Whether draw `draw` of the comparison may be opened now: only while it is within `window`
    /// draws of the first pair not yet ended in both arms. The comparison is read in draw order,
    /// so a pair drawn further ahead could only end after a decision it cannot change: with
    /// `window` = `--jobs`, at most `--jobs − 1` pairs are drawn past the one that decides.
    pub fn within_reach(&self, model: &str, module: &str, split: records::Split, draw: u32, window: u32) -> bool {
        let read = self.comparisons.lock().expect("looks").get(&(model.to_owned(), module.to_owned(), split)).map_or(0, |c| c.read);
        draw <= read.saturating_add(window.max(1))
    }

    /// Every decision so far, in comparison order.
    pub fn decisions(&self) -> Vec<Decision> {
        self.comparisons.lock().expect("looks").values().filter_map(|c| c.decided.clone()).collect()
    }
}
