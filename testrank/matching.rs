//! Scenarios of MPI matching order (`tests/matching.rs`): receives match in the order
//! they were posted, whatever order they are tested in; one sender's messages on one
//! communicator arrive in send order; a dead source's arrived messages stay receivable;
//! a revoke completes every pending receive.
//!
//! - `order all|posted`: rank 0 receives, every other rank sends (see each phase);
//!   prints `MATCHING OK`.
//! - `deadsource`: the last rank sends rank 0 two messages and dies; rank 0's receive
//!   posted earlier naming it (for a tag it never sent) fails with `ProcFailed`, the two
//!   messages are still received, a third receive fails; prints `DEADSOURCE OK`.
//! - `revokepending`: every rank posts receives nobody matches; rank 0 revokes; every
//!   receive completes with `Revoked`; prints `REVOKEPENDING OK`.
//! - `overtake send|late|isend|drop`: rank 0 fills its ring to rank 1 with eager sends
//!   while rank 1 is not receiving (files say when), posts a large `isend` that finds no room, then a
//!   small `send` (`late`: once rank 1 has emptied the ring) or an `isend` tested first,
//!   with the same tag (`drop`: another large `isend` queued before the first is dropped
//!   while queued, and never arrives); rank 1 receives them all and checks they arrive
//!   in send order; prints `OVERTAKE OK`.

use std::time::{Duration, Instant};

use steadfast::{Comm, CommError, OwnedRecvRequest, World, ANY_SOURCE, ANY_TAG};

use super::{die_now, pattern};

/// Messages per sender in the multi-sender phases.
const PER_SENDER: u32 = 8;
/// Size of message `seq`: inline, eager through cells, single copy (RTS).
fn size_of(seq: u32) -> usize {
    [12, 2000, 100 << 10][seq as usize % 3]
}
/// A message's bytes: its sender and number first, then a pattern.
fn body(sender: u32, seq: u32, len: usize) -> Vec<u8> {
    let mut b = pattern(len, sender * 1000 + seq);
    b[..4].copy_from_slice(&sender.to_le_bytes());
    b[4..8].copy_from_slice(&seq.to_le_bytes());
    b
}
fn parse(b: &[u8]) -> (u32, u32) {
    let sender = u32::from_le_bytes(b[..4].try_into().unwrap());
    let seq = u32::from_le_bytes(b[4..8].try_into().unwrap());
    (sender, seq)
}

type Recv = OwnedRecvRequest<Vec<u8>>;

/// Tests the receives in *reverse* posting order until all are done; returns each
/// one's (sender, seq), checking the bytes and the status.
fn finish_in_reverse(me: u32, mut recvs: Vec<Option<Recv>>) -> Vec<(u32, u32)> {
    let mut got: Vec<Option<(u32, u32)>> = vec![None; recvs.len()];
    let deadline = Instant::now() + Duration::from_secs(60);
    while recvs.iter().any(Option::is_some) {
        assert!(
            Instant::now() < deadline,
            "rank {me}: receives never completed"
        );
        for i in (0..recvs.len()).rev() {
            let Some(r) = recvs[i].as_mut() else { continue };
            if r.test().unwrap().is_some() {
                let (buf, st) = recvs[i].take().unwrap().wait();
                let st = st.unwrap();
                let (sender, seq) = parse(&buf);
                assert_eq!(st.source, sender, "rank {me}: status source");
                assert_eq!(
                    buf[..st.len],
                    body(sender, seq, st.len)[..],
                    "rank {me}: bytes of {sender}/{seq}"
                );
                got[i] = Some((sender, seq));
            }
        }
    }
    got.into_iter().map(Option::unwrap).collect()
}

/// Every sender's numbers appear in increasing order along posting order, each of
/// `0..count` once.
fn check_sender_order(got: &[(u32, u32)], senders: &[u32], count: u32, what: &str) {
    for &s in senders {
        let seqs: Vec<u32> = got.iter().filter(|g| g.0 == s).map(|g| g.1).collect();
        assert_eq!(
            seqs,
            (0..count).collect::<Vec<_>>(),
            "{what}: sender {s}'s messages by posting order of the receives {got:?}"
        );
    }
}

fn post(comm: &Comm, source: Option<u32>, tag: Option<u32>, cap: usize) -> Option<Recv> {
    Some(comm.irecv_owned(source, tag, vec![0u8; cap]).unwrap())
}

/// Posted wildcard receives, then messages from every sender: each message goes to
/// the earliest posted receive (so each sender's messages fill receives in send order).
fn posted_wildcards(comm: &Comm, senders: &[u32]) {
    let me = comm.rank();
    if me == 0 {
        let count = senders.len() as u32 * PER_SENDER;
        let recvs: Vec<_> = (0..count)
            .map(|_| post(comm, ANY_SOURCE, Some(10), 128 << 10))
            .collect();
        for &s in senders {
            comm.send(s, 1, b"go").unwrap();
        }
        let got = finish_in_reverse(me, recvs);
        check_sender_order(&got, senders, PER_SENDER, "posted wildcards");
    } else {
        let mut b = [0u8; 2];
        comm.recv(Some(0), Some(1), &mut b).unwrap();
        for seq in 0..PER_SENDER {
            comm.send(0, 10, &body(me, seq, size_of(seq))).unwrap();
        }
    }
    comm.barrier().unwrap();
}

/// One sender, interleaved tags and selectors: each message goes to the first
/// receive in posting order that fits and is still free (a reference model).
fn interleaved_tags(comm: &Comm) {
    let me = comm.rank();
    let specs: [(Option<u32>, Option<u32>); 10] = [
        (Some(1), Some(21)),
        (ANY_SOURCE, Some(20)),
        (Some(1), ANY_TAG),
        (ANY_SOURCE, Some(22)),
        (ANY_SOURCE, Some(21)),
        (Some(1), Some(20)),
        (ANY_SOURCE, Some(21)),
        (Some(1), Some(22)),
        (ANY_SOURCE, Some(20)),
        (Some(1), ANY_TAG),
    ];
    let tags: [u32; 10] = [20, 21, 22, 21, 20, 22, 20, 21, 22, 20];
    if me == 0 {
        // The model: message k (in send order) takes the first free fitting receive.
        let mut expect: Vec<Option<u32>> = vec![None; specs.len()];
        for (k, &t) in tags.iter().enumerate() {
            let i = (0..specs.len())
                .find(|&i| {
                    expect[i].is_none()
                        && specs[i].0.is_none_or(|s| s == 1)
                        && specs[i].1.is_none_or(|x| x == t)
                })
                .expect("every message fits some receive (scenario)");
            expect[i] = Some(k as u32);
        }
        let recvs: Vec<_> = specs.iter().map(|&(s, t)| post(comm, s, t, 64)).collect();
        comm.send(1, 1, b"go").unwrap();
        let got = finish_in_reverse(me, recvs);
        let got: Vec<Option<u32>> = got.iter().map(|g| Some(g.1)).collect();
        assert_eq!(got, expect, "interleaved tags: message index per receive");
    } else if me == 1 {
        let mut b = [0u8; 2];
        comm.recv(Some(0), Some(1), &mut b).unwrap();
        for (k, &t) in tags.iter().enumerate() {
            comm.send(0, t, &body(1, k as u32, 12)).unwrap();
        }
    }
    comm.barrier().unwrap();
}

/// Messages first (unexpected), then receives: each posted receive takes the earliest
/// waiting message that fits. Probe then receive takes exactly the probed message.
fn unexpected_first(world: &World, comm: &Comm, senders: &[u32]) {
    let ok = |r: Result<(), CommError>, what: &str| {
        r.unwrap_or_else(|e| {
            panic!(
                "rank {}: {what}: {e}; failures {:?}",
                comm.rank(),
                world.failures()
            )
        })
    };
    let me = comm.rank();
    if me == 0 {
        // A sender's "done" follows its messages in its ring: once every "done" is
        // here, every message is waiting.
        for _ in senders {
            let mut b = [0u8; 4];
            ok(comm.recv(ANY_SOURCE, Some(31), &mut b).map(drop), "done");
        }
        // Probe, then receive what was probed (probe covers shm and self only).
        let probed = match comm.probe(ANY_SOURCE, Some(30)) {
            Ok(st) => Some(st),
            Err(CommError::InvalidArgument(_)) => None,
            Err(e) => panic!("rank 0: probe: {e}"),
        };
        if let Some(st) = probed {
            assert_eq!(st.tag, 30);
            let again = comm.iprobe(Some(st.source), Some(30)).unwrap();
            assert_eq!(
                again,
                Some(st),
                "rank 0: a probe leaves the message waiting"
            );
            let mut buf = vec![0u8; 128 << 10];
            let got = comm.recv(Some(st.source), Some(30), &mut buf).unwrap();
            assert_eq!(
                got, st,
                "rank 0: the receive after a probe gets the probed message"
            );
            assert_eq!(
                parse(&buf),
                (st.source, 0),
                "rank 0: probed message is seq 0"
            );
            assert_eq!(got.len, size_of(0));
        }
        // Every other message, by wildcard receives tested in reverse.
        let rest = senders.len() as u32 * PER_SENDER - u32::from(probed.is_some());
        let recvs: Vec<_> = (0..rest)
            .map(|_| post(comm, ANY_SOURCE, Some(30), 128 << 10))
            .collect();
        let mut got = finish_in_reverse(me, recvs);
        if let Some(st) = probed {
            // Received first: it counts as the first posted.
            got.insert(0, (st.source, 0));
            assert_eq!(comm.iprobe(ANY_SOURCE, Some(30)).unwrap(), None);
        }
        check_sender_order(&got, senders, PER_SENDER, "unexpected first");
    } else {
        let mut sends = Vec::new();
        for seq in 0..PER_SENDER {
            let data = body(me, seq, size_of(seq));
            sends.push(comm.isend_owned(0, 30, data).unwrap());
        }
        comm.send(0, 31, &me.to_le_bytes()).unwrap();
        for s in sends {
            ok(s.wait().1, "send");
        }
    }
    comm.barrier().unwrap();
}

/// A large message (single copy) then a small one with the same tag from one sender:
/// received in send order, posted first and unexpected.
fn big_then_small(comm: &Comm, unexpected_too: bool) {
    let me = comm.rank();
    let big = 1 << 20;
    let orders: &[bool] = if unexpected_too {
        &[true, false]
    } else {
        &[true]
    };
    for &posted_first in orders {
        if me == 0 {
            let mut recvs = Vec::new();
            if posted_first {
                recvs.push(post(comm, Some(1), Some(40), big));
                recvs.push(post(comm, ANY_SOURCE, Some(40), big));
                comm.send(1, 1, b"go").unwrap();
            } else {
                let mut b = [0u8; 4];
                comm.recv(Some(1), Some(41), &mut b).unwrap();
                recvs.push(post(comm, Some(1), Some(40), big));
                recvs.push(post(comm, ANY_SOURCE, Some(40), big));
            }
            let got = finish_in_reverse(me, recvs);
            assert_eq!(got, vec![(1, 0), (1, 1)], "big then small ({posted_first})");
        } else if me == 1 {
            if posted_first {
                let mut b = [0u8; 2];
                comm.recv(Some(0), Some(1), &mut b).unwrap();
            }
            let first = comm.isend_owned(0, 40, body(1, 0, big)).unwrap();
            comm.send(0, 40, &body(1, 1, 12)).unwrap();
            if !posted_first {
                comm.send(0, 41, b"done").unwrap();
            }
            first.wait().1.unwrap();
        }
        comm.barrier().unwrap();
    }
}

/// Messages to self: two posted wildcard receives get the two messages in order.
fn to_self(comm: &Comm) {
    let me = comm.rank();
    let recvs = vec![
        post(comm, ANY_SOURCE, Some(50), 64),
        post(comm, Some(me), ANY_TAG, 64),
    ];
    comm.send(me, 50, &body(me, 0, 12)).unwrap();
    comm.send(me, 50, &body(me, 1, 12)).unwrap();
    assert_eq!(finish_in_reverse(me, recvs), vec![(me, 0), (me, 1)]);
    // A leaked receive that owns its buffer: the message it matches is written into
    // the leaked (still allocated) buffer, and the next receive gets the next one.
    std::mem::forget(
        comm.irecv_owned(ANY_SOURCE, Some(51), vec![0u8; 64])
            .unwrap(),
    );
    comm.send(me, 51, &body(me, 0, 12)).unwrap();
    comm.send(me, 51, &body(me, 1, 12)).unwrap();
    let next = vec![post(comm, ANY_SOURCE, Some(51), 64)];
    assert_eq!(finish_in_reverse(me, next), vec![(me, 1)]);
    comm.barrier().unwrap();
}

/// `all`: every phase; `posted`: the phases whose receives are posted before their
/// messages are sent.
pub(crate) fn order(world: &World, comm: &Comm, phases: &str) {
    let n = comm.size();
    assert!(n >= 2, "order needs two ranks");
    let senders: Vec<u32> = (1..n).collect();
    posted_wildcards(comm, &senders);
    interleaved_tags(comm);
    if phases == "all" {
        unexpected_first(world, comm, &senders);
    }
    big_then_small(comm, phases == "all");
    if phases == "all" {
        to_self(comm);
    }
    let _ = world;
    println!("MATCHING OK");
}

pub(crate) fn deadsource(world: &World, comm: &Comm) {
    let (me, n) = (comm.rank(), comm.size());
    let victim = n - 1;
    let never = if me == 0 {
        post(comm, Some(victim), Some(7), 64)
    } else {
        None
    };
    comm.agree(1).unwrap();
    if me == victim {
        comm.send(0, 5, &body(me, 0, 12)).unwrap();
        comm.send(0, 6, &body(me, 1, 2000)).unwrap();
        die_now();
    }
    if me == 0 {
        let mut never = never.unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < deadline, "the victim's death never seen");
            match never.test() {
                Ok(None) => world.progress_for(Duration::from_millis(1)),
                Err(CommError::ProcFailed { ranks }) => {
                    assert_eq!(ranks, vec![victim]);
                    break;
                }
                other => panic!("rank 0: expected ProcFailed, got {other:?}"),
            }
        }
        // What it sent before dying is still received, in order.
        let mut buf = vec![0u8; 4096];
        for (tag, seq, len) in [(5, 0, 12), (6, 1, 2000)] {
            let st = comm.recv(Some(victim), Some(tag), &mut buf).unwrap();
            assert_eq!((st.source, st.len), (victim, len));
            assert_eq!(buf[..len], body(victim, seq, len)[..]);
        }
        match comm.recv(Some(victim), Some(5), &mut buf) {
            Err(CommError::ProcFailed { ranks }) => assert_eq!(ranks, vec![victim]),
            other => panic!("rank 0: expected ProcFailed, got {other:?}"),
        }
    }
    println!("DEADSOURCE OK");
}

pub(crate) fn revoke_pending(world: &World, comm: &Comm) {
    let (me, n) = (comm.rank(), comm.size());
    let next = (me + 1) % n;
    let mut recvs = [
        post(comm, ANY_SOURCE, Some(60), 64),
        post(comm, Some(next), Some(61), 64),
        post(comm, Some(next), ANY_TAG, 64),
        post(comm, ANY_SOURCE, Some(62), 64),
    ];
    comm.agree(1).unwrap();
    if me == 0 {
        comm.revoke();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while recvs.iter().any(Option::is_some) {
        assert!(Instant::now() < deadline, "rank {me}: receives not revoked");
        for slot in recvs.iter_mut() {
            let Some(r) = slot.as_mut() else { continue };
            match r.test() {
                Ok(None) => {}
                Err(CommError::Revoked) => *slot = None,
                other => panic!("rank {me}: expected Revoked, got {other:?}"),
            }
        }
        world.progress_for(Duration::from_micros(100));
    }
    println!("REVOKEPENDING OK");
}

/// Messages that fill the default ring between `local_ranks` ranks exactly: 16 cells
/// each (a first cell of 232 bytes and 15 continuation cells of 248,
/// `shm/src/message.rs`), as many as the ring has room for.
fn fill(local_ranks: u32) -> Vec<usize> {
    vec![232 + 15 * 248; steadfast_shm::ring_cells_for(local_ranks) as usize / 16]
}

/// One sender, one tag: `fill`'s eager messages, then a large message that finds the
/// ring full, then a small one (a blocking `send`, or with `isend` an `isend` tested
/// before the large one's request): all received in send order.
pub(crate) fn overtake(comm: &Comm, how: &str) {
    let me = comm.rank();
    let big = 1 << 20;
    let filling = fill(comm.size());
    let count = filling.len() as u32 + 2;
    // Rank 1 tells rank 0 it has left the library, and rank 0 tells rank 1 to start
    // receiving, through files (a message would wait behind the full ring, and a
    // rank still inside a call may drain its rings): both are the launcher's children.
    let file = |what: &str| {
        std::env::temp_dir().join(format!(
            "steadfast-overtake-{}-{what}",
            std::os::unix::process::parent_id()
        ))
    };
    let (idle, signal) = (file("idle"), file("go"));
    let wait_for = |f: &std::path::Path| {
        // A stall past 20 s goes on anyway (the order is still checked).
        let deadline = Instant::now() + Duration::from_secs(20);
        while !f.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Its reader removes it.
        let _ = std::fs::remove_file(f);
    };
    comm.barrier().unwrap();
    if me == 0 {
        wait_for(&idle);
        let mut sends = Vec::new();
        for (seq, &len) in filling.iter().enumerate() {
            sends.push(comm.isend_owned(1, 70, body(0, seq as u32, len)).unwrap());
        }
        // `drop`: a large send queued first and dropped (withdrawn) while queued.
        let gone = (how == "drop").then(|| comm.isend_owned(1, 70, body(0, 99, big)).unwrap());
        let large = comm.isend_owned(1, 70, body(0, count - 2, big)).unwrap();
        drop(gone);
        // Everything before the small one is posted: rank 1 may receive.
        std::fs::write(&signal, b"go").unwrap();
        let small = body(0, count - 1, 12);
        if how == "isend" {
            let mut later = comm.isend_owned(1, 70, small).unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            while !later.test().unwrap() {
                assert!(Instant::now() < deadline, "rank 0: small isend never done");
            }
            later.wait().1.unwrap();
        } else {
            if how == "late" {
                // Rank 1 empties the ring meanwhile: the small one would fit at once.
                std::thread::sleep(Duration::from_millis(400));
            }
            comm.send(1, 70, &small).unwrap();
        }
        large.wait().1.unwrap();
        for s in sends {
            s.wait().1.unwrap();
        }
    } else if me == 1 {
        // Not receiving yet: rank 0's ring fills.
        std::fs::write(&idle, b"idle").unwrap();
        wait_for(&signal);
        let recvs: Vec<_> = (0..count)
            .map(|_| post(comm, Some(0), Some(70), big))
            .collect();
        let got = finish_in_reverse(me, recvs);
        let seqs: Vec<u32> = got.iter().map(|g| g.1).collect();
        assert_eq!(
            seqs,
            (0..count).collect::<Vec<_>>(),
            "rank 1: one sender's messages by posting order of the receives"
        );
    }
    comm.barrier().unwrap();
    if me == 0 {
        // Left only if rank 1 gave up waiting for it.
        let _ = std::fs::remove_file(&signal);
    }
    println!("OVERTAKE OK");
}
