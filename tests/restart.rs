//! Restart in place under steadfast-run, at the bootstrap level (real processes,
//! SIGKILL): a survivor asks the launcher to restart a dead rank, the new incarnation
//! joins the surviving job with the next generation and its old rank, two askers get
//! one process, a restarted rank killed again is restarted again, a program that exits
//! during its restart is a clear error, and no process is left behind; then the same at
//! the world and communicator levels, over shared memory and over tcp (`OVER_TCP`).

use std::process::{Command, Output};
use std::time::{Duration, Instant};
use steadfast_os::DieWithParent;

/// Runs `steadfast-run -n N --tag-output bootstrap-test-rank ARGS`, killed past 120 s.
fn run(n: u32, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.args(["-n", &n.to_string(), "--tag-output"])
        .arg(env!("CARGO_BIN_EXE_bootstrap-test-rank"))
        .args(args);
    run_cmd(cmd)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An argument that tells this run's processes apart from any other's (the test binary
/// may run beside another copy of itself). `assert_no_rank_left` looks for it as a
/// substring of the command line: no name is the end of another one (with "tcp-world"
/// beside "world", the shm test saw the tcp test's ranks as its own left over).
fn marker(name: &str) -> String {
    format!("{name}-{}", std::process::id())
}

/// No process of this test's rank program is left (every incarnation was reaped).
fn assert_no_orphans(marker: &str) {
    let left = steadfast_testsupport::processes_with(&["bootstrap-test-rank", marker]);
    assert!(left.is_empty(), "processes left: {left:?}");
}

#[test]
fn a_killed_rank_is_restarted_with_its_rank_and_the_next_generation() {
    let out = run(3, &["restart", "2", "1", "1", &marker("single")]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    assert!(
        stdout.contains("rank 0 restarted rank 2 as incarnation 1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[2] rank 2 incarnation 1: joined and acknowledged"),
        "{stdout}"
    );
    assert!(
        stderr.contains(
            "rank 2 incarnation 0 killed by signal 9 (SIGKILL); restarted as incarnation 1"
        ),
        "{stderr}"
    );
    assert_no_orphans(&marker("single"));
}

#[test]
fn a_restarted_rank_killed_again_is_restarted_again() {
    let out = run(3, &["restart", "1", "3", "1", &marker("thrice")]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    for g in 1..=3 {
        assert!(
            stdout.contains(&format!("rank 0 restarted rank 1 as incarnation {g}")),
            "{stdout}"
        );
    }
    assert!(
        stdout.contains("rank 1 incarnation 3: joined and acknowledged"),
        "{stdout}"
    );
    assert_no_orphans(&marker("thrice"));
}

#[test]
fn two_survivors_restarting_one_rank_at_once_start_one_process() {
    let out = run(4, &["restart", "3", "2", "3", &marker("together")]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    for g in 1..=2 {
        // Every asker got the same incarnation and the same process.
        let pids: Vec<&str> = stdout
            .lines()
            .filter(|l| l.contains(&format!("restarted rank 3 as incarnation {g} pid")))
            .map(|l| l.split(" pid ").nth(1).unwrap().split(' ').next().unwrap())
            .collect();
        assert_eq!(pids.len(), 3, "{stdout}");
        assert!(pids.iter().all(|p| *p == pids[0] && *p != "0"), "{stdout}");
        let starts = stderr
            .matches(&format!("restarted as incarnation {g}"))
            .count();
        assert_eq!(starts, 1, "{stderr}");
    }
    assert_no_orphans(&marker("together"));
}

#[test]
fn a_program_that_exits_during_its_restart_is_a_clear_error() {
    let out = run(2, &["restart-exits", "1", &marker("exits")]);
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains(
            "rank 0: restart error: restart of rank 1 failed: incarnation 1 of rank 1 exited with status 3 before it joined"
        ),
        "stdout {stdout}\nstderr {stderr}"
    );
    // The last incarnation of rank 1 failed: the job did.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_no_orphans(&marker("exits"));
}

/// Runs `steadfast-run -n N --tag-output restart-test-rank ARGS` with `env`.
fn run_world(n: u32, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.args(["-n", &n.to_string(), "--tag-output"])
        .arg(env!("CARGO_BIN_EXE_restart-test-rank"))
        .args(args)
        .envs(env.iter().copied());
    run_cmd(cmd)
}

/// Runs a prepared launcher command, killed past 120 s.
fn run_cmd(mut cmd: Command) -> Output {
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .die_with_parent();
    let child = cmd.spawn().expect("start steadfast-run");
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(120);
    let watchdog = std::thread::spawn(move || {
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            // SAFETY: signal 0 only asks whether the process exists.
            if unsafe { libc::kill(pid as i32, 0) } != 0 {
                return;
            }
        }
        // SAFETY: killing the launcher we started; its ranks die with it.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let out = child.wait_with_output().expect("wait for steadfast-run");
    let _ = watchdog.join();
    out
}

/// No shared-memory segment of the job (named by rank 0's `SEGMENTS` line) is left.
fn assert_no_segments(stdout: &str) {
    let left = steadfast_testsupport::segments_left(stdout, "SEGMENTS ");
    assert!(left.is_empty(), "segments left: {left:?}");
}

/// The processes of one run of restart-test-rank, told apart by a marker argument.
fn assert_no_rank_left(marker: &str) {
    let left = steadfast_testsupport::processes_with(&["restart-test-rank", marker]);
    assert!(left.is_empty(), "processes left: {left:?}");
}

#[test]
fn a_restarted_rank_has_its_rank_and_answers_its_restarter_over_shm() {
    // A libfabric that cannot be loaded does not matter to a job over shared memory.
    let env = [("STEADFAST_LIBFABRIC", "/nonexistent/libfabric.so.1")];
    let out = run_world(3, &env, &["restart", "2", "1", "1", &marker("world-once")]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    assert!(stdout.contains("[0] ANSWERED generation 1 in"), "{stdout}");
    assert!(
        stdout.contains("[2] RESTORED rank 2 generation 1 done"),
        "{stdout}"
    );
    // A job over shared memory never loads libfabric: every incarnation (the three
    // first ones and the restarted one) says so.
    assert_eq!(
        stdout.matches("LIBFABRIC not mapped").count(),
        4,
        "{stdout}"
    );
    assert!(!stdout.contains("LIBFABRIC mapped"), "{stdout}");
    assert!(
        stderr.contains(
            "rank 2 incarnation 0 killed by signal 9 (SIGKILL); restarted as incarnation 1"
        ),
        "{stderr}"
    );
    assert_no_segments(&stdout);
    assert_no_rank_left(&marker("world-once"));
}

/// `restart 3 2 2` at 4 ranks (rank 3 killed twice, ranks 0 and 1 restarting it at
/// once): each generation answered, one process started per generation, the last one
/// done; no process left.
fn restarted_twice_by_two_survivors(env: &[(&str, &str)], name: &str) -> String {
    let out = run_world(4, env, &["restart", "3", "2", "2", &marker(name)]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    for g in 1..=2 {
        assert!(
            stdout.contains(&format!("[0] ANSWERED generation {g} in")),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("[1] RESTARTED generation {g} by rank 1")),
            "{stdout}"
        );
        let starts = stderr
            .matches(&format!("restarted as incarnation {g}"))
            .count();
        assert_eq!(starts, 1, "{stderr}");
    }
    assert!(
        stdout.contains("[3] RESTORED rank 3 generation 2 done"),
        "{stdout}"
    );
    assert_no_rank_left(&marker(name));
    stdout
}

#[test]
fn a_rank_restarted_twice_by_two_survivors_at_once_starts_one_process_each_time() {
    let stdout = restarted_twice_by_two_survivors(&[], "world-twice");
    assert_no_segments(&stdout);
}

#[test]
fn a_program_that_exits_during_its_restart_is_a_restart_error() {
    let out = run_world(2, &[], &["exits", "1", &marker("world-exits")]);
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains(
            "[0] RESTART ERROR: restart failed: restart of rank 1 failed: incarnation 1 of rank 1 exited with status 3 before it joined"
        ),
        "stdout {stdout}\nstderr {stderr}"
    );
    assert_no_segments(&stdout);
    assert_no_rank_left(&marker("world-exits"));
}

/// The environment of a job whose ranks all talk over libfabric's tcp provider (one
/// host, but the fabric route forced).
const OVER_TCP: [(&str, &str); 2] = [("STEADFAST_ROUTE", "fabric"), ("STEADFAST_PROVIDER", "tcp")];

#[test]
fn a_restarted_rank_answers_its_restarter_over_tcp() {
    let out = run_world(
        3,
        &OVER_TCP,
        &["restart", "2", "1", "1", &marker("tcp-once")],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    // The answer is checked by the restarter: the new incarnation's, never one of the
    // two messages the dead one left with the same tag (fencing).
    assert!(stdout.contains("[0] ANSWERED generation 1 in"), "{stdout}");
    assert!(
        stdout.contains("[2] RESTORED rank 2 generation 1 done"),
        "{stdout}"
    );
    // Every incarnation, the restarted one included, went through libfabric.
    assert_eq!(stdout.matches("LIBFABRIC mapped").count(), 4, "{stdout}");
    assert!(
        stderr.contains(
            "rank 2 incarnation 0 killed by signal 9 (SIGKILL); restarted as incarnation 1"
        ),
        "{stderr}"
    );
    assert_no_rank_left(&marker("tcp-once"));
}

#[test]
fn over_tcp_a_rank_restarted_twice_by_two_survivors_at_once_answers_each_time() {
    // Generation 2 has generation 0's tag bit: what generation 0 left must have been
    // drained, or the answer would be one of its messages.
    restarted_twice_by_two_survivors(&OVER_TCP, "tcp-twice");
}

#[test]
fn two_ranks_killed_and_restarted_at_once_reach_each_other() {
    // Each new incarnation may start before or after the other joined: whichever way,
    // each must be admitted by the other before it pushes into its ring (admitted at
    // start when it knows the other at its new incarnation already), and neither may
    // wait for that inside a send (it used to: both waited for each other).
    two_ranks_restarted_at_once(&[], "shm-pair");
}

#[test]
fn over_tcp_two_ranks_killed_and_restarted_at_once_reach_each_other() {
    // Over the fabric, each is admitted by the other with `Messenger::admit`. A
    // survivor whose own restart is not answered yet admits the other one only after
    // that answer: a launcher lookup before it blocked the survivor, and with it the new
    // incarnation sending it its `Admit` at start (neither joined in 60 s).
    two_ranks_restarted_at_once(&OVER_TCP, "tcp-pair");
}

/// The `pair` mode: ranks 2 and 3 killed together and restarted at once by 0 and 1.
fn two_ranks_restarted_at_once(env: &[(&str, &str)], name: &str) {
    let out = run_world(4, env, &["pair", &marker(name)]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    for r in 2..4 {
        assert!(
            stdout.contains(&format!("[0] PAIR ANSWERED rank {r}")),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("[{r}] PAIR RESTORED rank {r}")),
            "{stdout}"
        );
        assert!(
            stderr.contains(&format!(
                "rank {r} incarnation 0 killed by signal 9 (SIGKILL); restarted as incarnation 1"
            )),
            "{stderr}"
        );
    }
    assert_no_rank_left(&marker(name));
}

/// Runs `steadfast-run -n N --no-kill --tag-output restart-test-rank ARGS` with `env`.
fn run_world_no_kill(n: u32, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.args(["-n", &n.to_string(), "--no-kill", "--tag-output"])
        .arg(env!("CARGO_BIN_EXE_restart-test-rank"))
        .args(args)
        .envs(env.iter().copied());
    run_cmd(cmd)
}

/// `group 2` on 4 ranks in environment `env`: world rank 3 killed, restarted and
/// rejoined twice; agreements, revoke and shrink over the group.
fn group_rejoined_twice(env: &[(&str, &str)], name: &str) {
    let out = run_world(4, env, &["group", "2", &marker(name)]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    for g in 1..=2 {
        // The three members of the group, the restarted one included, agree.
        for w in 1..=3 {
            assert!(
                stdout.contains(&format!(
                    "[{w}] AGREED generation {g} value 0xfffffffffffffff8"
                )),
                "rank {w} generation {g}: {stdout}\n{stderr}"
            );
        }
    }
    for w in 1..=3 {
        let incarnation = if w == 3 { 2 } else { 0 };
        assert!(
            stdout.contains(&format!(
                "[{w}] SHRUNK size 3 agreed 5 (world rank {w} incarnation {incarnation})"
            )),
            "{stdout}"
        );
    }
    assert!(
        stderr.contains(
            "rank 3 incarnation 1 killed by signal 9 (SIGKILL); restarted as incarnation 2"
        ),
        "{stderr}"
    );
    assert_no_segments(&stdout);
    assert_no_rank_left(&marker(name));
}

#[test]
fn a_saved_group_is_rejoined_by_its_restarted_member_twice_and_agrees_revokes_and_shrinks() {
    group_rejoined_twice(&[], "group");
}

#[test]
fn over_tcp_a_saved_group_is_rejoined_twice_and_agrees_revokes_and_shrinks() {
    group_rejoined_twice(&OVER_TCP, "gtcp");
}

#[test]
fn a_saved_pair_is_rejoined_through_the_two_party_agreement() {
    let out = run_world(3, &[], &["group", "1", &marker("gpair")]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    for w in 1..=2 {
        assert!(
            stdout.contains(&format!(
                "[{w}] AGREED generation 1 value 0xfffffffffffffffc"
            )),
            "{stdout}"
        );
    }
    assert!(
        stdout.contains("[2] SHRUNK size 2 agreed 5 (world rank 2 incarnation 1)"),
        "{stdout}"
    );
    assert_no_segments(&stdout);
    assert_no_rank_left(&marker("gpair"));
}

#[test]
fn aborting_a_group_of_two_leaves_the_other_two_able_to_shrink_and_agree() {
    let out = run_world_no_kill(4, &[], &["abort", &marker("abort")]);
    let (stdout, stderr) = text(&out);
    for w in 0..2 {
        assert!(
            stdout.contains(&format!("[{w}] SURVIVED rank {w} size 2 agreed 3")),
            "stdout {stdout}\nstderr {stderr}"
        );
    }
    assert!(stderr.contains("rank 2: exited with status 7"), "{stderr}");
    assert!(stderr.contains("rank 3: killed by signal 9"), "{stderr}");
    assert_no_segments(&stdout);
    assert_no_rank_left(&marker("abort"));
}

#[test]
fn over_the_fabric_route_a_missing_libfabric_is_an_init_error_naming_it() {
    let env = [
        ("STEADFAST_ROUTE", "fabric"),
        ("STEADFAST_PROVIDER", "tcp"),
        ("STEADFAST_LIBFABRIC", "/nonexistent/libfabric.so.1"),
    ];
    let out = run_world(
        2,
        &env,
        &["restart", "1", "1", "1", &marker("no-libfabric")],
    );
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "stdout {stdout}\nstderr {stderr}");
    assert!(
        stderr.contains("libfabric could not be loaded")
            && stderr.contains("/nonexistent/libfabric.so.1"),
        "stdout {stdout}\nstderr {stderr}"
    );
    assert_no_rank_left(&marker("no-libfabric"));
}

/// `world 2 VICTIMS ROTATE` on 4 ranks in environment `env`: the world communicator
/// saved; in each of two rounds VICTIMS ranks (the last ones; with `rotate` rank 3,
/// then rank 2, which the rejoined rank 3 readmits as a survivor) killed, restarted,
/// readmitted on the world and rejoined; every rank agrees and shrinks over the world
/// each round, agrees at the end and finalizes.
fn world_rejoined_twice(env: &[(&str, &str)], victims: u32, rotate: bool, name: &str) {
    let args = [
        "world",
        "2",
        &victims.to_string(),
        if rotate { "1" } else { "0" },
        &marker(name),
    ];
    let out = run_world_no_kill(4, env, &args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    for round in 1..=2 {
        for w in 0..4 {
            for line in [
                format!("[{w}] AGREED round {round} value 0xfffffffffffffff0"),
                format!("[{w}] SHRUNK round {round} size 4 agreed {}", round + 1),
            ] {
                assert!(stdout.contains(&line), "{line}: {stdout}\n{stderr}");
            }
        }
    }
    // (rank, incarnation, round) of every rejoin, and each rank's last incarnation.
    let (rejoins, last): (Vec<(u32, u32, u32)>, [u32; 4]) = match (victims, rotate) {
        (1, false) => (vec![(3, 1, 1), (3, 2, 2)], [0, 0, 0, 2]),
        (2, false) => (
            vec![(2, 1, 1), (3, 1, 1), (2, 2, 2), (3, 2, 2)],
            [0, 0, 2, 2],
        ),
        (1, true) => (vec![(3, 1, 1), (2, 1, 2)], [0, 0, 1, 1]),
        other => panic!("no expectations for {other:?}"),
    };
    for (w, g, round) in rejoins {
        let line = format!("[{w}] WORLD REJOINED rank {w} generation {g} round {round}");
        assert!(stdout.contains(&line), "{line}: {stdout}\n{stderr}");
        let line = format!(
            "rank {w} incarnation {} killed by signal 9 (SIGKILL); restarted as incarnation {g}",
            g - 1
        );
        assert!(stderr.contains(&line), "{line}: {stderr}");
    }
    for (w, incarnation) in last.iter().enumerate() {
        let line = format!("[{w}] FINAL rank {w} incarnation {incarnation} value 0xff");
        assert!(stdout.contains(&line), "{line}: {stdout}\n{stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_no_segments(&stdout);
    assert_no_rank_left(&marker(name));
}

#[test]
fn the_world_communicator_is_saved_and_rejoined_by_a_rank_restarted_twice() {
    world_rejoined_twice(&[], 1, false, "wsave");
}

#[test]
fn the_world_communicator_is_rejoined_by_two_ranks_restarted_at_once_twice() {
    world_rejoined_twice(&[], 2, false, "wpair");
}

#[test]
fn a_rank_that_rejoined_the_world_readmits_the_next_restarted_one() {
    world_rejoined_twice(&[], 1, true, "wrotate");
}

#[test]
fn over_tcp_the_world_communicator_is_saved_and_rejoined_by_a_rank_restarted_twice() {
    world_rejoined_twice(&OVER_TCP, 1, false, "wtcp");
}
