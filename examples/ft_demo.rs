//! The fault-tolerance demo (the README's main job): run under `steadfast-run -n 4`.
//!
//! Ranks 0-1 and 2-3 pose as two nodes (node ids overridden), so messages inside a pair
//! go through shared memory and between pairs through the fabric (tcp). The demo
//! measures ping-pong latency on both paths and failure-free agreement, then rank 3
//! SIGKILLs itself; the survivors time the first agreement after the failure
//! (detection included), the stabilization (ack + agree), a revoke interrupting
//! receives blocked on every rank, the shrink, and agreement on the shrunk
//! communicator. Rank 0 prints the table; every survivor prints `DEMO OK`.

use std::time::{Duration, Instant};

use steadfast::bootstrap;
use steadfast::params::Params;
use steadfast::{Comm, CommError, World};

const VICTIM: u32 = 3;

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as u64
}

/// Median one-way latency (µs) of 8-byte ping-pongs between `a` and `b`.
fn pingpong(comm: &Comm, a: u32, b: u32, iterations: usize) -> Option<f64> {
    let me = comm.rank();
    let mut buf = [0u8; 8];
    let mut samples = Vec::with_capacity(iterations);
    for i in 0..iterations + 100 {
        let t = Instant::now();
        if me == a {
            comm.send(b, 1, &buf).unwrap();
            comm.recv(Some(b), Some(1), &mut buf).unwrap();
        } else if me == b {
            comm.recv(Some(a), Some(1), &mut buf).unwrap();
            comm.send(a, 1, &buf).unwrap();
        } else {
            return None;
        }
        if i >= 100 {
            samples.push(t.elapsed().as_nanos() as f64 / 2000.0);
        }
    }
    samples.sort_by(f64::total_cmp);
    (me == a).then(|| samples[samples.len() / 2])
}

/// Mean time (µs) of `n` failure-free agreements.
fn agreements(comm: &Comm, n: usize) -> f64 {
    for _ in 0..100 {
        comm.agree(1).unwrap();
    }
    let t = Instant::now();
    for _ in 0..n {
        comm.agree(1).unwrap();
    }
    t.elapsed().as_nanos() as f64 / n as f64 / 1000.0
}

fn main() {
    let boot = bootstrap::from_env().unwrap_or_else(|e| {
        eprintln!("ft_demo: {e}");
        std::process::exit(2)
    });
    let rank = boot.rank();
    if boot.size() != 4 {
        eprintln!("ft_demo: run with steadfast-run -n 4");
        std::process::exit(2);
    }
    // Two "nodes" of two ranks each on this machine.
    let node = format!("demo-node-{}", rank / 2);
    let params = Params::load()
        .and_then(|p| p.to_builder().node_id(&node).build())
        .unwrap_or_else(|e| {
            eprintln!("ft_demo: {e}");
            std::process::exit(2)
        });
    let world = World::init_with(boot, params).unwrap_or_else(|e| {
        eprintln!("ft_demo: {e}");
        std::process::exit(2)
    });
    let comm = world.comm();
    let say = |s: String| {
        if rank == 0 {
            println!("{s}");
        }
    };
    say(format!(
        "steadfast demo: 4 ranks, ranks 0-1 and 2-3 on two nodes; fabric provider {}",
        world.provider().unwrap_or("-")
    ));
    say(format!(
        "  routes from rank 0: {:?}",
        (0..4).map(|r| world.route(r).unwrap()).collect::<Vec<_>>()
    ));

    let shm = pingpong(&comm, 0, 1, 2000);
    comm.agree(1).unwrap();
    let tcp = pingpong(&comm, 0, 2, 2000);
    comm.agree(1).unwrap();
    if let (Some(shm), Some(tcp)) = (shm, tcp) {
        say(format!(
            "  ping-pong 8 B one-way, median: shm {shm:.2} us, tcp {tcp:.2} us"
        ));
    }
    let ff = agreements(&comm, 2000);
    say(format!(
        "  agreement, 4 ranks, failure-free: {ff:.2} us mean"
    ));

    // Rank 3 dies.
    comm.agree(1).unwrap();
    if rank == VICTIM {
        // SAFETY: raising a signal at ourselves.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    let killed_at = Instant::now();
    let mut first = None;
    loop {
        let t = Instant::now();
        match comm.agree(1) {
            Ok(_) => {}
            Err(CommError::ProcFailed { ranks }) => {
                first = Some((t.elapsed(), ranks));
                break;
            }
            Err(e) => panic!("rank {rank}: {e}"),
        }
        if killed_at.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    let (first, ranks) = first.expect("the failure was never reported");
    let note = world
        .failures()
        .into_iter()
        .find(|n| n.rank == VICTIM)
        .expect("a note on the victim");
    say(format!(
        "  rank {VICTIM} SIGKILLed: first agreement after it reports ProcFailed {ranks:?} in {:.1} us (rank 0 learnt it from \"{}\")",
        first.as_secs_f64() * 1e6,
        note.how
    ));
    let t = Instant::now();
    loop {
        comm.ack_failed();
        if comm.agree(1).is_ok() {
            break;
        }
    }
    say(format!(
        "  stabilize (ack + agree): {:.1} us",
        t.elapsed().as_secs_f64() * 1e6
    ));
    let after = agreements(&comm, 2000);
    say(format!("  agreement with the hole: {after:.2} us mean"));

    // Revoke while every other survivor is blocked in a receive from rank 0.
    let revoked_at;
    if rank == 0 {
        world.progress_for(Duration::from_millis(50));
        revoked_at = realtime_ns();
        comm.revoke();
    } else {
        let mut b = [0u8; 1];
        assert_eq!(comm.recv(Some(0), Some(2), &mut b), Err(CommError::Revoked));
        revoked_at = realtime_ns();
    }
    let t = Instant::now();
    let small = comm.shrink().expect("shrink");
    let shrink_us = t.elapsed().as_secs_f64() * 1e6;
    // Gather the interruption times on the shrunk communicator.
    if small.rank() == 0 {
        let mut worst = 0u64;
        for r in 1..small.size() {
            let mut b = [0u8; 8];
            small.recv(Some(r), Some(9), &mut b).unwrap();
            worst = worst.max(u64::from_le_bytes(b).saturating_sub(revoked_at));
        }
        say(format!(
            "  revoke: every blocked receive interrupted within {:.1} us",
            worst as f64 / 1000.0
        ));
    } else {
        small.send(0, 9, &revoked_at.to_le_bytes()).unwrap();
    }
    say(format!(
        "  shrink: {shrink_us:.1} us -> {} ranks",
        small.size()
    ));
    // Keep computing on the survivors: a ring exchange and agreements.
    let (r, n) = (small.rank(), small.size());
    let mut b = [0u8; 4];
    if r % 2 == 0 {
        small.send((r + 1) % n, 5, &r.to_le_bytes()).unwrap();
        small.recv(Some((r + n - 1) % n), Some(5), &mut b).unwrap();
    } else {
        small.recv(Some((r + n - 1) % n), Some(5), &mut b).unwrap();
        small.send((r + 1) % n, 5, &r.to_le_bytes()).unwrap();
    }
    assert_eq!(u32::from_le_bytes(b), (r + n - 1) % n);
    let shrunk = agreements(&small, 2000);
    say(format!(
        "  agreement on the shrunk communicator: {shrunk:.2} us mean"
    ));
    drop((small, comm));
    let t = Instant::now();
    world.finalize();
    println!(
        "[rank {rank}] DEMO OK (finalize {:.1} us)",
        t.elapsed().as_secs_f64() * 1e6
    );
}
