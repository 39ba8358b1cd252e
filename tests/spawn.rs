//! Spawning under steadfast-run (`docs/spawn.md`), through the Rust API: ranks started
//! with the job spawn children into spare slots of the universe and talk to them over
//! the inter-communicator; a job without spare slots refuses a spawn at once. No
//! process is left behind.

use std::process::Command;
use std::time::Duration;

/// Runs `steadfast-run -n N --universe U spawn-test-rank MODE MARKER`, killed past
/// 120 s: (status, stdout, stderr).
fn run(n: u32, universe: u32, mode: &str, marker: &str) -> (i32, String, String) {
    run_with(n, universe, &[], mode, marker)
}

/// As [`run`], with launcher options `opts`.
fn run_with(
    n: u32,
    universe: u32,
    opts: &[&str],
    mode: &str,
    marker: &str,
) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.args(["-n", &n.to_string(), "--universe", &universe.to_string()])
        .args(opts)
        .arg(env!("CARGO_BIN_EXE_spawn-test-rank"))
        .args([mode, marker]);
    steadfast_testsupport::run_limited(cmd, Duration::from_secs(120))
}

fn assert_no_orphans(marker: &str) {
    let left = steadfast_testsupport::processes_with(&["spawn-test-rank", marker]);
    assert!(left.is_empty(), "processes left: {left:?}");
}

#[test]
fn two_ranks_spawn_two_children_and_merge_with_them() {
    let marker = format!("spawn-{}", std::process::id());
    let (status, stdout, stderr) = run(2, 4, "spawn", &marker);
    assert_eq!(status, 0, "stdout {stdout}\nstderr {stderr}");
    for r in 0..2 {
        assert!(
            stdout.contains(&format!("rank {r}: RUST SPAWN PARENT OK")),
            "{stdout}\n{stderr}"
        );
        assert!(
            stdout.contains(&format!("child {r}: RUST SPAWN CHILD OK")),
            "{stdout}\n{stderr}"
        );
    }
    assert_no_orphans(&marker);
}

#[test]
fn a_spawn_without_spare_slots_is_an_error_at_every_parent() {
    let marker = format!("none-{}", std::process::id());
    let (status, stdout, stderr) = run(3, 3, "none", &marker);
    assert_eq!(status, 0, "stdout {stdout}\nstderr {stderr}");
    assert_eq!(stdout.matches("NO SLOT OK").count(), 3, "{stdout}");
    assert_no_orphans(&marker);
}

#[test]
fn two_spawns_at_once_from_disjoint_communicators_get_a_slot_each() {
    let marker = format!("pairs-{}", std::process::id());
    let (status, stdout, stderr) = run(4, 6, "pairs", &marker);
    assert_eq!(status, 0, "stdout {stdout}\nstderr {stderr}");
    assert_eq!(stdout.matches("PAIR OK").count(), 4, "{stdout}\n{stderr}");
    for p in 0..2 {
        assert!(
            stdout.contains(&format!("child of pair {p}: PAIR CHILD OK")),
            "{stdout}\n{stderr}"
        );
    }
    let mut slots: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split("spawned world rank ").nth(1))
        .collect();
    slots.sort_unstable();
    assert_eq!(slots, ["4", "5"], "{stdout}");
    assert_no_orphans(&marker);
}

#[test]
fn a_child_that_ends_before_joining_is_a_spawn_error_at_every_parent() {
    let marker = format!("dies-{}", std::process::id());
    let (status, stdout, stderr) = run(2, 3, "dies", &marker);
    // The child is a rank of the job that failed: the launcher says so.
    assert_eq!(status, 1, "stdout {stdout}\nstderr {stderr}");
    assert!(stderr.contains("rank 2: exited with status 3"), "{stderr}");
    assert_eq!(
        stdout.matches("DIED BEFORE JOINING OK").count(),
        2,
        "{stdout}\n{stderr}"
    );
    assert_no_orphans(&marker);
}

#[test]
fn a_spawned_command_gets_its_own_arguments_and_runs_again_when_restarted() {
    let marker = format!("command-{}", std::process::id());
    let opts = ["--exit-status", "survivors"];
    let (status, stdout, stderr) = run_with(2, 3, &opts, "command", &marker);
    assert_eq!(status, 0, "stdout {stdout}\nstderr {stderr}");
    assert_eq!(
        stdout.matches("RUST CMD PARENT OK").count(),
        2,
        "{stdout}\n{stderr}"
    );
    for g in [1, 2] {
        assert!(
            stdout.contains(&format!("command child: CMD CHILD OK generation {g}\n")),
            "{stdout}\n{stderr}"
        );
    }
    assert!(
        stdout.contains("rank 0: restarted world rank 2 as incarnation 2"),
        "{stdout}"
    );
    assert!(
        stderr.contains(
            "rank 2 incarnation 1 killed by signal 9 (SIGKILL); restarted as incarnation 2"
        ),
        "{stderr}"
    );
    assert_no_orphans(&marker);
}
