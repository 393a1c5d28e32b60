//! Small, dependency-free statistics: Wilson score intervals (plain, and with a design effect for
//! sessions clustered by task), t intervals over cluster means (the task, not the session, is the
//! sampled unit: docs/adr/0017-intervals-over-tasks.md), a percentile bootstrap driven by a local
//! SplitMix64 (so intervals never change with a crate upgrade), medians, means and a
//! normal-approximation power estimate.

use serde::{Deserialize, Serialize};

/// z for a two-sided 95% interval.
pub const Z_95: f64 = 1.959_963_984_540_054;
/// z for 80% power (one-sided).
pub const Z_80: f64 = 0.841_621_233_572_914_3;
/// The bootstrap's fixed seed; part of the method, so part of the report.
pub const BOOTSTRAP_SEED: u64 = 0x6d63_702d_6265_6e63; // "mcp-benc"
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// A closed interval `[lo, hi]` around a point estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    pub fn entirely_below(&self, x: f64) -> bool {
        self.hi < x
    }
    pub fn entirely_above(&self, x: f64) -> bool {
        self.lo > x
    }
}

/// Wilson score 95% interval for `successes` out of `n`. `None` when `n == 0`.
pub fn wilson(successes: usize, n: usize) -> Option<Interval> {
    if n == 0 {
        return None;
    }
    let n_f = n as f64;
    let p = successes as f64 / n_f;
    let z2 = Z_95 * Z_95;
    let denom = 1.0 + z2 / n_f;
    let centre = (p + z2 / (2.0 * n_f)) / denom;
    let half = Z_95 * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt() / denom;
    // At 0/n and n/n the exact bound is 0 or 1; pin it against rounding.
    let lo = if successes == 0 { 0.0 } else { (centre - half).max(0.0) };
    let hi = if successes == n { 1.0 } else { (centre + half).min(1.0) };
    Some(Interval { lo, hi })
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (`df` ≥ 1): exact table values
/// to 30, then the Cornish–Fisher expansion in 1/df (error below 1e-5 beyond 30).
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706_204_736,
        4.302_652_730,
        3.182_446_305,
        2.776_445_105,
        2.570_581_836,
        2.446_911_851,
        2.364_624_252,
        2.306_004_135,
        2.262_157_163,
        2.228_138_852,
        2.200_985_160,
        2.178_812_830,
        2.160_368_656,
        2.144_786_688,
        2.131_449_546,
        2.119_905_299,
        2.109_815_578,
        2.100_922_040,
        2.093_024_054,
        2.085_963_447,
        2.079_613_845,
        2.073_873_068,
        2.068_657_610,
        2.063_898_562,
        2.059_538_553,
        2.055_529_439,
        2.051_830_516,
        2.048_407_142,
        2.045_229_642,
        2.042_272_456,
    ];
    t_quantile(&TABLE, Z_95, df)
}

/// The 0.80 quantile of Student's t with `df` degrees of freedom (`df` ≥ 1): table values to 30
/// (computed by integrating the density), then the Cornish–Fisher expansion.
pub fn t_80(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        1.376_381_920,
        1.060_660_172,
        0.978_472_312,
        0.940_964_577,
        0.919_543_780,
        0.905_703_285,
        0.896_029_644,
        0.888_889_518,
        0.883_403_860,
        0.879_057_829,
        0.875_529_978,
        0.872_609_292,
        0.870_151_534,
        0.868_054_782,
        0.866_244_973,
        0.864_667_002,
        0.863_279_017,
        0.862_048_668,
        0.860_950_550,
        0.859_964_440,
        0.859_074_035,
        0.858_266_052,
        0.857_529_554,
        0.856_855_458,
        0.856_236_158,
        0.855_665_233,
        0.855_137_231,
        0.854_647_486,
        0.854_191_986,
        0.853_767_261,
    ];
    t_quantile(&TABLE, Z_80, df)
}

/// Student's t quantile whose normal quantile is `z`: `table[df − 1]` up to the table's length,
/// beyond it the Cornish–Fisher expansion in 1/df.
fn t_quantile(table: &[f64], z: f64, df: usize) -> f64 {
    assert!(df >= 1, "t needs at least one degree of freedom");
    if df <= table.len() {
        return table[df - 1];
    }
    let v = df as f64;
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * v) + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v) + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v.powi(3))
}

/// The minimum detectable difference of a mean over clusters (one value per task): the true
/// mean a two-sided 5 % t test over these T tasks would find with 80 % power, given their
/// observed spread — (t(0.975, T − 1) + t(0.80, T − 1)) · SD / √T. `None` below 2 clusters.
pub fn cluster_mde(cluster_values: &[f64]) -> Option<f64> {
    let t = cluster_values.len();
    if t < 2 {
        return None;
    }
    Some((t_975(t - 1) + t_80(t - 1)) * sd(cluster_values)? / (t as f64).sqrt())
}

/// 95% t interval of the mean of `cluster_means` (one value per task): mean ± t(0.975, T − 1) ·
/// SD / √T. The clusters are the sampled units, so this is an interval for the mean over the
/// population of tasks the set stands for; it does not narrow with more reps of the same tasks.
/// `None` below 2 clusters.
pub fn cluster_mean_ci(cluster_means: &[f64]) -> Option<Interval> {
    let t = cluster_means.len();
    if t < 2 {
        return None;
    }
    let (m, sd) = (mean(cluster_means)?, sd(cluster_means)?);
    let half = t_975(t - 1) * sd / (t as f64).sqrt();
    Some(Interval { lo: m - half, hi: m + half })
}

/// Pseudo-tasks added to the per-task differences of two pass rates, as (difference, weight): half
/// of Agresti and Min's pseudo-counts for a paired difference (2005) carried to tasks — half a
/// task of no difference and a quarter at each of +1 and −1. Chosen by measured coverage
/// (docs/calibration/): without them, sets of all-or-nothing tasks where a pattern breaks a few
/// tasks outright gave intervals that covered the truth 77–91 % of the time (a set with no broken
/// task shows a zero-width interval at 0); with Agresti and Min's full counts, 95–100 % but at a
/// cost in power (a 21-point drop found at 16 tasks × 3 in 46 % of experiments instead of 79 %);
/// with half, 94–100 % and 63 %.
const PSEUDO_TASKS: [(f64, f64); 3] = [(0.0, 0.5), (1.0, 0.25), (-1.0, 0.25)];

/// The per-task differences of two pass rates (each in [−1, 1]) with [`PSEUDO_TASKS`] added before
/// the spread is taken, so that tasks that all showed no difference do not give a zero-width
/// interval ruling out a difference a few more tasks could show. (weighted mean, weighted SD,
/// total weight).
fn rate_difference_spread(task_diffs: &[f64]) -> Option<(f64, f64, f64)> {
    if task_diffs.len() < 2 {
        return None;
    }
    let weighted: Vec<(f64, f64)> = task_diffs.iter().map(|&d| (d, 1.0)).chain(PSEUDO_TASKS).collect();
    let w: f64 = weighted.iter().map(|x| x.1).sum();
    let m = weighted.iter().map(|(d, wi)| d * wi).sum::<f64>() / w;
    let var = weighted.iter().map(|(d, wi)| wi * (d - m).powi(2)).sum::<f64>() / (w - 1.0);
    Some((m, var.sqrt(), w))
}

/// 95% interval of the mean difference of two pass rates over tasks (per-task mean differences):
/// a t interval (T − 1 degrees of freedom) on the pseudo-count-adjusted mean and spread
/// ([`rate_difference_spread`]), clipped to [−1, 1]. `None` below 2 tasks.
pub fn rate_difference_ci(task_diffs: &[f64]) -> Option<Interval> {
    let (m, sd, w) = rate_difference_spread(task_diffs)?;
    let half = t_975(task_diffs.len() - 1) * sd / w.sqrt();
    Some(Interval { lo: (m - half).max(-1.0), hi: (m + half).min(1.0) })
}

/// The minimum detectable difference of two pass rates over tasks, from the same adjusted
/// spread as [`rate_difference_ci`].
pub fn rate_difference_mde(task_diffs: &[f64]) -> Option<f64> {
    let (_, sd, w) = rate_difference_spread(task_diffs)?;
    let df = task_diffs.len() - 1;
    Some(((t_975(df) + t_80(df)) * sd / w.sqrt()).min(1.0))
}

/// 95% interval of R = mean(pattern) / mean(control) − 1 over clusters (per-task means, paired
/// by index): Fieller's interval for a ratio of two correlated means, with a t quantile (T − 1
/// degrees of freedom) — the set of θ = 1 + R for which mean(pattern) − θ · mean(control) is not
/// shown different from 0. It is not symmetric, as a ratio's uncertainty is not. `None` below 2
/// clusters, for unequal lengths, and when the control mean itself is not shown different from 0
/// (the interval is then unbounded).
pub fn cluster_ratio_ci(pattern: &[f64], control: &[f64]) -> Option<Interval> {
    let t = pattern.len();
    if t < 2 || control.len() != t {
        return None;
    }
    let (mp, mc) = (mean(pattern)?, mean(control)?);
    let cov = |x: &[f64], mx: f64, y: &[f64], my: f64| x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum::<f64>() / (t - 1) as f64;
    let (spp, scc, spc) = (cov(pattern, mp, pattern, mp), cov(control, mc, control, mc), cov(pattern, mp, control, mc));
    let q = t_975(t - 1).powi(2) / t as f64;
    let a = mc * mc - q * scc;
    let b = -2.0 * (mp * mc - q * spc);
    let c = mp * mp - q * spp;
    let disc = b * b - 4.0 * a * c;
    if a <= 0.0 || disc < 0.0 {
        return None;
    }
    let root = disc.sqrt();
    let (lo, hi) = ((-b - root) / (2.0 * a), (-b + root) / (2.0 * a));
    Some(Interval { lo: lo - 1.0, hi: hi - 1.0 })
}

/// Wilson 95% interval of a pass rate over sessions clustered by task, `(passed, sessions)` per
/// task: the Wilson interval at the effective sample size n / deff (shrunk further by Korn and
/// Graubard's degrees-of-freedom factor, for the few tasks a set has), where the design effect
/// deff = 1 + (m̄ − 1) · ρ comes from the intraclass correlation ρ of passing within a task (one-way
/// ANOVA estimator, floored at 0; m̄ the mean sessions per task). With one session per task, or
/// no correlation, it is the plain Wilson interval; when tasks are all-or-nothing it is the
/// Wilson interval over tasks. `None` when there are no sessions.
pub fn wilson_clustered(clusters: &[(usize, usize)]) -> Option<Interval> {
    let clusters: Vec<(usize, usize)> = clusters.iter().copied().filter(|&(_, n)| n > 0).collect();
    let (x, n): (usize, usize) = clusters.iter().fold((0, 0), |(x, n), &(a, b)| (x + a, n + b));
    if n == 0 {
        return None;
    }
    let deff = design_effect(&clusters).unwrap_or(1.0);
    // Korn and Graubard's degrees-of-freedom adjustment (1998): with T clusters the variance
    // estimate has T − 1 degrees of freedom, not n − 1, so the effective size shrinks by
    // (t(n − 1) / t(T − 1))² — 1 when every cluster holds one session.
    let t = clusters.len();
    let df_factor = if t >= 2 && n > t { (t_975(n - 1) / t_975(t - 1)).powi(2) } else { 1.0 };
    let n_eff = n as f64 / deff * df_factor;
    wilson_f(x as f64 / n as f64, n_eff)
}

/// Kish's design effect of a 0/1 outcome over `(successes, n)` clusters; `None` when it cannot be
/// estimated (one cluster, or a single session per cluster), which the caller reads as 1.
fn design_effect(clusters: &[(usize, usize)]) -> Option<f64> {
    let k = clusters.len();
    let n: usize = clusters.iter().map(|c| c.1).sum();
    if k < 2 || n <= k {
        return None;
    }
    let p = clusters.iter().map(|c| c.0).sum::<usize>() as f64 / n as f64;
    // Between- and within-cluster mean squares of the 0/1 outcome.
    let ss_between: f64 = clusters.iter().map(|&(x, m)| m as f64 * (x as f64 / m as f64 - p).powi(2)).sum();
    let ss_within: f64 = clusters.iter().map(|&(x, m)| x as f64 * (1.0 - x as f64 / m as f64)).sum();
    let (msb, msw) = (ss_between / (k - 1) as f64, ss_within / (n - k) as f64);
    let n0 = (n as f64 - clusters.iter().map(|c| (c.1 * c.1) as f64).sum::<f64>() / n as f64) / (k - 1) as f64;
    let denom = msb + (n0 - 1.0) * msw;
    let rho = if denom > 0.0 { ((msb - msw) / denom).clamp(0.0, 1.0) } else { 0.0 };
    let m_bar = n as f64 / k as f64;
    Some(1.0 + (m_bar - 1.0) * rho)
}

/// The Wilson 95% interval at proportion `p` over an effective `n` (which may be fractional).
fn wilson_f(p: f64, n: f64) -> Option<Interval> {
    if n <= 0.0 {
        return None;
    }
    let z2 = Z_95 * Z_95;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = Z_95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    let lo = if p <= 0.0 { 0.0 } else { (centre - half).max(0.0) };
    let hi = if p >= 1.0 { 1.0 } else { (centre + half).min(1.0) };
    Some(Interval { lo, hi })
}

pub use records::rng::SplitMix64;

/// Percentile bootstrap 95% interval of the mean of `xs`, resampling with replacement.
/// `None` for fewer than 2 values (no spread to resample).
pub fn bootstrap_mean_ci(xs: &[f64], resamples: usize, seed: u64) -> Option<Interval> {
    if xs.len() < 2 || resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let n = xs.len();
    let mut means: Vec<f64> = (0..resamples).map(|_| (0..n).map(|_| xs[rng.below(n)]).sum::<f64>() / n as f64).collect();
    means.sort_by(f64::total_cmp);
    Some(Interval { lo: quantile_sorted(&means, 0.025), hi: quantile_sorted(&means, 0.975) })
}

/// Percentile bootstrap 95% interval of the relative difference Σpattern / Σcontrol − 1 over
/// paired values, resampling pairs with replacement. Scaling the mean-difference interval by the
/// observed control mean would treat that mean as known; resampling the ratio itself carries its
/// uncertainty too. The same seed draws the same indices as [`bootstrap_mean_ci`], so with a
/// constant control the two intervals agree exactly. `None` for fewer than 2 pairs, unequal
/// lengths, or when some resample's control sum is 0 (the ratio is undefined there).
pub fn bootstrap_ratio_ci(pattern: &[f64], control: &[f64], resamples: usize, seed: u64) -> Option<Interval> {
    let n = pattern.len();
    if n < 2 || control.len() != n || resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let (mut p, mut c) = (0.0, 0.0);
        for _ in 0..n {
            let i = rng.below(n);
            p += pattern[i];
            c += control[i];
        }
        if c == 0.0 {
            return None;
        }
        ratios.push(p / c - 1.0);
    }
    ratios.sort_by(f64::total_cmp);
    Some(Interval { lo: quantile_sorted(&ratios, 0.025), hi: quantile_sorted(&ratios, 0.975) })
}

/// Percentile bootstrap 95% interval of a share Σpart / Σwhole taken over clusters (the
/// references of one answer, say, which are not independent of each other), resampling whole
/// clusters with replacement. `None` for fewer than 2 clusters, or when a cluster's whole is 0
/// (the caller passes only clusters with something to share).
pub fn bootstrap_share_ci(clusters: &[(f64, f64)], resamples: usize, seed: u64) -> Option<Interval> {
    let n = clusters.len();
    if n < 2 || resamples == 0 || clusters.iter().any(|(_, whole)| *whole <= 0.0) {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut shares: Vec<f64> = (0..resamples)
        .map(|_| {
            let (mut part, mut whole) = (0.0, 0.0);
            for _ in 0..n {
                let (p, w) = clusters[rng.below(n)];
                part += p;
                whole += w;
            }
            part / whole
        })
        .collect();
    shares.sort_by(f64::total_cmp);
    Some(Interval { lo: quantile_sorted(&shares, 0.025), hi: quantile_sorted(&shares, 0.975) })
}

/// Linear-interpolation quantile (type 7) of sorted data.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    Some(quantile_sorted(&v, 0.5))
}

/// Sample standard deviation (n − 1). `None` below 2 values.
pub fn sd(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    (xs.len() >= 2).then(|| (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt())
}

/// Pairs needed for a two-sided paired test at α = 0.05 with 80% power to detect a mean
/// difference `delta`, given the SD of paired differences (normal approximation:
/// n = ((z_{0.975} + z_{0.80}) · sd / delta)²). `None` if delta is not positive.
pub fn pairs_needed(sd: f64, delta: f64) -> Option<u64> {
    if delta <= 0.0 || !delta.is_finite() || !sd.is_finite() {
        return None;
    }
    Some((((Z_95 + Z_80) * sd / delta).powi(2)).ceil().max(2.0) as u64)
}

/// Cohen's kappa: how far two raters' labels of the same items agree beyond what their own
/// label frequencies would give by chance, κ = (p_o − p_e) / (1 − p_e), over `(rater a, rater b)`
/// pairs. `None` when it is undefined: no pairs, or chance agreement already 1 (both raters used
/// one and the same label for everything), where there is nothing left to agree beyond chance.
pub fn cohen_kappa<L: Ord>(pairs: &[(L, L)]) -> Option<f64> {
    if pairs.is_empty() {
        return None;
    }
    let n = pairs.len() as f64;
    let mut a: std::collections::BTreeMap<&L, f64> = std::collections::BTreeMap::new();
    let mut b: std::collections::BTreeMap<&L, f64> = std::collections::BTreeMap::new();
    for (x, y) in pairs {
        *a.entry(x).or_default() += 1.0;
        *b.entry(y).or_default() += 1.0;
    }
    let observed = pairs.iter().filter(|(x, y)| x == y).count() as f64 / n;
    let expected: f64 = a.iter().map(|(label, ka)| ka / n * b.get(label).copied().unwrap_or(0.0) / n).sum();
    // 1 − p_e is 0 only when both used a single, shared label; guard rounding just below it too.
    (1.0 - expected > 1e-12).then(|| (observed - expected) / (1.0 - expected))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.0015
    }

    #[test]
    fn a_share_over_clusters_resamples_whole_clusters() {
        // Every cluster 1 of 2: every resample gives exactly one half.
        let i = bootstrap_share_ci(&[(1.0, 2.0); 5], 1000, 7).unwrap();
        assert_eq!((i.lo, i.hi), (0.5, 0.5));
        // One cluster all grounded, one none: the interval spans what resampling two can give.
        let i = bootstrap_share_ci(&[(3.0, 3.0), (0.0, 1.0)], 2000, 7).unwrap();
        assert_eq!((i.lo, i.hi), (0.0, 1.0));
        assert!(bootstrap_share_ci(&[(1.0, 1.0)], 1000, 7).is_none());
        assert!(bootstrap_share_ci(&[(1.0, 1.0), (0.0, 0.0)], 1000, 7).is_none());
    }

    #[test]
    fn wilson_matches_published_values() {
        let i = wilson(8, 10).unwrap();
        assert!(close(i.lo, 0.490) && close(i.hi, 0.943), "{i:?}");
        let i = wilson(0, 10).unwrap();
        assert_eq!(i.lo, 0.0);
        assert!(close(i.hi, 0.278), "{i:?}");
        let i = wilson(10, 10).unwrap();
        assert!(close(i.lo, 0.722) && i.hi == 1.0, "{i:?}");
        // 50/100 → [0.404, 0.596]
        let i = wilson(50, 100).unwrap();
        assert!(close(i.lo, 0.404) && close(i.hi, 0.596), "{i:?}");
        assert!(wilson(0, 0).is_none());
    }

    #[test]
    fn splitmix_is_frozen() {
        // Reference outputs of SplitMix64 seeded with 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn bootstrap_is_deterministic_and_sane() {
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0];
        let a = bootstrap_mean_ci(&xs, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED).unwrap();
        let b = bootstrap_mean_ci(&xs, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED).unwrap();
        assert_eq!(a, b, "same seed, same interval");
        // Contains the mean, lies within the data range, and is near the known bootstrap
        // bounds for this sample (≈ [1.8, 4.2]).
        assert!(a.lo < 3.0 && a.hi > 3.0);
        assert!(a.lo >= 1.0 && a.hi <= 5.0);
        assert!((a.lo - 1.8).abs() <= 0.21 && (a.hi - 4.2).abs() <= 0.21, "{a:?}");
        // A constant sample has a degenerate interval.
        let c = bootstrap_mean_ci(&[-7.0; 6], 1000, 1).unwrap();
        assert_eq!((c.lo, c.hi), (-7.0, -7.0));
        assert!(bootstrap_mean_ci(&[1.0], 1000, 1).is_none());
    }

    #[test]
    fn ratio_bootstrap_has_the_known_answers() {
        // Pairs (1, 1) and (3, 1): a resample of two pairs holds pair 2 zero, one or two times, so
        // Σp/Σc − 1 is 0, 1 or 2 with probabilities ¼, ½, ¼; the 2.5% and 97.5% percentiles are
        // exactly 0 and 2.
        let i = bootstrap_ratio_ci(&[1.0, 3.0], &[1.0, 1.0], BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED).unwrap();
        assert_eq!((i.lo, i.hi), (0.0, 2.0));
        // A pattern that is always 0.8 × control: every resample gives −20%.
        let c = [100.0, 250.0, 400.0, 1000.0];
        let p: Vec<f64> = c.iter().map(|x| 0.8 * x).collect();
        let i = bootstrap_ratio_ci(&p, &c, 2000, 9).unwrap();
        assert!((i.lo + 0.2).abs() < 1e-12 && (i.hi + 0.2).abs() < 1e-12, "{i:?}");
        // With a constant control the ratio is mean(p − c) / c, and the same seed draws the same
        // indices: the interval is the mean-difference interval divided by c.
        let p = [90.0, 70.0, 110.0, 60.0, 85.0];
        let d: Vec<f64> = p.iter().map(|x| x - 100.0).collect();
        let r = bootstrap_ratio_ci(&p, &[100.0; 5], BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED).unwrap();
        let m = bootstrap_mean_ci(&d, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED).unwrap();
        assert!((r.lo - m.lo / 100.0).abs() < 1e-12 && (r.hi - m.hi / 100.0).abs() < 1e-12, "{r:?} vs {m:?}");
        // Deterministic, and undefined where it must be.
        assert_eq!(bootstrap_ratio_ci(&p, &[100.0; 5], 500, 3), bootstrap_ratio_ci(&p, &[100.0; 5], 500, 3));
        assert!(bootstrap_ratio_ci(&[1.0], &[1.0], 100, 1).is_none());
        assert!(bootstrap_ratio_ci(&[1.0, 2.0], &[0.0, 0.0], 100, 1).is_none());
        assert!(bootstrap_ratio_ci(&[1.0, 2.0], &[1.0], 100, 1).is_none());
    }

    #[test]
    fn medians_means_sd_and_power() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(mean(&[]), None);
        assert!((sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap() - 2.138).abs() < 0.001);
        // sd = delta → (1.96 + 0.84)² ≈ 7.85 → 8 pairs.
        assert_eq!(pairs_needed(1.0, 1.0), Some(8));
        assert_eq!(pairs_needed(1.0, 0.0), None);
    }

    #[test]
    fn cohen_kappa_matches_the_textbook_example_and_is_undefined_without_spread() {
        // Wikipedia, "Cohen's kappa", worked example: 50 grant proposals read by two readers,
        // 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: p_o = 0.7, p_e = 0.5, κ = 0.4.
        let mut pairs = Vec::new();
        pairs.extend(std::iter::repeat_n(("yes", "yes"), 20));
        pairs.extend(std::iter::repeat_n(("yes", "no"), 5));
        pairs.extend(std::iter::repeat_n(("no", "yes"), 10));
        pairs.extend(std::iter::repeat_n(("no", "no"), 15));
        assert!((cohen_kappa(&pairs).unwrap() - 0.4).abs() < 1e-12);
        // Full agreement over two labels is 1.
        assert_eq!(cohen_kappa(&[("a", "a"), ("b", "b")]), Some(1.0));
        // Agreement no better than chance is 0: each rater says "a" half the time, independently.
        assert_eq!(cohen_kappa(&[("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")]), Some(0.0));
        // Both raters used one label for everything: chance agreement is 1, κ is undefined.
        assert_eq!(cohen_kappa(&[("a", "a"), ("a", "a")]), None);
        assert_eq!(cohen_kappa::<&str>(&[]), None);
        // One rater constant, the other not: defined, and 0 (p_o = p_e = ½).
        assert_eq!(cohen_kappa(&[("a", "a"), ("a", "b")]), Some(0.0));
    }
}

#[cfg(test)]
mod cluster_tests {
    use super::*;

    #[test]
    fn t_quantiles_match_published_values() {
        // Tables give t(0.975) for 1, 7, 30 and (Cornish–Fisher beyond) 40, 120 d.f.
        for (df, t) in [(1, 12.7062), (7, 2.3646), (30, 2.0423), (40, 2.0211), (120, 1.9799)] {
            assert!((t_975(df) - t).abs() < 5e-4, "df {df}: {}", t_975(df));
        }
    }

    #[test]
    fn a_cluster_mean_interval_is_the_t_interval_over_cluster_means() {
        // Means 1, 2, 3: mean 2, SD 1, half-width t(2) / √3.
        let i = cluster_mean_ci(&[1.0, 2.0, 3.0]).unwrap();
        let half = 4.302_652_730 / 3f64.sqrt();
        assert!((i.lo - (2.0 - half)).abs() < 1e-12 && (i.hi - (2.0 + half)).abs() < 1e-12, "{i:?}");
        assert!(cluster_mean_ci(&[5.0]).is_none(), "one task: no interval");
    }

    #[test]
    fn fiellers_interval_holds_its_defining_property_and_the_known_answers() {
        // A constant ratio: every pattern mean is 0.8 of its control's: the interval is that point.
        let c = [100.0, 250.0, 400.0, 175.0];
        let p: Vec<f64> = c.iter().map(|x| 0.8 * x).collect();
        let i = cluster_ratio_ci(&p, &c).unwrap();
        assert!((i.lo + 0.2).abs() < 1e-6 && (i.hi + 0.2).abs() < 1e-6, "{i:?}");
        // At each bound θ = 1 + R, mean(p − θ c) is exactly t · SE(p − θ c) away from 0.
        let (p, c) = ([80.0, 260.0, 330.0, 150.0, 95.0], [100.0, 250.0, 400.0, 175.0, 120.0]);
        let i = cluster_ratio_ci(&p, &c).unwrap();
        assert!(i.lo < -0.1 && i.hi > -0.1 && i.lo < i.hi, "{i:?}");
        for theta in [1.0 + i.lo, 1.0 + i.hi] {
            let d: Vec<f64> = p.iter().zip(&c).map(|(a, b)| a - theta * b).collect();
            let se = sd(&d).unwrap() / 5f64.sqrt();
            assert!((mean(&d).unwrap().abs() - t_975(4) * se).abs() < 1e-6, "θ {theta}");
        }
        // A control mean not shown different from 0: unbounded, so none.
        assert!(cluster_ratio_ci(&[1.0, 2.0, 3.0], &[-5.0, 0.0, 5.5]).is_none());
    }

    #[test]
    fn a_clustered_wilson_interval_counts_reps_of_one_task_as_far_as_they_agree() {
        // One session per task: the plain Wilson interval.
        let one_each: Vec<(usize, usize)> = (0..10).map(|i| (usize::from(i < 7), 1)).collect();
        assert_eq!(wilson_clustered(&one_each), wilson(7, 10));
        // Tasks all-or-nothing over 3 reps: the Wilson interval over the 10 tasks, not 30
        // sessions — and the variance has 9 degrees of freedom, not 29 (Korn–Graubard).
        let all_or_nothing: Vec<(usize, usize)> = (0..10).map(|i| (if i < 7 { 3 } else { 0 }, 3)).collect();
        let i = wilson_clustered(&all_or_nothing).unwrap();
        let over_tasks = wilson_f(0.7, 10.0 * (t_975(29) / t_975(9)).powi(2)).unwrap();
        assert!((i.lo - over_tasks.lo).abs() < 1e-9 && (i.hi - over_tasks.hi).abs() < 1e-9, "{i:?} vs {over_tasks:?}");
        assert!(i.lo < wilson(7, 10).unwrap().lo && i.hi > wilson(7, 10).unwrap().hi, "wider than the Wilson over tasks: {i:?}");
        // Reps that disagree as much as chance would: no design effect, the Wilson over sessions
        // at the degrees of freedom 6 tasks have.
        let mixed = [(2, 3), (1, 3), (2, 3), (1, 3), (2, 3), (1, 3)];
        let i = wilson_clustered(&mixed).unwrap();
        let expected = wilson_f(0.5, 18.0 * (t_975(17) / t_975(5)).powi(2)).unwrap();
        assert!((i.lo - expected.lo).abs() < 1e-9 && (i.hi - expected.hi).abs() < 1e-9, "{i:?} vs {expected:?}");
        assert!(wilson_clustered(&[]).is_none());
    }
}
