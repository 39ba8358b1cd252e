//! The fault-tolerance phases ICLDisco's ulfm-testing reports, measured on the
//! runtime: run under `steadfast-run -n N` (or any launcher).
//!
//! 1. failure-free agreement (mean over `--iterations`);
//! 2. the last rank SIGKILLs itself; every survivor times its first agreement after
//!    the kill (detection included, from the victim's last stamp);
//! 3. stabilize: ack + agree until an agreement succeeds;
//! 4. failure-free agreement on the communicator with the hole;
//! 5. shrink (failure-free, on the survivors: what shrink itself costs).
//!
//! Between 1 and 2, revoke: on a dup of the world, every rank but 0 blocks in a
//! receive; rank 0 revokes; the time until the last rank is interrupted.
//!
//! Rank 0 prints one line per phase (`phase value unit`), medians over ranks where
//! several report.

use std::time::{Duration, Instant};

use steadfast::{Comm, CommError, World};

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as u64
}

fn mean_agree_us(comm: &Comm, n: usize) -> f64 {
    for _ in 0..n / 10 + 10 {
        comm.agree(1).unwrap();
    }
    let t = Instant::now();
    for _ in 0..n {
        comm.agree(1).unwrap();
    }
    t.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// Gathers one u64 from every rank of `comm` at rank 0.
fn gather(comm: &Comm, v: u64) -> Vec<u64> {
    if comm.rank() == 0 {
        let mut all = vec![v];
        for r in 1..comm.size() {
            let mut b = [0u8; 8];
            comm.recv(Some(r), Some(77), &mut b).unwrap();
            all.push(u64::from_le_bytes(b));
        }
        all
    } else {
        comm.send(0, 77, &v.to_le_bytes()).unwrap();
        Vec::new()
    }
}

fn main() {
    let iterations: usize = std::env::args()
        .skip_while(|a| a != "--iterations")
        .nth(1)
        .map(|v| v.parse().expect("--iterations N"))
        .unwrap_or(20_000);
    let world = World::init().unwrap_or_else(|e| {
        eprintln!("ft_phases: {e}");
        std::process::exit(2)
    });
    let comm = world.comm();
    let (me, n) = (comm.rank(), comm.size());
    if n < 2 {
        eprintln!("ft_phases: needs at least 2 ranks");
        std::process::exit(2);
    }
    let victim = n - 1;
    let out = |s: String| {
        if me == 0 {
            println!("{s}");
        }
    };
    out(format!(
        "# steadfast ft phases, {n} ranks, routes from rank 0 {:?}",
        (0..n).map(|r| world.route(r).unwrap()).collect::<Vec<_>>()
    ));
    out(format!(
        "agree_failure_free {:.3} us",
        mean_agree_us(&comm, iterations)
    ));

    // Revoke, on a dup of the world communicator.
    let dup = comm.dup().unwrap();
    comm.agree(1).unwrap();
    let interrupted = if me == 0 {
        world.progress_for(Duration::from_millis(20));
        let t = realtime_ns();
        dup.revoke();
        t
    } else {
        let mut b = [0u8; 1];
        assert_eq!(dup.recv(Some(0), Some(1), &mut b), Err(CommError::Revoked));
        realtime_ns()
    };
    let stamps = gather(&comm, interrupted);
    if me == 0 {
        let worst = stamps[1..]
            .iter()
            .map(|t| t.saturating_sub(stamps[0]))
            .max()
            .unwrap_or(0);
        println!("revoke_interrupt_all {:.1} us", worst as f64 / 1000.0);
    }
    // The kill: the victim sends its stamp to every survivor, then dies.
    comm.agree(1).unwrap();
    let killed_at = if me == victim {
        let t = realtime_ns();
        for r in 0..victim {
            comm.send(r, 5, &t.to_le_bytes()).unwrap();
        }
        // SAFETY: raising a signal at ourselves.
        unsafe { libc::raise(libc::SIGKILL) };
        unreachable!()
    } else {
        let mut b = [0u8; 8];
        comm.recv(Some(victim), Some(5), &mut b).unwrap();
        u64::from_le_bytes(b)
    };
    let first_after = loop {
        match comm.agree(1) {
            Ok(_) => {}
            Err(CommError::ProcFailed { .. }) => break realtime_ns() - killed_at,
            Err(e) => panic!("rank {me}: {e}"),
        }
    };
    let t = Instant::now();
    let mut rounds = 0;
    loop {
        comm.ack_failed();
        rounds += 1;
        if comm.agree(1).is_ok() {
            break;
        }
    }
    let stabilize = t.elapsed().as_nanos() as u64;
    let after = mean_agree_us(&comm, iterations);
    // Survivors only from here: drop the victim from the gathers with a shrink first.
    let small = comm.shrink().unwrap();
    let firsts = gather(&small, first_after);
    let stabs = gather(&small, stabilize);
    if me == 0 {
        let med = |mut v: Vec<u64>| {
            v.sort_unstable();
            v[v.len() / 2] as f64 / 1000.0
        };
        let max = |v: &[u64]| *v.iter().max().unwrap() as f64 / 1000.0;
        println!(
            "agree_first_after_kill {:.1} us (median over survivors; max {:.1})",
            med(firsts.clone()),
            max(&firsts)
        );
        println!(
            "agree_stabilize {:.1} us ({rounds} rounds at rank 0; median {:.1})",
            stabilize as f64 / 1000.0,
            med(stabs)
        );
    }
    out(format!("agree_after_failure {after:.3} us"));

    // Shrink (of the dup, failure-free now: what shrink itself costs).
    small.agree(1).unwrap();
    let t = Instant::now();
    let again = small.shrink().unwrap();
    let shrink = t.elapsed().as_nanos() as u64;
    let shrinks = gather(&again, shrink);
    if again.rank() == 0 {
        let mut v = shrinks;
        v.sort_unstable();
        println!(
            "shrink {:.1} us (median over ranks)",
            v[v.len() / 2] as f64 / 1000.0
        );
    }
    drop((again, dup, small, comm));
    world.finalize();
}
