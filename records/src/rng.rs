//! SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and frozen here, so a seed gives the same
//! numbers on any machine and with any crate upgrade. The report's bootstrap and the simulated
//! agent draw from it.

#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A generator for one labelled stream of a seed (`seed`, then each label): the same seed
    /// and labels give the same numbers; any other label gives unrelated ones.
    pub fn labelled(seed: u64, labels: &[&str]) -> Self {
        let mut text = seed.to_string();
        for l in labels {
            text.push('\0');
            text.push_str(l);
        }
        let digest = crate::sha256_hex(text.as_bytes());
        Self(u64::from_str_radix(&digest[..16], 16).expect("sha256 hex"))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias is below 2^-40 for our n).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// Poisson with mean `mean` (Knuth's product of uniforms; for the small means used here).
    pub fn poisson(&mut self, mean: f64) -> u32 {
        if mean.is_nan() || mean <= 0.0 {
            return 0;
        }
        let limit = (-mean).exp();
        let (mut k, mut p) = (0u32, self.uniform());
        while p > limit && k < 1_000 {
            k += 1;
            p *= self.uniform();
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_outputs_and_labelled_streams_hold() {
        // First output of SplitMix64 seeded with 0, from the reference implementation.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
        let a = SplitMix64::labelled(7, &["task", "t1"]).next_u64();
        assert_eq!(a, SplitMix64::labelled(7, &["task", "t1"]).next_u64());
        assert_ne!(a, SplitMix64::labelled(7, &["task", "t2"]).next_u64());
        assert_ne!(a, SplitMix64::labelled(8, &["task", "t1"]).next_u64());
        // Labels are separated: ("ab", "c") is not ("a", "bc").
        assert_ne!(SplitMix64::labelled(1, &["ab", "c"]).next_u64(), SplitMix64::labelled(1, &["a", "bc"]).next_u64());
    }

    #[test]
    fn poisson_draws_have_their_mean() {
        let mut r = SplitMix64::new(3);
        let n = 100_000;
        let mean = (0..n).map(|_| r.poisson(1.5) as f64).sum::<f64>() / n as f64;
        assert!((mean - 1.5).abs() < 0.02, "{mean}");
        assert_eq!(r.poisson(0.0), 0);
    }
}
