//! Point-to-point scenarios of `ft-test-rank`: `p2p` (every pair, every size) and
//! `waitall` (`wait_all` with a dead peer among its requests).

use std::time::Duration;
use steadfast::{Comm, CommError, World, ANY_SOURCE, ANY_TAG};

use super::{die_now, pattern};

pub(crate) fn p2p(world: &World, comm: &Comm) {
    let (me, n) = (comm.rank(), comm.size());
    for peer in 0..n {
        if peer == me {
            continue;
        }
        for (k, &len) in [0usize, 1, 8, 240, 241, 4096, 65536, 100 << 10, 1 << 20]
            .iter()
            .enumerate()
        {
            let tag = k as u32;
            let out = pattern(len, me * 1000 + peer);
            let mut buf = vec![0u8; len];
            // Lower rank sends first: no two ranks wait on each other's rendezvous.
            if me < peer {
                comm.send(peer, tag, &out).unwrap();
                let st = comm.recv(Some(peer), Some(tag), &mut buf).unwrap();
                assert_eq!(st.len, len);
            } else {
                let st = comm.recv(Some(peer), Some(tag), &mut buf).unwrap();
                assert_eq!(st.len, len);
                comm.send(peer, tag, &out).unwrap();
            }
            assert_eq!(
                buf,
                pattern(len, peer * 1000 + me),
                "{len} bytes from {peer}"
            );
        }
    }
    // Wildcards: everyone sends one message to rank 0, which takes them in any order.
    if me == 0 {
        let mut seen = vec![false; n as usize];
        for _ in 1..n {
            let mut b = [0u8; 4];
            let st = comm.recv(ANY_SOURCE, ANY_TAG, &mut b).unwrap();
            assert_eq!(st.tag, 100 + st.source);
            assert_eq!(u32::from_le_bytes(b), st.source);
            seen[st.source as usize] = true;
        }
        assert!(seen[1..].iter().all(|&s| s));
    } else {
        comm.send(0, 100 + me, &me.to_le_bytes()).unwrap();
    }
    // A barrier, so that no later message meets the wildcard receives.
    comm.agree(1).unwrap();
    // Self-send.
    comm.send(me, 7, b"self").unwrap();
    let mut b = [0u8; 4];
    let st = comm.recv(Some(me), Some(7), &mut b).unwrap();
    assert_eq!((&b, st.source), (b"self", me));
    // Non-blocking: receives from every peer posted first, then sends to every peer,
    // then everything tested round-robin (a wait on one alone could deadlock on large
    // messages), with an agreement in flight meanwhile.
    let big = 1 << 20;
    let mut agreement = comm.iagree(!0);
    // The requests own their buffers (the safe non-blocking API).
    let peers: Vec<u32> = (0..n).filter(|&p| p != me).collect();
    let mut recvs: Vec<_> = peers
        .iter()
        .map(|&p| Some(comm.irecv_owned(Some(p), Some(11), vec![0u8; big]).unwrap()))
        .collect();
    let mut sends: Vec<_> = peers
        .iter()
        .map(|&p| Some(comm.isend_owned(p, 11, pattern(big, me * 7 + p)).unwrap()))
        .collect();
    let mut inbox: Vec<Option<Vec<u8>>> = vec![None; peers.len()];
    let mut agreed = None;
    while recvs.iter().any(Option::is_some) || sends.iter().any(Option::is_some) || agreed.is_none()
    {
        for (slot, got) in recvs.iter_mut().zip(inbox.iter_mut()) {
            if let Some(r) = slot {
                if r.test().unwrap().is_some() {
                    let (buf, st) = slot.take().unwrap().wait();
                    assert_eq!(st.unwrap().len, big);
                    *got = Some(buf);
                }
            }
        }
        for slot in sends.iter_mut() {
            if let Some(s) = slot {
                if s.test().unwrap() {
                    let (_, sent) = slot.take().unwrap().wait();
                    sent.unwrap();
                }
            }
        }
        if agreed.is_none() {
            agreed = agreement.test().unwrap();
        }
    }
    assert_eq!(agreed.unwrap().value, !0);
    for (&p, got) in peers.iter().zip(&inbox) {
        assert!(
            got.as_deref() == Some(&pattern(big, p * 7 + me)[..]),
            "non-blocking from {p}"
        );
    }
    // Truncation: the next rank sends 64 bytes into a 16-byte buffer.
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    comm.send(next, 9, &[1u8; 64]).unwrap();
    let mut small = [0u8; 16];
    match comm.recv(Some(prev), Some(9), &mut small) {
        Err(CommError::Truncated { capacity: 16, .. }) => {}
        other => panic!("expected Truncated, got {other:?}"),
    }
    comm.agree(1).unwrap();
    let s = world.stats();
    println!(
        "P2P OK shm_sent={} fabric_sent={} self_sent={}",
        s.shm_sent, s.fabric_sent, s.self_sent
    );
}

/// Rank 0 waits on three requests at once while rank 2 is SIGKILLed: a receive from
/// rank 1 (which sends late), a receive from rank 2 (never sent) and a send to rank 1.
/// `wait_all` must report `ProcFailed` for the dead rank's receive alone and complete the
/// other two with their data.
pub(crate) fn wait_all_with_a_dead_peer(world: &World, comm: &Comm) {
    use steadfast::comm::{wait_all, wait_any, AnyRequest, Completion};
    let me = comm.rank();
    comm.agree(1).unwrap();
    match me {
        0 => {
            let (mut from1, mut from2) = ([0u8; 8], [0u8; 8]);
            let hello = 42u64.to_le_bytes();
            // SAFETY: the buffers outlive the requests, which wait_all finishes.
            let mut reqs: Vec<Option<AnyRequest<'_>>> = unsafe {
                vec![
                    Some(comm.irecv(Some(1), Some(7), &mut from1).unwrap().into()),
                    Some(comm.irecv(Some(2), Some(7), &mut from2).unwrap().into()),
                    Some(comm.isend(1, 8, &hello).unwrap().into()),
                ]
            };
            let outcomes = wait_all(&mut reqs);
            assert!(reqs.iter().all(Option::is_none), "every request finished");
            match &outcomes[0] {
                Ok(Completion::Received(st)) => assert_eq!((st.source, st.len), (1, 8)),
                other => panic!("rank 0: the receive from rank 1: {other:?}"),
            }
            match &outcomes[1] {
                Err(CommError::ProcFailed { ranks }) => assert_eq!(ranks, &vec![2]),
                other => panic!("rank 0: the receive from dead rank 2: {other:?}"),
            }
            assert_eq!(outcomes[2], Ok(Completion::Sent), "rank 0: the send");
            drop(reqs);
            assert_eq!(u64::from_le_bytes(from1), 43, "rank 0: rank 1's data");
            let mut none: Vec<Option<AnyRequest<'_>>> = vec![None, None];
            assert!(wait_any(&mut none).is_none(), "nothing to wait for");
            println!("WAITALL OK failures={:?}", world.failures().len());
        }
        1 => {
            let mut b = [0u8; 8];
            comm.recv(Some(0), Some(8), &mut b).unwrap();
            // Late: after rank 2's death has had time to reach rank 0.
            std::thread::sleep(Duration::from_millis(200));
            comm.send(0, 7, &(u64::from_le_bytes(b) + 1).to_le_bytes())
                .unwrap();
            println!("WAITALL OK sender");
        }
        _ => die_now(),
    }
}
