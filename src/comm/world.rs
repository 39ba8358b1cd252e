//! The communicators a [`World`] starts with, and its collective exit. Defined here, with
//! the communicators, so that the world module knows nothing of them (the dependency
//! goes one way: communicators over the world's engine).

use std::sync::Arc;

use super::Comm;
use crate::world::World;

impl World {
    /// The communicator of every rank.
    pub fn comm(&self) -> Comm {
        Comm::new(
            Arc::clone(self.shared()),
            Arc::clone(self.shared().world_facts()),
        )
    }

    /// Tears the world down, collectively: an agreement on the world communicator
    /// first, so that no rank leaves while another still works with it (a rank that
    /// has left looks failed to the others). The agreement never waits on a dead rank
    /// (nor on a rank this one was excluded by); dropping the world without finalize
    /// skips it. A restarted process (see [`World::is_restored`]) that has not rejoined
    /// the world ([`World::rejoin`] of a name the world was saved under) skips it too:
    /// the survivors' world agreement does not count it (see `docs/restart.md`); one
    /// that rejoined agrees like any rank.
    pub fn finalize(self) {
        if !self.shared().lock().world_restored() {
            let _ = self.comm().agree_full(1);
        }
        drop(self);
    }
}
