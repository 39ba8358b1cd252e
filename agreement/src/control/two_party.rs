//! Agreement on a communicator of exactly two processes: one exchange instead of ERA's
//! two hops.
//!
//! Each process sends its contribution to the other and decides, once it holds the
//! other's, the AND of both, with no failure and outcome `Success`. A process that
//! learns the other failed before holding its contribution decides alone: its own
//! value, the other in the failed set, outcome `Success` only if it had acknowledged
//! that failure. The guarantees of ERA hold (under fail-stop, as ERA assumes): while
//! both live, both decide the same; once one has failed, the survivor is the only
//! process whose decision must agree with anything. A contribution that arrives for an
//! instance this process has not entered yet waits for it; one that arrives after the
//! instance was decided alone is dropped.
//!
//! Messages are ERA UP messages (`docs/protocol.md`) sent to the peer rather than to a
//! parent, so the wire format is unchanged.

use super::IdMap;
use crate::era::Contribution;
use crate::{Decision, Outcome, RankSet, Seq};

/// The two-party state of one communicator at one process.
#[derive(Debug, Default)]
pub struct TwoParty {
    /// Instances entered here and not decided yet: our value.
    mine: IdMap<Seq, u64>,
    /// Contributions of the peer for instances not entered here yet.
    theirs: IdMap<Seq, u64>,
}

/// What to do after a call.
#[derive(Debug)]
pub enum Step {
    /// Send our contribution for `seq` to the peer.
    Send(Seq, Contribution),
    /// Instance decided.
    Decided(Seq, Decision),
}

fn contribution(value: u64) -> Contribution {
    Contribution {
        value,
        decided_below: 0,
        known_failed: RankSet::new(),
        acked: RankSet::new(),
    }
}

fn both(value: u64) -> Decision {
    Decision {
        value,
        outcome: Outcome::Success,
        gc_below: 0,
        failed: RankSet::new(),
    }
}

impl TwoParty {
    /// Enters instance `seq` with `value`. `peer_failed`: the peer is known failed;
    /// `acked`: and that failure was acknowledged here; `peer` is its comm rank.
    pub fn start(&mut self, seq: Seq, value: u64, peer: (u32, bool, bool), out: &mut Vec<Step>) {
        let (peer, peer_failed, acked) = peer;
        if let Some(theirs) = self.theirs.remove(&seq) {
            out.push(Step::Send(seq, contribution(value)));
            out.push(Step::Decided(seq, both(value & theirs)));
        } else if peer_failed {
            out.push(Step::Decided(seq, alone(value, peer, acked)));
        } else {
            self.mine.insert(seq, value);
            out.push(Step::Send(seq, contribution(value)));
        }
    }

    /// The peer's contribution for `seq` arrived; `next_seq` is the first instance not
    /// entered here.
    pub fn on_contribution(&mut self, seq: Seq, value: u64, next_seq: Seq, out: &mut Vec<Step>) {
        if let Some(mine) = self.mine.remove(&seq) {
            out.push(Step::Decided(seq, both(mine & value)));
        } else if seq >= next_seq {
            self.theirs.insert(seq, value);
        }
        // Else: decided alone already; the peer failed for us, its message is late.
    }

    /// The peer failed: every instance waiting for it is decided alone.
    pub fn on_peer_failure(&mut self, peer: u32, acked: bool, out: &mut Vec<Step>) {
        self.theirs.clear();
        for (seq, value) in self.mine.drain() {
            out.push(Step::Decided(seq, alone(value, peer, acked)));
        }
    }
}

fn alone(value: u64, peer: u32, acked: bool) -> Decision {
    Decision {
        value,
        outcome: if acked {
            Outcome::Success
        } else {
            Outcome::ProcFailed
        },
        gc_below: 0,
        failed: RankSet::from_ranks([crate::Rank(peer)]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decided(out: &[Step]) -> Vec<(Seq, u64, bool)> {
        out.iter()
            .filter_map(|s| match s {
                Step::Decided(q, d) => Some((*q, d.value, d.outcome == Outcome::Success)),
                Step::Send(..) => None,
            })
            .collect()
    }

    #[test]
    fn both_orders_decide_the_and() {
        let (mut a, mut b) = (TwoParty::default(), TwoParty::default());
        let mut out = Vec::new();
        a.start(0, 0b110, (1, false, false), &mut out);
        assert!(decided(&out).is_empty());
        // b receives a's contribution before entering: it waits.
        b.on_contribution(0, 0b110, 0, &mut out);
        out.clear();
        b.start(0, 0b011, (0, false, false), &mut out);
        assert_eq!(decided(&out), vec![(0, 0b010, true)]);
        out.clear();
        a.on_contribution(0, 0b011, 1, &mut out);
        assert_eq!(decided(&out), vec![(0, 0b010, true)]);
    }

    #[test]
    fn a_failed_peer_leaves_the_survivor_deciding_alone() {
        let mut a = TwoParty::default();
        let mut out = Vec::new();
        a.start(3, 7, (1, false, false), &mut out);
        out.clear();
        a.on_peer_failure(1, false, &mut out);
        assert_eq!(decided(&out), vec![(3, 7, false)]);
        out.clear();
        // Its late contribution changes nothing.
        a.on_contribution(3, 0, 4, &mut out);
        assert!(out.is_empty());
        // Later instances decide at once; acknowledged, they succeed.
        a.start(4, 5, (1, true, true), &mut out);
        assert_eq!(decided(&out), vec![(4, 5, true)]);
    }
}
