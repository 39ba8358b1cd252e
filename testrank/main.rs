//! A rank program for the launcher tests (not a user tool).
//!
//! `bootstrap-test-rank exchange`: put, fence, get every other rank's value, check it.
//! `bootstrap-test-rank die R`: after the exchange, rank R SIGKILLs itself; every other
//! rank waits for the launcher's failure event about R, checks that getting a key R never
//! published reports R dead, fences without R, and exits 0.

use std::time::{Duration, Instant};
use steadfast::bootstrap::{from_env, Bootstrap, BootstrapError};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut b = from_env().unwrap_or_else(|e| {
        eprintln!("bootstrap: {e}");
        std::process::exit(3)
    });
    let (rank, size) = (b.rank(), b.size());
    if b.generation() > 0 {
        return restarted(b.as_mut(), &args);
    }
    b.put("addr", format!("endpoint-of-{rank}").as_bytes())
        .unwrap();
    b.fence().unwrap();
    for r in 0..size {
        let v = b.get(r, "addr").unwrap();
        assert_eq!(v, format!("endpoint-of-{r}").as_bytes());
    }
    if args.get(1).is_some_and(|a| a.starts_with("restart")) {
        // Everyone has read the first incarnation's address before the victim dies
        // (its restart replaces it).
        b.fence().unwrap();
    }
    if args.get(1).map(String::as_str) == Some("restart") {
        let victim = arg(&args, 2);
        if rank == victim {
            // SAFETY: raising a signal at ourselves.
            unsafe { libc::raise(libc::SIGKILL) };
        }
        asker(b.as_mut(), &args, victim);
    } else if args.get(1).map(String::as_str) == Some("restart-exits") {
        let victim = arg(&args, 2);
        if rank == victim {
            // SAFETY: raising a signal at ourselves.
            unsafe { libc::raise(libc::SIGKILL) };
        }
        if rank == 0 {
            wait_for_death(b.as_mut(), victim, 0);
            b.restart_begin(victim, 0).unwrap();
            let answer = loop {
                if let Some(a) = b.restart_poll(Duration::from_millis(100)).unwrap() {
                    break a;
                }
            };
            match answer {
                Err(e) => println!("rank 0: restart error: {e}"),
                Ok(j) => panic!("restart of a program that exits succeeded: {j:?}"),
            }
        }
    } else if args.get(1).map(String::as_str) == Some("die") {
        let victim: u32 = args[2].parse().unwrap();
        if rank == victim {
            // SAFETY: raising a signal at ourselves.
            unsafe { libc::raise(libc::SIGKILL) };
        }
        let start = Instant::now();
        let mut seen = false;
        while !seen && start.elapsed() < Duration::from_secs(30) {
            seen = b
                .failures(Duration::from_millis(100))
                .unwrap()
                .iter()
                .any(|f| f.rank == victim && f.how.contains("signal 9"));
        }
        assert!(seen, "rank {rank}: no failure event for rank {victim}");
        match b.get(victim, "never-published") {
            Err(BootstrapError::RankDied { rank: r, .. }) => assert_eq!(r, victim),
            other => panic!("rank {rank}: expected RankDied, got {other:?}"),
        }
        b.fence().unwrap();
        println!(
            "rank {rank} saw rank {victim} die after {:?}",
            start.elapsed()
        );
    } else {
        println!("rank {rank} of {size}: exchange ok");
    }
}

fn arg(args: &[String], i: usize) -> u32 {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("argument {i} missing or not a number: {args:?}"))
}

/// The rank restarts the victim asks for, in order: restart `victim` from each
/// incarnation until `times` restarts are done.
fn asker(b: &mut dyn Bootstrap, args: &[String], victim: u32) {
    let (times, askers) = (arg(args, 3), arg(args, 4));
    let rank = b.rank();
    let me = (0..b.size())
        .filter(|&r| r != victim)
        .position(|r| r == rank);
    if me.is_none_or(|i| i as u32 >= askers) {
        return;
    }
    for generation in 0..times {
        wait_for_death(b, victim, generation);
        let start = Instant::now();
        b.restart_begin(victim, generation).unwrap();
        let answer = loop {
            if let Some(a) = b.restart_poll(Duration::from_millis(100)).unwrap() {
                break a;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "no answer");
        };
        let j = answer.unwrap_or_else(|e| panic!("rank {rank}: {e}"));
        assert_eq!((j.rank, j.generation), (victim, generation + 1));
        // The new incarnation's address (or a later one's: another asker may already
        // have restarted it again).
        let addr = String::from_utf8(b.get(victim, "addr").unwrap()).unwrap();
        let prefix = format!("endpoint-of-{victim}-gen-");
        let g: u32 = addr
            .strip_prefix(&prefix)
            .and_then(|g| g.parse().ok())
            .unwrap();
        assert!(g > generation, "{addr}");
        println!(
            "rank {rank} restarted rank {victim} as incarnation {} pid {} in {:?}",
            j.generation,
            j.pid,
            start.elapsed()
        );
    }
    b.put(&format!("ack-{times}"), b"ack").unwrap();
}

fn wait_for_death(b: &mut dyn Bootstrap, victim: u32, generation: u32) {
    let start = Instant::now();
    loop {
        let events = b.failures(Duration::from_millis(100)).unwrap();
        if events
            .iter()
            .any(|f| f.rank == victim && f.generation == generation)
        {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no failure event"
        );
    }
}

/// A restarted incarnation: publishes its address, joins, dies again or waits for the
/// ack.
fn restarted(b: &mut dyn Bootstrap, args: &[String]) {
    let (rank, generation) = (b.rank(), b.generation());
    match args.get(1).map(String::as_str) {
        Some("restart-exits") => std::process::exit(3),
        Some("restart") => {}
        other => panic!("rank {rank} restarted in mode {other:?}"),
    }
    b.put(
        "addr",
        format!("endpoint-of-{rank}-gen-{generation}").as_bytes(),
    )
    .unwrap();
    b.joined().unwrap();
    let times = arg(args, 3);
    if generation < times {
        // SAFETY: raising a signal at ourselves.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    let first_asker = u32::from(rank == 0);
    let ack = b.get(first_asker, &format!("ack-{times}")).unwrap();
    assert_eq!(ack, b"ack");
    println!("rank {rank} incarnation {generation}: joined and acknowledged");
}
