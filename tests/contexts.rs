//! Communicator contexts under steadfast-run with real rank processes (`ft-test-rank`):
//! many communicators created and freed (dup, split, shrink; some revoked) without a
//! crossed message, and a clear error when the contexts run out (issue 15).
//!
//! Its own test binary, and its tests one at a time: each keeps every core busy for a
//! while, which would starve the heartbeat-timed tests of `ft.rs` running beside it.

mod ft_job;

use ft_job::run;
use std::sync::Mutex;
use std::time::Duration;

/// Held by each test: one job at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Communicators created and freed in the contexts loop: the 100 000 in release
/// (as `scripts/test.sh` runs the suite), fewer in a debug build.
const CONTEXTS_LOOP: u32 = if cfg!(debug_assertions) {
    20_000
} else {
    100_000
};

fn contexts_loop(n: u32, seed: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let count = CONTEXTS_LOOP.to_string();
    let job = run(
        n,
        &[],
        &["contexts", &count, seed],
        Duration::from_secs(600),
    );
    assert_eq!(job.code, Some(0), "{}", job.context());
    let ok = job.lines("CONTEXTS OK");
    assert_eq!(ok.len(), n as usize, "{}", job.context());
    assert!(
        ok.iter()
            .all(|(_, l)| l.starts_with(&format!("CONTEXTS OK {count} communicators"))),
        "{}",
        job.context()
    );
}

#[test]
fn many_communicators_created_and_freed_never_cross_messages_2_ranks() {
    contexts_loop(2, "11");
}

#[test]
fn many_communicators_created_and_freed_never_cross_messages_3_ranks() {
    contexts_loop(3, "7");
}

#[test]
fn running_out_of_contexts_is_a_clear_error_and_freeing_recovers() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let job = run(2, &[], &["exhaust"], Duration::from_secs(600));
    assert_eq!(job.code, Some(0), "{}", job.context());
    let exhausted = job.lines("EXHAUSTED");
    assert_eq!(exhausted.len(), 2, "{}", job.context());
    for (_, l) in &exhausted {
        // 2^16 contexts, 0 and 1 reserved: every other one was handed out first.
        assert!(
            l.starts_with("EXHAUSTED after 65534: no communicator context is free"),
            "{l}"
        );
        assert!(l.contains("65536 contexts, 65534 in use"), "{l}");
    }
    assert_eq!(job.lines("REUSED").len(), 2, "{}", job.context());
}

#[test]
fn split_after_an_acknowledged_failure_agrees_among_the_survivors() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let job = run(
        3,
        &[],
        &["split-after-failure", "1"],
        Duration::from_secs(120),
    );
    assert_eq!(job.code, Some(1), "the victim's death: {}", job.context());
    let ok = job.lines("SPLIT OK");
    assert_eq!(ok.len(), 2, "{}", job.context());
    assert!(
        ok.iter().all(|(_, l)| l == "SPLIT OK 2"),
        "{}",
        job.context()
    );
}

/// `Comm::idup_on_tag`: a dup started before the messages a peer waits for, several at
/// once beside a blocking dup (`testrank/idup.rs`); 3 ranks (one folds into the
/// recursive doubling) and 4.
#[test]
fn non_blocking_dups_complete_whatever_runs_between_start_and_wait() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for n in [3, 4] {
        let job = run(n, &[], &["idup", "100"], Duration::from_secs(300));
        assert_eq!(job.code, Some(0), "{}", job.context());
        let ok = job.lines("IDUP OK");
        assert_eq!(ok.len(), n as usize, "{}", job.context());
        assert!(
            ok.iter().all(|(_, l)| l == "IDUP OK 580"),
            "{}",
            job.context()
        );
    }
}
