//! A request's completion cell: the progress owner stores the result once, any thread
//! tests it, exactly one thread takes it. No thread ever waits inside it.
//!
//! States (one atomic byte): `PENDING` -> `WRITING` (a completer won) -> `READY` (result
//! published) -> `TAKEN` (a taker won), or `PENDING` -> `WITHDRAWN` (the requester gave
//! up before any completer started: [`Completion::withdraw`]). A completer may claim the
//! cell before it computes the result ([`Completion::claim`]), so that a withdrawal
//! and the work the result stands for exclude each other. A separate flag carries
//! ULFM's "failure pending" notice for a wildcard receive that stays posted.
//!
//! ```
//! use steadfast_matching::Completion;
//! let c: Completion<Result<usize, &str>> = Completion::new();
//! assert!(!c.is_ready());
//! c.complete(Ok(8)).unwrap();
//! assert!(c.complete(Ok(9)).is_err(), "completes once");
//! assert_eq!(c.try_take(), Some(Ok(8)));
//! assert_eq!(c.try_take(), None, "taken once");
//! ```

use std::mem::MaybeUninit;

use crate::sync::{AtomicBool, AtomicU8, Ordering, UnsafeCell};

const PENDING: u8 = 0;
const WRITING: u8 = 1;
const READY: u8 = 2;
const TAKEN: u8 = 3;
const WITHDRAWN: u8 = 4;

/// A one-shot result slot shared by a request's owner and the progress owner (see the
/// module docs).
pub struct Completion<T> {
    state: AtomicU8,
    failure_pending: AtomicBool,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is written by the one thread that wins PENDING -> WRITING and read by
// the one that wins READY -> TAKEN, ordered by the Release/Acquire pair on `state`; so a
// `T: Send` moves between threads and is never shared.
unsafe impl<T: Send> Sync for Completion<T> {}
// SAFETY: as above; the cell owns its `T`.
unsafe impl<T: Send> Send for Completion<T> {}

impl<T> std::fmt::Debug for Completion<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion")
            .field("ready", &self.is_ready())
            .field("failure_pending", &self.failure_pending())
            .finish()
    }
}

impl<T> Default for Completion<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Completion<T> {
    /// A pending cell.
    pub fn new() -> Self {
        Completion {
            state: AtomicU8::new(PENDING),
            failure_pending: AtomicBool::new(false),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Stores the result and makes it visible to every tester.
    ///
    /// # Errors
    /// The value comes back if the cell was already completed (or claimed, or
    /// withdrawn).
    pub fn complete(&self, value: T) -> Result<(), T> {
        match self.claim() {
            Some(claim) => {
                claim.complete(value);
                Ok(())
            }
            None => Err(value),
        }
    }

    /// Claims the right to complete the cell, before computing the result: `None` when
    /// it is completed, claimed or withdrawn already. A claim dropped without
    /// [`Claim::complete`] leaves the cell pending for ever (never ready, never
    /// withdrawable): complete every claim.
    ///
    /// ```
    /// use steadfast_matching::Completion;
    /// let c: Completion<u8> = Completion::new();
    /// let claim = c.claim().expect("pending");
    /// assert!(!c.withdraw(), "claimed: the work goes on");
    /// claim.complete(3);
    /// assert_eq!(c.try_take(), Some(3));
    /// ```
    pub fn claim(&self) -> Option<Claim<'_, T>> {
        // ORDERING: Relaxed on both sides; winning only grants the exclusive right to
        // write the slot, nothing is read through it (publication is the Release in
        // `Claim::complete`). Exactly one of a claim and a withdrawal wins the one
        // PENDING value: the modification order of `state` decides.
        self.state
            .compare_exchange(PENDING, WRITING, Ordering::Relaxed, Ordering::Relaxed)
            .ok()?;
        Some(Claim { cell: self })
    }

    /// Gives the cell up before any completer claimed it: true if that happened (no
    /// completer will ever claim or complete it, so the work its result stands for is
    /// never done); false if a completer got there first (it completes, or completed).
    ///
    /// ```
    /// use steadfast_matching::Completion;
    /// let c: Completion<u8> = Completion::new();
    /// assert!(c.withdraw());
    /// assert!(c.claim().is_none(), "no completer after a withdrawal");
    /// assert_eq!(c.complete(1), Err(1));
    /// assert!(!c.is_ready());
    /// ```
    pub fn withdraw(&self) -> bool {
        // ORDERING: Relaxed; see `claim`: the one PENDING value goes to one of the two,
        // and the loser does nothing it would need to order.
        self.state
            .compare_exchange(PENDING, WITHDRAWN, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    fn write(&self, value: T) {
        // SAFETY: only the thread that moved the state PENDING -> WRITING gets here, once,
        // and no reader touches the slot before READY.
        self.value.with_mut(|p| unsafe { (*p).write(value) });
    }

    /// Whether the result is there (taken or not yet taken).
    pub fn is_ready(&self) -> bool {
        // ORDERING: Acquire; pairs with the Release in `Claim::complete`, so a caller that sees
        // true and then reads memory the completer wrote before (a receive buffer) sees it.
        matches!(self.state.load(Ordering::Acquire), READY | TAKEN)
    }

    /// Takes the result if it is there and nobody took it.
    pub fn try_take(&self) -> Option<T> {
        // ORDERING: Acquire on success; pairs with the Release in `Claim::complete`, making the
        // value visible. Relaxed on failure: nothing is read.
        self.state
            .compare_exchange(READY, TAKEN, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        Some(self.read())
    }

    fn read(&self) -> T {
        // SAFETY: only the thread that moved the state READY -> TAKEN gets here, once; the
        // value was written before READY was published.
        self.value.with(|p| unsafe { (*p).assume_init_read() })
    }

    /// Sets or clears ULFM's failure-pending notice (the receive stays posted).
    pub fn set_failure_pending(&self, pending: bool) {
        // ORDERING: Relaxed; a status hint, no other memory is read through it. The
        // result itself is published only through `state`.
        self.failure_pending.store(pending, Ordering::Relaxed);
    }

    /// Whether the request should report `ProcFailedPending` now (it is not complete and
    /// a failure is pending).
    pub fn failure_pending(&self) -> bool {
        // ORDERING: Relaxed; see `set_failure_pending`.
        self.failure_pending.load(Ordering::Relaxed) && !self.is_ready()
    }
}

/// The right to complete a [`Completion`], from [`Completion::claim`].
#[must_use = "a claim left uncompleted keeps the cell pending for ever"]
#[derive(Debug)]
pub struct Claim<'a, T> {
    cell: &'a Completion<T>,
}

impl<T> Claim<'_, T> {
    /// Stores the result and makes it visible to every tester.
    pub fn complete(self, value: T) {
        self.cell.write(value);
        // ORDERING: Release; pairs with the Acquire in `try_take` and `is_ready`, which
        // then see the value written above.
        self.cell.state.store(READY, Ordering::Release);
    }
}

impl<T> Drop for Completion<T> {
    fn drop(&mut self) {
        // ORDERING: Relaxed; `&mut self`: no other thread holds the cell.
        if self.state.load(Ordering::Relaxed) == READY {
            // The result was never taken; the cell owns it.
            drop(self.read());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn failure_pending_shows_only_while_incomplete() {
        let c: Completion<u8> = Completion::new();
        c.set_failure_pending(true);
        assert!(c.failure_pending());
        c.complete(1).unwrap();
        assert!(
            !c.failure_pending(),
            "complete requests report their result"
        );
        assert!(c.is_ready());
    }

    #[test]
    fn a_withdrawn_cell_is_never_completed_and_a_claimed_one_never_withdrawn() {
        let c: Completion<u8> = Completion::new();
        assert!(c.withdraw());
        assert!(!c.withdraw(), "withdrawn once");
        assert!(c.claim().is_none());
        assert_eq!(c.complete(1), Err(1));
        assert!(!c.is_ready());
        assert_eq!(c.try_take(), None);
        let c: Completion<u8> = Completion::new();
        let claim = c.claim().unwrap();
        assert!(c.claim().is_none(), "claimed once");
        assert!(!c.withdraw());
        assert!(!c.is_ready(), "not ready before the claim completes");
        claim.complete(2);
        assert!(!c.withdraw());
        assert_eq!(c.try_take(), Some(2));
    }

    #[test]
    fn an_untaken_result_is_dropped_with_the_cell() {
        let token = std::sync::Arc::new(());
        let c = Completion::new();
        c.complete(token.clone()).unwrap();
        assert_eq!(std::sync::Arc::strong_count(&token), 2);
        drop(c);
        assert_eq!(std::sync::Arc::strong_count(&token), 1);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// One completer and two testers race: exactly one tester takes the value, it is the
    /// value written, and nothing leaks or is dropped twice (the payload is an `Arc`
    /// whose count is checked). Fails under loom if `complete`'s Release or
    /// `try_take`'s Acquire is weakened.
    #[test]
    fn exactly_one_taker_sees_the_written_value() {
        loom::model(|| {
            let payload = Arc::new(7u32);
            let c: Arc<Completion<Arc<u32>>> = Arc::new(Completion::new());
            let takers: Vec<_> = (0..2)
                .map(|_| {
                    let c = c.clone();
                    loom::thread::spawn(move || c.try_take().map(|v| *v))
                })
                .collect();
            c.complete(payload.clone()).unwrap();
            let taken: Vec<u32> = takers
                .into_iter()
                .filter_map(|h| h.join().unwrap())
                .collect();
            assert!(taken.len() <= 1);
            assert!(taken.iter().all(|v| *v == 7));
            let rest = c.try_take();
            assert_eq!(
                taken.len() + usize::from(rest.is_some()),
                1,
                "taken exactly once"
            );
            drop(rest);
            drop(c);
            assert_eq!(Arc::strong_count(&payload), 1, "no leak, no double drop");
        });
    }

    /// A requester withdraws while a completer claims, does its work and completes:
    /// exactly one of the two wins, and the work is done only when the completer won
    /// (then the value is there to take); after a withdrawal nothing is ever ready.
    #[test]
    fn a_withdrawal_and_a_claim_exclude_each_other() {
        loom::model(|| {
            let c: Arc<Completion<u8>> = Arc::new(Completion::new());
            let work = Arc::new(loom::sync::atomic::AtomicBool::new(false));
            let (c2, work2) = (c.clone(), work.clone());
            let completer = loom::thread::spawn(move || match c2.claim() {
                Some(claim) => {
                    // ORDERING: Relaxed; read after the join, which orders it.
                    work2.store(true, Ordering::Relaxed);
                    claim.complete(5);
                    true
                }
                None => false,
            });
            let withdrawn = c.withdraw();
            let completed = completer.join().unwrap();
            assert!(withdrawn ^ completed);
            // ORDERING: Relaxed; the join orders the completer's store before this.
            assert_eq!(work.load(Ordering::Relaxed), completed);
            assert_eq!(c.try_take(), completed.then_some(5));
        });
    }

    /// Two completers race: one wins, the other gets its value back.
    #[test]
    fn completes_once() {
        loom::model(|| {
            let c: Arc<Completion<u8>> = Arc::new(Completion::new());
            let c2 = c.clone();
            let other = loom::thread::spawn(move || c2.complete(2).is_ok());
            let mine = c.complete(1).is_ok();
            let theirs = other.join().unwrap();
            assert!(mine ^ theirs);
            let v = c.try_take().unwrap();
            assert_eq!(v, if mine { 1 } else { 2 });
        });
    }
}
