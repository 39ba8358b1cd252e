//! Deterministic discrete-event simulator for the agreement.
//!
//! One [`Scenario`] (and its seed) fixes everything: process start times, message delays
//! and reordering, failure-notice delays, the crash schedule. Every run ends with the
//! property checks of [`check`]; a failing run names its seed, and running the same
//! scenario again replays it exactly.
//!
//! Processes exchange real encoded bytes: each message goes through [`crate::wire`] and
//! [`Era::on_bytes`], as in the runtime.
//!
//! Whole runtime scenarios run the control plane ([`crate::control`]) rather than ERA
//! alone: [`control`] (agreements, a revoke, the shrink loop, the two-party exchange),
//! [`intercomm`] (uniform inter-communicator creation with crashes at every stage) and
//! [`concurrent`] (many operations in flight on overlapping communicators), the last two
//! over the network of `net.rs`.

mod check;
pub mod concurrent;
pub mod control;
mod ft;
pub mod intercomm;
mod net;
mod queue;
mod rng;
mod scenario;

pub use check::{check, nonuniform_deciders, Violation};
pub use ft::{check_ft, run_ft, FtRun, FtScenario};
pub use rng::{mix, SimRng};
pub use scenario::{Crash, CrashTrigger, NetModel, Scenario};

/// The seeds a sweep runs: `STEADFAST_SIM_SEED=S` replays seed `S` alone;
/// `STEADFAST_SIM_SEEDS=N` runs seeds `0..N`; else `0..default`. Every sweep test
/// (`agreement/tests/*_sweep.rs`) takes its seeds from here.
///
/// ```
/// for seed in steadfast_agreement::sim::sweep_seeds(3) {
///     let _scenario = steadfast_agreement::sim::Scenario::random(seed, 8);
/// }
/// ```
pub fn sweep_seeds(default: u64) -> std::ops::Range<u64> {
    let var = |name: &str| std::env::var(name).ok().and_then(|s| s.parse::<u64>().ok());
    if let Some(one) = var("STEADFAST_SIM_SEED") {
        return one..one.saturating_add(1);
    }
    0..var("STEADFAST_SIM_SEEDS").unwrap_or(default)
}

use crate::era::{Decision, Era, EraAction, EraConfig};
use crate::types::{CommId, CommKey, Epoch, Rank, RankSet, Seq};
use queue::RadixQueue;
use std::collections::HashMap;

/// Communicator key used by simulated runs.
pub const SIM_KEY: CommKey = CommKey {
    comm: CommId(1),
    epoch: Epoch(0),
};

/// The value process `rank` contributes to agreement `seq` in a run seeded `seed`: all
/// ones but one random bit (all ones for one process in eight), so the checker can tell
/// whose contributions a decision includes.
pub fn contribution_value(seed: u64, rank: Rank, seq: Seq) -> u64 {
    let h = mix(seed, ((rank.0 as u64) << 32) | seq as u64);
    if h % 8 == 0 {
        u64::MAX
    } else {
        !(1u64 << (h >> 58))
    }
}

/// What happened to one process in a run.
#[derive(Debug)]
pub struct ProcRecord {
    /// Whether it was still alive at the end.
    pub alive: bool,
    /// Failures it acknowledged when it started each agreement (`None`: never started).
    pub acked: Vec<Option<RankSet>>,
    /// Its decision of each agreement, if it decided.
    pub decided: Vec<Option<Decision>>,
    /// Causal depth (message hops) at which it decided the first agreement.
    pub decide_depth: Option<u32>,
    /// Simulated time at which it decided the first agreement.
    pub decide_time_ns: Option<u64>,
    /// Messages it sent.
    pub sent: u64,
}

/// The outcome of a run, before or after checking.
#[derive(Debug)]
pub struct SimRun {
    /// The scenario run.
    pub scenario: Scenario,
    /// Per-process records.
    pub procs: Vec<ProcRecord>,
    /// Messages sent in total.
    pub messages: u64,
    /// Bytes sent in total.
    pub bytes: u64,
    /// Events handled.
    pub events: u64,
    /// Simulated time of the last event.
    pub sim_time_ns: u64,
    /// Whether the run stopped at its event bound (a livelock).
    pub hit_event_bound: bool,
    /// Messages the engines refused as malformed (must stay 0 here).
    pub malformed: u64,
}

impl SimRun {
    /// Critical-path length of the first agreement: the largest causal depth (in message
    /// hops) at which a surviving process decided it.
    pub fn rounds(&self) -> u32 {
        self.procs
            .iter()
            .filter(|p| p.alive)
            .filter_map(|p| p.decide_depth)
            .max()
            .unwrap_or(0)
    }

    /// Largest number of messages any one process sent.
    pub fn max_sent_per_process(&self) -> u64 {
        self.procs.iter().map(|p| p.sent).max().unwrap_or(0)
    }
}

enum Event {
    Crash(u32),
    Start {
        rank: u32,
        seq: Seq,
    },
    Notify {
        to: u32,
        failed: u32,
    },
    Deliver {
        from: u32,
        to: u32,
        depth: u32,
        bytes: Box<[u8]>,
    },
}

struct Proc {
    era: Era,
    alive: bool,
    events: u32,
    depth: u32,
    nic_free_at: u64,
    trigger: Option<CrashTrigger>,
    record: ProcRecord,
}

struct Sim {
    s: Scenario,
    rng: SimRng,
    procs: Vec<Proc>,
    queue: RadixQueue<Event>,
    order: u64,
    now: u64,
    last_arrival: HashMap<u64, u64>,
    messages: u64,
    bytes: u64,
    out: Vec<EraAction>,
}

/// Runs `scenario` to quiescence (no checks; see [`run_checked`]).
pub fn run(scenario: &Scenario) -> SimRun {
    let mut sim = Sim::new(scenario.clone());
    let bound = 400 * scenario.ranks as u64 * (scenario.agreements as u64 + 2)
        + 4 * scenario.ranks as u64 * scenario.crashes.len() as u64
        + 100_000;
    let mut events = 0u64;
    while let Some((key, event)) = sim.queue.pop() {
        events += 1;
        if events > bound {
            return sim.finish(events, true);
        }
        sim.now = (key >> 64) as u64;
        sim.handle(event);
    }
    sim.finish(events, false)
}

/// Runs `scenario` and checks every property on the result.
///
/// # Errors
/// The first [`Violation`] found; its message names the seed to replay.
pub fn run_checked(scenario: &Scenario) -> Result<SimRun, Violation> {
    let run = run(scenario);
    check(&run)?;
    Ok(run)
}

impl Sim {
    fn new(s: Scenario) -> Self {
        let mut rng = SimRng::new(s.seed);
        let config = EraConfig { shape: s.shape };
        let agreements = s.agreements as usize;
        let procs = (0..s.ranks)
            .map(|r| Proc {
                era: Era::new(Rank(r), s.ranks, SIM_KEY, config),
                alive: true,
                events: 0,
                depth: 0,
                nic_free_at: 0,
                trigger: None,
                record: ProcRecord {
                    alive: true,
                    acked: vec![None; agreements],
                    decided: vec![None; agreements],
                    decide_depth: None,
                    decide_time_ns: None,
                    sent: 0,
                },
            })
            .collect();
        let mut sim = Sim {
            rng: SimRng::new(0),
            procs,
            queue: RadixQueue::new(),
            order: 0,
            now: 0,
            last_arrival: HashMap::new(),
            messages: 0,
            bytes: 0,
            out: Vec::new(),
            s,
        };
        let starts: Vec<u64> = (0..sim.s.ranks)
            .map(|_| rng.range(0, sim.s.start_spread_ns))
            .collect();
        for c in sim.s.crashes.clone() {
            let r = c.rank.0;
            match c.trigger {
                CrashTrigger::AtTime(t) => sim.push(t, Event::Crash(r)),
                // Queued before the start event of the same time, so it pops first.
                CrashTrigger::BeforeStart => sim.push(starts[r as usize], Event::Crash(r)),
                t => sim.procs[r as usize].trigger = Some(t),
            }
        }
        for (r, &t) in starts.iter().enumerate() {
            sim.push(
                t,
                Event::Start {
                    rank: r as u32,
                    seq: 0,
                },
            );
        }
        sim.rng = rng;
        sim
    }

    fn push(&mut self, at: u64, event: Event) {
        // Key: time, then scheduling order, so equal times pop first-scheduled first.
        self.order += 1;
        self.queue
            .push(((at as u128) << 64) | self.order as u128, event);
    }

    fn handle(&mut self, event: Event) {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let rank = match &event {
            Event::Crash(r) => {
                self.crash(*r);
                self.out = out;
                return;
            }
            Event::Start { rank, .. } | Event::Notify { to: rank, .. } => *rank,
            Event::Deliver { to, .. } => *to,
        };
        let p = &mut self.procs[rank as usize];
        if !p.alive {
            self.out = out;
            return;
        }
        p.events += 1;
        match event {
            Event::Start { seq, .. } => {
                let mut acked = RankSet::new();
                for f in p.era.known_failed().iter() {
                    if self.rng.chance(self.s.ack_probability) {
                        acked.insert(f);
                    }
                }
                let value = contribution_value(self.s.seed, Rank(rank), seq);
                p.record.acked[seq as usize] = Some(acked.clone());
                p.era
                    .start(seq, value, &acked, &mut out)
                    .expect("each agreement starts once");
            }
            Event::Notify { failed, .. } => p.era.on_failure(Rank(failed), &mut out),
            Event::Deliver {
                from, depth, bytes, ..
            } => {
                p.depth = p.depth.max(depth);
                // Malformed input is counted by the engine and checked to be zero.
                let _ = p.era.on_bytes(Rank(from), &bytes, &mut out);
            }
            Event::Crash(_) => unreachable!(),
        }
        self.apply(rank, &mut out);
        self.out = out;
    }

    /// Carries out a step's actions, honouring a crash planned inside this step.
    fn apply(&mut self, rank: u32, out: &mut Vec<EraAction>) {
        let p = &self.procs[rank as usize];
        let decides_first = out
            .iter()
            .any(|a| matches!(a, EraAction::Decided { seq: 0, .. }));
        let sends_allowed = match p.trigger {
            Some(CrashTrigger::AfterEvents { count, sends_kept }) if p.events == count => {
                Some(sends_kept)
            }
            Some(CrashTrigger::AfterDecide { sends_kept }) if decides_first => Some(sends_kept),
            _ => None,
        };
        let mut sends = 0u32;
        for action in out.drain(..) {
            match action {
                EraAction::Send { to, seq, msg } => {
                    if sends_allowed.is_some_and(|k| sends >= k) {
                        continue;
                    }
                    sends += 1;
                    let mut buf = Vec::with_capacity(64);
                    msg.encode(SIM_KEY, seq, &mut buf);
                    self.send(rank, to.0, buf.into_boxed_slice());
                }
                EraAction::Decided { seq, decision } => {
                    let (now, agreements) = (self.now, self.s.agreements);
                    let p = &mut self.procs[rank as usize];
                    if seq == 0 {
                        p.record.decide_depth = Some(p.depth);
                        p.record.decide_time_ns = Some(now);
                    }
                    p.record.decided[seq as usize] = Some(decision);
                    if seq + 1 < agreements && p.record.acked[seq as usize].is_some() {
                        self.push(now, Event::Start { rank, seq: seq + 1 });
                    }
                }
                EraAction::Excluded { .. } => {}
            }
        }
        if sends_allowed.is_some() {
            self.crash(rank);
        }
    }

    fn send(&mut self, from: u32, to: u32, bytes: Box<[u8]>) {
        let net = self.s.net;
        let p = &mut self.procs[from as usize];
        let depart = self.now.max(p.nic_free_at) + net.overhead_ns;
        p.nic_free_at = depart;
        p.record.sent += 1;
        let depth = p.depth + 1;
        let mut arrive = depart + net.latency_ns + self.rng.range(0, net.jitter_ns);
        if net.fifo_pairs {
            let key = ((from as u64) << 32) | to as u64;
            let last = self.last_arrival.entry(key).or_insert(0);
            arrive = arrive.max(*last + 1);
            *last = arrive;
        }
        self.messages += 1;
        self.bytes += bytes.len() as u64;
        self.push(
            arrive,
            Event::Deliver {
                from,
                to,
                depth,
                bytes,
            },
        );
    }

    fn crash(&mut self, rank: u32) {
        let p = &mut self.procs[rank as usize];
        if !p.alive {
            return;
        }
        p.alive = false;
        p.record.alive = false;
        let (lo, hi) = self.s.detect_ns;
        for q in 0..self.s.ranks {
            if self.procs[q as usize].alive {
                let at = self.now + self.rng.range(lo, hi);
                self.push(
                    at,
                    Event::Notify {
                        to: q,
                        failed: rank,
                    },
                );
            }
        }
    }

    fn finish(self, events: u64, hit_event_bound: bool) -> SimRun {
        let malformed = self.procs.iter().map(|p| p.era.stats().malformed).sum();
        SimRun {
            scenario: self.s,
            procs: self.procs.into_iter().map(|p| p.record).collect(),
            messages: self.messages,
            bytes: self.bytes,
            events,
            sim_time_ns: self.now,
            hit_event_bound,
            malformed,
        }
    }
}
