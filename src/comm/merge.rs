//! `MPI_Intercomm_merge`: the intra-communicator over both groups of an
//! [`InterComm`].
//!
//! MPI 4.1 (section 7.6.2) orders the merged group by the `high` flags: the group that
//! passed `false` first; when both passed the same value, the order is the
//! implementation's choice, the same everywhere: here the union's order (the group
//! holding the smaller world rank first). Within a group, the local order is kept.
//!
//! The merged communicator is a split of the union underneath the inter-communicator
//! (one colour, key = (`high`, second in the union)): the split's exchange carries each
//! member's flag to every other, ties keep the union's order, and it agrees a fresh
//! context among the members (`context.rs`), so the merged communicator's messages
//! never meet the inter-communicator's.

use super::{Comm, CommError, InterComm};

/// The split key of a member: `high` first, then its group's place in the union.
fn merge_key(high: bool, low_side: bool) -> u32 {
    (u32::from(high) << 1) | u32::from(!low_side)
}

impl InterComm {
    /// The intra-communicator over both groups (`MPI_Intercomm_merge`): collective over
    /// both; every member of a group passes the same `high`. The group that passes
    /// `false` comes first; with equal flags, the group holding the smaller world rank.
    ///
    /// # Errors
    /// As [`Comm::split`] over both groups: [`CommError::ProcFailed`] (an
    /// unacknowledged failure), [`CommError::Revoked`], [`CommError::Excluded`],
    /// [`CommError::ContextsExhausted`].
    pub fn merge(&self, high: bool) -> Result<Comm, CommError> {
        self.union().split(0, merge_key(high, self.is_low_side()))
    }
}

#[cfg(test)]
mod tests {
    use super::merge_key;

    /// The merged order: sort members by (key, union rank), the union holding the low
    /// side first, as `Comm::split` does.
    fn order(low_high: bool, high_high: bool, low: &[u32], high: &[u32]) -> Vec<u32> {
        let mut m: Vec<(u32, usize, u32)> = low
            .iter()
            .map(|&w| (merge_key(low_high, true), w))
            .chain(high.iter().map(|&w| (merge_key(high_high, false), w)))
            .enumerate()
            .map(|(union_rank, (k, w))| (k, union_rank, w))
            .collect();
        m.sort_unstable();
        m.into_iter().map(|(_, _, w)| w).collect()
    }

    #[test]
    fn the_group_that_passes_false_comes_first() {
        let (low, high) = ([0, 2, 4], [1, 3]);
        assert_eq!(order(true, false, &low, &high), [1, 3, 0, 2, 4]);
        assert_eq!(order(false, true, &low, &high), [0, 2, 4, 1, 3]);
    }

    #[test]
    fn equal_flags_keep_the_union_order_on_both_sides() {
        let (low, high) = ([0, 5], [1, 2, 3]);
        assert_eq!(order(false, false, &low, &high), [0, 5, 1, 2, 3]);
        assert_eq!(order(true, true, &low, &high), [0, 5, 1, 2, 3]);
    }
}
