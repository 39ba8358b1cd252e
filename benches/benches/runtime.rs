//! Criterion benches of the runtime's own per-poll costs, in one process (a world of one
//! rank): one progress round with nothing to do (what every poll of an agreement's wait
//! pays, `Comm::agree_full`), and a whole agreement on one rank (start, decision, the
//! round that collects it). The multi-process figures are `steadfast-bench agree` and
//! `examples/agree_vs_allreduce.rs`; these catch a regression of the part that does not
//! depend on the other processes.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use steadfast::bootstrap::{Bootstrap, BootstrapError, FailureEvent};
use steadfast::params::Params;
use steadfast::World;

/// A job of one rank whose store is a map.
#[derive(Default)]
struct JobOfOne {
    published: HashMap<String, Vec<u8>>,
}

impl Bootstrap for JobOfOne {
    fn rank(&self) -> u32 {
        0
    }

    fn size(&self) -> u32 {
        1
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), BootstrapError> {
        self.published.insert(key.to_string(), value.to_vec());
        Ok(())
    }

    fn get(&mut self, _rank: u32, key: &str) -> Result<Vec<u8>, BootstrapError> {
        self.published
            .get(key)
            .cloned()
            .ok_or_else(|| BootstrapError::Refused(key.to_string()))
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        Ok(())
    }

    fn failures(&mut self, _wait: Duration) -> Result<Vec<FailureEvent>, BootstrapError> {
        Ok(Vec::new())
    }
}

fn runtime(c: &mut Criterion) {
    let params = Params::builder().build().expect("default parameters");
    let world = World::init_with(Box::new(JobOfOne::default()), params).expect("a world of one");
    let comm = world.comm();
    let mut g = c.benchmark_group("runtime");
    g.bench_function("idle_progress_round", |b| b.iter(|| world.progress()));
    g.bench_function("agree_one_rank", |b| {
        b.iter(|| black_box(comm.agree(black_box(1)).expect("one rank agrees")))
    });
    g.finish();
    drop(comm);
    world.finalize();
}

criterion_group!(benches, runtime);
criterion_main!(benches);
