//! The simulator's only source of randomness: SplitMix64, seeded once per run.

/// Deterministic pseudo-random generator (SplitMix64; Steele, Lea, Flood 2014).
#[derive(Clone, Debug)]
pub struct SimRng(u64);

impl SimRng {
    /// A generator whose whole output is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        SimRng(seed ^ 0x5eed_fa57_0000_0001)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        // Multiply-shift: unbiased enough for simulation, no division.
        ((self.next_u64() as u128 * bound as u128) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p && p > 0.0
    }
}

/// Mixes values into one 64-bit hash (stateless, for per-process derived values).
pub fn mix(a: u64, b: u64) -> u64 {
    let mut r = SimRng::new(a.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ b);
    r.next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_bounds_hold() {
        let (mut a, mut b) = (SimRng::new(7), SimRng::new(7));
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            let x = a.range(3, 9);
            assert!((3..=9).contains(&x));
            b.range(3, 9);
        }
        assert_ne!(SimRng::new(1).next_u64(), SimRng::new(2).next_u64());
        assert!(!SimRng::new(1).chance(0.0));
    }
}
