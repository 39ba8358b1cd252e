//! Restart in place under PMIx: Open MPI 4.1's `mpirun.openmpi --enable-recovery`
//! (ORTE's PMIx server keeps the job when a rank dies, spawns into it and serves the
//! data service the spawner uses: `src/bootstrap/pmix_spawn.rs`). Checked with
//! `restart-test-rank`: a rank SIGKILLed twice, restarted by two survivors at once,
//! answers each time and each restart starts one process; rank 0 likewise; a group
//! saved, its member restarted and rejoined; two ranks killed and restarted at once;
//! a restart whose new process exits before it joins fails naming why; and the
//! Master-Leader-Workers example survives a worker, a leader and the master killed,
//! every answer correct. After each run: mpirun's status 0, no rank panicked, no
//! process of the run (mpirun's included) and no `/dev/shm` segment left.
//!
//! Without `mpirun.openmpi` (apt-get install openmpi-bin) every test prints why it is
//! skipped and passes.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// `mpirun.openmpi`'s options for a job that outlives a rank's death, with the job id
/// every rank (and every restarted incarnation) must share.
const MPIRUN_FT: [&str; 5] = [
    "--allow-run-as-root",
    "--oversubscribe",
    "--enable-recovery",
    "-x",
    "STEADFAST_JOB_ID",
];

fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `restart-test-rank ARGS MARK` under `mpirun.openmpi --enable-recovery` with
/// `ranks` ranks; its stdout, after checking the exit status and that nothing is left.
/// `None`: mpirun is not installed (the test is skipped).
fn mpirun(test: &str, ranks: u32, args: &[&str]) -> Option<String> {
    mpirun_with(test, ranks, &[], args)
}

/// As [`mpirun`], with these variables set for every rank (`-x`).
fn mpirun_with(test: &str, ranks: u32, vars: &[(&str, &str)], args: &[&str]) -> Option<String> {
    if !installed("mpirun.openmpi") {
        println!("{test}: SKIPPED: mpirun.openmpi not installed (apt-get install openmpi-bin)");
        return None;
    }
    let mark = format!("pmix-{test}-{}", std::process::id());
    let mut cmd = Command::new("mpirun.openmpi");
    // The rank program prints its segments' names from the job id, which rank 0
    // adopts from here (mpirun passes it on with -x; a restarted process gets it from
    // its restarter's environment).
    // One job id per run: runs of this binary go on at once.
    static RUNS: AtomicU64 = AtomicU64::new(0);
    // ORDERING: Relaxed; only the value's uniqueness matters.
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    cmd.env(
        "STEADFAST_JOB_ID",
        format!(
            "{:016x}",
            0x5eed_0000_0000_0000 | (run << 32) | u64::from(std::process::id())
        ),
    )
    .envs(vars.iter().copied())
    .args(vars.iter().flat_map(|(k, _)| ["-x", k]))
    .args(MPIRUN_FT)
    .args([
        "-n",
        &ranks.to_string(),
        env!("CARGO_BIN_EXE_restart-test-rank"),
    ])
    .args(args)
    .arg(&mark);
    let (rc, stdout, stderr) = steadfast_testsupport::run_limited(cmd, LIMIT);
    let left = steadfast_testsupport::processes_with(&[&mark]);
    for p in &left {
        if let Some(pid) = p.split_whitespace().next().and_then(|p| p.parse().ok()) {
            // SAFETY: killing a process of this test's run that outlived it.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    let ctx = format!("{test}: status {rc}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    // With --enable-recovery, mpirun ends 0 even when a rank failed: the output
    // checks below and in each test are what tell.
    assert_eq!(rc, 0, "{ctx}");
    assert!(!stderr.contains("panicked"), "{ctx}");
    assert!(left.is_empty(), "processes left: {left:?}\n{ctx}");
    assert!(stdout.contains("LIBFABRIC"), "no rank started\n{ctx}");
    // Modes that print their segments' prefix (all but `pair`).
    if stdout.contains("SEGMENTS ") {
        let segments = steadfast_testsupport::segments_left(&stdout, "SEGMENTS ");
        assert!(segments.is_empty(), "segments left: {segments:?}\n{ctx}");
    }
    Some(stdout)
}

/// How many processes of the run initialised (each incarnation prints a `LIBFABRIC`
/// line after `World::init`).
fn incarnations(stdout: &str) -> usize {
    stdout
        .lines()
        .filter(|l| l.starts_with("LIBFABRIC"))
        .count()
}

fn answers(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.starts_with("ANSWERED"))
        .collect()
}

/// Checks a `restart VICTIM 2 2` run of 3 ranks.
fn check_twice(test: &str, victim: &str, out: &str) {
    let got = answers(out);
    println!("{test}: {got:?}");
    assert_eq!(got.len(), 2, "{out}");
    assert!(got[0].starts_with("ANSWERED generation 1 "), "{out}");
    assert!(got[1].starts_with("ANSWERED generation 2 "), "{out}");
    for g in 1..=2 {
        // The other asker's request completed too.
        assert_eq!(
            out.matches(&format!("RESTARTED generation {g} by rank"))
                .count(),
            1,
            "{out}"
        );
    }
    assert!(
        out.contains(&format!("RESTORED rank {victim} generation 2 done")),
        "{out}"
    );
    // One process per restart, although two survivors asked for each.
    assert_eq!(incarnations(out), 5, "{out}");
}

#[test]
fn a_rank_killed_twice_is_restarted_once_each_time_and_answers() {
    for victim in ["2", "0"] {
        let test = format!("twice-{victim}");
        // 3 ranks; the victim killed twice; both survivors ask each time.
        let Some(out) = mpirun(&test, 3, &["restart", victim, "2", "2"]) else {
            return;
        };
        check_twice(&test, victim, &out);
    }
}

#[test]
fn the_servers_process_table_alone_tells_the_survivors_of_each_end() {
    // No pidfd, no transport errors, heartbeats far too slow to matter: the deaths
    // (and the normal end of a restarted process the other asker admits late) are
    // learnt from the PMIx server's process table (`Bootstrap::failures`).
    let vars = [
        ("STEADFAST_DETECTORS", "launcher"),
        ("STEADFAST_DETECT_TIMEOUT_MS", "30000"),
    ];
    for i in 0..3 {
        let test = format!("launcher-{i}");
        let Some(out) = mpirun_with(&test, 3, &vars, &["restart", "2", "2", "2"]) else {
            return;
        };
        check_twice(&test, "2", &out);
    }
}

#[test]
fn a_saved_group_gets_its_restarted_member_back() {
    // 4 ranks: world ranks 1-3 form a group, rank 3 killed twice and rejoined.
    let Some(out) = mpirun("group", 4, &["group", "2"]) else {
        return;
    };
    for g in 1..=2 {
        assert!(
            out.contains(&format!("REJOINED generation {g} ")),
            "generation {g}: {out}"
        );
        assert_eq!(
            out.matches(&format!("AGREED generation {g} ")).count(),
            3,
            "{out}"
        );
    }
    assert_eq!(out.matches("SHRUNK size 3").count(), 3, "{out}");
    assert_eq!(incarnations(&out), 6, "{out}");
}

#[test]
fn the_world_communicator_is_saved_and_rejoined_by_a_rank_restarted_twice() {
    // 4 ranks save the world; rank 3 killed, restarted and rejoined twice; every rank
    // agrees and shrinks over the world each round, agrees at the end and finalizes.
    let Some(out) = mpirun("world", 4, &["world", "2", "1", "0"]) else {
        return;
    };
    for round in 1..=2 {
        assert!(
            out.contains(&format!(
                "WORLD REJOINED rank 3 generation {round} round {round} "
            )),
            "round {round}: {out}"
        );
        assert_eq!(
            out.matches(&format!("AGREED round {round} value 0xfffffffffffffff0"))
                .count(),
            4,
            "{out}"
        );
    }
    assert_eq!(out.matches("FINAL rank").count(), 4, "{out}");
    assert!(
        out.contains("FINAL rank 3 incarnation 2 value 0xff"),
        "{out}"
    );
    assert_eq!(incarnations(&out), 6, "{out}");
}

#[test]
fn two_ranks_killed_at_once_are_restarted_and_reach_each_other() {
    let Some(out) = mpirun("pair", 4, &["pair"]) else {
        return;
    };
    for r in [2, 3] {
        assert!(out.contains(&format!("PAIR ANSWERED rank {r}")), "{out}");
        assert!(out.contains(&format!("PAIR RESTORED rank {r}")), "{out}");
    }
    assert_eq!(incarnations(&out), 6, "{out}");
}

#[test]
fn a_restart_whose_process_exits_before_it_joins_fails_naming_why() {
    let Some(out) = mpirun("exits", 3, &["exits", "2"]) else {
        return;
    };
    let error = out
        .lines()
        .find(|l| l.starts_with("RESTART ERROR:"))
        .unwrap_or_else(|| panic!("{out}"));
    println!("exits: {error}");
    assert!(
        error.contains("incarnation 1 of rank 2 ended before it joined"),
        "{error}"
    );
}

/// The Master-Leader-Workers example (7 ranks, 400 queries) under mpirun, with world
/// rank `victim` SIGKILLed once it is serving: every answer correct (`MLW OK`), the
/// victim restarted once, nothing left.
fn mlw_survives(victim: u32) -> Option<()> {
    use std::io::{BufRead, BufReader};
    use std::sync::{Arc, Mutex};
    if !installed("mpirun.openmpi") {
        println!("mlw: SKIPPED: mpirun.openmpi not installed (apt-get install openmpi-bin)");
        return None;
    }
    steadfast_testsupport::cargo_build(
        env!("CARGO_MANIFEST_DIR"),
        &["--example", "master_leader_workers"],
    );
    // Under a name of this run's own, to find its processes (and only them) after.
    let mark = format!("mlw-pmix-{}-{victim}", std::process::id());
    let example = std::env::temp_dir().join(&mark);
    let _ = std::fs::remove_file(&example);
    std::os::unix::fs::symlink(
        steadfast_testsupport::profile_dir().join("examples/master_leader_workers"),
        &example,
    )
    .expect("link the example");
    let mut cmd = Command::new("mpirun.openmpi");
    cmd.env(
        "STEADFAST_JOB_ID",
        format!(
            "{:016x}",
            0x5eee_0000_0000_0000 | u64::from(std::process::id()) << 8 | u64::from(victim)
        ),
    )
    .args(MPIRUN_FT)
    .args(["-n", "7"])
    .arg(&example)
    .args(["--queries", "400", "--pace-ms", "10"])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    steadfast_os::DieWithParent::die_with_parent(&mut cmd);
    let mut child = cmd.spawn().expect("start mpirun");
    let out = Arc::new(Mutex::new(String::new()));
    let reader = {
        let out = out.clone();
        let stdout = child.stdout.take().expect("piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut o = out.lock().unwrap();
                o.push_str(&line);
                o.push('\n');
            }
        })
    };
    let mut stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let start = std::time::Instant::now();
    let pid_line = format!("MLW PID rank {victim} generation 0 pid ");
    let mut killed = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st.code().unwrap_or(-1);
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break -2;
        }
        if !killed {
            let pid = out.lock().unwrap().lines().find_map(|l| {
                l.strip_prefix(&pid_line)
                    .and_then(|p| p.trim().parse::<i32>().ok())
            });
            if let Some(pid) = pid {
                // Serving for a while first (the queries are paced).
                std::thread::sleep(Duration::from_millis(300));
                // SAFETY: a signal to the rank process this run started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                killed = true;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = reader.join();
    let stderr = err_reader.join().unwrap_or_default();
    let _ = std::fs::remove_file(&example);
    let out = out.lock().unwrap().clone();
    let left = steadfast_testsupport::processes_with(&[&mark]);
    let ctx = format!("mlw kill {victim}: status {status}\nstdout:\n{out}\nstderr:\n{stderr}");
    assert!(killed, "{ctx}");
    assert_eq!(status, 0, "{ctx}");
    assert!(left.is_empty(), "processes left: {left:?}\n{ctx}");
    assert!(out.contains("MLW OK answers=400"), "{ctx}");
    assert!(
        out.contains(&format!("MLW PID rank {victim} generation 1 ")),
        "{ctx}"
    );
    assert!(
        !out.contains(&format!("rank {victim} generation 2 ")),
        "{ctx}"
    );
    let segments = steadfast_testsupport::segments_left(&out, "MLW SEGMENTS ");
    assert!(segments.is_empty(), "segments left: {segments:?}\n{ctx}");
    Some(())
}

#[test]
fn the_master_leader_workers_scenario_survives_a_worker_a_leader_and_the_master_killed() {
    // A worker of group 0 (world ranks 1-3: leader 1), a leader, the master.
    for victim in [3, 4, 0] {
        if mlw_survives(victim).is_none() {
            return;
        }
    }
}
