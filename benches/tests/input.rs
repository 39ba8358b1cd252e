//! Bad input and a peer's death (issue 21): every error is one line on stderr and a
//! nonzero exit, never a panic, an abort or a silently changed value.

mod common;

use std::io::Read;
use std::time::Duration;

use common::{alone, bench, first_bytes, rank_pid, spawn, wait_for};

/// The one line of `err` from steadfast-bench (launcher lines aside), asserted to be
/// the only one and free of panics.
fn one_line(err: &str) -> &str {
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("steadfast-bench: "))
        .collect();
    assert!(!lines.is_empty(), "no error line: {err}");
    assert!(
        lines.iter().all(|l| *l == lines[0]),
        "different lines: {err}"
    );
    lines[0]
}

#[test]
fn flags_out_of_range_are_one_line_naming_value_and_bound() {
    for (args, expected) in [
        (&["latency", "--min", "1024", "--max", "8"][..], "--min 1024 is above --max 8"),
        (
            &["latency", "--max", "1099511627776"],
            "--max 1099511627776: expected 0 to 1073741824",
        ),
        (&["bw", "--iterations", "0"], "--iterations 0: expected 1 to 1000000000"),
        (&["agree", "--repetitions", "0"], "--repetitions 0: expected 1 to 10000"),
        (
            &["latency", "--warmup", "1000000001"],
            "--warmup 1000000001: expected 0 to 1000000000",
        ),
        (&["bw", "--min", "0"], "--min 0: bw measures from 1 B"),
        (
            &["allreduce", "--max", "1048576"],
            "--max 1048576: allreduce measures at most 524288 B (the most values one allreduce takes)",
        ),
        (&["mbw_mr", "--min", "4194304"], "--min 4194304 is above the default --max 1048576"),
        (&["latency", "--iterations", "-1"], "unexpected argument '-1' found"),
        (&["latency", "--route", "carrier-pigeon"], "--route \"carrier-pigeon\": expected auto, shm or fabric"),
    ] {
        let (code, out, err) = alone(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        let line = one_line(&err);
        assert!(
            line.starts_with(&format!("steadfast-bench: {expected}")),
            "{args:?}: {line}"
        );
    }
}

/// The same check under the launcher: each rank says it once and the job fails
/// without a table.
#[test]
fn crossed_range_under_the_launcher_prints_no_table() {
    let (code, out, err) = bench(2, &["latency", "--min", "1024", "--max", "8"], &[]);
    assert_ne!(code, Some(0));
    assert!(out.is_empty(), "{out}");
    assert_eq!(
        one_line(&err),
        "steadfast-bench: --min 1024 is above --max 8"
    );
}

/// A buffer that cannot be had is an error line, not an abort: the address space is
/// limited below the 1 GiB `--max` asks for.
#[test]
fn allocation_failure_is_an_error_line() {
    let mut cmd = common::under_launcher(
        2,
        &[
            "latency",
            "--min",
            "1073741824",
            "--max",
            "1073741824",
            "--iterations",
            "1",
            "--repetitions",
            "1",
        ],
        &[],
    );
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 900 << 20,
                rlim_max: 900 << 20,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let out = cmd.output().expect("start steadfast-run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation of"),
        "{err}"
    );
    assert!(
        err.lines().any(|l| l.starts_with("steadfast-bench: rank 0: cannot allocate 1073741824 bytes for messages of --max 1073741824")),
        "{err}"
    );
}

/// SIGKILL of rank 1 while `args` runs (for ever, at one size): rank 0 reports the
/// failure as one line naming itself and the dead rank, and the job fails; no panic.
fn peer_death_is_an_error_line(args: &[&str], env: &[(&str, &str)], expected: &str) {
    let mut job = spawn(2, args, env);
    // Rank 0 prints the table's header once the world is up and the run begins.
    let head = first_bytes(&mut job, 24, Duration::from_secs(60)).expect("the table's header");
    assert!(head.starts_with(b"# steadfast-bench"), "{head:?}");
    std::thread::sleep(Duration::from_millis(300));
    let victim = rank_pid(job.0.id(), 1, Duration::from_secs(10)).expect("rank 1's pid");
    // SAFETY: a signal to a process of this test's job.
    unsafe { libc::kill(victim, libc::SIGKILL) };
    let code = wait_for(&mut job, Duration::from_secs(60)).expect("the job ends after the kill");
    let mut err = String::new();
    job.0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(code, Some(1), "{err}");
    let line = one_line(&err);
    assert!(
        line.starts_with(&format!("steadfast-bench: rank 0: {expected}")),
        "{line}"
    );
    assert!(line.contains("process failed: ranks [1]"), "{line}");
}

#[test]
fn peer_death_during_latency_over_tcp_is_reported() {
    peer_death_is_an_error_line(
        &[
            "latency",
            "--route",
            "fabric",
            "--min",
            "8",
            "--max",
            "8",
            "--iterations",
            "1000000000",
            "--repetitions",
            "1",
        ],
        &[("STEADFAST_PROVIDER", "tcp")],
        "latency at 8 B: ",
    );
}

#[test]
fn peer_death_during_latency_is_reported() {
    peer_death_is_an_error_line(
        &[
            "latency",
            "--min",
            "8",
            "--max",
            "8",
            "--iterations",
            "1000000000",
            "--repetitions",
            "1",
        ],
        &[],
        "latency at 8 B: ",
    );
}

#[test]
fn peer_death_during_bandwidth_is_reported() {
    peer_death_is_an_error_line(
        &[
            "bw",
            "--min",
            "4096",
            "--max",
            "4096",
            "--iterations",
            "1000000000",
            "--repetitions",
            "1",
        ],
        &[],
        "",
    );
}

#[test]
fn peer_death_during_message_rate_is_reported() {
    peer_death_is_an_error_line(
        &[
            "mbw_mr",
            "--min",
            "64",
            "--max",
            "64",
            "--iterations",
            "1000000000",
            "--repetitions",
            "1",
            "--warmup",
            "0",
        ],
        &[],
        "",
    );
}

/// The table's reader goes away (`steadfast-bench ... | head`): an error line and a
/// failed job, not a panic on the broken pipe.
#[test]
fn closed_stdout_is_an_error_line() {
    let mut job = spawn(
        2,
        &[
            "latency",
            "--max",
            "65536",
            "--iterations",
            "2000",
            "--repetitions",
            "1",
        ],
        &[],
    );
    let mut stdout = job.0.stdout.take().expect("piped stdout");
    let mut head = [0u8; 24];
    stdout.read_exact(&mut head).expect("the table's header");
    drop(stdout);
    let code = wait_for(&mut job, Duration::from_secs(60)).expect("the job ends");
    let mut err = String::new();
    job.0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(code, Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("steadfast-bench: writing the results: Broken pipe")),
        "{err}"
    );
}

#[test]
fn peer_death_during_put_is_reported() {
    peer_death_is_an_error_line(
        &[
            "put",
            "--min",
            "8",
            "--max",
            "8",
            "--iterations",
            "1000000000",
            "--repetitions",
            "1",
        ],
        &[],
        "put of 8 B into rank 1: ",
    );
}

#[test]
fn peer_death_during_allreduce_is_reported() {
    peer_death_is_an_error_line(
        &[
            "allreduce",
            "--min",
            "8",
            "--max",
            "8",
            "--iterations",
            "1000000000",
            "--repetitions",
            "1",
        ],
        &[],
        "allreduce of 8 B: ",
    );
}
