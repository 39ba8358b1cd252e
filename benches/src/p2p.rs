//! Point-to-point and collective benchmarks: latency, bandwidth, allreduce.

use std::time::Instant;

use steadfast::comm::ReduceOp;
use steadfast::{Comm, World};

use crate::report::{iterations_for, sizes, Report, Stats};
use crate::{fail, Common};

/// Messages in flight in `bw` and `bibw`.
const WINDOW: usize = 64;

/// Runs `op` for `iters` timed operations per repetition (the first repetition after
/// `warmup` untimed ones); returns each repetition's seconds per operation. `op`
/// returns false when this rank takes no part.
pub(crate) fn timed(
    c: &Common,
    iters: usize,
    warmup: usize,
    mut op: impl FnMut() -> bool,
) -> Vec<f64> {
    let mut samples = Vec::with_capacity(c.repetitions);
    for rep in 0..c.repetitions.max(1) {
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
        format!("{:?}", world.route(1).expect("two ranks")),
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

/// One-way latency (half the round trip) between ranks 0 and 1.
pub fn latency(world: &World, c: &Common) {
    need_two(world);
    let comm = world.comm();
    let me = comm.rank();
    let mut report = Report::new("latency", "Latency", "us", c.json);
    describe(world, &mut report, c);
    if me == 0 {
        report.start();
    }
    let mut buf = vec![0u8; c.max.max(1)];
    for size in sizes(c.min, c.max) {
        let iters = iterations_for(size, c.iterations);
        let mut samples: Vec<f64> = timed(c, iters, c.warmup, || {
            match me {
                0 => {
                    comm.send(1, 1, &buf[..size]).unwrap();
                    comm.recv(Some(1), Some(1), &mut buf[..size]).unwrap();
                }
                1 => {
                    comm.recv(Some(0), Some(1), &mut buf[..size]).unwrap();
                    comm.send(0, 1, &buf[..size]).unwrap();
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
    comm.barrier().unwrap();
    if me == 0 {
        report.finish();
    }
}

fn window(comm: &Comm, to: u32, data: &[u8], recv_from: Option<u32>, buf: &mut [u8]) {
    let sends: Vec<_> = (0..WINDOW)
        // SAFETY: every request is waited for below before `data`'s borrow ends (a
        // panic drops, hence cancels, them first).
        .map(|_| unsafe { comm.isend(to, 2, data) }.unwrap())
        .collect();
    if let Some(from) = recv_from {
        for _ in 0..WINDOW {
            comm.recv(Some(from), Some(2), buf).unwrap();
        }
    }
    for s in sends {
        s.wait().unwrap();
    }
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
    if me == 0 {
        report.start();
    }
    let data = vec![0x5au8; c.max.max(1)];
    let mut buf = vec![0u8; c.max.max(1)];
    let mut ack = [0u8; 1];
    for size in sizes(c.min.max(1), c.max) {
        let iters = iterations_for(size, (c.iterations / WINDOW).max(10));
        let bytes = (size * WINDOW) as f64 * if bi { 2.0 } else { 1.0 };
        let mut samples: Vec<f64> = timed(c, iters, 2, || {
            match me {
                0 => {
                    window(&comm, 1, &data[..size], bi.then_some(1), &mut buf[..size]);
                    comm.recv(Some(1), Some(3), &mut ack).unwrap();
                }
                1 if bi => {
                    window(&comm, 0, &data[..size], Some(0), &mut buf[..size]);
                    comm.send(0, 3, &ack).unwrap();
                }
                1 => {
                    for _ in 0..WINDOW {
                        comm.recv(Some(0), Some(2), &mut buf[..size]).unwrap();
                    }
                    comm.send(0, 3, &ack).unwrap();
                }
                _ => return false,
            }
            true
        })
        .into_iter()
        .map(|secs| bytes / secs / 1e6)
        .collect();
        if me == 0 {
            report.row(size, Stats::of(&mut samples));
        }
    }
    comm.barrier().unwrap();
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
    let max = c.max.min(steadfast::comm::ALLREDUCE_MAX * 8);
    for size in sizes(c.min.max(8), max) {
        let n = size / 8;
        let mut values = vec![1u64; n];
        let iters = iterations_for(size, c.iterations);
        let mut samples: Vec<f64> = timed(c, iters, c.warmup, || {
            values.iter_mut().for_each(|v| *v = 1);
            comm.allreduce(&mut values, ReduceOp::Sum).unwrap();
            true
        })
        .into_iter()
        .map(|secs| secs * 1e6)
        .collect();
        assert!(values.iter().all(|&v| v == comm.size() as u64), "wrong sum");
        if me == 0 {
            report.row(size, Stats::of(&mut samples));
        }
    }
    if me == 0 {
        report.finish();
    }
}
