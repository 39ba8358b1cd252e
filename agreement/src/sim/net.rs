//! The simulated world the multi-operation scenarios share: one [`ControlPlane`] per
//! process over a network with random per-pair FIFO delays, the application's own
//! point-to-point messages beside the control messages, crashes at fixed times or
//! when a process's script asks for one, failure notices after a random delay (the
//! launcher's report) or heartbeats alone, and a virtual time limit.

use std::collections::VecDeque;

use super::queue::RadixQueue;
use super::rng::SimRng;
use crate::control::{ControlPlane, Output};
use crate::detector::{Detector, DetectorConfig};
use crate::Rank;

/// Heartbeat period of simulated processes (ns).
const HEARTBEAT_NS: u64 = 1_000_000;
/// Heartbeat timeout (ns): far above any message delay, so no live process is suspected.
const TIMEOUT_NS: u64 = 20_000_000;
/// Virtual time after which a run that has not finished is a liveness violation.
pub const LIMIT_NS: u64 = 5_000_000_000;
/// Virtual time every run continues after its last script finished (late messages).
const GRACE_NS: u64 = 5_000_000;

/// What the processes of a scenario do; [`drive`] calls it.
pub(super) trait Scripts {
    /// An application message (point to point, not a control message).
    type Msg;
    /// Moves the script of live process `r` on as far as it can go (failures were
    /// just applied). Messages to send go to `send` as (world rank, message). Returns
    /// `true` when the process crashes here and now (a crash at a point of its script).
    fn step(
        &mut self,
        r: u32,
        cp: &mut ControlPlane,
        now: u64,
        send: &mut Vec<(u32, Self::Msg)>,
    ) -> bool;
    /// An application message from `from` arrived at live process `r`.
    fn on_message(&mut self, r: u32, from: u32, msg: Self::Msg);
    /// Whether process `r`'s script is over.
    fn finished(&self, r: u32) -> bool;
}

/// The network's parameters.
#[derive(Clone, Debug)]
pub(super) struct NetConfig {
    pub seed: u64,
    pub ranks: u32,
    /// (rank, virtual time) of each timed crash.
    pub crashes: Vec<(u32, u64)>,
    /// Survivors hear of a crash from a notice (else heartbeats alone).
    pub notices: bool,
    /// Message delay bounds (ns).
    pub delay_ns: (u64, u64),
}

/// What a drive leaves.
pub(super) struct Driven {
    pub cps: Vec<ControlPlane>,
    pub crashed: Vec<bool>,
    /// Messages delivered (control and application).
    pub messages: u64,
    pub end_ns: u64,
}

enum Event<M> {
    Control { to: u32, from: u32, bytes: Vec<u8> },
    App { to: u32, from: u32, msg: M },
    Crash(u32),
    Notice { to: u32, dead: u32 },
    Tick(u32),
}

enum Out<M> {
    Control(Vec<u8>),
    App(M),
}

struct Net<M> {
    queue: RadixQueue<Event<M>>,
    counter: u128,
    /// Per-pair FIFO, as the transports are: a message never overtakes an earlier one.
    last_arrival: Vec<u64>,
    rng: SimRng,
}

impl<M> Net<M> {
    fn push(&mut self, at: u64, e: Event<M>) {
        self.counter += 1;
        self.queue.push((at as u128) << 40 | self.counter, e);
    }
}

/// Crashes process `r` now: it stops, and (with notices) the others hear of it later.
fn crash<M>(c: &NetConfig, net: &mut Net<M>, crashed: &mut [bool], r: u32, now: u64) {
    if crashed[r as usize] {
        return;
    }
    crashed[r as usize] = true;
    if c.notices {
        for to in (0..c.ranks).filter(|&t| t != r) {
            let delay = net.rng.range(10_000, 200_000);
            net.push(now + delay, Event::Notice { to, dead: r });
        }
    }
}

/// Runs `scripts` until every live process finished (and a grace period after), or
/// until the virtual time limit.
pub(super) fn drive<S: Scripts>(c: &NetConfig, scripts: &mut S) -> Driven {
    let n = c.ranks;
    let config = DetectorConfig::new(HEARTBEAT_NS, TIMEOUT_NS);
    let mut cps: Vec<ControlPlane> = (0..n)
        .map(|r| {
            let d = Detector::new(Rank(r), n, config).expect("valid detector configuration");
            ControlPlane::new(r, n, d)
        })
        .collect();
    let mut net: Net<S::Msg> = Net {
        queue: RadixQueue::new(),
        counter: 0,
        last_arrival: vec![0; (n * n) as usize],
        rng: SimRng::new(super::rng::mix(c.seed, 0x6e)),
    };
    let mut crashed = vec![false; n as usize];
    let mut messages = 0u64;
    for (r, cp) in cps.iter_mut().enumerate() {
        cp.start(0);
        net.push(cp.next_deadline(), Event::Tick(r as u32));
    }
    for &(r, at) in &c.crashes {
        net.push(at, Event::Crash(r));
    }
    let mut now = 0u64;
    let mut all_done_at: Option<u64> = None;
    let mut outbox: VecDeque<(u32, u32, Out<S::Msg>)> = VecDeque::new();
    let mut sends = Vec::new();
    // Every process takes its first step at time 0.
    let mut touched: Vec<u32> = (0..n).collect();
    loop {
        for r in touched.drain(..) {
            if crashed[r as usize] {
                continue;
            }
            let cp = &mut cps[r as usize];
            cp.apply_failures(now);
            let dies = scripts.step(r, cp, now, &mut sends);
            for (to, msg) in sends.drain(..) {
                outbox.push_back((r, to, Out::App(msg)));
            }
            while let Some(o) = cp.next_output() {
                if let Output::Send { to, range } = o {
                    outbox.push_back((r, to, Out::Control(cp.bytes(range).to_vec())));
                }
            }
            if dies {
                // What it sent before dying still goes out (as from a process killed
                // right after a send returned).
                crash(c, &mut net, &mut crashed, r, now);
            }
        }
        while let Some((from, to, o)) = outbox.pop_front() {
            if crashed[to as usize] || to >= n {
                continue;
            }
            let pair = (from * n + to) as usize;
            let at =
                (now + net.rng.range(c.delay_ns.0, c.delay_ns.1)).max(net.last_arrival[pair] + 1);
            net.last_arrival[pair] = at;
            let e = match o {
                Out::Control(bytes) => Event::Control { to, from, bytes },
                Out::App(msg) => Event::App { to, from, msg },
            };
            net.push(at, e);
        }
        if all_done_at.is_none() && (0..n).all(|r| crashed[r as usize] || scripts.finished(r)) {
            all_done_at = Some(now);
        }
        if all_done_at.is_some_and(|t| now > t + GRACE_NS) || now > LIMIT_NS {
            break;
        }
        let Some((key, event)) = net.queue.pop() else {
            break;
        };
        now = (key >> 40) as u64;
        match event {
            Event::Control { to, from, bytes } => {
                if !crashed[to as usize] {
                    messages += 1;
                    cps[to as usize].on_control(from, &bytes, now);
                    touched.push(to);
                }
            }
            Event::App { to, from, msg } => {
                if !crashed[to as usize] {
                    messages += 1;
                    scripts.on_message(to, from, msg);
                    touched.push(to);
                }
            }
            Event::Crash(r) => crash(c, &mut net, &mut crashed, r, now),
            Event::Notice { to, dead } => {
                if !crashed[to as usize] {
                    cps[to as usize].report_failure(dead, "notice".into());
                    touched.push(to);
                }
            }
            Event::Tick(r) => {
                if !crashed[r as usize] {
                    let cp = &mut cps[r as usize];
                    cp.tick(now);
                    let next = cp.next_deadline().max(now + 1);
                    net.push(next, Event::Tick(r));
                    touched.push(r);
                }
            }
        }
    }
    Driven {
        cps,
        crashed,
        messages,
        end_ns: now,
    }
}
