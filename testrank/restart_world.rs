//! `world TIMES VICTIMS` (n ranks): the world communicator itself saved, killed,
//! restarted and rejoined (`docs/restart.md`, "Saved communicators").
//!
//! Every rank saves the world as `"w"`. The last VICTIMS ranks are SIGKILLed together,
//! TIMES times; victim i is restarted by rank i (each restarter asks for one rank:
//! one restart at a time per process). The survivors readmit on the world until every
//! victim is back; each restarted process first finds its world restored
//! (`RestoredWorld` for an agreement and a save), then rejoins `"w"`. Then every rank
//! agrees over the world (each takes its own bit out: `AGREED generation G value V`),
//! shrinks it (nobody is failed: the same size) and agrees on the shrunk one. After
//! the last round every rank agrees once more (`FINAL`) and finalizes (its agreement
//! counts the restarted ones).

use std::time::Instant;

use steadfast::{Comm, CommError, World};

use super::{die, restart};

/// Rank 0 to a victim: die now.
const KILL: u32 = 21;

/// The world communicator's victims: the last `victims` ranks.
fn victims_of(world: &World, victims: u32) -> std::ops::Range<u32> {
    let n = world.size();
    assert!(
        victims >= 1 && 2 * victims <= n,
        "{victims} victims need as many restarters among {n} ranks"
    );
    n - victims..n
}

/// Runs the mode on every rank, each incarnation.
pub fn run(world: &World, times: u32, victims: u32) {
    let wc = world.comm();
    let me = world.rank();
    let targets = victims_of(world, victims);
    if world.is_restored() {
        restored(world, times);
    } else {
        wc.save("w")
            .unwrap_or_else(|e| panic!("rank {me}: save of the world: {e}"));
        if targets.contains(&me) {
            let mut k = [0u8; 1];
            wc.recv(Some(0), Some(KILL), &mut k).unwrap();
            die();
        }
        for g in 1..=times {
            survive(world, &wc, targets.clone(), g);
        }
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

/// A survivor's round `g`: kill, restart (the restarters), readmit, agree, shrink.
fn survive(world: &World, wc: &Comm, targets: std::ops::Range<u32>, g: u32) {
    let me = world.rank();
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
            .unwrap_or_else(|e| panic!("rank {me}: restart {g} of rank {v}: {e}"));
        assert_eq!(got, g, "rank {me}: the incarnation of rank {v}");
    }
    let mut back = Vec::new();
    while back.len() < targets.len() {
        let more = wc
            .readmit()
            .unwrap_or_else(|e| panic!("rank {me}: readmit {g} on the world: {e}"));
        back.extend(more);
    }
    back.sort_unstable();
    assert_eq!(
        back,
        targets.clone().collect::<Vec<_>>(),
        "rank {me}: readmitted at generation {g}"
    );
    agree_and_shrink(world, wc, g);
    if me == 0 {
        println!(
            "WORLD READMITTED generation {g}: kill to agreement over all {} us",
            killed.elapsed().as_micros()
        );
    }
}

/// A restarted process: restored world first, then rejoined; agrees, shrinks, and dies
/// again unless it is the last incarnation.
fn restored(world: &World, times: u32) {
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
        "WORLD REJOINED rank {me} generation {g} in {} us",
        t.elapsed().as_micros()
    );
    assert_eq!((rejoined.rank(), rejoined.size()), (me, world.size()));
    // The world is rejoined once.
    assert!(matches!(
        world.rejoin("w"),
        Err(CommError::InvalidArgument(m)) if m.contains("rejoined already")
    ));
    // The handle of the init sees the switch (same communicator).
    agree_and_shrink(world, &wc, g);
    if g < times {
        let mut k = [0u8; 1];
        wc.recv(Some(0), Some(KILL), &mut k).unwrap();
        die();
    }
}

/// An agreement over the whole world (each rank takes its bit out), then a shrink
/// (nobody failed: the same ranks) and an agreement on it.
fn agree_and_shrink(world: &World, wc: &Comm, g: u32) {
    let me = world.rank();
    let v = wc
        .agree(!(1u64 << me))
        .unwrap_or_else(|e| panic!("rank {me}: agree over the world at generation {g}: {e}"));
    assert_eq!(v, !((1u64 << wc.size()) - 1), "rank {me}: generation {g}");
    println!("AGREED generation {g} value {v:#x}");
    let s = wc
        .shrink()
        .unwrap_or_else(|e| panic!("rank {me}: shrink of the world at generation {g}: {e}"));
    assert_eq!((s.rank(), s.size()), (me, wc.size()));
    let v = s
        .agree(u64::from(g) + 1)
        .unwrap_or_else(|e| panic!("rank {me}: agree over the shrunk world: {e}"));
    println!("SHRUNK generation {g} size {} agreed {v}", s.size());
}
