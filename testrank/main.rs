//! A rank program for the launcher tests (not a user tool).
//!
//! `bootstrap-test-rank exchange`: put, fence, get every other rank's value, check it.
//! `bootstrap-test-rank die R`: after the exchange, rank R SIGKILLs itself; every other
//! rank waits for the launcher's failure event about R, checks that getting a key R never
//! published reports R dead, fences without R, and exits 0.

use std::time::{Duration, Instant};
use steadfast::bootstrap::{from_env, BootstrapError};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut b = from_env().unwrap_or_else(|e| {
        eprintln!("bootstrap: {e}");
        std::process::exit(3)
    });
    let (rank, size) = (b.rank(), b.size());
    b.put("addr", format!("endpoint-of-{rank}").as_bytes())
        .unwrap();
    b.fence().unwrap();
    for r in 0..size {
        let v = b.get(r, "addr").unwrap();
        assert_eq!(v, format!("endpoint-of-{r}").as_bytes());
    }
    if args.get(1).map(String::as_str) == Some("die") {
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
