//! Seeded random failure scenarios through the simulator, every property checked on each.
//!
//! `STEADFAST_SIM_SEEDS=N` runs N scenarios instead of the default (the long sweep);
//! `STEADFAST_SIM_SEED=S` replays one.

use steadfast_agreement::sim::{nonuniform_deciders, run_checked, Scenario};

fn seeds() -> std::ops::Range<u64> {
    steadfast_agreement::sim::sweep_seeds(10_000)
}

#[test]
fn random_failure_scenarios_keep_every_property() {
    let (mut runs, mut crashes, mut nonuniform, mut messages) = (0u64, 0usize, 0usize, 0u64);
    for seed in seeds() {
        let scenario = Scenario::random(seed, 64);
        match run_checked(&scenario) {
            Ok(run) => {
                runs += 1;
                crashes += scenario.crashes.len();
                nonuniform += nonuniform_deciders(&run);
                messages += run.messages;
            }
            Err(v) => panic!("{v}\nscenario: {scenario:#?}"),
        }
    }
    println!(
        "{runs} scenarios, {crashes} crashes, {messages} messages, \
         {nonuniform} crashed processes decided otherwise than the survivors"
    );
}

#[test]
fn detector_and_revoke_scenarios_keep_every_property() {
    use steadfast_agreement::sim::{check_ft, run_ft, FtScenario};
    let (mut crashes, mut false_alarms) = (0usize, 0usize);
    for seed in seeds() {
        let scenario = FtScenario::random(seed, 64);
        let run = run_ft(&scenario);
        if let Err(v) = check_ft(&run) {
            panic!("{v}\nscenario: {scenario:#?}");
        }
        crashes += scenario.crashes.len();
        false_alarms += run.excluded.iter().filter(|e| **e).count();
    }
    println!("{crashes} silent crashes found; {false_alarms} processes excluded beyond the margin");
}
