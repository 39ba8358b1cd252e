//! Message rate: OSU's `osu_mbw_mr` shape. The ranks form pairs, rank i (the first
//! half) sending to rank i + n/2 (the second half); each sender posts a window of
//! [`WINDOW`] non-blocking sends and waits for them, each receiver takes the window
//! in order and answers with a one-byte acknowledgement. Every pair runs at once,
//! between barriers; the rate is all pairs' messages over the slowest sender's time.

use std::time::Instant;

use steadfast::World;

use crate::args::SizeRange;
use crate::p2p::{
    await_ack, describe, drain_window, max_buffer, slowest_secs, warm_start, window, WINDOW,
};
use crate::report::{iterations_for, sizes, Report, Stats};
use crate::{fail, Common, OrFail};

/// The sizes `mbw_mr` measures: 8 B to 1 MiB by default (from 1 B on request).
pub const SIZES: SizeRange = SizeRange {
    floor: 1,
    ..SizeRange::new(8, 1 << 20)
};

/// Windows per repetition at `size`: `--iterations` counts messages per sender, as in
/// `bw` (10 000: 156 windows, at least 10), fewer from 64 KiB and 1 MiB on.
fn windows_for(size: usize, iterations: usize) -> usize {
    iterations_for(size, (iterations / WINDOW).max(10))
}

/// Messages per second and MB/s of every pair together, at each size.
pub fn mbw_mr(world: &World, c: &Common) {
    let n = world.size();
    if n < 2 || n % 2 != 0 {
        fail(&format!(
            "mbw_mr needs an even number of ranks (pairs), not {n}"
        ));
    }
    let comm = world.comm();
    let me = comm.rank();
    let pairs = n / 2;
    let peer = if me < pairs { me + pairs } else { me - pairs };
    let mut report =
        Report::new("mbw_mr", "Bandwidth", "MB/s", c.json).second_column("Messages/s", "1/s");
    describe(world, &mut report, c);
    report.fact(
        "pairs",
        format!("{pairs} (rank i sends to rank i + {pairs})"),
    );
    if pairs > 1 {
        report.fact(
            &format!("route 0->{pairs}"),
            world
                .route(pairs)
                .map_or_else(|| "-".to_string(), |r| format!("{r:?}")),
        );
    }
    report.fact("window", WINDOW);
    let data = max_buffer(c, 0x5a, me);
    let mut buf = max_buffer(c, 0, me);
    let mut step = |size: usize| {
        if me < pairs {
            window(&comm, peer, &data[..size], None, &mut buf[..size]);
            await_ack(&comm, peer);
        } else {
            drain_window(&comm, peer, &mut buf[..size]);
        }
    };
    warm_start(&mut report, c.range.0, &mut step);
    if me == 0 {
        report.start();
    }
    for size in sizes(c.range.0, c.range.1) {
        let windows = windows_for(size, c.iterations);
        // `--warmup` counts messages too, at most one repetition's worth.
        let warmup = (c.warmup / WINDOW).min(windows);
        let mut samples = Vec::with_capacity(c.repetitions);
        for rep in 0..c.repetitions {
            let warm = if rep == 0 { warmup } else { 0 };
            for _ in 0..warm {
                step(size);
            }
            comm.barrier()
                .or_fail(me, format_args!("barrier before {size} B"));
            let t = Instant::now();
            for _ in 0..windows {
                step(size);
            }
            let secs = t.elapsed().as_secs_f64();
            // The slowest sender's time bounds the whole exchange.
            let slowest = slowest_secs(
                &comm,
                if me < pairs { secs } else { 0.0 },
                format_args!("gathering the times of {size} B"),
            );
            let messages = (pairs as usize * windows * WINDOW) as f64;
            samples.push(messages * size as f64 / slowest / 1e6);
        }
        if me == 0 {
            let stats = Stats::of(&mut samples);
            report.row_with(size, stats, stats.median * 1e6 / size as f64);
        }
    }
    comm.barrier().or_fail(me, "final barrier");
    if me == 0 {
        report.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_count_messages_and_shrink_for_large_messages() {
        assert_eq!(windows_for(8, 10_000), 156);
        assert_eq!(windows_for(8, 50), 10);
        assert_eq!(windows_for(64 << 10, 10_000), 20);
        assert_eq!(windows_for(1 << 20, 10_000), 10);
    }
}
