//! Fault tolerance across ranks, the ULFM recovery sequence (MPI 4.1 ULFM chapter):
//! the last rank sends every survivor a time stamp and SIGKILLs itself; each survivor
//! sees `MPI_ERR_PROC_FAILED` in a receive from it (`ft.detect`), rank 0 revokes and
//! the others' blocked receives end with `MPI_ERR_REVOKED` (`ft.revoke`), agreement
//! still works on the revoked communicator once the failure is acknowledged and
//! reports the dead rank (`ft.agree`), and `shrink` gives a working communicator of
//! the survivors (`ft.shrink`: ring exchange and an agreement on it).
//!
//! Needs at least 3 ranks (so that the survivors are still a group) and a launcher
//! that keeps the job when a rank dies (`steadfast-run`, `srun --no-kill`).

use std::time::{Duration, Instant};

use steadfast::{Comm, CommError, World};

use crate::report::{Probe, TestResult};

/// Tests this suite reports (skipped together when it cannot run).
pub const TESTS: &[&str] = &["ft.detect", "ft.revoke", "ft.agree", "ft.shrink"];

/// Tests not written yet, with the reason printed as their skip.
pub const NOT_YET: &[(&str, &str)] = &[
    ("ft.restart", "rank restart does not exist in steadfast yet"),
    (
        "ft.node_loss",
        "losing a whole node is not exercised by hwtests yet (needs a multi-node allocation with --no-kill)",
    ),
];

/// Every test of the suite skipped for `why`.
pub fn skipped(why: &str) -> Vec<TestResult> {
    TESTS
        .iter()
        .map(|t| TestResult::skipped(*t, why))
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
pub fn run(world: &World, comm: &Comm) -> (Vec<TestResult>, Vec<Probe>, Option<Comm>) {
    let (me, n) = (comm.rank(), comm.size());
    let victim = n - 1;
    let mut results = Vec::new();
    let mut probes = Vec::new();
    if let Err(e) = comm.agree(1) {
        results.push(TestResult::failed(
            "ft.detect",
            format!("agreement before the kill: {e}"),
        ));
        return (results, probes, None);
    }
    if me == victim {
        let t = realtime_ns().to_le_bytes();
        for r in 0..victim {
            // A survivor that misses the stamp fails its detect test; nothing to do here.
            let _ = comm.send(r, 5, &t);
        }
        log::info!("rank {me}: SIGKILL on itself (the fault-tolerance tests' victim)");
        // SAFETY: raising a signal at ourselves; SIGKILL does not return.
        unsafe { libc::raise(libc::SIGKILL) };
        std::process::exit(137);
    }
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
    results.push(TestResult::from_result("ft.revoke", revoke(world, comm)));
    let t = Instant::now();
    results.push(TestResult::from_result("ft.agree", agree(comm, victim)));
    probes.push(Probe {
        name: "ft.agree_after_failure".into(),
        value: t.elapsed().as_secs_f64() * 1e6,
        unit: "us".into(),
        reference: None,
        ratio: None,
        note: "ack, then agreements until one succeeds, on the revoked communicator".into(),
    });
    let (shrunk, small) = shrink(comm, n);
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

/// Rank 0 revokes after the others have blocked in a receive from it.
fn revoke(world: &World, comm: &Comm) -> Result<(), String> {
    let (me, n) = (comm.rank(), comm.size());
    if me == 0 {
        world.progress_for(Duration::from_millis(200));
        comm.revoke();
    } else {
        let mut b = [0u8; 8];
        match comm.recv(Some(0), Some(77), &mut b) {
            Err(CommError::Revoked) => {}
            other => {
                return Err(format!(
                    "a blocked receive gave {other:?}, expected Revoked"
                ))
            }
        }
    }
    match comm.send((me + 1) % (n - 1), 1, b"x") {
        Err(CommError::Revoked) => Ok(()),
        other => Err(format!("a send on the revoked communicator gave {other:?}")),
    }
}

/// After acknowledging, an agreement succeeds and names the victim as failed.
fn agree(comm: &Comm, victim: u32) -> Result<(), String> {
    let start = Instant::now();
    loop {
        comm.ack_failed();
        match comm.agree_full(1) {
            Ok(a) if a.all_acked => {
                if a.value != 1 {
                    return Err(format!("agreed value {} instead of 1", a.value));
                }
                if a.failed != vec![victim] {
                    return Err(format!(
                        "agreed failed set {:?}, expected [{victim}]",
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
fn shrink(comm: &Comm, n: u32) -> (Result<(), String>, Option<Comm>) {
    let small = match comm.shrink() {
        Ok(s) => s,
        Err(e) => return (Err(format!("shrink: {e}")), None),
    };
    let check = (|| {
        let (r, m) = (small.rank(), small.size());
        if m != n - 1 {
            return Err(format!("shrunk to {m} ranks, expected {}", n - 1));
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
