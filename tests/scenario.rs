//! The Master-Leader-Workers example (`examples/master_leader_workers.rs`) under
//! `steadfast-run --no-kill` with 7 ranks (a master, 2 groups of 3) while this test
//! SIGKILLs ranks at random times: a worker, a leader, two non-master ranks at once, a
//! leader and one of its workers at once, a rank and then its restarted incarnation, a
//! whole group, the master, the master and a worker, a rank during its own restart
//! (killed as soon as its new process starts).
//! Every run must end with every answer checked correct by the master (`MLW OK`),
//! exactly one restart per kill in the launcher's summary, exit status 0 (every rank's
//! last incarnation ended well), no process and no `/dev/shm` segment of the job left.
//! The seed of each run is printed (and named on failure).

mod mlw_job;

use mlw_job::{Job, Running};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

const RANKS: u32 = 7;
const QUERIES: u64 = 400;
const RUNS: u64 = 20;

/// `target/<profile>/examples/<name>`, which `cargo test` builds with the tests.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>");
    let path = dir.join("examples").join(name);
    assert!(path.exists(), "{} is missing", path.display());
    path
}

/// xorshift64*: the whole kill schedule of a run comes from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pause(&mut self, max_ms: u64) -> Duration {
        Duration::from_millis(self.below(max_ms + 1))
    }
}

/// What one run kills (world ranks; 1 and 4 lead the two groups).
#[derive(Debug, Clone, Copy)]
enum Pattern {
    Worker,
    Leader,
    TwoAtOnce,
    LeaderAndItsWorker,
    AgainAfterRestart,
    /// A leader and both its workers at once.
    WholeGroup,
    Master,
    MasterAndWorker,
    /// A non-master rank, then its new process as soon as it starts (before or just
    /// after it joins).
    DuringRestart,
    /// These two world ranks at once, this many ms after every rank started.
    Pair(u32, u32, u64),
    /// This world rank, this many ms after every rank started.
    One(u32, u64),
}

impl Pattern {
    const ROTATION: [Pattern; 9] = [
        Pattern::Worker,
        Pattern::Leader,
        Pattern::TwoAtOnce,
        Pattern::LeaderAndItsWorker,
        Pattern::AgainAfterRestart,
        Pattern::WholeGroup,
        Pattern::Master,
        Pattern::MasterAndWorker,
        Pattern::DuringRestart,
    ];

    fn of_run(k: u64) -> Pattern {
        Self::ROTATION[(k % Self::ROTATION.len() as u64) as usize]
    }
}

/// The kills of one run; how many processes were killed (`Err` when the run stopped
/// before all its kills: too short a run for this machine).
fn inject(job: &mut Job, pattern: Pattern, rng: &mut Rng) -> Result<usize, String> {
    let limit = Instant::now() + Duration::from_secs(60);
    if !job.started(limit) {
        return Err("not every rank started".into());
    }
    let worker = |rng: &mut Rng| [2, 3, 5, 6][rng.below(4) as usize];
    let leader = |rng: &mut Rng| [1, 4][rng.below(2) as usize];
    let pause = match pattern {
        Pattern::Pair(_, _, ms) | Pattern::One(_, ms) => Duration::from_millis(ms),
        _ => rng.pause(500),
    };
    std::thread::sleep(pause);
    let ranks: Vec<u32> = match pattern {
        Pattern::Worker | Pattern::AgainAfterRestart => vec![worker(rng)],
        Pattern::Leader => vec![leader(rng)],
        Pattern::WholeGroup => {
            let l = leader(rng);
            vec![l, l + 1, l + 2]
        }
        Pattern::Master => vec![0],
        Pattern::MasterAndWorker => vec![0, worker(rng)],
        Pattern::DuringRestart => vec![rng.below(7) as u32],
        Pattern::TwoAtOnce => {
            let a = 1 + rng.below(6) as u32;
            let b = 1 + (a + rng.below(5) as u32) % 6;
            vec![a, b]
        }
        Pattern::LeaderAndItsWorker => {
            let l = leader(rng);
            vec![l, l + 1 + rng.below(2) as u32]
        }
        Pattern::Pair(a, b, _) => vec![a, b],
        Pattern::One(a, _) => vec![a],
    };
    let gens = job.kill(&ranks).ok_or("stopped before the first kill")?;
    if let Pattern::DuringRestart = pattern {
        let r = ranks[0];
        if !job.kill_when_starting(r, gens[0], limit) {
            return Err(format!(
                "rank {r}'s new process was not killed as it started"
            ));
        }
        return Ok(2);
    }
    if let Pattern::AgainAfterRestart = pattern {
        let r = ranks[0];
        if !job.restarted(r, gens[0], limit) {
            return Err(format!("rank {r} was never restarted"));
        }
        std::thread::sleep(rng.pause(300));
        job.kill(&[r]).ok_or("stopped before the second kill")?;
        return Ok(2);
    }
    Ok(ranks.len())
}

/// One run: the job under `pattern`'s kills; panics naming the seed on any failure.
fn run_once(k: u64, pattern: Pattern, seed: u64, marker: &str) {
    run_with(k, pattern, seed, marker, &[], 0);
}

/// As [`run_once`], the example given `extra` arguments too; `self_kills`: restarted
/// processes that SIGKILL themselves (`--kill-restart-of`), each one more restart in
/// the launcher's summary.
fn run_with(k: u64, pattern: Pattern, seed: u64, marker: &str, extra: &[&str], self_kills: usize) {
    run_routed(k, pattern, seed, marker, extra, self_kills, None);
}

/// As [`run_with`]; `route` forces the runtime's path between ranks
/// (`STEADFAST_ROUTE`: `fabric` runs every message over tcp on this one host).
fn run_routed(
    k: u64,
    pattern: Pattern,
    seed: u64,
    marker: &str,
    extra: &[&str],
    self_kills: usize,
    route: Option<&str>,
) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    if let Some(r) = route {
        cmd.env("STEADFAST_ROUTE", r);
    }
    cmd.args(["-n", &RANKS.to_string(), "--no-kill", "--tag-output"])
        .arg(example("master_leader_workers"))
        .args(["--queries", &QUERIES.to_string(), "--pace-ms", "10", marker])
        .args(extra);
    let mut run = Running::start(cmd, RANKS as usize);
    let job = &mut run.job;
    let mut rng = Rng(seed | 1);
    let injected = inject(job, pattern, &mut rng);
    let (status, out, err) = run.finish(Duration::from_secs(90));
    let out = &out;
    let what = format!("run {k} ({pattern:?} {extra:?}, seed {seed:#x})");
    let kills = injected.unwrap_or_else(|e| panic!("{what}: {e}\nstdout:\n{out}\nstderr:\n{err}"));
    assert_eq!(
        status,
        Some(0),
        "{what}: the job's status\nstdout:\n{out}\nstderr:\n{err}"
    );
    let ok = format!("MLW OK answers={QUERIES} restarts=");
    assert!(out.contains(&ok), "{what}\nstdout:\n{out}\nstderr:\n{err}");
    assert!(!out.contains("MLW FAIL"), "{what}\nstdout:\n{out}");
    let restarts = err.matches("(SIGKILL); restarted as incarnation").count();
    assert_eq!(
        restarts,
        kills + self_kills,
        "{what}: one restart per kill\n{err}"
    );
    assert_no_segments(out, &what);
    assert_no_rank_left(marker, &what);
    println!("{what}: {kills} kill(s), {restarts} restart(s), all answers correct");
}

/// No shared-memory segment of the job (named by the master's line) is left.
fn assert_no_segments(out: &str, what: &str) {
    let left = steadfast_testsupport::segments_left(out, "MLW SEGMENTS ");
    assert!(left.is_empty(), "{what}: segments left: {left:?}");
}

/// No process of this run is left (every incarnation was reaped).
fn assert_no_rank_left(marker: &str, what: &str) {
    let left = steadfast_testsupport::processes_with(&["master_leader_workers", marker]);
    assert!(left.is_empty(), "{what}: processes left: {left:?}");
}

/// One scenario job at a time: each is 7 to 9 processes polling on a 2-core machine, and
/// two at once (the test harness runs tests in parallel) starve each other's restarts.
fn one_job_at_a_time() -> MutexGuard<'static, ()> {
    static JOBS: Mutex<()> = Mutex::new(());
    JOBS.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn the_scenario_survives_random_kills_of_workers_and_leaders_twenty_times() {
    let _one = one_job_at_a_time();
    let base = std::env::var("MLW_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("MLW_SEED={base:#x}");
    for k in 0..RUNS {
        let seed = base.wrapping_add(k.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let marker = format!("mlw-{}-{k}", std::process::id());
        run_once(k, Pattern::of_run(k), seed, &marker);
    }
}

/// The scenario over tcp (the fabric forced between all ranks): every message,
/// restart and rejoin goes through libfabric and the one matcher (software matching of
/// fabric messages). A worker, a leader, a leader with its worker, and the master are
/// killed, one run each.
#[test]
fn the_scenario_survives_kills_over_tcp() {
    let _one = one_job_at_a_time();
    let patterns = [
        Pattern::Worker,
        Pattern::Leader,
        Pattern::LeaderAndItsWorker,
        Pattern::Master,
    ];
    for (k, pattern) in patterns.into_iter().enumerate() {
        let marker = format!("mlw-tcp-{}-{k}", std::process::id());
        let seed = 0x7c9_5eed + k as u64;
        run_routed(k as u64, pattern, seed, &marker, &[], 0, Some("fabric"));
    }
}

/// Group 0's leader and one of its workers killed together: the master restarts the
/// leader while the worker is dead and not restarted yet (the new leader restarts it
/// once it has rejoined). A restarted process's init used to push its failure reports
/// into a survivor's ring before telling the launcher it joined, and so waited for an
/// admission that could not come until the restart timed out (60 s).
#[test]
fn a_leader_restarted_while_its_worker_is_dead_rejoins_and_restarts_it() {
    let _one = one_job_at_a_time();
    for (k, ms) in [300, 600, 900].into_iter().enumerate() {
        let marker = format!("mlw-pair-{}-{k}", std::process::id());
        let worker = 2 + (k % 2) as u32;
        run_once(k as u64, Pattern::Pair(1, worker, ms), 0x5eed, &marker);
    }
}

/// A leader that cannot restart its worker (`--fail-restart-of 2`: the first restarted
/// incarnation exits before it joins) aborts its group (exit status 42, the other worker
/// SIGKILLed). The master restarts the leader, whose `rejoin` finds no survivor and
/// re-founds the group; it restarts both workers (rank 2's second restart works) and the
/// run ends with every answer correct, no process and no segment left.
#[test]
fn a_group_aborted_by_its_leader_is_refounded_by_the_restarted_leader() {
    let _one = one_job_at_a_time();
    let marker = format!("mlw-abort-{}", std::process::id());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.args(["-n", &RANKS.to_string(), "--no-kill", "--tag-output"])
        .arg(example("master_leader_workers"))
        .args([
            "--queries",
            &QUERIES.to_string(),
            "--pace-ms",
            "10",
            "--fail-restart-of",
            "2",
        ])
        .arg(&marker);
    let mut run = Running::start(cmd, RANKS as usize);
    let job = &mut run.job;
    assert!(job.started(Instant::now() + Duration::from_secs(60)));
    std::thread::sleep(Duration::from_millis(300));
    assert!(job.kill(&[2]).is_some(), "the run ended before the kill");
    let (status, out, err) = run.finish(Duration::from_secs(90));
    let out = &out;
    assert_eq!(status, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains(&format!("MLW OK answers={QUERIES} restarts=")),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(!out.contains("MLW FAIL"), "{out}");
    for line in [
        "rank 1 incarnation 0 exited with status 42; restarted as incarnation 1",
        "rank 2 incarnation 1 exited with status 3",
    ] {
        assert!(err.contains(line), "{line:?} missing:\n{err}");
    }
    assert_no_segments(out, "the abort run");
    assert_no_rank_left(&marker, "the abort run");
}

/// A worker, a leader and the master killed, each of whose first restarted process
/// SIGKILLs itself before it joins (`--kill-restart-of`): the restarter (the leader,
/// the master, the leaders) asks again, and the run completes.
#[test]
fn a_rank_killed_during_its_own_restart_is_restarted_again() {
    let _one = one_job_at_a_time();
    for (k, rank) in [3u32, 4, 0].into_iter().enumerate() {
        let marker = format!("mlw-selfkill-{}-{k}", std::process::id());
        let r = rank.to_string();
        run_with(
            k as u64,
            Pattern::One(rank, 300),
            0x5eed,
            &marker,
            &["--kill-restart-of", &r],
            1,
        );
    }
}
