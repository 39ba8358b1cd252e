//! Fault-tolerance benchmarks: the phases of ICLDisco's ulfm-testing. The ones that
//! kill a rank kill the last one (SIGKILL on itself, after sending every survivor a
//! time stamp), so the launcher reports one failed rank: that is the benchmark, not an
//! error.

use std::time::Instant;

use steadfast::comm::ReduceOp;
use steadfast::{Comm, CommError, World};

use crate::report::{Report, Stats};
use crate::{fail, Common, OrFail};

/// Nanoseconds since 1970 (0 for a clock set before it: the phases then read as 0).
fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Every rank's `v`, at every rank (an allreduce over one slot per rank).
fn all_values(comm: &Comm, v: u64) -> Vec<u64> {
    let mut slots = vec![0u64; comm.size() as usize];
    slots[comm.rank() as usize] = v;
    comm.allreduce(&mut slots, ReduceOp::Sum)
        .or_fail(comm.rank(), "gathering every rank's value");
    slots
}

/// µs per agreement over `iters`, for each repetition.
fn agreements(comm: &Comm, c: &Common) -> Vec<f64> {
    let me = comm.rank();
    for _ in 0..c.warmup {
        comm.agree(1).or_fail(me, "agreement (warm-up)");
    }
    (0..c.repetitions)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..c.iterations {
                comm.agree(1).or_fail(me, "agreement");
            }
            t.elapsed().as_secs_f64() * 1e6 / c.iterations as f64
        })
        .collect()
}

fn header(world: &World, name: &'static str, c: &Common) -> Report {
    if world.size() < 2 {
        fail("needs at least 2 ranks");
    }
    let mut report = Report::new(name, "Time", "us", c.json).first_column("Phase");
    report.fact("ranks", world.size());
    report.fact(
        "routes from rank 0",
        format!(
            "{:?}",
            (0..world.size())
                .filter_map(|r| world.route(r))
                .collect::<Vec<_>>()
        ),
    );
    if world.rank() == 0 {
        report.start();
    }
    report
}

/// The victim sends each survivor a time stamp and SIGKILLs itself; survivors get the
/// stamp (the kill happens right after).
fn kill_last(comm: &Comm) -> u64 {
    let (me, n) = (comm.rank(), comm.size());
    let victim = n - 1;
    comm.agree(1).or_fail(me, "agreement before the kill");
    if me == victim {
        let t = realtime_ns();
        for r in 0..victim {
            comm.send(r, 5, &t.to_le_bytes())
                .or_fail(me, format_args!("time stamp to rank {r}"));
        }
        // SAFETY: raising a signal at ourselves.
        unsafe { libc::raise(libc::SIGKILL) };
        unreachable!("SIGKILL returned");
    }
    let mut b = [0u8; 8];
    comm.recv(Some(victim), Some(5), &mut b)
        .or_fail(me, format_args!("time stamp from rank {victim}"));
    u64::from_le_bytes(b)
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Stats in µs over the survivors' values (gathered on `survivors`).
fn over(survivors: &Comm, ns: u64) -> Stats {
    let mut v: Vec<f64> = all_values(survivors, ns).into_iter().map(us).collect();
    Stats::of(&mut v)
}

/// Agreement: failure-free, first after a kill, stabilize, with the hole.
pub fn agree(world: World, c: &Common) {
    let comm = world.comm();
    let mut report = header(&world, "agree", c);
    let mut ff = agreements(&comm, c);
    let killed_at = kill_last(&comm);
    let first = loop {
        match comm.agree(1) {
            Ok(_) => {}
            Err(CommError::ProcFailed { .. }) => break realtime_ns().saturating_sub(killed_at),
            Err(e) => crate::fail_at(comm.rank(), format_args!("agreement after the kill: {e}")),
        }
    };
    let t = Instant::now();
    loop {
        comm.ack_failed();
        if comm.agree(1).is_ok() {
            break;
        }
    }
    let stabilize = t.elapsed().as_nanos() as u64;
    let mut after = agreements(&comm, c);
    let survivors = comm.shrink().or_fail(comm.rank(), "shrink");
    let first = over(&survivors, first);
    let stabilize = over(&survivors, stabilize);
    if survivors.rank() == 0 {
        report.row("failure_free", Stats::of(&mut ff));
        report.row("first_after_kill", first);
        report.row("stabilize", stabilize);
        report.row("after_failure", Stats::of(&mut after));
        report.finish();
    }
    drop((survivors, comm));
    world.finalize();
}

/// Revoke: every rank loops allreduces on a dup; rank 0 revokes; time until the last
/// rank is interrupted; agreement noise on another communicator before and after.
pub fn revoke(world: World, c: &Common) {
    let comm = world.comm();
    let me = comm.rank();
    let mut report = header(&world, "revoke", c);
    let other = comm.dup().or_fail(me, "dup");
    let mut before = agreements(&other, c);
    let mut interrupt = Vec::new();
    for _ in 0..c.repetitions {
        let dup = comm.dup().or_fail(me, "dup");
        other.agree(1).or_fail(me, "agreement before the revoke");
        let mut stamp = 0;
        let mut i = 0usize;
        loop {
            if me == 0 && i == c.iterations / 10 + 10 {
                stamp = realtime_ns();
                dup.revoke();
            }
            let mut v = [1u64];
            match dup.allreduce(&mut v, ReduceOp::Sum) {
                Ok(()) => i += 1,
                Err(CommError::Revoked) => break,
                Err(e) => crate::fail_at(me, format_args!("allreduce before the revoke: {e}")),
            }
        }
        let now = if me == 0 { stamp } else { realtime_ns() };
        let all = all_values(&other, now);
        let worst = all[1..]
            .iter()
            .map(|t| t.saturating_sub(all[0]))
            .max()
            .unwrap_or(0);
        interrupt.push(us(worst));
    }
    let mut after = agreements(&other, c);
    if me == 0 {
        report.row("noise_before", Stats::of(&mut before));
        report.row("interrupt_all", Stats::of(&mut interrupt));
        report.row("noise_after", Stats::of(&mut after));
        report.finish();
    }
    drop((other, comm));
    world.finalize();
}

/// Shrink: failure-free, then after the last rank dies (failure detection included).
pub fn shrink(world: World, c: &Common) {
    let comm = world.comm();
    let mut report = header(&world, "shrink", c);
    let me = comm.rank();
    let mut ff = Vec::new();
    for _ in 0..c.repetitions {
        comm.agree(1).or_fail(me, "agreement before a shrink");
        let t = Instant::now();
        let s = comm.shrink().or_fail(me, "failure-free shrink");
        ff.push(t.elapsed().as_secs_f64() * 1e6);
        drop(s);
    }
    let killed_at = kill_last(&comm);
    let small = comm.shrink().or_fail(me, "shrink after the kill");
    let after = realtime_ns().saturating_sub(killed_at);
    let after = over(&small, after);
    if small.rank() == 0 {
        report.row("failure_free", Stats::of(&mut ff));
        report.row("after_kill", after);
        report.finish();
    }
    drop((small, comm));
    world.finalize();
}

/// Detection: SIGKILL of the last rank to the first ProcFailed in a receive blocked on
/// it, at every survivor.
pub fn detect(world: World, c: &Common, detectors: &str) {
    let comm = world.comm();
    let mut report = header(&world, "detect", c);
    report.fact("detectors", detectors);
    let victim = comm.size() - 1;
    let killed_at = kill_last(&comm);
    let mut b = [0u8; 1];
    match comm.recv(Some(victim), Some(6), &mut b) {
        Err(CommError::ProcFailed { .. }) => {}
        other => crate::fail_at(
            comm.rank(),
            format_args!(
                "receive from the killed rank {victim}: expected ProcFailed, got {other:?}"
            ),
        ),
    }
    let detected = realtime_ns().saturating_sub(killed_at);
    comm.ack_failed();
    let small = comm.shrink().or_fail(comm.rank(), "shrink after the kill");
    let stats = over(&small, detected);
    if small.rank() == 0 {
        report.row(format!("detect_{detectors}"), stats);
        report.finish();
    }
    drop((small, comm));
    world.finalize();
}

/// Message tags of the restart benchmark.
const RESTART_KILL: u32 = 21;
const RESTART_PING: u32 = 22;
const RESTART_PONG: u32 = 23;
const RESTART_DONE: u32 = 24;

/// Restart: rank 0 orders the last rank to SIGKILL itself, restarts it in place
/// (`irestart_rank`), sends the new incarnation a message and times its answer: from
/// the kill order to the answer (detection, spawn, start of the program, bootstrap,
/// rejoin and one exchange), and the restart request alone. `--repetitions` rounds,
/// each incarnation but the last killed in turn. The other ranks take no part.
///
/// A restarted incarnation is this same program run again from `main`: `world` is then
/// restored, and it answers and waits for its own kill order or the end.
pub fn restart(world: World, c: &Common) {
    let comm = world.comm();
    let (me, n) = (comm.rank(), comm.size());
    if n < 2 {
        fail("needs at least 2 ranks");
    }
    let victim = n - 1;
    let rounds = c.repetitions as u32;
    if world.is_restored() {
        restarted_answers(&comm, world.generation(), rounds);
        // A restored world does not finalize with the others (docs/restart.md); the
        // drop releases it.
        drop(comm);
        drop(world);
        return;
    }
    let mut report = header(&world, "restart", c);
    if me == victim {
        let mut order = [0u8; 1];
        comm.recv(Some(0), Some(RESTART_KILL), &mut order)
            .or_fail(me, "kill order");
        die();
    }
    if me == 0 {
        let mut answer = Vec::new();
        let mut request = Vec::new();
        for g in 1..=rounds {
            let killed_at = Instant::now();
            comm.send(victim, RESTART_KILL, b"k")
                .or_fail(me, format_args!("kill order to incarnation {}", g - 1));
            let asked = Instant::now();
            let got = restart_when_failed(&world, &comm, victim)
                .or_fail(me, format_args!("restart {g} of rank {victim}"));
            if got != g {
                crate::fail_at(me, format_args!("restart {g} gave generation {got}"));
            }
            request.push(asked.elapsed().as_secs_f64() * 1e6);
            comm.send(victim, RESTART_PING, &g.to_le_bytes())
                .or_fail(me, format_args!("message to incarnation {g}"));
            let mut back = [0u8; 4];
            comm.recv(Some(victim), Some(RESTART_PONG), &mut back)
                .or_fail(me, format_args!("answer of incarnation {g}"));
            answer.push(killed_at.elapsed().as_secs_f64() * 1e6);
            if u32::from_le_bytes(back) != g {
                crate::fail_at(me, format_args!("incarnation {g} answered {back:?}"));
            }
        }
        comm.send(victim, RESTART_DONE, b"d")
            .or_fail(me, "end to the last incarnation");
        report.row("kill_to_answer", Stats::of(&mut answer));
        report.row("restart_request", Stats::of(&mut request));
        report.finish();
    }
    drop(comm);
    world.finalize();
}

/// A restarted incarnation `g`: answers rank 0's message, then dies at its order (all
/// but the last round) or waits for the end.
fn restarted_answers(comm: &Comm, g: u32, rounds: u32) {
    let me = comm.rank();
    let mut ping = [0u8; 4];
    comm.recv(Some(0), Some(RESTART_PING), &mut ping)
        .or_fail(me, format_args!("incarnation {g}: message from rank 0"));
    comm.send(0, RESTART_PONG, &ping)
        .or_fail(me, format_args!("incarnation {g}: answer"));
    let mut order = [0u8; 1];
    if g < rounds {
        comm.recv(Some(0), Some(RESTART_KILL), &mut order)
            .or_fail(me, format_args!("incarnation {g}: kill order"));
        die();
    }
    comm.recv(Some(0), Some(RESTART_DONE), &mut order)
        .or_fail(me, format_args!("incarnation {g}: end"));
}

/// `irestart_rank(victim)`, asked again while the victim still looks alive here (its
/// death is being detected), then waited for; gives the new generation.
fn restart_when_failed(world: &World, comm: &Comm, victim: u32) -> Result<u32, CommError> {
    let start = Instant::now();
    loop {
        match comm.irestart_rank(victim) {
            Ok(request) => return request.wait(),
            Err(CommError::Restart(m))
                if m.contains("is alive") && start.elapsed().as_secs() < 60 =>
            {
                world.progress_for(std::time::Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    }
}

fn die() -> ! {
    // SAFETY: raising a signal at ourselves.
    unsafe { libc::raise(libc::SIGKILL) };
    unreachable!("SIGKILL returned");
}
