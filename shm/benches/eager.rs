//! Criterion bench of the eager hand-off between two threads (two cores when free): a
//! stream of 4 KiB messages (17 cells) through a 64-cell ring, the producer publishing
//! each cell as it is filled (the consumer catching up inside a message polls the lines
//! being written) against publishing a message's cells together
//! (`Producer::try_push_cells`: the consumer finds it whole), and taking room for the
//! whole message first, then publishing it 16 cells at a time
//! (`Producer::try_push_reserved`, what the endpoint does: the consumer follows batch by
//! batch); the last also with 16 KiB messages (65 cells). Both ends wait as the
//! endpoint's waits do (spin, then yield), so on a loaded machine this measures the
//! scheduler as much as the hand-off: compare the two on free cores.
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::{Duration, Instant};
use steadfast_os::SpinWait;
use steadfast_shm::message::{eager_continuations, Header, EAGER_CONT, EAGER_FIRST};
use steadfast_shm::ring::{Cell, Consumer, Producer, RingHeader};

/// How the producer publishes a message's cells.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    CellByCell,
    Together,
    Reserved,
}

fn fill(data: &[u8], i: usize, cell: &Cell) {
    if i == 0 {
        Header::Eager {
            tag: 1,
            len: data.len(),
        }
        .write(cell, &data[..EAGER_FIRST]);
    } else {
        let from = EAGER_FIRST + (i - 1) * EAGER_CONT;
        cell.write_bytes(0, &data[from..data.len().min(from + EAGER_CONT)]);
    }
}

/// Streams `messages` messages; returns the producer's elapsed time once the consumer
/// has read the last byte.
fn stream(messages: u64, mode: Mode, len: usize) -> Duration {
    let header = RingHeader::new();
    let cells: Vec<Cell> = (0..128).map(|_| Cell::new()).collect();
    let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
    let n = 1 + eager_continuations(len);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut c = Consumer::new(&header, &cells);
            let mut out = vec![0u8; len];
            for _ in 0..messages {
                for i in 0..n {
                    let (from, first) = if i == 0 {
                        (0, 2)
                    } else {
                        (EAGER_FIRST + (i - 1) * EAGER_CONT, 0)
                    };
                    let to = len.min(if i == 0 {
                        EAGER_FIRST
                    } else {
                        from + EAGER_CONT
                    });
                    let mut spin = SpinWait::default();
                    while c
                        .try_pop(|cell| cell.read_bytes(first, &mut out[from..to]))
                        .expect("a well-formed ring")
                        .is_none()
                    {
                        spin.pause();
                    }
                }
                assert_eq!(out[len - 1], (len - 1) as u8);
            }
        });
        let start = Instant::now();
        let mut p = Producer::new(&header, &cells);
        for _ in 0..messages {
            if mode == Mode::Together {
                let mut spin = SpinWait::default();
                while p.try_push_cells(n, n, |i, cell| fill(&data, i, cell)) == 0 {
                    spin.pause();
                }
            } else if mode == Mode::Reserved {
                let mut spin = SpinWait::default();
                while !p.try_push_reserved(n, 16, |i, cell| fill(&data, i, cell)) {
                    spin.pause();
                }
            } else {
                for i in 0..n {
                    let mut spin = SpinWait::default();
                    while !p.try_push(|cell| fill(&data, i, cell)) {
                        spin.pause();
                    }
                }
            }
        }
        // The scope joins the consumer: the time includes its last read.
        start
    })
    .elapsed()
}

fn eager(c: &mut Criterion) {
    let mut g = c.benchmark_group("eager_4k_stream");
    g.throughput(Throughput::Bytes(4096));
    for (name, mode) in [
        ("cell_by_cell", Mode::CellByCell),
        ("published_together", Mode::Together),
        ("reserved_in_batches", Mode::Reserved),
    ] {
        g.bench_function(name, |b| b.iter_custom(|it| stream(it, mode, 4096)));
    }
    g.finish();
    let mut g = c.benchmark_group("eager_16k_stream");
    g.throughput(Throughput::Bytes(16384));
    g.bench_function("reserved_in_batches", |b| {
        b.iter_custom(|it| stream(it, Mode::Reserved, 16384))
    });
    g.finish();
}

criterion_group!(benches, eager);
criterion_main!(benches);
