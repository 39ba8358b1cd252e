//! The storage under both queues: a slab of nodes reused through a free list, intrusive
//! doubly linked lists threaded through it by index, and a small fast hash for the
//! per-source tag tables.
//!
//! A node can sit on several lists at once (an unexpected message is on four); each list
//! uses its own link slot `k` in the node. Every operation here is O(1) and allocates only
//! when the slab grows past its high-water mark.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// "No node": the end of a list.
pub(crate) const NIL: u32 = u32::MAX;

/// One node's neighbours on one list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Link {
    pub(crate) prev: u32,
    pub(crate) next: u32,
}

impl Link {
    pub(crate) const UNLINKED: Link = Link {
        prev: NIL,
        next: NIL,
    };
}

/// A node with `N` link slots.
pub(crate) trait Linked {
    fn link(&self, k: usize) -> &Link;
    fn link_mut(&mut self, k: usize) -> &mut Link;
}

/// Nodes by index; freed slots are reused before the vector grows.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    entries: Vec<Option<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Slab<T> {
    pub(crate) fn new() -> Self {
        Slab {
            entries: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }

    /// Live nodes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Stores `value`, returning its slot.
    pub(crate) fn insert(&mut self, value: T) -> u32 {
        self.len += 1;
        if let Some(slot) = self.free.pop() {
            self.entries[slot as usize] = Some(value);
            slot
        } else {
            // Slots are u32 and NIL is reserved: the limits (at most u32::MAX - 1 nodes,
            // see `Limits::validate`) keep the index below it.
            let slot = self.entries.len() as u32;
            self.entries.push(Some(value));
            slot
        }
    }

    /// Takes the node out of `slot`. The caller has unlinked it from every list.
    pub(crate) fn remove(&mut self, slot: u32) -> T {
        let v = self.entries[slot as usize]
            .take()
            .expect("slab slot removed twice (engine invariant)");
        self.len -= 1;
        self.free.push(slot);
        v
    }

    pub(crate) fn get(&self, slot: u32) -> Option<&T> {
        self.entries.get(slot as usize).and_then(Option::as_ref)
    }

    fn node(&self, slot: u32) -> &T {
        self.entries[slot as usize]
            .as_ref()
            .expect("list names a free slab slot (engine invariant)")
    }

    fn node_mut(&mut self, slot: u32) -> &mut T {
        self.entries[slot as usize]
            .as_mut()
            .expect("list names a free slab slot (engine invariant)")
    }

    /// Frees every node (keeping the memory for reuse), yielding them in slot order.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.free.clear();
        self.len = 0;
        let free = &mut self.free;
        self.entries
            .iter_mut()
            .enumerate()
            .filter_map(move |(i, e)| {
                free.push(i as u32);
                e.take()
            })
    }
}

impl<T: Linked> Slab<T> {
    pub(crate) fn at(&self, slot: u32) -> &T {
        self.node(slot)
    }
}

/// A FIFO list of slab nodes, linked through slot `k` of each node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct List {
    pub(crate) head: u32,
    tail: u32,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
        }
    }
}

impl List {
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// The oldest node, if any.
    pub(crate) fn first(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// Appends `slot` (not on this list yet) at the tail.
    pub(crate) fn push_back<T: Linked>(&mut self, slab: &mut Slab<T>, slot: u32, k: usize) {
        *slab.node_mut(slot).link_mut(k) = Link {
            prev: self.tail,
            next: NIL,
        };
        if self.tail == NIL {
            self.head = slot;
        } else {
            slab.node_mut(self.tail).link_mut(k).next = slot;
        }
        self.tail = slot;
    }

    /// Takes `slot` (which is on this list) out of it.
    pub(crate) fn unlink<T: Linked>(&mut self, slab: &mut Slab<T>, slot: u32, k: usize) {
        let Link { prev, next } = *slab.node(slot).link(k);
        if prev == NIL {
            self.head = next;
        } else {
            slab.node_mut(prev).link_mut(k).next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            slab.node_mut(next).link_mut(k).prev = prev;
        }
        *slab.node_mut(slot).link_mut(k) = Link::UNLINKED;
    }

    /// The slots on this list, oldest first (for the rare paths: failures, probes of
    /// the whole queue in tests).
    pub(crate) fn slots<'a, T: Linked>(
        &self,
        slab: &'a Slab<T>,
        k: usize,
    ) -> impl Iterator<Item = u32> + 'a {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let s = cur;
                cur = slab.node(s).link(k).next;
                s
            })
        })
    }
}

/// FxHash (rustc's hasher): a multiply and a rotate per word. The keys are tags from the
/// job's own processes, which are trusted, so flooding resistance is not needed.
#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.hash = (self.hash.rotate_left(5) ^ i).wrapping_mul(SEED);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A hash map keyed by tags (`u32`) or by `(source, tag)` pairs ([`pair_key`]).
pub(crate) type KeyMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A hash map keyed by tags.
pub(crate) type TagMap<V> = KeyMap<u32, V>;

/// A hash map keyed by `(source, tag)` pairs.
pub(crate) type PairMap<V> = KeyMap<u64, V>;

/// The key of a `(source, tag)` pair: one word, one hash round.
#[inline]
pub(crate) fn pair_key(source: u32, tag: u32) -> u64 {
    (u64::from(source) << 32) | u64::from(tag)
}

/// Unlinks `slot` from the list under `key` in `map`, dropping the entry when the list
/// empties (the map keeps its capacity, so re-adding the key does not allocate).
pub(crate) fn unlink_keyed<K: std::hash::Hash + Eq, T: Linked>(
    map: &mut KeyMap<K, List>,
    key: K,
    slab: &mut Slab<T>,
    slot: u32,
    k: usize,
) {
    if let Some(list) = map.get_mut(&key) {
        list.unlink(slab, slot, k);
        if list.is_empty() {
            map.remove(&key);
        }
    } else {
        debug_assert!(false, "node not on the list of its key");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct N {
        v: u32,
        links: [Link; 2],
    }
    impl Linked for N {
        fn link(&self, k: usize) -> &Link {
            &self.links[k]
        }
        fn link_mut(&mut self, k: usize) -> &mut Link {
            &mut self.links[k]
        }
    }

    fn node(v: u32) -> N {
        N {
            v,
            links: [Link::UNLINKED; 2],
        }
    }

    #[test]
    fn lists_keep_order_and_unlink_anywhere() {
        let mut slab = Slab::new();
        let (mut a, mut b) = (List::default(), List::default());
        let s: Vec<u32> = (0..5).map(|v| slab.insert(node(v))).collect();
        for &x in &s {
            a.push_back(&mut slab, x, 0);
        }
        for &x in s.iter().rev() {
            b.push_back(&mut slab, x, 1);
        }
        a.unlink(&mut slab, s[2], 0);
        a.unlink(&mut slab, s[0], 0);
        a.unlink(&mut slab, s[4], 0);
        let va: Vec<u32> = a.slots(&slab, 0).map(|x| slab.at(x).v).collect();
        assert_eq!(va, vec![1, 3]);
        let vb: Vec<u32> = b.slots(&slab, 1).map(|x| slab.at(x).v).collect();
        assert_eq!(
            vb,
            vec![4, 3, 2, 1, 0],
            "list 1 untouched by list 0's unlinks"
        );
        b.unlink(&mut slab, s[4], 1);
        b.unlink(&mut slab, s[0], 1);
        assert_eq!(b.first().map(|x| slab.at(x).v), Some(3));
    }

    #[test]
    fn slab_reuses_slots() {
        let mut slab: Slab<N> = Slab::new();
        let a = slab.insert(node(1));
        let _b = slab.insert(node(2));
        assert_eq!(slab.remove(a).v, 1);
        assert_eq!(slab.insert(node(3)), a);
        assert_eq!(slab.len(), 2);
        assert_eq!(slab.drain().count(), 2);
        assert_eq!(slab.len(), 0);
        assert!(slab.get(a).is_none());
    }
}
