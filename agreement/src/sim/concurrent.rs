//! Concurrent operations in whole scenarios: several communicators at once over
//! [`ControlPlane`]s, with crashes.
//!
//! Besides the world, one to three sub-communicators over random overlapping subsets
//! (two members: the two-party exchange). Every process runs, on every communicator it
//! belongs to and at the same time, `rounds` rounds of `depth` non-blocking agreements
//! each: a round's agreements all start before the first decides, and a round starts
//! once the previous one decided, so agreements on different communicators interleave
//! freely. Before each round a process may acknowledge the failures it knows of. One
//! process may revoke one communicator right after starting a round on the world (so
//! while agreements are in flight there and elsewhere). Ranks crash at random times;
//! survivors learn it from a delayed notice or from heartbeats alone.
//! [`check_concurrent`] then checks, per communicator, what
//! [`check_control`](super::control::check_control) checks: every survivor finished;
//! every agreement decided the same value, failed set and outcome at every surviving
//! member; each value is an AND of members' contributions including every surviving
//! member's; the failed set names only crashed ranks; the revocation reached every
//! surviving member of its communicator and no other communicator was revoked anywhere.

use std::collections::BTreeMap;

use super::control::Decided;
use super::net::{drive, NetConfig, Scripts, LIMIT_NS};
use super::rng::{mix, SimRng};
use crate::control::ControlPlane;
use crate::{CommId, CommKey, Epoch, Outcome, Rank, RankSet, Seq};

/// One scenario of concurrent operations (everything follows from `seed`).
#[derive(Clone, Debug)]
pub struct ConcurrentScenario {
    /// The seed of delays, values and crashes.
    pub seed: u64,
    /// Processes.
    pub ranks: u32,
    /// Communicators (world ranks in comm-rank order): the world first.
    pub comms: Vec<Vec<u32>>,
    /// Rounds of agreements on each communicator.
    pub rounds: u32,
    /// Agreements started at once in each round.
    pub depth: u32,
    /// (rank, virtual time) of each crash.
    pub crashes: Vec<(u32, u64)>,
    /// (process, communicator, round): the process revokes the communicator right
    /// after starting that round on the world.
    pub revoke: Option<(u32, usize, u32)>,
    /// Processes acknowledge the failures they know of before each round.
    pub ack: bool,
    /// Survivors hear of a crash from a notice (else heartbeats alone).
    pub notices: bool,
    /// Message delay bounds (ns).
    pub delay_ns: (u64, u64),
}

impl ConcurrentScenario {
    /// A random scenario: 2 to 8 ranks, up to half of them crashing.
    pub fn random(seed: u64) -> Self {
        let mut rng = SimRng::new(seed);
        let ranks = 2 + rng.below(7) as u32;
        let mut comms = vec![(0..ranks).collect::<Vec<u32>>()];
        for _ in 0..1 + rng.below(3) {
            let mut members: Vec<u32> = (0..ranks).filter(|_| rng.chance(0.6)).collect();
            while members.len() < 2 {
                let w = rng.below(ranks as u64) as u32;
                if !members.contains(&w) {
                    members.push(w);
                }
            }
            // Comm ranks in a random order of world ranks.
            for i in (1..members.len()).rev() {
                members.swap(i, rng.below(i as u64 + 1) as usize);
            }
            comms.push(members);
        }
        let rounds = 1 + rng.below(3) as u32;
        let depth = 1 + rng.below(3) as u32;
        let mut victims: Vec<u32> = (0..ranks).collect();
        let mut crashes = Vec::new();
        for _ in 0..rng.below((ranks / 2) as u64 + 1) {
            let i = rng.below(victims.len() as u64) as usize;
            crashes.push((victims.swap_remove(i), rng.below(300_000)));
        }
        let revoke = rng.chance(0.5).then(|| {
            let c = rng.below(comms.len() as u64) as usize;
            let who = comms[c][rng.below(comms[c].len() as u64) as usize];
            (who, c, rng.below(rounds as u64) as u32)
        });
        ConcurrentScenario {
            seed,
            ranks,
            comms,
            rounds,
            depth,
            crashes,
            revoke,
            ack: rng.chance(0.5),
            notices: rng.chance(0.8),
            delay_ns: (1_000, 1_000 + rng.below(50_000)),
        }
    }

    /// The value world rank `rank` contributes to agreement `seq` on communicator
    /// `comm`: all ones but one bit.
    pub fn value(&self, comm: usize, seq: Seq, rank: u32) -> u64 {
        let h = mix(
            self.seed,
            (comm as u64) << 48 | (seq as u64) << 16 | rank as u64,
        );
        !(1u64 << (h % 64))
    }

    fn id(comm: usize) -> CommId {
        CommId(1 + 100 * comm as u64)
    }
}

/// The outcome of a run.
#[derive(Debug, Default)]
pub struct ConcurrentRun {
    /// Per process: (communicator, seq) -> its decision (failed ranks as world ranks).
    pub decisions: Vec<BTreeMap<(usize, Seq), Decided>>,
    /// Per process: crashed.
    pub crashed: Vec<bool>,
    /// Per process: finished its script on every communicator.
    pub finished: Vec<bool>,
    /// Per process, per communicator: a revocation was delivered there.
    pub revoked: Vec<Vec<bool>>,
    /// Most agreements in flight at once at one process (over all its communicators).
    pub max_in_flight: usize,
    /// Messages delivered.
    pub messages: u64,
    /// Virtual time at the end (ns).
    pub end_ns: u64,
}

#[derive(Default)]
struct OnComm {
    /// Rounds started.
    round: u32,
    in_flight: Vec<Seq>,
}

struct Proc {
    started: bool,
    /// Per communicator (`None`: not a member).
    comms: Vec<Option<OnComm>>,
    revoked: bool,
    finished: bool,
}

struct Concurrent<'a> {
    s: &'a ConcurrentScenario,
    procs: Vec<Proc>,
    decisions: Vec<BTreeMap<(usize, Seq), Decided>>,
    max_in_flight: usize,
}

impl Scripts for Concurrent<'_> {
    type Msg = ();

    fn step(&mut self, r: u32, cp: &mut ControlPlane, _now: u64, _: &mut Vec<(u32, ())>) -> bool {
        let s = self.s;
        let p = &mut self.procs[r as usize];
        if !p.started {
            p.started = true;
            for (c, group) in s.comms.iter().enumerate() {
                let key = CommKey {
                    comm: ConcurrentScenario::id(c),
                    epoch: Epoch(0),
                };
                if cp.add_comm(key, c as u64, group.clone()).is_some() {
                    p.comms[c] = Some(OnComm::default());
                }
            }
        }
        // Round robin over the communicators, until none can move.
        let mut moved = true;
        while moved {
            moved = false;
            for c in 0..s.comms.len() {
                let id = ConcurrentScenario::id(c);
                let Some(on) = p.comms[c].as_mut() else {
                    continue;
                };
                let Some(ft) = cp.comm_mut(id) else {
                    continue;
                };
                let group = ft.group().to_vec();
                let before = on.in_flight.len();
                on.in_flight.retain(|&seq| match ft.take_decision(seq) {
                    Some(d) => {
                        let failed = d.failed.iter().map(|x| group[x.index()]).collect();
                        let ok = d.outcome == Outcome::Success;
                        self.decisions[r as usize].insert((c, seq), (d.value, failed, ok));
                        false
                    }
                    None => true,
                });
                moved |= on.in_flight.len() != before;
                if !on.in_flight.is_empty() || on.round == s.rounds {
                    continue;
                }
                // The next round: acknowledge what is known failed, then start `depth`
                // agreements without waiting.
                if s.ack {
                    let acked: RankSet = group
                        .iter()
                        .enumerate()
                        .filter(|&(_, &w)| cp.is_failed(w))
                        .map(|(i, _)| Rank(i as u32))
                        .collect();
                    if let Some(ft) = cp.comm_mut(id) {
                        ft.set_acked(acked);
                    }
                }
                for _ in 0..s.depth {
                    let next = cp.comm(id).map_or(0, |ft| ft.next_seq());
                    let seq = cp
                        .start_agreement(id, s.value(c, next, r))
                        .expect("the communicator exists");
                    on.in_flight.push(seq);
                }
                on.round += 1;
                moved = true;
                if let Some((who, rc, round)) = s.revoke {
                    if c == 0 && who == r && round + 1 == on.round && !p.revoked {
                        p.revoked = true;
                        cp.revoke(ConcurrentScenario::id(rc));
                    }
                }
            }
            let in_flight: usize = p.comms.iter().flatten().map(|on| on.in_flight.len()).sum();
            self.max_in_flight = self.max_in_flight.max(in_flight);
        }
        p.finished = p
            .comms
            .iter()
            .flatten()
            .all(|on| on.round == s.rounds && on.in_flight.is_empty());
        false
    }

    fn on_message(&mut self, _: u32, _: u32, _: ()) {}

    fn finished(&self, r: u32) -> bool {
        self.procs[r as usize].finished
    }
}

/// Runs a scenario.
pub fn run_concurrent(s: &ConcurrentScenario) -> ConcurrentRun {
    let n = s.ranks as usize;
    let mut scripts = Concurrent {
        s,
        procs: (0..n)
            .map(|_| Proc {
                started: false,
                comms: (0..s.comms.len()).map(|_| None).collect(),
                revoked: false,
                finished: false,
            })
            .collect(),
        decisions: vec![BTreeMap::new(); n],
        max_in_flight: 0,
    };
    let net = NetConfig {
        seed: s.seed,
        ranks: s.ranks,
        crashes: s.crashes.clone(),
        notices: s.notices,
        delay_ns: s.delay_ns,
    };
    let driven = drive(&net, &mut scripts);
    let revoked = driven
        .cps
        .iter()
        .map(|cp| {
            (0..s.comms.len())
                .map(|c| {
                    cp.comm(ConcurrentScenario::id(c))
                        .is_some_and(|ft| ft.revoked())
                })
                .collect()
        })
        .collect();
    ConcurrentRun {
        finished: scripts.procs.iter().map(|p| p.finished).collect(),
        decisions: scripts.decisions,
        crashed: driven.crashed,
        revoked,
        max_in_flight: scripts.max_in_flight,
        messages: driven.messages,
        end_ns: driven.end_ns,
    }
}

/// Checks every property of a finished run (see the module doc).
///
/// # Errors
/// The first violation, named with the seed.
pub fn check_concurrent(s: &ConcurrentScenario, run: &ConcurrentRun) -> Result<(), String> {
    let n = s.ranks as usize;
    let fail = |what: String| Err(format!("seed {}: {what}", s.seed));
    let survivors: Vec<usize> = (0..n).filter(|&r| !run.crashed[r]).collect();
    for &r in &survivors {
        if !run.finished[r] {
            return fail(format!(
                "rank {r} did not finish its operations by {} ns (limit {LIMIT_NS})",
                run.end_ns
            ));
        }
    }
    let agreements = s.rounds * s.depth;
    for (c, group) in s.comms.iter().enumerate() {
        let members: Vec<usize> = survivors
            .iter()
            .copied()
            .filter(|&r| group.contains(&(r as u32)))
            .collect();
        for seq in 0..agreements {
            let mut first: Option<(usize, &Decided)> = None;
            for &r in &members {
                let Some(d) = run.decisions[r].get(&(c, seq)) else {
                    return fail(format!("rank {r} never decided agreement {c}/{seq}"));
                };
                match first {
                    None => first = Some((r, d)),
                    Some((other, d2)) if d2 != d => {
                        return fail(format!(
                        "agreement {c}/{seq}: rank {r} decided {d:?}, rank {other} decided {d2:?}"
                    ))
                    }
                    Some(_) => {}
                }
            }
            let Some((_, d)) = first else { continue };
            let value = d.0;
            for &r in &members {
                let v = s.value(c, seq, r as u32);
                if value & !v != 0 {
                    return fail(format!(
                        "agreement {c}/{seq}: value {value:#x} lacks rank {r}'s contribution {v:#x}"
                    ));
                }
            }
            let all = group.iter().fold(!0, |a, &w| a & s.value(c, seq, w));
            if all & !value != 0 {
                return fail(format!(
                    "agreement {c}/{seq}: value {value:#x} is not an AND of its members' contributions"
                ));
            }
            if let Some(w) = d.1.iter().find(|&&w| !run.crashed[w as usize]) {
                return fail(format!("agreement {c}/{seq}: live rank {w} agreed failed"));
            }
        }
        // Revocation: every surviving member of the revoked communicator saw it (when
        // its revoker survived); no process saw any other revoked.
        let revoked_here = s.revoke.is_some_and(|(_, rc, _)| rc == c);
        if revoked_here {
            let (who, _, _) = s.revoke.expect("checked");
            if !run.crashed[who as usize] {
                if let Some(r) = members.iter().find(|&&r| !run.revoked[r][c]) {
                    return fail(format!(
                        "rank {who} revoked communicator {c}, its member {r} never saw it"
                    ));
                }
            }
        } else if let Some(r) = (0..n).find(|&r| run.revoked[r][c]) {
            return fail(format!(
                "communicator {c} was revoked at rank {r}, nobody revoked it"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run with a revocation and no crash, to doctor.
    fn clean() -> (ConcurrentScenario, ConcurrentRun) {
        let mut s = ConcurrentScenario::random(11);
        s.crashes.clear();
        s.rounds = 2;
        s.depth = 2;
        s.revoke = Some((s.comms[1][0], 1, 0));
        let run = run_concurrent(&s);
        check_concurrent(&s, &run).unwrap();
        assert!(run.max_in_flight >= 4, "{}", run.max_in_flight);
        (s, run)
    }

    fn some_decision(run: &mut ConcurrentRun) -> &mut Decided {
        run.decisions[0]
            .get_mut(&(0, 1))
            .expect("rank 0 decided world agreement 1")
    }

    #[test]
    fn the_checker_sees_an_unfinished_script() {
        let (s, mut run) = clean();
        run.finished[0] = false;
        assert!(check_concurrent(&s, &run)
            .unwrap_err()
            .contains("did not finish"));
    }

    #[test]
    fn the_checker_sees_a_missing_or_different_decision() {
        let (s, mut run) = clean();
        let d = some_decision(&mut run);
        d.2 = !d.2;
        assert!(check_concurrent(&s, &run).unwrap_err().contains("decided"));
        let (s, mut run) = clean();
        run.decisions[1].remove(&(0, 0));
        assert!(check_concurrent(&s, &run)
            .unwrap_err()
            .contains("never decided"));
    }

    #[test]
    fn the_checker_sees_a_value_that_is_no_and_of_contributions() {
        for (doctor, expect) in [(0u64, "not an AND"), (!0u64, "lacks rank")] {
            let (s, mut run) = clean();
            for r in 0..s.ranks as usize {
                run.decisions[r].get_mut(&(0, 1)).unwrap().0 = doctor;
            }
            let err = check_concurrent(&s, &run).unwrap_err();
            assert!(err.contains(expect), "{err}");
        }
    }

    #[test]
    fn the_checker_sees_a_live_rank_agreed_failed() {
        let (s, mut run) = clean();
        for r in 0..s.ranks as usize {
            run.decisions[r].get_mut(&(0, 0)).unwrap().1 = vec![0];
        }
        assert!(check_concurrent(&s, &run)
            .unwrap_err()
            .contains("agreed failed"));
    }

    #[test]
    fn the_checker_sees_a_revoke_missed_or_leaking() {
        let (s, mut run) = clean();
        let member = s.comms[1][1] as usize;
        run.revoked[member][1] = false;
        assert!(check_concurrent(&s, &run)
            .unwrap_err()
            .contains("never saw it"));
        let (s, mut run) = clean();
        run.revoked[0][0] = true;
        assert!(check_concurrent(&s, &run)
            .unwrap_err()
            .contains("nobody revoked it"));
    }

    #[test]
    fn revoking_one_communicator_leaves_the_others_alone() {
        let (s, run) = clean();
        for r in 0..s.ranks as usize {
            let member = s.comms[1].contains(&(r as u32));
            assert_eq!(run.revoked[r][1], member, "rank {r}");
            for c in (0..s.comms.len()).filter(|&c| c != 1) {
                assert!(!run.revoked[r][c], "rank {r} comm {c}");
            }
        }
    }
}
