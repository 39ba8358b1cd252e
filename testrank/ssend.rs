//! Scenarios of synchronous sends (`tests/ssend.rs`): `Comm::ssend`/`issend` complete
//! only once the matching receive has started (MPI 4.1, 3.4), and fail instead of
//! hanging when the receiver dies or the communicator is revoked.
//!
//! - `ssend`: rank 1 ssends rank 0 an inline, an eager and a single-copy message; after
//!   each it sends a plain "done" message. Rank 0 waits 300 ms before posting each
//!   receive, and checks that no "done" arrived meanwhile (it would have, had the ssend
//!   returned before the receive was posted); then a synchronous send to oneself stays
//!   incomplete until its receive is posted. Every rank prints `SSEND OK`.
//! - `ssend-fail`: the last rank is sent an issend it never receives, then dies: the
//!   issend fails with `ProcFailed`; rank 1 revokes a duplicate on which rank 0 has an
//!   issend pending to it: `Revoked`. Survivors print `SSENDFAIL OK`.
//! - `mprobe`: matched probes (see [`mprobe`]).
//! - `mprobe-withdrawn`: a taken message its sender withdraws (see [`mprobe_withdrawn`]).
//!
//! Each runs over shared memory and over the fabric (`tests/ssend.rs`).

use std::time::{Duration, Instant};

use steadfast::{Comm, CommError, World, ANY_SOURCE, ANY_TAG};

use super::die_now;

const DONE: u32 = 90;
const DELAY: Duration = Duration::from_millis(300);

fn wait_send(world: &World, mut r: steadfast::comm::SendRequest<'_>, what: &str) -> CommError {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "{what}: the issend never ended");
        match r.test() {
            Ok(false) => world.progress_for(Duration::from_millis(1)),
            Ok(true) => panic!("{what}: the issend completed"),
            Err(e) => return e,
        }
    }
}

pub(crate) fn ssend(world: &World, comm: &Comm) {
    let me = comm.rank();
    let sizes = [8usize, 4096, 1 << 20];
    comm.agree(1).unwrap();
    if me == 1 {
        for (k, &len) in sizes.iter().enumerate() {
            let data = vec![k as u8 + 1; len];
            comm.ssend(0, k as u32, &data).unwrap();
            comm.send(0, DONE, &[k as u8]).unwrap();
        }
    } else if me == 0 {
        for (k, &len) in sizes.iter().enumerate() {
            let until = Instant::now() + DELAY;
            while Instant::now() < until {
                world.progress_for(Duration::from_millis(5));
                assert!(
                    comm.iprobe(Some(1), Some(DONE)).unwrap().is_none(),
                    "ssend of {len} bytes returned before its receive was posted"
                );
            }
            let mut buf = vec![0u8; len];
            let st = comm.recv(Some(1), Some(k as u32), &mut buf).unwrap();
            assert_eq!(st.len, len);
            assert!(buf.iter().all(|&b| b == k as u8 + 1));
            let mut done = [0u8; 1];
            comm.recv(Some(1), Some(DONE), &mut done).unwrap();
            assert_eq!(done[0], k as u8);
        }
    }
    to_self(world, comm);
    comm.agree(1).unwrap();
    println!("SSEND OK");
}

/// An issend to oneself completes only once its receive is posted.
fn to_self(world: &World, comm: &Comm) {
    let me = comm.rank();
    let data = [7u8; 100];
    // SAFETY: the request is waited for before `data` goes out of scope.
    let mut r = unsafe { comm.issend(me, 3, &data) }.unwrap();
    for _ in 0..50 {
        assert!(!r.test().unwrap(), "an issend to self completed unreceived");
        world.progress_for(Duration::from_micros(200));
    }
    let mut buf = [0u8; 100];
    let st = comm.recv(Some(me), Some(3), &mut buf).unwrap();
    assert_eq!((st.source, st.len), (me, 100));
    assert!(
        r.test().unwrap(),
        "the issend to self did not complete once received"
    );
}

pub(crate) fn ssend_fail(world: &World, comm: &Comm) {
    let (me, n) = (comm.rank(), comm.size());
    let victim = n - 1;
    let dup = comm.dup().unwrap();
    let data = [1u8; 64];
    // Rank 0: one issend to the victim, one to rank 1 on `dup`; neither is received.
    // SAFETY: both requests end (or are dropped) before `data` goes out of scope.
    let pending = (me == 0).then(|| unsafe {
        (
            comm.issend(victim, 4, &data).unwrap(),
            dup.issend(1, 5, &data).unwrap(),
        )
    });
    comm.agree(1).unwrap();
    if me == victim {
        die_now();
    }
    if me == 1 {
        dup.revoke();
    }
    if let Some((to_victim, to_one)) = pending {
        let e = wait_send(world, to_victim, "to the dead rank");
        assert_eq!(
            e,
            CommError::ProcFailed {
                ranks: vec![victim]
            }
        );
        let e = wait_send(world, to_one, "on the revoked communicator");
        assert_eq!(e, CommError::Revoked);
        // A new ssend to the dead rank fails at once.
        assert!(matches!(
            comm.ssend(victim, 4, &data),
            Err(CommError::ProcFailed { .. })
        ));
    }
    println!("SSENDFAIL OK");
}

/// `mprobe`: matched probes. Rank 1 sends rank 0 a small and a large message with one
/// tag, an issend, and a large message rank 0 takes and drops. Rank 0 checks that a
/// taken message is out of the queue (a receive posted after the mprobe gets the next
/// one), that the issend completed when its message was taken (before it is received),
/// and that dropping a taken message lets its sender go. Prints `MPROBE OK`.
pub(crate) fn mprobe(world: &World, comm: &Comm) {
    let me = comm.rank();
    let big = 1 << 20;
    if me == 1 {
        comm.send(0, 1, &[5u8; 8]).unwrap();
        comm.send(0, 1, &vec![6u8; big]).unwrap();
        comm.ssend(0, 2, &[7u8; 16]).unwrap();
        comm.send(0, 3, &[]).unwrap();
        comm.send(0, 4, &vec![8u8; big]).unwrap();
        comm.send(0, 5, &[9u8]).unwrap();
    } else if me == 0 {
        let small = comm.mprobe(Some(1), Some(1)).unwrap();
        assert_eq!((small.status().source, small.status().len), (1, 8));
        let mut large = vec![0u8; big];
        let st = comm.recv(Some(1), Some(1), &mut large).unwrap();
        assert_eq!(st.len, big, "the taken message was received again");
        let mut buf = [0u8; 8];
        assert_eq!(small.recv(&mut buf).unwrap().len, 8);
        assert_eq!(buf, [5u8; 8]);
        let sync = loop {
            if let Some(m) = comm.improbe(ANY_SOURCE, Some(2)).unwrap() {
                break m;
            }
            world.progress_for(Duration::from_micros(100));
        };
        // The issend completed when its message was taken: "done" comes first.
        comm.recv(Some(1), Some(3), &mut []).unwrap();
        let mut b16 = [0u8; 16];
        assert_eq!(sync.recv(&mut b16).unwrap().tag, 2);
        let dropped = comm.mprobe(Some(1), Some(4)).unwrap();
        assert_eq!(dropped.status().len, big);
        drop(dropped);
        let mut last = [0u8; 1];
        comm.recv(Some(1), Some(5), &mut last).unwrap();
        assert_eq!(last, [9]);
        assert!(comm.improbe(Some(1), ANY_TAG).unwrap().is_none());
    }
    comm.agree(1).unwrap();
    println!("MPROBE OK");
}

/// Rank 0 takes a 1 MiB message of rank 1 with a matched probe on a duplicate; rank 1
/// then revokes the duplicate, so its send fails with `Revoked` and withdraws the
/// message (over the fabric its registration is revoked), and says so on the parent.
/// Reading the withdrawn message must end as ULFM says, `Revoked`, and must not count
/// the live sender failed (a cancelled read once did: `fabric: peer 1 unreachable:
/// Operation canceled`). Both print `WITHDRAWN OK`. Over the fabric only: over shared
/// memory the sender's send waits for the reader instead.
pub(crate) fn mprobe_withdrawn(comm: &Comm) {
    let me = comm.rank();
    let dup = comm.dup().unwrap();
    let big = 1 << 20;
    if me == 1 {
        let send = dup.isend_owned(0, 1, vec![3u8; big]).unwrap();
        comm.recv(Some(0), Some(10), &mut []).unwrap();
        dup.revoke();
        let (_, sent) = send.wait();
        assert!(matches!(sent, Err(CommError::Revoked)), "send: {sent:?}");
        comm.send(0, 11, &[]).unwrap();
    } else if me == 0 {
        let taken = dup.mprobe(Some(1), Some(1)).unwrap();
        comm.send(1, 10, &[]).unwrap();
        comm.recv(Some(1), Some(11), &mut []).unwrap();
        let mut buf = vec![0u8; big];
        let read = taken.recv(&mut buf);
        assert!(
            matches!(read, Err(CommError::Revoked)),
            "reading a withdrawn message: {read:?}"
        );
    }
    assert!(
        comm.failed_ranks().is_empty(),
        "rank {me} counts {:?} failed",
        comm.failed_ranks()
    );
    comm.barrier().unwrap();
    println!("WITHDRAWN OK");
}
