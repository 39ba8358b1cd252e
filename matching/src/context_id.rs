//! Context ids that two live communicators of one process never share.
//!
//! Each process keeps a mask of its free ids. To create a communicator, every member
//! proposes its free ids, the runtime ANDs the proposals over the members (one extra
//! round of an existing collective, or carried on the agreement), and every member takes
//! the lowest id free at all of them, so the id is the same everywhere and unused
//! everywhere. Freeing the communicator frees the id locally. (MPICH and Open MPI do the
//! same with their context-id masks.)
//!
//! Two refinements keep it correct and small:
//!
//! - **One creation holds the mask at a time.** A process taking part in two creations at
//!   once (two threads, two parent communicators) must not offer the same free id to
//!   both. Only one creation — the in-progress one with the lowest [`OpKey`], a key all
//!   members agree on — gets the real mask; the others propose nothing and are marked
//!   *incomplete*, and an incomplete AND means "retry", never "exhausted". Because every
//!   process prefers the lowest key, the lowest creation in the job always makes progress.
//! - **Windows.** A proposal covers one window of [`WINDOW_IDS`] ids (512 bytes), not the
//!   whole space: if the window has no common free id, everyone moves to the next window
//!   (they all see the same AND), and only when the last window is empty is the space
//!   exhausted.
//!
//! ```
//! use steadfast_matching::{ContextAllocator, Decision, Proposal};
//! // Three processes; process 0 already uses id 2 for a communicator of its own.
//! let mut procs: Vec<ContextAllocator> =
//!     (0..3).map(|_| ContextAllocator::new(16, 2).unwrap()).collect();
//! procs[0].claim(2.into()).unwrap();
//! let op = 7; // e.g. parent context id and creation number, the same at every member
//! let mut window = 0;
//! let id = loop {
//!     let mut all: Option<Proposal> = None;
//!     for p in procs.iter_mut() {
//!         let mine = p.propose(op, window);
//!         all = Some(match all { None => mine, Some(mut a) => { a.combine(&mine).unwrap(); a } });
//!     }
//!     let agreed = all.unwrap();
//!     let decisions: Vec<Decision> =
//!         procs.iter_mut().map(|p| p.finish(op, &agreed).unwrap()).collect();
//!     match decisions[0] {
//!         Decision::Allocated(id) => break id,
//!         Decision::Retry { window: w } => window = w,
//!     }
//! };
//! assert_eq!(id.0, 3, "the lowest id free at every member");
//! ```

use std::collections::BTreeSet;

use crate::types::ContextId;

/// Ids per proposal window (64 words of 64 bits).
pub const WINDOW_IDS: u32 = 4096;
const WINDOW_WORDS: usize = (WINDOW_IDS / 64) as usize;
/// The most id bits an allocator accepts (16 Mi ids; a full mask is then 2 MiB).
pub const MAX_ID_BITS: u32 = 24;

/// The key of one communicator creation, the same at every member and distinct between
/// creations that may overlap (for example `parent_context << 32 | creation_number`).
/// Lower keys win the mask first.
pub type OpKey = u64;

/// Errors of the context-id allocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// No id is free at every member: too many live communicators.
    #[error("no context id is free at every member ({capacity} ids, {live} live here)")]
    ContextsExhausted {
        /// Ids in the space.
        capacity: u32,
        /// Ids this process has in use.
        live: u32,
    },
    /// An id-space size outside `1..=MAX_ID_BITS` bits, or reserving all of it.
    #[error("context ids: {bits} bits with {reserved} reserved is not a usable space (bits 1..={max})", max = MAX_ID_BITS)]
    BadSpace {
        /// The requested bits.
        bits: u32,
        /// The requested reserved ids.
        reserved: u32,
    },
    /// The id is reserved, beyond the space, or not in the state the call needs (freeing
    /// a free id, claiming a used one).
    #[error("context id {id} cannot be {action} here")]
    BadId {
        /// The id.
        id: u32,
        /// "freed" or "claimed".
        action: &'static str,
    },
    /// Two proposals of different windows were combined (the members disagree on the
    /// round).
    #[error("proposals for windows {0} and {1} cannot be combined")]
    WindowMismatch(u32, u32),
    /// A proposal decoded from words of the wrong length.
    #[error("a context proposal has {0} words; expected {expected}", expected = WINDOW_WORDS + 2)]
    BadProposal(usize),
}

/// One member's offer for one window: the ids it has free there (bit set = free), and
/// whether it offered its real mask (`complete`) or nothing because another creation
/// holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    window: u32,
    complete: bool,
    mask: [u64; WINDOW_WORDS],
}

impl Proposal {
    /// ANDs `other` into `self` (the reduction the runtime applies over the members).
    ///
    /// # Errors
    /// [`ContextError::WindowMismatch`] if the two are for different windows.
    pub fn combine(&mut self, other: &Proposal) -> Result<(), ContextError> {
        if self.window != other.window {
            return Err(ContextError::WindowMismatch(self.window, other.window));
        }
        self.complete &= other.complete;
        for (a, b) in self.mask.iter_mut().zip(other.mask.iter()) {
            *a &= b;
        }
        Ok(())
    }

    /// The window this proposal covers.
    pub fn window(&self) -> u32 {
        self.window
    }

    /// Whether every member combined so far offered its real mask.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The lowest id free in this proposal.
    pub fn lowest(&self) -> Option<ContextId> {
        self.mask.iter().enumerate().find_map(|(w, &bits)| {
            (bits != 0).then(|| {
                ContextId(self.window * WINDOW_IDS + w as u32 * 64 + bits.trailing_zeros())
            })
        })
    }

    /// The wire form: `[window, complete, mask words...]`; a word-wise AND of two
    /// encodings of the same window is the encoding of their [`combine`](Self::combine).
    pub fn to_words(&self) -> Vec<u64> {
        let mut v = Vec::with_capacity(WINDOW_WORDS + 2);
        v.push(u64::from(self.window));
        v.push(u64::from(self.complete));
        v.extend_from_slice(&self.mask);
        v
    }

    /// Decodes [`to_words`](Self::to_words).
    ///
    /// # Errors
    /// [`ContextError::BadProposal`] for a wrong length.
    pub fn from_words(words: &[u64]) -> Result<Proposal, ContextError> {
        if words.len() != WINDOW_WORDS + 2 {
            return Err(ContextError::BadProposal(words.len()));
        }
        let mut mask = [0; WINDOW_WORDS];
        mask.copy_from_slice(&words[2..]);
        Ok(Proposal {
            window: words[0] as u32,
            complete: words[1] & 1 == 1,
            mask,
        })
    }
}

/// What a member does after the AND of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The communicator's context id (now in use here).
    Allocated(ContextId),
    /// Run another round on `window` (contention, or this window had no common id).
    Retry {
        /// The window of the next round.
        window: u32,
    },
}

/// A process's context ids: which are free, and which creation holds the mask.
#[derive(Debug, Clone)]
pub struct ContextAllocator {
    /// Bit set = free; one bit per id, ids `0..capacity`.
    free: Vec<u64>,
    capacity: u32,
    reserved: u32,
    live: u32,
    /// The creation whose proposal offered the real mask and has not finished, with the
    /// window it offered.
    holder: Option<OpKey>,
    holder_window: u32,
    /// Creations in progress here.
    active: BTreeSet<OpKey>,
}

impl ContextAllocator {
    /// Ids `0..2^bits`; ids below `reserved` are never handed out (the world's and
    /// other fixed contexts).
    ///
    /// # Errors
    /// [`ContextError::BadSpace`] unless `1 <= bits <= MAX_ID_BITS` and `reserved < 2^bits`.
    pub fn new(bits: u32, reserved: u32) -> Result<Self, ContextError> {
        if !(1..=MAX_ID_BITS).contains(&bits) || reserved >= 1 << bits {
            return Err(ContextError::BadSpace { bits, reserved });
        }
        let capacity = 1u32 << bits;
        let words = (capacity as usize).div_ceil(64).max(1);
        let mut a = ContextAllocator {
            free: vec![0; words],
            capacity,
            reserved,
            live: 0,
            holder: None,
            holder_window: 0,
            active: BTreeSet::new(),
        };
        for id in reserved..capacity {
            a.set_free(id, true);
        }
        Ok(a)
    }

    fn set_free(&mut self, id: u32, free: bool) {
        let (w, b) = ((id / 64) as usize, id % 64);
        if free {
            self.free[w] |= 1 << b;
        } else {
            self.free[w] &= !(1 << b);
        }
    }

    /// Ids in the space (including reserved ones).
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Ids in use here (not counting reserved ones).
    pub fn live(&self) -> u32 {
        self.live
    }

    /// Windows in the space.
    pub fn windows(&self) -> u32 {
        self.capacity.div_ceil(WINDOW_IDS)
    }

    /// Whether `id` is free here.
    pub fn is_free(&self, id: ContextId) -> bool {
        id.0 < self.capacity && self.free[(id.0 / 64) as usize] & (1 << (id.0 % 64)) != 0
    }

    /// This member's proposal for creation `op` in `window`: its free ids there if `op` is
    /// the lowest creation in progress here and no other creation holds the mask,
    /// otherwise an empty, incomplete proposal. Registers `op` as in progress.
    pub fn propose(&mut self, op: OpKey, window: u32) -> Proposal {
        self.active.insert(op);
        let ours = self.holder.is_none_or(|h| h == op) && self.active.first() == Some(&op);
        let mut p = Proposal {
            window,
            complete: ours,
            mask: [0; WINDOW_WORDS],
        };
        if ours && window < self.windows() {
            self.holder = Some(op);
            self.holder_window = window;
            let start = window as usize * WINDOW_WORDS;
            let end = (start + WINDOW_WORDS).min(self.free.len());
            p.mask[..end - start].copy_from_slice(&self.free[start..end]);
        }
        p
    }

    /// Applies the AND of all members' proposals for `op`: takes the lowest common id if
    /// there is one, otherwise says which window to try next. Every member, given the same
    /// `agreed`, decides the same.
    ///
    /// # Errors
    /// [`ContextError::ContextsExhausted`] when the last window had no common id and every
    /// member offered its real mask (then `op` is no longer in progress here).
    pub fn finish(&mut self, op: OpKey, agreed: &Proposal) -> Result<Decision, ContextError> {
        if self.holder == Some(op) {
            self.holder = None;
        }
        if let Some(id) = agreed.lowest().filter(|_| agreed.complete) {
            if id.0 >= self.reserved && self.is_free(id) {
                self.set_free(id.0, false);
                self.live += 1;
                self.active.remove(&op);
                return Ok(Decision::Allocated(id));
            }
            // Our own mask was in the AND, so the id is free here; reaching this means the
            // caller combined proposals of another round. Keep everyone consistent by
            // refusing loudly.
            log::warn!("context id {} agreed but not free here", id.0);
            return Err(ContextError::BadId {
                id: id.0,
                action: "claimed",
            });
        }
        if !agreed.complete {
            return Ok(Decision::Retry {
                window: agreed.window,
            });
        }
        if agreed.window + 1 < self.windows() {
            return Ok(Decision::Retry {
                window: agreed.window + 1,
            });
        }
        self.active.remove(&op);
        Err(ContextError::ContextsExhausted {
            capacity: self.capacity,
            live: self.live,
        })
    }

    /// Gives up creation `op` (a member failed mid-way, or the creation was revoked).
    pub fn abandon(&mut self, op: OpKey) {
        self.active.remove(&op);
        if self.holder == Some(op) {
            self.holder = None;
        }
    }

    /// Takes an id for a creation whose only member is this process, with no round and
    /// without waiting for the mask: the highest free id outside the window the mask's
    /// holder offered (an id there may be the one its members agree on). Rounds take
    /// ids from the bottom, so the two rarely meet.
    ///
    /// # Errors
    /// [`ContextError::ContextsExhausted`] when no such id is free.
    pub fn take_solo(&mut self) -> Result<ContextId, ContextError> {
        let offered = self.holder.map(|_| self.holder_window);
        let id = (self.reserved..self.capacity)
            .rev()
            .find(|&id| self.is_free(ContextId(id)) && Some(id / WINDOW_IDS) != offered)
            .ok_or(ContextError::ContextsExhausted {
                capacity: self.capacity,
                live: self.live,
            })?;
        self.set_free(id, false);
        self.live += 1;
        Ok(ContextId(id))
    }

    /// Marks `id` used without a round (a context fixed by the runtime, or replaying a
    /// decision).
    ///
    /// # Errors
    /// [`ContextError::BadId`] if `id` is reserved, outside the space or in use.
    pub fn claim(&mut self, id: ContextId) -> Result<(), ContextError> {
        if id.0 < self.reserved || !self.is_free(id) {
            return Err(ContextError::BadId {
                id: id.0,
                action: "claimed",
            });
        }
        self.set_free(id.0, false);
        self.live += 1;
        Ok(())
    }

    /// Frees `id` (its communicator was freed here).
    ///
    /// # Errors
    /// [`ContextError::BadId`] if `id` is reserved, outside the space or already free.
    pub fn release(&mut self, id: ContextId) -> Result<(), ContextError> {
        if id.0 < self.reserved || id.0 >= self.capacity || self.is_free(id) {
            return Err(ContextError::BadId {
                id: id.0,
                action: "freed",
            });
        }
        self.set_free(id.0, true);
        self.live -= 1;
        Ok(())
    }
}

impl From<u32> for ContextId {
    fn from(v: u32) -> Self {
        ContextId(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Runs one creation among `members` to its end, as the runtime would: rounds of
    /// propose / AND / finish until every member decides.
    fn create(
        procs: &mut [ContextAllocator],
        members: &[usize],
        op: OpKey,
    ) -> Result<ContextId, ContextError> {
        let mut window = 0;
        for _round in 0..1000 {
            let mut agreed: Option<Proposal> = None;
            for &m in members {
                let p = procs[m].propose(op, window);
                match &mut agreed {
                    None => agreed = Some(p),
                    Some(a) => a.combine(&p).unwrap(),
                }
            }
            let agreed = agreed.expect("at least one member");
            let decisions: Vec<Result<Decision, ContextError>> = members
                .iter()
                .map(|&m| procs[m].finish(op, &agreed))
                .collect();
            // Members' live counts differ; the decision itself must not.
            let same =
                |a: &Result<Decision, ContextError>, b: &Result<Decision, ContextError>| match (
                    a, b,
                ) {
                    (
                        Err(ContextError::ContextsExhausted { .. }),
                        Err(ContextError::ContextsExhausted { .. }),
                    ) => true,
                    _ => a == b,
                };
            assert!(
                decisions.windows(2).all(|w| same(&w[0], &w[1])),
                "members decided differently: {decisions:?}"
            );
            match decisions[0] {
                Ok(Decision::Allocated(id)) => return Ok(id),
                Ok(Decision::Retry { window: w }) => window = w,
                Err(e) => return Err(e),
            }
        }
        panic!("no decision after 1000 rounds");
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Create a communicator over the members in this bit set (of 5 processes).
        Create(u8),
        /// Free the n-th live communicator (modulo their number).
        Free(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (1u8..32).prop_map(Op::Create),
            2 => any::<usize>().prop_map(Op::Free),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Random creations and frees across 5 simulated processes in a space of 2^13 ids
        /// (two windows; 20 reserved): all members of a communicator get the same id, it
        /// is the lowest id free at all of them, no two live communicators of a process
        /// share an id, and exhaustion is reported exactly when no common id is free.
        #[test]
        #[cfg_attr(miri, ignore = "minutes interpreted; no unsafe code, run natively by scripts/test.sh")]
        fn live_communicators_never_share_an_id(ops in prop::collection::vec(op(), 1..300), bits in 5u32..14) {
            let reserved = 20;
            let mut procs: Vec<ContextAllocator> =
                (0..5).map(|_| ContextAllocator::new(bits, reserved).unwrap()).collect();
            let mut live: Vec<(Vec<usize>, ContextId)> = Vec::new();
            for (i, op) in ops.iter().enumerate() {
                match op {
                    Op::Create(set) => {
                        let members: Vec<usize> = (0..5).filter(|m| set & (1 << m) != 0).collect();
                        let common_free = (reserved..1 << bits)
                            .find(|&id| members.iter().all(|&m| !live.iter().any(|(ms, c)| c.0 == id && ms.contains(&m))));
                        match create(&mut procs, &members, i as u64) {
                            Ok(id) => {
                                prop_assert_eq!(Some(id.0), common_free, "the lowest common free id");
                                live.push((members, id));
                            }
                            Err(ContextError::ContextsExhausted { capacity, .. }) => {
                                prop_assert_eq!(capacity, 1 << bits);
                                prop_assert_eq!(common_free, None, "exhausted while an id was free everywhere");
                            }
                            Err(e) => prop_assert!(false, "unexpected error {e}"),
                        }
                    }
                    Op::Free(n) if !live.is_empty() => {
                        let (members, id) = live.remove(n % live.len());
                        for m in members {
                            procs[m].release(id).unwrap();
                        }
                    }
                    Op::Free(_) => {}
                }
                for (m, p) in procs.iter().enumerate() {
                    let mine: Vec<u32> = live.iter().filter(|(ms, _)| ms.contains(&m)).map(|(_, c)| c.0).collect();
                    let mut dedup = mine.clone();
                    dedup.sort_unstable();
                    dedup.dedup();
                    prop_assert_eq!(dedup.len(), mine.len(), "process {} has two live communicators on one id", m);
                    prop_assert_eq!(p.live() as usize, mine.len());
                    prop_assert!(mine.iter().all(|&id| !p.is_free(ContextId(id))));
                }
            }
        }
    }

    #[test]
    fn concurrent_creations_take_turns_instead_of_sharing_an_id() {
        let mut procs: Vec<ContextAllocator> = (0..3)
            .map(|_| ContextAllocator::new(16, 1).unwrap())
            .collect();
        // Creation 5 over {0, 1} and creation 9 over {1, 2} overlap at process 1, which
        // proposes for 9 first (its thread got there first) and then for 5.
        let b1 = procs[1].propose(9, 0);
        assert!(
            b1.is_complete(),
            "the only creation in progress holds the mask"
        );
        let a1 = procs[1].propose(5, 0);
        assert!(!a1.is_complete(), "the mask is held by creation 9");
        let mut a = procs[0].propose(5, 0);
        a.combine(&a1).unwrap();
        let mut b = procs[2].propose(9, 0);
        b.combine(&b1).unwrap();
        assert_eq!(procs[0].finish(5, &a), Ok(Decision::Retry { window: 0 }));
        assert_eq!(procs[1].finish(5, &a), Ok(Decision::Retry { window: 0 }));
        let got9 = procs[1].finish(9, &b).unwrap();
        assert_eq!(procs[2].finish(9, &b).unwrap(), got9);
        // Retry creation 5: now process 1 offers its mask, without creation 9's id.
        let mut a = procs[0].propose(5, 0);
        a.combine(&procs[1].propose(5, 0)).unwrap();
        let got5 = procs[0].finish(5, &a).unwrap();
        assert_eq!(procs[1].finish(5, &a).unwrap(), got5);
        let (Decision::Allocated(x), Decision::Allocated(y)) = (got5, got9) else {
            panic!("{got5:?} {got9:?}");
        };
        assert_ne!(x, y, "process 1 holds both");
    }

    #[test]
    fn lower_key_wins_the_mask() {
        let mut q = ContextAllocator::new(8, 0).unwrap();
        let _ = q.propose(3, 0);
        assert!(
            !q.propose(9, 0).is_complete(),
            "9 waits while 3 is in progress"
        );
        q.abandon(3);
        assert!(q.propose(9, 0).is_complete());
    }

    #[test]
    fn exhaustion_is_a_clear_error() {
        let mut p = ContextAllocator::new(1, 1).unwrap();
        let create = |p: &mut ContextAllocator, op| {
            let prop = p.propose(op, 0);
            p.finish(op, &prop)
        };
        assert_eq!(create(&mut p, 1), Ok(Decision::Allocated(ContextId(1))));
        let err = create(&mut p, 2).unwrap_err();
        assert_eq!(
            err,
            ContextError::ContextsExhausted {
                capacity: 2,
                live: 1
            }
        );
        assert_eq!(
            err.to_string(),
            "no context id is free at every member (2 ids, 1 live here)"
        );
        p.release(ContextId(1)).unwrap();
        assert_eq!(create(&mut p, 3), Ok(Decision::Allocated(ContextId(1))));
    }

    #[test]
    fn a_solo_creation_does_not_wait_for_the_mask_nor_take_an_offered_id() {
        // 2^13 ids = 2 windows. A creation holds the mask with window 1 (the top one) offered.
        let mut p = ContextAllocator::new(13, 2).unwrap();
        let held = p.propose(1, 1);
        assert!(held.is_complete() && held.lowest() == Some(ContextId(WINDOW_IDS)));
        let solo = p.take_solo().unwrap();
        assert!(
            solo.0 < WINDOW_IDS,
            "outside the offered window: {}",
            solo.0
        );
        assert_eq!(solo, ContextId(WINDOW_IDS - 1), "the highest such id");
        assert!(!p.is_free(solo));
        // The holder still gets the lowest common id of what it offered.
        let mut agreed = held.clone();
        agreed.combine(&held).unwrap();
        assert_eq!(
            p.finish(1, &agreed),
            Ok(Decision::Allocated(ContextId(WINDOW_IDS)))
        );
        // With no holder the very top id is taken.
        assert_eq!(p.take_solo(), Ok(ContextId(2 * WINDOW_IDS - 1)));
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert!(ContextAllocator::new(0, 0).is_err());
        assert!(ContextAllocator::new(MAX_ID_BITS + 1, 0).is_err());
        assert!(ContextAllocator::new(4, 16).is_err());
        let mut p = ContextAllocator::new(4, 2).unwrap();
        assert!(p.release(ContextId(1)).is_err(), "reserved");
        assert!(p.release(ContextId(5)).is_err(), "free");
        assert!(p.release(ContextId(99)).is_err(), "outside");
        assert!(p.claim(ContextId(1)).is_err());
        p.claim(ContextId(5)).unwrap();
        assert!(p.claim(ContextId(5)).is_err(), "in use");
        let w = p.propose(1, 0);
        assert_eq!(Proposal::from_words(&w.to_words()), Ok(w.clone()));
        assert!(Proposal::from_words(&[0; 3]).is_err());
        let mut other = w.clone();
        other.window = 1;
        assert_eq!(other.combine(&w), Err(ContextError::WindowMismatch(1, 0)));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "walks the whole id space; no unsafe code, run natively by scripts/test.sh"
    )]
    fn windows_cover_the_space_and_and_of_words_is_combine() {
        // 2^13 ids = 2 windows; fill the first window at one member only.
        let mut procs: Vec<ContextAllocator> = (0..2)
            .map(|_| ContextAllocator::new(13, 0).unwrap())
            .collect();
        for id in 0..WINDOW_IDS {
            procs[0].claim(ContextId(id)).unwrap();
        }
        let (a, b) = (procs[0].propose(1, 0), procs[1].propose(1, 0));
        let anded: Vec<u64> = a
            .to_words()
            .iter()
            .zip(b.to_words())
            .map(|(x, y)| x & y)
            .collect();
        let mut c = a.clone();
        c.combine(&b).unwrap();
        assert_eq!(Proposal::from_words(&anded).unwrap(), c);
        assert_eq!(procs[0].finish(1, &c), Ok(Decision::Retry { window: 1 }));
        assert_eq!(procs[1].finish(1, &c), Ok(Decision::Retry { window: 1 }));
        let mut d = procs[0].propose(1, 1);
        d.combine(&procs[1].propose(1, 1)).unwrap();
        assert_eq!(d.lowest(), Some(ContextId(WINDOW_IDS)));
    }
}
