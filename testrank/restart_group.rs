//! The `group` and `abort` modes of the restart test rank (see the crate doc).

use std::time::{Duration, Instant};
use steadfast::{Comm, CommError, World};

use super::{die, pattern, restart};

const KILL: u32 = 21;
const PING: u32 = 22;
const PONG: u32 = 23;
const NEVER: u32 = 24;
const DONE: u32 = 25;
/// `group TIMES`: world ranks 1 to n - 1 form the group; its last rank is the victim.
pub fn run(world: &World, times: u32) {
    let me = world.rank();
    let victim = world.size() - 2;
    if world.is_restored() {
        match world.rejoin("other") {
            Err(CommError::InvalidArgument(m)) => {
                assert!(m.contains("no communicator was saved as \"other\""), "{m}")
            }
            other => panic!("rejoin of a name never saved: {other:?}"),
        }
        let t = Instant::now();
        let grp = world
            .rejoin("grp")
            .unwrap_or_else(|e| panic!("rank {me}: rejoin: {e}"));
        println!(
            "REJOINED generation {} in {} us",
            world.generation(),
            t.elapsed().as_micros()
        );
        assert_eq!((grp.rank(), grp.size()), (victim, victim + 1));
        restored(world, &grp, times);
        return;
    }
    let wc = world.comm();
    let grp = wc.split(u32::from(me != 0), me).unwrap();
    if me == 0 {
        // Outside the group: waits for the end.
        let mut d = [0u8; 1];
        wc.recv(Some(1), Some(DONE), &mut d).unwrap();
        return;
    }
    grp.save("grp").unwrap();
    // Misuse is refused by name; nothing restarted yet: nothing to readmit.
    assert!(matches!(
        world.rejoin("grp"),
        Err(CommError::InvalidArgument(m)) if m.contains("first incarnation")
    ));
    assert!(matches!(
        grp.save("a b"),
        Err(CommError::InvalidArgument(_))
    ));
    assert_eq!(grp.readmit(), Ok(vec![]));
    if grp.rank() == victim {
        let mut k = [0u8; 1];
        grp.recv(Some(0), Some(KILL), &mut k).unwrap();
        die();
    }
    for g in 1..=times {
        let killed = Instant::now();
        if grp.rank() == 0 {
            grp.send(victim, KILL, b"k").unwrap();
            let got = restart(world, &grp, victim).unwrap();
            assert_eq!(got, g);
        }
        let readmit = Instant::now();
        let back = grp
            .readmit()
            .unwrap_or_else(|e| panic!("rank {me}: readmit {g}: {e}"));
        let readmit_us = readmit.elapsed().as_micros();
        assert_eq!(
            back,
            vec![victim],
            "rank {me}: readmitted at generation {g}"
        );
        // Both ways, then an agreement over all three.
        let mine = pattern(g + grp.rank());
        grp.send(victim, PING, &mine).unwrap();
        let mut buf = vec![0u8; 3000];
        let st = grp.recv(Some(victim), Some(PONG), &mut buf).unwrap();
        let mut want = mine;
        want.reverse();
        assert_eq!((st.len, &buf), (3000, &want), "generation {g}'s answer");
        agree(world, &grp, g);
        if grp.rank() == 0 {
            println!(
                "READMITTED generation {g}: readmit call {} us; kill to agreement over all {} us",
                readmit_us,
                killed.elapsed().as_micros()
            );
        }
    }
    final_phase(world, &grp);
    if grp.rank() == 0 {
        wc.send(0, DONE, b"d").unwrap();
    }
}

/// The agreement over the whole group, each member taking one bit out.
fn agree(world: &World, grp: &Comm, g: u32) {
    let v = grp
        .agree(!(1u64 << grp.rank()))
        .unwrap_or_else(|e| panic!("rank {}: agree at generation {g}: {e}", world.rank()));
    assert_eq!(v, !((1u64 << grp.size()) - 1));
    println!("AGREED generation {g} value {v:#x}");
}

/// A restarted member: answers both survivors, agrees, then dies again or ends.
fn restored(world: &World, grp: &Comm, times: u32) {
    let g = world.generation();
    for from in 0..grp.rank() {
        let mut buf = vec![0u8; 3000];
        let st = grp.recv(Some(from), Some(PING), &mut buf).unwrap();
        assert_eq!((st.len, &buf), (3000, &pattern(g + from)), "from {from}");
        buf.reverse();
        grp.send(from, PONG, &buf).unwrap();
    }
    agree(world, grp, g);
    if g < times {
        let mut k = [0u8; 1];
        grp.recv(Some(0), Some(KILL), &mut k).unwrap();
        die();
    }
    final_phase(world, grp);
}

/// The restarted member revokes the group; the others' blocked receives end; all of
/// them shrink it and agree.
fn final_phase(world: &World, grp: &Comm) {
    let victim = grp.size() - 1;
    if grp.rank() == victim {
        grp.revoke();
    } else {
        let mut b = [0u8; 1];
        assert_eq!(
            grp.recv(Some(victim), Some(NEVER), &mut b),
            Err(CommError::Revoked)
        );
    }
    assert!(grp.is_revoked());
    let s = grp.shrink().unwrap();
    assert_eq!(s.size(), grp.size());
    let v = s.agree(5).unwrap();
    println!(
        "SHRUNK size {} agreed {v} (world rank {} incarnation {})",
        s.size(),
        world.rank(),
        world.generation()
    );
}

/// `abort`.
pub fn abort(world: &World) {
    let me = world.rank();
    let wc = world.comm();
    let grp = wc.split(u32::from(me >= 2), me).unwrap();
    // Everyone is past the split before the group goes (a barrier could still be
    // finishing elsewhere when the group dies).
    if me < 2 {
        wc.send(2, DONE, b"r").unwrap();
    }
    if me >= 2 {
        if grp.rank() == 0 {
            for r in [0, 1] {
                let mut d = [0u8; 1];
                wc.recv(Some(r), Some(DONE), &mut d).unwrap();
            }
            let e = grp.abort(7);
            panic!("abort refused: {e}");
        }
        // Killed by the abort; waits for it.
        loop {
            world.progress_for(Duration::from_millis(10));
        }
    }
    let start = Instant::now();
    while wc.failed_ranks() != [2, 3] {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the group never failed"
        );
        world.progress_for(Duration::from_millis(1));
    }
    let s = wc.shrink().unwrap();
    assert_eq!(s.size(), 2);
    let v = s.agree(3).unwrap();
    println!("SURVIVED rank {me} size {} agreed {v}", s.size());
}
