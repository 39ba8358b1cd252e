//! The runtime's control plane in whole scenarios (agreements, a revoke, a shrink, more
//! agreements on the survivors' communicator) with random crashes, over many seeds.
//!
//! `STEADFAST_SIM_SEEDS=N` runs N scenarios instead of 10000; `STEADFAST_SIM_SEED=S`
//! replays one.

use steadfast_agreement::sim::control::{check_control, run_control, ControlScenario};

fn seeds() -> std::ops::Range<u64> {
    steadfast_agreement::sim::sweep_seeds(10_000)
}

#[test]
fn runtime_scenarios_keep_every_property() {
    let (mut runs, mut crashes, mut messages) = (0u64, 0usize, 0u64);
    for seed in seeds() {
        let scenario = ControlScenario::random(seed);
        let run = run_control(&scenario);
        if let Err(v) = check_control(&scenario, &run) {
            panic!("{v}\nscenario: {scenario:#?}\nrun: {run:#?}");
        }
        runs += 1;
        crashes += scenario.crashes.len();
        messages += run.messages;
    }
    println!("{runs} runtime scenarios, {crashes} crashes, {messages} control messages");
}
