//! Posting without the progress token (issue 15, point 3): operations a thread starts
//! while another thread holds the engine wait in that thread's lane of a
//! [`PostQueue`], and whoever takes the token next applies them all before anything
//! else it does with the engine (`Shared::try_lock`).
//!
//! Three rules make MPI's per-thread order hold (`docs/threads.md`, section 4):
//!
//! - **One lane per thread while it has operations queued.** A thread keeps its lane in
//!   a thread-local claim (per [`Posts`], found by address) from its first queued post
//!   until a token take of its own finds the lane drained, or until it exits (the
//!   claim's destructor frees the lane). Two lanes for one thread could be drained in
//!   either order, so a later post could be applied first.
//! - **Queued before direct.** Every token take applies the queued operations first; a
//!   thread always sees its own queued operations counted (`Shared`'s count, the
//!   protocol of `PostQueue::maybe_pending`: counted before the push, uncounted after
//!   being applied; same-thread coherence), so its next direct post, which takes the
//!   token, applies its queued ones before its own. (A thread that sees the count at
//!   0 has had every operation it queued applied, by a holder that did so before
//!   letting the token go.)
//! - **A full lane or no free lane falls back to waiting for the token**
//!   (`Shared::lock`), which applies the queued operations first, so the fallback keeps
//!   the order too. Lock-free posting is bounded by lanes x slots ([`LANES`],
//!   [`SLOTS`]).
//!
//! The uncontended path pays one Relaxed load of the count per token take (a field
//! beside the token in `Shared`).

use std::cell::RefCell;
use std::sync::Arc;

use steadfast_matching::{Full, PostQueue};

use super::engine::Engine;
use crate::comm::Post;

/// Lanes: threads that may have operations queued at once (more fall back to waiting).
pub(crate) const LANES: usize = 32;
/// Operations one thread may have queued at once (more fall back to waiting).
pub(crate) const SLOTS: usize = 64;

/// The lanes of operations waiting for the token holder.
pub(crate) struct Posts {
    queue: PostQueue<Post>,
}

impl std::fmt::Debug for Posts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Posts")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

/// A lane kept by the current thread (see the module docs); freed when dropped.
struct Claim {
    posts: Arc<Posts>,
    lane: usize,
}

impl Drop for Claim {
    fn drop(&mut self) {
        // SAFETY: `lane` came from `Poster::into_lane` of `posts`' queue on this thread
        // (`Posts::push`), and this claim, the only record of it, is dropped once:
        // no other poster of the lane exists.
        if let Some(poster) = unsafe { self.posts.queue.resume(self.lane) } {
            // Frees the lane (operations already pushed stay queued).
            drop(poster);
        }
    }
}

thread_local! {
    /// The lanes this thread keeps, one per `Posts` (a thread rarely uses more than one
    /// world). Only touched on the contended path.
    static CLAIMS: RefCell<Vec<Claim>> = const { RefCell::new(Vec::new()) };
}

impl Posts {
    pub(crate) fn new() -> Self {
        Posts {
            queue: PostQueue::new(LANES, SLOTS),
        }
    }

    /// Queues `op` in the calling thread's lane, claiming one if it has none.
    ///
    /// # Errors
    /// `op` comes back when the lane is full, no lane is free, or the thread is
    /// exiting (its claims are gone): the caller waits for the token instead.
    pub(crate) fn push(self: &Arc<Self>, op: Post) -> Result<(), Post> {
        let mut op = Some(op);
        let pushed = CLAIMS.try_with(|claims| {
            let Ok(mut claims) = claims.try_borrow_mut() else {
                return false;
            };
            let lane = match claims.iter().find(|c| Arc::ptr_eq(&c.posts, self)) {
                Some(c) => c.lane,
                None => {
                    let Some(poster) = self.queue.poster() else {
                        return false;
                    };
                    let lane = poster.into_lane();
                    claims.push(Claim {
                        posts: Arc::clone(self),
                        lane,
                    });
                    lane
                }
            };
            // SAFETY: `lane` is this thread's claim (kept above or earlier), resumed
            // once here and turned back into the claim below.
            let Some(mut poster) = (unsafe { self.queue.resume(lane) }) else {
                return false;
            };
            let taken = op.take().expect("pushed once");
            let result = poster.push(taken);
            // Kept: the claim stays with the thread.
            let _ = poster.into_lane();
            match result {
                Ok(()) => true,
                Err(Full { op: back, .. }) => {
                    op = Some(back);
                    false
                }
            }
        });
        match (pushed, op) {
            (Ok(true), _) => Ok(()),
            (_, Some(op)) => Err(op),
            (_, None) => unreachable!("an operation not pushed comes back"),
        }
    }

    /// Applies every queued operation (each lane in its posting order), then frees the
    /// calling thread's lane if it is drained; how many were applied. Called by the
    /// token holder only.
    #[cold]
    #[inline(never)]
    pub(crate) fn apply_all(self: &Arc<Self>, e: &mut Engine) -> usize {
        let Some(mut drainer) = self.queue.drainer() else {
            // Only the token holder drains, so this cannot be taken; nothing is lost
            // if it were: the next take drains.
            log::error!("steadfast: posted operations drained by two threads at once");
            return 0;
        };
        // Each lane in order; the holder keeps the token throughout, so a thread that
        // later takes it and sees nothing pending knows its operations were applied.
        let mut applied = 0;
        while let Some(op) = drainer.pop() {
            op.apply(e);
            applied += 1;
        }
        drop(drainer);
        self.release_own_lane();
        applied
    }

    /// Frees the calling thread's lane of this queue if it holds one and it is empty
    /// (the thread is not pushing: it is here), so lanes go to the threads posting now.
    fn release_own_lane(self: &Arc<Self>) {
        let _ = CLAIMS.try_with(|claims| {
            let Ok(mut claims) = claims.try_borrow_mut() else {
                return;
            };
            let Some(i) = claims.iter().position(|c| Arc::ptr_eq(&c.posts, self)) else {
                return;
            };
            // SAFETY: the claim's lane, resumed once and turned back below.
            let drained = unsafe { self.queue.resume(claims[i].lane) }.map(|p| {
                let d = p.is_drained();
                let _ = p.into_lane();
                d
            });
            if drained != Some(false) {
                // Dropping the claim frees the lane.
                claims.swap_remove(i);
            }
        });
    }
}
