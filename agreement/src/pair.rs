//! Two-party agreement: the AGREE the two leaders run while creating a uniform
//! inter-communicator.
//!
//! Each side sends its flag, acknowledges the peer's flag, and decides the AND once it
//! holds the peer's flag *and* the peer's acknowledgement of its own. If the peer fails,
//! the survivor still decides: the AND when it holds the peer's flag (the peer may have
//! decided that), `false` otherwise (the peer cannot have decided: it lacked our
//! acknowledgement). So a process that decided before dying never decided differently
//! from the survivor.

use crate::types::Rank;

/// What the caller must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairAction {
    /// Send our flag to the peer.
    SendValue(bool),
    /// Acknowledge the peer's flag.
    SendAck,
    /// Decided.
    Decided {
        /// The agreed flag.
        value: bool,
        /// Whether the peer failed during the agreement.
        peer_failed: bool,
    },
}

/// One side of a two-party agreement.
#[derive(Debug, Clone)]
pub struct PairAgreement {
    peer: Rank,
    mine: Option<bool>,
    theirs: Option<bool>,
    acked: bool,
    peer_failed: bool,
    decided: Option<bool>,
}

impl PairAgreement {
    /// An agreement with `peer`.
    pub fn new(peer: Rank) -> Self {
        PairAgreement {
            peer,
            mine: None,
            theirs: None,
            acked: false,
            peer_failed: false,
            decided: None,
        }
    }

    /// The decision, once made.
    pub fn decided(&self) -> Option<bool> {
        self.decided
    }

    /// Contributes our flag.
    pub fn start(&mut self, flag: bool, out: &mut Vec<PairAction>) {
        if self.mine.is_some() {
            return;
        }
        self.mine = Some(flag);
        out.push(PairAction::SendValue(flag));
        self.try_decide(out);
    }

    /// The peer's flag arrived.
    pub fn on_value(&mut self, from: Rank, flag: bool, out: &mut Vec<PairAction>) {
        if from != self.peer || self.theirs.is_some() {
            return;
        }
        self.theirs = Some(flag);
        out.push(PairAction::SendAck);
        self.try_decide(out);
    }

    /// The peer acknowledged our flag.
    pub fn on_ack(&mut self, from: Rank, out: &mut Vec<PairAction>) {
        if from == self.peer && self.mine.is_some() {
            self.acked = true;
            self.try_decide(out);
        }
    }

    /// The peer failed.
    pub fn on_failure(&mut self, rank: Rank, out: &mut Vec<PairAction>) {
        if rank != self.peer || self.decided.is_some() {
            return;
        }
        if let Some(mine) = self.mine {
            let value = mine && self.theirs.unwrap_or(false);
            self.decided = Some(value);
            out.push(PairAction::Decided {
                value,
                peer_failed: true,
            });
        } else {
            // Decide when we contribute: the peer cannot have decided (it never had
            // our flag), so `false` is safe.
            self.theirs = Some(false);
            self.acked = true;
            self.peer_failed = true;
        }
    }

    fn try_decide(&mut self, out: &mut Vec<PairAction>) {
        if let (None, Some(m), Some(t), true) = (self.decided, self.mine, self.theirs, self.acked) {
            self.decided = Some(m && t);
            out.push(PairAction::Decided {
                value: m && t,
                peer_failed: self.peer_failed,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimRng;

    #[derive(Clone, Copy, Debug)]
    enum Msg {
        Value(bool),
        Ack,
    }

    /// Random interleavings with a crash of either side after a random number of steps:
    /// a side that decided before crashing agrees with the survivor, and the survivor
    /// always decides.
    #[test]
    fn crash_anywhere_never_splits_the_decision() {
        for seed in 0..20_000u64 {
            let mut rng = SimRng::new(seed);
            let flags = [rng.chance(0.7), rng.chance(0.7)];
            let mut sides = [PairAgreement::new(Rank(1)), PairAgreement::new(Rank(0))];
            let victim = rng.below(3) as usize; // 2 = nobody
            let crash_after = rng.below(6);
            let mut inflight: Vec<(usize, Msg)> = Vec::new();
            let mut started = [false; 2];
            let mut alive = [true; 2];
            let mut steps = 0;
            let mut out = Vec::new();
            loop {
                if victim < 2 && alive[victim] && steps == crash_after {
                    alive[victim] = false;
                    out.clear();
                    sides[1 - victim].on_failure(Rank(victim as u32), &mut out);
                    inflight.retain(|(to, _)| *to != victim);
                }
                let mut choices: Vec<usize> = (0..2).filter(|&s| alive[s] && !started[s]).collect();
                choices.extend((0..inflight.len()).map(|i| i + 2));
                if choices.is_empty() {
                    break;
                }
                let pick = choices[rng.below(choices.len() as u64) as usize];
                out.clear();
                let at = if pick < 2 {
                    started[pick] = true;
                    sides[pick].start(flags[pick], &mut out);
                    pick
                } else {
                    let (to, msg) = inflight.swap_remove(pick - 2);
                    let from = Rank(1 - to as u32);
                    match msg {
                        Msg::Value(v) => sides[to].on_value(from, v, &mut out),
                        Msg::Ack => sides[to].on_ack(from, &mut out),
                    }
                    to
                };
                for a in &out {
                    let other = 1 - at;
                    match *a {
                        PairAction::SendValue(v) if alive[other] => {
                            inflight.push((other, Msg::Value(v)))
                        }
                        PairAction::SendAck if alive[other] => inflight.push((other, Msg::Ack)),
                        _ => {}
                    }
                }
                steps += 1;
            }
            let survivors: Vec<usize> = (0..2).filter(|&s| alive[s]).collect();
            for &s in &survivors {
                assert!(
                    sides[s].decided().is_some(),
                    "seed {seed}: side {s} undecided"
                );
            }
            let decided: Vec<bool> = sides.iter().filter_map(|s| s.decided()).collect();
            assert!(
                decided.windows(2).all(|w| w[0] == w[1]),
                "seed {seed}: split"
            );
            if survivors.len() == 2 {
                assert_eq!(decided, vec![flags[0] && flags[1]; 2], "seed {seed}");
            }
        }
    }
}
