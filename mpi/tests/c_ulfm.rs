//! The C library under the ULFM patterns of the public ULFM test programs
//! (ICLDisco/ulfm-testing), with programs of our own in `tests/c/`: a communicator
//! revoked by a member that returned from its creation first, communicator creation
//! beside a fresh failure, non-blocking operations toward a dead rank.

mod common;

use common::*;

#[test]
fn a_communicator_revoked_by_the_first_member_out_is_created_everywhere() {
    let (status, out, err) = run_ulfm(4, "revoke_race", &[]);
    assert_eq!(status, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(
        out.matches("REVOKE RACE OK").count(),
        4,
        "stdout:\n{out}\nstderr:\n{err}"
    );
}

/// `create_ft.c` at 4 ranks with rank `victim` SIGKILLed before the creations.
fn creation_beside_a_failure(victim: &str) {
    let (status, out, err) = run_ulfm_with(4, "create_ft", &[victim], &[]);
    assert_eq!(status, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(
        out.matches("CREATE FT OK").count(),
        3,
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(
        err.contains(&format!("rank {victim}: killed by signal 9")),
        "{err}"
    );
}

#[test]
fn dup_split_and_create_return_beside_a_fresh_failure_of_the_last_rank() {
    creation_beside_a_failure("3");
}

#[test]
fn dup_split_and_create_return_beside_a_fresh_failure_of_a_middle_rank() {
    creation_beside_a_failure("1");
}

#[test]
fn a_nonblocking_operation_toward_a_dead_rank_fails_at_its_completion() {
    let (out, _) = survivors_print(4, "isend_ft", &[], "ISEND FT OK");
    assert!(!out.contains("check failed"), "{out}");
}
