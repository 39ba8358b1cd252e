//! State of one agreement instance at one process, and the contribution arithmetic.

use crate::types::{Rank, RankSet, Seq};

/// What a process (or a whole subtree, once combined) brings to an agreement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contribution {
    /// Bitwise AND of the values.
    pub value: u64,
    /// Smallest "every instance below this sequence is decided here" over the contributors:
    /// decisions below it are held by everyone and may be dropped.
    pub decided_below: Seq,
    /// Union of the failures the contributors knew of.
    pub known_failed: RankSet,
    /// Intersection of the failures the contributors had acknowledged.
    pub acked: RankSet,
}

impl Contribution {
    /// Folds `other` in. Idempotent and commutative, so a contribution received twice
    /// (a resend after a parent change) changes nothing.
    pub fn merge(&mut self, other: &Contribution) {
        self.value &= other.value;
        self.decided_below = self.decided_below.min(other.decided_below);
        self.known_failed.union_with(&other.known_failed);
        self.acked.intersect_with(&other.acked);
    }
}

/// Result code of an agreement, equal at every survivor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Outcome {
    /// Every failure in the decided set had been acknowledged by every contributor.
    Success = 0,
    /// Some contributor had not acknowledged some failure in the decided set (including
    /// failures that happened during the agreement).
    ProcFailed = 1,
}

impl Outcome {
    /// Decodes the wire byte.
    pub fn from_u8(b: u8) -> Option<Outcome> {
        match b {
            0 => Some(Outcome::Success),
            1 => Some(Outcome::ProcFailed),
            _ => None,
        }
    }
}

/// The decision of one agreement instance.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Decision {
    /// AND of the contributed values.
    pub value: u64,
    /// Result code.
    pub outcome: Outcome,
    /// Every participant held the decisions of all instances below this sequence when it
    /// contributed; those may be dropped.
    pub gc_below: Seq,
    /// Ranks agreed to have failed; every survivor adds them to its agreed-failed set.
    pub failed: RankSet,
}

/// Where one instance stands at this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Messages arrived (a child's UP, a request) before the local call.
    NotContributed,
    /// Contributed; waiting for the UPs of the children.
    Gathering,
    /// UP sent; waiting for DOWN.
    Broadcasting,
    /// Decided (the decision is kept to answer late UPs and requests).
    Completed,
}

/// One agreement instance.
#[derive(Debug)]
pub(crate) struct Instance {
    pub(crate) seq: Seq,
    pub(crate) state: State,
    /// Whether the local process has called `start` for this instance.
    pub(crate) contributed: bool,
    /// Combined contribution so far (own plus children's); `None` until the first arrives.
    pub(crate) acc: Option<Contribution>,
    /// Senders whose UP is folded into `acc`.
    pub(crate) got: Vec<Rank>,
    /// Processes that asked for our UP before it was ready.
    pub(crate) requesters: Vec<Rank>,
    /// Processes we sent a RESULT_REQUEST to.
    pub(crate) requested: Vec<Rank>,
    /// The parent our UP last went to.
    pub(crate) sent_to: Option<Rank>,
    /// Ranks left out of the tree layout (rebuilt shape), fixed when we contribute.
    pub(crate) excluded: RankSet,
    /// The decision, once known.
    pub(crate) decision: Option<Decision>,
}

impl Instance {
    pub(crate) fn new(seq: Seq) -> Self {
        Instance {
            seq,
            state: State::NotContributed,
            contributed: false,
            acc: None,
            got: Vec::new(),
            requesters: Vec::new(),
            requested: Vec::new(),
            sent_to: None,
            excluded: RankSet::new(),
            decision: None,
        }
    }

    /// Folds a contribution in.
    pub(crate) fn absorb(&mut self, c: &Contribution) {
        match &mut self.acc {
            Some(acc) => acc.merge(c),
            None => self.acc = Some(c.clone()),
        }
    }
}

/// Adds `r` to a small list if absent; returns whether it was added.
pub(crate) fn push_unique(list: &mut Vec<Rank>, r: Rank) -> bool {
    if list.contains(&r) {
        false
    } else {
        list.push(r);
        true
    }
}
