//! A small, fixed pseudo-random generator for the dataset generators.
//!
//! Datasets must be identical for a seed on every build and machine, forever: a manifest hash
//! written down today must still match next year. `rand`'s `SmallRng` and `StdRng` explicitly do
//! not promise that (their algorithms may change between versions), so the generators use this
//! SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
//! OOPSLA 2014; the constants are the published ones). Its output is fixed by the algorithm
//! and tested against the first values of the reference sequence for seed 0.
//!
//! Not for cryptography; statistically good enough for sizes, names and content pools.

/// SplitMix64: a 64-bit state advanced by the golden-ratio increment and mixed on output.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// A generator for one independent stream of a seed (for example, one stream per dataset
    /// aspect), so that drawing more of one aspect does not shift another.
    pub fn stream(seed: u64, stream: u64) -> SplitMix64 {
        let mut g = SplitMix64::new(seed ^ stream.wrapping_mul(0xD605_BBB5_8C8A_BBB5));
        g.next_u64();
        g
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, n)` (Lemire's multiply-shift; the bias for `n` ≪ 2⁶⁴ is negligible
    /// here). `n = 0` returns 0.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A standard normal deviate (Box–Muller, one of the pair).
    pub fn normal(&mut self) -> f64 {
        // 1 - unit() is in (0, 1], so the logarithm is finite.
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Index drawn with probability proportional to `weights` (all ≥ 0, not all 0).
    pub fn weighted(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut x = self.unit() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len().saturating_sub(1)
    }

    /// Fills `buf` with random bytes, eight at a time.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let last = self.next_u64().to_le_bytes();
        rest.copy_from_slice(&last[..rest.len()]);
    }
}

/// FNV-1a, 64 bit (Fowler, Noll, Vo): a fixed, dependency-free hash for manifests and tree
/// digests. Not collision-resistant against an adversary; stable across builds.
#[derive(Clone, Copy, Debug)]
pub struct Fnv64(u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv64 {
    /// Adds bytes.
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    /// Adds a number (little-endian bytes).
    #[inline]
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // First outputs of the reference C implementation for seed 0.
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(g.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn draws_stay_in_range_and_look_uniform() {
        let mut g = SplitMix64::new(42);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            let v = g.below(10);
            counts[v as usize] += 1;
            let u = g.unit();
            assert!((0.0..1.0).contains(&u));
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
        let n = 100_000;
        let mean = (0..n).map(|_| g.normal()).sum::<f64>() / f64::from(n);
        assert!(mean.abs() < 0.02, "{mean}");
        let w = [0.0, 3.0, 1.0];
        let picks: Vec<usize> = (0..4000).map(|_| g.weighted(&w)).collect();
        assert!(!picks.contains(&0));
        let ones = picks.iter().filter(|&&i| i == 1).count();
        assert!((2800..3200).contains(&ones), "{ones}");
    }

    #[test]
    fn fnv_matches_known_values() {
        assert_eq!(Fnv64::default().finish(), 0xcbf2_9ce4_8422_2325);
        assert_eq!(Fnv64::default().bytes(b"a").finish(), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(Fnv64::default().bytes(b"foobar").finish(), 0x8594_4171_f739_67e8);
    }
}
