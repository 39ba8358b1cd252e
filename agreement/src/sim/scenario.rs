//! What one simulated run does: sizes, latency model, crash schedule, values.

use super::rng::SimRng;
use crate::tree::TreeShape;
use crate::types::Rank;

/// LogP-style network: a send occupies the sender for `overhead_ns` (sends serialize),
/// then travels `latency_ns` plus a uniform jitter in `0..=jitter_ns`. Messages between
/// different pairs overtake each other freely; within one pair they stay in order when
/// `fifo_pairs` is set and may overtake each other otherwise.
#[derive(Clone, Copy, Debug)]
pub struct NetModel {
    /// Wire latency.
    pub latency_ns: u64,
    /// Per-message sender overhead (and gap).
    pub overhead_ns: u64,
    /// Maximum extra delay.
    pub jitter_ns: u64,
    /// Keep per-pair order.
    pub fifo_pairs: bool,
}

impl Default for NetModel {
    fn default() -> Self {
        NetModel {
            latency_ns: 1_000,
            overhead_ns: 100,
            jitter_ns: 500,
            fifo_pairs: true,
        }
    }
}

/// When a process crashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashTrigger {
    /// At a simulated time.
    AtTime(u64),
    /// Just before it would start the first agreement (it never contributes).
    BeforeStart,
    /// While handling its `count`-th event: only the first `sends_kept` messages of that
    /// step leave (0 = crashes on receipt, more = mid-broadcast).
    AfterEvents {
        /// 1-based index of the fatal event.
        count: u32,
        /// Messages of that step that still go out.
        sends_kept: u32,
    },
    /// In the step where it decides the first agreement, after `sends_kept` of that
    /// step's messages (`u32::MAX`: right after deciding and forwarding).
    AfterDecide {
        /// Messages of that step that still go out.
        sends_kept: u32,
    },
}

/// One planned crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crash {
    /// Who crashes.
    pub rank: Rank,
    /// When.
    pub trigger: CrashTrigger,
}

/// A complete description of one run; the same scenario always gives the same run.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Seed of every random choice made while running.
    pub seed: u64,
    /// Number of processes.
    pub ranks: u32,
    /// Agreements each process runs one after the other.
    pub agreements: u32,
    /// Tree layout.
    pub shape: TreeShape,
    /// Network model.
    pub net: NetModel,
    /// A crash is noticed by each live process after a delay uniform in this range.
    pub detect_ns: (u64, u64),
    /// Processes enter the first agreement at a time uniform in `0..=start_spread_ns`.
    pub start_spread_ns: u64,
    /// Probability that a process acknowledges each failure it knows of when it starts.
    pub ack_probability: f64,
    /// The crash schedule.
    pub crashes: Vec<Crash>,
}

impl Scenario {
    /// A failure-free run of `ranks` processes with default models.
    pub fn failure_free(ranks: u32, seed: u64) -> Self {
        Scenario {
            seed,
            ranks,
            agreements: 1,
            shape: TreeShape::Lazy,
            net: NetModel::default(),
            detect_ns: (20_000, 60_000),
            start_spread_ns: 2_000,
            ack_probability: 1.0,
            crashes: Vec::new(),
        }
    }

    /// A random scenario for the property sweep: 2 to `max_ranks` processes, 0 to n/2
    /// crashes at random events (sometimes a chain of successive roots, sometimes several
    /// at once), random models and layouts, all drawn from `seed`.
    pub fn random(seed: u64, max_ranks: u32) -> Self {
        let mut rng = SimRng::new(seed.wrapping_mul(31).wrapping_add(17));
        let ranks = rng.range(2, max_ranks.max(2) as u64) as u32;
        let mut s = Scenario::failure_free(ranks, seed);
        s.agreements = rng.range(1, 3) as u32;
        s.shape = if rng.chance(0.3) {
            TreeShape::Rebuilt
        } else {
            TreeShape::Lazy
        };
        s.net.jitter_ns = [0, 500, 5_000, 50_000][rng.below(4) as usize];
        s.net.fifo_pairs = rng.chance(0.7);
        let lo = rng.range(1_000, 30_000);
        s.detect_ns = (lo, lo + rng.range(0, 60_000));
        s.start_spread_ns = [0, 2_000, 20_000, 200_000][rng.below(4) as usize];
        s.ack_probability = [0.0, 0.5, 1.0][rng.below(3) as usize];
        let crashes = rng.range(0, (ranks / 2) as u64) as u32;
        let mut victims: Vec<u32> = if rng.chance(0.25) {
            (0..crashes).collect() // successive roots
        } else {
            let mut all: Vec<u32> = (0..ranks).collect();
            for i in 0..all.len() {
                let j = i + rng.below((all.len() - i) as u64) as usize;
                all.swap(i, j);
            }
            all.truncate(crashes as usize);
            all
        };
        victims.sort_unstable();
        let together = rng.chance(0.2).then(|| rng.range(0, 30_000));
        let horizon = 20 * (s.net.latency_ns + s.net.jitter_ns) + s.start_spread_ns;
        for v in victims {
            let trigger = match (together, rng.below(5)) {
                (Some(t), _) => CrashTrigger::AtTime(t),
                (None, 0) => CrashTrigger::AtTime(rng.range(0, horizon)),
                (None, 1) => CrashTrigger::BeforeStart,
                (None, 2) => CrashTrigger::AfterDecide {
                    sends_kept: [0, 1, u32::MAX][rng.below(3) as usize],
                },
                _ => CrashTrigger::AfterEvents {
                    count: rng.range(1, 6) as u32,
                    sends_kept: rng.range(0, 2) as u32,
                },
            };
            s.crashes.push(Crash {
                rank: Rank(v),
                trigger,
            });
        }
        s
    }

    /// `count` crashes spread over the ranks (the root always among them), each at a
    /// random time while the first agreement runs, for large-scale runs.
    pub fn with_spread_crashes(mut self, count: u32) -> Self {
        let mut rng = SimRng::new(self.seed ^ 0xc4a5);
        let depth = 64 - (self.ranks as u64).leading_zeros() as u64;
        let horizon = 2 * depth * (self.net.latency_ns + self.net.overhead_ns);
        let mut taken = std::collections::BTreeSet::new();
        while (taken.len() as u32) < count.min(self.ranks - 1) {
            let r = if taken.is_empty() {
                0
            } else {
                rng.below(self.ranks as u64) as u32
            };
            if taken.insert(r) {
                self.crashes.push(Crash {
                    rank: Rank(r),
                    trigger: CrashTrigger::AtTime(rng.range(0, horizon)),
                });
            }
        }
        self
    }
}
