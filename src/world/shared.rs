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

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

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
