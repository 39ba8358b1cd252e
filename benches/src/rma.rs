//! One-sided benchmarks: `put` and `get` from rank 0 into rank 1's window.

use steadfast::World;

use crate::p2p::{describe, need_two, timed};
use crate::report::{iterations_for, sizes, Report, Stats};
use crate::Common;

/// Which one-sided operation to time.
#[derive(Clone, Copy, Debug)]
pub enum OneSided {
    /// Rank 0 writes rank 1's window.
    Put,
    /// Rank 0 reads rank 1's window.
    Get,
}

/// Latency of one `put` or `get` of each size from rank 0 to rank 1's window, in µs.
/// Each operation is complete when it returns (a put is in the target's memory, a get
/// in the caller's buffer), so this is OSU's put/get latency with its flush included.
pub fn latency(world: &World, c: &Common, op: OneSided) {
    need_two(world);
    let comm = world.comm();
    let me = comm.rank();
    let name = match op {
        OneSided::Put => "put",
        OneSided::Get => "get",
    };
    let mut report = Report::new(name, "Latency", "us", c.json);
    describe(world, &mut report, c);
    report.fact(
        "completion",
        "each operation returns complete (put: in the target's memory)",
    );
    let win = comm
        .window_allocate(c.max.max(1))
        .unwrap_or_else(|e| crate::fail(&e.to_string()));
    let mut buf = vec![0x3cu8; c.max.max(1)];
    if me == 0 {
        report.start();
    }
    for size in sizes(c.min, c.max) {
        let iters = iterations_for(size, c.iterations);
        let mut samples: Vec<f64> = timed(c, iters, c.warmup, || {
            if me != 0 {
                return false;
            }
            match op {
                OneSided::Put => win.put(1, 0, &buf[..size]),
                OneSided::Get => win.get(1, 0, &mut buf[..size]),
            }
            .unwrap_or_else(|e| {
                crate::fail(&format!(
                    "{name} of {size} B: {e}; failures: {:?}",
                    world.failures()
                ))
            });
            true
        })
        .into_iter()
        .map(|secs| secs * 1e6)
        .collect();
        win.fence().unwrap_or_else(|e| {
            crate::fail(&format!(
                "fence after {size} B: {e}; failures: {:?}",
                world.failures()
            ))
        });
        if me == 0 {
            report.row(size, Stats::of(&mut samples));
        }
    }
    win.free().unwrap();
    if me == 0 {
        report.finish();
    }
}
