//! What a restarted process's `World::init` reads of the other ranks
//! (`docs/restart.md`, "Rejoining the world"). A rank dead at that moment may have no
//! published values at all: the launcher drops a rank's keys when it starts its next
//! incarnation, and when that incarnation dies before it joins (its restart failed,
//! or it was killed during it) nothing of that rank is left but its kept keys. Such a
//! rank is skipped wherever it can be (its parameters, its host), and its node, which
//! the shared-memory map needs, is read from the copy every rank keeps
//! ([`KEPT_NODE_KEY`]).

use crate::bootstrap::{Bootstrap, BootstrapError};

/// A copy of a rank's node identity that outlives its incarnation in `steadfast-run`'s
/// store (it is under [`SAVED_PREFIX`](crate::bootstrap::SAVED_PREFIX); communicator
/// names never begin with a dot, so no saved communicator takes it). A restarted
/// process reads it for a rank dead with no other values, to place that rank in the
/// node map as the survivors did.
pub(crate) const KEPT_NODE_KEY: &str = "sf.saved..node";

/// Puts this rank's node under [`KEPT_NODE_KEY`], kept across its restarts: a restarted
/// process places a rank dead with no other values by it. Launchers that cannot
/// restart may refuse the key (PMI-1 allows letters, digits, `-` and `_` only): nothing
/// needs it there.
///
/// # Errors
/// Connection failures.
pub(super) fn keep_node(boot: &mut dyn Bootstrap, node: &[u8]) -> Result<(), BootstrapError> {
    match boot.put(KEPT_NODE_KEY, node) {
        Err(BootstrapError::Refused(why)) => {
            log::debug!("the launcher does not keep the node for restarts: {why}");
            Ok(())
        }
        other => other,
    }
}

/// The value `rank` published under `key`: at first start (`restored` false), waited
/// for (`get`). In a restarted process: a rank in `dead` (dead here): what it left, if anything (never waits). A live one: waits for
/// it, as at first start; if it dies meanwhile (`RankDied`), it joins `dead` (its
/// incarnation 0 until the caller knows better) and what it left is returned.
///
/// # Errors
/// Connection failures, and launchers without `lookup` (only `steadfast-run` restarts).
pub(super) fn peer_value(
    boot: &mut dyn Bootstrap,
    restored: bool,
    dead: &mut Vec<(u32, u32)>,
    rank: u32,
    key: &str,
) -> Result<Option<Vec<u8>>, BootstrapError> {
    let is_dead = dead.iter().any(|&(d, _)| d == rank);
    if !restored && !is_dead {
        return boot.get(rank, key).map(Some);
    }
    if is_dead {
        // A spare slot never started (`spares`) has no values at all: nothing to ask.
        if !restored {
            return Ok(None);
        }
        return boot.lookup(rank, key);
    }
    match boot.get(rank, key) {
        Ok(v) => Ok(Some(v)),
        Err(BootstrapError::RankDied { how, .. }) => {
            log::debug!("rank {rank} died during this restarted process's init ({how})");
            dead.push((rank, 0));
            boot.lookup(rank, key)
        }
        Err(e) => Err(e),
    }
}

/// The node of `rank` in a restarted process: its published one, else (a rank dead
/// with its keys dropped) the kept copy.
///
/// # Errors
/// As [`peer_value`]; `Ok(None)` when neither is there.
pub(super) fn peer_node(
    boot: &mut dyn Bootstrap,
    dead: &mut Vec<(u32, u32)>,
    rank: u32,
) -> Result<Option<Vec<u8>>, BootstrapError> {
    match peer_value(boot, true, dead, rank, "node")? {
        Some(n) => Ok(Some(n)),
        None => boot.lookup(rank, KEPT_NODE_KEY),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::FailureEvent;
    use std::collections::HashMap;
    use std::time::Duration;

    /// A launcher's store as a restarted process sees it: values per (rank, key), and
    /// the ranks whose current incarnation is dead.
    #[derive(Default)]
    struct Store {
        values: HashMap<(u32, String), Vec<u8>>,
        dead: Vec<u32>,
        /// Refuses every put (as PMI-1 refuses a key with dots).
        refuse_puts: bool,
    }

    impl Bootstrap for Store {
        fn rank(&self) -> u32 {
            0
        }
        fn size(&self) -> u32 {
            4
        }
        fn put(&mut self, key: &str, value: &[u8]) -> Result<(), BootstrapError> {
            if self.refuse_puts {
                return Err(BootstrapError::Refused(format!("key {key:?} unusable")));
            }
            self.values.insert((0, key.into()), value.into());
            Ok(())
        }
        fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, BootstrapError> {
            match self.values.get(&(rank, key.into())) {
                Some(v) => Ok(v.clone()),
                None if self.dead.contains(&rank) => Err(BootstrapError::RankDied {
                    rank,
                    how: "exited with status 3".into(),
                }),
                None => Err(BootstrapError::Refused("would wait".into())),
            }
        }
        fn lookup(&mut self, rank: u32, key: &str) -> Result<Option<Vec<u8>>, BootstrapError> {
            Ok(self.values.get(&(rank, key.into())).cloned())
        }
        fn fence(&mut self) -> Result<(), BootstrapError> {
            Ok(())
        }
        fn failures(&mut self, _: Duration) -> Result<Vec<FailureEvent>, BootstrapError> {
            Ok(Vec::new())
        }
    }

    fn store() -> Store {
        let mut s = Store::default();
        for r in 1..4u32 {
            s.values.insert((r, "node".into()), b"n".to_vec());
            s.values.insert((r, KEPT_NODE_KEY.into()), b"n".to_vec());
            s.values.insert((r, "host".into()), b"h".to_vec());
        }
        // Rank 2's restart failed before it joined: only its kept keys are left.
        s.values.retain(|(r, k), _| *r != 2 || k == KEPT_NODE_KEY);
        s.dead.push(2);
        s
    }

    #[test]
    fn a_rank_dead_with_its_keys_dropped_is_skipped_but_keeps_its_node() {
        let mut s = store();
        let mut dead = vec![(2, 1)];
        assert_eq!(
            peer_value(&mut s, true, &mut dead, 2, "host").unwrap(),
            None
        );
        assert_eq!(
            peer_node(&mut s, &mut dead, 2).unwrap(),
            Some(b"n".to_vec())
        );
        assert_eq!(
            peer_value(&mut s, true, &mut dead, 1, "host").unwrap(),
            Some(b"h".to_vec())
        );
        assert_eq!(dead, vec![(2, 1)]);
        // At first start the dead are the universe's spare slots, which have no
        // values: nothing is asked.
        assert_eq!(
            peer_value(&mut s, false, &mut dead, 2, "host").unwrap(),
            None
        );
        // Any other read then waits for the value (here: refused).
        assert!(peer_value(&mut s, false, &mut Vec::new(), 2, "host").is_err());
    }

    #[test]
    fn a_rank_dying_during_the_reads_joins_the_dead_ones() {
        let mut s = store();
        let mut dead = Vec::new();
        assert_eq!(
            peer_value(&mut s, true, &mut dead, 2, "host").unwrap(),
            None
        );
        assert_eq!(dead, vec![(2, 0)]);
        // Known dead now: looked up, never asked for again.
        assert_eq!(
            peer_node(&mut s, &mut dead, 2).unwrap(),
            Some(b"n".to_vec())
        );
        assert_eq!(dead.len(), 1);
    }

    #[test]
    fn the_node_copy_is_kept_where_the_launcher_takes_it_and_skipped_where_refused() {
        let mut s = Store::default();
        keep_node(&mut s, b"n").unwrap();
        assert_eq!(s.lookup(0, KEPT_NODE_KEY).unwrap(), Some(b"n".to_vec()));
        let mut pmi = Store {
            refuse_puts: true,
            ..Store::default()
        };
        keep_node(&mut pmi, b"n").unwrap();
        assert_eq!(pmi.lookup(0, KEPT_NODE_KEY).unwrap(), None);
    }
}
