//! Communicator scenarios of `ft-test-rank`: inter-communicator creation under a death
//! (`intercomm`), context ids (`contexts`, `split-after-failure`, `exhaust`).

use std::time::Instant;
use steadfast::{Comm, CommError, World, ANY_SOURCE};

use super::failures::agree_until_failed;
use super::{die_now, splitmix};

/// Uniform inter-communicator creation between the even and the odd world ranks, with
/// `victim` SIGKILLed at `stage` (none, before, between, exchange, after).
pub(crate) fn intercomm(world: &World, comm: &Comm, stage: &str, victim: u32) {
    use steadfast::comm::Stage;
    let me = comm.rank();
    let side = me % 2;
    let local = comm.split(side, me).unwrap();
    let remote_leader = 1 - side; // world ranks 0 and 1 lead
    let die_at = match stage {
        "none" => None,
        "before" => Some(Stage::Start),
        "between" => Some(Stage::FirstLocalAgreement),
        "exchange" => Some(Stage::LeaderFlagSent),
        "after" => Some(Stage::Done),
        other => panic!("unknown stage {other}"),
    };
    let mut observe = |s: Stage| {
        if me == victim && Some(s) == die_at {
            die_now();
        }
    };
    match local.intercomm_create_observed(0, comm, remote_leader, 42, &mut observe) {
        Ok(inter) => {
            // Each side contributes its own bit; each reads the other side's.
            let got = loop {
                match inter.agree(1 << side) {
                    Ok(v) => break v,
                    Err(CommError::ProcFailed { .. }) => {
                        inter.ack_failed();
                    }
                    Err(e) => panic!("rank {me}: {e}"),
                }
            };
            assert_eq!(got, 1 << (1 - side), "rank {me}: remote flags");
            println!(
                "INTERCOMM ok local={} remote={}",
                inter.local_size(),
                inter.remote_size()
            );
        }
        Err(CommError::ProcFailed { .. }) => println!("INTERCOMM failed"),
        Err(e) => panic!("rank {me}: {e}"),
    }
    let _ = world;
}

/// The tag of every mark: a mark of another communicator is told apart by its stamp.
const MARK_TAG: u32 = 5;

/// A message on `comm` to the next rank carrying `stamp`, left for [`take_mark`].
pub(crate) fn send_mark(comm: &Comm, stamp: u64) {
    let (me, n) = (comm.rank(), comm.size());
    comm.send((me + 1) % n, MARK_TAG, &stamp.to_le_bytes())
        .unwrap_or_else(|e| panic!("rank {me}: mark {stamp}: {e}"));
}

/// Receives the message [`send_mark`] sent this rank on `comm` from any source, and checks
/// it is `stamp`'s (a crossed mark from another communicator would not be). Not `ANY_TAG`:
/// a faster peer's closing barrier (`Comm::free`) may already be queued on `comm`.
pub(crate) fn take_mark(comm: &Comm, stamp: u64) {
    let (me, n) = (comm.rank(), comm.size());
    let mut b = [0u8; 8];
    let st = comm
        .recv(ANY_SOURCE, Some(MARK_TAG), &mut b)
        .unwrap_or_else(|e| panic!("rank {me}: take mark {stamp}: {e}"));
    let got = u64::from_le_bytes(b);
    assert!(
        st.len == 8 && got == stamp && st.source == (me + n - 1) % n,
        "rank {me}: CROSSED: communicator {stamp} received {got} (tag {}, from {}, {} bytes)",
        st.tag,
        st.source,
        st.len
    );
}

pub(crate) fn contexts(world: &World, comm: &Comm, count: u64, seed: u64) {
    const LIVE: usize = 8;
    let me = comm.rank();
    // The same seed at every rank: every rank makes the same choices.
    let mut rng = seed;
    let mut live: Vec<(Comm, u64)> = Vec::new();
    let (mut dups, mut splits, mut shrinks, mut revoked) = (0u64, 0u64, 0u64, 0u64);
    let t = Instant::now();
    for i in 0..count {
        if live.len() == LIVE || (!live.is_empty() && splitmix(&mut rng) % 3 == 0) {
            let k = (splitmix(&mut rng) % live.len() as u64) as usize;
            let (c, stamp) = live.swap_remove(k);
            if splitmix(&mut rng) % 1000 == 0 {
                // Leave the mark unreceived and revoke: its context must never be reused.
                // The barrier first: every member has sent its mark (a revoke reaching
                // a member before its send would fail the send). Rank 0 may leave the
                // barrier and revoke before another member has taken the barrier's last
                // message: that member's barrier then ends `Revoked` (ULFM), every mark
                // being sent all the same.
                match c.barrier() {
                    Ok(()) => {}
                    Err(CommError::Revoked) if c.rank() != 0 => {}
                    Err(e) => panic!("rank {me}: barrier {stamp}: {e}"),
                }
                if c.rank() == 0 {
                    c.revoke();
                }
                revoked += 1;
            } else {
                take_mark(&c, stamp);
            }
            c.free()
                .unwrap_or_else(|e| panic!("rank {me}: free {stamp}: {e}"));
        }
        let r = splitmix(&mut rng);
        let new = match r % 100 {
            0 => {
                shrinks += 1;
                comm.shrink()
            }
            1..=49 => {
                dups += 1;
                comm.dup()
            }
            _ => {
                splits += 1;
                let colors = 1 + (r >> 8) % 2;
                comm.split((me + (r >> 16) as u32) % colors as u32, u32::MAX - me)
            }
        }
        .unwrap_or_else(|e| panic!("rank {me}: creation {i}: {e}"));
        send_mark(&new, i);
        live.push((new, i));
    }
    for (c, stamp) in live.drain(..) {
        take_mark(&c, stamp);
        c.free()
            .unwrap_or_else(|e| panic!("rank {me}: free {stamp}: {e}"));
    }
    assert!(world.failures().is_empty(), "{:?}", world.failures());
    println!(
        "CONTEXTS OK {count} communicators (dup {dups}, split {splits}, shrink {shrinks}, \
         revoked {revoked}) in {} ms",
        t.elapsed().as_millis()
    );
}

pub(crate) fn split_after_failure(world: &World, comm: &Comm, victim: u32) {
    let me = comm.rank();
    comm.barrier().unwrap();
    if me == victim {
        die_now();
    }
    agree_until_failed(world, comm, victim);
    comm.ack_failed();
    let half = comm
        .split(0, me)
        .unwrap_or_else(|e| panic!("rank {me}: split after an acknowledged failure: {e}"));
    send_mark(&half, 42);
    take_mark(&half, 42);
    let n = half.size();
    half.free().unwrap();
    println!("SPLIT OK {n}");
}

pub(crate) fn exhaust(comm: &Comm) {
    let me = comm.rank();
    let mut live = Vec::new();
    let err = loop {
        match comm.dup() {
            Ok(c) => live.push(c),
            Err(e) => break e,
        }
        assert!(
            live.len() < 1 << 17,
            "rank {me}: no exhaustion after {} dups",
            live.len()
        );
    };
    assert!(
        matches!(err, CommError::ContextsExhausted { .. }),
        "rank {me}: expected ContextsExhausted, got {err:?}"
    );
    println!("EXHAUSTED after {}: {err}", live.len());
    // A freed context is usable again.
    live.pop().expect("some dups succeeded").free().unwrap();
    let again = comm
        .dup()
        .unwrap_or_else(|e| panic!("rank {me}: dup after free: {e}"));
    send_mark(&again, 7);
    take_mark(&again, 7);
    println!("REUSED");
    again.free().unwrap();
    for c in live {
        c.free().unwrap();
    }
}
