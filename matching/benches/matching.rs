//! Matching costs: an exact-match post then arrival, an arrival then post (unexpected
//! path), and an arrival that must pick among many posted wildcard receives. On a shared,
//! loaded machine the numbers are only indicative.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use std::hint::black_box;
use steadfast_matching::{
    Arrival, ContextId, Engine, Envelope, Limits, PostOutcome, Rank, RecvSpec, Tag,
};

const CTX: ContextId = ContextId(7);

fn engine(size: u32) -> Engine<u64, u64> {
    let mut e = Engine::new(Limits::default());
    e.open_context(CTX, size).unwrap();
    e
}

fn msg(source: u32, tag: u32) -> Envelope<u64> {
    Envelope {
        context: CTX,
        source: Rank(source),
        tag: Tag(tag),
        len: 8,
        payload: 0,
    }
}

fn post_then_arrive(c: &mut Criterion) {
    let mut e = engine(64);
    let spec = RecvSpec::new(Some(Rank(3)), Some(Tag(42)));
    c.bench_function("post+match (exact)", |b| {
        b.iter(|| {
            let posted = e.post_recv(CTX, spec, 1).unwrap();
            debug_assert!(matches!(posted, PostOutcome::Posted { .. }));
            let hit = e.deliver(black_box(msg(3, 42))).unwrap();
            debug_assert!(matches!(hit, Arrival::Matched(_)));
            black_box(hit);
        })
    });
}

fn arrive_then_post(c: &mut Criterion) {
    let mut e = engine(64);
    let spec = RecvSpec::new(Some(Rank(3)), Some(Tag(42)));
    c.bench_function("unexpected+match (exact)", |b| {
        b.iter(|| {
            e.deliver(black_box(msg(3, 42))).unwrap();
            black_box(e.post_recv(CTX, spec, 1).unwrap());
        })
    });
}

fn many_wildcards(c: &mut Criterion) {
    for posted in [16u32, 1024] {
        c.bench_function(&format!("match among {posted} posted wildcards"), |b| {
            b.iter_batched_ref(
                || {
                    let mut e = engine(64);
                    for i in 0..posted {
                        // Mixed shapes; the arrival picks the earliest that fits.
                        let spec = match i % 3 {
                            0 => RecvSpec::new(None, Some(Tag(i))),
                            1 => RecvSpec::new(Some(Rank(i % 64)), None),
                            _ => RecvSpec::new(Some(Rank((i + 1) % 64)), Some(Tag(i))),
                        };
                        e.post_recv(CTX, spec, u64::from(i)).unwrap();
                    }
                    e.post_recv(CTX, RecvSpec::new(None, None), 0).unwrap();
                    e
                },
                |e| black_box(e.deliver(msg(63, 999)).unwrap()),
                BatchSize::SmallInput,
            )
        });
    }
}

criterion_group!(benches, post_then_arrive, arrive_then_post, many_wildcards);
criterion_main!(benches);
