//! Non-blocking dups (`Comm::idup_on_tag`) under steadfast-run (`tests/contexts.rs`):
//! `idup ROUNDS` runs, ROUNDS times:
//!
//! - the start-then-talk pattern (MPICH's `comm_idup`): rank 0 first receives a
//!   synchronous send from every other rank, which each makes after starting its dup,
//!   and only then starts its own; every rank then waits (a dup made inside the start
//!   call deadlocks here);
//! - three dups at once on three tags of one communicator, with a blocking dup of
//!   another communicator before any is waited for, then waited in reverse order (the
//!   first one holds the process's mask of free ids until it is advanced: the blocking
//!   dup and the later waits must advance it, or they retry for ever);
//!
//! then four threads that each dup their own communicator, some starting only after
//! others' dups completed ([`threads_start_late`]); and checks every new communicator:
//! a message around the ring that must arrive on it and nowhere else, and an allreduce
//! of the ranks. Prints `IDUP OK <communicators>`.

use steadfast::comm::ReduceOp;
use steadfast::{Comm, World};

use super::comms::{send_mark, take_mark};

pub(crate) fn idup(world: &World, comm: &Comm, rounds: u64) {
    let me = comm.rank();
    let n = comm.size();
    let other = comm.dup().unwrap();
    let mut made = 0u64;
    for round in 0..rounds {
        // Start, then talk: rank 0 starts only after every other rank's send.
        let copy = if me == 0 {
            for r in 1..n {
                let mut b = [0u8; 4];
                let st = comm.recv(Some(r), Some(5), &mut b).unwrap();
                assert_eq!((st.len, u32::from_le_bytes(b)), (4, r));
            }
            comm.idup_on_tag(100).unwrap().wait()
        } else {
            let req = comm.idup_on_tag(100).unwrap();
            comm.ssend(0, 5, &me.to_le_bytes()).unwrap();
            req.wait()
        }
        .unwrap_or_else(|e| panic!("rank {me} round {round}: idup: {e}"));
        check(&copy, round * 10);
        made += 1;
        // Three at once, a blocking dup of another communicator among them.
        let reqs: Vec<_> = (0..3).map(|k| comm.idup_on_tag(200 + k).unwrap()).collect();
        let blocking = other
            .dup()
            .unwrap_or_else(|e| panic!("rank {me} round {round}: dup beside idups: {e}"));
        let mut copies: Vec<Comm> = reqs
            .into_iter()
            .rev()
            .map(|r| {
                r.wait()
                    .unwrap_or_else(|e| panic!("rank {me} round {round}: idup: {e}"))
            })
            .collect();
        copies.push(blocking);
        for (k, c) in copies.iter().enumerate() {
            send_mark(c, round * 10 + 1 + k as u64);
        }
        for (k, c) in copies.iter().enumerate() {
            take_mark(c, round * 10 + 1 + k as u64);
        }
        for c in copies {
            check(&c, round * 10 + 5);
            c.free().unwrap();
            made += 1;
        }
        copy.free().unwrap();
    }
    other.free().unwrap();
    made += threads_start_late(comm, rounds.min(20));
    assert!(world.failures().is_empty(), "{:?}", world.failures());
    println!("IDUP OK {made}");
}

/// Four threads each dup their own communicator without blocking; at even ranks
/// threads 0 and 2 start only once threads 1 and 3 have their dups (MPICH's
/// `threads/comm/idup_deadlock`). The lowest creation in progress gets the allocator's
/// mask: a dup that took part in the turns before every member had started it held
/// them at the odd ranks while its even-rank members waited. The number made.
fn threads_start_late(comm: &Comm, rounds: u64) -> u64 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const THREADS: u32 = 4;
    let me = comm.rank();
    let mut made = 0;
    for round in 0..rounds {
        let comms: Vec<Comm> = (0..THREADS).map(|_| comm.dup().unwrap()).collect();
        let done = AtomicU32::new(0);
        std::thread::scope(|s| {
            for (t, c) in comms.iter().enumerate() {
                let done = &done;
                s.spawn(move || {
                    if me % 2 == 0 && t % 2 == 0 {
                        // ORDERING: Acquire; pairs with the Release below (only the
                        // count matters here).
                        while done.load(Ordering::Acquire) < THREADS / 2 {
                            std::thread::yield_now();
                        }
                    }
                    let copy = c
                        .idup_on_tag(300)
                        .and_then(|r| r.wait())
                        .unwrap_or_else(|e| panic!("rank {me} thread {t} round {round}: {e}"));
                    // ORDERING: Release; see the Acquire above.
                    done.fetch_add(1, Ordering::Release);
                    check(&copy, round * 10 + t as u64);
                    copy.free().unwrap();
                });
            }
        });
        for c in comms {
            c.free().unwrap();
        }
        made += u64::from(THREADS);
    }
    made
}

/// A mark around the ring of `c` and an allreduce of the ranks.
fn check(c: &Comm, stamp: u64) {
    let (me, n) = (c.rank(), c.size());
    send_mark(c, stamp);
    take_mark(c, stamp);
    let mut v = [u64::from(me)];
    c.allreduce(&mut v, ReduceOp::Sum).unwrap();
    assert_eq!(v[0], u64::from(n * (n - 1) / 2), "rank {me}: allreduce");
}
