//! One-sided scenarios of `ft-test-rank`: windows (`window`), streaming without
//! suspicion (`stream`), one large put (`bigput`).

use std::time::{Duration, Instant};
use steadfast::{Comm, CommError, World};

use super::{die_now, pattern};

/// One-sided access: every rank reads every window and writes its own slice of every
/// window, checked byte for byte; then, unless `victim` is out of range, the victim
/// dies and puts to it end in `ProcFailed`.
pub(crate) fn window(world: &World, comm: &Comm, victim: u32) {
    const LEN: usize = 4 << 20;
    let (me, n) = (comm.rank(), comm.size());
    let win = comm.window_allocate(LEN).unwrap();
    win.write_local(0, &pattern(LEN, me)).unwrap();
    win.fence().unwrap();
    // Gets of several sizes and offsets from every window (own included).
    for t in 0..n {
        let expect = pattern(LEN, t);
        for (offset, len) in [(0, 1), (3, 8), (4093, 4096), (100, 65536), (0, LEN)] {
            let mut got = vec![0u8; len];
            win.get(t, offset, &mut got).unwrap();
            assert!(
                got[..] == expect[offset..offset + len],
                "rank {me}: get of {len} at {offset} from {t}"
            );
        }
    }
    win.fence().unwrap();
    // Every rank owns slice `me` of every window.
    let slice = LEN / n as usize;
    let mine = pattern(slice, 1000 + me);
    for t in 0..n {
        win.put(t, me as usize * slice, &mine).unwrap();
    }
    win.fence().unwrap();
    let mut local = vec![0u8; LEN];
    win.read_local(0, &mut local).unwrap();
    for r in 0..n as usize {
        assert!(
            local[r * slice..(r + 1) * slice] == pattern(slice, 1000 + r as u32)[..],
            "rank {me}: slice of rank {r}"
        );
    }
    assert!(matches!(
        win.put(0, LEN - 4, &[0u8; 8]),
        Err(CommError::InvalidArgument(_))
    ));
    assert!(matches!(
        win.get(n, 0, &mut [0u8; 1]),
        Err(CommError::InvalidArgument(_))
    ));
    let s = world.stats();
    println!(
        "WINDOW OK one_sided_shm={} one_sided_fabric={}",
        s.one_sided_shm, s.one_sided_fabric
    );
    if victim >= n {
        win.free().unwrap();
        return;
    }
    win.fence().unwrap();
    if me == victim {
        die_now();
    }
    let start = Instant::now();
    let how = loop {
        match win.put(victim, 0, &mine[..64]) {
            Ok(()) => std::thread::sleep(Duration::from_micros(200)),
            Err(CommError::ProcFailed { ranks }) => {
                assert_eq!(ranks, vec![victim]);
                // The ULFM way out of a collective with a dead member: revoke, free.
                win.comm().revoke();
                break "ProcFailed";
            }
            // Another survivor saw the failure first and revoked.
            Err(CommError::Revoked) => break "Revoked",
            Err(e) => panic!("rank {me}: put to the dead: {e}"),
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "rank {me}: never failed"
        );
    };
    assert_eq!(win.free(), Err(CommError::Revoked));
    println!(
        "WINDOW FAILED OK by {how} after {} us",
        start.elapsed().as_micros()
    );
}

/// Ranks 0 and 1 stream for `ms` milliseconds on paths that do not wait: small sends
/// that find room at once, received as fast as they come (rank 1 acknowledges every
/// `BATCH`, and rank 0 stays at most two batches ahead: the fabric has no flow control
/// of its own for eager messages); then puts into rank 1's window, rank 1 waiting in a
/// fence. Run with a short detection timeout: neither may suspect the other.
pub(crate) fn stream(world: &World, comm: &Comm, ms: u64) {
    const BATCH: u64 = 1024;
    let me = comm.rank();
    let span = Duration::from_millis(ms);
    let fail = |e: CommError| -> ! { panic!("rank {me}: {e}: {:?}", world.failures()) };
    let mut b = [0u8; 8];
    let start = Instant::now();
    let mut sent = 0u64;
    match me {
        0 => {
            while start.elapsed() < span {
                comm.send(1, 1, &sent.to_le_bytes())
                    .unwrap_or_else(|e| fail(e));
                sent += 1;
                if sent % BATCH == 0 && sent >= 2 * BATCH {
                    comm.recv(Some(1), Some(3), &mut b)
                        .unwrap_or_else(|e| fail(e));
                }
            }
            comm.send(1, 2, &sent.to_le_bytes())
                .unwrap_or_else(|e| fail(e));
            // The acknowledgement of the last full batch.
            if sent >= BATCH {
                comm.recv(Some(1), Some(3), &mut b)
                    .unwrap_or_else(|e| fail(e));
            }
        }
        1 => {
            let mut got = 0u64;
            loop {
                let st = comm.recv(Some(0), None, &mut b).unwrap_or_else(|e| fail(e));
                if st.tag == 2 {
                    sent = u64::from_le_bytes(b);
                    break;
                }
                assert_eq!(u64::from_le_bytes(b), got, "messages in order");
                got += 1;
                if got % BATCH == 0 {
                    comm.send(0, 3, &[]).unwrap_or_else(|e| fail(e));
                }
            }
            assert_eq!(got, sent);
        }
        _ => {}
    }
    let win = comm.window_allocate(64).unwrap_or_else(|e| fail(e));
    let start = Instant::now();
    let mut puts = 0u64;
    if me == 0 {
        while start.elapsed() < span {
            win.put(1, 0, &puts.to_le_bytes())
                .unwrap_or_else(|e| fail(e));
            puts += 1;
        }
    }
    win.fence().unwrap_or_else(|e| fail(e));
    win.free().unwrap_or_else(|e| fail(e));
    assert!(world.failures().is_empty(), "{:?}", world.failures());
    println!("STREAM OK sends={sent} puts={puts}");
}

/// The data of [`big_put`] at rank 0 (`STEADFAST_RANK`, read before `World::init`):
/// `mib` MiB where byte `i` is `i % 251`, made before `World::init` (it takes a second or
/// more on a loaded host, and between library calls no heartbeat goes out: a rank busy
/// making it would rightly be suspected). Other ranks get nothing.
pub(crate) fn big_put_data(mib: u64) -> Vec<u8> {
    if std::env::var("STEADFAST_RANK").as_deref() != Ok("0") {
        return Vec::new();
    }
    let len = (mib as usize) << 20;
    let block: Vec<u8> = (0..251 * 4096).map(|i| (i % 251) as u8).collect();
    let mut data = Vec::with_capacity(len);
    while data.len() < len {
        data.extend_from_slice(&block[..block.len().min(len - data.len())]);
    }
    data
}

/// Rank 0 writes `mib` MiB (`data`) into rank 1's window in one put (rank 1 waits in the
/// fence, then checks pieces of it) and prints how long it took: with a detection
/// timeout shorter than the put, both ranks must still see no failure (the heartbeats go
/// out while the put is in flight).
pub(crate) fn big_put(world: &World, comm: &Comm, mib: u64, data: &[u8]) {
    let me = comm.rank();
    let fail = |e: CommError| -> ! { panic!("rank {me}: {e}: {:?}", world.failures()) };
    let len = (mib as usize) << 20;
    let win = comm.window_allocate(len).unwrap_or_else(|e| fail(e));
    let mut elapsed = Duration::ZERO;
    if me == 0 {
        assert_eq!(data.len(), len, "rank 0 made the data");
        let start = Instant::now();
        win.put(1, 0, data).unwrap_or_else(|e| fail(e));
        elapsed = start.elapsed();
    }
    win.fence().unwrap_or_else(|e| fail(e));
    if me == 1 {
        let mut got = vec![0u8; 4096];
        for at in [0, len / 2 + 17, len - 4096] {
            win.read_local(at, &mut got).unwrap_or_else(|e| fail(e));
            let want: Vec<u8> = (at..at + 4096).map(|i| (i % 251) as u8).collect();
            assert!(got == want, "rank 1: the put's data at {at}");
        }
    }
    win.free().unwrap_or_else(|e| fail(e));
    assert!(world.failures().is_empty(), "{:?}", world.failures());
    println!("BIGPUT OK ms={}", elapsed.as_millis());
}

/// Ranks 0 and 1 send each other `mib` MiB at once over shm (each side's single copy
/// holds its engine for its whole length, so no heartbeat leaves either meanwhile);
/// the others wait in an agreement, rank 2 watching rank 1. With a detection timeout
/// shorter than the copies, no one may suspect anyone (a neighbour busy in the kernel
/// is not silent). Ranks 0 and 1 print how long it took.
pub(crate) fn big_exchange(world: &World, comm: &Comm, mib: u64) {
    let me = comm.rank();
    let fail = |e: CommError| -> ! { panic!("rank {me}: {e}: {:?}", world.failures()) };
    comm.agree(1).unwrap_or_else(|e| fail(e));
    if me < 2 {
        let peer = 1 - me;
        let len = (mib as usize) << 20;
        let mine: Vec<u8> = (0..len).map(|i| (i % 251) as u8 ^ me as u8).collect();
        let mut got = vec![0u8; len];
        comm.agree(1).unwrap_or_else(|e| fail(e));
        let start = Instant::now();
        let req = comm.isend_owned(peer, 3, mine).unwrap_or_else(|e| fail(e));
        comm.recv(Some(peer), Some(3), &mut got)
            .unwrap_or_else(|e| fail(e));
        let (_, sent) = req.wait();
        sent.unwrap_or_else(|e| fail(e));
        let elapsed = start.elapsed();
        for at in [0, len / 2 + 17, len - 1] {
            assert_eq!(
                got[at],
                (at % 251) as u8 ^ peer as u8,
                "rank {me}: byte {at}"
            );
        }
        println!("BIGEXCHANGE OK ms={}", elapsed.as_millis());
    } else {
        comm.agree(1).unwrap_or_else(|e| fail(e));
    }
    comm.agree(1).unwrap_or_else(|e| fail(e));
    assert!(world.failures().is_empty(), "{:?}", world.failures());
}
