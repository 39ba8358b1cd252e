//! Failure scenarios of `ft-test-rank`: agreements under a death (`agree-loop`),
//! revoke, detection (`detect`, `hang`, `netsplit`, `compute`), shrink, and wildcard
//! receives across a death (`anysource`).

use std::time::{Duration, Instant};
use steadfast::{Comm, CommError, World};

use super::{die_now, splitmix};

pub(crate) fn agree_loop(comm: &Comm, iterations: u32, victim: u32, seed: u64) {
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

pub(crate) fn revoke(world: &World, comm: &Comm) {
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
pub(crate) fn agree_until_failed(world: &World, comm: &Comm, victim: u32) {
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

/// Sends this rank's number to `to` and receives `from`'s, both with `tag`, sending
/// first when `send_first` (ranks that pair a sender-first with a receiver-first never
/// wait on each other); the number received.
fn swap_ranks(comm: &Comm, to: u32, from: u32, tag: u32, send_first: bool) -> u32 {
    let me = comm.rank();
    let mut b = [0u8; 4];
    if send_first {
        comm.send(to, tag, &me.to_le_bytes()).unwrap();
        comm.recv(Some(from), Some(tag), &mut b).unwrap();
    } else {
        comm.recv(Some(from), Some(tag), &mut b).unwrap();
        comm.send(to, tag, &me.to_le_bytes()).unwrap();
    }
    u32::from_le_bytes(b)
}

pub(crate) fn shrink(world: &World, comm: &Comm, victim: u32) {
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
    assert_eq!(swap_ranks(&small, next, prev, 5, r % 2 == 0), prev);
    assert_eq!(small.agree(1), Ok(1));
    println!("SHRUNK {n} RING OK in {shrink_us} us");
}

fn realtime_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos()
}

pub(crate) fn detect(comm: &Comm, victim: u32) {
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

/// Spins for `d` without calling the library (an application computing).
fn compute_for(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

pub(crate) fn hang(world: &World, comm: &Comm, victim: u32) {
    let me = comm.rank();
    comm.agree(1).unwrap();
    if me == victim {
        // Compute without progressing for far longer than the detector's timeout.
        compute_for(Duration::from_secs(3));
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

/// The victim offers rank 0 a 1 MiB message (over shm a large message offered by its
/// address, which the receiver reads and answers), then computes for 8 s without calling
/// the library and is suspected and excluded; rank 0 never receives it. When the
/// victim resumes, its send fails at once (`Excluded`): the others answer nothing it
/// sends. The others outlive the victim's computing by 6 s.
pub(crate) fn hang_send(world: &World, comm: &Comm, victim: u32) {
    let me = comm.rank();
    comm.agree(1).unwrap();
    if me == victim {
        let req = comm.isend_owned(0, 5, vec![7u8; 1 << 20]).unwrap();
        compute_for(Duration::from_secs(8));
        let start = Instant::now();
        let (_, r) = req.wait();
        println!("SEND {r:?} after {} ms", start.elapsed().as_millis());
        return;
    }
    let start = Instant::now();
    agree_until_failed(world, comm, victim);
    while start.elapsed() < Duration::from_secs(14) {
        world.progress();
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("OUTLIVED");
}

/// Two "hosts" (network namespaces): every rank sends to every other, prints its
/// route counters; then rank 0 runs `STEADFAST_TEST_CUT` (cutting the link) and each
/// rank waits for the detector to suspect the far side.
pub(crate) fn netsplit(world: &World, comm: &Comm) {
    let (me, n) = (comm.rank(), comm.size());
    for step in 1..n {
        let to = (me + step) % n;
        let from = (me + n - step) % n;
        assert_eq!(swap_ranks(comm, to, from, 1, me < to), from);
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

/// VICTIM computes for 2 s without calling the library; the others keep agreeing for
/// that long. With `STEADFAST_PROGRESS_THREAD=1` (and a detector timeout well below
/// 2 s) nobody is suspected: prints `COMPUTE OK failed=[..]`.
pub(crate) fn compute(world: &World, comm: &Comm, victim: u32) {
    let me = comm.rank();
    comm.agree(1).unwrap();
    if me == victim {
        compute_for(Duration::from_secs(2));
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
pub(crate) fn anysource(world: &World, comm: &Comm, victim: u32) {
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
