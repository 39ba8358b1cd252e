//! Synchronous sends through the runtime (`Comm::ssend`/`issend`), with real ranks
//! under `steadfast-run`: they complete only once the matching receive has started
//! (inline, eager and single-copy sizes, and to oneself), fail with `ProcFailed` when
//! the receiver dies (SIGKILL) and with `Revoked` on a revoke. Matched probes
//! (`Comm::mprobe`/`improbe`, `Message::recv`) take their message out of the queue.
//! Each over shared memory and over the fabric (tcp). Scenarios: `testrank/ssend.rs`.

mod ft_job;

use ft_job::run;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);

const SHM: &[(&str, &str)] = &[];
const TCP: &[(&str, &str)] = &[("STEADFAST_ROUTE", "fabric")];

fn ssend(env: &[(&str, &str)]) {
    let job = run(3, env, &["ssend"], LIMIT);
    assert_eq!(job.code, Some(0), "{}", job.context());
    assert_eq!(job.lines("SSEND OK").len(), 3, "{}", job.context());
}

#[test]
fn ssend_completes_only_once_its_receive_has_started_over_shm() {
    ssend(SHM);
}

/// Inject, eager and rendezvous sizes: the sequence number travels beside the tag.
#[test]
fn ssend_completes_only_once_its_receive_has_started_over_tcp() {
    ssend(TCP);
}

fn ssend_fail(env: &[(&str, &str)]) {
    let job = run(3, env, &["ssend-fail"], LIMIT);
    // The victim was killed: the launcher reports a failed rank.
    assert_eq!(job.code, Some(1), "{}", job.context());
    assert_eq!(job.lines("SSENDFAIL OK").len(), 2, "{}", job.context());
}

#[test]
fn issend_fails_when_its_receiver_dies_or_the_communicator_is_revoked() {
    ssend_fail(SHM);
}

#[test]
fn issend_fails_when_its_receiver_dies_or_the_communicator_is_revoked_over_tcp() {
    ssend_fail(TCP);
}

fn mprobe(env: &[(&str, &str)]) {
    let job = run(2, env, &["mprobe"], LIMIT);
    assert_eq!(job.code, Some(0), "{}", job.context());
    assert_eq!(job.lines("MPROBE OK").len(), 2, "{}", job.context());
}

#[test]
fn mprobe_takes_the_message_out_of_the_queue_and_answers_a_synchronous_sender() {
    mprobe(SHM);
}

/// A taken rendezvous message is read at `Message::recv`, a dropped one declined.
#[test]
fn mprobe_takes_the_message_out_of_the_queue_and_answers_a_synchronous_sender_over_tcp() {
    mprobe(TCP);
}

/// A rendezvous message withdrawn by its live sender (its communicator revoked) while
/// the receiver was about to read it: the read ends with `Revoked` and no one is
/// counted failed. Over tcp and over net (both answer the read of a revoked
/// registration with `FI_ECANCELED`).
fn mprobe_withdrawn(provider: &str) {
    let env = [
        ("STEADFAST_ROUTE", "fabric"),
        ("STEADFAST_PROVIDER", provider),
    ];
    let job = run(2, &env, &["mprobe-withdrawn"], LIMIT);
    assert_eq!(job.code, Some(0), "{}", job.context());
    assert_eq!(job.lines("WITHDRAWN OK").len(), 2, "{}", job.context());
}

#[test]
fn a_withdrawn_message_is_revoked_not_a_failure_over_tcp() {
    mprobe_withdrawn("tcp");
}

#[test]
fn a_withdrawn_message_is_revoked_not_a_failure_over_net() {
    mprobe_withdrawn("net");
}
