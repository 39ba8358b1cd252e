//! Multithreaded message rate (`mt_mr`): ranks 0 and 1 each run T threads; thread t of
//! rank 0 sends windows of [`WINDOW`] non-blocking messages of `--min` bytes (8 by
//! default) to thread t of rank 1, which receives them in order and acknowledges each
//! window with one byte. Two layouts:
//!
//! - `private`: every thread pair on a communicator of its own (one `dup` per thread,
//!   made before the threads start), tags 2 (data) and 3 (acknowledgement);
//! - `shared`: every thread on one communicator, thread t's data with tag 2 + 2t and its
//!   acknowledgements with tag 3 + 2t (MPI's matching keeps each thread's stream apart).
//!
//! The rate is every thread's messages over the repetition's wall time, from before the
//! threads start to after the last one ends (the slower rank's), per repetition; the
//! table gives the median, min and max. (Each thread timing itself would overstate it:
//! threads that run one after the other would each look as fast as one alone.) The Open MPI counterpart is
//! `benches/compare/ompi_mt_mr.c` (`MPI_THREAD_MULTIPLE`), run by `benches/compare/run.sh`.

use std::time::Instant;

use steadfast::comm::Comm;
use steadfast::World;

use crate::args::SizeRange;
use crate::p2p::{describe, need_two, slowest_secs, WINDOW};
use crate::report::{Report, Stats};
use crate::{fail, Common, OrFail};

/// The message size is `--min` (8 B by default); `--max` only bounds it (1 GiB).
pub const SIZES: SizeRange = SizeRange {
    floor: 1,
    ..SizeRange::new(8, crate::args::MAX_SIZE)
};

/// Windows per thread and repetition: `--iterations` counts each thread's messages.
fn windows_for(iterations: usize) -> usize {
    (iterations / WINDOW).max(10)
}

/// How the threads share communicators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One communicator per thread pair.
    Private,
    /// One communicator for all threads, a tag pair per thread.
    Shared,
}

impl Layout {
    /// `private`, `shared` or `both` (the command line's `--comms`).
    pub fn parse_list(text: &str) -> Result<Vec<Layout>, String> {
        match text {
            "private" => Ok(vec![Layout::Private]),
            "shared" => Ok(vec![Layout::Shared]),
            "both" => Ok(vec![Layout::Private, Layout::Shared]),
            other => Err(format!(
                "--comms {other:?}: expected private, shared or both"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Layout::Private => "private",
            Layout::Shared => "shared",
        }
    }
}

/// `--threads`: a comma-separated list of thread counts, each 1 to 64.
pub fn parse_threads(text: &str) -> Result<Vec<usize>, String> {
    let counts: Result<Vec<usize>, String> = text
        .split(',')
        .map(|t| match t.trim().parse::<usize>() {
            Ok(n) if (1..=64).contains(&n) => Ok(n),
            _ => Err(format!(
                "--threads {text:?}: expected thread counts from 1 to 64, separated by commas"
            )),
        })
        .collect();
    counts
}

/// The data and acknowledgement tags of thread `t` in `layout`.
fn tags(layout: Layout, t: usize) -> (u32, u32) {
    match layout {
        Layout::Private => (2, 3),
        Layout::Shared => (2 + 2 * t as u32, 3 + 2 * t as u32),
    }
}

/// One thread's part of a repetition.
fn run_thread(comm: &Comm, layout: Layout, t: usize, windows: usize, size: usize) {
    let me = comm.rank();
    let peer = 1 - me;
    let (data_tag, ack_tag) = tags(layout, t);
    let data = vec![0x5a_u8; size];
    let mut buf = vec![0_u8; size];
    let mut ack = [0_u8; 1];
    for _ in 0..windows {
        if me == 0 {
            let mut sends = Vec::with_capacity(WINDOW);
            for _ in 0..WINDOW {
                // SAFETY: every request is waited for below, before `data` is dropped
                // (an error ends the process first).
                let s = unsafe { comm.isend(peer, data_tag, &data) }
                    .or_fail(me, format_args!("thread {t}: isend of {size} B"));
                sends.push(s);
            }
            for s in sends {
                s.wait()
                    .or_fail(me, format_args!("thread {t}: send of {size} B"));
            }
            comm.recv(Some(peer), Some(ack_tag), &mut ack)
                .or_fail(me, format_args!("thread {t}: acknowledgement"));
        } else {
            for _ in 0..WINDOW {
                comm.recv(Some(peer), Some(data_tag), &mut buf)
                    .or_fail(me, format_args!("thread {t}: receive of {size} B"));
            }
            comm.send(peer, ack_tag, &ack)
                .or_fail(me, format_args!("thread {t}: acknowledgement"));
        }
    }
}

/// One repetition with `threads` threads: its wall time at this rank, in seconds.
fn repetition(comms: &[Comm], layout: Layout, threads: usize, windows: usize, size: usize) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let comm = match layout {
                    Layout::Private => &comms[t],
                    Layout::Shared => &comms[0],
                };
                s.spawn(move || run_thread(comm, layout, t, windows, size))
            })
            .collect();
        for h in handles {
            // A thread's failure already ended the process (`or_fail`); a panic is a bug.
            h.join().expect("a message-rate thread panicked");
        }
    });
    start.elapsed().as_secs_f64()
}

/// Messages per second of all threads together, for each thread count and layout.
pub fn mt_mr(world: &World, c: &Common, threads: &[usize], layouts: &[Layout]) {
    need_two(world);
    if world.size() != 2 {
        fail(&format!(
            "mt_mr runs on exactly 2 ranks, not {}",
            world.size()
        ));
    }
    let world_comm = world.comm();
    let me = world_comm.rank();
    let size = c.range.0;
    let windows = windows_for(c.iterations);
    let mut report =
        Report::new("mt_mr", "Message rate", "1/s", c.json).first_column("Threads/layout");
    describe(world, &mut report, c);
    report.fact("size", format!("{size} B"));
    report.fact("window", WINDOW);
    report.fact("messages per thread", windows * WINDOW);
    if me == 0 {
        report.start();
    }
    for &layout in layouts {
        for &n in threads {
            let count = match layout {
                Layout::Private => n,
                Layout::Shared => 1,
            };
            let comms: Vec<Comm> = (0..count)
                .map(|i| {
                    world_comm
                        .dup()
                        .or_fail(me, format_args!("dup of communicator {i}"))
                })
                .collect();
            let mut samples = Vec::with_capacity(c.repetitions);
            for rep in 0..c.repetitions {
                let warm = if rep == 0 {
                    (c.warmup / WINDOW).min(windows)
                } else {
                    0
                };
                if warm > 0 {
                    repetition(&comms, layout, n, warm, size);
                }
                world_comm
                    .barrier()
                    .or_fail(me, format_args!("barrier before {n} threads"));
                let secs = repetition(&comms, layout, n, windows, size);
                // The slower rank's wall time.
                let slowest = slowest_secs(
                    &world_comm,
                    secs,
                    format_args!("gathering the times of {n} threads"),
                );
                let messages = (n * windows * WINDOW) as f64;
                samples.push(messages / slowest);
            }
            for comm in comms {
                comm.free()
                    .or_fail(me, format_args!("freeing a communicator"));
            }
            if me == 0 {
                report.row(format!("{n} {}", layout.name()), Stats::of(&mut samples));
            }
        }
    }
    world_comm.barrier().or_fail(me, "final barrier");
    if me == 0 {
        report.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_lists_and_layouts_parse_and_bad_ones_are_named() {
        assert_eq!(parse_threads("1,2,4,8"), Ok(vec![1, 2, 4, 8]));
        assert!(parse_threads("0").unwrap_err().contains("1 to 64"));
        assert!(parse_threads("2,x").is_err());
        assert_eq!(
            Layout::parse_list("both"),
            Ok(vec![Layout::Private, Layout::Shared])
        );
        assert!(Layout::parse_list("all").unwrap_err().contains("\"all\""));
    }

    #[test]
    fn shared_threads_have_distinct_tags_private_ones_the_same() {
        assert_eq!(tags(Layout::Private, 5), (2, 3));
        let all: std::collections::HashSet<u32> = (0..8)
            .flat_map(|t| {
                let (d, a) = tags(Layout::Shared, t);
                [d, a]
            })
            .collect();
        assert_eq!(all.len(), 16);
    }
}
