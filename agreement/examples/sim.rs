//! Runs one simulated agreement scenario at any size and prints its critical path,
//! message counts, simulated time and host time.
//!
//! ```text
//! cargo run --release -p steadfast-agreement --example sim -- --ranks 1048576 --failures 10 --seed 7
//! ```

use std::time::Instant;
use steadfast_agreement::sim::{check, nonuniform_deciders, run, Scenario};
use steadfast_agreement::tree::TreeShape;

fn usage() -> ! {
    eprintln!(
        "usage: sim [--ranks N] [--failures K] [--seed S] [--agreements A] [--rebuilt] \
         [--jitter-ns J] [--random]\n  \
         --random: the property-sweep scenario for the seed (ranks = maximum size)"
    );
    std::process::exit(2)
}

fn main() {
    let (mut ranks, mut failures, mut seed, mut agreements) = (1024u32, 0u32, 1u64, 1u32);
    let (mut rebuilt, mut random, mut jitter) = (false, false, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or_else(|| usage())
        };
        match a.as_str() {
            "--ranks" => ranks = value() as u32,
            "--failures" => failures = value() as u32,
            "--seed" => seed = value(),
            "--agreements" => agreements = value() as u32,
            "--jitter-ns" => jitter = Some(value()),
            "--rebuilt" => rebuilt = true,
            "--random" => random = true,
            _ => usage(),
        }
    }
    if ranks < 1 {
        usage();
    }
    let mut scenario = if random {
        Scenario::random(seed, ranks)
    } else {
        let mut s = Scenario::failure_free(ranks, seed).with_spread_crashes(failures);
        s.agreements = agreements;
        s
    };
    if rebuilt {
        scenario.shape = TreeShape::Rebuilt;
    }
    if let Some(j) = jitter {
        scenario.net.jitter_ns = j;
    }
    let started = Instant::now();
    let result = run(&scenario);
    let host = started.elapsed();
    let n = scenario.ranks as f64;
    let ideal = 2 * (n.log2().ceil() as u32);
    println!("ranks                 {}", scenario.ranks);
    println!("crashes               {}", scenario.crashes.len());
    println!("agreements            {}", scenario.agreements);
    println!(
        "rounds (1st, hops)    {}   ideal 2*ceil(log2 n) = {ideal}",
        result.rounds()
    );
    println!("messages              {}", result.messages);
    println!(
        "messages per process  {:.2} mean, {} max",
        result.messages as f64 / n,
        result.max_sent_per_process()
    );
    println!("bytes                 {}", result.bytes);
    println!("events                {}", result.events);
    println!(
        "simulated time        {:.1} us",
        result.sim_time_ns as f64 / 1e3
    );
    println!("host time             {:.2} s", host.as_secs_f64());
    println!("non-uniform deciders  {}", nonuniform_deciders(&result));
    match check(&result) {
        Ok(()) => println!("checks                agreement, validity, termination, code: ok"),
        Err(v) => {
            println!("checks                FAILED: {v}");
            std::process::exit(1);
        }
    }
}
