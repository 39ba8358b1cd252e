//! What the progress token's holder publishes for threads that do not hold it: the
//! failures known here, in the order they were learnt ([`FailureBoard`]), and each
//! communicator's revocation and acknowledged prefix of that order ([`CommFlags`]).
//!
//! One writer at a time (the token holder: the token's Acquire/Release orders the
//! successive writers), any number of readers that never wait and never write. A
//! reader sees what the holders had published at some instant between its call and
//! its return: a count of failures it reads implies every failure up to that count
//! (a count is stored with Release after the failures it counts, and read with
//! Acquire before them).

use super::sync::{AtomicBool, AtomicUsize, Ordering};

/// The failures of world ranks known here, in the order they were learnt.
///
/// Each learnt failure gets the next position (1, 2, ...); a rank's current failure
/// keeps its position until the rank is readmitted (a restart in place replaced it:
/// it is no longer failed), and a later failure of the same rank gets a new
/// position. So "failed within the first `n`" is a prefix of the failure order, which
/// is what `MPIX_Comm_ack_failed` acknowledges.
#[derive(Debug)]
pub struct FailureBoard {
    /// Failures learnt so far (the last position given).
    known: AtomicUsize,
    /// Per world rank: the position of its current failure, 0 when it is not failed.
    at: Box<[AtomicUsize]>,
}

impl FailureBoard {
    /// A board for `size` world ranks, none failed.
    pub fn new(size: usize) -> Self {
        FailureBoard {
            known: AtomicUsize::new(0),
            at: (0..size).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// Publishes the failure of world rank `w` (out of range: ignored) as the next in
    /// the order; returns its position. Called by the token holder only (one writer).
    pub fn learnt(&self, w: u32) -> usize {
        let Some(slot) = self.at.get(w as usize) else {
            return 0;
        };
        // ORDERING: Relaxed; only writers store `known`, and they are ordered by the
        // token (each holder's Acquire sees the previous holder's stores).
        let n = self.known.load(Ordering::Relaxed) + 1;
        // ORDERING: Relaxed; published by the Release store of the count below: a
        // reader whose Acquire load sees that count sees this position (or a later
        // store of this rank's slot: a readmission or a newer failure).
        slot.store(n, Ordering::Relaxed);
        // ORDERING: Release; publishes the position above to the readers' Acquire
        // loads of the count (`known`).
        self.known.store(n, Ordering::Release);
        n
    }

    /// Publishes that world rank `w` is no longer failed (a new incarnation was
    /// admitted). Called by the token holder only.
    pub fn readmitted(&self, w: u32) {
        if let Some(slot) = self.at.get(w as usize) {
            // ORDERING: Release; a reader that sees 0 sees the readmission's state
            // published before it (nothing is read through it today; Release keeps
            // the slot's stores uniformly publishing).
            slot.store(0, Ordering::Release);
        }
    }

    /// How many failures were learnt so far (positions `1..=known` are given).
    pub fn known(&self) -> usize {
        // ORDERING: Acquire; pairs with `learnt`'s Release: every position up to the
        // count read is visible to this thread's later reads of the slots.
        self.known.load(Ordering::Acquire)
    }

    /// Whether world rank `w` is failed by a failure among the first `n` learnt (`n`
    /// read from [`known`](Self::known) or an acknowledged prefix, both published
    /// after the positions they count). A rank readmitted since, or failed again
    /// later (a new position above `n`), is not.
    pub fn failed_within(&self, w: u32, n: usize) -> bool {
        self.at.get(w as usize).is_some_and(|slot| {
            // ORDERING: Acquire; see `known`: the caller's `n` came from an Acquire
            // load of a count stored after this slot's position.
            let at = slot.load(Ordering::Acquire);
            at != 0 && at <= n
        })
    }

    /// The position of world rank `w`'s current failure when it is among the first `n`
    /// learnt (as [`failed_within`](Self::failed_within), for any reader): what orders
    /// a communicator's failures as they were learnt.
    pub fn failed_at(&self, w: u32, n: usize) -> Option<usize> {
        let slot = self.at.get(w as usize)?;
        // ORDERING: Acquire, as `failed_within`: the caller's `n` came from an Acquire
        // load of a count stored after this slot's position.
        let at = slot.load(Ordering::Acquire);
        (at != 0 && at <= n).then_some(at)
    }

    /// The position of world rank `w`'s current failure in the order, 0 when it is not
    /// failed (or out of range). For the token holder, which wrote it.
    pub fn position(&self, w: u32) -> usize {
        // ORDERING: Relaxed; read by the writer (or a later token holder, ordered by
        // the token), which sees its own stores.
        self.at
            .get(w as usize)
            .map_or(0, |s| s.load(Ordering::Relaxed))
    }
}

/// One communicator's published state: whether it is revoked, and the prefix of the
/// [`FailureBoard`]'s order its owner acknowledged.
#[derive(Debug, Default)]
pub struct CommFlags {
    revoked: AtomicBool,
    acked: AtomicUsize,
}

impl CommFlags {
    /// Not revoked, nothing acknowledged.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the communicator is revoked (or a revoke of it is queued).
    pub fn revoked(&self) -> bool {
        // ORDERING: Acquire; pairs with `set_revoked`'s Release: a thread that sees
        // the flag sees what the engine did before raising it.
        self.revoked.load(Ordering::Acquire)
    }

    /// Publishes the communicator's revocation state.
    pub fn set_revoked(&self, revoked: bool) {
        // ORDERING: Release; see `revoked`.
        self.revoked.store(revoked, Ordering::Release);
    }

    /// The acknowledged prefix: the failures among the first this many of the
    /// board's order are acknowledged on the communicator.
    pub fn acked(&self) -> usize {
        // ORDERING: Acquire; pairs with `set_acked`'s Release, which follows the
        // board's positions up to the prefix (they were learnt first).
        self.acked.load(Ordering::Acquire)
    }

    /// Publishes the acknowledged prefix. Called by the token holder only.
    pub fn set_acked(&self, n: usize) {
        // ORDERING: Release; see `acked`.
        self.acked.store(n, Ordering::Release);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// The engine's state that the holder changed before publishing (the matcher told
    /// of the failure, the acknowledgement recorded): a reader that acts on a count
    /// must see it.
    struct Shared {
        board: FailureBoard,
        flags: CommFlags,
        engine: UnsafeCell<u32>,
    }
    // SAFETY: `engine` is written by the one writer before it publishes, and read by
    // the reader only after it saw the publication (what the test checks).
    unsafe impl Sync for Shared {}

    /// A count seen implies the failures it counts, and what the holder did before
    /// publishing it: loom reports a causality violation on `engine` when `learnt`'s
    /// count store, `known`'s load, `set_acked`'s store or `acked`'s load is made
    /// Relaxed.
    #[test]
    fn a_published_count_implies_its_failures() {
        loom::model(|| {
            let s = Arc::new(Shared {
                board: FailureBoard::new(4),
                flags: CommFlags::new(),
                engine: UnsafeCell::new(0),
            });
            let w = Arc::clone(&s);
            let writer = loom::thread::spawn(move || {
                // SAFETY: the only writer; readers read after the publication.
                w.engine.with_mut(|e| unsafe { *e = 1 });
                w.board.learnt(1);
                w.flags.set_acked(1);
                w.board.readmitted(1);
            });
            let r = Arc::clone(&s);
            let reader = loom::thread::spawn(move || {
                let n = r.board.known();
                if n >= 1 {
                    // SAFETY: published before the count this thread saw.
                    assert_eq!(r.engine.with(|e| unsafe { *e }), 1);
                }
                let acked = r.flags.acked();
                if acked >= 1 {
                    // SAFETY: as above, before the prefix.
                    assert_eq!(r.engine.with(|e| unsafe { *e }), 1);
                }
                (n, acked)
            });
            let (n, acked) = reader.join().unwrap();
            assert!(acked <= 1 && n <= 1);
            writer.join().unwrap();
            assert_eq!(s.board.known(), 1);
            assert!(!s.board.failed_within(1, 1), "readmitted");
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn positions_follow_the_order_and_readmission_clears() {
        let b = FailureBoard::new(4);
        assert_eq!(b.known(), 0);
        assert_eq!(b.learnt(2), 1);
        assert_eq!(b.learnt(0), 2);
        assert_eq!(b.learnt(9), 0, "out of range: ignored");
        assert_eq!(b.known(), 2);
        assert!(b.failed_within(2, 1));
        assert!(!b.failed_within(0, 1), "learnt second");
        assert_eq!(b.failed_at(2, 2), Some(1));
        assert_eq!(b.failed_at(0, 2), Some(2));
        assert_eq!(b.failed_at(0, 1), None, "beyond the prefix");
        assert_eq!(b.failed_at(1, 2), None, "not failed");
        assert_eq!((0..4).filter(|&w| b.failed_within(w, 2)).count(), 2);
        b.readmitted(2);
        assert!(!b.failed_within(2, 2));
        assert_eq!(b.learnt(2), 3, "failed again: a new position");
        assert!(!b.failed_within(2, 2) && b.failed_within(2, 3));
    }

    #[test]
    fn flags_start_clear() {
        let f = CommFlags::new();
        assert!(!f.revoked());
        assert_eq!(f.acked(), 0);
        f.set_revoked(true);
        f.set_acked(3);
        assert!(f.revoked());
        assert_eq!(f.acked(), 3);
    }
}
