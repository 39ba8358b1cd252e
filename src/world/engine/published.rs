//! What the engine publishes for threads that do not hold the progress token
//! (`docs/threads.md`, section 1): each communicator's fixed facts (group, own rank)
//! and flags (revoked, acknowledged prefix), and the process's failure order
//! (`steadfast_agreement::shared::board`). The queries `rank`, `size`, `is_revoked`,
//! `failed_ranks`, `any_failed` and the count of `ack_failed` read them without the
//! token.
//!
//! A communicator's group and own rank never change while it is registered: shrink,
//! dup and split make new communicators, a new epoch (`ControlPlane::new_epoch`) and a
//! restarted process's rejoin of its world (`Engine::rejoin_world`) keep the id's group
//! and rank (the rejoin refuses another group), and an id is registered again only
//! after it was freed, when no handle to it is left (`Comm::free`).
//!
//! Everything here is written by the token holder alone, at the points where the
//! control plane's state changes: a failure learnt (`Output::Failed`, in the order the
//! control plane learnt them), a readmission, a revoke delivered, a communicator
//! registered, moved to a new epoch, rejoined or removed, an acknowledgement.

use std::collections::HashMap;
use std::sync::Arc;

use steadfast_agreement::shared::{CommFlags, FailureBoard};
use steadfast_agreement::{CommId, Rank, RankSet};

use super::Engine;

/// A registered communicator's facts that never change, and its published flags.
#[derive(Debug)]
pub(crate) struct CommFacts {
    /// Its id.
    pub id: CommId,
    /// Comm rank -> world rank.
    pub group: Box<[u32]>,
    /// This process's comm rank.
    pub me: u32,
    /// Revoked (or a revoke queued), and the acknowledged prefix of the failure order.
    pub flags: CommFlags,
}

impl CommFacts {
    /// The ranks (of this communicator) failed within the first `n` failures of
    /// `board`.
    pub fn failed_within<'a>(
        &'a self,
        board: &'a FailureBoard,
        n: usize,
    ) -> impl Iterator<Item = u32> + 'a {
        self.group
            .iter()
            .enumerate()
            .filter_map(move |(r, &w)| board.failed_within(w, n).then_some(r as u32))
    }

    /// Its ranks failed among the first `n` failures of `board`, with each one's
    /// position, in the order the failures were learnt.
    pub fn failures_in_order(&self, board: &FailureBoard, n: usize) -> Vec<(usize, u32)> {
        let mut v: Vec<(usize, u32)> = self
            .group
            .iter()
            .enumerate()
            .filter_map(|(r, &w)| board.failed_at(w, n).map(|at| (at, r as u32)))
            .collect();
        v.sort_unstable();
        v
    }
}

/// The published state: the failure board and each registered communicator's facts.
pub(crate) struct Published {
    board: Arc<FailureBoard>,
    comms: HashMap<CommId, Arc<CommFacts>>,
}

impl Published {
    /// Nothing registered, no failure, for a world of `size` ranks.
    pub fn new(size: u32) -> Self {
        Published {
            board: Arc::new(FailureBoard::new(size as usize)),
            comms: HashMap::new(),
        }
    }
}

impl Engine {
    /// The failure board, for readers without the token.
    pub fn board(&self) -> Arc<FailureBoard> {
        Arc::clone(&self.published.board)
    }

    /// The published facts of a registered communicator, for a new `Comm` handle (the
    /// reference counts as one: `Comm::other_handles`).
    ///
    /// # Panics
    /// If `id` is not registered: a `Comm` handle is only made for a registered one.
    pub fn facts(&self, id: CommId) -> Arc<CommFacts> {
        Arc::clone(
            self.published
                .comms
                .get(&id)
                .expect("a Comm handle's communicator is registered"),
        )
    }

    /// Publishes the failure of world rank `w`, just learnt (`Output::Failed`).
    pub(super) fn publish_failure(&mut self, w: u32) {
        self.published.board.learnt(w);
    }

    /// Publishes that world rank `w` was readmitted (no longer failed).
    pub(super) fn publish_readmitted(&mut self, w: u32) {
        self.published.board.readmitted(w);
    }

    /// Publishes that communicator `id` is revoked (its revoke delivered here).
    pub(super) fn publish_revoked(&mut self, id: CommId) {
        if let Some(f) = self.published.comms.get(&id) {
            f.flags.set_revoked(true);
        }
    }

    /// Publishes communicator `id` as the control plane has it now (just registered,
    /// or its state replaced by a rejoin): the existing facts are kept when the group
    /// and rank are the same (handles to it hold them), with its flags brought up to
    /// date.
    pub(super) fn publish_comm(&mut self, id: CommId) {
        let Some(c) = self.control.comm(id) else {
            return;
        };
        let (revoked, unacked) = (c.revoked(), c.acked().is_empty());
        let same = self
            .published
            .comms
            .get(&id)
            .is_some_and(|f| f.me == c.me() && *f.group == *c.group());
        if !same {
            let facts = CommFacts {
                id,
                group: c.group().into(),
                me: c.me(),
                flags: CommFlags::new(),
            };
            self.published.comms.insert(id, Arc::new(facts));
        }
        let f = &self.published.comms[&id];
        f.flags.set_revoked(revoked);
        if unacked {
            f.flags.set_acked(0);
        }
    }

    /// Forgets communicator `id`'s facts (it was freed; handles left keep theirs).
    pub(super) fn unpublish_comm(&mut self, id: CommId) {
        self.published.comms.remove(&id);
    }

    /// The position of world rank `w`'s current failure in the failure order, 0 when
    /// not failed (sorts the failures a matching context starts with in that order).
    pub(super) fn failure_position(&self, w: u32) -> usize {
        self.published.board.position(w)
    }

    /// Acknowledges every failure of communicator `id`'s ranks known now
    /// (`MPIX_Comm_failure_ack`): wildcard receives on it proceed again and its
    /// agreements count them as acknowledged. How many of its ranks are acknowledged
    /// failed; `None` for an unknown communicator.
    pub fn ack_failed(&mut self, id: CommId) -> Option<usize> {
        let known = self.published.board.known();
        self.ack_up_to(id, known)
    }

    /// Acknowledges the failures of communicator `id`'s ranks among the first `n` of
    /// the failure order (`MPIX_Comm_ack_failed` as `Comm::ack_failed` queues it: `n`
    /// is the count it read without the token), or among the first of the prefix
    /// acknowledged already if that is longer (an acknowledgement is never taken
    /// back). Exactly those: a failure learnt since `n` was read stays unacknowledged.
    /// How many of its ranks are acknowledged failed; `None` for an unknown
    /// communicator.
    ///
    /// Every failure of a communicator's member gets a later position than the ones
    /// before it (a readmitted rank that fails again gets a new one), and a matching
    /// context lists its failures in that order (`open_context` sorts those it starts
    /// with), so the acknowledged set is a prefix of the context's failure order, as
    /// the matcher counts it. (The matcher is told of a failure in the round that
    /// published it, at the latest when that round's drain of the rings ends: an
    /// acknowledgement, applied between rounds, never finds the board ahead of it.)
    pub fn ack_up_to(&mut self, id: CommId, n: usize) -> Option<usize> {
        // No clone of the facts (their reference count is the handles' count that
        // `Comm::free` reads without the engine).
        let facts = self.published.comms.get(&id)?;
        let n = n.max(facts.flags.acked());
        let acked = RankSet::from_ranks(facts.failed_within(&self.published.board, n).map(Rank));
        let count = acked.len();
        facts.flags.set_acked(n);
        let c = self.control.comm_mut(id)?;
        c.set_acked(acked);
        let ctx = c.context();
        if ctx != 0 {
            self.matching.ack_first(ctx, count);
        }
        Some(count)
    }
}
