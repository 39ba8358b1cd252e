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
    /// The creation whose proposal offered the real mask and has not finished.
    holder: Option<OpKey>,
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
