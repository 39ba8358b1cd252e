//! Uniform inter-communicator creation in whole scenarios: the runtime's state machine
//! ([`IntercommCreate`]) over [`ControlPlane`]s, with crashes.
//!
//! The world is split into two disjoint groups of random sizes, each a communicator
//! with a random leader; the bridge joins the two leaders (their messages go point to
//! point, beside the control messages, per-pair FIFO as the runtime's are). Every
//! process creates the inter-communicator. Processes crash at random times, or when
//! they reach a random [`Stage`] (leaders more often than others); survivors learn it
//! from a delayed notice or from heartbeats alone. [`check_intercomm`] then checks,
//! among the survivors of both sides: every one finished (by the virtual time limit);
//! all returned the same outcome; a success is the union of the two groups (lower
//! side first), which holds every survivor of both sides.

use std::collections::VecDeque;

use super::net::{drive, NetConfig, Scripts, LIMIT_NS};
use super::rng::{mix, SimRng};
use crate::control::intercomm::{IntercommCreate, PairMsg, Stage, Step, Waiting};
use crate::control::ControlPlane;
use crate::{CommId, CommKey, Epoch, Seq};

/// Every stage a process can be made to crash at.
pub const STAGES: [Stage; 7] = [
    Stage::Start,
    Stage::Exchanged,
    Stage::FirstLocalAgreement,
    Stage::LeaderFlagSent,
    Stage::LeaderPair,
    Stage::SecondLocalAgreement,
    Stage::Done,
];

/// One creation scenario (everything follows from `seed`).
#[derive(Clone, Debug)]
pub struct IntercommScenario {
    /// The seed of delays and crashes.
    pub seed: u64,
    /// Processes.
    pub ranks: u32,
    /// The two groups (world ranks, in comm-rank order).
    pub sides: [Vec<u32>; 2],
    /// Each side's leader (a rank of its group).
    pub leaders: [u32; 2],
    /// (world rank, virtual time) of each timed crash.
    pub crashes: Vec<(u32, u64)>,
    /// (world rank, stage): the process crashes when it reaches the stage.
    pub stage_crashes: Vec<(u32, Stage)>,
    /// Survivors hear of a crash from a notice (else heartbeats alone).
    pub notices: bool,
    /// Message delay bounds (ns).
    pub delay_ns: (u64, u64),
}

impl IntercommScenario {
    /// A random scenario: 2 to 10 ranks split in two, no crash in one run of four, else
    /// up to half of the ranks crashing, each at a random time or stage.
    pub fn random(seed: u64) -> Self {
        let mut rng = SimRng::new(seed);
        let ranks = 2 + rng.below(9) as u32;
        let mut perm: Vec<u32> = (0..ranks).collect();
        for i in (1..perm.len()).rev() {
            perm.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let k = 1 + rng.below(ranks as u64 - 1) as usize;
        let sides = [perm[..k].to_vec(), perm[k..].to_vec()];
        let leaders = [
            rng.below(sides[0].len() as u64) as u32,
            rng.below(sides[1].len() as u64) as u32,
        ];
        let mut crashes = Vec::new();
        let mut stage_crashes = Vec::new();
        if !rng.chance(0.25) {
            let mut victims: Vec<u32> = (0..ranks).collect();
            let leader_worlds = [sides[0][leaders[0] as usize], sides[1][leaders[1] as usize]];
            for _ in 0..1 + rng.below((ranks / 2) as u64) {
                // A leader one time in three, while one is left.
                let i = match leader_worlds
                    .iter()
                    .find_map(|l| victims.iter().position(|v| v == l))
                {
                    Some(i) if rng.chance(0.35) => i,
                    _ => rng.below(victims.len() as u64) as usize,
                };
                let victim = victims.swap_remove(i);
                if rng.chance(0.5) {
                    crashes.push((victim, rng.below(400_000)));
                } else {
                    let stage = STAGES[rng.below(STAGES.len() as u64) as usize];
                    stage_crashes.push((victim, stage));
                }
            }
        }
        IntercommScenario {
            seed,
            ranks,
            sides,
            leaders,
            crashes,
            stage_crashes,
            notices: rng.chance(0.8),
            delay_ns: (1_000, 1_000 + rng.below(50_000)),
        }
    }
}

/// The outcome of a run.
#[derive(Debug, Default)]
pub struct IntercommRun {
    /// Per process: `None` while not returned; `Some(Some(union))` on success,
    /// `Some(None)` on failure.
    pub outcomes: Vec<Option<Option<Vec<u32>>>>,
    /// Per process: crashed.
    pub crashed: Vec<bool>,
    /// Per process: the stages it reached, in order.
    pub stages: Vec<Vec<Stage>>,
    /// Messages delivered (control and point to point).
    pub messages: u64,
    /// Virtual time at the end (ns).
    pub end_ns: u64,
}

/// A point-to-point message of the creation.
#[derive(Debug)]
enum Msg {
    /// A group (leader to leader, or a leader's hand-out).
    Group(Option<Vec<u32>>),
    /// A message of the leaders' pair agreement.
    Pair(PairMsg),
}

struct Proc {
    ic: IntercommCreate,
    /// The local communicator's id.
    local_id: CommId,
    /// World ranks of our leader and of the remote leader.
    leader: u32,
    remote_leader: u32,
    union_id: Option<CommId>,
    /// The agreement waited for (local or union).
    seq: Option<Seq>,
    started: bool,
    steps: VecDeque<Step>,
    inbox: VecDeque<(u32, Msg)>,
    die_at: Option<Stage>,
    outcome: Option<Option<Vec<u32>>>,
    stages: Vec<Stage>,
}

struct Creation<'a> {
    s: &'a IntercommScenario,
    procs: Vec<Proc>,
    more: Vec<Step>,
}

/// The union's communicator id: a hash of its group, equal at every member of both
/// sides (the runtime hashes the group and the tag).
fn union_id(union: &[u32]) -> CommId {
    CommId(union.iter().fold(0x1c, |h, &w| mix(h, w as u64)).max(2))
}

impl Scripts for Creation<'_> {
    type Msg = Msg;

    fn step(
        &mut self,
        r: u32,
        cp: &mut ControlPlane,
        _now: u64,
        send: &mut Vec<(u32, Msg)>,
    ) -> bool {
        let p = &mut self.procs[r as usize];
        if !p.started {
            p.started = true;
            let side = self
                .s
                .sides
                .iter()
                .position(|g| g.contains(&r))
                .unwrap_or(0);
            let key = CommKey {
                comm: p.local_id,
                epoch: Epoch(0),
            };
            cp.add_comm(key, 0, self.s.sides[side].clone());
            p.ic.start(&mut self.more);
            p.steps.extend(self.more.drain(..));
        }
        loop {
            while let Some(step) = p.steps.pop_front() {
                match step {
                    Step::Observe(stage) => {
                        p.stages.push(stage);
                        if p.die_at == Some(stage) {
                            return true;
                        }
                    }
                    Step::ExchangeGroups(g) => send.push((p.remote_leader, Msg::Group(Some(g)))),
                    Step::HandOut { to, group } => {
                        let side = self.s.sides.iter().position(|g| g.contains(&r));
                        let w = side.map_or(r, |side| self.s.sides[side][to as usize]);
                        send.push((w, Msg::Group(group)));
                    }
                    Step::AgreeLocal(v) => p.seq = cp.start_agreement(p.local_id, v),
                    Step::SendPair(m) => send.push((p.remote_leader, Msg::Pair(m))),
                    Step::AgreeUnion { union, value, .. } => {
                        let id = union_id(&union);
                        let key = CommKey {
                            comm: id,
                            epoch: Epoch(0),
                        };
                        cp.add_comm(key, 0, union);
                        p.union_id = Some(id);
                        let seq = cp.start_agreement(id, value);
                        // A refusal is not waited for.
                        p.seq = if value == 1 { seq } else { None };
                    }
                    Step::RevokeUnion => {
                        if let Some(id) = p.union_id {
                            cp.revoke(id);
                        }
                    }
                    Step::Done(outcome) => {
                        p.outcome = Some(outcome);
                        p.stages.push(Stage::Done);
                        if p.die_at == Some(Stage::Done) {
                            return true;
                        }
                    }
                }
            }
            let from = if p.ic.is_leader() {
                p.remote_leader
            } else {
                p.leader
            };
            match p.ic.waiting() {
                Waiting::RemoteGroup => {
                    let got = p
                        .inbox
                        .iter()
                        .position(|(f, m)| *f == from && matches!(m, Msg::Group(_)));
                    match got.and_then(|i| p.inbox.remove(i)) {
                        Some((_, Msg::Group(g))) => p.ic.on_remote_group(g, &mut self.more),
                        _ if cp.is_failed(from) => p.ic.on_remote_group(None, &mut self.more),
                        _ => return false,
                    }
                }
                Waiting::PairMessage => {
                    let got = p
                        .inbox
                        .iter()
                        .position(|(f, m)| *f == from && matches!(m, Msg::Pair(_)));
                    match got.and_then(|i| p.inbox.remove(i)) {
                        Some((_, Msg::Pair(m))) => p.ic.on_pair_message(m, &mut self.more),
                        _ if cp.is_failed(from) => p.ic.on_pair_failure(&mut self.more),
                        _ => return false,
                    }
                }
                w @ (Waiting::LocalDecision | Waiting::UnionDecision) => {
                    let id = if w == Waiting::LocalDecision {
                        p.local_id
                    } else {
                        p.union_id.expect("the union exists once agreed on")
                    };
                    let Some(seq) = p.seq else { return false };
                    let Some(d) = cp.comm_mut(id).and_then(|c| c.take_decision(seq)) else {
                        return false;
                    };
                    p.seq = None;
                    let all_acked = d.outcome == crate::Outcome::Success;
                    if w == Waiting::LocalDecision {
                        p.ic.on_local_decision(d.value, all_acked, &mut self.more);
                    } else {
                        p.ic.on_union_decision(d.value, all_acked, &mut self.more);
                    }
                }
                Waiting::Nothing => return false,
            }
            p.steps.extend(self.more.drain(..));
        }
    }

    fn on_message(&mut self, r: u32, from: u32, msg: Msg) {
        self.procs[r as usize].inbox.push_back((from, msg));
    }

    fn finished(&self, r: u32) -> bool {
        self.procs[r as usize].outcome.is_some()
    }
}

/// Runs a scenario.
pub fn run_intercomm(s: &IntercommScenario) -> IntercommRun {
    let leader_world = |side: usize| s.sides[side][s.leaders[side] as usize];
    let procs = (0..s.ranks)
        .map(|r| {
            let side = s.sides.iter().position(|g| g.contains(&r)).unwrap_or(0);
            let me = s.sides[side].iter().position(|&w| w == r).unwrap_or(0) as u32;
            Proc {
                ic: IntercommCreate::new(s.sides[side].clone(), me, s.leaders[side])
                    .expect("the leader is a rank of its group"),
                local_id: CommId(10 + side as u64),
                leader: leader_world(side),
                remote_leader: leader_world(1 - side),
                union_id: None,
                seq: None,
                started: false,
                steps: VecDeque::new(),
                inbox: VecDeque::new(),
                die_at: s
                    .stage_crashes
                    .iter()
                    .find(|(w, _)| *w == r)
                    .map(|&(_, st)| st),
                outcome: None,
                stages: Vec::new(),
            }
        })
        .collect();
    let mut creation = Creation {
        s,
        procs,
        more: Vec::new(),
    };
    let net = NetConfig {
        seed: s.seed,
        ranks: s.ranks,
        crashes: s.crashes.clone(),
        notices: s.notices,
        delay_ns: s.delay_ns,
    };
    let driven = drive(&net, &mut creation);
    IntercommRun {
        outcomes: creation.procs.iter().map(|p| p.outcome.clone()).collect(),
        stages: creation.procs.into_iter().map(|p| p.stages).collect(),
        crashed: driven.crashed,
        messages: driven.messages,
        end_ns: driven.end_ns,
    }
}

/// Checks every property of a finished run (see the module doc).
///
/// # Errors
/// The first violation, named with the seed.
pub fn check_intercomm(s: &IntercommScenario, run: &IntercommRun) -> Result<(), String> {
    let fail = |what: String| Err(format!("seed {}: {what}", s.seed));
    let survivors: Vec<usize> = (0..s.ranks as usize).filter(|&r| !run.crashed[r]).collect();
    let mut first: Option<(usize, &Option<Vec<u32>>)> = None;
    for &r in &survivors {
        let Some(outcome) = &run.outcomes[r] else {
            return fail(format!(
                "rank {r} did not return from the creation by {} ns (limit {LIMIT_NS})",
                run.end_ns
            ));
        };
        match first {
            None => first = Some((r, outcome)),
            Some((other, o)) if o != outcome => {
                return fail(format!(
                    "rank {r} returned {outcome:?}, rank {other} returned {o:?}"
                ))
            }
            Some(_) => {}
        }
    }
    if let Some((_, Some(union))) = first {
        let (expected, _) = crate::control::intercomm::union_of(&s.sides[0], &s.sides[1]);
        if *union != expected {
            return fail(format!(
                "the creation returned the union {union:?}, not the groups' {expected:?}"
            ));
        }
        if let Some(r) = survivors.iter().find(|&&r| !union.contains(&(r as u32))) {
            return fail(format!("the union {union:?} lacks the survivor {r}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario with no crash, to doctor.
    fn clean() -> (IntercommScenario, IntercommRun) {
        let mut s = IntercommScenario::random(3);
        s.crashes.clear();
        s.stage_crashes.clear();
        let run = run_intercomm(&s);
        check_intercomm(&s, &run).unwrap();
        assert!(run.outcomes.iter().all(|o| matches!(o, Some(Some(_)))));
        (s, run)
    }

    #[test]
    fn without_crashes_every_process_gets_the_union() {
        for seed in 0..50 {
            let mut s = IntercommScenario::random(seed);
            s.crashes.clear();
            s.stage_crashes.clear();
            let run = run_intercomm(&s);
            check_intercomm(&s, &run).unwrap();
            let (union, _) = crate::control::intercomm::union_of(&s.sides[0], &s.sides[1]);
            for o in &run.outcomes {
                assert_eq!(o.as_ref(), Some(&Some(union.clone())), "seed {seed}");
            }
        }
    }

    #[test]
    fn a_leader_dying_before_the_pair_fails_the_creation_everywhere() {
        let mut s = IntercommScenario::random(5);
        s.crashes.clear();
        s.stage_crashes = vec![(s.sides[0][s.leaders[0] as usize], Stage::Exchanged)];
        let run = run_intercomm(&s);
        check_intercomm(&s, &run).unwrap();
        for r in (0..s.ranks as usize).filter(|&r| !run.crashed[r]) {
            assert_eq!(run.outcomes[r], Some(None), "rank {r}");
        }
    }

    #[test]
    fn the_checker_sees_a_survivor_that_never_returned() {
        let (s, mut run) = clean();
        run.outcomes[0] = None;
        assert!(check_intercomm(&s, &run)
            .unwrap_err()
            .contains("did not return"));
    }

    #[test]
    fn the_checker_sees_outcomes_that_differ() {
        let (s, mut run) = clean();
        run.outcomes[1] = Some(None);
        assert!(check_intercomm(&s, &run).unwrap_err().contains("returned"));
    }

    #[test]
    fn the_checker_sees_a_union_that_lacks_a_survivor_or_is_not_the_groups() {
        let (s, mut run) = clean();
        for o in run.outcomes.iter_mut() {
            if let Some(Some(u)) = o {
                u.retain(|&w| w != 0);
            }
        }
        assert!(check_intercomm(&s, &run)
            .unwrap_err()
            .contains("not the groups'"));
        // The same union everywhere, lacking a survivor although it is the groups':
        // a scenario whose groups miss a rank.
        let (mut s, run) = clean();
        let dropped = s.sides[1].pop();
        if s.sides[1].is_empty() {
            s.sides[1].push(dropped.unwrap());
            s.sides[0].pop();
        }
        let mut run2 = IntercommRun {
            outcomes: vec![
                Some(Some(
                    crate::control::intercomm::union_of(&s.sides[0], &s.sides[1]).0
                ));
                s.ranks as usize
            ],
            crashed: run.crashed.clone(),
            ..Default::default()
        };
        assert!(check_intercomm(&s, &run2).unwrap_err().contains("lacks"));
        run2.crashed = vec![true; s.ranks as usize];
        check_intercomm(&s, &run2).unwrap();
    }
}
