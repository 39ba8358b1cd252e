//! A rank program for the restart tests (not a user tool); see `tests/restart.rs`.
//!
//! - `restart VICTIM TIMES ASKERS`: the first ASKERS ranks other than VICTIM are the
//!   askers; once the others say they are ready, the first of them (the *leader*) tells
//!   VICTIM to SIGKILL itself, and every asker restarts VICTIM as soon as it may
//!   (`irestart_rank`, retried while the rank still looks alive: the launcher sees
//!   concurrent requests); the leader then sends the new incarnation a message whose
//!   content depends on its generation, which it checks and returns reversed; the
//!   leader checks it and prints `ANSWERED generation G in <µs>` (from the kill order to
//!   the answer). The first TIMES - 1 incarnations are killed again the same way. Each
//!   incarnation killed first sends the leader two messages with the answer's tag that
//!   the leader never receives: the answer it gets must be the new incarnation's. Rank 0
//!   prints `SEGMENTS <prefix>`, the names of the job's shared-memory segments.
//! - `exits VICTIM`: the restarted incarnation exits with status 3 before `World::init`;
//!   the leader prints `RESTART ERROR: <error>`.
//! - `group TIMES` (n ranks): world ranks 1 to n - 1 split into a group and save it;
//!   the last one is killed TIMES times, restarted by group rank 0 and readmitted by
//!   the survivors while its new incarnation rejoins the saved group; each time they
//!   exchange messages both ways and agree (`AGREED generation G value V`); after the
//!   last, the restarted rank revokes the group (the others' blocked receives end
//!   `Revoked`) and all shrink it and agree (`SHRUNK`). World rank 0 stays outside.
//! - `pair` (4 ranks): ranks 2 and 3 killed at once, restarted at once by ranks 0 and
//!   1; the new incarnations talk to each other, then answer rank 0 (`restart_pair.rs`).
//! - `world TIMES VICTIMS ROTATE`: the world communicator itself saved; its last
//!   VICTIMS ranks (or, with ROTATE = 1, one rank, another each round) killed together
//!   and restarted, TIMES rounds, readmitted by the survivors and rejoined; agreement
//!   and shrink over the world on every rank, then finalize (`restart_world.rs`).
//! - `abort` (4 ranks): world ranks 2 and 3 form a group; its rank 0 aborts it with
//!   code 7; ranks 0 and 1 see both fail, shrink the world and agree (`SURVIVED`).
//!
//! Every incarnation prints `LIBFABRIC mapped` or `LIBFABRIC not mapped` after its
//! init (from `/proc/self/maps`): libfabric is loaded only when a route needs it.

use std::time::Instant;
use steadfast::{Comm, CommError, World};

#[path = "restart_group.rs"]
mod group;
#[path = "restart_pair.rs"]
mod pair;
mod segments;
#[path = "restart_world.rs"]
mod world;

const KILL: u32 = 1;
const PING: u32 = 7;
const PONG: u32 = 8;
const DONE: u32 = 10;
const READY: u32 = 11;

fn arg(args: &[String], i: usize) -> u32 {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("argument {i} missing or not a number: {args:?}"))
}

fn pattern(generation: u32) -> Vec<u8> {
    (0..3000u32)
        .map(|i| (i.wrapping_mul(31) ^ generation.wrapping_mul(7919)) as u8)
        .collect()
}

/// Sends the leader messages it never receives from this incarnation (an inline and
/// an eager one, with the tag of the answer it will wait for from the next one), then
/// dies: fencing must drop them.
fn die_leaving_stale_messages(comm: &Comm, leader: u32) -> ! {
    comm.send(leader, PONG, b"stale").unwrap();
    comm.send(leader, PONG, &[0xee; 3000]).unwrap();
    die()
}

/// Whether libfabric is mapped into this process (`/proc/self/maps`).
fn libfabric_mapped() -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .expect("read /proc/self/maps")
        .lines()
        .any(|l| l.contains("/libfabric."))
}

fn die() -> ! {
    // SAFETY: raising a signal at ourselves.
    unsafe { libc::raise(libc::SIGKILL) };
    unreachable!("SIGKILL returned")
}

/// Asks for a restart of `victim` until it is failed (or replaced) here, then waits.
fn restart(world: &World, comm: &Comm, victim: u32) -> Result<u32, CommError> {
    let start = Instant::now();
    loop {
        match comm.irestart_rank(victim) {
            Ok(request) => return request.wait(),
            Err(CommError::Restart(m)) if m.contains("is alive") => {
                assert!(start.elapsed().as_secs() < 60, "rank {victim} never failed");
                world.progress_for(std::time::Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    }
}

/// With `TESTRANK_LOG=debug` (or another level), the library's log goes to
/// stderr, tagged with this process's id (for debugging a test).
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        eprintln!(
            "pid {} {}: {}",
            std::process::id(),
            record.level(),
            record.args()
        );
    }
    fn flush(&self) {}
}

fn main() {
    if let Some(level) = std::env::var("TESTRANK_LOG")
        .ok()
        .and_then(|l| l.parse::<log::LevelFilter>().ok())
    {
        if log::set_logger(&StderrLog).is_ok() {
            log::set_max_level(level);
        }
    }
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).cloned().unwrap_or_default();
    let generation: u32 = std::env::var("STEADFAST_GENERATION")
        .ok()
        .and_then(|g| g.parse().ok())
        .unwrap_or(0);
    if mode == "exits" && generation > 0 {
        std::process::exit(3);
    }
    let world = World::init().unwrap_or_else(|e| panic!("init: {e}"));
    let mapped = if libfabric_mapped() { "" } else { "not " };
    println!("LIBFABRIC {mapped}mapped");
    if mode == "group" || mode == "abort" {
        if world.rank() == 0 {
            print_segments();
        }
        if mode == "group" {
            group::run(&world, arg(&args, 2));
        } else {
            group::abort(&world);
        }
        world.finalize();
        return;
    }
    if mode == "world" {
        if world.rank() == 0 && !world.is_restored() {
            print_segments();
        }
        let plan = world::Plan::new(world.size(), arg(&args, 3), arg(&args, 4) == 1);
        world::run(&world, arg(&args, 2), plan);
        world.finalize();
        return;
    }
    let comm = world.comm();
    if mode == "pair" {
        pair::run(&world, &comm);
        world.finalize();
        return;
    }
    let (me, size) = (comm.rank(), comm.size());
    let victim = arg(&args, 2);
    let leader = (0..size).find(|&r| r != victim).expect("two ranks or more");
    assert_eq!(world.generation(), generation);
    if world.is_restored() {
        restored(&world, &comm, &args, leader);
        return;
    }
    if me == 0 {
        print_segments();
    }
    if me == victim {
        let mut buf = [0u8; 1];
        comm.recv(Some(leader), Some(KILL), &mut buf).unwrap();
        die_leaving_stale_messages(&comm, leader);
    }
    let (times, askers) = match mode.as_str() {
        "restart" => (arg(&args, 3), arg(&args, 4)),
        _ => (1, 1),
    };
    let index = (0..size).filter(|&r| r != victim).position(|r| r == me);
    if index.is_some_and(|i| (i as u32) < askers) {
        ask(&world, &comm, &mode, victim, leader, times, askers);
    }
    world.finalize();
}

/// Prints the prefix of the job's shared-memory segment names.
fn print_segments() {
    let prefix = segments::segment_prefix().expect("STEADFAST_JOB_ID, a hex job id");
    println!("SEGMENTS {prefix}");
}

/// The other askers (not the leader).
fn others(comm: &Comm, victim: u32, leader: u32, askers: u32) -> Vec<u32> {
    (0..comm.size())
        .filter(|&r| r != victim && r != leader)
        .take(askers.saturating_sub(1) as usize)
        .collect()
}

/// An asker: restarts `victim` `times` times; the leader also talks to it and kills it,
/// each time once every other asker is ready.
fn ask(world: &World, comm: &Comm, mode: &str, victim: u32, leader: u32, times: u32, askers: u32) {
    let me = comm.rank();
    let mut killed_at = Instant::now();
    for g in 1..=times {
        let mut ready = [0u8; 4];
        if me == leader {
            for r in others(comm, victim, leader, askers) {
                comm.recv(Some(r), Some(READY), &mut ready).unwrap();
            }
            killed_at = Instant::now();
            comm.send(victim, KILL, b"k").unwrap();
        } else {
            comm.send(leader, READY, &g.to_le_bytes()).unwrap();
        }
        let asked = Instant::now();
        let outcome = restart(world, comm, victim);
        if mode == "exits" {
            match outcome {
                Err(e) if me == leader => println!("RESTART ERROR: {e}"),
                other => panic!("restart of a program that exits: {other:?}"),
            }
            return;
        }
        let got = outcome.unwrap_or_else(|e| panic!("rank {me}: restart {g}: {e}"));
        assert_eq!(got, g, "rank {me}");
        let restart_us = asked.elapsed().as_micros();
        if me != leader {
            println!("RESTARTED generation {g} by rank {me}");
            continue;
        }
        comm.send(victim, PING, &pattern(g)).unwrap();
        let mut back = vec![0u8; 3000];
        let st = comm.recv(Some(victim), Some(PONG), &mut back).unwrap();
        let mut want = pattern(g);
        want.reverse();
        assert_eq!((st.len, &back), (3000, &want), "generation {g}'s answer");
        println!(
            "ANSWERED generation {g} in {} us (restart call {restart_us} us)",
            killed_at.elapsed().as_micros()
        );
    }
    if me == leader {
        comm.send(victim, DONE, b"d").unwrap();
    }
}

/// A restarted incarnation: answers the leader, then dies again or waits for the end.
fn restored(world: &World, comm: &Comm, args: &[String], leader: u32) {
    let g = world.generation();
    let times = arg(args, 3);
    let mut buf = vec![0u8; 3000];
    let st = comm.recv(Some(leader), Some(PING), &mut buf).unwrap();
    assert_eq!(
        (st.len, &buf),
        (3000, &pattern(g)),
        "generation {g}'s message"
    );
    buf.reverse();
    comm.send(leader, PONG, &buf).unwrap();
    if g < times {
        let mut k = [0u8; 1];
        comm.recv(Some(leader), Some(KILL), &mut k).unwrap();
        die_leaving_stale_messages(comm, leader);
    }
    let mut done = [0u8; 1];
    comm.recv(Some(leader), Some(DONE), &mut done).unwrap();
    // Never rejoined the world (it was not saved): restored, not rejoined.
    assert_eq!(comm.agree(1), Err(CommError::RestoredWorld));
    println!("RESTORED rank {} generation {g} done", comm.rank());
}
