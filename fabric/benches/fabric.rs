#![allow(missing_docs)] // criterion_group! generates undocumented functions
//! Single-process hot paths of the fabric layer: registration cache hit against miss,
//! a tagged round trip between two endpoints of one process, and a completion-queue
//! poll through libfabric's static-inline shim against the direct ops-table call.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use steadfast_fabric::{
    AddressVector, CompletionQueue, CqEntry, Domain, Endpoint, Fabric, FabricConfig, Info,
    Messenger, MessengerConfig, RegistrationCache,
};

fn config(provider: &str) -> FabricConfig {
    steadfast_fabric::apply_quirk_environment();
    let c = FabricConfig::new(provider);
    if provider == "shm" {
        c
    } else {
        c.domain("lo")
    }
}

fn registration_cache(c: &mut Criterion) {
    let info = Info::query(&config("shm")).unwrap();
    let fabric = Fabric::open(&info).unwrap();
    let domain = Domain::open(&fabric, &info).unwrap();
    let cq = CompletionQueue::open(&domain, 0).unwrap();
    let av = AddressVector::open(&domain, 4).unwrap();
    let ep = Endpoint::open(&domain, &info, &cq, &av).unwrap();
    let a = vec![1u8; 1 << 20];
    let b = vec![2u8; 1 << 20];
    let mut group = c.benchmark_group("registration_cache");
    let mut cache = RegistrationCache::new(16);
    group.bench_function("hit_1MiB", |bench| {
        bench.iter(|| {
            // SAFETY: `a` outlives the cache entry, released at once.
            let slot = unsafe {
                cache.acquire(&domain, &ep, info.mr_mode(), a.as_ptr() as usize, a.len())
            }
            .unwrap();
            cache.release(black_box(slot));
        })
    });
    // Capacity 1 and two alternating buffers: every lookup registers (and evicts).
    let mut small = RegistrationCache::new(1);
    let mut flip = false;
    group.bench_function("miss_1MiB", |bench| {
        bench.iter(|| {
            flip = !flip;
            let buf = if flip { &a } else { &b };
            // SAFETY: both buffers outlive the cache.
            let slot = unsafe {
                small.acquire(
                    &domain,
                    &ep,
                    info.mr_mode(),
                    buf.as_ptr() as usize,
                    buf.len(),
                )
            }
            .unwrap();
            small.release(black_box(slot));
        })
    });
    group.finish();
}

fn round_trip(c: &mut Criterion) {
    let mut group = c.benchmark_group("tagged_round_trip_one_process");
    for provider in ["shm", "tcp"] {
        let mut a = Messenger::open(MessengerConfig::new(config(provider), 0)).unwrap();
        let mut b = Messenger::open(MessengerConfig::new(config(provider), 1)).unwrap();
        a.add_peer(1, &b.address().to_bytes()).unwrap();
        b.add_peer(0, &a.address().to_bytes()).unwrap();
        let data = [7u8; 8];
        let mut back = [0u8; 8];
        group.bench_function(format!("{provider}_8B"), |bench| {
            bench.iter(|| {
                // SAFETY: `back` outlives the request, waited for in this iteration.
                let r = unsafe { b.irecv(Some(0), 1, 0, &mut back) }.unwrap();
                a.send(1, 1, &data).unwrap();
                b.wait(r).unwrap();
            })
        });
    }
    group.finish();
}

fn cq_poll(c: &mut Criterion) {
    let info = Info::query(&config("shm")).unwrap();
    let fabric = Fabric::open(&info).unwrap();
    let domain = Domain::open(&fabric, &info).unwrap();
    let cq = CompletionQueue::open(&domain, 0).unwrap();
    let av = AddressVector::open(&domain, 4).unwrap();
    let _ep = Endpoint::open(&domain, &info, &cq, &av).unwrap();
    let mut entries = [CqEntry::default(); 16];
    let mut group = c.benchmark_group("empty_cq_poll");
    group.bench_function("ops_table", |bench| {
        bench.iter(|| black_box(cq.poll(&mut entries).unwrap()))
    });
    group.bench_function("static_inline_shim", |bench| {
        bench.iter(|| black_box(cq.poll_via_shim(&mut entries).unwrap()))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = registration_cache, round_trip, cq_poll
}
criterion_main!(benches);
