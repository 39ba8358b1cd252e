//! Point-to-point and collective benchmarks: latency, bandwidth, allreduce.

use std::time::Instant;

use steadfast::comm::ReduceOp;
use steadfast::{Comm, World};

use crate::args::{buffer, SizeRange};
use crate::report::{iterations_for, sizes, Report, Stats};
use crate::{fail, Common, OrFail};

/// Messages in flight in `bw`, `bibw` and `mbw_mr`.
pub(crate) const WINDOW: usize = 64;

/// Windows a windowed sweep (`bw`, `bibw`, `mbw_mr`) exchanges at its first size
/// before measuring anything, besides `--warmup` (at most [`WARM_START_BYTES`] of
/// messages). On the 2-core test host the first ~1000 windows of a run (a few ms)
/// went 10-20% slower whatever came before (a 1.5 s sleep, 156 windows of warm-up):
/// measured without this, the first size of every sweep was its slowest. The
/// comparison's Open MPI programs warm up the same way.
pub(crate) const WARM_START_WINDOWS: usize = 1000;

/// The most bytes the warm start sends.
pub(crate) const WARM_START_BYTES: usize = 256 << 20;

/// Warm-start windows for a sweep whose first size is `size`.
pub(crate) fn warm_start_windows(size: usize) -> usize {
    (WARM_START_BYTES / (WINDOW * size.max(1))).clamp(1, WARM_START_WINDOWS)
}

/// Runs a windowed sweep's warm start: `step(first)`, one window of the first size,
/// [`warm_start_windows`] times, and records it among the report's facts.
pub(crate) fn warm_start(report: &mut Report, first: usize, mut step: impl FnMut(usize)) {
    let windows = warm_start_windows(first);
    report.fact("warm start", format!("{windows} windows of the first size"));
    for _ in 0..windows {
        step(first);
    }
}

/// The sizes `latency` measures: 0 B to 4 MiB by default.
pub const LATENCY_SIZES: SizeRange = SizeRange::new(0, 4 << 20);
/// The sizes `bw` and `bibw` measure: 1 B to 4 MiB by default.
pub const BANDWIDTH_SIZES: SizeRange = SizeRange::new(1, 4 << 20);
/// The sizes `allreduce` measures: 8 B (one u64) to the most one allreduce takes.
pub const ALLREDUCE_SIZES: SizeRange = SizeRange {
    ceiling: (
        steadfast::comm::ALLREDUCE_MAX * 8,
        "the most values one allreduce takes",
    ),
    ..SizeRange::new(8, 4 << 20)
};

/// Runs `op` for `iters` timed operations per repetition (the first repetition after
/// `warmup` untimed ones, at most `iters`); returns each repetition's seconds per
/// operation. `op` returns false when this rank takes no part.
pub(crate) fn timed(
    c: &Common,
    iters: usize,
    warmup: usize,
    mut op: impl FnMut() -> bool,
) -> Vec<f64> {
    let mut samples = Vec::with_capacity(c.repetitions);
    for rep in 0..c.repetitions {
        let warm = if rep == 0 { warmup.min(iters) } else { 0 };
        let mut t = Instant::now();
        for i in 0..warm + iters {
            if i == warm {
                t = Instant::now();
            }
            if !op() {
                break;
            }
        }
        samples.push(t.elapsed().as_secs_f64() / iters.max(1) as f64);
    }
    samples
}

pub(crate) fn describe(world: &World, report: &mut Report, c: &Common) {
    report.fact("ranks", world.size());
    report.fact(
        "route 0->1",
        world
            .route(1)
            .map_or_else(|| "-".to_string(), |r| format!("{r:?}")),
    );
    report.fact("provider", world.provider().unwrap_or("-"));
    report.fact(
        "repetitions",
        format!("{} (after {} warm-up operations)", c.repetitions, c.warmup),
    );
}

pub(crate) fn need_two(world: &World) {
    if world.size() < 2 {
        fail("needs at least 2 ranks");
    }
}

/// A buffer of the largest size (at least one byte), or this rank's error line.
pub(crate) fn max_buffer(c: &Common, fill: u8, rank: u32) -> Vec<u8> {
    let max = c.range.1;
    buffer(max.max(1), fill, format_args!("messages of --max {max}"))
        .unwrap_or_else(|e| crate::fail_at(rank, e))
}

/// One-way latency (half the round trip) between ranks 0 and 1.
pub fn latency(world: &World, c: &Common) {
    need_two(world);
    let comm = world.comm();
    let me = comm.rank();
    let mut report = Report::new("latency", "Latency", "us", c.json);
    describe(world, &mut report, c);
    let mut buf = max_buffer(c, 0, me);
    if me == 0 {
        report.start();
    }
    for size in sizes(c.range.0, c.range.1) {
        let iters = iterations_for(size, c.iterations);
        let mut samples: Vec<f64> = timed(c, iters, c.warmup, || {
            // format_args!: the error's words cost nothing until they are printed.
            match me {
                0 => {
                    comm.send(1, 1, &buf[..size])
                        .or_fail(me, format_args!("latency at {size} B: send to rank 1"));
                    comm.recv(Some(1), Some(1), &mut buf[..size])
                        .or_fail(me, format_args!("latency at {size} B: receive from rank 1"));
                }
                1 => {
                    comm.recv(Some(0), Some(1), &mut buf[..size])
                        .or_fail(me, format_args!("latency at {size} B: receive from rank 0"));
                    comm.send(0, 1, &buf[..size])
                        .or_fail(me, format_args!("latency at {size} B: send to rank 0"));
                }
                _ => return false,
            }
            true
        })
        .into_iter()
        // One-way: half the round trip, in µs.
        .map(|secs| secs * 1e6 / 2.0)
        .collect();
        if me == 0 {
            report.row(size, Stats::of(&mut samples));
        }
    }
    comm.barrier().or_fail(me, "final barrier");
    if me == 0 {
        report.finish();
    }
}

/// Sends a window of [`WINDOW`] messages of `data` to `to` (receiving as many from
/// `recv_from` meanwhile, for `bibw`) and waits for the sends.
pub(crate) fn window(comm: &Comm, to: u32, data: &[u8], recv_from: Option<u32>, buf: &mut [u8]) {
    let me = comm.rank();
    let size = data.len();
    let sends: Vec<_> = (0..WINDOW)
        .map(|_| {
            // SAFETY: every request is waited for below before `data`'s borrow ends (an
            // error ends the process, whose memory no transport can then touch; a panic
            // drops, hence cancels, them first).
            unsafe { comm.isend(to, 2, data) }
                .or_fail(me, format_args!("isend of {size} B to rank {to}"))
        })
        .collect();
    if let Some(from) = recv_from {
        for _ in 0..WINDOW {
            comm.recv(Some(from), Some(2), buf)
                .or_fail(me, format_args!("receive of {size} B from rank {from}"));
        }
    }
    for s in sends {
        s.wait()
            .or_fail(me, format_args!("send of {size} B to rank {to}"));
    }
}

/// Receives a window of [`WINDOW`] messages from `from` in order, then acknowledges
/// it with one byte.
pub(crate) fn drain_window(comm: &Comm, from: u32, buf: &mut [u8]) {
    let me = comm.rank();
    let size = buf.len();
    for _ in 0..WINDOW {
        comm.recv(Some(from), Some(2), buf)
            .or_fail(me, format_args!("receive of {size} B from rank {from}"));
    }
    comm.send(from, 3, &[0u8])
        .or_fail(me, format_args!("acknowledgement to rank {from}"));
}

/// The slowest rank's `secs` (every rank's answer the same): the time that bounds an
/// exchange all ranks run at once. A rank that does not count passes 0. `what` names
/// the measurement in the error line.
pub(crate) fn slowest_secs(comm: &Comm, secs: f64, what: impl std::fmt::Display) -> f64 {
    // The bits of non-negative floats order as the floats do.
    let mut slowest = [secs.to_bits()];
    comm.allreduce(&mut slowest, ReduceOp::Max)
        .or_fail(comm.rank(), what);
    f64::from_bits(slowest[0])
}

/// Waits for the receiver's acknowledgement of a window.
pub(crate) fn await_ack(comm: &Comm, from: u32) {
    let mut ack = [0u8; 1];
    comm.recv(Some(from), Some(3), &mut ack).or_fail(
        comm.rank(),
        format_args!("acknowledgement from rank {from}"),
    );
}

/// Bandwidth from 0 to 1 (`bi`: both ways at once), in MB/s.
pub fn bandwidth(world: &World, c: &Common, bi: bool) {
    need_two(world);
    let comm = world.comm();
    let me = comm.rank();
    let name = if bi { "bibw" } else { "bw" };
    let mut report = Report::new(name, "Bandwidth", "MB/s", c.json);
    describe(world, &mut report, c);
    report.fact("window", WINDOW);
    let data = max_buffer(c, 0x5a, me);
    let mut buf = max_buffer(c, 0, me);
    let mut step = |size: usize| -> bool {
        match me {
            0 => {
                window(&comm, 1, &data[..size], bi.then_some(1), &mut buf[..size]);
                await_ack(&comm, 1);
            }
            1 if bi => {
                window(&comm, 0, &data[..size], Some(0), &mut buf[..size]);
                comm.send(0, 3, &[0u8])
                    .or_fail(me, "acknowledgement to rank 0");
            }
            1 => drain_window(&comm, 0, &mut buf[..size]),
            _ => return false,
        }
        true
    };
    warm_start(&mut report, c.range.0, |size| {
        step(size);
    });
    if me == 0 {
        report.start();
    }
    for size in sizes(c.range.0, c.range.1) {
        let iters = iterations_for(size, (c.iterations / WINDOW).max(10));
        let bytes = (size * WINDOW) as f64 * if bi { 2.0 } else { 1.0 };
        let mut samples: Vec<f64> = timed(c, iters, 2, || step(size))
            .into_iter()
            .map(|secs| bytes / secs / 1e6)
            .collect();
        if me == 0 {
            report.row(size, Stats::of(&mut samples));
        }
    }
    comm.barrier().or_fail(me, "final barrier");
    if me == 0 {
        report.finish();
    }
}

/// Sum of `size / 8` u64 values over every rank, in µs per operation.
pub fn allreduce(world: &World, c: &Common) {
    let comm = world.comm();
    let me = comm.rank();
    let mut report = Report::new("allreduce", "Latency", "us", c.json);
    report.fact("ranks", world.size());
    report.fact("operation", "sum of u64, recursive doubling");
    if me == 0 {
        report.start();
    }
    for size in sizes(c.range.0, c.range.1) {
        let n = size / 8;
        let mut values = vec![1u64; n];
        let iters = iterations_for(size, c.iterations);
        let mut samples: Vec<f64> = timed(c, iters, c.warmup, || {
            values.iter_mut().for_each(|v| *v = 1);
            comm.allreduce(&mut values, ReduceOp::Sum)
                .or_fail(me, format_args!("allreduce of {size} B"));
            true
        })
        .into_iter()
        .map(|secs| secs * 1e6)
        .collect();
        if let Some(v) = values.iter().find(|&&v| v != u64::from(comm.size())) {
            fail_wrong_sum(me, size, *v, comm.size());
        }
        if me == 0 {
            report.row(size, Stats::of(&mut samples));
        }
    }
    if me == 0 {
        report.finish();
    }
}

fn fail_wrong_sum(me: u32, size: usize, got: u64, ranks: u32) -> ! {
    crate::fail_at(
        me,
        format_args!("allreduce of {size} B summed to {got}, expected {ranks}"),
    )
}
