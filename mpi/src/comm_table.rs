//! The table of communicator handles: `MPI_COMM_WORLD` in a field of its own, every
//! other communicator in a hash map.
//!
//! Nearly every call names a communicator, and most programs name `MPI_COMM_WORLD`:
//! its lookup is one compare instead of a hash-table probe (a few nanoseconds off every
//! `MPI_Send` and `MPI_Recv`, whose whole cost here is about 130 ns).

use crate::consts::{Handle, MPI_COMM_WORLD};
use crate::state::Map;

/// Communicator handles and their state (a `CommEntry` in the library); the same
/// operations as a map.
pub(crate) struct CommTable<V> {
    world: Option<V>,
    others: Map<V>,
}

impl<V> Default for CommTable<V> {
    fn default() -> Self {
        CommTable {
            world: None,
            others: Map::default(),
        }
    }
}

impl<V> CommTable<V> {
    /// Keeps `e` under `h`; the entry it replaces, if any.
    pub fn insert(&mut self, h: Handle, e: V) -> Option<V> {
        if h == MPI_COMM_WORLD {
            self.world.replace(e)
        } else {
            self.others.insert(h, e)
        }
    }

    /// The entry of `h`.
    #[inline]
    pub fn get(&self, h: &Handle) -> Option<&V> {
        if *h == MPI_COMM_WORLD {
            self.world.as_ref()
        } else {
            self.others.get(h)
        }
    }

    /// The entry of `h`, to change it.
    #[inline]
    pub fn get_mut(&mut self, h: &Handle) -> Option<&mut V> {
        if *h == MPI_COMM_WORLD {
            self.world.as_mut()
        } else {
            self.others.get_mut(h)
        }
    }

    /// Takes the entry of `h` out.
    pub fn remove(&mut self, h: &Handle) -> Option<V> {
        if *h == MPI_COMM_WORLD {
            self.world.take()
        } else {
            self.others.remove(h)
        }
    }

    /// Whether `h` names a communicator.
    pub fn contains_key(&self, h: &Handle) -> bool {
        self.get(h).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consts::MPI_COMM_SELF;

    #[test]
    fn world_and_others_are_kept_apart_and_removed() {
        let mut t: CommTable<u32> = CommTable::default();
        assert!(!t.contains_key(&MPI_COMM_WORLD));
        assert!(t.insert(MPI_COMM_WORLD, 4).is_none());
        assert!(t.insert(MPI_COMM_SELF, 1).is_none());
        assert!(t.insert(0x200, 2).is_none());
        assert_eq!(t.get(&MPI_COMM_WORLD).copied(), Some(4));
        assert_eq!(t.get(&MPI_COMM_SELF).copied(), Some(1));
        *t.get_mut(&0x200).expect("kept") = 3;
        assert_eq!(t.get(&0x200).copied(), Some(3));
        assert!(t.get(&0x201).is_none());
        assert_eq!(t.remove(&MPI_COMM_WORLD), Some(4));
        assert!(!t.contains_key(&MPI_COMM_WORLD));
        assert!(t.contains_key(&0x200));
        assert!(t.remove(&0x200).is_some());
        assert!(t.remove(&0x200).is_none());
    }
}
