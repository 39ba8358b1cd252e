//! `direct`: blocking receives from one shm peer that wait unposted while their
//! context is quiet (`src/comm/recv_direct.rs`), and every way they leave that path.
//! Two ranks; rank 1 sends, rank 0 receives with `Comm::recv` naming rank 1:
//!
//! 1. Arrived before the receives: tags 1, 2, 1, then a synchronous send of tag 3 and a
//!    100-byte tag 4. Receiving tag 2 first takes the second message (the first goes
//!    to the waiting ones), then tag 1 twice gets them in send order (posted, found
//!    waiting), tag 3 lets the synchronous send finish, tag 4 into 10 bytes is
//!    `Truncated` with the real length.
//! 2. Arriving while the receive waits unposted: an inline, an eager and a single-copy
//!    message, each checked byte for byte; then tag 7 and tag 6 sent while rank 0
//!    waits for tag 6 (tag 7 makes the context busy: the receive is posted and still
//!    gets tag 6), then tag 7 is received.
//! 3. A wildcard-tag receive takes the earliest message whatever its tag.
//! 4. Rank 1 dies while rank 0 waits for a tag it never sent: `ProcFailed`.
//!
//! Prints `DIRECT OK` at rank 0.

use std::time::Duration;

use steadfast::{Comm, CommError, World, ANY_TAG};

use super::{die_now, pattern};

pub(crate) fn direct(world: &World, comm: &Comm) {
    assert_eq!(comm.size(), 2, "direct runs on 2 ranks");
    if comm.rank() == 1 {
        sender(world, comm);
    } else {
        receiver(world, comm);
    }
}

fn sender(world: &World, comm: &Comm) {
    // 1: all sent before rank 0 receives (it waits for the agreement below).
    comm.send(0, 1, b"first tag 1").unwrap();
    comm.send(0, 2, b"tag 2").unwrap();
    comm.send(0, 1, b"second tag 1").unwrap();
    // SAFETY: waited for below, before the data is dropped.
    let sync = unsafe { comm.issend(0, 3, b"synchronous") }.unwrap();
    comm.send(0, 4, &[7u8; 100]).unwrap();
    comm.agree(1).unwrap();
    sync.wait().unwrap();
    // 2: sent while rank 0 waits.
    for (tag, len) in [(5, 24), (5, 3000), (5, 200 << 10)] {
        world.progress_for(Duration::from_millis(20));
        comm.send(0, tag, &pattern(len, len as u32)).unwrap();
    }
    world.progress_for(Duration::from_millis(50));
    comm.send(0, 7, b"seven").unwrap();
    comm.send(0, 6, b"six").unwrap();
    // 3.
    comm.send(0, 9, b"nine").unwrap();
    comm.send(0, 8, b"eight").unwrap();
    comm.agree(1).unwrap();
    // 4.
    world.progress_for(Duration::from_millis(50));
    die_now();
}

fn recv_text(comm: &Comm, tag: Option<u32>) -> (u32, String) {
    let mut buf = [0u8; 64];
    let st = comm.recv(Some(1), tag, &mut buf).unwrap();
    assert_eq!(st.source, 1);
    (st.tag, String::from_utf8(buf[..st.len].to_vec()).unwrap())
}

fn receiver(world: &World, comm: &Comm) {
    comm.agree(1).unwrap();
    assert_eq!(recv_text(comm, Some(2)), (2, "tag 2".into()));
    assert_eq!(recv_text(comm, Some(1)), (1, "first tag 1".into()));
    assert_eq!(recv_text(comm, Some(1)), (1, "second tag 1".into()));
    assert_eq!(recv_text(comm, Some(3)), (3, "synchronous".into()));
    let mut small = [0u8; 10];
    match comm.recv(Some(1), Some(4), &mut small) {
        Err(CommError::Truncated {
            len,
            capacity,
            sender,
            tag,
        }) => assert_eq!(
            (len, capacity, sender, tag),
            (Some(100), 10, Some(1), Some(4))
        ),
        other => panic!("rank 0: expected Truncated, got {other:?}"),
    }
    let mut buf = vec![0u8; 200 << 10];
    for len in [24, 3000, 200 << 10] {
        let st = comm.recv(Some(1), Some(5), &mut buf).unwrap();
        assert_eq!((st.source, st.tag, st.len), (1, 5, len));
        assert_eq!(buf[..len], pattern(len, len as u32)[..], "{len} B");
    }
    assert_eq!(recv_text(comm, Some(6)), (6, "six".into()));
    assert_eq!(recv_text(comm, Some(7)), (7, "seven".into()));
    comm.agree(1).unwrap();
    assert_eq!(recv_text(comm, ANY_TAG), (9, "nine".into()));
    assert_eq!(recv_text(comm, ANY_TAG), (8, "eight".into()));
    let mut buf = [0u8; 8];
    match comm.recv(Some(1), Some(10), &mut buf) {
        Err(CommError::ProcFailed { ranks }) => assert_eq!(ranks, vec![1]),
        other => panic!("rank 0: expected ProcFailed, got {other:?}"),
    }
    let _ = world;
    println!("DIRECT OK");
}
