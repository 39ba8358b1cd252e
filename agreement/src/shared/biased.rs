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
//!   of the process executes a full memory barrier before it returns), then waits until
//!   `active` reads false, and marks the bias `REVOKED` for good.
//!
//! Either the owner's `active = true` is visible to the revoker after the heavy fence
//! (it was stored before the barrier it ran), so the revoker waits for the owner's
//! exit; or the owner's store came after that barrier, and then so does its read of
//! `owner`, which sees `REVOKING`. The owner's exit stores `active = false` with
//! Release and the revoker reads it with Acquire: the revoker sees the engine as the
//! owner left it. The loom model replaces the heavy fence and the owner's compiler fence
//! by two SeqCst fences, which is what the membarrier guarantees between them.
//!
//! A revocation costs one heavy fence (milliseconds: an RCU grace period) once in the
//! life of the token; a caller that cannot supply one starts it revoked.

#[cfg(loom)]
use super::sync::fence;
use super::sync::{AtomicBool, AtomicUsize, Ordering};
use super::token::{ProgressGuard, ProgressToken};

/// `owner`: no thread has taken the token yet; the first taker becomes the owner.
const UNCLAIMED: usize = 0;
/// `owner`: the bias is gone; everyone uses the plain token.
const REVOKED: usize = 1;
/// `owner`: a thread is revoking the bias.
const REVOKING: usize = 2;

/// A [`ProgressToken`] with a bias towards its first taker (see the module docs).
#[derive(Debug)]
pub struct BiasedToken {
    token: ProgressToken,
    /// [`UNCLAIMED`], [`REVOKED`], [`REVOKING`], or the owner's mark (a number unique
    /// to a live thread, above [`REVOKING`]).
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
    /// Another thread holds it (or is revoking the bias right now): try again.
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
    /// threads, above 2). A thread other than the owner revokes the bias first, running
    /// `heavy_fence` once (see the module docs); `heavy_fence` returns false when it
    /// could not run, and then the bias stays (the caller gets `Busy`).
    ///
    /// The exclusion holds only if no two live threads pass the same `me` (the
    /// runtime passes `steadfast_os::thread_id::current()`). A leaked guard
    /// (`mem::forget`) keeps the token held for good, as a leaked [`ProgressGuard`]
    /// does: the owner's later takes report `Reentrant`, and another thread's first
    /// take waits for that round forever (no memory is touched either way).
    #[inline]
    pub fn try_acquire(&self, me: usize, heavy_fence: impl FnOnce() -> bool) -> Attempt<'_> {
        debug_assert!(me > REVOKING, "thread mark {me} collides with a state");
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
            // revocation in flight is seen here or waits for this round.
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
            REVOKED => self.plain(),
            REVOKING => Attempt::Busy,
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
            other => {
                if self.revoke(other, heavy_fence) {
                    self.plain()
                } else {
                    Attempt::Busy
                }
            }
        }
    }

    /// Ends the bias of the owner `owner`: false when another thread is revoking it or
    /// the heavy fence failed (the bias is back then).
    fn revoke(&self, owner: usize, heavy_fence: impl FnOnce() -> bool) -> bool {
        // ORDERING: Relaxed; the heavy fence below orders this store before the
        // reads of `active` (here) and after the owner's `owner` reads (there).
        if self
            .owner
            .compare_exchange(owner, REVOKING, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            // Someone else revokes, or finished: its state decides next time.
            return false;
        }
        if !heavy_fence() {
            // ORDERING: Relaxed; the owner never saw `REVOKING` as a reason to stay
            // out for good: it used the plain token meanwhile, which excludes.
            self.owner.store(owner, Ordering::Relaxed);
            return false;
        }
        // ORDERING: Acquire; pairs with the owner's Release clear (guard drop), so
        // this thread sees the owner's last round. Rounds are short: spin.
        while self.active.load(Ordering::Acquire) {
            std::hint::spin_loop();
            #[cfg(loom)]
            loom::thread::yield_now();
        }
        // ORDERING: Release; later readers take the plain token, which orders them.
        self.owner.store(REVOKED, Ordering::Release);
        true
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
        loop {
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
    }

    /// The owner's biased rounds and another thread's revocation never overlap (loom
    /// flags two accesses to `engine` at once) and lose no update. Fails when the
    /// owner's fence (`light_fence`) or the revoker's (`loom_heavy_fence`) is removed,
    /// or the guard's Release clear of `active` is weakened to Relaxed: each checked.
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
