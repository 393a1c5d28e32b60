//! A hard budget for a run: `--budget-tokens N` (input and output tokens the model's endpoint
//! reported, summed over the run's sessions) or `--budget-usd X` (the same priced by `--prices`).
//!
//! The run asks before each pair — both arms of one task and rep (cold), or every conversation
//! of one rep (warm) — whether the pair could still be paid for: what the run has spent, plus
//! every session already admitted and not yet ended, plus this pair's sessions, each at the
//! largest session cost seen so far. If not, the run stops there (exit 4, the `budget` reason,
//! the command that resumes), never in the middle of a pair: a pair admitted is a pair finished.
//! Until a session has ended there is no estimate, so the first pair (with `--jobs J`, up to J of
//! them) always starts. A session whose endpoint reported no usage leaves the budget unknowable:
//! the run stops before the next pair rather than guess.
//!
//! The budget is this invocation's: a resumed run spends its own. It changes no session, so it is
//! in no fingerprint.

use std::sync::Mutex;

use aggregate::PriceTable;
use records::SessionRecord;

/// What a run may spend.
#[derive(Debug, Clone)]
pub enum Limit {
    /// Input plus output tokens, as the endpoint reported them.
    Tokens(u64),
    /// US dollars, each session priced by the table (its model must be in it).
    Usd { usd: f64, prices: PriceTable },
}

impl Limit {
    fn amount(&self) -> f64 {
        match self {
            Self::Tokens(n) => *n as f64,
            Self::Usd { usd, .. } => *usd,
        }
    }

    /// `x` in the limit's unit, for a person.
    pub fn show(&self, x: f64) -> String {
        match self {
            Self::Tokens(_) => format!("{} tokens", x.round() as u64),
            Self::Usd { .. } => format!("${x:.4}"),
        }
    }

    /// The flag that set it, for messages.
    pub fn flag(&self) -> String {
        match self {
            Self::Tokens(n) => format!("--budget-tokens {n}"),
            Self::Usd { usd, .. } => format!("--budget-usd {usd}"),
        }
    }

    /// What a session of `model` with `turns` turns and `totals` cost; `None` when it cannot be
    /// known (usage not reported, or no price). A session that never asked the model (the oracle,
    /// a session that failed before its first turn) cost nothing.
    pub fn cost(&self, model: &str, turns: usize, totals: &records::Totals) -> Option<f64> {
        if turns == 0 {
            return Some(0.0);
        }
        match self {
            Self::Tokens(_) => Some((totals.input_tokens? + totals.output_tokens?) as f64),
            Self::Usd { prices, .. } => prices.cost(model, totals),
        }
    }
}

/// The run's spending, shared by its workers.
#[derive(Debug)]
pub struct Budget {
    pub limit: Limit,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    spent: f64,
    /// The largest cost of one session so far.
    largest: Option<f64>,
    /// Sessions of admitted pairs that have not ended.
    committed: usize,
    /// Why the budget can no longer be kept (a session whose cost is unknown).
    unknown: Option<String>,
}

impl Budget {
    pub fn new(limit: Limit) -> Self {
        Self { limit, state: Mutex::new(State::default()) }
    }

    /// Admits a pair of `sessions` sessions, or says why it could exceed the budget.
    #[cfg(test)]
    pub fn admit(&self, sessions: usize) -> Result<(), String> {
        self.check(sessions)?;
        self.commit(sessions);
        Ok(())
    }

    /// Commits a pair [`Self::check`] allowed: its sessions count as running until they end.
    pub fn commit(&self, sessions: usize) {
        self.state.lock().expect("budget").committed += sessions;
    }

    /// Whether a pair of `sessions` sessions could still be paid for; why not.
    pub fn check(&self, sessions: usize) -> Result<(), String> {
        let s = self.state.lock().expect("budget");
        let limit = self.limit.amount();
        if let Some(why) = &s.unknown {
            return Err(why.clone());
        }
        let each = s.largest.unwrap_or(0.0);
        let could = s.spent + (s.committed + sessions) as f64 * each;
        if s.spent >= limit || could > limit {
            return Err(format!(
                "{} of the budget ({}) spent; the next pair of {sessions} session(s), at the largest session cost seen so far ({} each){}, could exceed it",
                self.limit.show(s.spent),
                self.limit.show(limit),
                self.limit.show(each),
                if s.committed > 0 { format!(" beside {} session(s) still running", s.committed) } else { String::new() }
            ));
        }
        Ok(())
    }

    /// A session of an admitted pair ended as `record`.
    pub fn ended(&self, record: &SessionRecord) {
        let cost = self.limit.cost(&record.model.id, record.turns, &record.totals);
        self.ended_at(cost, || format!("{} on {}", record.task, record.server));
    }

    fn ended_at(&self, cost: Option<f64>, which: impl FnOnce() -> String) {
        let mut s = self.state.lock().expect("budget");
        s.committed = s.committed.saturating_sub(1);
        match cost {
            Some(c) => {
                s.spent += c;
                s.largest = Some(s.largest.map_or(c, |l| l.max(c)));
            }
            None if s.unknown.is_none() => {
                s.unknown = Some(format!(
                    "the cost of {} is unknown ({}): the budget cannot be kept without it",
                    which(),
                    match self.limit {
                        Limit::Tokens(_) => "the endpoint reported no token usage",
                        Limit::Usd { .. } => "no token usage, or no price for the model",
                    }
                ));
            }
            None => {}
        }
    }

    /// What the run has spent so far.
    pub fn spent(&self) -> f64 {
        self.state.lock().expect("budget").spent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(input: Option<u64>, output: Option<u64>) -> records::Totals {
        records::Totals { input_tokens: input, output_tokens: output, ..Default::default() }
    }

    /// A session of `turns` turns and these totals ends.
    fn end(b: &Budget, turns: usize, input: Option<u64>, output: Option<u64>) {
        b.ended_at(b.limit.cost("m", turns, &totals(input, output)), || "t on a".into());
    }

    #[test]
    fn a_pair_is_admitted_while_it_fits_at_the_largest_cost_seen() {
        let b = Budget::new(Limit::Tokens(1000));
        // Nothing seen: no estimate, the first pair starts.
        b.admit(2).unwrap();
        end(&b, 3, Some(200), Some(50));
        end(&b, 2, Some(100), Some(20));
        assert_eq!(b.spent(), 370.0);
        // 370 + 2 × 250 = 870 ≤ 1000.
        b.admit(2).unwrap();
        // That pair still running: 370 + (2 + 2) × 250 > 1000, refused naming the figures.
        let e = b.admit(2).unwrap_err();
        assert!(e.contains("370 tokens of the budget (1000 tokens) spent") && e.contains("250 tokens each") && e.contains("2 session(s) still running"), "{e}");
        end(&b, 1, Some(10), Some(0));
        end(&b, 1, Some(10), Some(0));
        // 390 + 2 × 250 = 890: fits again; then 390 + 4 × 250 does not.
        b.admit(2).unwrap();
        assert!(b.admit(2).is_err());
    }

    #[test]
    fn an_unknown_cost_stops_the_next_pair_and_a_session_without_turns_costs_nothing() {
        let b = Budget::new(Limit::Tokens(1_000_000));
        b.admit(2).unwrap();
        end(&b, 0, None, None);
        assert_eq!(b.spent(), 0.0, "a session that never asked the model cost nothing");
        end(&b, 2, Some(10), None);
        let e = b.admit(1).unwrap_err();
        assert!(e.contains("the cost of t on a is unknown") && e.contains("no token usage"), "{e}");
    }

    #[test]
    fn dollars_are_priced_by_the_table_and_a_model_without_a_price_is_unknown() {
        let prices = PriceTable::parse("[models.\"m\"]\ninput = 1.0\noutput = 2.0\n", std::path::Path::new("p.toml")).unwrap();
        let limit = Limit::Usd { usd: 0.01, prices };
        let t = totals(Some(1000), Some(500));
        assert_eq!(limit.cost("m", 1, &t), Some((1000.0 * 1.0 + 500.0 * 2.0) / 1e6));
        assert_eq!(limit.cost("other", 1, &t), None);
        let b = Budget::new(limit);
        b.admit(1).unwrap();
        for _ in 0..4 {
            end(&b, 1, Some(1000), Some(500));
        }
        // $0.008 spent, $0.002 a session: one more fits, two do not.
        b.admit(1).unwrap();
        let e = b.admit(1).unwrap_err();
        assert!(e.contains("$0.0080 of the budget ($0.0100) spent"), "{e}");
    }
}
