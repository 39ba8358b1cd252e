//! The MPI Forum fault-tolerance group's "Master-Leader-Workers" scenario, recovering
//! by restart in place (`docs/restart.md`). Run under `steadfast-run --no-kill`:
//!
//! ```text
//! steadfast-run -n 7 --no-kill target/release/examples/master_leader_workers \
//!     [--groups G] [--size L] [--queries N] [--pace-ms P] [--fail-restart-of R] [--kill-restart-of R]
//! ```
//!
//! World rank 0 is the master; ranks 1.. form G groups of L (default 2 groups of 3:
//! 7 ranks), the first rank of each group its leader, the others its workers. The
//! group is a `split` of the world, saved with `Comm::save("grp")`. The master streams
//! N queries (a deterministic sequence; query i goes to group i mod G, one in flight
//! per group, P ms between rounds), each leader splits each query's range among its
//! workers over the group communicator, adds their parts up and answers; the master
//! checks every answer against `answer(query)` computed on its own (a 64-bit hash sum:
//! a chunk lost or counted twice changes it).
//!
//! Recovery: a leader restarts a dead worker (`Comm::restart_rank`), tells the live
//! workers to readmit it with it (`Comm::readmit`) and sends the restarted one its part
//! again; the master restarts a dead leader and sends it the query in flight again; the
//! restarted leader rejoins the group (`World::rejoin`; the workers readmit it when their
//! receive from it fails) and restarts the workers that are gone. A leader that cannot
//! restart a worker aborts its group (`Comm::abort`); the master restarts the leader,
//! whose `rejoin` re-founds the group (no member survived: `docs/restart.md`) and which
//! then restarts its workers. The leaders restart a dead master (each that notices asks;
//! one process starts); the new master asks every leader for the answers it gave
//! (each leader keeps its incarnation's), checks them, and sends the queries nobody
//! answered. A restart whose new process is killed before it joins is asked again.
//!
//! Fault injection for the tests: `--fail-restart-of R` makes the first restarted
//! incarnation of world rank R exit with status 3 before it joins (its restart fails:
//! the leader aborts its group); `--kill-restart-of R` makes it SIGKILL itself before it
//! joins (its restarter asks again).
//!
//! Output (the master's): `MLW SEGMENTS <prefix>` (its shared-memory segments' names),
//! `MLW STOPPING answers=N` once every answer is in (then 100 ms before the leaders are
//! told to stop, so an outside fault injector watching for the line stops first), and
//! `MLW OK answers=N restarts=R`, or `MLW FAIL query I: ...`. Each process prints
//! `MLW STARTING rank R generation G pid P` first thing (before `World::init`), then
//! `MLW PID rank R generation G pid P` once it has joined, and a first incarnation
//! prints `MLW READY rank R` once its communicators are made and saved (a kill before
//! that ends the run: the survivors' `split` fails; the test kills only after every
//! rank is ready).

use std::time::Duration;
use steadfast::{Comm, CommError, World};

/// Master -> leader: `[index, query]`; index `STOP` ends the run.
const QUERY: u32 = 1;
/// Leader -> master: `[index, answer]`; index `LOST` reports a group that cannot be rebuilt.
const ANSWER: u32 = 2;
/// Leader -> restarted master: `[n, index_1, answer_1, ..., index_n, answer_n]`, the
/// answers this leader's incarnation gave (asked by a `QUERY` of index `STATE`).
const HELD: u32 = 5;
/// Leader -> worker: `[kind, index, query, lo, hi]`.
const WORK: u32 = 3;
/// Worker -> leader: `[index, lo, part]`, or `[BYE, 0, 0]` after a stop.
const PART: u32 = 4;
const STOP: u64 = u64::MAX;
const LOST: u64 = u64::MAX - 1;
/// A `QUERY` index: a restarted master asks for the leader's answers.
const STATE: u64 = u64::MAX - 2;
const BYE: u64 = u64::MAX;
/// `WORK` kinds.
const KIND_WORK: u64 = 0;
const KIND_READMIT: u64 = 1;
const KIND_STOP: u64 = 2;
/// Items of a query's range (split among the workers).
const ITEMS: u64 = 4096;
/// Exit status of a leader that aborts its group.
const ABORT_CODE: i32 = 42;

fn mix(mut x: u64) -> u64 {
    // splitmix64's finalizer.
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The `i`-th query of the stream.
fn query(i: u64) -> u64 {
    mix(i ^ 0x5eed)
}

/// A worker's part: the sum over items `lo..hi` of the query.
fn part(q: u64, lo: u64, hi: u64) -> u64 {
    (lo..hi).fold(0u64, |s, j| {
        s.wrapping_add(mix(q ^ j.wrapping_mul(0x2545_f491)))
    })
}

/// The right answer to a query, as the master checks it.
fn answer(q: u64) -> u64 {
    part(q, 0, ITEMS)
}

fn words(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

fn bytes(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

struct Layout {
    groups: u32,
    size: u32,
    queries: u64,
    pace: Duration,
    /// A world rank whose first restarted incarnation exits at once (`--fail-restart-of`).
    fail_restart_of: Option<u32>,
    /// A world rank whose first restarted incarnation kills itself (`--kill-restart-of`).
    kill_restart_of: Option<u32>,
}

impl Layout {
    fn from_args() -> Result<Layout, String> {
        let mut l = Layout {
            groups: 2,
            size: 3,
            queries: 200,
            pace: Duration::ZERO,
            fail_restart_of: None,
            kill_restart_of: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let mut value = |name: &str| -> Result<u64, String> {
                args.next()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("{name} needs a number"))
            };
            match a.as_str() {
                "--groups" => l.groups = value("--groups")? as u32,
                "--size" => l.size = value("--size")? as u32,
                "--queries" => l.queries = value("--queries")?,
                "--pace-ms" => l.pace = Duration::from_millis(value("--pace-ms")?),
                "--fail-restart-of" => l.fail_restart_of = Some(value("--fail-restart-of")? as u32),
                "--kill-restart-of" => l.kill_restart_of = Some(value("--kill-restart-of")? as u32),
                // Anything else (a test's marker) is ignored.
                _ => {}
            }
        }
        if l.groups == 0 || l.size == 0 || l.queries == 0 {
            return Err("groups, size and queries must be at least 1".into());
        }
        Ok(l)
    }

    /// The world rank of group `g`'s leader.
    fn leader(&self, g: u32) -> u32 {
        1 + g * self.size
    }
}

fn main() {
    let layout = Layout::from_args().unwrap_or_else(|e| {
        eprintln!("master_leader_workers: {e}");
        std::process::exit(2)
    });
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u32>().ok());
    let (rank, generation) = (
        env("STEADFAST_RANK"),
        env("STEADFAST_GENERATION").unwrap_or(0),
    );
    if let Some(r) = rank {
        println!(
            "MLW STARTING rank {r} generation {generation} pid {}",
            std::process::id()
        );
    }
    if generation == 1 && rank.is_some() {
        if rank == layout.fail_restart_of {
            // The restart of this rank fails (its restarter sees it exit before joining).
            std::process::exit(3);
        }
        if rank == layout.kill_restart_of {
            // SAFETY: a signal to this process itself; it ends here.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        }
    }
    let world = World::init().unwrap_or_else(|e| {
        eprintln!("master_leader_workers: init: {e}");
        std::process::exit(2)
    });
    let me = world.rank();
    if world.size() != 1 + layout.groups * layout.size {
        eprintln!(
            "master_leader_workers: {} groups of {} need {} ranks, not {}",
            layout.groups,
            layout.size,
            1 + layout.groups * layout.size,
            world.size()
        );
        std::process::exit(2);
    }
    println!(
        "MLW PID rank {me} generation {} pid {}",
        world.generation(),
        std::process::id()
    );
    if me == 0 {
        master::run(&world, &layout);
    } else {
        group::run(&world, &layout);
    }
    world.finalize();
}

/// Restarts `rank` of `comm`: retries `irestart_rank` while the rank still looks alive
/// here (the launcher may learn of the death after this process did), and asks again
/// (up to 5 new processes) when the new process was killed before it joined (a restart
/// that exits by itself is not asked again: it would fail the same way). Until this
/// process learns of that death from the launcher, it asks for the incarnation it
/// knows, and the launcher answers with the same death again: such repeats are not
/// new kills, and are asked again for up to 30 s (counted as kills, five 1 ms tries
/// used up the budget on a loaded host before the news came, and the job failed).
fn restart(world: &World, comm: &Comm, rank: u32) -> Result<u32, CommError> {
    let start = std::time::Instant::now();
    let mut kills: Vec<String> = Vec::new();
    loop {
        let outcome = comm.irestart_rank(rank).and_then(|request| request.wait());
        match outcome {
            Err(CommError::Restart(m))
                if m.contains("is alive") && start.elapsed() < Duration::from_secs(30) =>
            {
                world.progress_for(Duration::from_millis(1));
            }
            Err(CommError::Restart(m))
                if m.contains("killed by signal")
                    && m.contains("before it joined")
                    && kills.len() < 5
                    && start.elapsed() < Duration::from_secs(30) =>
            {
                if !kills.contains(&m) {
                    log::warn!("restart of rank {rank}: {m}; asking again");
                    kills.push(m);
                }
                world.progress_for(Duration::from_millis(1));
            }
            other => return other,
        }
    }
}

#[path = "master_leader_workers/master.rs"]
mod master;

#[path = "master_leader_workers/group.rs"]
mod group;
