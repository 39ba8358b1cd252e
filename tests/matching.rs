//! MPI matching order through the runtime, with real ranks under `steadfast-run`, over
//! shared memory and over tcp (the fabric forced): receives match in posting order
//! whatever order they are tested in (many posted wildcard receives, interleaved tags
//! against a reference model, several senders, messages waiting before their
//! receives, probe then receive, self), one sender's same-tag messages (large then
//! small) do not overtake, nor does a later send overtake a large one that found the shm
//! ring full (issue 15; one withdrawn while waiting never arrives), a dead source's arrived messages stay receivable while a
//! receive naming it fails with `ProcFailed` (over shm and over the fabric), and a revoke completes every pending receive with
//! `Revoked`. Scenarios: `testrank/matching.rs`.

mod ft_job;

use ft_job::run;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);
const SHM: &[(&str, &str)] = &[];
const TCP: &[(&str, &str)] = &[("STEADFAST_ROUTE", "fabric")];

fn order(n: u32, env: &[(&str, &str)], phases: &str) {
    let job = run(n, env, &["order", phases], LIMIT);
    assert_eq!(job.code, Some(0), "{}", job.context());
    assert_eq!(
        job.lines("MATCHING OK").len(),
        n as usize,
        "{}",
        job.context()
    );
}

#[test]
fn receives_match_in_posting_order_over_shm() {
    order(3, SHM, "all");
    order(4, SHM, "all");
}

/// Every phase over the fabric too: its messages go through the same matcher
/// (software matching, docs/matching.md section 5), unexpected ones included.
#[test]
fn receives_match_in_posting_order_over_tcp() {
    order(3, TCP, "all");
}

fn deadsource(env: &[(&str, &str)]) {
    let job = run(3, env, &["deadsource"], LIMIT);
    // The victim was killed: the launcher reports a failed rank.
    assert_eq!(job.code, Some(1), "{}", job.context());
    assert_eq!(job.lines("DEADSOURCE OK").len(), 2, "{}", job.context());
}

#[test]
fn a_dead_sources_arrived_messages_stay_receivable_over_shm() {
    deadsource(SHM);
}

#[test]
fn a_dead_sources_arrived_messages_stay_receivable_over_tcp() {
    deadsource(TCP);
}

fn revoke_pending(env: &[(&str, &str)]) {
    let job = run(3, env, &["revokepending"], LIMIT);
    assert_eq!(job.code, Some(0), "{}", job.context());
    assert_eq!(job.lines("REVOKEPENDING OK").len(), 3, "{}", job.context());
}

#[test]
fn revoke_completes_every_pending_receive_over_shm() {
    revoke_pending(SHM);
}

#[test]
fn revoke_completes_every_pending_receive_over_tcp() {
    revoke_pending(TCP);
}

/// Heartbeats seldom: one from rank 0 while its ring is kept full would wait for room.
const QUIET: &[(&str, &str)] = &[
    ("STEADFAST_HEARTBEAT_MS", "10000"),
    ("STEADFAST_DETECT_TIMEOUT_MS", "60000"),
];

fn overtake(how: &str) {
    let job = run(2, QUIET, &["overtake", how], LIMIT);
    assert_eq!(job.code, Some(0), "{}", job.context());
    assert_eq!(job.lines("OVERTAKE OK").len(), 2, "{}", job.context());
}

/// A large `isend` that finds the ring full is not overtaken by a later blocking
/// `send` to the same rank with the same tag (issue 15).
#[test]
fn a_send_does_not_overtake_an_isend_waiting_for_room_over_shm() {
    overtake("send");
}

/// Nor by a later blocking `send` that would fit the ring at once (the latency path).
#[test]
fn a_send_finding_room_does_not_overtake_an_isend_waiting_for_room_over_shm() {
    overtake("late");
}

/// Nor by a later `isend` tested before it.
#[test]
fn an_isend_tested_first_does_not_overtake_an_isend_waiting_for_room_over_shm() {
    overtake("isend");
}

/// A queued send dropped before it left is withdrawn: the sends behind it move up and
/// it never arrives.
#[test]
fn a_send_dropped_while_waiting_for_room_is_withdrawn_over_shm() {
    overtake("drop");
}

/// Blocking receives that wait unposted (`src/comm/recv_direct.rs`) keep the matching
/// order, synchronous sends, truncation and every size, and report a dead source.
#[test]
fn unposted_blocking_receives_keep_the_order_and_report_failures_over_shm() {
    let job = run(2, SHM, &["direct"], LIMIT);
    // Rank 1 dies on purpose at the end: the launcher reports a failed rank.
    assert_eq!(job.code, Some(1), "{}", job.context());
    assert_eq!(job.lines("DIRECT OK").len(), 1, "{}", job.context());
}
