//! The engine shared between the application's thread and the optional progress
//! thread.
//!
//! Whoever holds the progress token (`steadfast_agreement::shared::ProgressToken`, a
//! try-only flag, loom-checked) owns the engine. The application thread takes it on
//! entry to every operation and keeps it for the operation's whole duration (it waits
//! for it only while the progress thread holds it, for one progress round); the
//! progress thread only ever *tries*, every half heartbeat period, so it runs exactly
//! when the application is computing outside the library. Without a progress thread
//! nobody else ever takes the token: an uncontended compare-and-swap per operation.
//!
//! [`ProgressThread`] is that thread; stopping it wakes it from its sleep.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use steadfast_agreement::shared::token::{ProgressGuard, ProgressToken};

use super::engine::Engine;

/// The engine and the token that guards it.
pub(crate) struct Shared {
    token: ProgressToken,
    engine: UnsafeCell<Engine>,
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
    _token: ProgressGuard<'a>,
    engine: &'a mut Engine,
    /// Not Send: released by the thread that took it.
    _local: PhantomData<*const ()>,
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
            token: ProgressToken::new(),
            engine: UnsafeCell::new(engine),
        }
    }

    /// Takes the engine if nobody holds it.
    pub fn try_lock(&self) -> Option<EngineGuard<'_>> {
        let token = self.token.try_acquire()?;
        // SAFETY: holding the token grants exclusive access (see the Send/Sync note);
        // the reference lives no longer than the guard, which releases the token.
        let engine = unsafe { &mut *self.engine.get() };
        Some(EngineGuard {
            _token: token,
            engine,
            _local: PhantomData,
        })
    }

    /// Takes the engine, waiting while the progress thread finishes its round.
    ///
    /// # Panics
    /// After 10 s without getting it: only a re-entrant call on the application thread
    /// (a bug) could hold it that long.
    pub fn lock(&self) -> EngineGuard<'_> {
        if let Some(g) = self.try_lock() {
            return g;
        }
        let start = std::time::Instant::now();
        loop {
            std::thread::yield_now();
            if let Some(g) = self.try_lock() {
                return g;
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(10),
                "steadfast engine held for 10 s: re-entrant use from one thread?"
            );
        }
    }
}

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
