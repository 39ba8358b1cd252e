//! The fault-tolerance calls queued in a thread's lane (`tests/threads.rs`;
//! `src/comm/post.rs`).
//!
//! `lane-ft`: on every rank, a thread posts a receive nobody matches on a dup'ed
//! communicator and then holds the engine, as a thread descheduled in the middle of a
//! round would. Meanwhile the main thread starts an agreement on that communicator
//! (contribution: every bit but the one of its rank), tests it ("not yet", at once), and
//! rank 0 revokes the communicator: these calls must return while the engine is still
//! held (the holder lets go when they have, or after 30 s: then the rank panics).
//! Once the holder lets go, its receive ends with `Revoked` on every rank (rank 0's
//! queued revoke, broadcast to the others), and the queued agreement decides the AND of
//! every rank's contribution everywhere. Prints `LANE FT <rank> <value hex> <µs the
//! calls took>`.

use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use steadfast::{Comm, CommError, World};

use super::held::while_held;

/// The tag of the receive nobody matches.
const UNMATCHED: u32 = 77;

pub(crate) fn lane_ft(_world: &World, comm: &Comm) {
    let (rank, size) = (comm.rank(), comm.size());
    let d = comm.dup().unwrap();
    let (held_tx, held_rx) = channel();
    let (done_tx, done_rx) = channel::<()>();
    let holder = {
        let d = d.clone();
        let peer = (rank + 1) % size;
        std::thread::spawn(move || {
            let r = d
                .irecv_owned(Some(peer), Some(UNMATCHED), vec![0u8; 8])
                .unwrap();
            let hold = d.hold_engine_for_test();
            held_tx.send(()).unwrap();
            let in_time = done_rx.recv_timeout(Duration::from_secs(30)).is_ok();
            drop(hold);
            (in_time, r.wait().1)
        })
    };
    held_rx.recv().unwrap();
    let start = Instant::now();
    let mut agreement = d.iagree(!(1u64 << rank));
    assert!(
        agreement.test().unwrap().is_none(),
        "rank {rank}: decided while the engine is held"
    );
    if rank == 0 {
        d.revoke();
    }
    let took = start.elapsed();
    done_tx.send(()).unwrap();
    let (in_time, received) = holder.join().unwrap();
    assert!(
        in_time,
        "rank {rank}: iagree/revoke waited for the holder ({took:?})"
    );
    match received {
        Err(CommError::Revoked) => {}
        other => panic!("rank {rank}: the held receive ended with {other:?}"),
    }
    let decided = agreement.wait().unwrap();
    let want = (0..size).fold(!0u64, |v, r| v & !(1u64 << r));
    assert_eq!(decided.value, want, "rank {rank}: {decided:?}");
    assert!(
        decided.all_acked && decided.failed.is_empty(),
        "{decided:?}"
    );
    assert!(d.is_revoked());
    d.free().unwrap();
    println!("LANE FT {rank} {:#x} {}", decided.value, took.as_micros());
}

/// `lane-queries` on 2 ranks: rank 1 SIGKILLs itself after an agreement; rank 0 learns
/// it from a receive, then, while a thread holds its engine, reads `failed_ranks`,
/// `any_failed` and `ack_failed` (1, queued) without the engine and posts a wildcard
/// receive (queued behind the acknowledgement). Once the holder lets go, that receive
/// does not report `ProcFailedPending` (a control receive posted before the
/// acknowledgement did) and gets rank 0's message to itself. Prints
/// `LANE QUERIES 0 <µs the calls took>`.
pub(crate) fn lane_queries(comm: &Comm) {
    let rank = comm.rank();
    match comm.agree(1) {
        Ok(_) => {}
        // Rank 1 dies as soon as its own agreement decides: rank 0 may learn of the
        // death before the decision reaches it, and ULFM's agreement then reports it.
        Err(CommError::ProcFailed { ranks }) if rank == 0 => assert_eq!(ranks, vec![1]),
        Err(e) => panic!("the agreement before the kill: {e}"),
    }
    if rank == 1 {
        crate::die_now();
    }
    let mut b = [0u8; 8];
    match comm.recv(Some(1), Some(3), &mut b) {
        Err(CommError::ProcFailed { ranks }) => assert_eq!(ranks, vec![1]),
        other => panic!("a receive from the dead rank: {other:?}"),
    }
    // Unacknowledged: a wildcard receive reports it (and stays posted: dropped here).
    let mut control = comm.irecv_owned(None, Some(6), vec![0u8; 8]).unwrap();
    match control.test() {
        Err(CommError::ProcFailedPending { ranks }) => assert_eq!(ranks, vec![1]),
        other => panic!("a wildcard receive before the acknowledgement: {other:?}"),
    }
    drop(control);
    let ((failed, any, acked, mut wildcard), took) = while_held(comm, || {
        let failed = comm.failed_ranks();
        let any = comm.any_failed();
        let acked = comm.ack_failed();
        let mut r = comm.irecv_owned(None, Some(5), vec![0u8; 8]).unwrap();
        assert!(r.test().unwrap().is_none(), "completed while held");
        (failed, any, acked, r)
    });
    assert_eq!(failed, vec![1], "failed_ranks while held");
    assert!(any, "any_failed while held");
    assert_eq!(acked, 1, "ack_failed's count while held");
    assert_eq!(
        comm.get_failed(),
        vec![1],
        "the queued acknowledgement applied"
    );
    match wildcard.test() {
        Ok(None) => {}
        other => panic!("the wildcard receive after the queued acknowledgement: {other:?}"),
    }
    comm.send(0, 5, &[5u8; 8]).unwrap();
    let (buf, st) = wildcard.wait();
    assert_eq!((st.unwrap().source, buf[0]), (0, 5));
    println!("LANE QUERIES {rank} {}", took.as_micros());
}
