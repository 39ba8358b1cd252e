//! Decided agreements, readable by any thread while the progress owner keeps deciding.
//!
//! A ring of slots indexed by `seq % capacity`, each a seqlock made of atomics (so a
//! torn read is detected, never undefined): the single writer (the token holder) marks
//! the slot odd, stores the fields, then publishes the even tag; a reader takes the tag,
//! the fields, and the tag again, and trusts the fields only if both tags match.

use super::sync::{fence, AtomicU64, Ordering};
use crate::era::{Decision, Outcome};
use crate::types::Seq;

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// The decision: value, outcome, number of failed ranks it names.
    Decided {
        /// Agreed value.
        value: u64,
        /// Result code.
        outcome: Outcome,
        /// Size of the decided failed set (the set itself stays with the engine).
        failed: u32,
    },
    /// Not decided yet (or being written right now).
    Pending,
    /// Decided long ago; the slot now holds a later instance.
    Evicted,
}

#[derive(Debug)]
struct Slot {
    /// `(seq + 1) << 1` once published, that `| 1` while being written, 0 when empty.
    tag: AtomicU64,
    value: AtomicU64,
    /// Outcome in bit 32, failed count in the low 32 bits.
    info: AtomicU64,
}

/// Lock-free table of the latest `capacity` decisions of one communicator.
#[derive(Debug)]
pub struct DecidedTable {
    slots: Box<[Slot]>,
}

/// Reads that keep meeting a writer give up as `Pending` after this many tries.
const READ_TRIES: usize = 64;

impl DecidedTable {
    /// A table keeping the last `capacity` decisions (rounded up to a power of two).
    pub fn new(capacity: usize) -> Self {
        let cap = capacity.max(1).next_power_of_two();
        let slots = (0..cap)
            .map(|_| Slot {
                tag: AtomicU64::new(0),
                value: AtomicU64::new(0),
                info: AtomicU64::new(0),
            })
            .collect();
        DecidedTable { slots }
    }

    fn slot(&self, seq: Seq) -> &Slot {
        &self.slots[seq as usize & (self.slots.len() - 1)]
    }

    /// Publishes the decision of `seq`. Only the progress-token holder calls this (one
    /// writer at a time is what makes the seqlock sound).
    pub fn publish(&self, seq: Seq, d: &Decision) {
        let s = self.slot(seq);
        let tag = (seq as u64 + 1) << 1;
        // ORDERING: Relaxed store of the odd tag, then a Release fence: a reader whose
        // Acquire fence follows a load of any field written below also sees this odd tag
        // (or later), so its second tag load cannot match its first.
        s.tag.store(tag | 1, Ordering::Relaxed);
        fence(Ordering::Release);
        let info = ((d.outcome as u64) << 32) | d.failed.len() as u64;
        // ORDERING: Relaxed; published by the Release store of the tag below.
        s.value.store(d.value, Ordering::Relaxed);
        s.info.store(info, Ordering::Relaxed);
        // ORDERING: Release; pairs with the Acquire tag load in `lookup`, making the
        // fields above visible to a reader that sees this tag.
        s.tag.store(tag, Ordering::Release);
    }

    /// Looks up the decision of `seq`.
    pub fn lookup(&self, seq: Seq) -> Lookup {
        let s = self.slot(seq);
        let want = (seq as u64 + 1) << 1;
        for _ in 0..READ_TRIES {
            // ORDERING: Acquire; pairs with the final Release store in `publish`.
            let t1 = s.tag.load(Ordering::Acquire);
            if t1 & 1 == 1 {
                if t1 & !1 > want {
                    return Lookup::Evicted;
                }
                crate::shared::sync::spin_hint();
                continue;
            }
            if t1 != want {
                return if t1 > want {
                    Lookup::Evicted
                } else {
                    Lookup::Pending
                };
            }
            // ORDERING: Relaxed field loads, then an Acquire fence before re-reading the
            // tag: pairs with the Release fence in `publish` (see there).
            let value = s.value.load(Ordering::Relaxed);
            let info = s.info.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            if s.tag.load(Ordering::Relaxed) == t1 {
                let outcome = if info >> 32 == 1 {
                    Outcome::ProcFailed
                } else {
                    Outcome::Success
                };
                return Lookup::Decided {
                    value,
                    outcome,
                    failed: info as u32,
                };
            }
        }
        Lookup::Pending
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::types::{Rank, RankSet};

    fn d(value: u64, failed: &[u32]) -> Decision {
        Decision {
            value,
            outcome: if failed.is_empty() {
                Outcome::Success
            } else {
                Outcome::ProcFailed
            },
            gc_below: 0,
            failed: failed.iter().map(|&r| Rank(r)).collect::<RankSet>(),
        }
    }

    #[test]
    fn publish_lookup_and_evict() {
        let t = DecidedTable::new(3); // rounds up to 4
        assert_eq!(t.lookup(0), Lookup::Pending);
        t.publish(0, &d(7, &[]));
        t.publish(1, &d(9, &[2, 3]));
        assert_eq!(
            t.lookup(1),
            Lookup::Decided {
                value: 9,
                outcome: Outcome::ProcFailed,
                failed: 2
            }
        );
        assert_eq!(t.lookup(5), Lookup::Pending);
        t.publish(4, &d(1, &[]));
        assert_eq!(t.lookup(0), Lookup::Evicted);
        assert!(matches!(t.lookup(4), Lookup::Decided { value: 1, .. }));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::types::RankSet;
    use loom::sync::Arc;

    /// A reader racing the writer that reuses the slot never sees a torn decision: the
    /// value it gets for seq 0 is seq 0's, or it is told Pending/Evicted.
    #[test]
    fn reader_never_sees_a_torn_slot() {
        loom::model(|| {
            let t = Arc::new(DecidedTable::new(1));
            let dec = |v| Decision {
                value: v,
                outcome: Outcome::Success,
                gc_below: 0,
                failed: RankSet::new(),
            };
            let w = {
                let t = t.clone();
                loom::thread::spawn(move || {
                    t.publish(0, &dec(10));
                    t.publish(1, &dec(11));
                })
            };
            match t.lookup(0) {
                Lookup::Decided { value, .. } => assert_eq!(value, 10),
                Lookup::Pending | Lookup::Evicted => {}
            }
            match t.lookup(1) {
                Lookup::Decided { value, .. } => assert_eq!(value, 11),
                Lookup::Pending | Lookup::Evicted => {}
            }
            w.join().unwrap();
            assert!(matches!(t.lookup(1), Lookup::Decided { value: 11, .. }));
            assert_eq!(t.lookup(0), Lookup::Evicted);
        });
    }
}
