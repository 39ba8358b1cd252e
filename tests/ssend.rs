//! Synchronous sends through the runtime (`Comm::ssend`/`issend`), with real ranks
//! under `steadfast-run`: they complete only once the matching receive has started
//! (inline, eager and single-copy sizes over shm, and to oneself), fail with
//! `ProcFailed` when the receiver dies (SIGKILL) and with `Revoked` on a revoke, and
//! are refused with `Unsupported` towards a rank reached through the fabric.
//! Matched probes (`Comm::mprobe`/`improbe`, `Message::recv`) take their message out
//! of the queue. Scenarios: `testrank/ssend.rs`.

mod ft_job;

use ft_job::run;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);

#[test]
fn ssend_completes_only_once_its_receive_has_started_over_shm() {
    let job = run(3, &[], &["ssend"], LIMIT);
    assert_eq!(job.code, Some(0), "{}", job.context());
    assert_eq!(job.lines("SSEND OK").len(), 3, "{}", job.context());
}

#[test]
fn issend_fails_when_its_receiver_dies_or_the_communicator_is_revoked() {
    let job = run(3, &[], &["ssend-fail"], LIMIT);
    // The victim was killed: the launcher reports a failed rank.
    assert_eq!(job.code, Some(1), "{}", job.context());
    assert_eq!(job.lines("SSENDFAIL OK").len(), 2, "{}", job.context());
}

#[test]
fn ssend_to_a_fabric_peer_is_refused() {
    let job = run(
        2,
        &[("STEADFAST_ROUTE", "fabric")],
        &["ssend-fabric"],
        LIMIT,
    );
    assert_eq!(job.code, Some(0), "{}", job.context());
    assert_eq!(job.lines("SSENDFABRIC OK").len(), 2, "{}", job.context());
}

#[test]
fn mprobe_takes_the_message_out_of_the_queue_and_answers_a_synchronous_sender() {
    let job = run(2, &[], &["mprobe"], LIMIT);
    assert_eq!(job.code, Some(0), "{}", job.context());
    assert_eq!(job.lines("MPROBE OK").len(), 2, "{}", job.context());
}
