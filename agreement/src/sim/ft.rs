//! Simulation of the failure detector, suspicion propagation and revoke together.
//!
//! Crashes here are silent: nobody is notified, the heartbeat ring must find them, and
//! the reliable broadcast must spread each suspicion. Processes may also stall (be
//! descheduled) for a while. Checked on every run: each crash is suspected by every
//! survivor within its bound; with jitter and stalls below the detector's margin nobody
//! alive is suspected; every survivor sees the revoke; revoke messages stay O(n log n).

use super::queue::RadixQueue;
use super::{NetModel, SimRng, Violation};
use crate::bcast::{BcastAction, Broadcaster, Topic};
use crate::detector::{Detector, DetectorAction, DetectorConfig};
use crate::types::{CommId, CommKey, Epoch, Rank};
use crate::wire::FtMsg;

const KEY: CommKey = CommKey {
    comm: CommId(0),
    epoch: Epoch(0),
};

/// One run of the detector and broadcast.
#[derive(Clone, Debug)]
pub struct FtScenario {
    /// Seed of every random choice.
    pub seed: u64,
    /// Group size.
    pub ranks: u32,
    /// Network model.
    pub net: NetModel,
    /// Detector timing.
    pub detector: DetectorConfig,
    /// Silent crashes: (rank, time).
    pub crashes: Vec<(Rank, u64)>,
    /// Stalls: (rank, start, duration) during which the process handles nothing.
    pub stalls: Vec<(Rank, u64, u64)>,
    /// Who revokes, and when.
    pub revoke: Option<(Rank, u64)>,
    /// Whether jitter and stalls stay below the detector's margin (no false suspicion
    /// allowed).
    pub within_margin: bool,
}

impl FtScenario {
    /// A random scenario: 2 to `max_ranks` processes, up to n/2 crashes (sometimes
    /// neighbours in a row), stalls, a revoke from a random rank.
    pub fn random(seed: u64, max_ranks: u32) -> Self {
        let mut rng = SimRng::new(seed ^ 0x00de_7ec7);
        let ranks = rng.range(2, max_ranks.max(2) as u64) as u32;
        let detector = DetectorConfig::new(10_000, 50_000);
        let mut net = NetModel::default();
        let within_margin = rng.chance(0.8);
        let margin = detector.timeout_ns - detector.period_ns - net.latency_ns;
        net.jitter_ns = if within_margin {
            rng.range(0, margin / 3)
        } else {
            rng.range(margin, 3 * margin)
        };
        let horizon = 200_000;
        let count = rng.range(0, (ranks / 2) as u64) as u32;
        let mut crashes: Vec<(Rank, u64)> = Vec::new();
        let first = rng.below(ranks as u64) as u32;
        let in_a_row = rng.chance(0.3);
        for i in 0..count {
            let r = if in_a_row {
                (first + i) % ranks
            } else {
                rng.below(ranks as u64) as u32
            };
            if !crashes.iter().any(|c| c.0 .0 == r) {
                crashes.push((Rank(r), rng.range(1, horizon)));
            }
        }
        let stall_max = if within_margin {
            margin / 3
        } else {
            4 * detector.timeout_ns
        };
        let stalls = (0..rng.range(0, 4))
            .map(|_| {
                let r = Rank(rng.below(ranks as u64) as u32);
                (r, rng.range(1, horizon), rng.range(0, stall_max))
            })
            .collect();
        let revoke = Some((Rank(rng.below(ranks as u64) as u32), rng.range(0, horizon)));
        FtScenario {
            seed,
            ranks,
            net,
            detector,
            crashes,
            stalls,
            revoke,
            within_margin,
        }
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct FtRun {
    /// The scenario.
    pub scenario: FtScenario,
    /// Per process: alive at the end (not crashed, not excluded).
    pub alive: Vec<bool>,
    /// Per process: excluded after a suspicion of itself.
    pub excluded: Vec<bool>,
    /// Per process: (suspected rank, time of delivery) in order.
    pub suspicions: Vec<Vec<(Rank, u64)>>,
    /// Per process: revoke delivery (time, hops).
    pub revoked: Vec<Option<(u64, u32)>>,
    /// Whether the revoke was issued (its origin was still running at that time).
    pub revoke_issued: bool,
    /// Messages carrying the revoke.
    pub revoke_messages: u64,
    /// All messages (heartbeats included).
    pub messages: u64,
}

impl FtRun {
    /// Largest hop count at which a survivor received the revoke.
    pub fn revoke_hops(&self) -> u32 {
        (0..self.alive.len())
            .filter(|&r| self.alive[r])
            .filter_map(|r| self.revoked[r].map(|(_, h)| h))
            .max()
            .unwrap_or(0)
    }

    /// Largest delay from a crash to its suspicion at a survivor.
    pub fn max_detection_ns(&self) -> u64 {
        let mut worst = 0;
        for &(c, at) in &self.scenario.crashes {
            for (r, s) in self.suspicions.iter().enumerate() {
                if self.alive[r] {
                    if let Some(&(_, t)) = s.iter().find(|(x, _)| *x == c) {
                        worst = worst.max(t.saturating_sub(at));
                    }
                }
            }
        }
        worst
    }
}

enum Ev {
    Tick {
        rank: u32,
        gen: u64,
    },
    Deliver {
        from: u32,
        to: u32,
        hops: u32,
        bytes: Box<[u8]>,
    },
    Crash(u32),
    Revoke(u32),
    Stall {
        rank: u32,
        until: u64,
    },
}

struct Proc {
    det: Detector,
    bc: Broadcaster,
    alive: bool,
    excluded: bool,
    gen: u64,
    scheduled: u64,
    stalled_until: u64,
    nic_free_at: u64,
    hops: u32,
    suspicions: Vec<(Rank, u64)>,
    revoked: Option<(u64, u32)>,
}

/// Runs an [`FtScenario`] until every crash had time to be found and spread, then lets
/// the messages in flight settle.
pub fn run_ft(s: &FtScenario) -> FtRun {
    let mut rng = SimRng::new(s.seed);
    let mut q: RadixQueue<Ev> = RadixQueue::new();
    let mut order = 0u64;
    let mut push = |q: &mut RadixQueue<Ev>, at: u64, ev: Ev| {
        order += 1;
        q.push(((at as u128) << 64) | order as u128, ev);
    };
    let mut procs: Vec<Proc> = (0..s.ranks)
        .map(|r| Proc {
            det: Detector::new(Rank(r), s.ranks, s.detector)
                .expect("the scenario's detector configuration is valid"),
            bc: Broadcaster::new(Rank(r), s.ranks),
            alive: true,
            excluded: false,
            gen: 0,
            scheduled: 0,
            stalled_until: 0,
            nic_free_at: 0,
            hops: 0,
            suspicions: Vec::new(),
            revoked: None,
        })
        .collect();
    for r in 0..s.ranks {
        push(&mut q, 0, Ev::Tick { rank: r, gen: 0 });
    }
    for &(r, t) in &s.crashes {
        push(&mut q, t, Ev::Crash(r.0));
    }
    for &(r, t, d) in &s.stalls {
        push(
            &mut q,
            t,
            Ev::Stall {
                rank: r.0,
                until: t + d,
            },
        );
    }
    if let Some((r, t)) = s.revoke {
        push(&mut q, t, Ev::Revoke(r.0));
    }
    let last = s.crashes.iter().map(|c| c.1).max().unwrap_or(0);
    let last = last.max(s.stalls.iter().map(|x| x.1 + x.2).max().unwrap_or(0));
    let horizon = last + (s.crashes.len() as u64 + 3) * (s.detector.timeout_ns * 2) + 1_000_000;
    let (mut messages, mut revoke_messages, mut revoke_issued) = (0u64, 0u64, false);
    let mut det_out = Vec::new();
    let mut bc_out = Vec::new();
    let mut started = vec![false; s.ranks as usize];
    while let Some((key, ev)) = q.pop() {
        let now = (key >> 64) as u64;
        // Past the horizon time stops (no ticks, so no new heartbeats or suspicions)
        // and the messages in flight settle.
        if now > horizon && matches!(ev, Ev::Tick { .. }) {
            continue;
        }
        let rank = match &ev {
            Ev::Tick { rank, .. } | Ev::Crash(rank) | Ev::Revoke(rank) => *rank,
            Ev::Deliver { to, .. } => *to,
            Ev::Stall { rank, .. } => *rank,
        };
        let p = &mut procs[rank as usize];
        if !p.alive {
            continue;
        }
        if p.stalled_until > now {
            let at = p.stalled_until;
            push(&mut q, at, ev);
            continue;
        }
        det_out.clear();
        bc_out.clear();
        match ev {
            Ev::Crash(_) => {
                p.alive = false;
                continue;
            }
            Ev::Stall { until, .. } => {
                p.stalled_until = until;
                continue;
            }
            Ev::Tick { gen, .. } => {
                if gen != p.gen {
                    continue;
                }
                if started[rank as usize] {
                    p.det.tick(now, &mut det_out);
                } else {
                    started[rank as usize] = true;
                    p.det.start(now, &mut det_out);
                }
            }
            Ev::Revoke(_) => {
                revoke_issued = true;
                p.bc.originate(Topic::Revoke, &mut bc_out)
            }
            Ev::Deliver {
                from, hops, bytes, ..
            } => {
                p.hops = hops;
                match FtMsg::decode(&bytes, s.ranks)
                    .expect("simulated bytes decode")
                    .1
                {
                    FtMsg::Heartbeat => p.det.on_heartbeat(Rank(from), now),
                    FtMsg::Observe => p.det.on_observe(Rank(from), now, &mut det_out),
                    FtMsg::Bcast(t) => p.bc.on_message(Rank(from), t, &mut bc_out),
                    FtMsg::PairValue(_) | FtMsg::PairAck => {}
                }
            }
        }
        // Detector and broadcast feed each other until both are quiet.
        let mut sends: Vec<(u32, FtMsg)> = Vec::new();
        while !det_out.is_empty() || !bc_out.is_empty() {
            for a in std::mem::take(&mut det_out) {
                match a {
                    DetectorAction::Heartbeat { to } => sends.push((to.0, FtMsg::Heartbeat)),
                    DetectorAction::Observe { to } => sends.push((to.0, FtMsg::Observe)),
                    DetectorAction::Suspect(rank) => {
                        let topic = Topic::Suspicion {
                            rank,
                            incarnation: 0,
                        };
                        p.bc.originate(topic, &mut bc_out)
                    }
                    DetectorAction::Excluded => p.excluded = true,
                }
            }
            for a in std::mem::take(&mut bc_out) {
                match a {
                    BcastAction::Send { to, topic } => sends.push((to.0, FtMsg::Bcast(topic))),
                    BcastAction::Deliver(Topic::Revoke) => p.revoked = Some((now, p.hops)),
                    BcastAction::Deliver(Topic::Suspicion { rank: r, .. }) => {
                        p.suspicions.push((r, now));
                        p.det.on_failure(r, now, &mut det_out);
                        p.bc.on_failure(r, &mut bc_out);
                    }
                }
            }
        }
        for (to, msg) in sends {
            let depart = now.max(p.nic_free_at) + s.net.overhead_ns;
            p.nic_free_at = depart;
            let at = depart + s.net.latency_ns + rng.range(0, s.net.jitter_ns);
            messages += 1;
            if msg == FtMsg::Bcast(Topic::Revoke) {
                revoke_messages += 1;
            }
            let mut buf = Vec::with_capacity(24);
            msg.encode(KEY, 0, &mut buf);
            let hops = p.hops + 1;
            push(
                &mut q,
                at,
                Ev::Deliver {
                    from: rank,
                    to,
                    hops,
                    bytes: buf.into_boxed_slice(),
                },
            );
        }
        if p.excluded {
            p.alive = false;
            continue;
        }
        let deadline = p.det.next_deadline().max(now);
        if deadline < p.scheduled || p.scheduled <= now {
            p.gen += 1;
            p.scheduled = deadline;
            let gen = p.gen;
            push(&mut q, deadline, Ev::Tick { rank, gen });
        }
    }
    FtRun {
        scenario: s.clone(),
        alive: procs.iter().map(|p| p.alive).collect(),
        excluded: procs.iter().map(|p| p.excluded).collect(),
        suspicions: procs.iter().map(|p| p.suspicions.clone()).collect(),
        revoked: procs.iter().map(|p| p.revoked).collect(),
        revoke_issued,
        revoke_messages,
        messages,
    }
}

/// Checks a detector/broadcast run.
///
/// # Errors
/// The first property violated.
pub fn check_ft(run: &FtRun) -> Result<(), Violation> {
    let s = &run.scenario;
    let fail = |what: String| Violation {
        seed: s.seed,
        ranks: s.ranks,
        what,
    };
    let n = s.ranks as usize;
    let log = (s.ranks as f64).log2().ceil().max(1.0) as u64;
    let hop_ns = s.net.latency_ns + s.net.jitter_ns + s.net.overhead_ns * (2 * log + 2);
    let crashed = |r: u32| s.crashes.iter().any(|c| c.0 .0 == r);
    for r in 0..n {
        if !run.alive[r] {
            continue;
        }
        for &(c, at) in &s.crashes {
            // A run of consecutive crashed ranks ending at c's watcher is found one
            // timeout after the other.
            let mut chain = 1u64;
            let mut latest = at;
            let mut next = (c.0 + 1) % s.ranks;
            while crashed(next) && next != c.0 {
                chain += 1;
                latest = latest.max(s.crashes.iter().find(|x| x.0 .0 == next).unwrap().1);
                next = (next + 1) % s.ranks;
            }
            let stalls: u64 = s.stalls.iter().map(|x| x.2).sum();
            let bound = latest
                + chain * (s.detector.timeout_ns + s.detector.period_ns + 2 * hop_ns)
                + (2 * log + 2) * hop_ns
                + stalls;
            match run.suspicions[r].iter().find(|(x, _)| *x == c) {
                None => return Err(fail(format!("rank {r} never suspected crashed rank {c}"))),
                Some(&(_, t)) if t > bound => {
                    return Err(fail(format!(
                        "rank {r} suspected {c} {} ns after its crash, bound {} ns",
                        t - at,
                        bound - at
                    )))
                }
                Some(_) => {}
            }
        }
        if s.within_margin {
            if let Some((x, _)) = run.suspicions[r].iter().find(|(x, _)| !crashed(x.0)) {
                return Err(fail(format!(
                    "rank {r} suspected live rank {x} with jitter within the margin"
                )));
            }
        }
        if run.revoke_issued && run.revoked[r].is_none() {
            return Err(fail(format!("rank {r} was not revoked")));
        }
    }
    // Anyone suspected who was alive must have stopped (excluded), not carried on.
    for r in 0..n {
        let suspected = run
            .suspicions
            .iter()
            .any(|v| v.iter().any(|(x, _)| x.0 as usize == r));
        if suspected && run.alive[r] {
            return Err(fail(format!("rank {r} was suspected but kept running")));
        }
    }
    let bound = 2 * n as u64 * log + 4 * n as u64 * (s.crashes.len() as u64 + 1);
    if run.revoke_messages > bound {
        return Err(fail(format!(
            "revoke took {} messages, more than {bound}",
            run.revoke_messages
        )));
    }
    Ok(())
}
