//! Uniform inter-communicator creation (the ULFM recipe) as a sans-IO state machine.
//!
//! Two disjoint groups, each a communicator with a leader, and a bridge joining the two
//! leaders. Every surviving process of both groups must return the same outcome: an
//! inter-communicator over the same union, or a failure. The recipe:
//! 1. the leaders exchange their groups over the bridge; each hands the remote group
//!    (or the news that there is none) to the members of its side;
//! 2. first local agreement: does every member know the remote group?
//! 3. the two leaders run the two-party agreement ([`crate::pair`]) on that answer;
//! 4. second local agreement: the leader's pair outcome to every member (the others
//!    contribute their first answer, so a leader that died makes it fail);
//! 5. one agreement over the union (lower side first: the side holding the smaller
//!    world rank) seals it: every member contributes 1, except that a member whose
//!    side said no contributes 0 and returns at once (its agreement engine answers in
//!    the background, so the other side never waits for it) and revokes the union.
//!
//! The creation succeeds where the union agreement decides 1 with every failure
//! acknowledged (nobody acknowledges during a creation, so: with no failure agreed).
//! Since every survivor of both sides decides that agreement alike, all return alike.
//!
//! # Call order
//! [`IntercommCreate::start`], then, after every call, perform the returned [`Step`]s in
//! order and feed what [`IntercommCreate::waiting`] names: the remote group
//! ([`on_remote_group`](IntercommCreate::on_remote_group): a leader's from the remote
//! leader, a member's from its leader; `None` when that peer failed or sent garbage),
//! a local agreement's decision ([`on_local_decision`](IntercommCreate::on_local_decision)),
//! the remote leader's pair messages ([`on_pair_message`](IntercommCreate::on_pair_message),
//! or [`on_pair_failure`](IntercommCreate::on_pair_failure) when it failed or the bridge
//! broke), the union agreement's decision
//! ([`on_union_decision`](IntercommCreate::on_union_decision)), until
//! [`Step::Done`]. The runtime (`src/comm/inter.rs`) drives it with blocking calls;
//! the simulator (`sim::intercomm`) over a simulated network with crashes.

use crate::pair::{PairAction, PairAgreement};
use crate::Rank;

/// The points of a uniform creation, reported to an observer (for instrumentation and
/// failure-injection tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// Entering the creation.
    Start,
    /// The groups were exchanged and handed out.
    Exchanged,
    /// The first local agreement decided.
    FirstLocalAgreement,
    /// This leader sent its flag to the remote leader (leaders only).
    LeaderFlagSent,
    /// The leaders' two-party agreement decided (leaders only).
    LeaderPair,
    /// The second local agreement decided.
    SecondLocalAgreement,
    /// The union agreement decided: the creation returns.
    Done,
}

/// A message of the leaders' two-party agreement, over the bridge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairMsg {
    /// The sender's flag.
    Value(bool),
    /// The sender holds our flag.
    Ack,
}

/// What the caller must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Tell the observer that the creation reached `Stage` (never `Stage::Done`: the
    /// caller reports that when it returns).
    Observe(Stage),
    /// Leader: send this group (world ranks) to the remote leader over the bridge; its
    /// group comes back through `on_remote_group`.
    ExchangeGroups(Vec<u32>),
    /// Leader: send the remote group (`None`: there is none) to local rank `to`.
    HandOut {
        /// Local rank.
        to: u32,
        /// The remote group (world ranks), or none.
        group: Option<Vec<u32>>,
    },
    /// Agree on the local communicator with `value`; its decision comes back through
    /// `on_local_decision`.
    AgreeLocal(u64),
    /// Leader: send a pair message to the remote leader over the bridge.
    SendPair(PairMsg),
    /// Register the communicator over `union` (world ranks, lower side first) and enter
    /// its first agreement with `value`. When `value` is 0, do not wait for the
    /// decision (a [`Step::RevokeUnion`] and a failed [`Step::Done`] follow); else it
    /// comes back through `on_union_decision`.
    AgreeUnion {
        /// The union's group: lower side first.
        union: Vec<u32>,
        /// Whether this process's side is the lower one (its ranks come first).
        low_side: bool,
        /// The contribution: 1 to seal, 0 to refuse.
        value: u64,
    },
    /// Revoke the union communicator (the creation failed).
    RevokeUnion,
    /// The creation is over: the union group on success, `None` on failure.
    Done(Option<Vec<u32>>),
}

/// What the state machine waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting {
    /// The remote group (from the remote leader, or from our leader).
    RemoteGroup,
    /// The decision of the local agreement entered last.
    LocalDecision,
    /// A pair message from the remote leader (or its failure).
    PairMessage,
    /// The union agreement's decision.
    UnionDecision,
    /// Nothing: done.
    Nothing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Exchange,
    First,
    Pair,
    Second,
    Union,
    Done,
}

/// One process's side of a uniform creation (see the module doc).
#[derive(Debug, Clone)]
pub struct IntercommCreate {
    local: Vec<u32>,
    me: u32,
    leader: u32,
    remote: Option<Vec<u32>>,
    phase: Phase,
    pair: PairAgreement,
    pair_out: Vec<PairAction>,
    flag_sent: bool,
    union: Vec<u32>,
}

/// The union of two disjoint groups, lower side first (the side holding the smaller
/// world rank), and whether `local` is that side.
pub fn union_of(local: &[u32], remote: &[u32]) -> (Vec<u32>, bool) {
    let low_side = local.iter().min() < remote.iter().min();
    let (first, second) = if low_side {
        (local, remote)
    } else {
        (remote, local)
    };
    (first.iter().chain(second).copied().collect(), low_side)
}

impl IntercommCreate {
    /// Local rank `me` of the communicator over `local` (world ranks) whose rank
    /// `leader` leads. `None` when `me` or `leader` is not a rank of it.
    pub fn new(local: Vec<u32>, me: u32, leader: u32) -> Option<Self> {
        let n = local.len() as u32;
        (me < n && leader < n).then(|| IntercommCreate {
            local,
            me,
            leader,
            remote: None,
            phase: Phase::Idle,
            // The pair's peer is always "the remote leader": rank 1 from our side.
            pair: PairAgreement::new(Rank(1)),
            pair_out: Vec::new(),
            flag_sent: false,
            union: Vec::new(),
        })
    }

    /// Whether this process leads its side.
    pub fn is_leader(&self) -> bool {
        self.me == self.leader
    }

    /// What the state machine waits for now.
    pub fn waiting(&self) -> Waiting {
        match self.phase {
            Phase::Idle | Phase::Done => Waiting::Nothing,
            Phase::Exchange => Waiting::RemoteGroup,
            Phase::First | Phase::Second => Waiting::LocalDecision,
            Phase::Pair => Waiting::PairMessage,
            Phase::Union => Waiting::UnionDecision,
        }
    }

    /// Enters the creation.
    pub fn start(&mut self, out: &mut Vec<Step>) {
        if self.phase != Phase::Idle {
            return;
        }
        out.push(Step::Observe(Stage::Start));
        self.phase = Phase::Exchange;
        if self.is_leader() {
            out.push(Step::ExchangeGroups(self.local.clone()));
        }
    }

    /// The remote group arrived (a leader: from the remote leader; a member: from its
    /// leader), or `None` (that peer failed, or what it sent was not a group). A group
    /// that overlaps ours counts as none.
    pub fn on_remote_group(&mut self, group: Option<Vec<u32>>, out: &mut Vec<Step>) {
        if self.phase != Phase::Exchange {
            return;
        }
        let group = group.filter(|g| !g.is_empty() && g.iter().all(|r| !self.local.contains(r)));
        if self.is_leader() {
            for to in (0..self.local.len() as u32).filter(|&r| r != self.me) {
                out.push(Step::HandOut {
                    to,
                    group: group.clone(),
                });
            }
        }
        out.push(Step::Observe(Stage::Exchanged));
        out.push(Step::AgreeLocal(group.is_some() as u64));
        self.remote = group;
        self.phase = Phase::First;
    }

    /// The local agreement entered last decided `value`, `all_acked` when its outcome
    /// was a success.
    pub fn on_local_decision(&mut self, value: u64, all_acked: bool, out: &mut Vec<Step>) {
        let yes = all_acked && value == 1;
        match self.phase {
            Phase::First => {
                out.push(Step::Observe(Stage::FirstLocalAgreement));
                if self.is_leader() {
                    self.phase = Phase::Pair;
                    self.pair.start(yes, &mut self.pair_out);
                    self.run_pair(out);
                } else {
                    self.phase = Phase::Second;
                    out.push(Step::AgreeLocal(yes as u64));
                }
            }
            Phase::Second => {
                out.push(Step::Observe(Stage::SecondLocalAgreement));
                let Some(remote) = self.remote.as_deref() else {
                    self.phase = Phase::Done;
                    out.push(Step::Done(None));
                    return;
                };
                let (union, low_side) = union_of(&self.local, remote);
                self.union = union.clone();
                out.push(Step::AgreeUnion {
                    union,
                    low_side,
                    value: yes as u64,
                });
                if yes {
                    self.phase = Phase::Union;
                } else {
                    self.phase = Phase::Done;
                    out.push(Step::RevokeUnion);
                    out.push(Step::Done(None));
                }
            }
            _ => {}
        }
    }

    /// A pair message from the remote leader.
    pub fn on_pair_message(&mut self, msg: PairMsg, out: &mut Vec<Step>) {
        if self.phase != Phase::Pair {
            return;
        }
        match msg {
            PairMsg::Value(v) => self.pair.on_value(Rank(1), v, &mut self.pair_out),
            PairMsg::Ack => self.pair.on_ack(Rank(1), &mut self.pair_out),
        }
        self.run_pair(out);
    }

    /// The remote leader failed (or the bridge broke): the pair decides without it.
    pub fn on_pair_failure(&mut self, out: &mut Vec<Step>) {
        if self.phase != Phase::Pair {
            return;
        }
        self.pair.on_failure(Rank(1), &mut self.pair_out);
        self.run_pair(out);
    }

    /// The union agreement decided `value`, `all_acked` when its outcome was a success.
    pub fn on_union_decision(&mut self, value: u64, all_acked: bool, out: &mut Vec<Step>) {
        if self.phase != Phase::Union {
            return;
        }
        self.phase = Phase::Done;
        if all_acked && value == 1 {
            out.push(Step::Done(Some(std::mem::take(&mut self.union))));
        } else {
            out.push(Step::RevokeUnion);
            out.push(Step::Done(None));
        }
    }

    fn run_pair(&mut self, out: &mut Vec<Step>) {
        for a in self.pair_out.drain(..) {
            match a {
                PairAction::SendValue(v) => {
                    out.push(Step::SendPair(PairMsg::Value(v)));
                    if !self.flag_sent {
                        self.flag_sent = true;
                        out.push(Step::Observe(Stage::LeaderFlagSent));
                    }
                }
                PairAction::SendAck => out.push(Step::SendPair(PairMsg::Ack)),
                PairAction::Decided { value, .. } => {
                    out.push(Step::Observe(Stage::LeaderPair));
                    self.phase = Phase::Second;
                    out.push(Step::AgreeLocal(value as u64));
                    // The pair is over: later pair messages are not read.
                    break;
                }
            }
        }
        self.pair_out.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agree_locals(out: &[Step]) -> Vec<u64> {
        out.iter()
            .filter_map(|s| match s {
                Step::AgreeLocal(v) => Some(*v),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_leader_walks_every_stage_to_success() {
        let mut ic = IntercommCreate::new(vec![4, 2], 0, 0).unwrap();
        let mut out = Vec::new();
        ic.start(&mut out);
        assert_eq!(out[1], Step::ExchangeGroups(vec![4, 2]));
        assert_eq!(ic.waiting(), Waiting::RemoteGroup);
        out.clear();
        ic.on_remote_group(Some(vec![1, 3]), &mut out);
        assert!(out.contains(&Step::HandOut {
            to: 1,
            group: Some(vec![1, 3])
        }));
        assert_eq!(agree_locals(&out), vec![1]);
        out.clear();
        ic.on_local_decision(1, true, &mut out);
        assert_eq!(ic.waiting(), Waiting::PairMessage);
        assert!(out.contains(&Step::SendPair(PairMsg::Value(true))));
        assert!(out.contains(&Step::Observe(Stage::LeaderFlagSent)));
        out.clear();
        ic.on_pair_message(PairMsg::Value(true), &mut out);
        assert_eq!(out, vec![Step::SendPair(PairMsg::Ack)]);
        out.clear();
        ic.on_pair_message(PairMsg::Ack, &mut out);
        assert_eq!(agree_locals(&out), vec![1]);
        out.clear();
        ic.on_local_decision(1, true, &mut out);
        assert!(out.contains(&Step::AgreeUnion {
            union: vec![1, 3, 4, 2],
            low_side: false,
            value: 1
        }));
        out.clear();
        ic.on_union_decision(1, true, &mut out);
        assert_eq!(out, vec![Step::Done(Some(vec![1, 3, 4, 2]))]);
        assert_eq!(ic.waiting(), Waiting::Nothing);
    }

    #[test]
    fn a_member_whose_side_said_no_refuses_without_waiting() {
        let mut ic = IntercommCreate::new(vec![0, 2], 1, 0).unwrap();
        let mut out = Vec::new();
        ic.start(&mut out);
        assert_eq!(out, vec![Step::Observe(Stage::Start)]);
        ic.on_remote_group(Some(vec![1]), &mut out);
        ic.on_local_decision(1, true, &mut out);
        out.clear();
        // The second agreement failed (the leader died, say).
        ic.on_local_decision(1, false, &mut out);
        assert_eq!(
            &out[1..],
            &[
                Step::AgreeUnion {
                    union: vec![0, 2, 1],
                    low_side: true,
                    value: 0
                },
                Step::RevokeUnion,
                Step::Done(None)
            ]
        );
    }

    #[test]
    fn an_overlapping_or_missing_remote_group_fails_the_creation() {
        let mut ic = IntercommCreate::new(vec![0, 2], 1, 0).unwrap();
        let mut out = Vec::new();
        ic.start(&mut out);
        ic.on_remote_group(Some(vec![2, 5]), &mut out);
        assert_eq!(agree_locals(&out), vec![0]);
        out.clear();
        ic.on_local_decision(0, true, &mut out);
        ic.on_local_decision(0, true, &mut out);
        assert_eq!(out.last(), Some(&Step::Done(None)));
        assert!(!out.iter().any(|s| matches!(s, Step::AgreeUnion { .. })));
        assert!(IntercommCreate::new(vec![0], 1, 0).is_none());
    }

    #[test]
    fn a_leader_whose_peer_died_decides_no() {
        let mut ic = IntercommCreate::new(vec![0], 0, 0).unwrap();
        let mut out = Vec::new();
        ic.start(&mut out);
        ic.on_remote_group(Some(vec![1]), &mut out);
        ic.on_local_decision(1, true, &mut out);
        out.clear();
        ic.on_pair_failure(&mut out);
        assert_eq!(agree_locals(&out), vec![0]);
    }
}
