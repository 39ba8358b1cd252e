//! A progress token biased towards one thread: the thread that takes it first takes and
//! releases it afterwards with plain loads and stores, no read-modify-write, until
//! another thread asks for it; from then on everybody uses the [`ProgressToken`].
//!
//! Why: a program with one thread calling the library (an MPI rank under
//! `MPI_THREAD_SINGLE`, most benchmarks) takes the token around every send, receive and
//! poll. An uncontended compare-and-swap costs about 5 ns here, two per one-way message:
//! a tenth of an 8-byte shared-memory latency.
//!
//! How (asymmetric Dekker, as biased locks and user-space RCU do it):
//! - the owner enters by storing `active = true`, a compiler-only fence, then reading
//!   `owner`: still itself, it holds the token; otherwise it clears `active` and takes
//!   the plain token;
//! - another thread revokes: `owner = REVOKING`, then a *heavy fence*
//!   (`membarrier(MEMBARRIER_CMD_GLOBAL)`, supplied by the caller: every running thread
//!   of the process executes a full memory barrier before it returns), then
//!   `owner = FENCED`;
//! - from `FENCED` on, any thread that wants the token *finishes* the revocation when
//!   `active` reads false (`owner = REVOKED`, for good) and then takes the plain token;
//!   while `active` reads true the owner's last biased round is still running and the
//!   answer is "busy" (try again). Nobody waits for that round: a thread whose first
//!   take meets an owner descheduled in the middle of a round gets "busy" at once, as
//!   it would from a plain token held by that owner.
//!
//! Either the owner's `active = true` is visible after the heavy fence (it was stored
//! before the barrier it ran), so the revocation is finished only after the owner's
//! exit; or the owner's store came after that barrier, and then so does its read of
//! `owner`, which sees `REVOKING` or a later state. The owner's exit stores
//! `active = false` with Release and the finisher reads it with Acquire: it sees the
//! engine as the owner left it. A finisher other than the revoker learns of the heavy
//! fence through its Acquire read of `FENCED` and runs a SeqCst fence before reading
//! `active`, so the owner's store is visible to it as it is to the revoker. The loom
//! model replaces the heavy fence and the owner's compiler fence by two SeqCst fences,
//! which is what the membarrier guarantees between them.
//!
//! A revocation costs one heavy fence (milliseconds: an RCU grace period) once in the
//! life of the token, run by the first thread other than the owner that asks; a
//! caller that cannot supply one starts the token revoked.

use super::sync::{fence, AtomicBool, AtomicUsize, Ordering};
use super::token::{ProgressGuard, ProgressToken};

/// `owner`: no thread has taken the token yet; the first taker becomes the owner.
const UNCLAIMED: usize = 0;
/// `owner`: the bias is gone; everyone uses the plain token.
const REVOKED: usize = 1;
/// `owner`: a thread is revoking the bias (its heavy fence is running).
const REVOKING: usize = 2;
/// `owner`: the heavy fence has run; the revocation is finished by the first thread
/// that finds the owner out of its biased round.
const FENCED: usize = 3;

/// A [`ProgressToken`] with a bias towards its first taker (see the module docs).
#[derive(Debug)]
pub struct BiasedToken {
    token: ProgressToken,
    /// [`UNCLAIMED`], [`REVOKED`], [`REVOKING`], [`FENCED`], or the owner's mark (a
    /// number unique to a live thread, above [`FENCED`]).
    owner: AtomicUsize,
    /// The owner is inside a round it entered through the bias.
    active: AtomicBool,
}

/// Proof of holding a [`BiasedToken`]; releases it when dropped.
#[derive(Debug)]
pub enum BiasedGuard<'a> {
    /// Taken through the bias: dropping clears the owner's `active` flag.
    Biased(&'a AtomicBool),
    /// Taken as the plain token.
    Plain(ProgressGuard<'a>),
}

impl Drop for BiasedGuard<'_> {
    fn drop(&mut self) {
        if let BiasedGuard::Biased(active) = self {
            // ORDERING: Release; pairs with the revoker's Acquire load in `revoke`, so
            // the thread that takes the token next sees what the owner did.
            active.store(false, Ordering::Release);
        }
        // A plain guard releases the token in its own drop.
    }
}

/// What [`BiasedToken::try_acquire`] found.
#[derive(Debug)]
pub enum Attempt<'a> {
    /// The token is the caller's.
    Held(BiasedGuard<'a>),
    /// Another thread holds it (or the bias's revocation is waiting for the owner's
    /// round to end): try again.
    Busy,
    /// The caller, the owner, is already inside a round through the bias: a
    /// re-entrant call.
    Reentrant,
}

impl BiasedToken {
    /// A free token. `biased`: whether the first taker gets the bias (false when the
    /// caller has no heavy fence to revoke it with).
    pub fn new(biased: bool) -> Self {
        BiasedToken {
            token: ProgressToken::new(),
            owner: AtomicUsize::new(if biased { UNCLAIMED } else { REVOKED }),
            active: AtomicBool::new(false),
        }
    }

    /// Tries to take the token for the thread whose mark is `me` (unique among live
    /// threads, above 3). A thread other than the owner revokes the bias first, running
    /// `heavy_fence` once (see the module docs); `heavy_fence` returns false when it
    /// could not run, and then the bias stays (the caller gets `Busy`). Never waits for
    /// another thread: while the owner is inside a biased round, `Busy`.
    ///
    /// The exclusion holds only if no two live threads pass the same `me` (the
    /// runtime passes `steadfast_os::thread_id::current()`). A leaked guard
    /// (`mem::forget`) keeps the token held for good, as a leaked [`ProgressGuard`]
    /// does: the owner's later takes report `Reentrant` (`Busy` once another thread
    /// has asked), and every other thread's takes report `Busy` (no memory is touched
    /// either way).
    #[inline]
    pub fn try_acquire(&self, me: usize, heavy_fence: impl FnOnce() -> bool) -> Attempt<'_> {
        debug_assert!(me > FENCED, "thread mark {me} collides with a state");
        // ORDERING: Relaxed; only the owner itself ever stores its own mark, and a
        // stale other value sends this thread to the slow path, which reads again.
        let owner = self.owner.load(Ordering::Relaxed);
        if owner == me {
            // ORDERING: Acquire; only the owner stores `true`, so reading it here means
            // this thread is inside a biased round already. Acquire (a plain load on
            // x86) pairs with the guard's Release clear: a thread whose mark was
            // recycled from an exited owner sees that owner's last round.
            if self.active.load(Ordering::Acquire) {
                return Attempt::Reentrant;
            }
            // ORDERING: Relaxed, then the fence: the store must be visible to a
            // revoker whose heavy fence runs after it (the membarrier orders it), and
            // the read of `owner` below must not move before it (the compiler fence;
            // the processor's store-load reordering is what the heavy fence undoes).
            self.active.store(true, Ordering::Relaxed);
            light_fence();
            // ORDERING: Relaxed; see the module docs: after the store and fence, a
            // revocation in flight is seen here, or is finished only after this round.
            if self.owner.load(Ordering::Relaxed) == me {
                return Attempt::Held(BiasedGuard::Biased(&self.active));
            }
            // Being revoked: from now on, the plain token.
            // ORDERING: Release, as in the guard's drop (nothing was done meanwhile).
            self.active.store(false, Ordering::Release);
            return self.plain();
        }
        self.acquire_slow(owner, me, heavy_fence)
    }

    #[cold]
    fn acquire_slow(
        &self,
        owner: usize,
        me: usize,
        heavy_fence: impl FnOnce() -> bool,
    ) -> Attempt<'_> {
        match owner {
            REVOKED => {
                // ORDERING: Acquire fence after the Relaxed read of `REVOKED`: pairs
                // with the finisher's Release store of it, so this thread sees the
                // bias owner's last round even when it takes the plain token before
                // the finisher does (a no-op instruction on x86).
                fence(Ordering::Acquire);
                self.plain()
            }
            REVOKING => Attempt::Busy,
            FENCED => self.finish_revocation(),
            UNCLAIMED => {
                // ORDERING: Acquire on success, so the new owner's first round sees
                // the token's state as built; Relaxed on failure (re-read below).
                match self.owner.compare_exchange(
                    UNCLAIMED,
                    me,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => self.try_acquire(me, heavy_fence),
                    Err(now) => self.acquire_slow(now, me, heavy_fence),
                }
            }
            other => self.revoke(other, heavy_fence),
        }
    }

    /// Starts ending the bias of the owner `owner` and finishes it if the owner is out
    /// of its round: `Busy` when another thread is revoking it, the heavy fence failed
    /// (the bias is back then), the owner is inside a round or the plain token is
    /// held.
    fn revoke(&self, owner: usize, heavy_fence: impl FnOnce() -> bool) -> Attempt<'_> {
        // ORDERING: Relaxed; the heavy fence below orders this store before the
        // reads of `active` (here) and after the owner's `owner` reads (there).
        if self
            .owner
            .compare_exchange(owner, REVOKING, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            // Someone else revokes, or finished: its state decides next time.
            return Attempt::Busy;
        }
        if !heavy_fence() {
            // ORDERING: Relaxed; the owner never saw `REVOKING` as a reason to stay
            // out for good: it used the plain token meanwhile, which excludes.
            self.owner.store(owner, Ordering::Relaxed);
            return Attempt::Busy;
        }
        // ORDERING: Release; pairs with the Acquire read of `FENCED` by a thread that
        // finishes the revocation: the heavy fence happened before its reads.
        self.owner.store(FENCED, Ordering::Release);
        self.finish_revocation()
    }

    /// With the heavy fence run: `REVOKED` and the plain token if the owner is out of
    /// its biased round, else `Busy` (the owner's exit lets a later try finish).
    #[cold]
    fn finish_revocation(&self) -> Attempt<'_> {
        // ORDERING: Acquire (the caller read `FENCED` Relaxed, or stored it): this
        // thread comes after the heavy fence. Then SeqCst: with the owner's light
        // fence (a membarrier for real, a SeqCst fence in the loom model) and the
        // revoker's heavy fence ordered before this one, an owner round that missed
        // `REVOKING` has its `active = true` visible to the read below.
        fence(Ordering::Acquire);
        fence(Ordering::SeqCst);
        // ORDERING: Acquire; pairs with the owner's Release clear (guard drop), so
        // this thread sees the owner's last round.
        if self.active.load(Ordering::Acquire) {
            return Attempt::Busy;
        }
        // ORDERING: Release; pairs with the Acquire fence of a thread that reads
        // `REVOKED` (`acquire_slow`), which then sees the owner's last round too.
        // Relaxed on failure: another finisher got there first, same outcome.
        let _ = self
            .owner
            .compare_exchange(FENCED, REVOKED, Ordering::Release, Ordering::Relaxed);
        self.plain()
    }

    fn plain(&self) -> Attempt<'_> {
        match self.token.try_acquire() {
            Some(g) => Attempt::Held(BiasedGuard::Plain(g)),
            None => Attempt::Busy,
        }
    }

    /// Whether someone may hold the token (a hint: it may change at once). The owner's
    /// biased rounds count.
    pub fn is_held(&self) -> bool {
        // ORDERING: Relaxed; only a hint, nothing is read through it.
        self.token.is_held() || self.active.load(Ordering::Relaxed)
    }

    /// Whether the bias is gone (a hint).
    pub fn is_revoked(&self) -> bool {
        // ORDERING: Relaxed; a hint for tests and statistics.
        self.owner.load(Ordering::Relaxed) == REVOKED
    }
}

/// The owner's side of the asymmetric fence: the compiler may not move the read of
/// `owner` before the store of `active`; the heavy fence of a revoker orders them in
/// the processor. Under loom, which has no membarrier, a SeqCst fence stands for it.
#[inline(always)]
fn light_fence() {
    // ORDERING: SeqCst under loom: with the revoker's SeqCst fence it is the
    // store-load barrier pair that the membarrier provides for real.
    #[cfg(loom)]
    fence(Ordering::SeqCst);
    // ORDERING: a compiler fence only: it keeps the compiler from moving the read of
    // `owner` above the store of `active`; the processor's reordering of the two is
    // undone by the revoker's membarrier (module docs).
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// A heavy fence for loom models: a SeqCst fence on the revoker's side.
#[cfg(loom)]
pub fn loom_heavy_fence() -> bool {
    // ORDERING: SeqCst, paired with `light_fence`'s under loom (see there).
    fence(Ordering::SeqCst);
    true
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    struct Shared {
        token: BiasedToken,
        engine: UnsafeCell<u32>,
    }
    // SAFETY: `engine` is only touched by the token's holder, which the token makes
    // unique.
    unsafe impl Sync for Shared {}

    /// One round as thread `me`: takes the token (trying again while busy) and adds
    /// one to the engine.
    fn round(s: &Shared, me: usize) -> u32 {
        tries(s, me, u32::MAX)
    }

    /// The owner's biased rounds and another thread's revocation never overlap (loom
    /// flags two accesses to `engine` at once) and lose no update. Fails when the
    /// owner's fence (`light_fence`) is removed, the guard's Release clear of `active`
    /// is weakened to Relaxed, or the Acquire fence after reading `REVOKED` is removed:
    /// each checked. In the model the revoker's heavy fence and the finisher's SeqCst
    /// fence stand for each other (both are SeqCst fences here): removing one alone
    /// passes; the real heavy fence is what orders an owner that runs no fence.
    #[test]
    fn the_owner_and_a_revoker_never_overlap() {
        loom::model(|| {
            let s = Arc::new(Shared {
                token: BiasedToken::new(true),
                engine: UnsafeCell::new(0),
            });
            // Thread mark 8 claims the bias, then goes on in another loom thread.
            let first = round(&s, 8);
            let s2 = s.clone();
            let owner = loom::thread::spawn(move || round(&s2, 8) + round(&s2, 8));
            let other = round(&s, 16);
            let total = first + owner.join().unwrap() + other;
            // SAFETY: every other thread has finished.
            assert_eq!(s.engine.with(|e| unsafe { *e }), total);
            assert!(s.token.is_revoked());
        });
    }

    /// Up to `tries` tries as thread `me`, yielding between them: 1 if one got the
    /// token (and added one to the engine), else 0.
    fn tries(s: &Shared, me: usize, tries: u32) -> u32 {
        for _ in 0..tries {
            match s.token.try_acquire(me, loom_heavy_fence) {
                Attempt::Held(_g) => {
                    // SAFETY: the guard makes this thread the only holder.
                    s.engine.with_mut(|e| unsafe { *e += 1 });
                    return 1;
                }
                Attempt::Busy => loom::thread::yield_now(),
                Attempt::Reentrant => panic!("not re-entrant here"),
            }
        }
        0
    }

    /// The owner and two other threads each try a bounded number of times at once:
    /// either of the others may start the revocation and leave it running or
    /// `FENCED` for the other to finish, finish it, or read `REVOKED` and take the
    /// plain token before the finisher does; in every case no two rounds overlap
    /// (loom flags two accesses to `engine` at once) and no update is lost. (Bounded
    /// tries, not loops until success: threads spinning on each other's yields exceed
    /// loom's branch bound.)
    #[test]
    fn a_third_thread_may_start_or_finish_the_revocation() {
        // Three threads at once: without a bound on preemptions the model had not
        // finished after 20 minutes; bugs of this kind need few (loom's docs: 2-3).
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let s = Arc::new(Shared {
                token: BiasedToken::new(true),
                engine: UnsafeCell::new(0),
            });
            let first = round(&s, 8);
            let (s2, s3) = (s.clone(), s.clone());
            let owner = loom::thread::spawn(move || tries(&s2, 8, 2));
            let third = loom::thread::spawn(move || tries(&s3, 24, 2));
            let other = tries(&s, 16, 2);
            let total = first + owner.join().unwrap() + third.join().unwrap() + other;
            // SAFETY: every other thread has finished.
            assert_eq!(s.engine.with(|e| unsafe { *e }), total);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn never() -> bool {
        panic!("no revocation expected")
    }

    #[test]
    fn the_first_taker_owns_the_bias_until_another_thread_asks() {
        let t = BiasedToken::new(true);
        match t.try_acquire(8, never) {
            Attempt::Held(BiasedGuard::Biased(_)) => {}
            other => panic!("{other:?}"),
        }
        let g = t.try_acquire(8, never);
        assert!(matches!(g, Attempt::Held(BiasedGuard::Biased(_))));
        assert!(matches!(t.try_acquire(8, never), Attempt::Reentrant));
        assert!(t.is_held());
        drop(g);
        assert!(!t.is_held());
        let mut fences = 0;
        let g = t.try_acquire(16, || {
            fences += 1;
            true
        });
        assert!(matches!(g, Attempt::Held(BiasedGuard::Plain(_))));
        assert_eq!(fences, 1);
        assert!(t.is_revoked());
        // The owner now takes the plain token, and finds it held.
        assert!(matches!(t.try_acquire(8, never), Attempt::Busy));
        drop(g);
        assert!(matches!(
            t.try_acquire(8, never),
            Attempt::Held(BiasedGuard::Plain(_))
        ));
    }

    /// A second thread's first take while the owner is inside a biased round (as an
    /// owner descheduled mid-round would be) answers `Busy` at once instead of waiting
    /// for that round; the heavy fence runs once, and the first take after the owner's
    /// exit, by anyone, finishes the revocation.
    #[test]
    fn a_revocation_never_waits_for_the_owners_round() {
        let t = BiasedToken::new(true);
        let owners_round = t.try_acquire(8, never);
        assert!(matches!(
            owners_round,
            Attempt::Held(BiasedGuard::Biased(_))
        ));
        let mut fences = 0;
        let mut fence = || {
            fences += 1;
            true
        };
        assert!(matches!(t.try_acquire(16, &mut fence), Attempt::Busy));
        assert!(matches!(t.try_acquire(16, &mut fence), Attempt::Busy));
        assert!(matches!(t.try_acquire(24, never), Attempt::Busy));
        assert!(!t.is_revoked());
        assert!(t.is_held());
        drop(owners_round);
        // A third thread finishes what the second started; no second heavy fence.
        let g = t.try_acquire(24, never);
        assert!(matches!(g, Attempt::Held(BiasedGuard::Plain(_))));
        assert!(t.is_revoked());
        assert!(matches!(t.try_acquire(16, &mut fence), Attempt::Busy));
        assert!(matches!(t.try_acquire(8, never), Attempt::Busy));
        drop(g);
        assert!(matches!(
            t.try_acquire(8, never),
            Attempt::Held(BiasedGuard::Plain(_))
        ));
        assert_eq!(fences, 1);
    }

    #[test]
    fn a_failed_heavy_fence_keeps_the_bias_and_an_unbiased_token_never_fences() {
        let t = BiasedToken::new(true);
        drop(t.try_acquire(8, never));
        assert!(matches!(t.try_acquire(16, || false), Attempt::Busy));
        assert!(!t.is_revoked());
        assert!(matches!(
            t.try_acquire(8, never),
            Attempt::Held(BiasedGuard::Biased(_))
        ));
        let t = BiasedToken::new(false);
        assert!(matches!(
            t.try_acquire(8, never),
            Attempt::Held(BiasedGuard::Plain(_))
        ));
    }
}
