//! The physical floors the shared-memory transport is held against, on this machine:
//! - one-way latency of two processes pinned to two cores bouncing one cache line;
//! - single-core memcpy bandwidth and process_vm_readv bandwidth at 1 MiB and 64 MiB.
//!
//! ```text
//! cargo run --release -p steadfast-shm --example floors [bounce]
//! ```
//! `bounce` prints only the cache-line time (ns), for pairing with other measurements.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Pins to the `cpu`-th CPU this process may use (best effort).
fn pin(cpu: usize) {
    let _ = steadfast_os::affinity::bind_to_allowed_cpu(cpu);
}

/// One cache line in a shared anonymous mapping, bounced between a parent and a forked
/// child pinned to cores 0 and 1.
fn cache_line_bounce(rounds: u64) -> f64 {
    // SAFETY: a fresh shared anonymous mapping of one page; only atomics touch it.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    // SAFETY: page-aligned, zeroed, lives until the process exits.
    let line = unsafe { &*(page as *const AtomicU64) };
    // SAFETY: fork in a single-threaded program; the child only spins on atomics and
    // exits with _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        pin(1);
        // ORDERING: Acquire/Release pairs with the parent's loop below; the line's value
        // is the whole message, so this is the cheapest correct handoff.
        for i in 0..rounds {
            while line.load(Ordering::Acquire) != 2 * i + 1 {}
            line.store(2 * i + 2, Ordering::Release);
        }
        // SAFETY: leave the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    pin(0);
    let start = Instant::now();
    // ORDERING: pairs with the child's Acquire/Release loop above.
    for i in 0..rounds {
        line.store(2 * i + 1, Ordering::Release);
        while line.load(Ordering::Acquire) != 2 * i + 2 {}
    }
    let ns = start.elapsed().as_nanos() as f64 / (2 * rounds) as f64;
    // SAFETY: reap our child.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    ns
}

fn bandwidth(size: usize, reps: usize, mut copy: impl FnMut(&[u8], &mut [u8])) -> f64 {
    let src: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let mut dst = vec![0u8; size];
    copy(&src, &mut dst); // warm
    let start = Instant::now();
    for _ in 0..reps {
        copy(&src, &mut dst);
    }
    std::hint::black_box(&dst);
    (size * reps) as f64 / start.elapsed().as_secs_f64() / 1e6
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("bounce") {
        // Quick mode: only the cache-line one-way time, in ns.
        println!("{:.1}", cache_line_bounce(200_000));
        return;
    }
    println!("# physical floors (this machine)");
    println!(
        "cache line one-way, cores 0<->1   {:>8.1} ns",
        cache_line_bounce(2_000_000)
    );
    let pid = std::process::id();
    for (size, reps) in [(1usize << 20, 2000), (64 << 20, 20)] {
        let mc = bandwidth(size, reps, |s, d| d.copy_from_slice(s));
        let cma = bandwidth(size, reps, |s, d| {
            steadfast_shm::cma::read_from(pid, s.as_ptr() as u64, d).expect("process_vm_readv")
        });
        println!(
            "{:>5} MiB: memcpy {:>8.0} MB/s   process_vm_readv {:>8.0} MB/s",
            size >> 20,
            mc,
            cma
        );
    }
}
