//! The engine shared by every thread of the process that calls the library, and by the
//! optional progress thread.
//!
//! Whoever holds the progress token (`steadfast_agreement::shared::ProgressToken`, a
//! try-only flag, loom-checked) owns the engine. An operation takes it for one *round*
//! at a time: a non-blocking call or a test for the call, a blocking wait for each of
//! its polls (take, one attempt and maybe one progress round, release, then pause), so
//! no thread ever holds it across a wait and a thread that finds it taken waits at most
//! for one round of another (`docs/threads.md`). The progress thread only ever *tries*,
//! every half heartbeat period. With one application thread and no progress thread
//! nobody else ever takes the token, and its bias towards that thread
//! (`steadfast_agreement::shared::biased`) makes a round's take and release plain
//! loads and stores; a second thread revokes the bias once (a global membarrier).
//!
//! [`ProgressThread`] is that thread; stopping it wakes it from its sleep.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use steadfast_agreement::shared::biased::{Attempt, BiasedGuard, BiasedToken};

use steadfast_agreement::shared::FailureBoard;

use super::engine::{CommFacts, Engine};
use super::posts::Posts;

/// The engine and the token that guards it.
pub(crate) struct Shared {
    /// Biased towards the first thread that takes it (`docs/threads.md`): a process
    /// whose one thread calls the library takes it without a compare-and-swap.
    token: BiasedToken,
    /// The holder's [`thread_mark`] while the token is held, 0 otherwise: only read by
    /// a thread that finds the token taken, to tell a re-entrant call (a bug of this
    /// crate: it would wait for itself forever) from another thread's round.
    owner: AtomicUsize,
    /// Threads in [`Shared::lock`]'s slow path: a poller that releases the token gives
    /// way to them ([`Shared::make_way`]) instead of taking it back at once.
    waiting: AtomicUsize,
    /// Operations queued in `posts` and not yet applied: counted before the push,
    /// uncounted after the take that applied them. The same protocol as
    /// `PostQueue::maybe_pending` (loom-modelled there: a thread always sees its own
    /// operations counted, so its next take applies them), kept here beside the token
    /// so the uncontended take reads it from the line its compare-and-swap just
    /// brought in, not through the queue's allocation.
    queued: AtomicUsize,
    /// Operations posted while the token was taken (`posts.rs`): applied by the next
    /// take, before anything else.
    posts: Arc<Posts>,
    /// The engine's idle policy (fixed at start), readable without the token.
    yield_when_idle: bool,
    /// The failures known here, published by the token holders
    /// (`engine/published.rs`), readable without the token.
    board: Arc<FailureBoard>,
    /// The world communicator's facts (registered before the engine is shared).
    world: Arc<CommFacts>,
    engine: UnsafeCell<Engine>,
}

/// A number unique to the calling thread among the live threads, never 0, 1 or 2 (the
/// bias's states): one load on x86-64 Linux (`steadfast_os::thread_id`).
#[inline(always)]
fn thread_mark() -> usize {
    steadfast_os::thread_id::current()
}

// SAFETY: the engine is only ever reached through `lock`/`try_lock`, which hand out
// one guard at a time (the token's Acquire/Release pair orders every access), so the
// engine and the non-atomic reference counts inside its transport objects are never
// touched by two threads at once. Those `Rc`s never leave the engine.
unsafe impl Send for Shared {}
// SAFETY: as above: shared references only give access through the token.
unsafe impl Sync for Shared {}

/// Exclusive access to the engine while held.
pub(crate) struct EngineGuard<'a> {
    token: BiasedGuard<'a>,
    owner: &'a AtomicUsize,
    engine: &'a mut Engine,
    /// Not Send: released by the thread that took it.
    _local: PhantomData<*const ()>,
}

impl Drop for EngineGuard<'_> {
    fn drop(&mut self) {
        if let BiasedGuard::Plain(_) = self.token {
            // ORDERING: Relaxed; cleared before the token's Release (the field drops
            // after this), so a thread never reads its own mark after it released the
            // token (per-location coherence: its later reads see this store or a newer
            // one). A biased round never set it: the bias tells re-entry itself.
            self.owner.store(0, Ordering::Relaxed);
        }
    }
}

impl Deref for EngineGuard<'_> {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        self.engine
    }
}

impl DerefMut for EngineGuard<'_> {
    fn deref_mut(&mut self) -> &mut Engine {
        self.engine
    }
}

impl Shared {
    pub fn new(engine: Engine) -> Self {
        Shared {
            token: BiasedToken::new(steadfast_os::membarrier::global_available()),
            owner: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            posts: Arc::new(Posts::new()),
            yield_when_idle: engine.yield_when_idle(),
            board: engine.board(),
            world: engine.facts(super::WORLD_COMM),
            engine: UnsafeCell::new(engine),
        }
    }

    /// Whether waits yield the core at once (the engine's idle policy).
    pub fn yield_when_idle(&self) -> bool {
        self.yield_when_idle
    }

    /// The failures known here (`engine/published.rs`), without the token.
    pub fn board(&self) -> &FailureBoard {
        &self.board
    }

    /// The world communicator's facts, without the token.
    pub fn world_facts(&self) -> &Arc<CommFacts> {
        &self.world
    }

    /// Queues `op` for the next holder of the token, without waiting (`posts.rs`).
    ///
    /// # Errors
    /// `op` comes back when the calling thread's lane is full or no lane is free: the
    /// caller then waits for the token ([`lock`](Self::lock)), which applies the
    /// queued operations first, so the order holds.
    pub fn post(&self, op: crate::comm::Post) -> Result<(), crate::comm::Post> {
        // Counted before the push (see `queued`).
        // ORDERING: Relaxed; the operation itself is published by its lane's
        // Release/Acquire pair; the count is a hint whose zero a thread may trust for
        // its own operations by coherence (`queued`).
        self.queued.fetch_add(1, Ordering::Relaxed);
        self.posts.push(op).inspect_err(|_| {
            // ORDERING: Relaxed; undoes the count above (nothing was pushed).
            self.queued.fetch_sub(1, Ordering::Relaxed);
        })
    }

    /// Takes the engine if nobody holds it, and applies the operations other threads
    /// queued meanwhile (`posts.rs`) before handing it out.
    ///
    /// # Panics
    /// When the calling thread holds the engine through the bias already (a
    /// re-entrant call inside this crate, as in [`lock`](Self::lock)).
    #[inline]
    pub fn try_lock(&self) -> Option<EngineGuard<'_>> {
        let mark = thread_mark();
        let token = match self.token.try_acquire(mark, revoke_fence) {
            Attempt::Held(g) => g,
            Attempt::Busy => return None,
            Attempt::Reentrant => reentrant(),
        };
        if let BiasedGuard::Plain(_) = token {
            // ORDERING: Relaxed; read only by this thread (see `lock_contended`) and
            // cleared by the guard's drop before the token is released.
            self.owner.store(mark, Ordering::Relaxed);
        }
        // SAFETY: holding the token grants exclusive access (see the Send/Sync note);
        // the reference lives no longer than the guard, which releases the token.
        let engine = unsafe { &mut *self.engine.get() };
        let mut guard = EngineGuard {
            token,
            owner: &self.owner,
            engine,
            _local: PhantomData,
        };
        // The uncontended path's one extra cost: a Relaxed load.
        // ORDERING: Relaxed; see `queued` and `post`.
        if self.queued.load(Ordering::Relaxed) != 0 {
            let applied = self.posts.apply_all(&mut guard);
            // Uncounted after being applied (under the token, before it is released).
            // ORDERING: Relaxed; as above.
            self.queued.fetch_sub(applied, Ordering::Relaxed);
        }
        Some(guard)
    }

    /// Counts the caller among the threads waiting for the engine while `turn` says so
    /// (see [`Turn`]): a poller that releases the token then gives way
    /// ([`make_way`](Self::make_way)).
    pub fn turn(&self) -> Turn<'_> {
        Turn {
            shared: self,
            waiting: false,
        }
    }

    /// Takes the engine, waiting while another thread finishes its round (every holder
    /// keeps it for one round only: one operation's step and at most one progress
    /// round, never a wait).
    ///
    /// # Panics
    /// When the calling thread holds the engine already: a re-entrant call inside this
    /// crate, which would otherwise wait for itself forever.
    #[inline]
    pub fn lock(&self) -> EngineGuard<'_> {
        match self.try_lock() {
            Some(g) => g,
            None => self.lock_contended(),
        }
    }

    /// The slow path of [`lock`](Self::lock): spins briefly (a round is short), then
    /// yields the core between attempts (the holder may need it, on a node with more
    /// threads than cores).
    #[cold]
    fn lock_contended(&self) -> EngineGuard<'_> {
        // ORDERING: Relaxed; this thread's own mark is only ever seen here if this
        // thread stored it and has not cleared it (coherence), i.e. if it holds the
        // token: no other value matters.
        if self.owner.load(Ordering::Relaxed) == thread_mark() {
            reentrant();
        }
        // ORDERING: Relaxed; a hint for `make_way`, which never reads data through it.
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let mut spins: u32 = 0;
        let guard = loop {
            if !self.token.is_held() {
                if let Some(g) = self.try_lock() {
                    break g;
                }
            }
            spins = spins.saturating_add(1);
            if spins < LOCK_SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        };
        // ORDERING: Relaxed; as above.
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        guard
    }

    /// Called by a waiting thread between two polls, after releasing the engine: while
    /// another thread waits for it and it is still free, pauses (briefly, then yields
    /// once), so a poller does not take it back before the waiter's round. Costs one
    /// load when nobody waits.
    #[inline]
    pub fn make_way(&self) {
        // ORDERING: Relaxed; a hint: a stale value costs one pause or one lost turn.
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.make_way_slow();
    }

    #[cold]
    fn make_way_slow(&self) {
        for _ in 0..LOCK_SPINS {
            // ORDERING: Relaxed; as in `make_way`.
            if self.waiting.load(Ordering::Relaxed) == 0 || self.token.is_held() {
                return;
            }
            std::hint::spin_loop();
        }
        std::thread::yield_now();
    }
}

/// A re-entrant take of the engine: a bug of this crate, which would otherwise wait
/// for itself forever.
#[cold]
#[inline(never)]
fn reentrant() -> ! {
    panic!("steadfast engine taken twice by one thread (a re-entrant call)")
}

/// The heavy fence that ends the token's bias when a second thread first asks for the
/// engine: the global `membarrier`, once in the process's life (about 12 ms here).
#[cold]
fn revoke_fence() -> bool {
    log::debug!("a second thread uses the engine: its bias towards the first one ends");
    match steadfast_os::membarrier::global() {
        Ok(()) => true,
        Err(e) => {
            log::warn!("membarrier(MEMBARRIER_CMD_GLOBAL) failed ({e}); retrying");
            false
        }
    }
}

/// A waiting thread's place among those that want the engine: [`Turn::try_lock`]
/// tries once (never waits) and, when the token is taken, counts the thread as waiting
/// until one of its later tries succeeds or the turn is dropped, so pollers releasing
/// the token give way to it (`Shared::make_way`) as they do to `lock`'s waiters.
pub(crate) struct Turn<'a> {
    shared: &'a Shared,
    waiting: bool,
}

impl Turn<'_> {
    /// One try for the engine.
    pub fn try_lock(&mut self) -> Option<EngineGuard<'_>> {
        let guard = self.shared.try_lock();
        match (guard.is_some(), self.waiting) {
            (true, true) => {
                self.waiting = false;
                // ORDERING: Relaxed; a hint for `make_way` (as in `lock_contended`).
                self.shared.waiting.fetch_sub(1, Ordering::Relaxed);
            }
            (false, false) => {
                self.waiting = true;
                // ORDERING: Relaxed; as above.
                self.shared.waiting.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
        guard
    }

    /// Whether the last try found the token taken (the caller then does not give way
    /// to itself).
    pub fn waiting(&self) -> bool {
        self.waiting
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if self.waiting {
            // ORDERING: Relaxed; as in `try_lock`.
            self.shared.waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Polls of a taken token before [`Shared::lock`] starts yielding the core.
const LOCK_SPINS: u32 = 64;

/// The optional thread that runs the engine while the application computes.
///
/// It sleeps between rounds with `park_timeout`, and [`stop`](Self::stop) unparks it:
/// a world with a long heartbeat period still shuts down at once.
pub(crate) struct ProgressThread {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl ProgressThread {
    /// Every `interval`, runs one round of progress if the application is not inside
    /// the library (it only ever tries for the engine, never waits for it).
    pub fn start(engine: Arc<Shared>, interval: Duration) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("steadfast-progress".into())
            .spawn(move || {
                while sleep_unless_stopped(&flag, interval) {
                    if let Some(mut e) = engine.try_lock() {
                        e.progress();
                        e.slow_checks();
                    }
                }
            })?;
        Ok(ProgressThread { stop, handle })
    }

    /// Stops the thread, waking it from its sleep, and waits for its current round.
    pub fn stop(self) {
        // ORDERING: Relaxed; `unpark` synchronizes with the `park_timeout` it ends
        // (std's documented guarantee), so the woken thread sees the flag; the join
        // orders the teardown.
        self.stop.store(true, Ordering::Relaxed);
        self.handle.thread().unpark();
        let _ = self.handle.join();
    }
}

/// Sleeps for `interval` on the calling thread unless `stop` is raised first (an
/// `unpark` after raising it wakes the sleeper); returns whether to go on.
fn sleep_unless_stopped(stop: &AtomicBool, interval: Duration) -> bool {
    let until = Instant::now() + interval;
    loop {
        // ORDERING: Relaxed; see `ProgressThread::stop`: the unpark that follows the
        // store makes it visible here.
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        // Spurious wake-ups and early unparks loop back to the checks.
        std::thread::park_timeout(until - now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_sleep_ends_at_once_on_stop() {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let start = Instant::now();
        let t = std::thread::spawn(move || {
            let mut rounds = 0;
            while sleep_unless_stopped(&flag, Duration::from_secs(3600)) {
                rounds += 1;
            }
            rounds
        });
        std::thread::sleep(Duration::from_millis(50));
        stop.store(true, Ordering::Relaxed);
        t.thread().unpark();
        assert_eq!(t.join().unwrap(), 0);
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn short_sleeps_keep_going_until_stopped() {
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        assert!(sleep_unless_stopped(&stop, Duration::from_millis(20)));
        assert!(start.elapsed() >= Duration::from_millis(20));
        stop.store(true, Ordering::Relaxed);
        assert!(!sleep_unless_stopped(&stop, Duration::from_secs(3600)));
    }
}
