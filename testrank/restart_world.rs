//! `world TIMES VICTIMS ROTATE` (n ranks): the world communicator itself saved, killed,
//! restarted and rejoined (`docs/restart.md`, "Saved communicators").
//!
//! Every rank saves the world as `"w"`. In each of TIMES rounds, VICTIMS ranks are
//! SIGKILLed together: the last VICTIMS ranks every round; with ROTATE = 1 (one victim)
//! rank n - 1, then n - 2, ..., down to rank 2, so that a rank restarted and rejoined
//! in an earlier round is a survivor that readmits the next one. Victim i is restarted
//! by rank i (each restarter asks for one rank: one restart at a time per process).
//! The survivors readmit on the world until every victim is back; each restarted
//! process first finds its world restored (`RestoredWorld` for an agreement and a
//! save), then rejoins `"w"`. Then every rank agrees over the world (each takes its own
//! bit out: `AGREED round R value V`), shrinks it (nobody is failed: the same size) and
//! agrees on the shrunk one. After the last round every rank agrees once more
//! (`FINAL`) and finalizes (its agreement counts the restarted ones).

use std::ops::Range;
use std::time::Instant;

use steadfast::{Comm, CommError, World};

use super::{die, restart};

/// Rank 0 to a victim: die now.
const KILL: u32 = 21;

/// Who dies in which round.
#[derive(Clone, Copy)]
pub struct Plan {
    /// World size.
    n: u32,
    /// Victims per round.
    victims: u32,
    /// One victim, a different rank each round.
    rotate: bool,
}

impl Plan {
    pub fn new(n: u32, victims: u32, rotate: bool) -> Plan {
        assert!(
            victims >= 1 && 2 * victims <= n && (!rotate || (victims == 1 && n >= 3)),
            "{victims} victims need as many restarters among {n} ranks (rotation: one victim)"
        );
        Plan { n, victims, rotate }
    }

    /// The victims of round `round` (from 1).
    fn victims(self, round: u32) -> Range<u32> {
        if self.rotate {
            let v = self.n - 1 - (round - 1) % (self.n - 2);
            return v..v + 1;
        }
        self.n - self.victims..self.n
    }

    /// Rank `w`'s incarnation once round `round` is over.
    fn generation_after(self, w: u32, round: u32) -> u32 {
        (1..=round)
            .filter(|&r| self.victims(r).contains(&w))
            .count() as u32
    }

    /// The round that started incarnation `generation` (> 0) of rank `w`.
    fn start_round(self, w: u32, generation: u32) -> u32 {
        (1..)
            .find(|&r| self.generation_after(w, r) == generation)
            .expect("an unbounded range")
    }
}

/// Runs the mode on every rank, each incarnation.
pub fn run(world: &World, times: u32, plan: Plan) {
    let wc = world.comm();
    let me = world.rank();
    let first = if world.is_restored() {
        let round = plan.start_round(me, world.generation());
        restored(world, round);
        round + 1
    } else {
        wc.save("w")
            .unwrap_or_else(|e| panic!("rank {me}: save of the world: {e}"));
        1
    };
    for round in first..=times {
        if plan.victims(round).contains(&me) {
            let mut k = [0u8; 1];
            wc.recv(Some(0), Some(KILL), &mut k).unwrap();
            die();
        }
        survive(world, &wc, plan, round);
    }
    let v = wc
        .agree(u64::from(me) << 32 | 0xff)
        .unwrap_or_else(|e| panic!("rank {me}: final agreement: {e}"));
    assert_eq!(v, 0xff, "rank {me}: the final agreement's value");
    println!(
        "FINAL rank {me} incarnation {} value {v:#x}",
        world.generation()
    );
}

/// A survivor's round: kill, restart (the restarters), readmit, agree, shrink.
fn survive(world: &World, wc: &Comm, plan: Plan, round: u32) {
    let me = world.rank();
    let targets = plan.victims(round);
    let killed = Instant::now();
    if me == 0 {
        for v in targets.clone() {
            wc.send(v, KILL, b"k").unwrap();
        }
    }
    // Rank i restarts victim i: each restarter has its own victim admitted before it
    // readmits, so no survivor agrees on a part of the victims.
    if let Some(v) = targets.clone().nth(me as usize) {
        let got = restart(world, wc, v)
            .unwrap_or_else(|e| panic!("rank {me}: restart of rank {v} in round {round}: {e}"));
        assert_eq!(
            got,
            plan.generation_after(v, round),
            "rank {me}: the incarnation of rank {v}"
        );
    }
    let mut back = Vec::new();
    while back.len() < targets.len() {
        let more = wc
            .readmit()
            .unwrap_or_else(|e| panic!("rank {me}: readmit on the world in round {round}: {e}"));
        back.extend(more);
    }
    back.sort_unstable();
    assert_eq!(
        back,
        targets.collect::<Vec<_>>(),
        "rank {me}: readmitted in round {round}"
    );
    agree_and_shrink(world, wc, round);
    if me == 0 {
        println!(
            "WORLD READMITTED round {round}: kill to agreement over all {} us",
            killed.elapsed().as_micros()
        );
    }
}

/// A restarted process (started in round `round`): restored world first, then
/// rejoined; agrees and shrinks with the others.
fn restored(world: &World, round: u32) {
    let (me, g) = (world.rank(), world.generation());
    let wc = world.comm();
    // Not rejoined yet: the world's agreement state is its init's.
    assert_eq!(wc.agree(1), Err(CommError::RestoredWorld));
    assert_eq!(wc.save("again"), Err(CommError::RestoredWorld));
    let t = Instant::now();
    let rejoined = world
        .rejoin("w")
        .unwrap_or_else(|e| panic!("rank {me} incarnation {g}: rejoin of the world: {e}"));
    println!(
        "WORLD REJOINED rank {me} generation {g} round {round} in {} us",
        t.elapsed().as_micros()
    );
    assert_eq!((rejoined.rank(), rejoined.size()), (me, world.size()));
    // The world is rejoined once.
    assert!(matches!(
        world.rejoin("w"),
        Err(CommError::InvalidArgument(m)) if m.contains("rejoined already")
    ));
    // The handle of the init sees the switch (same communicator).
    agree_and_shrink(world, &wc, round);
}

/// An agreement over the whole world (each rank takes its bit out), then a shrink
/// (nobody failed: the same ranks) and an agreement on it.
fn agree_and_shrink(world: &World, wc: &Comm, round: u32) {
    let me = world.rank();
    let v = wc
        .agree(!(1u64 << me))
        .unwrap_or_else(|e| panic!("rank {me}: agree over the world in round {round}: {e}"));
    assert_eq!(v, !((1u64 << wc.size()) - 1), "rank {me}: round {round}");
    println!("AGREED round {round} value {v:#x}");
    let s = wc
        .shrink()
        .unwrap_or_else(|e| panic!("rank {me}: shrink of the world in round {round}: {e}"));
    assert_eq!((s.rank(), s.size()), (me, wc.size()));
    let v = s
        .agree(u64::from(round) + 1)
        .unwrap_or_else(|e| panic!("rank {me}: agree over the shrunk world: {e}"));
    println!("SHRUNK round {round} size {} agreed {v}", s.size());
}
