//! The values an agreement exchanges and decides: a contribution (what a process, or a
//! subtree once combined, brings), the decision, and its outcome code. Shared by the
//! engine (`era`) and the wire format (`wire`); this module depends on neither.

use crate::types::{RankSet, Seq};

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
