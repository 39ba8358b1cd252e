//! A rank program for the runtime's multi-process tests (not a user tool). Each scenario
//! prints lines the test checks; every failure of an expectation panics (exit 101).
//!
//! - `p2p`: every pair exchanges messages of several sizes (content checked), wildcard
//!   receives, a self-send, a truncated receive; prints `P2P OK` and the route counters.
//! - `agree-loop N VICTIM SEED`: N agreements; VICTIM SIGKILLs itself from a thread after
//!   a random delay; survivors ack and go on; each prints `DIGEST <hex>` of every
//!   agreement's (value, failed set, outcome) and `FAILED <ranks>`.
//! - `revoke`: everyone but rank 0 blocks in a receive nobody matches; rank 0 revokes
//!   after 200 ms; everyone prints `REVOKED after <µs>`.
//! - `detect VICTIM`: VICTIM sends everyone a time stamp and SIGKILLs itself; the others
//!   block in a receive from it and print `DETECTED in <µs>` when it fails.
//! - `hang VICTIM`: VICTIM computes for 3 s without progressing; the others are told by
//!   the heartbeat detector (`SUSPECTED after <ms>`), shrink; VICTIM, resuming, finds
//!   itself excluded (`EXCLUDED`).
//! - `shrink VICTIM`: VICTIM dies; survivors agree (ProcFailed), shrink, run a ring
//!   exchange and an agreement on the new communicator, print `SHRUNK <size> RING OK`.
//! - `contexts N SEED`: N communicators created (dup, split, now and then shrink) and
//!   freed (now and then after a revoke), up to 8 live at once; each carries one message
//!   per rank that stays unreceived until just before its free, and each new one's
//!   wildcard receive must get its own message: a context shared with a live (or a
//!   revoked, freed) communicator shows as a crossed message. Prints `CONTEXTS OK ...`.
//! - `split-after-failure VICTIM`: VICTIM dies; the survivors acknowledge it, split (the
//!   context agreed among the live ranks only), exchange on the new communicator, free
//!   it; print `SPLIT OK <size>`.
//! - `order`, `deadsource`, `revokepending`, `overtake`: MPI matching order and its ULFM rules
//!   (`matching.rs`).
//! - `ssend`, `ssend-fail`, `ssend-fabric`, `mprobe`: synchronous sends and matched
//!   probes (`ssend.rs`).
//! - `threads T ROUNDS VICTIM`: T threads per rank on shared and private communicators,
//!   VICTIM (or `none`) SIGKILLed mid-exchange (`threads.rs`).
//! - `exhaust`: dups without freeing until `ContextsExhausted`; prints `EXHAUSTED after
//!   <n>: <error>`, then frees one and dups again (`REUSED`).

mod matching;
mod segments;
mod ssend;
mod threads;

use std::time::{Duration, Instant};
use steadfast::{Comm, CommError, World, ANY_SOURCE, ANY_TAG};

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed) as u8)
        .collect()
}

fn die_now() -> ! {
    // SAFETY: raising a signal at ourselves.
    unsafe { libc::raise(libc::SIGKILL) };
    unreachable!("SIGKILL returned")
}

fn p2p(world: &World, comm: &Comm) {
    let (me, n) = (comm.rank(), comm.size());
    for peer in 0..n {
        if peer == me {
            continue;
        }
        for (k, &len) in [0usize, 1, 8, 240, 241, 4096, 65536, 1 << 20]
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

fn agree_loop(comm: &Comm, iterations: u32, victim: u32, seed: u64) {
    let me = comm.rank();
    let mut rng = seed ^ 0x5eed;
    let delay_us = splitmix(&mut rng) % 20_000;
    if me == victim {
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_micros(delay_us));
            die_now();
        });
    }
    // Every decision, in order; its FNV-1a is the digest all ranks must print alike.
    let mut decisions: Vec<u8> = Vec::new();
    let mut mix = |x: u64| decisions.extend_from_slice(&x.to_le_bytes());
    let start = Instant::now();
    let mut first_failure: Option<(u32, Duration)> = None;
    for i in 0..iterations {
        let flag = !(1u64 << ((me + i) % 64));
        let a = comm.agree_full(flag).unwrap();
        mix(a.value);
        mix(a.all_acked as u64);
        for f in &a.failed {
            mix(*f as u64 + 1000);
        }
        if !a.all_acked {
            first_failure.get_or_insert((i, start.elapsed()));
            comm.ack_failed();
        }
        // A little work between agreements, as an application would do.
        let until = Instant::now() + Duration::from_micros(2);
        while Instant::now() < until {}
    }
    let digest = steadfast_os::fnv1a64(&decisions);
    println!(
        "DIGEST {digest:016x} ({:.2} us per iteration)",
        start.elapsed().as_secs_f64() * 1e6 / iterations as f64
    );
    println!("FAILED {:?}", comm.failed_ranks());
    if let Some((i, t)) = first_failure {
        println!("FIRST PROCFAILED at iteration {i} after {t:?}");
    }
}

fn revoke(world: &World, comm: &Comm) {
    let me = comm.rank();
    comm.agree(1).unwrap();
    let start = Instant::now();
    if me == 0 {
        world.progress_for(Duration::from_millis(200));
        comm.revoke();
    } else {
        let mut b = [0u8; 8];
        match comm.recv(Some(0), Some(77), &mut b) {
            Err(CommError::Revoked) => {}
            other => panic!("rank {me}: expected Revoked, got {other:?}"),
        }
    }
    // Later operations fail too; agreement still works on the revoked comm.
    assert_eq!(
        comm.send((me + 1) % comm.size(), 1, b"x"),
        Err(CommError::Revoked)
    );
    assert_eq!(comm.agree(1), Ok(1));
    println!("REVOKED after {} us", start.elapsed().as_micros());
}

/// Agrees (progressing between rounds) until an agreement reports `victim` failed:
/// maybe not the first after the failure, which may finish before anyone notices.
fn agree_until_failed(world: &World, comm: &Comm, victim: u32) {
    let start = Instant::now();
    loop {
        match comm.agree(1) {
            Ok(_) => world.progress_for(Duration::from_millis(1)),
            Err(CommError::ProcFailed { ranks }) => {
                assert_eq!(ranks, vec![victim]);
                return;
            }
            Err(e) => panic!("rank {}: {e}", comm.rank()),
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "failure never reported"
        );
    }
}

fn shrink(world: &World, comm: &Comm, victim: u32) {
    let me = comm.rank();
    comm.agree(1).unwrap();
    if me == victim {
        die_now();
    }
    agree_until_failed(world, comm, victim);
    let t = Instant::now();
    let small = comm.shrink().unwrap();
    let shrink_us = t.elapsed().as_micros();
    let (r, n) = (small.rank(), small.size());
    assert_eq!(n, comm.size() - 1);
    // Ring exchange on the survivors.
    let next = (r + 1) % n;
    let prev = (r + n - 1) % n;
    let mut b = [0u8; 4];
    if r % 2 == 0 {
        small.send(next, 5, &r.to_le_bytes()).unwrap();
        small.recv(Some(prev), Some(5), &mut b).unwrap();
    } else {
        small.recv(Some(prev), Some(5), &mut b).unwrap();
        small.send(next, 5, &r.to_le_bytes()).unwrap();
    }
    assert_eq!(u32::from_le_bytes(b), prev);
    assert_eq!(small.agree(1), Ok(1));
    println!("SHRUNK {n} RING OK in {shrink_us} us");
}

fn realtime_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos()
}

fn detect(comm: &Comm, victim: u32) {
    let me = comm.rank();
    comm.agree(1).unwrap();
    if me == victim {
        let mut last = 0;
        for r in 0..comm.size() {
            if r != me {
                last = realtime_ns();
                comm.send(r, 3, &last.to_le_bytes()).unwrap();
            }
        }
        let _ = last;
        die_now();
    }
    let mut b = [0u8; 16];
    comm.recv(Some(victim), Some(3), &mut b).unwrap();
    let sent_at = u128::from_le_bytes(b);
    match comm.recv(Some(victim), Some(4), &mut b) {
        Err(CommError::ProcFailed { ranks }) => assert_eq!(ranks, vec![victim]),
        other => panic!("rank {me}: expected ProcFailed, got {other:?}"),
    }
    // The victim sent the stamp just before SIGKILL; the stamp is an upper bound on
    // the kill time only up to the send of the remaining messages (microseconds).
    let us = (realtime_ns() - sent_at) / 1000;
    println!("DETECTED in {us} us");
}

fn hang(world: &World, comm: &Comm, victim: u32) {
    let me = comm.rank();
    comm.agree(1).unwrap();
    if me == victim {
        // Compute without progressing for far longer than the detector's timeout.
        let until = Instant::now() + Duration::from_secs(3);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        match comm.agree(1) {
            Err(CommError::Excluded) => println!("EXCLUDED"),
            other => panic!("hung rank: expected Excluded, got {other:?}"),
        }
        return;
    }
    let start = Instant::now();
    agree_until_failed(world, comm, victim);
    println!("SUSPECTED after {} ms", start.elapsed().as_millis());
    let small = comm.shrink().unwrap();
    assert_eq!(small.agree(1), Ok(1));
    println!("SHRUNK {}", small.size());
}

/// Two "hosts" (network namespaces): every rank sends to every other, prints its
/// route counters; then rank 0 runs `STEADFAST_TEST_CUT` (cutting the link) and each
/// rank waits for the detector to suspect the far side.
fn netsplit(world: &World, comm: &Comm) {
    let (me, n) = (comm.rank(), comm.size());
    for step in 1..n {
        let to = (me + step) % n;
        let from = (me + n - step) % n;
        let mut b = [0u8; 4];
        if me < to {
            comm.send(to, 1, &me.to_le_bytes()).unwrap();
            comm.recv(Some(from), Some(1), &mut b).unwrap();
        } else {
            comm.recv(Some(from), Some(1), &mut b).unwrap();
            comm.send(to, 1, &me.to_le_bytes()).unwrap();
        }
        assert_eq!(u32::from_le_bytes(b), from);
    }
    let s = world.stats();
    let routes: Vec<String> = (0..n)
        .map(|r| format!("{:?}", world.route(r).unwrap()))
        .collect();
    println!(
        "COUNTERS shm_sent={} fabric_sent={} routes={}",
        s.shm_sent,
        s.fabric_sent,
        routes.join(",")
    );
    comm.agree(1).unwrap();
    if me == 0 {
        let cut = std::env::var("STEADFAST_TEST_CUT").expect("STEADFAST_TEST_CUT");
        let st = std::process::Command::new("sh")
            .args(["-c", &cut])
            .status()
            .unwrap();
        assert!(st.success(), "cut command failed");
    }
    let my_side: Vec<u32> = (0..n)
        .filter(|&r| world.route(r) != Some(steadfast::world::Route::Fabric))
        .collect();
    let far: Vec<u32> = (0..n).filter(|r| !my_side.contains(r)).collect();
    let start = Instant::now();
    loop {
        let failed: Vec<u32> = world.failures().iter().map(|f| f.rank).collect();
        if far.iter().all(|r| failed.contains(r)) {
            let mut how: Vec<String> = world
                .failures()
                .iter()
                .map(|f| format!("{}:{}", f.rank, f.how))
                .collect();
            how.sort();
            println!(
                "SPLIT far side {far:?} failed after {} ms ({})",
                start.elapsed().as_millis(),
                how.join("; ")
            );
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "far side never suspected"
        );
        world.progress_for(Duration::from_millis(5));
    }
    // The near side still agrees.
    assert_eq!(comm.agree_full(1).unwrap().value, 1);
}

/// Uniform inter-communicator creation between the even and the odd world ranks, with
/// `victim` SIGKILLed at `stage` (none, before, between, exchange, after).
fn intercomm(world: &World, comm: &Comm, stage: &str, victim: u32) {
    use steadfast::comm::Stage;
    let me = comm.rank();
    let side = me % 2;
    let local = comm.split(side, me).unwrap();
    let remote_leader = 1 - side; // world ranks 0 and 1 lead
    let die_at = match stage {
        "none" => None,
        "before" => Some(Stage::Start),
        "between" => Some(Stage::FirstLocalAgreement),
        "exchange" => Some(Stage::LeaderFlagSent),
        "after" => Some(Stage::Done),
        other => panic!("unknown stage {other}"),
    };
    let mut observe = |s: Stage| {
        if me == victim && Some(s) == die_at {
            die_now();
        }
    };
    match local.intercomm_create_observed(0, comm, remote_leader, 42, &mut observe) {
        Ok(inter) => {
            // Each side contributes its own bit; each reads the other side's.
            let got = loop {
                match inter.agree(1 << side) {
                    Ok(v) => break v,
                    Err(CommError::ProcFailed { .. }) => {
                        inter.ack_failed();
                    }
                    Err(e) => panic!("rank {me}: {e}"),
                }
            };
            assert_eq!(got, 1 << (1 - side), "rank {me}: remote flags");
            println!(
                "INTERCOMM ok local={} remote={}",
                inter.local_size(),
                inter.remote_size()
            );
        }
        Err(CommError::ProcFailed { .. }) => println!("INTERCOMM failed"),
        Err(e) => panic!("rank {me}: {e}"),
    }
    let _ = world;
}

/// VICTIM computes for 2 s without calling the library; the others keep agreeing for
/// that long. With `STEADFAST_PROGRESS_THREAD=1` (and a detector timeout well below
/// 2 s) nobody is suspected: prints `COMPUTE OK failed=[..]`.
fn compute(world: &World, comm: &Comm, victim: u32) {
    let me = comm.rank();
    comm.agree(1).unwrap();
    if me == victim {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    } else {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            world.progress_for(Duration::from_millis(10));
        }
    }
    let a = comm.agree_full(1).unwrap();
    println!("COMPUTE OK failed={:?} all_acked={}", a.failed, a.all_acked);
}

/// VICTIM dies; every survivor's wildcard receive reports the failure until it is
/// acknowledged, then receives from a live peer; a receive naming the victim keeps
/// failing with ProcFailed. Prints `ANYSOURCE OK`.
fn anysource(world: &World, comm: &Comm, victim: u32) {
    let me = comm.rank();
    let n = comm.size();
    comm.agree(1).unwrap();
    if me == victim {
        die_now();
    }
    let mut b = [0u8; 4];
    // Blocks until the failure is known (nobody sends tag 99), then reports it: a
    // blocking wildcard receive cannot stay posted, so it fails with ProcFailed.
    match comm.recv(None, Some(99), &mut b) {
        Err(CommError::ProcFailed { ranks }) => assert_eq!(ranks, vec![victim]),
        other => panic!("rank {me}: expected ProcFailed, got {other:?}"),
    }
    // Until acknowledged, at once.
    assert!(matches!(
        comm.recv(None, Some(99), &mut b),
        Err(CommError::ProcFailed { .. })
    ));
    // A non-blocking one reports ProcFailedPending and stays posted: it completes
    // after the acknowledgement, with a message sent then.
    let mut pending = comm.irecv_owned(None, Some(98), vec![0u8; 4]).unwrap();
    for _ in 0..2 {
        match pending.test() {
            Err(CommError::ProcFailedPending { ranks }) => assert_eq!(ranks, vec![victim]),
            other => panic!("rank {me}: expected ProcFailedPending, got {other:?}"),
        }
    }
    assert_eq!(comm.ack_failed(), 1);
    assert_eq!(comm.get_failed(), vec![victim]);
    // A named receive from the victim fails for good.
    assert!(matches!(
        comm.recv(Some(victim), None, &mut b),
        Err(CommError::ProcFailed { .. })
    ));
    // Survivors pass a token around the ring of the living with wildcard receives.
    let live: Vec<u32> = (0..n).filter(|&r| r != victim).collect();
    let pos = live.iter().position(|&r| r == me).unwrap();
    let next = live[(pos + 1) % live.len()];
    if pos == 0 {
        comm.send(next, 8, &me.to_le_bytes()).unwrap();
        let st = comm.recv(None, Some(8), &mut b).unwrap();
        assert_eq!(st.source, *live.last().unwrap());
    } else {
        let st = comm.recv(None, Some(8), &mut b).unwrap();
        assert_eq!(st.source, live[pos - 1]);
        comm.send(next, 8, &me.to_le_bytes()).unwrap();
    }
    // The receive left posted gets the ring's second round (tag 98), sent once every
    // survivor has tested its receive (the agreement).
    comm.agree(1).unwrap();
    let prev = live[(pos + live.len() - 1) % live.len()];
    comm.send(next, 98, &me.to_le_bytes()).unwrap();
    let (inbox, st) = pending.wait();
    let st = st.unwrap();
    assert_eq!((st.source, inbox), (prev, prev.to_le_bytes().to_vec()));
    let _ = world;
    println!("ANYSOURCE OK");
}

/// One-sided access: every rank reads every window and writes its own slice of every
/// window, checked byte for byte; then, unless `victim` is out of range, the victim
/// dies and puts to it end in `ProcFailed`.
fn window(world: &World, comm: &Comm, victim: u32) {
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
fn stream(world: &World, comm: &Comm, ms: u64) {
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
fn big_put_data(mib: u64) -> Vec<u8> {
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
fn big_put(world: &World, comm: &Comm, mib: u64, data: &[u8]) {
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

/// Rank 0 waits on three requests at once while rank 2 is SIGKILLed: a receive from
/// rank 1 (which sends late), a receive from rank 2 (never sent) and a send to rank 1.
/// `wait_all` must report `ProcFailed` for the dead rank's receive alone and complete the
/// other two with their data.
fn wait_all_with_a_dead_peer(world: &World, comm: &Comm) {
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

/// The tag of every mark: a mark of another communicator is told apart by its stamp.
const MARK_TAG: u32 = 5;

/// A message on `comm` to the next rank carrying `stamp`, left for [`take_mark`].
fn send_mark(comm: &Comm, stamp: u64) {
    let (me, n) = (comm.rank(), comm.size());
    comm.send((me + 1) % n, MARK_TAG, &stamp.to_le_bytes())
        .unwrap_or_else(|e| panic!("rank {me}: mark {stamp}: {e}"));
}

/// Receives the message [`send_mark`] sent this rank on `comm` from any source, and checks
/// it is `stamp`'s (a crossed mark from another communicator would not be). Not `ANY_TAG`:
/// a faster peer's closing barrier (`Comm::free`) may already be queued on `comm`.
fn take_mark(comm: &Comm, stamp: u64) {
    let (me, n) = (comm.rank(), comm.size());
    let mut b = [0u8; 8];
    let st = comm
        .recv(ANY_SOURCE, Some(MARK_TAG), &mut b)
        .unwrap_or_else(|e| panic!("rank {me}: take mark {stamp}: {e}"));
    let got = u64::from_le_bytes(b);
    assert!(
        st.len == 8 && got == stamp && st.source == (me + n - 1) % n,
        "rank {me}: CROSSED: communicator {stamp} received {got} (tag {}, from {}, {} bytes)",
        st.tag,
        st.source,
        st.len
    );
}

fn contexts(world: &World, comm: &Comm, count: u64, seed: u64) {
    const LIVE: usize = 8;
    let me = comm.rank();
    // The same seed at every rank: every rank makes the same choices.
    let mut rng = seed;
    let mut live: Vec<(Comm, u64)> = Vec::new();
    let (mut dups, mut splits, mut shrinks, mut revoked) = (0u64, 0u64, 0u64, 0u64);
    let t = Instant::now();
    for i in 0..count {
        if live.len() == LIVE || (!live.is_empty() && splitmix(&mut rng) % 3 == 0) {
            let k = (splitmix(&mut rng) % live.len() as u64) as usize;
            let (c, stamp) = live.swap_remove(k);
            if splitmix(&mut rng) % 1000 == 0 {
                // Leave the mark unreceived and revoke: its context must never be reused.
                // The barrier first: every member has sent its mark (a revoke reaching
                // a member before its send would fail the send).
                c.barrier()
                    .unwrap_or_else(|e| panic!("rank {me}: barrier {stamp}: {e}"));
                if c.rank() == 0 {
                    c.revoke();
                }
                revoked += 1;
            } else {
                take_mark(&c, stamp);
            }
            c.free()
                .unwrap_or_else(|e| panic!("rank {me}: free {stamp}: {e}"));
        }
        let r = splitmix(&mut rng);
        let new = match r % 100 {
            0 => {
                shrinks += 1;
                comm.shrink()
            }
            1..=49 => {
                dups += 1;
                comm.dup()
            }
            _ => {
                splits += 1;
                let colors = 1 + (r >> 8) % 2;
                comm.split((me + (r >> 16) as u32) % colors as u32, u32::MAX - me)
            }
        }
        .unwrap_or_else(|e| panic!("rank {me}: creation {i}: {e}"));
        send_mark(&new, i);
        live.push((new, i));
    }
    for (c, stamp) in live.drain(..) {
        take_mark(&c, stamp);
        c.free()
            .unwrap_or_else(|e| panic!("rank {me}: free {stamp}: {e}"));
    }
    assert!(world.failures().is_empty(), "{:?}", world.failures());
    println!(
        "CONTEXTS OK {count} communicators (dup {dups}, split {splits}, shrink {shrinks}, \
         revoked {revoked}) in {} ms",
        t.elapsed().as_millis()
    );
}

fn split_after_failure(world: &World, comm: &Comm, victim: u32) {
    let me = comm.rank();
    comm.barrier().unwrap();
    if me == victim {
        die_now();
    }
    agree_until_failed(world, comm, victim);
    comm.ack_failed();
    let half = comm
        .split(0, me)
        .unwrap_or_else(|e| panic!("rank {me}: split after an acknowledged failure: {e}"));
    send_mark(&half, 42);
    take_mark(&half, 42);
    let n = half.size();
    half.free().unwrap();
    println!("SPLIT OK {n}");
}

fn exhaust(comm: &Comm) {
    let me = comm.rank();
    let mut live = Vec::new();
    let err = loop {
        match comm.dup() {
            Ok(c) => live.push(c),
            Err(e) => break e,
        }
        assert!(
            live.len() < 1 << 17,
            "rank {me}: no exhaustion after {} dups",
            live.len()
        );
    };
    assert!(
        matches!(err, CommError::ContextsExhausted { .. }),
        "rank {me}: expected ContextsExhausted, got {err:?}"
    );
    println!("EXHAUSTED after {}: {err}", live.len());
    // A freed context is usable again.
    live.pop().expect("some dups succeeded").free().unwrap();
    let again = comm
        .dup()
        .unwrap_or_else(|e| panic!("rank {me}: dup after free: {e}"));
    send_mark(&again, 7);
    take_mark(&again, 7);
    println!("REUSED");
    again.free().unwrap();
    for c in live {
        c.free().unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let big_data = match args.get(1).map(String::as_str) {
        Some("bigput") => big_put_data(args[2].parse().expect("numeric argument")),
        _ => Vec::new(),
    };
    let world = World::init().unwrap_or_else(|e| {
        eprintln!("init: {e}");
        std::process::exit(3)
    });
    let comm = world.comm();
    let arg = |i: usize| -> u64 { args[i].parse().expect("numeric argument") };
    match args.get(1).map(String::as_str) {
        Some("p2p") => p2p(&world, &comm),
        Some("agree-loop") => agree_loop(&comm, arg(2) as u32, arg(3) as u32, arg(4)),
        Some("revoke") => revoke(&world, &comm),
        Some("shrink") => shrink(&world, &comm, arg(2) as u32),
        Some("detect") => detect(&comm, arg(2) as u32),
        Some("hang") => hang(&world, &comm, arg(2) as u32),
        Some("netsplit") => netsplit(&world, &comm),
        Some("anysource") => anysource(&world, &comm, arg(2) as u32),
        Some("compute") => compute(&world, &comm, arg(2) as u32),
        Some("stream") => stream(&world, &comm, arg(2)),
        Some("window") => window(&world, &comm, arg(2) as u32),
        Some("bigput") => big_put(&world, &comm, arg(2), &big_data),
        Some("waitall") => wait_all_with_a_dead_peer(&world, &comm),
        Some("intercomm") => intercomm(&world, &comm, &args[2], arg(3) as u32),
        Some("contexts") => contexts(&world, &comm, arg(2), arg(3)),
        Some("exhaust") => exhaust(&comm),
        Some("split-after-failure") => split_after_failure(&world, &comm, arg(2) as u32),
        Some("order") => matching::order(&world, &comm, &args[2]),
        Some("deadsource") => matching::deadsource(&world, &comm),
        Some("revokepending") => matching::revoke_pending(&world, &comm),
        Some("overtake") => matching::overtake(&comm, &args[2]),
        Some("ssend") => ssend::ssend(&world, &comm),
        Some("ssend-fail") => ssend::ssend_fail(&world, &comm),
        Some("ssend-fabric") => ssend::ssend_fabric(&world, &comm),
        Some("mprobe") => ssend::mprobe(&world, &comm),
        Some("threads") => threads::threads(&world, &comm, &args),
        other => {
            eprintln!("unknown scenario {other:?}");
            std::process::exit(2)
        }
    }
    drop(comm);
    let t = Instant::now();
    world.finalize();
    println!("FINALIZED in {} us", t.elapsed().as_micros());
}
