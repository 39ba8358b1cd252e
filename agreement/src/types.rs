//! Identifiers and the small sorted rank set every protocol here exchanges.

use std::fmt;

/// A process's rank inside one communicator (0-based, dense).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rank(pub u32);

impl Rank {
    /// The rank as an index into per-rank tables.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Debug for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Identifies a communicator across the job (chosen by the runtime, equal on every member).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct CommId(pub u64);

/// Incarnation of a communicator id: bumped when the id is reused (after shrink, restart).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Epoch(pub u32);

/// The communicator an agreement engine serves: id plus epoch.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct CommKey {
    /// Communicator id.
    pub comm: CommId,
    /// Its epoch.
    pub epoch: Epoch,
}

/// Sequence number of an agreement instance on one communicator (0, 1, 2, ...).
pub type Seq = u32;

/// Full key of one agreement instance: (comm id, epoch, sequence).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct AgreementId {
    /// The communicator.
    pub key: CommKey,
    /// The instance's sequence number on it.
    pub seq: Seq,
}

/// A set of ranks kept as a sorted vector without duplicates.
///
/// Failure sets are small (a handful of ranks even on a million-process job), so a sorted
/// vector beats any tree or bitmap on both memory and speed, and encodes as is.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct RankSet {
    ranks: Vec<Rank>,
}

impl RankSet {
    /// The empty set (allocates nothing).
    pub const fn new() -> Self {
        RankSet { ranks: Vec::new() }
    }

    /// Builds a set from any ranks (sorted and deduplicated here).
    pub fn from_ranks(ranks: impl IntoIterator<Item = Rank>) -> Self {
        let mut ranks: Vec<Rank> = ranks.into_iter().collect();
        ranks.sort_unstable();
        ranks.dedup();
        RankSet { ranks }
    }

    /// Builds a set from a vector already sorted strictly increasing (checked in debug builds).
    pub(crate) fn from_sorted(ranks: Vec<Rank>) -> Self {
        debug_assert!(ranks.windows(2).all(|w| w[0] < w[1]));
        RankSet { ranks }
    }

    /// Whether `rank` is in the set.
    #[inline]
    pub fn contains(&self, rank: Rank) -> bool {
        // Linear for the common tiny case, binary search beyond.
        if self.ranks.len() <= 8 {
            self.ranks.contains(&rank)
        } else {
            self.ranks.binary_search(&rank).is_ok()
        }
    }

    /// Adds `rank`; returns whether it was new.
    pub fn insert(&mut self, rank: Rank) -> bool {
        match self.ranks.binary_search(&rank) {
            Ok(_) => false,
            Err(at) => {
                self.ranks.insert(at, rank);
                true
            }
        }
    }

    /// Removes `rank`; returns whether it was there.
    pub fn remove(&mut self, rank: Rank) -> bool {
        match self.ranks.binary_search(&rank) {
            Ok(at) => {
                self.ranks.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    /// Adds every rank of `other`; returns whether the set grew.
    pub fn union_with(&mut self, other: &RankSet) -> bool {
        let before = self.ranks.len();
        for &r in &other.ranks {
            self.insert(r);
        }
        self.ranks.len() != before
    }

    /// Keeps only the ranks also in `other`.
    pub fn intersect_with(&mut self, other: &RankSet) {
        self.ranks.retain(|r| other.contains(*r));
    }

    /// Whether every rank of `self` is in `other`.
    pub fn is_subset(&self, other: &RankSet) -> bool {
        self.ranks.iter().all(|r| other.contains(*r))
    }

    /// Number of ranks.
    #[inline]
    pub fn len(&self) -> usize {
        self.ranks.len()
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    /// The ranks in increasing order.
    #[inline]
    pub fn as_slice(&self) -> &[Rank] {
        &self.ranks
    }

    /// Iterates the ranks in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = Rank> + '_ {
        self.ranks.iter().copied()
    }

    /// Number of ranks in the set strictly below `rank`.
    pub fn count_below(&self, rank: Rank) -> u32 {
        self.ranks.partition_point(|r| *r < rank) as u32
    }
}

impl fmt::Debug for RankSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.ranks.iter()).finish()
    }
}

impl FromIterator<Rank> for RankSet {
    fn from_iter<I: IntoIterator<Item = Rank>>(iter: I) -> Self {
        RankSet::from_ranks(iter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[u32]) -> RankSet {
        v.iter().map(|&r| Rank(r)).collect()
    }

    #[test]
    fn set_operations() {
        let mut a = set(&[5, 1, 3, 3]);
        assert_eq!(a.as_slice(), &[Rank(1), Rank(3), Rank(5)]);
        assert!(!a.insert(Rank(3)));
        assert!(a.insert(Rank(0)));
        assert!(a.union_with(&set(&[7, 1])));
        assert!(!a.union_with(&set(&[7])));
        assert_eq!(a.len(), 5);
        a.intersect_with(&set(&[0, 5, 9]));
        assert_eq!(a, set(&[0, 5]));
        assert!(a.is_subset(&set(&[0, 2, 5])));
        assert!(!a.is_subset(&set(&[0])));
        assert_eq!(set(&[1, 4, 9]).count_below(Rank(5)), 2);
        let big: RankSet = (0..40).map(|r| Rank(r * 2)).collect();
        assert!(big.contains(Rank(78)) && !big.contains(Rank(77)));
    }
}
