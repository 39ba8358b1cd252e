//! Reliable broadcast over a binomial graph (BMG), used by revoke and by failure
//! propagation.
//!
//! The neighbours of rank `i` in a group of `n` are `i ± 2^k mod n` for every `2^k < n`.
//! When a distance-1 neighbour is known dead, the next live rank on that side replaces
//! it, so the ring (and with it the graph) stays connected whatever fails. A process
//! forwards a topic only on its first receipt: the first flip of the topic's flag is the
//! dedup. When a ring neighbour dies and is replaced, every topic already delivered is
//! sent to the replacement, so a broadcast survives the death of a forwarder that had
//! not passed it on.
//!
//! Reference: Angskun, Bosilca, Dongarra, "Binomial graph: a scalable and fault-tolerant
//! logical network topology", ISPA 2007; Bosilca et al., "Failure detection and
//! propagation in HPC systems", SC'16.

use crate::types::{Rank, RankSet};

/// What is being broadcast. Each topic is delivered at most once per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Topic {
    /// The communicator this broadcaster serves is revoked.
    Revoke,
    /// `rank`'s incarnation `incarnation` is suspected of having failed (a final
    /// verdict about that incarnation; a rank restarted in place is a later one, see
    /// `docs/restart.md`).
    Suspicion {
        /// The suspected rank.
        rank: Rank,
        /// Which of its incarnations (0 for a rank never restarted).
        incarnation: u32,
    },
}

/// What the caller must do after a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BcastAction {
    /// Send `topic` to `to`.
    Send {
        /// Destination.
        to: Rank,
        /// The topic.
        topic: Topic,
    },
    /// `topic` is delivered here for the first time: act on it (revoke the
    /// communicator, mark the rank failed).
    Deliver(Topic),
}

/// The broadcast engine of one process for one group.
#[derive(Debug)]
pub struct Broadcaster {
    me: Rank,
    n: u32,
    dead: RankSet,
    revoked: bool,
    suspected: RankSet,
    /// Rank -> the latest incarnation suspected or readmitted here (0 past the end):
    /// a suspicion of an earlier one is stale. Grows only when a rank restarts.
    incarnations: Vec<u32>,
    /// The current distance-1 neighbours (successor, predecessor).
    ring: (Option<Rank>, Option<Rank>),
    scratch: Vec<Rank>,
}

impl Broadcaster {
    /// The broadcaster of rank `me` in a group of `n`.
    ///
    /// # Panics
    /// If `me` is not below `n`.
    pub fn new(me: Rank, n: u32) -> Self {
        assert!(me.0 < n, "rank {me} outside a group of {n}");
        let mut b = Broadcaster {
            me,
            n,
            dead: RankSet::new(),
            revoked: false,
            suspected: RankSet::new(),
            incarnations: Vec::new(),
            ring: (None, None),
            scratch: Vec::new(),
        };
        b.ring = b.ring_neighbours();
        b
    }

    /// Whether the revoke has been delivered here.
    pub fn is_revoked(&self) -> bool {
        self.revoked
    }

    /// Ranks whose suspicion has been delivered here.
    pub fn suspected(&self) -> &RankSet {
        &self.suspected
    }

    /// Starts broadcasting `topic` from here (delivered locally at once). A suspicion
    /// also goes to the suspect itself: the others skip it from now on, and if it is in
    /// fact alive it must learn that it was excluded.
    pub fn originate(&mut self, topic: Topic, out: &mut Vec<BcastAction>) {
        if self.flip(topic) {
            out.push(BcastAction::Deliver(topic));
            self.forward(topic, None, out);
            if let Topic::Suspicion { rank, .. } = topic {
                if rank != self.me {
                    out.push(BcastAction::Send { to: rank, topic });
                }
            }
        }
    }

    /// `topic` received from `from`: delivered and forwarded on first receipt only.
    pub fn on_message(&mut self, from: Rank, topic: Topic, out: &mut Vec<BcastAction>) {
        if from.0 >= self.n {
            return;
        }
        if let Topic::Suspicion { rank, .. } = topic {
            if rank.0 >= self.n {
                return;
            }
        }
        if self.flip(topic) {
            out.push(BcastAction::Deliver(topic));
            self.forward(topic, Some(from), out);
        }
    }

    /// `rank` is known dead: it is skipped from now on; if it was a ring neighbour, its
    /// replacement receives every topic delivered so far.
    pub fn on_failure(&mut self, rank: Rank, out: &mut Vec<BcastAction>) {
        if rank == self.me || rank.0 >= self.n || !self.dead.insert(rank) {
            return;
        }
        let old = self.ring;
        self.ring = self.ring_neighbours();
        for new in [self.ring.0, self.ring.1].into_iter().flatten() {
            if Some(new) == old.0 || Some(new) == old.1 {
                continue;
            }
            if self.revoked {
                out.push(BcastAction::Send {
                    to: new,
                    topic: Topic::Revoke,
                });
            }
            for s in self.suspected.iter() {
                out.push(BcastAction::Send {
                    to: new,
                    topic: Topic::Suspicion {
                        rank: s,
                        incarnation: self.incarnation(s),
                    },
                });
            }
        }
    }

    /// Incarnation `incarnation` of the dead `rank` joined (a restart in place): it is
    /// a neighbour again, and a later suspicion of it is news, while one of an earlier
    /// incarnation (late, or resent by a forwarder's repair) is dropped. Nothing is
    /// sent: the joined process learnt the failures known so far when it started.
    pub fn readmit(&mut self, rank: Rank, incarnation: u32) {
        if rank == self.me || rank.0 >= self.n || incarnation <= self.incarnation(rank) {
            return;
        }
        self.set_incarnation(rank, incarnation);
        self.suspected.remove(rank);
        self.dead.remove(rank);
        self.ring = self.ring_neighbours();
    }

    /// The latest incarnation of `rank` suspected or readmitted here.
    fn incarnation(&self, rank: Rank) -> u32 {
        self.incarnations.get(rank.index()).copied().unwrap_or(0)
    }

    fn set_incarnation(&mut self, rank: Rank, incarnation: u32) {
        let i = rank.index();
        if self.incarnations.len() <= i {
            self.incarnations.resize(i + 1, 0);
        }
        self.incarnations[i] = incarnation;
    }

    /// Marks `topic` delivered; true on the first time. A suspicion is new when it is
    /// about a later incarnation than the one known here, or about the known one not
    /// suspected yet.
    fn flip(&mut self, topic: Topic) -> bool {
        match topic {
            Topic::Revoke => !std::mem::replace(&mut self.revoked, true),
            Topic::Suspicion { rank, incarnation } => {
                let known = self.incarnation(rank);
                if incarnation < known || (incarnation == known && self.suspected.contains(rank)) {
                    return false;
                }
                if incarnation > known {
                    self.set_incarnation(rank, incarnation);
                }
                self.suspected.insert(rank);
                true
            }
        }
    }

    fn forward(&mut self, topic: Topic, from: Option<Rank>, out: &mut Vec<BcastAction>) {
        let mut targets = std::mem::take(&mut self.scratch);
        self.neighbours(&mut targets);
        for &to in &targets {
            if Some(to) != from {
                out.push(BcastAction::Send { to, topic });
            }
        }
        self.scratch = targets;
    }

    /// The live neighbours: `me ± 2^k` for `k >= 1`, plus the repaired ring neighbours.
    pub fn neighbours(&self, out: &mut Vec<Rank>) {
        out.clear();
        let (n, me) = (self.n as u64, self.me.0 as u64);
        let add = |r: Rank, out: &mut Vec<Rank>| {
            if r != self.me && !self.dead.contains(r) && !out.contains(&r) {
                out.push(r);
            }
        };
        for r in [self.ring.0, self.ring.1].into_iter().flatten() {
            add(r, out);
        }
        let mut d = 2u64;
        while d < n {
            add(Rank(((me + d) % n) as u32), out);
            add(Rank(((me + n - d) % n) as u32), out);
            d <<= 1;
        }
    }

    fn ring_neighbours(&self) -> (Option<Rank>, Option<Rank>) {
        let n = self.n;
        let live = |r: u32| !self.dead.contains(Rank(r));
        let succ = (1..n).map(|k| (self.me.0 + k) % n).find(|&r| live(r));
        let pred = (1..n).map(|k| (self.me.0 + n - k) % n).find(|&r| live(r));
        (succ.map(Rank), pred.map(Rank))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Floods one revoke from `origin` with `dead` ranks already dead and known; returns
    /// (delivered at every live rank, messages, max hops).
    fn flood(n: u32, origin: u32, dead: &[u32]) -> (bool, usize, u32) {
        let mut b: Vec<Broadcaster> = (0..n).map(|r| Broadcaster::new(Rank(r), n)).collect();
        let mut out = Vec::new();
        for r in 0..n {
            for &d in dead {
                b[r as usize].on_failure(Rank(d), &mut out);
            }
        }
        out.clear();
        let mut hops = vec![0u32; n as usize];
        let mut q = VecDeque::new();
        b[origin as usize].originate(Topic::Revoke, &mut out);
        let mut msgs = 0;
        for a in out.drain(..) {
            if let BcastAction::Send { to, topic } = a {
                q.push_back((origin, to.0, topic, 1));
            }
        }
        while let Some((from, to, topic, h)) = q.pop_front() {
            msgs += 1;
            if dead.contains(&to) {
                continue;
            }
            b[to as usize].on_message(Rank(from), topic, &mut out);
            for a in out.drain(..) {
                match a {
                    BcastAction::Send { to: t, topic } => q.push_back((to, t.0, topic, h + 1)),
                    BcastAction::Deliver(_) => hops[to as usize] = h,
                }
            }
        }
        let all = (0..n).all(|r| dead.contains(&r) || b[r as usize].is_revoked());
        (all, msgs, hops.into_iter().max().unwrap())
    }

    #[test]
    fn neighbours_are_powers_of_two_apart() {
        let b = Broadcaster::new(Rank(0), 16);
        let mut v = Vec::new();
        b.neighbours(&mut v);
        v.sort();
        let expect: Vec<Rank> = [1, 2, 4, 8, 12, 14, 15].into_iter().map(Rank).collect();
        assert_eq!(v, expect);
    }

    #[test]
    fn revoke_reaches_everyone_in_log_hops() {
        for n in [2u32, 3, 7, 64, 1000] {
            let (all, msgs, hops) = flood(n, n / 3, &[]);
            assert!(all, "n {n}");
            let log = 32 - (n - 1).leading_zeros();
            assert!(hops <= log, "n {n}: {hops} hops");
            assert!(
                msgs <= (2 * log as usize) * n as usize,
                "n {n}: {msgs} messages"
            );
        }
    }

    #[test]
    fn ring_repair_keeps_the_graph_connected() {
        // Every power-of-two neighbour of 0 dead except the ring walk: still delivered.
        let dead = [1, 2, 4, 8, 15, 14, 12];
        let (all, _, _) = flood(16, 0, &dead);
        assert!(all);
    }

    fn suspicion(rank: u32, incarnation: u32) -> Topic {
        Topic::Suspicion {
            rank: Rank(rank),
            incarnation,
        }
    }

    #[test]
    fn replacement_neighbour_gets_what_was_delivered() {
        let mut b = Broadcaster::new(Rank(5), 8);
        let mut out = Vec::new();
        b.originate(suspicion(2, 0), &mut out);
        out.clear();
        b.on_failure(Rank(6), &mut out);
        assert_eq!(
            out,
            vec![BcastAction::Send {
                to: Rank(7),
                topic: suspicion(2, 0)
            }]
        );
        // Second receipt: not delivered again, not forwarded.
        out.clear();
        b.on_message(Rank(1), suspicion(2, 0), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn a_readmitted_rank_is_suspected_again_only_in_its_new_incarnation() {
        let mut b = Broadcaster::new(Rank(5), 8);
        let mut out = Vec::new();
        b.originate(suspicion(6, 0), &mut out);
        b.on_failure(Rank(6), &mut out);
        assert_eq!(b.ring, (Some(Rank(7)), Some(Rank(4))));
        b.readmit(Rank(6), 1);
        assert_eq!(b.ring, (Some(Rank(6)), Some(Rank(4))), "a neighbour again");
        assert!(!b.suspected().contains(Rank(6)));
        // The dead incarnation's suspicion, late or resent by a repair: dropped.
        out.clear();
        b.on_message(Rank(1), suspicion(6, 0), &mut out);
        assert!(out.is_empty());
        // The new incarnation's failure is news, sent to it as well.
        b.originate(suspicion(6, 1), &mut out);
        assert_eq!(out[0], BcastAction::Deliver(suspicion(6, 1)));
        assert!(out.contains(&BcastAction::Send {
            to: Rank(6),
            topic: suspicion(6, 1)
        }));
        out.clear();
        b.on_message(Rank(1), suspicion(6, 1), &mut out);
        assert!(out.is_empty(), "delivered once");
        // A later incarnation never admitted here supersedes a suspected one.
        b.on_message(Rank(1), suspicion(6, 2), &mut out);
        assert_eq!(out[0], BcastAction::Deliver(suspicion(6, 2)));
        // Readmitting an incarnation not later than the known one changes nothing.
        b.readmit(Rank(6), 2);
        assert!(b.suspected().contains(Rank(6)));
    }
}
