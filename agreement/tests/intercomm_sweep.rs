//! Uniform inter-communicator creation (the runtime's state machine over control
//! planes) with crashes at random times and at every stage, over many seeds.
//!
//! `STEADFAST_SIM_SEEDS=N` runs N scenarios instead of 10000; `STEADFAST_SIM_SEED=S`
//! replays one.

use steadfast_agreement::sim::intercomm::{
    check_intercomm, run_intercomm, IntercommScenario, STAGES,
};

fn seeds() -> std::ops::Range<u64> {
    steadfast_agreement::sim::sweep_seeds(10_000)
}

#[test]
fn intercomm_creation_is_uniform_under_crashes() {
    let (mut runs, mut crashes, mut messages) = (0u64, 0usize, 0u64);
    let (mut succeeded, mut failed, mut leaders_crashed) = (0u64, 0u64, 0u64);
    let mut at_stage = [0u64; STAGES.len()];
    for seed in seeds() {
        let scenario = IntercommScenario::random(seed);
        let run = run_intercomm(&scenario);
        if let Err(v) = check_intercomm(&scenario, &run) {
            panic!("{v}\nscenario: {scenario:#?}\nrun: {run:#?}");
        }
        runs += 1;
        crashes += scenario.crashes.len() + scenario.stage_crashes.len();
        messages += run.messages;
        match run.outcomes.iter().zip(&run.crashed).find(|(_, c)| !**c) {
            Some((Some(Some(_)), _)) => succeeded += 1,
            Some(_) => failed += 1,
            None => {}
        }
        for (side, &leader) in scenario.leaders.iter().enumerate() {
            leaders_crashed += run.crashed[scenario.sides[side][leader as usize] as usize] as u64;
        }
        for &(w, stage) in &scenario.stage_crashes {
            if run.stages[w as usize].contains(&stage) {
                at_stage[STAGES.iter().position(|&s| s == stage).expect("a stage")] += 1;
            }
        }
    }
    println!(
        "{runs} creations, {crashes} crashes ({leaders_crashed} leaders; at each stage: \
         {at_stage:?}), {succeeded} succeeded, {failed} failed, {messages} messages"
    );
    if runs >= 1000 {
        // The sweep reaches what it is for: both outcomes, and crashes at every stage.
        assert!(succeeded > 0 && failed > 0 && leaders_crashed > 0);
        assert!(at_stage.iter().all(|&k| k > 0), "{at_stage:?}");
    }
}
