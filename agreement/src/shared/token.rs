//! The progress token: whoever holds it runs the state machines; nobody waits for it.

use super::sync::{AtomicBool, Ordering};

/// A try-only lock: a thread that fails to take it leaves its events in the inbox for
/// the holder, who drains the inbox before releasing.
#[derive(Debug, Default)]
pub struct ProgressToken {
    held: AtomicBool,
}

/// Proof of holding the token; releases it when dropped.
#[derive(Debug)]
pub struct ProgressGuard<'a> {
    token: &'a ProgressToken,
}

impl ProgressToken {
    /// A free token.
    pub fn new() -> Self {
        ProgressToken {
            held: AtomicBool::new(false),
        }
    }

    /// Takes the token if free.
    pub fn try_acquire(&self) -> Option<ProgressGuard<'_>> {
        // ORDERING: Acquire on success; pairs with the Release store in `drop`, so the
        // new holder sees every change the previous holder made to the engines.
        self.held
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| ProgressGuard { token: self })
    }

    /// Whether someone holds the token (a hint: it may change at once).
    pub fn is_held(&self) -> bool {
        // ORDERING: Relaxed; only a hint, nothing is read through it.
        self.held.load(Ordering::Relaxed)
    }
}

impl Drop for ProgressGuard<'_> {
    fn drop(&mut self) {
        // ORDERING: Release; publishes the holder's changes to the next Acquire in
        // `try_acquire`.
        self.token.held.store(false, Ordering::Release);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    struct Shared {
        token: ProgressToken,
        engine: UnsafeCell<u32>,
    }
    // SAFETY: `engine` is only touched by the token holder, which the token makes unique.
    unsafe impl Sync for Shared {}

    /// The token excludes: loom flags any concurrent access to `engine`, and no update
    /// is lost between holders.
    #[test]
    fn holders_never_overlap_and_see_each_others_work() {
        loom::model(|| {
            let s = Arc::new(Shared {
                token: ProgressToken::new(),
                engine: UnsafeCell::new(0),
            });
            let worker = |s: Arc<Shared>| {
                move || {
                    if let Some(_g) = s.token.try_acquire() {
                        // SAFETY: the guard makes this thread the only holder.
                        s.engine.with_mut(|e| unsafe { *e += 1 });
                        1
                    } else {
                        0
                    }
                }
            };
            let a = loom::thread::spawn(worker(s.clone()));
            let b = loom::thread::spawn(worker(s.clone()));
            let ran = a.join().unwrap() + b.join().unwrap();
            let _g = s.token.try_acquire().expect("free after both");
            // SAFETY: we hold the token and the workers have finished.
            let total = s.engine.with(|e| unsafe { *e });
            assert_eq!(total, ran);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time() {
        let t = ProgressToken::new();
        let g = t.try_acquire().unwrap();
        assert!(t.try_acquire().is_none());
        assert!(t.is_held());
        drop(g);
        assert!(t.try_acquire().is_some());
    }
}
