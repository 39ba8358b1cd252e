//! The fault-tolerance state of one communicator at one process.

use super::two_party::TwoParty;
use super::IdMap;
use crate::bcast::Broadcaster;
use crate::{CommKey, Decision, Era, Rank, RankSet, Seq};

/// One communicator's fault-tolerance state: its agreement engine (ERA, or the
/// two-party exchange on two processes), its revoke broadcaster, the decisions not
/// collected yet, and what its owner acknowledged. Created by
/// [`ControlPlane::add_comm`](super::ControlPlane::add_comm).
#[derive(Debug)]
pub struct CommFt {
    pub(super) key: CommKey,
    pub(super) context: u64,
    /// Comm rank -> world rank.
    pub(super) group: Vec<u32>,
    /// Comm rank -> the incarnation (generation) of that world rank this epoch of the
    /// communicator was created with: a later incarnation is not a member of it.
    pub(super) incarnations: Vec<u32>,
    pub(super) me: u32,
    pub(super) era: Era,
    pub(super) bcast: Broadcaster,
    pub(super) revoked: bool,
    pub(super) decisions: IdMap<Seq, Decision>,
    pub(super) next_seq: Seq,
    pub(super) acked: RankSet,
    pub(super) children: u64,
    /// Attempt numbers below this were used here by creations of a subgroup.
    pub(super) group_attempts: u64,
    pub(super) two: Option<TwoParty>,
}

impl CommFt {
    /// The communicator's key (id and epoch).
    pub fn key(&self) -> CommKey {
        self.key
    }

    /// The opaque context the runtime gave at creation (its message context).
    pub fn context(&self) -> u64 {
        self.context
    }

    /// Replaces the runtime's context (a communicator whose context is agreed over its
    /// own agreement, after it was registered).
    pub fn set_context(&mut self, context: u64) {
        self.context = context;
    }

    /// Comm rank -> world rank.
    pub fn group(&self) -> &[u32] {
        &self.group
    }

    /// Comm rank -> the incarnation of each member in this epoch.
    pub fn incarnations(&self) -> &[u32] {
        &self.incarnations
    }

    /// This process's comm rank.
    pub fn me(&self) -> u32 {
        self.me
    }

    /// The comm rank of world rank `w`, if a member.
    pub fn comm_rank(&self, w: u32) -> Option<u32> {
        self.group.iter().position(|&g| g == w).map(|i| i as u32)
    }

    /// Whether a revocation was delivered here.
    pub fn revoked(&self) -> bool {
        self.revoked
    }

    /// The failures (comm ranks) its owner acknowledged.
    pub fn acked(&self) -> &RankSet {
        &self.acked
    }

    /// Records the owner's acknowledgement of exactly `failed` (comm ranks).
    pub fn set_acked(&mut self, failed: RankSet) {
        self.acked = failed;
    }

    /// The decision of agreement `seq`, once (later calls: `None`).
    pub fn take_decision(&mut self, seq: Seq) -> Option<Decision> {
        self.decisions.remove(&seq)
    }

    /// A fresh number for the next communicator derived from this one (dup, split,
    /// shrink), the same on every member that derives in the same order.
    pub fn next_child(&mut self) -> u64 {
        let child = self.children;
        self.children += 1;
        child
    }

    /// The lowest attempt number a creation by a subgroup of this communicator
    /// (`create_group`, which only the subgroup's members count) may propose here:
    /// above every one used here, so that the id it derives never repeats in this
    /// process (communicator ids are never reused: a removed one's late control
    /// messages are dropped, and so would a new one's be).
    pub fn group_attempt_floor(&self) -> u64 {
        self.group_attempts
    }

    /// Records that a creation by a subgroup used attempt `k`.
    pub fn group_attempt_used(&mut self, k: u64) {
        self.group_attempts = self.group_attempts.max(k.saturating_add(1));
    }

    /// The first agreement sequence number not started here.
    pub fn next_seq(&self) -> Seq {
        self.next_seq
    }

    pub(super) fn new(
        key: CommKey,
        context: u64,
        group: Vec<u32>,
        incarnations: Vec<u32>,
        me: u32,
    ) -> Self {
        let n = group.len() as u32;
        CommFt {
            key,
            context,
            group,
            incarnations,
            me,
            era: Era::new(Rank(me), n, key, Default::default()),
            bcast: Broadcaster::new(Rank(me), n),
            revoked: false,
            decisions: IdMap::default(),
            next_seq: 0,
            acked: RankSet::new(),
            children: 0,
            group_attempts: 0,
            two: (n == 2).then(TwoParty::default),
        }
    }
}
