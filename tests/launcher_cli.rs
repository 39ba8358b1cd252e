//! steadfast-run's command line: mpiexec options, errors for bad input before anything
//! starts, `--with-ft no`, the exit-status policy, the ranks' environment, and a reader
//! that goes away (`| head`).

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steadfast-run"))
        .args(args)
        .output()
        .expect("start steadfast-run")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn an_unknown_flag_is_an_error_not_the_program() {
    let out = run(&["-n", "1", "--bogus", "/bin/echo", "RAN"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!text(&out.stdout).contains("RAN"));
    assert!(
        text(&out.stderr).contains("--bogus"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn too_many_ranks_or_another_host_is_refused_at_once() {
    let start = Instant::now();
    let out = run(&["-n", "100000", "/bin/true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("-n 100000"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["-np", "2", "--host", "elsewhere.invalid", "/bin/true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("elsewhere.invalid"));
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn mpiexec_options_are_accepted_and_reach_the_ranks() {
    let out = run(&[
        "-np",
        "2",
        "-host",
        "localhost",
        "--oversubscribe",
        "--allow-run-as-root",
        "--with-ft",
        "ulfm",
        "-initial-errhandler",
        "mpi_errors_return",
        "--tag-output",
        "/bin/sh",
        "-c",
        "echo EH=$STEADFAST_INITIAL_ERRHANDLER FT=$STEADFAST_WITH_FT IPATH=$IPATH_NO_BACKTRACE HFI=$HFI_NO_BACKTRACE",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    for r in 0..2 {
        assert!(
            stdout.contains(&format!("[{r}] EH=mpi_errors_return FT=ulfm IPATH=1 HFI=1")),
            "{stdout}"
        );
    }
}

/// Rank 1 kills itself; the others sleep `secs` then exit with `code`.
fn one_rank_dies(secs: u32, code: u32) -> String {
    format!("if [ $STEADFAST_RANK = 1 ]; then kill -9 $$; fi; sleep {secs}; exit {code}")
}

#[test]
fn with_ft_no_aborts_the_job_when_a_rank_dies() {
    let start = Instant::now();
    // `exec`: the sleeping rank is the process the launcher kills (a shell's child
    // would keep the output pipes open).
    let script = "if [ $STEADFAST_RANK = 1 ]; then kill -9 $$; fi; exec sleep 60";
    let out = run(&["-n", "3", "--with-ft", "no", "/bin/sh", "-c", script]);
    let err = text(&out.stderr);
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "the job was not aborted"
    );
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("rank 1: killed by signal 9 (SIGKILL)"),
        "{err}"
    );
}

#[test]
fn the_exit_status_policy_counts_survivors_only_when_asked() {
    let script = one_rank_dies(1, 0);
    let out = run(&["-n", "3", "/bin/sh", "-c", &script]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "default: a dead rank fails the job"
    );
    let out = run(&[
        "-n",
        "3",
        "--exit-status",
        "survivors",
        "/bin/sh",
        "-c",
        &script,
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("rank 1: killed by signal 9"),
        "still reported: {err}"
    );
    let out = run(&[
        "-n",
        "3",
        "--exit-status",
        "survivors",
        "/bin/sh",
        "-c",
        &one_rank_dies(1, 3),
    ]);
    assert_eq!(out.status.code(), Some(3));
}

/// ICLDisco/ulfm-testing's `run_tests.sh` judges `revoke` (a rank SIGKILLs itself) by
/// `mpiexec --with-ft mpi`'s status alone: naming the fault tolerance makes the
/// survivors' status the job's, as Open MPI's mpiexec; `--exit-status` still decides.
#[test]
fn with_ft_mpi_or_ulfm_counts_survivors_unless_told_otherwise() {
    let script = one_rank_dies(1, 0);
    for mode in ["mpi", "ulfm"] {
        let out = run(&["-n", "3", "--with-ft", mode, "/bin/sh", "-c", &script]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{mode}: {err}");
        assert!(err.contains("rank 1: killed by signal 9"), "{err}");
    }
    let out = run(&[
        "-n",
        "3",
        "--with-ft",
        "mpi",
        "--exit-status",
        "any-failure",
        "/bin/sh",
        "-c",
        &script,
    ]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn tag_output_into_a_closed_pipe_does_not_panic() {
    let mut launcher = Command::new(env!("CARGO_BIN_EXE_steadfast-run"))
        .args(["-n", "2", "--tag-output", "/bin/sh", "-c", "seq 1 10000000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start steadfast-run");
    let mut first = String::new();
    BufReader::new(launcher.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with('['), "{first}");
    // The reader (like `head`) is gone now.
    let start = Instant::now();
    let out = launcher.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(start.elapsed() < Duration::from_secs(60));
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(out.status.code(), Some(101), "{err}");
    assert!(
        out.status.code().is_some(),
        "the launcher died of a signal: {err}"
    );
}

#[test]
fn steadfast_info_refuses_an_unknown_argument() {
    let out = Command::new(env!("CARGO_BIN_EXE_steadfast-info"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--bogus"));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_misspelt_steadfast_variable_is_named_with_its_likely_meaning() {
    let out = Command::new(env!("CARGO_BIN_EXE_steadfast-run"))
        .args(["-n", "1", "/bin/true"])
        .env("STEADFAST_HEARTBEET_MS", "50")
        .output()
        .expect("start steadfast-run");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("steadfast-run: warning:")
            && err.contains("STEADFAST_HEARTBEET_MS")
            && err.contains("STEADFAST_HEARTBEAT_MS"),
        "{err}"
    );
    // A job without such variables says nothing of the kind.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.args(["-n", "1", "/bin/true"]);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("STEADFAST_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd.output().expect("start steadfast-run");
    assert!(
        !text(&out.stderr).contains("warning"),
        "{}",
        text(&out.stderr)
    );
}
