//! Fault tolerance across ranks, the ULFM recovery sequence (MPI 4.1 ULFM chapter):
//! the victims send every survivor a time stamp and SIGKILL themselves; each survivor
//! sees `MPI_ERR_PROC_FAILED` in a receive from the first victim (`ft.detect`), the
//! first survivor revokes and the others' blocked receives end with `MPI_ERR_REVOKED`
//! (`ft.revoke`), agreement still works on the revoked communicator once the failures
//! are acknowledged and reports exactly the victims (`ft.agree`), and `shrink` gives a
//! working communicator of the survivors (`ft.shrink`: ring exchange and an agreement
//! on it).
//!
//! The victims: when the job spans several nodes and at least two ranks live elsewhere,
//! every rank of the last rank's node dies at once, a whole node lost (`ft.node_loss`
//! passes with the others); otherwise the last rank alone.
//!
//! Needs at least 3 ranks (so that the survivors are still a group) and a launcher
//! that keeps the job when a rank dies (`steadfast-run`, `srun --no-kill`).

use std::time::{Duration, Instant};

use steadfast::{Comm, CommError, World};

use crate::report::{Probe, TestResult};

/// Tests this suite reports (skipped together when it cannot run).
pub const TESTS: &[&str] = &["ft.detect", "ft.revoke", "ft.agree", "ft.shrink"];

/// Tests not written yet, with the reason printed as their skip.
pub const NOT_YET: &[(&str, &str)] =
    &[(
        "ft.restart",
        "not written yet: restart in place exists over shared memory under steadfast-run (tests/restart.rs), not across nodes (docs/restart.md)",
    )];

/// The node-loss test's name.
const NODE_LOSS: &str = "ft.node_loss";

/// Who dies: every rank of the last rank's node when the job spans several nodes and
/// two ranks or more live elsewhere (a node lost), else the last rank; and why a node
/// loss is not exercised, when it is not.
fn victims(n: u32, node_of: &[String]) -> (Vec<u32>, Option<String>) {
    let last = n - 1;
    let node = node_of.get(last as usize);
    let same: Vec<u32> = (0..n)
        .filter(|&r| node_of.get(r as usize) == node)
        .collect();
    let survivors = n as usize - same.len();
    if same.len() == n as usize {
        (vec![last], Some("the job runs on one node".into()))
    } else if survivors < 2 {
        (
            vec![last],
            Some(format!(
                "losing the last node would leave {survivors} rank: needs 2 or more elsewhere"
            )),
        )
    } else {
        (same, None)
    }
}

/// Every test of the suite skipped for `why`.
pub fn skipped(why: &str) -> Vec<TestResult> {
    TESTS
        .iter()
        .map(|t| TestResult::skipped(*t, why))
        .chain(std::iter::once(TestResult::skipped(NODE_LOSS, why)))
        .chain(NOT_YET.iter().map(|(t, w)| TestResult::skipped(*t, *w)))
        .collect()
}

/// A limit for each wait on the survivors' side: past it, the step fails.
const STEP_LIMIT: Duration = Duration::from_secs(60);

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Runs the suite; the last rank never returns. Survivors get their results, their
/// probes, and the shrunk communicator (when shrink worked) to report over.
pub fn run(
    world: &World,
    comm: &Comm,
    node_of: &[String],
) -> (Vec<TestResult>, Vec<Probe>, Option<Comm>) {
    let (me, n) = (comm.rank(), comm.size());
    let (victims, no_node_loss) = victims(n, node_of);
    let survivors: Vec<u32> = (0..n).filter(|r| !victims.contains(r)).collect();
    let victim = victims[0];
    let mut results = Vec::new();
    let mut probes = Vec::new();
    if let Err(e) = comm.agree(1) {
        results.push(TestResult::failed(
            "ft.detect",
            format!("agreement before the kill: {e}"),
        ));
        return (results, probes, None);
    }
    if victims.contains(&me) {
        // Every victim is still there: the stamps leave before any dies.
        let _ = comm.barrier();
        let t = realtime_ns().to_le_bytes();
        if me == victim {
            for &r in &survivors {
                // A survivor that misses the stamp fails its detect test; nothing to do here.
                let _ = comm.send(r, 5, &t);
            }
        }
        log::info!("rank {me}: SIGKILL on itself (the fault-tolerance tests' victim)");
        // SAFETY: raising a signal at ourselves; SIGKILL does not return.
        unsafe { libc::raise(libc::SIGKILL) };
        std::process::exit(137);
    }
    // The victims' side of the barrier above: no victim dies before all are there.
    let _ = comm.barrier();
    let detect = detect(comm, victim);
    if let Ok(ns) = detect {
        probes.push(Probe {
            name: "ft.detect".into(),
            value: ns as f64 / 1000.0,
            unit: "us".into(),
            reference: None,
            ratio: None,
            note: "SIGKILL of the last rank to ProcFailed in a receive from it (wall clocks)"
                .into(),
        });
    }
    results.push(TestResult::from_result("ft.detect", detect.map(drop)));
    results.push(TestResult::from_result(
        "ft.revoke",
        revoke(world, comm, &survivors),
    ));
    let t = Instant::now();
    let agreed = agree(comm, &victims);
    let node_loss = match (&no_node_loss, &agreed) {
        (Some(why), _) => TestResult::skipped(NODE_LOSS, why),
        (None, Ok(())) => TestResult::passed(NODE_LOSS),
        (None, Err(e)) => TestResult::failed(
            NODE_LOSS,
            format!("ranks {victims:?} (a whole node) killed: {e}"),
        ),
    };
    results.push(TestResult::from_result("ft.agree", agreed));
    results.push(node_loss);
    probes.push(Probe {
        name: "ft.agree_after_failure".into(),
        value: t.elapsed().as_secs_f64() * 1e6,
        unit: "us".into(),
        reference: None,
        ratio: None,
        note: "ack, then agreements until one succeeds, on the revoked communicator".into(),
    });
    let (shrunk, small) = shrink(comm, survivors.len() as u32);
    results.push(TestResult::from_result("ft.shrink", shrunk));
    results.extend(NOT_YET.iter().map(|(t, w)| TestResult::skipped(*t, *w)));
    (results, probes, small)
}

/// The stamp, then ProcFailed naming the victim; returns the detection time in ns.
fn detect(comm: &Comm, victim: u32) -> Result<u64, String> {
    let mut b = [0u8; 8];
    comm.recv(Some(victim), Some(5), &mut b)
        .map_err(|e| format!("the victim's time stamp: {e}"))?;
    let killed_at = u64::from_le_bytes(b);
    let mut one = [0u8; 1];
    match comm.recv(Some(victim), Some(6), &mut one) {
        Err(CommError::ProcFailed { ranks }) if ranks == vec![victim] => {
            Ok(realtime_ns().saturating_sub(killed_at))
        }
        Err(CommError::ProcFailed { ranks }) => {
            Err(format!("ProcFailed names {ranks:?}, expected [{victim}]"))
        }
        other => Err(format!(
            "a receive from the dead rank gave {other:?}, expected ProcFailed"
        )),
    }
}

/// The first survivor revokes after the others have blocked in a receive from it.
fn revoke(world: &World, comm: &Comm, survivors: &[u32]) -> Result<(), String> {
    let me = comm.rank();
    let first = survivors[0];
    if me == first {
        world.progress_for(Duration::from_millis(200));
        comm.revoke();
    } else {
        let mut b = [0u8; 8];
        match comm.recv(Some(first), Some(77), &mut b) {
            Err(CommError::Revoked) => {}
            other => {
                return Err(format!(
                    "a blocked receive gave {other:?}, expected Revoked"
                ))
            }
        }
    }
    let at = survivors.iter().position(|&r| r == me).unwrap_or(0);
    let next = survivors[(at + 1) % survivors.len()];
    match comm.send(next, 1, b"x") {
        Err(CommError::Revoked) => Ok(()),
        other => Err(format!("a send on the revoked communicator gave {other:?}")),
    }
}

/// After acknowledging, an agreement succeeds and names exactly the victims as failed.
fn agree(comm: &Comm, victims: &[u32]) -> Result<(), String> {
    let start = Instant::now();
    loop {
        comm.ack_failed();
        match comm.agree_full(1) {
            Ok(a) if a.all_acked => {
                if a.value != 1 {
                    return Err(format!("agreed value {} instead of 1", a.value));
                }
                if a.failed != victims {
                    return Err(format!(
                        "agreed failed set {:?}, expected {victims:?}",
                        a.failed
                    ));
                }
                return Ok(());
            }
            Ok(_) => {}
            Err(e) => return Err(format!("agree: {e}")),
        }
        if start.elapsed() > STEP_LIMIT {
            return Err(format!("no acknowledged agreement within {STEP_LIMIT:?}"));
        }
    }
}

/// Shrink, then a ring exchange and an agreement among the survivors.
fn shrink(comm: &Comm, survivors: u32) -> (Result<(), String>, Option<Comm>) {
    let small = match comm.shrink() {
        Ok(s) => s,
        Err(e) => return (Err(format!("shrink: {e}")), None),
    };
    let check = (|| {
        let (r, m) = (small.rank(), small.size());
        if m != survivors {
            return Err(format!("shrunk to {m} ranks, expected {survivors}"));
        }
        let (next, prev) = ((r + 1) % m, (r + m - 1) % m);
        let mut b = [0u8; 4];
        let send = || {
            small
                .send(next, 5, &r.to_le_bytes())
                .map_err(|e| format!("ring send: {e}"))
        };
        let mut recv = || {
            small
                .recv(Some(prev), Some(5), &mut b)
                .map(drop)
                .map_err(|e| format!("ring receive: {e}"))
        };
        if r % 2 == 0 {
            send()?;
            recv()?;
        } else {
            recv()?;
            send()?;
        }
        if u32::from_le_bytes(b) != prev {
            return Err(format!("ring: got {} from {prev}", u32::from_le_bytes(b)));
        }
        match small.agree(1) {
            Ok(1) => Ok(()),
            other => Err(format!("agreement on the shrunk communicator: {other:?}")),
        }
    })();
    (check, Some(small))
}
