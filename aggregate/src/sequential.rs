//! Anytime-valid confidence sequences for the mean of bounded observations, for experiments that
//! are looked at as they run: a fixed-sample interval inspected after every batch covers far less
//! often than it says, and a confidence sequence does not, however often it is read and whenever
//! the run stops.
//!
//! The method is the hedged betting confidence sequence of Waudby-Smith and Ramdas ("Estimating
//! means of bounded random variables by betting", JRSS B 2024), with their predictable plug-in
//! bets. For each candidate mean `m`, two bettors wager on the next observation being above or
//! below `m`; their wealth is a nonnegative martingale when `m` is the true mean, so by Ville's
//! inequality it passes `1/α` with probability at most `α`, ever. The sequence at time `t` is
//! every `m` whose hedged wealth stayed below `1/α`. Candidates are a fine grid of the
//! observations' range, and the interval is the grid's surviving span, so it is exact to the
//! grid's step, and conservative by at most one step.
//!
//! Observations must lie in the declared `[lo, hi]`: a paired success difference lies in
//! `[-1, 1]`; a share lies in `[0, 1]`.

mod sequence;

pub use sequence::{ALPHA, Look, PairObs, Rule, Sequence, fewest_pairs};

/// The grid of candidate means: 2,001 points across the range.
const GRID: usize = 2001;

/// The cap on a bet, as a fraction of what keeps the wealth nonnegative (their `c`; ¾, one of
/// their two recommended values, docs/adr/0021-sequential-experiments.md).
const CAP: f64 = 0.75;

/// A confidence sequence for the mean of observations in `[lo, hi]`, updated one at a time.
#[derive(Debug, Clone)]
pub struct BettingCs {
    lo: f64,
    hi: f64,
    alpha: f64,
    /// Per candidate (in `[0, 1]` after scaling): the log-wealth of the bettor on "above" and of
    /// the bettor on "below".
    up: Vec<f64>,
    down: Vec<f64>,
    /// Candidates not yet rejected (their wealth never passed `1/α`).
    alive: Vec<bool>,
    n: u64,
    /// Running sums of the scaled observations and squared deviations, for the plug-in bets.
    sum: f64,
    squares: f64,
}

impl BettingCs {
    /// A sequence at level `1 − alpha` for the mean of observations in `[lo, hi]`.
    pub fn new(lo: f64, hi: f64, alpha: f64) -> Self {
        assert!(hi > lo && alpha > 0.0 && alpha < 1.0, "a range and a level");
        Self { lo, hi, alpha, up: vec![0.0; GRID], down: vec![0.0; GRID], alive: vec![true; GRID], n: 0, sum: 0.0, squares: 0.0 }
    }

    fn candidate(i: usize) -> f64 {
        i as f64 / (GRID - 1) as f64
    }

    /// Adds one observation (clamped into the range: a value outside it is a caller's error,
    /// and would otherwise break the guarantee).
    pub fn push(&mut self, x: f64) {
        let x = ((x - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0);
        // The predictable plug-in bet (their PrPl): from the observations before this one.
        let t = self.n as f64 + 1.0;
        let mean = (0.5 + self.sum) / t;
        let variance = (0.25 + self.squares) / t;
        let lambda = (2.0 * (2.0 / self.alpha).ln() / (variance * t * (t + 1.0).ln())).sqrt();
        let threshold = (1.0 / self.alpha).ln() + std::f64::consts::LN_2;
        for i in 0..GRID {
            if !self.alive[i] {
                continue;
            }
            let m = Self::candidate(i);
            let bet_up = lambda.min(CAP / m.max(1e-12));
            let bet_down = lambda.min(CAP / (1.0 - m).max(1e-12));
            self.up[i] += (1.0 + bet_up * (x - m)).ln();
            self.down[i] += (1.0 - bet_down * (x - m)).ln();
            // Hedged: half the wealth on each side; rejected once max(½K⁺, ½K⁻) ≥ 1/α.
            if self.up[i].max(self.down[i]) >= threshold {
                self.alive[i] = false;
            }
        }
        self.n += 1;
        self.sum += x;
        self.squares += (x - mean).powi(2);
    }

    /// Observations so far.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The current interval `[lo, hi]` for the mean, in the observations' units; `None` if every
    /// candidate was rejected (which happens with probability at most `alpha`).
    pub fn interval(&self) -> Option<(f64, f64)> {
        let first = self.alive.iter().position(|a| *a)?;
        let last = self.alive.iter().rposition(|a| *a)?;
        // One grid step outwards: the true mean may lie between a rejected and a kept point.
        let step = 1.0 / (GRID - 1) as f64;
        let scale = |u: f64| self.lo + u.clamp(0.0, 1.0) * (self.hi - self.lo);
        Some((scale(Self::candidate(first) - step), scale(Self::candidate(last) + step)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::Rng;

    /// Draws from a three-point distribution on {-1, 0, 1}: a paired success difference.
    fn paired(rng: &mut Rng, p_up: f64, p_down: f64) -> f64 {
        let u = rng.uniform();
        if u < p_up {
            1.0
        } else if u < p_up + p_down {
            -1.0
        } else {
            0.0
        }
    }

    /// Against a known truth: over many runs read after every pair, the sequence ever misses the
    /// true mean in at most about α of them, where a fixed-sample 95 % interval read the same way
    /// misses far more often.
    #[test]
    fn read_after_every_pair_it_still_covers_and_a_fixed_interval_does_not() {
        let (runs, pairs, alpha) = (400, 150, 0.05);
        let (p_up, p_down) = (0.2, 0.1);
        let truth = p_up - p_down;
        let mut rng = Rng::new(7);
        let (mut cs_missed, mut fixed_missed) = (0, 0);
        let mut widths = Vec::new();
        for _ in 0..runs {
            let mut cs = BettingCs::new(-1.0, 1.0, alpha);
            let (mut sum, mut squares) = (0.0, 0.0);
            let (mut cs_miss, mut fixed_miss) = (false, false);
            for t in 1..=pairs {
                let d = paired(&mut rng, p_up, p_down);
                cs.push(d);
                sum += d;
                squares += d * d;
                let (lo, hi) = cs.interval().unwrap_or((f64::NAN, f64::NAN));
                cs_miss |= !(lo <= truth && truth <= hi);
                if t >= 5 {
                    let n = t as f64;
                    let mean = sum / n;
                    let sd = ((squares - n * mean * mean) / (n - 1.0)).max(0.0).sqrt();
                    let half = 1.96 * sd / n.sqrt();
                    fixed_miss |= (mean - truth).abs() > half;
                }
            }
            cs_missed += usize::from(cs_miss);
            fixed_missed += usize::from(fixed_miss);
            let (lo, hi) = cs.interval().unwrap();
            widths.push(hi - lo);
        }
        let cs_rate = cs_missed as f64 / runs as f64;
        let fixed_rate = fixed_missed as f64 / runs as f64;
        let mean_width = widths.iter().sum::<f64>() / widths.len() as f64;
        eprintln!(
            "ever missed: the sequence in {cs_rate}, a fixed 95 % interval read after every pair in {fixed_rate}; the sequence's width at {pairs} pairs {mean_width:.3}"
        );
        // 400 runs: a rate of 0.05 is read within ±0.022 (2 standard errors).
        assert!(cs_rate <= alpha + 0.022, "the sequence missed in {cs_rate} of runs");
        assert!(fixed_rate > 3.0 * alpha, "peeking at a fixed interval should miss often; it missed in {fixed_rate}");
        // It is not trivially wide: after 150 pairs it has narrowed well inside the range.
        assert!(mean_width < 0.6, "{mean_width}");
    }

    #[test]
    fn it_narrows_around_the_mean_and_never_leaves_the_range() {
        let mut cs = BettingCs::new(0.0, 1.0, 0.05);
        assert_eq!(cs.interval(), Some((0.0, 1.0)), "before any observation, the whole range");
        let mut rng = Rng::new(3);
        for _ in 0..2000 {
            cs.push(if rng.uniform() < 0.3 { 1.0 } else { 0.0 });
        }
        let (lo, hi) = cs.interval().unwrap();
        assert!(lo < 0.3 && 0.3 < hi && hi - lo < 0.1, "[{lo}, {hi}]");
        assert_eq!(cs.n(), 2000);
        // A constant sequence pins the mean down from one side only as far as the data allow.
        let mut ones = BettingCs::new(0.0, 1.0, 0.05);
        for _ in 0..50 {
            ones.push(1.0);
        }
        let (lo, hi) = ones.interval().unwrap();
        assert!(lo > 0.8 && hi == 1.0, "[{lo}, {hi}]");
    }
}
