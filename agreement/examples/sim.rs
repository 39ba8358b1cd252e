//! Runs one simulated agreement scenario at any size and prints its critical path,
//! message counts, simulated time and host time.
//!
//! ```text
//! cargo run --release -p steadfast-agreement --example sim -- --ranks 1048576 --failures 10 --seed 7
//! ```

use std::collections::VecDeque;
use std::time::Instant;
use steadfast_agreement::bcast::{BcastAction, Broadcaster, Topic};
use steadfast_agreement::sim::{check, nonuniform_deciders, run, Scenario, SimRng};
use steadfast_agreement::tree::TreeShape;
use steadfast_agreement::Rank;

/// Floods one revoke over `n` ranks of which `dead` random ones (never the origin) are
/// dead and known dead; prints hops, messages and whether every live rank got it.
fn revoke(n: u32, dead: u32, seed: u64) {
    let started = Instant::now();
    let mut rng = SimRng::new(seed);
    let mut gone = std::collections::BTreeSet::new();
    while (gone.len() as u32) < dead.min(n - 1) {
        let r = 1 + rng.below(n as u64 - 1) as u32;
        gone.insert(r);
    }
    let mut procs: Vec<Broadcaster> = (0..n).map(|r| Broadcaster::new(Rank(r), n)).collect();
    let mut out = Vec::new();
    for p in procs.iter_mut() {
        for &d in &gone {
            p.on_failure(Rank(d), &mut out);
        }
    }
    out.clear();
    let (mut hops, mut messages, mut got) = (0u32, 0u64, 0u64);
    let mut queue = VecDeque::new();
    procs[0].originate(Topic::Revoke, &mut out);
    got += 1;
    for a in out.drain(..) {
        if let BcastAction::Send { to, topic } = a {
            queue.push_back((0u32, to.0, topic, 1u32));
        }
    }
    while let Some((from, to, topic, h)) = queue.pop_front() {
        messages += 1;
        if gone.contains(&to) {
            continue;
        }
        procs[to as usize].on_message(Rank(from), topic, &mut out);
        for a in out.drain(..) {
            match a {
                BcastAction::Send { to: t, topic } => queue.push_back((to, t.0, topic, h + 1)),
                BcastAction::Deliver(_) => {
                    got += 1;
                    hops = hops.max(h);
                }
            }
        }
    }
    let ideal = (n as f64).log2().ceil() as u32;
    println!("ranks                 {n}");
    println!("dead                  {}", gone.len());
    println!("revoke hops           {hops}   ceil(log2 n) = {ideal}");
    println!(
        "messages              {messages} ({:.2} per process)",
        messages as f64 / n as f64
    );
    println!(
        "revoked               {got} of {} live",
        n as usize - gone.len()
    );
    println!(
        "host time             {:.2} s",
        started.elapsed().as_secs_f64()
    );
}

fn usage() -> ! {
    eprintln!(
        "usage: sim [--ranks N] [--failures K] [--seed S] [--agreements A] [--rebuilt] \
         [--jitter-ns J] [--random] [--revoke]\n  \
         --random: the property-sweep scenario for the seed (ranks = maximum size)\n  \
         --revoke: flood one revoke over the binomial graph with --failures dead ranks"
    );
    std::process::exit(2)
}

fn main() {
    let (mut ranks, mut failures, mut seed, mut agreements) = (1024u32, 0u32, 1u64, 1u32);
    let (mut rebuilt, mut random, mut jitter, mut revoke_only) = (false, false, None, false);
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
            "--revoke" => revoke_only = true,
            _ => usage(),
        }
    }
    if ranks < 1 {
        usage();
    }
    if revoke_only {
        revoke(ranks, failures, seed);
        return;
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
