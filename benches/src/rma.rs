//! One-sided benchmarks: `put` and `get` from rank 0 into rank 1's window.

use steadfast::World;

use crate::args::SizeRange;
use crate::p2p::{describe, max_buffer, need_two, timed};
use crate::report::{iterations_for, sizes, Report, Stats};
use crate::{Common, OrFail};

/// The sizes `put` and `get` measure: 0 B to 4 MiB by default.
pub const SIZES: SizeRange = SizeRange::new(0, 4 << 20);

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
        .window_allocate(c.range.1.max(1))
        .or_fail(me, "creating the window");
    let mut buf = max_buffer(c, 0x3c, me);
    if me == 0 {
        report.start();
    }
    for size in sizes(c.range.0, c.range.1) {
        let iters = iterations_for(size, c.iterations);
        let mut samples: Vec<f64> = timed(c, iters, c.warmup, || {
            if me != 0 {
                return false;
            }
            match op {
                OneSided::Put => win.put(1, 0, &buf[..size]),
                OneSided::Get => win.get(1, 0, &mut buf[..size]),
            }
            .or_fail(me, format_args!("{name} of {size} B into rank 1"));
            true
        })
        .into_iter()
        .map(|secs| secs * 1e6)
        .collect();
        win.fence()
            .or_fail(me, format_args!("fence after {size} B"));
        if me == 0 {
            report.row(size, Stats::of(&mut samples));
        }
    }
    win.free().or_fail(me, "freeing the window");
    if me == 0 {
        report.finish();
    }
}
