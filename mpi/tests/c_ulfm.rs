//! The C library under the ULFM patterns of the public ULFM test programs
//! (ICLDisco/ulfm-testing), with programs of our own in `tests/c/`: a communicator
//! revoked by a member that returned from its creation first, communicator creation
//! beside a fresh failure, non-blocking operations toward a dead rank, the children of
//! a spawn that failed at its parents.

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

/// `spawn_orphan.c` at 4 ranks in a universe of 6, rank 3 dead before the spawn, with
/// `opts` added: (status, stdout, stderr).
fn spawn_beside_a_dead_parent(opts: &[&str]) -> (i32, String, String) {
    let mut args = vec!["-np", "4", "--universe", "6", "--with-ft", "ulfm"];
    args.extend_from_slice(opts);
    run(&args, program("spawn_orphan"), &[], &[])
}

/// Before, the children's failed `MPI_Init` returned `MPIX_ERR_PROC_FAILED` to a
/// program that does not test it (ulfm-testing's `stress/spawn.c`), which then ran as
/// one of the job's first ranks with every call failing silently.
#[test]
fn a_child_of_a_spawn_its_parents_failed_ends_in_mpi_init() {
    let (_, out, err) = spawn_beside_a_dead_parent(&[]);
    assert_eq!(
        out.matches("PARENT SPAWN FAILED").count(),
        3,
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(!out.contains("CHILD INIT RETURNED"), "{out}\n{err}");
    for child in [4, 5] {
        assert!(
            err.contains(&format!("rank {child}: exited with status 75")),
            "the child's class (MPIX_ERR_PROC_FAILED) is its status:\n{err}"
        );
    }
}

#[test]
fn under_mpi_errors_return_a_childs_failed_mpi_init_returns_its_error() {
    let (_, out, err) = spawn_beside_a_dead_parent(&["--initial-errhandler", "mpi_errors_return"]);
    assert_eq!(
        out.matches("PARENT SPAWN FAILED").count(),
        3,
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert_eq!(
        out.matches("CHILD INIT RETURNED 75").count(),
        2,
        "stdout:\n{out}\nstderr:\n{err}"
    );
}

/// `sessions_ft.c` at `n` ranks with `env`: the last rank SIGKILLs itself, the
/// survivors' `MPI_Comm_create_from_group` over `mpi://WORLD` fails and they recover.
fn sessions_beside_a_failure(n: usize, env: &[(&str, &str)]) {
    let (status, out, err) = run_ulfm(n, "sessions_ft", env);
    assert_eq!(status, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(
        out.matches("SESSIONS FT OK").count(),
        n - 1,
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(
        err.contains(&format!("rank {}: killed by signal 9", n - 1)),
        "{err}"
    );
}

#[test]
fn a_session_communicator_creation_beside_a_dead_member_fails_and_recovers() {
    sessions_beside_a_failure(4, &[]);
    sessions_beside_a_failure(
        3,
        &[("STEADFAST_ROUTE", "fabric"), ("STEADFAST_PROVIDER", "tcp")],
    );
}

#[test]
fn a_partitioned_receive_whose_sender_dies_before_its_last_partition_fails() {
    for n in [2, 3] {
        let (out, err) = survivors_print(n, "partitioned_ft", &[], "PARTITIONED FT OK");
        assert!(
            err.contains(&format!("rank {}: killed by signal 9", n - 1)),
            "{out}\n{err}"
        );
    }
}

#[test]
fn an_excluded_process_that_aborts_ends_alone() {
    // Rank 2 stops itself; 500 ms of silence suspects it; the others shrink it away and
    // resume it. Its MPI_Abort then ends only itself (before: the launcher was asked to
    // end every rank, the survivors with it); the launcher still returns the abort's
    // code, as MPI asks of MPI_Abort.
    let env = [
        ("STEADFAST_DETECT_TIMEOUT_MS", "500"),
        ("STEADFAST_HEARTBEAT_MS", "50"),
    ];
    let (status, out, err) = run_ulfm_with(3, "excluded_abort", &[], &env);
    assert_eq!(status, 5, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(out.matches("SURVIVED").count(), 2, "{out}\n{err}");
    assert!(err.contains("rank 2: exited with status 5"), "{out}\n{err}");
}

#[test]
fn failures_are_listed_and_acknowledged_in_the_order_they_were_learnt() {
    let (status, out, err) = run_ulfm_with(4, "ack_order", &[], &[]);
    assert_eq!(status, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(out.matches("ACK ORDER OK").count(), 2, "{out}\n{err}");
    for victim in ["1", "3"] {
        assert!(
            err.contains(&format!("rank {victim}: killed by signal 9")),
            "{out}\n{err}"
        );
    }
}

/// Open MPI's spellings of `--with-ft`: ulfm-testing's benchmarks/Makefile runs its
/// programs with `mpirun -am ft-enable-mpi -np 8`, and ULFM's documentation sets the
/// MCA parameter `mpi_ft_enable`. Both were usage errors (status 2, nothing started).
#[test]
fn the_launcher_takes_open_mpis_spellings_of_the_fault_tolerance_mode() {
    let prog = program("ft_spellings");
    let (status, out, err) = run(&["-am", "ft-enable-mpi", "-np", "3"], prog, &["kill"], &[]);
    assert_eq!(status, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("FT 1"), "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(out.matches("SURVIVED").count(), 2, "{out}\n{err}");
    assert!(err.contains("rank 2: killed by signal 9"), "{err}");
    let (status, out, err) = run(
        &[
            "-np",
            "2",
            "-mca",
            "mpi_ft_enable",
            "0",
            "--mca",
            "btl",
            "self",
        ],
        prog,
        &[],
        &[],
    );
    assert_eq!(status, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("FT 0"), "stdout:\n{out}\nstderr:\n{err}");
    assert!(err.contains("--mca btl ignored"), "{err}");
    let (status, _, err) = run(&["-am", "some-file", "-np", "2"], prog, &[], &[]);
    assert_eq!(status, 2, "{err}");
}
