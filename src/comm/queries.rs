//! Queries of a communicator and the acknowledgement of its failures, none of which
//! waits for another thread (issue 15, point 3; `docs/threads.md`, section 1).
//!
//! - `rank`, `size`, `world_rank`: facts fixed while the communicator lives
//!   (`src/world/engine/published.rs` says why), kept in the handle: a field read.
//! - `is_revoked`, `failed_ranks`, `any_failed`: what the token holders published
//!   (the failure order, the communicator's revoked flag), read without the token.
//!   They report the engine's state at some instant between the call and its return.
//! - `ack_failed`: with the engine free, applied at once (as before); else it reads
//!   how many failures are known now, queues the acknowledgement of exactly that
//!   prefix of the failure order ([`Post::AckUpTo`]) and returns its count.
//! - `get_failed`: exact with the engine free; else the published acknowledged prefix.
//!
//! **The one-way guarantee** (what the calling thread's next operation sees): a
//! failure or a revocation is published by the holder's round that learnt it, and the
//! matcher is told in that same round (at the latest when its drain of the rings
//! ends). So if `failed_ranks` lists a rank,
//! or `is_revoked` says `true`, this thread's next operation sees it too (it takes the
//! engine after that round, or is queued and applied after it): a receive from that
//! rank fails `ProcFailed` (once its earlier messages are taken), a receive on the
//! revoked communicator fails `Revoked`. The converse does not hold: a query may miss
//! what a holder's round in flight is learning. `is_revoked` is also `true` as soon as
//! this thread queued a `revoke` of it (applied before this thread's later operations);
//! another thread that sees that flag may still have a send applied before the revoke
//! (logically concurrent with it, as MPI allows), but its receives fail `Revoked` (the
//! revoke, when applied, ends every pending receive).

use steadfast_agreement::control::CommFt;

use super::{Comm, Post};

impl Comm {
    /// Runs `f` on the communicator's fault-tolerance state, with the engine held for
    /// one round (waiting for another thread's round in flight): for creations and
    /// saves, which are collective and take the engine anyway.
    pub(super) fn with<T>(&self, f: impl FnOnce(&CommFt) -> T) -> T {
        let e = self.engine.lock();
        f(e.comm(self.id))
    }

    /// Comm rank -> world rank (fixed while the communicator lives).
    pub(crate) fn group(&self) -> &[u32] {
        &self.facts.group
    }

    /// Whether this is the world communicator ([`World::comm`]'s), whatever its epoch.
    ///
    /// [`World::comm`]: crate::World::comm
    pub fn is_world(&self) -> bool {
        self.id == crate::world::WORLD_COMM
    }

    /// This process's rank in the communicator. A field read: never waits.
    #[inline]
    pub fn rank(&self) -> u32 {
        self.facts.me
    }

    /// Number of ranks (failed ones included, until a shrink). A field read: never
    /// waits.
    #[inline]
    pub fn size(&self) -> u32 {
        self.facts.group.len() as u32
    }

    /// The world rank of comm rank `r`. Never waits.
    pub fn world_rank(&self, r: u32) -> Option<u32> {
        self.facts.group.get(r as usize).copied()
    }

    /// Whether the communicator is revoked here, or this thread (or another) queued a
    /// revoke of it. Never waits: reads the flag the engine publishes; see the module
    /// doc for what the calling thread's next operation then sees.
    pub fn is_revoked(&self) -> bool {
        self.facts.flags.revoked()
    }

    /// Ranks of this communicator known failed here (acknowledged or not), in rank
    /// order. Never waits: reads the published failure order (a rank readmitted by a
    /// restart in place is not failed, as before).
    pub fn failed_ranks(&self) -> Vec<u32> {
        let board = self.engine.board();
        self.facts.failed_within(board, board.known()).collect()
    }

    /// Whether some rank of this communicator is known failed here (acknowledged or
    /// not). Cheap enough for a wait loop: one load while no failure is known, no
    /// allocation, never waits.
    pub fn any_failed(&self) -> bool {
        let board = self.engine.board();
        let known = board.known();
        known != 0 && self.facts.failed_within(board, known).next().is_some()
    }

    /// Acknowledges the failures known now (`MPIX_Comm_ack_failed`): wildcard
    /// receives proceed again and agreements count them as acknowledged. Returns how
    /// many ranks of this communicator are acknowledged failed.
    ///
    /// Never waits for another thread. With the engine free it is applied at once.
    /// Else it reads how many failures are known now (`n`, the published failure
    /// order), queues the acknowledgement of exactly the first `n` (failures learnt
    /// after the read stay unacknowledged, as ULFM's count-based acknowledgement
    /// wants) in this thread's lane, and returns their count here: this thread's later
    /// operations take effect after it (lane order, `docs/threads.md`), so its next
    /// wildcard receive sees them acknowledged. An acknowledgement is never taken back:
    /// if another thread acknowledged a longer prefix meanwhile, that one stands (and
    /// the count returned is the longer one's, when this thread saw it).
    pub fn ack_failed(&self) -> usize {
        match self.engine.try_lock() {
            Some(mut e) => e.ack_failed(self.id).unwrap_or(0),
            None => {
                let board = self.engine.board();
                let n = board.known().max(self.facts.flags.acked());
                let count = self.facts.failed_within(board, n).count();
                self.post_or_apply(Post::AckUpTo { id: self.id, n });
                count
            }
        }
    }

    /// The ranks of this communicator known failed here, in the order their failures
    /// were learnt (`MPIX_Comm_get_failed`): a later call's list starts with an
    /// earlier one's (unless a restart in place readmitted a rank since).
    pub fn failed_in_order(&self) -> Vec<u32> {
        let board = self.engine.board();
        let known = board.known();
        let order = self.facts.failures_in_order(board, known);
        order.into_iter().map(|(_, r)| r).collect()
    }

    /// Acknowledges the first `k` failures of this communicator in the order of
    /// [`failed_in_order`](Self::failed_in_order) (`MPIX_Comm_ack_failed(comm, k)`),
    /// all of them when `k` is at least their count, and returns how many are
    /// acknowledged: more than `k` when a longer prefix already was (an
    /// acknowledgement is never taken back). With `k` = 0 it only counts. Never waits
    /// for another thread (as [`ack_failed`](Self::ack_failed)).
    pub fn ack_failed_first(&self, k: usize) -> usize {
        let board = self.engine.board();
        let order = self.facts.failures_in_order(board, board.known());
        if k >= order.len() && k > 0 {
            return self.ack_failed();
        }
        // The position of the k-th failure: acknowledging the prefix of the failure
        // order up to it acknowledges exactly this communicator's first k.
        let n = k.checked_sub(1).map_or(0, |i| order[i].0);
        match self.engine.try_lock() {
            Some(mut e) => e.ack_up_to(self.id, n).unwrap_or(0),
            None => {
                let n = n.max(self.facts.flags.acked());
                let count = self.facts.failed_within(board, n).count();
                self.post_or_apply(Post::AckUpTo { id: self.id, n });
                count
            }
        }
    }

    /// Acknowledges every failure known now, as [`ack_failed`](Self::ack_failed)
    /// without the count (`MPIX_Comm_failure_ack`).
    ///
    /// Never waits for another thread: when another thread holds the engine, the
    /// acknowledgement is queued in this thread's lane (`src/world/posts.rs`) and
    /// applied by the next holder before anything else, after this thread's earlier
    /// operations; this thread's later operations take effect after it (they take the
    /// engine, which applies the queue first, or queue behind it). It then acknowledges
    /// the failures known when applied: those the holder's round in flight learnt too,
    /// as when this call had waited for that round.
    pub fn failure_ack(&self) {
        match self.engine.try_lock() {
            Some(mut e) => {
                let _ = e.ack_failed(self.id);
            }
            None => self.post_or_apply(Post::Ack { id: self.id }),
        }
    }

    /// The failures acknowledged so far (`MPIX_Comm_failure_get_acked`), in rank
    /// order.
    ///
    /// Never waits for another thread: with the engine free, the engine's
    /// acknowledged set; else the published acknowledged prefix of the failure order
    /// (the same set, except that a rank readmitted by a restart in place since its
    /// acknowledgement is left out at once, where the engine keeps it until the
    /// communicator's next epoch or acknowledgement; and an acknowledgement this
    /// thread queued counts once applied).
    pub fn get_failed(&self) -> Vec<u32> {
        match self.engine.try_lock() {
            Some(e) => e.comm(self.id).acked().iter().map(|r| r.0).collect(),
            None => {
                let board = self.engine.board();
                self.facts
                    .failed_within(board, self.facts.flags.acked())
                    .collect()
            }
        }
    }
}
