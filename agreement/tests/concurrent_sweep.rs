//! Concurrent operations (non-blocking agreements on the world and overlapping
//! sub-communicators at once, a revoke of one communicator while agreements are in
//! flight) over control planes, with random crashes, over many seeds.
//!
//! `STEADFAST_SIM_SEEDS=N` runs N scenarios instead of 10000; `STEADFAST_SIM_SEED=S`
//! replays one.

use steadfast_agreement::sim::concurrent::{check_concurrent, run_concurrent, ConcurrentScenario};

fn seeds() -> std::ops::Range<u64> {
    steadfast_agreement::sim::sweep_seeds(10_000)
}

#[test]
fn concurrent_operations_keep_every_property_per_communicator() {
    let (mut runs, mut crashes, mut messages) = (0u64, 0usize, 0u64);
    let (mut agreements, mut with_failed, mut revokes, mut deepest) = (0u64, 0u64, 0u64, 0usize);
    for seed in seeds() {
        let scenario = ConcurrentScenario::random(seed);
        let run = run_concurrent(&scenario);
        if let Err(v) = check_concurrent(&scenario, &run) {
            panic!("{v}\nscenario: {scenario:#?}\nrun: {run:#?}");
        }
        runs += 1;
        crashes += scenario.crashes.len();
        messages += run.messages;
        revokes += scenario.revoke.is_some() as u64;
        deepest = deepest.max(run.max_in_flight);
        if let Some(r) = (0..scenario.ranks as usize).find(|&r| !run.crashed[r]) {
            agreements += run.decisions[r].len() as u64;
            with_failed += run.decisions[r]
                .values()
                .filter(|d| !d.1.is_empty())
                .count() as u64;
        }
    }
    println!(
        "{runs} scenarios, {crashes} crashes, {revokes} revokes, {agreements} agreements \
         (seen by one survivor each; {with_failed} with failed ranks), up to {deepest} \
         in flight at one process, {messages} control messages"
    );
    if runs >= 1000 {
        assert!(with_failed > 0 && revokes > 0 && deepest >= 6);
    }
}
