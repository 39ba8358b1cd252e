//! Engine tests on a hand-stepped network (in-order delivery, explicit failures).

use super::*;
use crate::types::{CommId, Epoch};
use std::collections::VecDeque;

const KEY: CommKey = CommKey {
    comm: CommId(9),
    epoch: Epoch(1),
};

struct Net {
    eras: Vec<Era>,
    alive: Vec<bool>,
    queue: VecDeque<(Rank, Rank, Vec<u8>)>,
    decided: Vec<Vec<(Seq, Decision)>>,
    sent: usize,
}

impl Net {
    fn new(n: u32, shape: TreeShape) -> Self {
        Net {
            eras: (0..n)
                .map(|r| Era::new(Rank(r), n, KEY, EraConfig { shape }))
                .collect(),
            alive: vec![true; n as usize],
            queue: VecDeque::new(),
            decided: vec![Vec::new(); n as usize],
            sent: 0,
        }
    }

    fn absorb(&mut self, from: Rank, out: Vec<EraAction>) {
        for a in out {
            match a {
                EraAction::Send { to, seq, msg } => {
                    let mut buf = Vec::new();
                    msg.encode(KEY, seq, &mut buf);
                    self.sent += 1;
                    self.queue.push_back((from, to, buf));
                }
                EraAction::Decided { seq, decision } => {
                    self.decided[from.index()].push((seq, decision))
                }
                EraAction::Excluded { .. } => panic!("nobody is excluded here"),
            }
        }
    }

    fn start(&mut self, r: u32, seq: Seq, value: u64, acked: &[u32]) {
        let acked: RankSet = acked.iter().map(|&a| Rank(a)).collect();
        let mut out = Vec::new();
        self.eras[r as usize]
            .start(seq, value, &acked, &mut out)
            .unwrap();
        self.absorb(Rank(r), out);
    }

    fn kill(&mut self, r: u32) {
        self.alive[r as usize] = false;
    }

    fn notify_all(&mut self, dead: u32) {
        for q in 0..self.eras.len() {
            if self.alive[q] {
                let mut out = Vec::new();
                self.eras[q].on_failure(Rank(dead), &mut out);
                self.absorb(Rank(q as u32), out);
            }
        }
    }

    /// Delivers messages in order; stops after `limit` deliveries.
    fn run(&mut self, limit: usize) {
        for _ in 0..limit {
            let Some((from, to, bytes)) = self.queue.pop_front() else {
                return;
            };
            if !self.alive[to.index()] {
                continue;
            }
            let mut out = Vec::new();
            self.eras[to.index()]
                .on_bytes(from, &bytes, &mut out)
                .unwrap();
            self.absorb(to, out);
        }
    }

    fn decision_of(&self, r: usize, seq: Seq) -> Option<&Decision> {
        self.decided[r]
            .iter()
            .find(|(s, _)| *s == seq)
            .map(|(_, d)| d)
    }
}

#[test]
fn failure_free_decides_the_and_with_two_messages_per_edge() {
    let n = 13;
    let mut net = Net::new(n, TreeShape::Lazy);
    for r in 0..n {
        net.start(r, 0, !(1u64 << r), &[]);
    }
    net.run(10_000);
    let expected = (0..n).fold(u64::MAX, |v, r| v & !(1u64 << r));
    for r in 0..n as usize {
        let d = net.decision_of(r, 0).expect("decided");
        assert_eq!(d.value, expected);
        assert_eq!(d.outcome, Outcome::Success);
        assert!(d.failed.is_empty());
    }
    assert_eq!(net.sent, 2 * (n as usize - 1));
}

#[test]
fn nothing_is_decided_before_everyone_contributed() {
    let mut net = Net::new(4, TreeShape::Lazy);
    for r in 0..3 {
        net.start(r, 0, u64::MAX, &[]);
    }
    net.run(10_000);
    assert!(net.decided.iter().all(|d| d.is_empty()));
    assert_eq!(net.eras[3].state(0), None);
    // A star of 4: the root waits for rank 3's UP; the leaves sent theirs.
    assert_eq!(net.eras[0].state(0), Some(State::Gathering));
    assert_eq!(net.eras[1].state(0), Some(State::Broadcasting));
    net.start(3, 0, 1, &[]);
    net.run(10_000);
    assert!(net
        .decided
        .iter()
        .all(|d| d.len() == 1 && d[0].1.value == 1));
}

#[test]
fn root_dying_before_deciding_hands_over_to_its_smallest_child() {
    let n = 7;
    let mut net = Net::new(n, TreeShape::Lazy);
    // Everyone but the root contributes; the UPs reach the root, which then dies.
    for r in 1..n {
        net.start(r, 0, !(1u64 << r), &[]);
    }
    net.run(10_000);
    net.kill(0);
    net.notify_all(0);
    net.run(10_000);
    for r in 1..n as usize {
        let d = net.decision_of(r, 0).expect("survivor decided");
        assert_eq!(d.failed.as_slice(), &[Rank(0)]);
        // Nobody had acknowledged rank 0's failure.
        assert_eq!(d.outcome, Outcome::ProcFailed);
        assert_eq!(d.value, (1..n).fold(u64::MAX, |v, r| v & !(1u64 << r)));
        assert_eq!(net.eras[r].agreed_failed().as_slice(), &[Rank(0)]);
    }
}

#[test]
fn acknowledged_failure_gives_success() {
    let n = 5;
    let mut net = Net::new(n, TreeShape::Lazy);
    net.kill(4);
    net.notify_all(4);
    for r in 0..4 {
        net.start(r, 0, u64::MAX, &[4]);
    }
    net.run(10_000);
    for r in 0..4 {
        let d = net.decision_of(r, 0).unwrap();
        assert_eq!(d.outcome, Outcome::Success);
        assert_eq!(d.failed.as_slice(), &[Rank(4)]);
    }
}

#[test]
fn late_up_is_answered_with_the_decision() {
    let n = 3;
    let mut net = Net::new(n, TreeShape::Lazy);
    for r in 0..n {
        net.start(r, 0, 6, &[]);
    }
    net.run(10_000);
    let d = net.decision_of(0, 0).unwrap().clone();
    let late = EraMsg::Up(Contribution {
        value: 0,
        decided_below: 0,
        known_failed: RankSet::new(),
        acked: RankSet::new(),
    });
    let mut out = Vec::new();
    net.eras[0].on_message(Rank(2), 0, late, &mut out);
    assert_eq!(
        out,
        vec![EraAction::Send {
            to: Rank(2),
            seq: 0,
            msg: EraMsg::Down(d)
        }]
    );
}

#[test]
fn decisions_everyone_holds_are_dropped() {
    let n = 6;
    let mut net = Net::new(n, TreeShape::Rebuilt);
    for seq in 0..5 {
        for r in 0..n {
            net.start(r, seq, seq as u64, &[]);
        }
        net.run(10_000);
    }
    for era in &net.eras {
        // The last decision is kept (someone may still ask); older ones are gone.
        assert!(era.instances_held() <= 2, "{}", era.instances_held());
        assert!(era.decision(4).is_some());
        assert!(era.decision(0).is_none());
    }
    // A message for a dropped instance is stale, not a new instance.
    let mut out = Vec::new();
    let req = EraMsg::ResultRequest {
        known_failed: RankSet::new(),
    };
    net.eras[1].on_message(Rank(0), 0, req, &mut out);
    assert!(out.is_empty());
    assert_eq!(net.eras[1].stats().stale, 1);
}

#[test]
fn misuse_and_malformed_input_are_reported() {
    let mut era = Era::new(Rank(1), 4, KEY, EraConfig::default());
    let mut out = Vec::new();
    era.start(0, 1, &RankSet::new(), &mut out).unwrap();
    assert_eq!(
        era.start(0, 1, &RankSet::new(), &mut out),
        Err(EraError::AlreadyStarted(0))
    );
    assert!(era.on_bytes(Rank(0), &[1, 2, 3], &mut out).is_err());
    let mut other = Vec::new();
    EraMsg::ResultRequest {
        known_failed: RankSet::new(),
    }
    .encode(
        CommKey {
            comm: CommId(8),
            epoch: Epoch(1),
        },
        0,
        &mut other,
    );
    assert!(matches!(
        era.on_bytes(Rank(0), &other, &mut out),
        Err(WireError::WrongComm { .. })
    ));
    // A sender outside the communicator.
    let up = EraMsg::ResultRequest {
        known_failed: RankSet::new(),
    };
    era.on_message(Rank(77), 0, up, &mut out);
    assert_eq!(era.stats().malformed, 3);
}

#[test]
fn instances_in_flight_together_and_engines_of_several_comms() {
    // Three instances on one communicator, started in scrambled order per rank, plus a
    // second communicator's engine fed the same traffic shape: all decide correctly.
    let n = 9;
    let mut net = Net::new(n, TreeShape::Lazy);
    let order = [[2u32, 0, 1], [0, 1, 2], [1, 2, 0]];
    for r in 0..n {
        for &seq in &order[r as usize % 3] {
            net.start(r, seq, !(1u64 << (seq * 10 + r)), &[]);
            net.run(3); // interleave deliveries with starts
        }
    }
    net.run(100_000);
    for seq in 0..3u32 {
        let want = (0..n).fold(u64::MAX, |v, r| v & !(1u64 << (seq * 10 + r)));
        for r in 0..n as usize {
            assert_eq!(
                net.decision_of(r, seq).map(|d| d.value),
                Some(want),
                "rank {r} seq {seq}"
            );
        }
    }
    // A message for another communicator is refused by this one's engine.
    let other_key = CommKey {
        comm: CommId(10),
        epoch: Epoch(1),
    };
    let mut other = Era::new(Rank(1), n, other_key, EraConfig::default());
    let mut bytes = Vec::new();
    EraMsg::ResultRequest {
        known_failed: RankSet::new(),
    }
    .encode(KEY, 0, &mut bytes);
    let mut out = Vec::new();
    assert!(other.on_bytes(Rank(0), &bytes, &mut out).is_err());
}
