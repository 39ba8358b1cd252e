//! Whole runtime scenarios over [`ControlPlane`]s: the same control plane the runtime
//! drives over its transports, driven here over a simulated network with crashes.
//!
//! Every process runs one script, as an application would: `agreements` agreements on
//! the world communicator (one process may revoke it on the way), then a shrink (the
//! runtime's loop: acknowledge what it knows failed, agree, until every contributor had
//! acknowledged the agreed failed set; the survivors' communicator is the group minus
//! that set), then `agreements` more agreements on the shrunk communicator (two members:
//! the two-party exchange; one: alone). Ranks crash at random times; the survivors learn
//! it from a notice after a random delay (the launcher's report) or from heartbeats
//! alone. [`check_control`] then checks, among survivors: every agreement decided the
//! same value and failed set everywhere; every value is the AND of contributions that
//! include every survivor's; every script finished; every survivor built the same
//! shrunk group, holding every survivor; a revocation reached every survivor.

use std::collections::{BTreeMap, VecDeque};

use super::queue::RadixQueue;
use super::rng::{mix, SimRng};
use crate::control::{ControlPlane, Output};
use crate::detector::{Detector, DetectorConfig};
use crate::{CommId, CommKey, Epoch, Outcome, Rank, RankSet, Seq};

/// Heartbeat period of simulated processes (ns).
const HEARTBEAT_NS: u64 = 1_000_000;
/// Heartbeat timeout (ns): far above any message delay, so no live process is suspected.
const TIMEOUT_NS: u64 = 20_000_000;
/// Virtual time after which a run that has not finished is a liveness violation.
const LIMIT_NS: u64 = 5_000_000_000;
/// Virtual time every run continues after its last script finished (late messages).
const GRACE_NS: u64 = 5_000_000;

/// One runtime scenario (everything follows from `seed`).
#[derive(Clone, Debug)]
pub struct ControlScenario {
    /// The seed of delays and values.
    pub seed: u64,
    /// Processes.
    pub ranks: u32,
    /// Agreements before and after the shrink.
    pub agreements: u32,
    /// (rank, virtual time) of each crash.
    pub crashes: Vec<(u32, u64)>,
    /// A process revokes the world communicator after its k-th agreement.
    pub revoke: Option<(u32, u32)>,
    /// Survivors hear of a crash from a notice (else heartbeats alone).
    pub notices: bool,
    /// Message delay bounds (ns).
    pub delay_ns: (u64, u64),
}

impl ControlScenario {
    /// A random scenario: 2 to 9 ranks, up to half of them crashing at random times.
    pub fn random(seed: u64) -> Self {
        let mut rng = SimRng::new(seed);
        let ranks = 2 + rng.below(8) as u32;
        let agreements = 1 + rng.below(4) as u32;
        let max_crashes = (ranks / 2) as u64;
        let mut victims: Vec<u32> = (0..ranks).collect();
        let mut crashes = Vec::new();
        for _ in 0..rng.below(max_crashes + 1) {
            let i = rng.below(victims.len() as u64) as usize;
            crashes.push((victims.swap_remove(i), rng.below(300_000)));
        }
        let revoke = rng.chance(0.3).then(|| {
            (
                rng.below(ranks as u64) as u32,
                rng.below(agreements as u64 + 1) as u32,
            )
        });
        ControlScenario {
            seed,
            ranks,
            agreements,
            crashes,
            revoke,
            notices: rng.chance(0.8),
            delay_ns: (1_000, 1_000 + rng.below(50_000)),
        }
    }

    fn value(&self, comm: usize, seq: Seq, rank: u32) -> u64 {
        let h = mix(
            self.seed,
            (comm as u64) << 48 | (seq as u64) << 16 | rank as u64,
        );
        !(1u64 << (h % 64))
    }
}

/// What one process decided: (comm index: 0 world, 1 shrunk; seq) -> (value, failed
/// world ranks, all acknowledged).
pub type Decisions = BTreeMap<(usize, Seq), Decided>;

/// One decision: value, failed world ranks, all acknowledged.
pub type Decided = (u64, Vec<u32>, bool);

/// The outcome of a run.
#[derive(Debug, Default)]
pub struct ControlRun {
    /// Per process: its decisions.
    pub decisions: Vec<Decisions>,
    /// Per process: crashed.
    pub crashed: Vec<bool>,
    /// Per process: finished its script.
    pub finished: Vec<bool>,
    /// Per process: the shrunk group (world ranks).
    pub shrunk: Vec<Option<Vec<u32>>>,
    /// Per process: saw the world communicator revoked.
    pub revoked: Vec<bool>,
    /// Messages delivered.
    pub messages: u64,
    /// Virtual time at the end (ns).
    pub end_ns: u64,
}

enum Event {
    Deliver { to: u32, from: u32, bytes: Vec<u8> },
    Crash(u32),
    Notice { to: u32, dead: u32 },
    Tick(u32),
}

/// Where a process is in its script.
struct Script {
    /// Which communicator: 0 world, 1 shrunk.
    comm: usize,
    /// Agreements done on it.
    done: u32,
    /// The agreement in flight.
    waiting: Option<Seq>,
    /// Shrinking (its agreements are the shrink loop's).
    shrinking: bool,
    /// This process revoked the world already.
    revoked: bool,
    finished: bool,
}

const WORLD: CommId = CommId(1);

/// Runs a scenario.
pub fn run_control(s: &ControlScenario) -> ControlRun {
    let n = s.ranks;
    let mut rng = SimRng::new(mix(s.seed, 0xc0));
    let config = DetectorConfig::new(HEARTBEAT_NS, TIMEOUT_NS);
    let mut cps: Vec<ControlPlane> = (0..n)
        .map(|r| {
            let d = Detector::new(Rank(r), n, config).expect("valid detector configuration");
            ControlPlane::new(r, n, d)
        })
        .collect();
    let world_key = CommKey {
        comm: WORLD,
        epoch: Epoch(0),
    };
    let mut scripts: Vec<Script> = (0..n)
        .map(|_| Script {
            comm: 0,
            done: 0,
            waiting: None,
            shrinking: false,
            revoked: false,
            finished: false,
        })
        .collect();
    let mut comm_ids = vec![[WORLD, WORLD]; n as usize];
    let mut run = ControlRun {
        decisions: vec![BTreeMap::new(); n as usize],
        crashed: vec![false; n as usize],
        finished: vec![false; n as usize],
        shrunk: vec![None; n as usize],
        revoked: vec![false; n as usize],
        ..Default::default()
    };
    let mut queue: RadixQueue<Event> = RadixQueue::new();
    let mut counter: u128 = 0;
    let mut push = |q: &mut RadixQueue<Event>, at: u64, e: Event| {
        counter += 1;
        q.push((at as u128) << 40 | counter, e);
    };
    // Per-pair FIFO, as the transports are: a message never overtakes an earlier one.
    let mut last_arrival = vec![0u64; (n * n) as usize];
    for (r, cp) in cps.iter_mut().enumerate() {
        cp.add_comm(world_key, 0, (0..n).collect());
        cp.start(0);
        push(&mut queue, cp.next_deadline(), Event::Tick(r as u32));
    }
    for &(r, at) in &s.crashes {
        push(&mut queue, at, Event::Crash(r));
    }
    let mut now = 0u64;
    let mut all_done_at: Option<u64> = None;
    let mut outbox: VecDeque<(u32, u32, Vec<u8>)> = VecDeque::new();
    // Every process takes its first step at time 0.
    let mut touched: Vec<u32> = (0..n).collect();
    loop {
        for r in touched.drain(..) {
            if run.crashed[r as usize] {
                continue;
            }
            step(
                s,
                r,
                &mut cps[r as usize],
                &mut scripts[r as usize],
                &mut comm_ids[r as usize],
                &mut run,
                now,
            );
            drain(&mut cps[r as usize], r, &mut outbox);
        }
        while let Some((from, to, bytes)) = outbox.pop_front() {
            if run.crashed[to as usize] {
                continue;
            }
            let pair = (from * n + to) as usize;
            let at = (now + rng.range(s.delay_ns.0, s.delay_ns.1)).max(last_arrival[pair] + 1);
            last_arrival[pair] = at;
            push(&mut queue, at, Event::Deliver { to, from, bytes });
        }
        if all_done_at.is_none() && (0..n as usize).all(|r| run.crashed[r] || scripts[r].finished) {
            all_done_at = Some(now);
        }
        if all_done_at.is_some_and(|t| now > t + GRACE_NS) || now > LIMIT_NS {
            break;
        }
        let Some((key, event)) = queue.pop() else {
            break;
        };
        now = (key >> 40) as u64;
        match event {
            Event::Deliver { to, from, bytes } => {
                if !run.crashed[to as usize] {
                    run.messages += 1;
                    cps[to as usize].on_control(from, &bytes, now);
                    touched.push(to);
                }
            }
            Event::Crash(r) => {
                run.crashed[r as usize] = true;
                if s.notices {
                    for to in (0..n).filter(|&t| t != r) {
                        let delay = rng.range(10_000, 200_000);
                        push(&mut queue, now + delay, Event::Notice { to, dead: r });
                    }
                }
            }
            Event::Notice { to, dead } => {
                if !run.crashed[to as usize] {
                    cps[to as usize].report_failure(dead, "notice".into());
                    touched.push(to);
                }
            }
            Event::Tick(r) => {
                if !run.crashed[r as usize] {
                    let cp = &mut cps[r as usize];
                    cp.tick(now);
                    let next = cp.next_deadline().max(now + 1);
                    push(&mut queue, next, Event::Tick(r));
                    touched.push(r);
                }
            }
        }
    }
    for r in 0..n as usize {
        run.finished[r] = scripts[r].finished;
        run.revoked[r] = cps[r].comm(WORLD).is_some_and(|c| c.revoked());
    }
    run.end_ns = now;
    run
}

/// Applies failures and moves the script of process `r` on as far as it can go.
fn step(
    s: &ControlScenario,
    r: u32,
    cp: &mut ControlPlane,
    script: &mut Script,
    ids: &mut [CommId; 2],
    run: &mut ControlRun,
    now: u64,
) {
    cp.apply_failures(now);
    loop {
        if script.finished {
            return;
        }
        let id = ids[script.comm];
        if let Some(seq) = script.waiting {
            let Some(c) = cp.comm_mut(id) else {
                return;
            };
            let Some(d) = c.take_decision(seq) else {
                return;
            };
            script.waiting = None;
            let group = c.group().to_vec();
            let failed: Vec<u32> = d.failed.iter().map(|x| group[x.index()]).collect();
            let all_acked = d.outcome == Outcome::Success;
            run.decisions[r as usize]
                .insert((script.comm, seq), (d.value, failed.clone(), all_acked));
            if script.shrinking {
                if all_acked {
                    // The survivors' communicator: the group minus the agreed failed.
                    let child = c.next_child();
                    let shrunk: Vec<u32> = group
                        .iter()
                        .copied()
                        .filter(|w| !failed.contains(w))
                        .collect();
                    let new_id = CommId(mix(id.0, child).max(2));
                    let key = CommKey {
                        comm: new_id,
                        epoch: Epoch(0),
                    };
                    cp.apply_failures(now);
                    cp.add_comm(key, 1, shrunk.clone());
                    run.shrunk[r as usize] = Some(shrunk);
                    ids[1] = new_id;
                    script.comm = 1;
                    script.done = 0;
                    script.shrinking = false;
                }
                // Else: acknowledge again and agree again.
            } else {
                script.done += 1;
            }
            continue;
        }
        // Start the next operation (after revoking, if this is the process and the
        // point of the scenario's revocation).
        if script.comm == 0 && !script.revoked && s.revoke == Some((r, script.done)) {
            script.revoked = true;
            cp.revoke(id);
        }
        if script.done < s.agreements && !script.shrinking {
            let seq = cp
                .start_agreement(
                    id,
                    s.value(script.comm, cp.comm(id).map_or(0, |c| c.next_seq()), r),
                )
                .expect("the script's communicator exists");
            script.waiting = Some(seq);
            continue;
        }
        if script.comm == 0 {
            script.shrinking = true;
        }
        if script.shrinking {
            // Acknowledge every failure known here (`Comm::ack_failed`).
            let group = cp
                .comm(id)
                .expect("the script's communicator exists")
                .group();
            let acked: RankSet = group
                .iter()
                .enumerate()
                .filter(|&(_, &w)| cp.is_failed(w))
                .map(|(i, _)| Rank(i as u32))
                .collect();
            cp.comm_mut(id).expect("exists").set_acked(acked);
            let seq = cp.start_agreement(id, 1).expect("exists");
            script.waiting = Some(seq);
            continue;
        }
        script.finished = true;
        return;
    }
}

/// Moves the control plane's messages to the network; failures to tell transports
/// need nothing here (the network drops what goes to the dead).
fn drain(cp: &mut ControlPlane, from: u32, outbox: &mut VecDeque<(u32, u32, Vec<u8>)>) {
    while let Some(o) = cp.next_output() {
        if let Output::Send { to, range } = o {
            outbox.push_back((from, to, cp.bytes(range).to_vec()));
        }
    }
}

/// Checks every property of a finished run (see the module doc).
///
/// # Errors
/// The first violation, named with the seed.
pub fn check_control(s: &ControlScenario, run: &ControlRun) -> Result<(), String> {
    let n = s.ranks as usize;
    let survivors: Vec<usize> = (0..n).filter(|&r| !run.crashed[r]).collect();
    let fail = |what: String| Err(format!("seed {}: {what}", s.seed));
    for &r in &survivors {
        if !run.finished[r] {
            return fail(format!(
                "rank {r} did not finish its script by {} ns",
                run.end_ns
            ));
        }
    }
    // Agreement: every survivor that decided (comm, seq) decided the same.
    let mut seen: BTreeMap<(usize, Seq), (usize, &Decided)> = BTreeMap::new();
    for &r in &survivors {
        for (k, d) in &run.decisions[r] {
            match seen.get(k) {
                Some((other, d2)) if *d2 != d => {
                    return fail(format!(
                        "agreement {k:?}: rank {r} decided {d:?}, rank {other} decided {d2:?}"
                    ))
                }
                Some(_) => {}
                None => {
                    seen.insert(*k, (r, d));
                }
            }
        }
    }
    // Validity: the world agreements' values include every survivor's contribution and
    // only contributions (each value is all ones but one bit).
    for (&(comm, seq), (_, d)) in &seen {
        let value = d.0;
        let all: u64 = (0..s.ranks).fold(!0, |a, r| a & s.value(comm, seq, r));
        if comm == 0 && seq >= s.agreements {
            // The shrink loop's agreements (everyone contributes 1).
            continue;
        }
        for &r in &survivors {
            let v = s.value(comm, seq, r as u32);
            if value & !v != 0 {
                return fail(format!(
                    "agreement {comm}/{seq}: value {value:#x} lacks rank {r}'s contribution {v:#x}"
                ));
            }
        }
        if all & !value != 0 {
            return fail(format!(
                "agreement {comm}/{seq}: value {value:#x} is not an AND of contributions"
            ));
        }
        // The failed set names only crashed processes.
        for w in &d.1 {
            if !run.crashed[*w as usize] {
                return fail(format!(
                    "agreement {comm}/{seq}: live rank {w} agreed failed"
                ));
            }
        }
    }
    // Shrink: the same group everywhere, holding every survivor.
    let groups: Vec<&Vec<u32>> = survivors
        .iter()
        .filter_map(|&r| run.shrunk[r].as_ref())
        .collect();
    if groups.len() != survivors.len() {
        return fail("a survivor has no shrunk communicator".into());
    }
    if let Some(first) = groups.first() {
        if groups.iter().any(|g| g != first) {
            return fail(format!("survivors shrank to different groups: {groups:?}"));
        }
        if survivors.iter().any(|&r| !first.contains(&(r as u32))) {
            return fail(format!(
                "shrunk group {first:?} lacks a survivor of {survivors:?}"
            ));
        }
    }
    // Revoke: reached every survivor when a survivor (or anyone who sent it) revoked.
    if let Some((who, _)) = s.revoke {
        if !run.crashed[who as usize] && survivors.iter().any(|&r| !run.revoked[r]) {
            return fail(format!(
                "rank {who} revoked the world, not every survivor saw it"
            ));
        }
    }
    Ok(())
}
