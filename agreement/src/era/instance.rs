//! State of one agreement instance at one process, and the contribution arithmetic.

use crate::decision::{Contribution, Decision};
use crate::types::{Rank, RankSet, Seq};

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
