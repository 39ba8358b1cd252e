//! The set of failed ranks as an atomic bitmap: any thread marks, any thread reads.

use super::sync::{AtomicU64, Ordering};
use crate::types::{Rank, RankSet};

/// Failed ranks of a group of fixed size; marking is idempotent and never blocks.
#[derive(Debug)]
pub struct FailedRanks {
    n: u32,
    words: Box<[AtomicU64]>,
    /// Number of distinct ranks marked, bumped after each new mark: a reader that caches
    /// it notices any change with one load.
    changes: AtomicU64,
}

impl FailedRanks {
    /// An empty set for ranks `0..n`.
    pub fn new(n: u32) -> Self {
        let words = (0..(n as usize).div_ceil(64))
            .map(|_| AtomicU64::new(0))
            .collect();
        FailedRanks {
            n,
            words,
            changes: AtomicU64::new(0),
        }
    }

    /// Marks `rank` failed; true if this call was the first to do so. Ranks outside the
    /// group are ignored (false).
    pub fn mark(&self, rank: Rank) -> bool {
        if rank.0 >= self.n {
            return false;
        }
        let (w, bit) = (rank.index() / 64, 1u64 << (rank.0 % 64));
        // ORDERING: AcqRel. Release publishes what the marking thread did before (e.g. the
        // notice it queued) to a thread that later sees the bit with Acquire in
        // `contains`; Acquire orders the `changes` bump below after the bit.
        let first = self.words[w].fetch_or(bit, Ordering::AcqRel) & bit == 0;
        if first {
            // ORDERING: Release; pairs with the Acquire in `changes`: a reader that sees
            // the new count also sees the bit it counts.
            self.changes.fetch_add(1, Ordering::Release);
        }
        first
    }

    /// Whether `rank` is marked failed.
    pub fn contains(&self, rank: Rank) -> bool {
        if rank.0 >= self.n {
            return false;
        }
        // ORDERING: Acquire; pairs with the AcqRel `fetch_or` in `mark`.
        self.words[rank.index() / 64].load(Ordering::Acquire) & (1u64 << (rank.0 % 64)) != 0
    }

    /// How many ranks have been marked (monotone).
    pub fn changes(&self) -> u64 {
        // ORDERING: Acquire; pairs with the Release bump in `mark`.
        self.changes.load(Ordering::Acquire)
    }

    /// A snapshot of the marked ranks (allocates; not for hot paths).
    pub fn snapshot(&self) -> RankSet {
        let mut out = Vec::new();
        for (w, word) in self.words.iter().enumerate() {
            // ORDERING: Acquire, as in `contains`.
            let mut bits = word.load(Ordering::Acquire);
            while bits != 0 {
                let b = bits.trailing_zeros();
                out.push(Rank(w as u32 * 64 + b));
                bits &= bits - 1;
            }
        }
        RankSet::from_ranks(out)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn marks_once_and_snapshots() {
        let f = FailedRanks::new(130);
        assert!(f.mark(Rank(129)));
        assert!(!f.mark(Rank(129)));
        assert!(f.mark(Rank(3)));
        assert!(!f.mark(Rank(130)));
        assert!(f.contains(Rank(3)) && !f.contains(Rank(4)));
        assert_eq!(f.changes(), 2);
        assert_eq!(f.snapshot().as_slice(), &[Rank(3), Rank(129)]);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Two threads race to mark the same rank and another: exactly one wins each, and
    /// a reader that sees the count of 2 sees both bits.
    #[test]
    fn racing_marks() {
        loom::model(|| {
            let f = Arc::new(FailedRanks::new(70));
            let a = {
                let f = f.clone();
                loom::thread::spawn(move || (f.mark(Rank(5)), f.mark(Rank(69))))
            };
            let b = {
                let f = f.clone();
                loom::thread::spawn(move || f.mark(Rank(5)))
            };
            if f.changes() == 2 {
                assert!(f.contains(Rank(5)) && f.contains(Rank(69)));
            }
            let (a5, a69) = a.join().unwrap();
            let b5 = b.join().unwrap();
            assert!(a5 ^ b5, "exactly one first mark");
            assert!(a69);
            assert_eq!(f.changes(), 2);
        });
    }
}
