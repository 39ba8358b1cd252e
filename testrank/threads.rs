//! Many threads per rank on shared and private communicators (`tests/threads.rs`).
//!
//! `threads T ROUNDS VICTIM MARKER [small]`: the main thread dups the world communicator once (the
//! shared one) and once per thread (the private ones), in the same order on every rank,
//! then starts `T` threads. Thread `t` runs rounds of: a ring exchange on the shared
//! communicator (tag `t`; odd rounds receive from `ANY_SOURCE`), a ring exchange on its
//! private communicator, and an agreement on it on whether the round went well
//! everywhere (so the ranks' threads stay in step, as a correct ULFM program must);
//! every message's bytes, source and length are checked. Sizes rotate over inline, eager
//! and single-copy messages (`small`: up to 32 bytes, see [`SMALL`]; `eager`: no single
//! copy, [`EAGER`]).
//!
//! - `VICTIM` = `none`: every thread runs `ROUNDS` rounds; prints `THREAD t DONE`.
//! - `VICTIM` = a rank: that rank's thread 0 SIGKILLs the process after round 3 while
//!   its other threads are mid-exchange. The survivors' threads run until an operation
//!   fails (they have no round limit, so every one of them meets the failure); a thread
//!   whose operation failed revokes its private communicator and the shared one (so the
//!   threads waiting on it, here and on the other ranks, are released); the round's
//!   agreement then tells every thread of that private communicator; each shrinks its
//!   private communicator (eight shrinks at once per rank), checks a ring exchange and
//!   an agreement on the result and frees it; prints `THREAD t ERROR <rounds> <error>`
//!   and `THREAD t SHRUNK <size>`.
//!
//! The main thread then prints `THREADS OK <t> <rounds of all threads>` and, after a
//! kill, shrinks the world communicator and agrees on it (`WORLD SHRUNK <size>`). Rank 0
//! first prints `THREADS SEGMENTS <prefix>`, its shared-memory segments' names, for the
//! test to check that none is left (MARKER only names the run's processes for it).
//! A thread's verification failure panics; the main thread turns a thread's panic into
//! its own (exit 101).

use std::time::{Duration, Instant};

use steadfast::{Comm, CommError, World, ANY_SOURCE};

use super::{die_now, pattern};

/// Message sizes: inline, eager through cells, single copy (RTS).
const SIZES: [usize; 3] = [8, 2000, 100 << 10];
/// Message sizes with `small`: within the fabric's inject size. Over tcp (`ofi_rxm`)
/// many unexpected messages above it stall the provider's queue, the control messages
/// behind them included (docs/matching.md, section 5).
const SMALL: [usize; 3] = [8, 16, 32];
/// Message sizes with `eager`: inline and through cells, no single copy (a single-copy
/// send interrupted by a revoke returns while its live receiver may still read it:
/// known bug, see `tests/threads.rs`).
const EAGER: [usize; 3] = [8, 2000, 4000];
/// A thread's rounds in a run with a victim must end by then (the harness's own limit
/// is the bound; this one names the thread).
const KILL_DEADLINE: Duration = Duration::from_secs(120);

/// The bytes rank `from`'s thread `t` sends in `round` on the communicator `which`.
fn body(sizes: &[usize; 3], which: u32, from: u32, t: u32, round: u32) -> Vec<u8> {
    let len = sizes[(round + t) as usize % sizes.len()];
    let mut b = pattern(len, which * 1_000_003 + from * 10_007 + t * 101 + round);
    if len >= 12 {
        b[..4].copy_from_slice(&from.to_le_bytes());
        b[4..8].copy_from_slice(&t.to_le_bytes());
        b[8..12].copy_from_slice(&round.to_le_bytes());
    }
    b
}

/// One ring exchange on `comm`: sends to the next rank, receives from the previous one
/// (from `ANY_SOURCE` when `wildcard`), checks what came.
fn ring(
    sizes: &[usize; 3],
    comm: &Comm,
    which: u32,
    t: u32,
    round: u32,
    wildcard: bool,
) -> Result<(), CommError> {
    let (me, n) = (comm.rank(), comm.size());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let send = comm.isend_owned(next, t, body(sizes, which, me, t, round))?;
    let want = body(sizes, which, prev, t, round);
    let mut buf = vec![0u8; sizes[sizes.len() - 1]];
    let source = if wildcard { ANY_SOURCE } else { Some(prev) };
    let got = comm.recv(source, Some(t), &mut buf);
    // The send finishes (or fails) whatever the receive gave.
    let (_, sent) = send.wait();
    let st = got?;
    sent?;
    assert_eq!(
        (st.source, st.tag, st.len),
        (prev, t, want.len()),
        "rank {me} thread {t} round {round} comm {which}: status"
    );
    assert!(
        buf[..st.len] == want[..],
        "rank {me} thread {t} round {round} comm {which}: bytes differ"
    );
    Ok(())
}

/// One round of thread `t`: shared ring, private ring.
fn round(run: &Run, shared: &Comm, private: &Comm, t: u32, r: u32) -> Result<(), CommError> {
    ring(run.sizes, shared, 0, t, r, r % 2 == 1)?;
    ring(run.sizes, private, 1, t, r, false)
}

/// After `private` failed or was revoked: the survivors' communicator, checked by a
/// ring exchange and an agreement, then freed; its size.
fn recover(run: &Run, private: &Comm, t: u32) -> Result<u32, CommError> {
    let shrunk = private.shrink()?;
    let size = shrunk.size();
    if size > 1 {
        ring(run.sizes, &shrunk, 2, t, 0, false)?;
    }
    let v = shrunk.agree(0x5a)?;
    assert_eq!(v, 0x5a, "thread {t}: agreement on the shrunk communicator");
    shrunk.free()?;
    Ok(size)
}

/// Thread `t`: its rounds; the number done.
/// What every thread of a run does.
struct Run {
    me: u32,
    sizes: &'static [usize; 3],
    rounds: u32,
    victim: Option<u32>,
}

fn thread(run: &Run, shared: &Comm, private: &Comm, t: u32) -> u32 {
    let Run {
        me, rounds, victim, ..
    } = *run;
    let start = Instant::now();
    let mut r = 0;
    loop {
        if victim.is_none() && r == rounds {
            println!("THREAD {t} DONE {r}");
            return r;
        }
        if victim == Some(me) && t == 0 && r == 3 {
            die_now();
        }
        assert!(
            start.elapsed() < KILL_DEADLINE,
            "rank {me} thread {t}: no failure seen after {r} rounds"
        );
        let done = round(run, shared, private, t, r);
        if let Err(err) = &done {
            assert!(
                victim.is_some(),
                "rank {me} thread {t} round {r}: {err} without a failure"
            );
            assert!(
                matches!(
                    err,
                    CommError::ProcFailed { .. }
                        | CommError::ProcFailedPending { .. }
                        | CommError::Revoked
                ),
                "rank {me} thread {t} round {r}: unexpected {err:?}"
            );
            // Release every thread waiting on these communicators, here and at the
            // other ranks.
            private.revoke();
            shared.revoke();
        }
        // Every round ends with an agreement on the private communicator on whether it
        // went well everywhere, failed or not here: the ranks' threads stay in step.
        // (A thread that went straight to its shrink while its peer was in an
        // agreement would pair the peer's agreement with its shrink's first one: a
        // program that calls different collectives on a communicator is erroneous, and
        // the two shrinks then walk out of step.) A revoke does not interrupt it.
        let agreed = private.agree(u64::from(done.is_ok()));
        let why = match (&done, &agreed) {
            (Ok(()), Ok(1)) => {
                r += 1;
                continue;
            }
            (Err(err), Ok(0) | Err(CommError::ProcFailed { .. })) => err.to_string(),
            (Ok(()), Ok(0)) => "another rank's round failed".to_string(),
            (Ok(()), Err(err @ CommError::ProcFailed { .. })) => err.to_string(),
            (_, other) => panic!("rank {me} thread {t} round {r}: agreement gave {other:?}"),
        };
        println!("THREAD {t} ERROR {r} {why}");
        private.revoke();
        shared.revoke();
        match recover(run, private, t) {
            Ok(size) => println!("THREAD {t} SHRUNK {size}"),
            Err(e) => panic!(
                "rank {me} thread {t}: recovery failed: {e:?} (failures: {:?})",
                shared.failed_ranks()
            ),
        }
        return r;
    }
}

pub(crate) fn threads(world: &World, comm: &Comm, args: &[String]) {
    let count: u32 = args[2].parse().expect("thread count");
    let rounds: u32 = args[3].parse().expect("round count");
    let victim: Option<u32> = match args[4].as_str() {
        "none" => None,
        v => Some(v.parse().expect("victim rank")),
    };
    let me = comm.rank();
    let sizes = match args.get(6).map(String::as_str) {
        Some("small") => &SMALL,
        Some("eager") => &EAGER,
        _ => &SIZES,
    };
    let run = Run {
        me,
        sizes,
        rounds,
        victim,
    };
    if me == 0 {
        print_segments();
    }
    // Collective creations: one thread, the same order on every rank.
    let shared = comm.dup().unwrap();
    let privates: Vec<Comm> = (0..count).map(|_| comm.dup().unwrap()).collect();
    let total: u32 = std::thread::scope(|s| {
        let handles: Vec<_> = privates
            .iter()
            .enumerate()
            .map(|(t, private)| {
                let (shared, run) = (&shared, &run);
                std::thread::Builder::new()
                    .name(format!("rank{me}-t{t}"))
                    .spawn_scoped(s, move || thread(run, shared, private, t as u32))
                    .expect("spawn a thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .sum()
    });
    println!("THREADS OK {count} {total}");
    for note in world.failures() {
        println!("NOTE rank {} at {:?}: {}", note.rank, note.at, note.how);
    }
    for p in privates {
        // Revoked ones are retired; the others released.
        let _ = p.free();
    }
    let _ = shared.free();
    if victim.is_some() {
        let survivors = comm.shrink().unwrap();
        survivors.agree(1).unwrap();
        println!("WORLD SHRUNK {}", survivors.size());
        drop(survivors);
    }
    world.progress();
}

/// Prints the prefix of the job's shared-memory segment names.
fn print_segments() {
    if let Some(prefix) = super::segments::segment_prefix() {
        println!("THREADS SEGMENTS {prefix}");
    }
}
