//! The leaders and workers: a group communicator (a saved `split` of the world); the
//! leader splits each query among its workers, restarts those that die and readmits
//! them, keeps the answers it gave (a restarted master asks for them) and restarts a
//! dead master; a worker readmits its restarted leader when its receive from it fails.

use std::time::Duration;
use steadfast::{Comm, CommError, World};

use super::{
    bytes, part, restart, words, Layout, ABORT_CODE, ANSWER, BYE, HELD, ITEMS, KIND_READMIT,
    KIND_STOP, KIND_WORK, LOST, PART, QUERY, STATE, STOP, WORK,
};

const NAME: &str = "grp";

pub fn run(world: &World, layout: &Layout) {
    let me = world.rank();
    let g = (me - 1) / layout.size;
    let grp = if world.is_restored() {
        // With a survivor in the group, it readmits this process; with none (the group
        // was aborted, or all died), the lowest restarted member re-founds it.
        match world.rejoin(NAME) {
            Ok(grp) => grp,
            Err(e) => {
                log::error!("rank {me}: rejoining the group: {e}");
                if me == layout.leader(g) {
                    let _ = world.comm().send(0, ANSWER, &bytes(&[LOST, 0]));
                }
                return;
            }
        }
    } else {
        let grp = world.comm().split(g + 1, me).expect("split");
        grp.save(NAME).expect("save");
        println!("MLW READY rank {me}");
        grp
    };
    if grp.rank() == 0 {
        lead(world, &grp);
    } else {
        work(&grp);
    }
}

/// The leader: answers the master's queries until it says stop; restarts a dead master
/// and tells a restarted one the answers it gave.
fn lead(world: &World, grp: &Comm) {
    let wc = world.comm();
    // A restarted leader first brings back the workers that are gone.
    heal(world, grp);
    // (index, answer) of every query this incarnation answered.
    let mut given: Vec<(u64, u64)> = Vec::new();
    loop {
        let mut b = [0u8; 16];
        match wc.recv(Some(0), Some(QUERY), &mut b) {
            Ok(_) => {}
            Err(CommError::ProcFailed { .. }) => {
                // Every leader that notices asks; one process starts.
                match restart(world, &wc, 0) {
                    Ok(generation) => {
                        log::info!("leader {}: master restarted ({generation})", world.rank());
                        continue;
                    }
                    Err(e) => {
                        log::error!("leader {}: cannot restart the master: {e}", world.rank());
                        return;
                    }
                }
            }
            Err(e) => {
                log::error!("leader {}: receiving a query: {e}", world.rank());
                return;
            }
        }
        let [index, q] = words(&b)[..] else {
            unreachable!("two words")
        };
        if index == STOP {
            stop_workers(world, grp);
            let _ = wc.send(0, ANSWER, &bytes(&[STOP, 0]));
            return;
        }
        if index == STATE {
            let mut held = vec![given.len() as u64];
            held.extend(given.iter().flat_map(|&(i, v)| [i, v]));
            // A dead master: the next receive says so.
            let _ = wc.send(0, HELD, &bytes(&held));
            continue;
        }
        let value = solve(world, grp, index, q);
        given.push((index, value));
        // A dead master: the next receive says so.
        let _ = wc.send(0, ANSWER, &bytes(&[index, value]));
    }
}

/// The range of items of worker `w` (comm rank 1..size) of query.
fn range(grp: &Comm, w: u32) -> (u64, u64) {
    let n = u64::from(grp.size() - 1);
    let k = u64::from(w - 1);
    (ITEMS * k / n, ITEMS * (k + 1) / n)
}

/// One query: a part per worker; a worker restarted before it answered gets its part
/// again (its earlier incarnation's answer, if any, was dropped by fencing).
fn solve(world: &World, grp: &Comm, index: u64, q: u64) -> u64 {
    if grp.size() == 1 {
        return part(q, 0, ITEMS);
    }
    let n = grp.size() as usize;
    let mut parts: Vec<Option<u64>> = vec![None; n];
    // Sent a part and not answered yet.
    let mut owed = vec![false; n];
    let mut to_send: Vec<u32> = (1..grp.size()).collect();
    loop {
        let mut broken = false;
        for &w in &to_send {
            let (lo, hi) = range(grp, w);
            owed[w as usize] = true;
            if grp
                .send(w, WORK, &bytes(&[KIND_WORK, index, q, lo, hi]))
                .is_err()
            {
                broken = true;
            }
        }
        for w in 1..grp.size() {
            if !owed[w as usize] || broken {
                continue;
            }
            let mut b = [0u8; 24];
            match grp.recv(Some(w), Some(PART), &mut b) {
                Ok(_) => {
                    let [i, lo, p] = words(&b)[..] else {
                        unreachable!("three words")
                    };
                    if i == index && lo == range(grp, w).0 {
                        parts[w as usize] = Some(p);
                        owed[w as usize] = false;
                    } else {
                        log::warn!("stale part of query {i} from worker {w}: dropped");
                    }
                }
                Err(_) => broken = true,
            }
        }
        if !broken && parts[1..].iter().all(Option::is_some) {
            return parts[1..]
                .iter()
                .fold(0u64, |s, p| s.wrapping_add(p.expect("every part")));
        }
        for w in heal(world, grp) {
            parts[w as usize] = None;
            owed[w as usize] = false;
        }
        to_send = (1..grp.size())
            .filter(|&w| parts[w as usize].is_none() && !owed[w as usize])
            .collect();
    }
}

/// Restarts every dead worker and readmits them with the live ones (in rounds, as
/// long as some die meanwhile); returns the readmitted ones. A worker that cannot be
/// restarted aborts the group.
fn heal(world: &World, grp: &Comm) -> Vec<u32> {
    let mut back: Vec<u32> = Vec::new();
    // Restarted and not readmitted yet.
    let mut waiting: Vec<u32> = Vec::new();
    for _ in 0..100 {
        let dead: Vec<u32> = grp.failed_ranks().into_iter().filter(|&r| r != 0).collect();
        if dead.is_empty() && waiting.is_empty() {
            break;
        }
        for &w in &dead {
            if let Err(e) = restart(world, grp, w) {
                log::error!("leader {}: cannot restart worker {w}: {e}", world.rank());
                let e = grp.abort(ABORT_CODE);
                panic!("abort of the group refused: {e}");
            }
            if !waiting.contains(&w) {
                waiting.push(w);
            }
        }
        for w in 1..grp.size() {
            if !waiting.contains(&w) {
                // A worker dead meanwhile: the next round restarts it.
                let _ = grp.send(w, WORK, &bytes(&[KIND_READMIT, 0, 0, 0, 0]));
            }
        }
        match grp.readmit() {
            Ok(r) => {
                waiting.retain(|w| !r.contains(w));
                back.extend(r);
            }
            Err(e) => log::warn!("leader {}: readmit: {e}", world.rank()),
        }
    }
    back
}

/// Tells every worker to stop and waits for its goodbye (restarting the dead).
fn stop_workers(world: &World, grp: &Comm) {
    for w in 1..grp.size() {
        loop {
            let mut b = [0u8; 24];
            let ok = grp
                .send(w, WORK, &bytes(&[KIND_STOP, 0, 0, 0, 0]))
                .and_then(|_| grp.recv(Some(w), Some(PART), &mut b))
                .is_ok();
            if ok && words(&b)[0] == BYE {
                break;
            }
            if !ok {
                heal(world, grp);
            }
        }
    }
}

/// A worker: computes the parts its leader sends until told to stop.
fn work(grp: &Comm) {
    loop {
        let mut b = [0u8; 40];
        match grp.recv(Some(0), Some(WORK), &mut b) {
            Ok(_) => {}
            Err(CommError::ProcFailed { .. }) => {
                await_leader(grp);
                continue;
            }
            Err(e) => panic!("worker {}: {e}", grp.rank()),
        }
        let [kind, index, q, lo, hi] = words(&b)[..] else {
            unreachable!("five words")
        };
        match kind {
            KIND_WORK => {
                // A dead leader: the next receive says so.
                let _ = grp.send(0, PART, &bytes(&[index, lo, part(q, lo, hi)]));
            }
            KIND_READMIT => {
                if let Err(e) = grp.readmit() {
                    log::warn!("worker {}: readmit: {e}", grp.rank());
                }
            }
            KIND_STOP => {
                let _ = grp.send(0, PART, &bytes(&[BYE, 0, 0]));
                return;
            }
            other => panic!("worker {}: unknown order {other}", grp.rank()),
        }
    }
}

/// The leader died: readmit with the other live workers until the master's restart of
/// it is among the readmitted.
fn await_leader(grp: &Comm) {
    loop {
        match grp.readmit() {
            Ok(back) if back.contains(&0) => return,
            Ok(_) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("worker {}: readmitting the leader: {e}", grp.rank()),
        }
    }
}
