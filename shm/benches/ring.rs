//! Criterion benches of the ring: push then pop of one cell in one thread (the CPU cost
//! of both ends), a 64-byte message copied in and out, and an 8-byte message in a slot
//! of a packed cell against one in a cell of its own.
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use steadfast_shm::message::{Header, FIN_OK};
use steadfast_shm::ring::{Cell, Consumer, Producer, RingHeader};

fn push_pop(c: &mut Criterion) {
    let header = RingHeader::new();
    let cells: Vec<Cell> = (0..64).map(|_| Cell::new()).collect();
    let mut p = Producer::new(&header, &cells);
    let mut q = Consumer::new(&header, &cells);
    let mut g = c.benchmark_group("ring");
    g.throughput(Throughput::Elements(1));
    g.bench_function("push_pop_one_word", |b| {
        b.iter(|| {
            assert!(p.try_push(|cell| cell.set(0, black_box(7))));
            black_box(q.try_pop(|cell| cell.get(0)).unwrap())
        })
    });
    let msg = [0x5au8; 64];
    let mut out = [0u8; 64];
    g.bench_function("push_pop_64_bytes", |b| {
        b.iter(|| {
            assert!(p.try_push(|cell| cell.write_bytes(1, black_box(&msg))));
            q.try_pop(|cell| cell.read_bytes(1, &mut out)).unwrap();
            black_box(&out);
        })
    });
    // A full cell's payload (30 words) copied in and out: the eager path's per-cell
    // copy on both ends.
    let full = [0xa5u8; 240];
    let mut full_out = [0u8; 240];
    g.throughput(Throughput::Bytes(240));
    g.bench_function("push_pop_240_bytes", |b| {
        b.iter(|| {
            assert!(p.try_push(|cell| cell.write_bytes(1, black_box(&full))));
            q.try_pop(|cell| cell.read_bytes(1, &mut full_out)).unwrap();
            black_box(&full_out);
        })
    });
    // An odd length: the last word partly filled.
    let odd = [0x3cu8; 237];
    let mut odd_out = [0u8; 237];
    g.bench_function("push_pop_237_bytes", |b| {
        b.iter(|| {
            assert!(p.try_push(|cell| cell.write_bytes(1, black_box(&odd))));
            q.try_pop(|cell| cell.read_bytes(1, &mut odd_out)).unwrap();
            black_box(&odd_out);
        })
    });
    g.throughput(Throughput::Elements(1));
    // An 8-byte message as the endpoint sends it: in a slot of a packed cell (eight
    // to a cell), against a cell of its own.
    let small = [0x77u8; 8];
    let mut small_out = [0u8; 8];
    let inline = Header::Inline { tag: 5, len: 8 };
    g.bench_function("push_pop_8_bytes_packed", |b| {
        b.iter(|| {
            assert!(p.try_push_small(|cell, base| inline.write_at(cell, base, black_box(&small))));
            q.try_pop_slot(|cell, base| cell.read_bytes(base + 2, &mut small_out))
                .unwrap();
            black_box(&small_out);
        })
    });
    g.bench_function("push_pop_8_bytes_own_cell", |b| {
        b.iter(|| {
            assert!(p.try_push(|cell| inline.write(cell, black_box(&small))));
            q.try_pop_slot(|cell, base| cell.read_bytes(base + 2, &mut small_out))
                .unwrap();
            black_box(&small_out);
        })
    });
    // Descriptor round trip: an RTS pushed and decoded one way, its FIN the other way
    // (the protocol's CPU cost per large message, without the copy).
    let back_header = RingHeader::new();
    let back_cells: Vec<Cell> = (0..64).map(|_| Cell::new()).collect();
    let mut bp = Producer::new(&back_header, &back_cells);
    let mut bq = Consumer::new(&back_header, &back_cells);
    g.bench_function("descriptor_round_trip", |b| {
        let mut token = 0u64;
        b.iter(|| {
            token += 1;
            let rts = Header::Rts {
                tag: 5,
                addr: 0x7f00_0000_0000,
                len: 1 << 20,
                token,
                split: 1,
            };
            assert!(p.try_push(|cell| rts.write(cell, &[])));
            let got = q.try_pop(Header::read).unwrap().flatten();
            let Some(Header::Rts { token: t, .. }) = got else {
                panic!("not an RTS")
            };
            let fin = Header::Fin {
                token: t,
                status: FIN_OK,
                read_ns: 0,
            };
            assert!(bp.try_push(|cell| fin.write(cell, &[])));
            black_box(bq.try_pop(Header::read).unwrap())
        })
    });
    g.finish();
}

criterion_group!(benches, push_pop);
criterion_main!(benches);
