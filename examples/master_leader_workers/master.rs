//! The master (world rank 0): streams the queries, checks the answers, restarts dead
//! leaders and sends them the query in flight again. A restarted master (the leaders
//! restart it) first asks every leader for the answers it gave, checks them, and then
//! sends only the queries nobody answered.

use std::collections::VecDeque;
use std::time::Duration;
use steadfast::{Comm, CommError, World};

use super::{answer, bytes, query, restart, words, Layout, ANSWER, HELD, LOST, QUERY, STATE, STOP};

/// One group as the master sees it.
struct Group {
    leader: u32,
    /// The query index in flight, if any.
    in_flight: Option<u64>,
    /// The query indices of this group (i mod G == g) not answered yet, in order.
    pending: VecDeque<u64>,
}

pub fn run(world: &World, layout: &Layout) {
    let wc = world.comm();
    if !world.is_restored() {
        // The split is collective over the world: the master takes a color of its own.
        let _alone = wc.split(0, 0).expect("split");
        println!("MLW READY rank 0");
    }
    print_segments();
    let g_count = u64::from(layout.groups);
    let mut groups: Vec<Group> = (0..layout.groups)
        .map(|g| Group {
            leader: layout.leader(g),
            in_flight: None,
            pending: (u64::from(g)..layout.queries)
                .step_by(g_count as usize)
                .collect(),
        })
        .collect();
    let mut answered = vec![false; layout.queries as usize];
    let (mut answers, mut restarts) = (0u64, 0u64);
    if world.is_restored() {
        for g in &mut groups {
            answers += rebuild(world, &wc, g, &mut answered, &mut restarts);
        }
        log::info!("restarted master: {answers} answers held by the leaders");
    }
    while answers < layout.queries {
        let mut idle = true;
        for g in &mut groups {
            if g.in_flight.is_none() {
                if let Some(i) = g.pending.pop_front() {
                    g.in_flight = Some(i);
                    send_query(world, &wc, g, &mut restarts);
                    idle = false;
                    continue;
                }
            }
            let Some(i) = g.in_flight else { continue };
            match wc.iprobe(Some(g.leader), Some(ANSWER)) {
                Ok(None) => {}
                Ok(Some(_)) => {
                    let mut b = [0u8; 16];
                    match wc.recv(Some(g.leader), Some(ANSWER), &mut b) {
                        Ok(_) => {}
                        Err(e) => fail(&wc, i, &format!("receiving the answer: {e}")),
                    }
                    let [index, value] = words(&b)[..] else {
                        unreachable!("16 bytes are two words")
                    };
                    if index == LOST {
                        fail(&wc, i, &format!("group of leader {} is lost", g.leader));
                    }
                    if index != i {
                        // Not the query in flight: never counted.
                        log::warn!("answer to query {index} while {i} is in flight: dropped");
                        continue;
                    }
                    let want = answer(query(i));
                    if value != want {
                        fail(&wc, i, &format!("answer {value:#x}, expected {want:#x}"));
                    }
                    if std::mem::replace(&mut answered[i as usize], true) {
                        fail(&wc, i, "answered twice");
                    }
                    answers += 1;
                    g.in_flight = None;
                    idle = false;
                }
                Err(CommError::ProcFailed { .. }) => {
                    restart_leader(world, &wc, g, i, &mut restarts);
                    send_query(world, &wc, g, &mut restarts);
                    idle = false;
                }
                Err(e) => fail(&wc, i, &format!("waiting for its answer: {e}")),
            }
        }
        if idle {
            world.progress_for(Duration::from_micros(200));
        } else if !layout.pace.is_zero() && groups.iter().all(|g| g.in_flight.is_some()) {
            world.progress_for(layout.pace);
        }
    }
    println!("MLW STOPPING answers={answers}");
    world.progress_for(Duration::from_millis(100));
    stop(world, &wc, &mut groups, &mut restarts);
    println!("MLW OK answers={answers} restarts={restarts}");
}

/// A restarted master: asks group `g`'s leader for the answers it gave (restarting it
/// while it is dead: a restarted leader holds none), checks each, marks them answered
/// and drops them from the group's pending queries; how many were new.
fn rebuild(
    world: &World,
    wc: &Comm,
    g: &mut Group,
    answered: &mut [bool],
    restarts: &mut u64,
) -> u64 {
    let mut b = vec![0u8; 8 + 16 * answered.len()];
    let n = loop {
        g.in_flight = Some(STATE);
        send_query(world, wc, g, restarts);
        match wc.recv(Some(g.leader), Some(HELD), &mut b) {
            Ok(st) => break st.len,
            Err(CommError::ProcFailed { .. }) => restart_leader(world, wc, g, STATE, restarts),
            Err(e) => fail(
                wc,
                STATE,
                &format!("asking leader {} for its answers: {e}", g.leader),
            ),
        }
    };
    g.in_flight = None;
    let held = words(&b[..n]);
    let mut new = 0;
    for pair in held.get(1..).unwrap_or_default().chunks_exact(2) {
        let (i, value) = (pair[0], pair[1]);
        let Some(seen) = answered.get_mut(i as usize) else {
            fail(
                wc,
                i,
                &format!("leader {} holds an answer to no query", g.leader),
            );
        };
        let want = answer(query(i));
        if value != want {
            fail(
                wc,
                i,
                &format!("held answer {value:#x}, expected {want:#x}"),
            );
        }
        if !std::mem::replace(seen, true) {
            new += 1;
            g.pending.retain(|&p| p != i);
        }
    }
    new
}

/// Sends group `g` its query in flight, restarting its leader as long as it is dead.
fn send_query(world: &World, wc: &Comm, g: &mut Group, restarts: &mut u64) {
    let i = g.in_flight.expect("a query in flight");
    let index = i;
    let q = if i == STOP || i == STATE { 0 } else { query(i) };
    while let Err(e) = wc.send(g.leader, QUERY, &bytes(&[index, q])) {
        match e {
            CommError::ProcFailed { .. } => restart_leader(world, wc, g, i, restarts),
            e => fail(wc, i, &format!("sending it: {e}")),
        }
    }
}

fn restart_leader(world: &World, wc: &Comm, g: &Group, i: u64, restarts: &mut u64) {
    match restart(world, wc, g.leader) {
        Ok(generation) => {
            *restarts += 1;
            log::info!("leader {} restarted as incarnation {generation}", g.leader);
        }
        Err(e) => fail(wc, i, &format!("restarting leader {}: {e}", g.leader)),
    }
}

/// Tells every leader to stop and waits for each one's acknowledgement (a leader that
/// dies meanwhile is restarted and told again).
fn stop(world: &World, wc: &Comm, groups: &mut [Group], restarts: &mut u64) {
    for g in groups.iter_mut() {
        g.in_flight = Some(STOP);
        loop {
            send_query(world, wc, g, restarts);
            let mut b = [0u8; 16];
            match wc.recv(Some(g.leader), Some(ANSWER), &mut b) {
                Ok(_) if words(&b)[0] == STOP => break,
                Ok(_) => log::warn!("leader {}: late answer during the stop", g.leader),
                Err(CommError::ProcFailed { .. }) => restart_leader(world, wc, g, STOP, restarts),
                Err(e) => fail(wc, STOP, &format!("stopping leader {}: {e}", g.leader)),
            }
        }
    }
}

/// Reports the failure and ends the whole job.
fn fail(wc: &Comm, i: u64, why: &str) -> ! {
    println!("MLW FAIL query {i}: {why}");
    let e = wc.abort(1);
    eprintln!("master_leader_workers: abort refused: {e}");
    std::process::exit(1)
}

/// Prints the prefix of the job's shared-memory segment names (a test checks that none
/// is left).
fn print_segments() {
    let node = format!(
        "{}/{}",
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_default()
            .trim(),
        steadfast_os::boot_id()
    );
    let Some(job) = std::env::var("STEADFAST_JOB_ID")
        .ok()
        .and_then(|j| u64::from_str_radix(&j, 16).ok())
    else {
        return;
    };
    let id = steadfast::launcher::segments::segment_job(job, node.as_bytes());
    println!("MLW SEGMENTS steadfast-{id:016x}-");
}
