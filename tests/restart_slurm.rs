//! Restart in place under a single-node Slurm (`scripts/slurm-local.sh`): inside an
//! allocation, `steadfast-run --spawner slurm` starts each rank as a job step of the
//! allocation and a restarted rank as one more step; the job's bootstrap stays
//! steadfast-run's. Checked: each rank is its own step with the launcher's environment
//! (`--spawner auto`, the default; inside a step `auto` forks);
//! a SIGKILLed rank restarted twice (by two survivors at once) answers its restarter,
//! each restart a new step of the same allocation; the Master-Leader-Workers example
//! (7 ranks) survives a worker and then a leader SIGKILLed with every answer correct;
//! `--kill-on-bad-exit`, SIGTERM, the launcher's SIGKILL and its whole process group's
//! leave no step and no process; a direct `srun --mpi=pmi2` or `--mpi=pmix` job answers a restart with an
//! error that says how to get one. After each run: no step of the job left (`squeue
//! -s`), no process, no `/dev/shm` segment.
//!
//! Needs root and slurm-wlm (slurmctld, slurmd, srun); without them every test prints
//! why it is skipped and passes. Each test starts its own Slurm and stops it after;
//! the tests of this binary take turns (one Slurm at a time, on random ports).

mod mlw_job;

use mlw_job::{Job, Running};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Longest run of one job (salloc included).
const LIMIT: Duration = Duration::from_secs(90);

/// One Slurm at a time in this binary.
static TURN: Mutex<()> = Mutex::new(());

/// A single-node Slurm of `scripts/slurm-local.sh`, stopped (its jobs cancelled first)
/// on drop.
struct LocalSlurm {
    dir: PathBuf,
    conf: PathBuf,
    _turn: MutexGuard<'static, ()>,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm-local.sh")
}

fn found(prog: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl LocalSlurm {
    /// Starts it, or says why it cannot run here (`None`: the test is skipped).
    fn start(test: &str) -> Option<LocalSlurm> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            println!("{test}: SKIPPED: slurmd needs root");
            return None;
        }
        for prog in ["srun", "salloc", "squeue", "scancel", "slurmd", "slurmctld"] {
            if !found(prog) {
                println!("{test}: SKIPPED: {prog} not found (install slurm-wlm)");
                return None;
            }
        }
        let turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
        let dir =
            std::env::temp_dir().join(format!("steadfast-slurm-{}-{test}", std::process::id()));
        let status = Command::new(script())
            .arg("start")
            .arg(&dir)
            .status()
            .expect("run slurm-local.sh");
        assert!(status.success(), "slurm-local.sh start {}", dir.display());
        Some(LocalSlurm {
            conf: dir.join("slurm.conf"),
            dir,
            _turn: turn,
        })
    }

    /// A command of the Slurm clients, pointed at this Slurm.
    fn command(&self, prog: &str) -> Command {
        let mut cmd = Command::new(prog);
        cmd.env("SLURM_CONF", &self.conf)
            .env_remove("SLURM_JOB_ID")
            .env_remove("SLURM_JOBID")
            .env_remove("SLURM_STEP_ID");
        cmd
    }

    /// Runs `sh -c SCRIPT sh ARGS...` in a new allocation of 4 tasks; (status, stdout,
    /// stderr).
    fn salloc(&self, script: &str, args: &[&str]) -> (i32, String, String) {
        let mut cmd = self.command("salloc");
        cmd.args([
            "-n",
            "4",
            "--overcommit",
            "-t",
            "5",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .args(args);
        steadfast_testsupport::run_limited(cmd, LIMIT)
    }
}

impl Drop for LocalSlurm {
    fn drop(&mut self) {
        // Whatever a failed test left: every job of this Slurm is ours.
        let _ = self
            .command("scancel")
            .arg("--full")
            .arg("--user=root")
            .stderr(Stdio::null())
            .status();
        let _ = Command::new(script()).arg("stop").arg(&self.dir).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An argument that tells this run's processes apart from any other's.
fn marker(name: &str) -> String {
    format!("{name}-{}", std::process::id())
}

/// The lines of `out` between `BEGIN` and `END` markers named `what`.
fn section<'a>(out: &'a str, what: &str) -> Vec<&'a str> {
    out.lines()
        .skip_while(|l| *l != format!("{what}-BEGIN"))
        .skip(1)
        .take_while(|l| *l != format!("{what}-END"))
        .collect()
}

/// The job's script: runs steadfast-run with the arguments, then lists the job's
/// steps still there (`STEPS`) and the next step id (one more step).
const RUN_THEN_LOOK: &str = r#""$@"; rc=$?
echo STEPS-BEGIN; squeue -s -h -j "$SLURM_JOB_ID" -o "%i %j"; echo STEPS-END
srun --overlap -n1 --mpi=none sh -c 'echo NEXT-STEP $SLURM_STEP_ID'
exit $rc"#;

fn assert_no_steps_left(stdout: &str) {
    assert!(stdout.contains("STEPS-END"), "{stdout}");
    let left = section(stdout, "STEPS");
    assert!(left.is_empty(), "steps left: {left:?}\n{stdout}");
}

/// No shared-memory segment of the job (named by rank 0's `SEGMENTS` line) is left.
fn assert_no_segments(stdout: &str) {
    let left = steadfast_testsupport::segments_left(stdout, "SEGMENTS ");
    assert!(left.is_empty(), "segments left: {left:?}");
}

fn assert_no_process_left(needles: &[&str]) {
    let left = steadfast_testsupport::processes_with(needles);
    assert!(left.is_empty(), "processes left: {left:?}");
}

#[test]
fn each_rank_is_a_job_step_of_the_allocation_with_the_launchers_environment() {
    let Some(slurm) = LocalSlurm::start("steps") else {
        return;
    };
    // No --spawner: `auto` makes steps inside the allocation. Then, inside a step
    // (srun steadfast-run), `auto` forks: the rank is in the step of its launcher.
    let script = r#"run=$1; shift
"$run" -n 3 --tag-output "$@"; rc=$?
echo STEPS-BEGIN; squeue -s -h -j "$SLURM_JOB_ID" -o "%i %j"; echo STEPS-END
srun --overlap -n1 --mpi=none sh -c 'echo OUTER $SLURM_STEP_ID; "$0" -n 1 sh -c "echo INNER \$SLURM_STEP_ID"' "$run"
exit $rc"#;
    let (rc, stdout, stderr) = slurm.salloc(
        script,
        &[
            env!("CARGO_BIN_EXE_steadfast-run"),
            "sh",
            "-c",
            r#"echo "RANK $STEADFAST_RANK OF $STEADFAST_SIZE STEP $SLURM_JOB_ID.$SLURM_STEP_ID TASKS $SLURM_STEP_NUM_TASKS GEN ${STEADFAST_GENERATION:-0} ADDR ${STEADFAST_RUN_ADDR:+set}""#,
        ],
    );
    assert_eq!(rc, 0, "stdout {stdout}\nstderr {stderr}");
    let mut steps: Vec<&str> = (0..3)
        .map(|r| {
            let line = stdout
                .lines()
                .find(|l| l.starts_with(&format!("[{r}] RANK {r} OF 3 STEP ")))
                .unwrap_or_else(|| panic!("rank {r}: {stdout}"));
            assert!(line.ends_with("TASKS 1 GEN 0 ADDR set"), "{line}");
            line.split(" STEP ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
        })
        .collect();
    steps.sort_unstable();
    steps.dedup();
    assert_eq!(steps.len(), 3, "one step per rank: {stdout}");
    assert_no_steps_left(&stdout);
    // The three ranks were steps 0 to 2; the outer step is 3, and its rank forked.
    assert!(stdout.contains("OUTER 3\nINNER 3"), "{stdout}\n{stderr}");
}

#[test]
fn a_killed_rank_is_restarted_as_a_new_job_step_and_answers_twice() {
    let Some(slurm) = LocalSlurm::start("restart") else {
        return;
    };
    let mark = marker("slurm-restart");
    let (rc, stdout, stderr) = slurm.salloc(
        RUN_THEN_LOOK,
        &[
            env!("CARGO_BIN_EXE_steadfast-run"),
            "--spawner",
            "slurm",
            "-n",
            "3",
            "--tag-output",
            env!("CARGO_BIN_EXE_restart-test-rank"),
            "restart",
            "2",
            "2",
            "2",
            &mark,
        ],
    );
    assert_eq!(rc, 0, "stdout {stdout}\nstderr {stderr}");
    for g in 1..=2 {
        let answered = stdout
            .lines()
            .find(|l| l.starts_with(&format!("[0] ANSWERED generation {g} in")))
            .unwrap_or_else(|| panic!("generation {g}: {stdout}\n{stderr}"));
        println!("slurm: {answered}");
        assert!(
            stdout.contains(&format!("[1] RESTARTED generation {g} by rank 1")),
            "{stdout}"
        );
        assert!(
            stderr.contains(&format!(
                "rank 2 incarnation {} killed by signal 9 (SIGKILL); restarted as incarnation {g}",
                g - 1
            )),
            "{stderr}"
        );
        // Two askers, one process.
        let starts = stderr
            .matches(&format!("restarted as incarnation {g}"))
            .count();
        assert_eq!(starts, 1, "{stderr}");
    }
    assert!(
        stdout.contains("[2] RESTORED rank 2 generation 2 done"),
        "{stdout}"
    );
    // Three ranks and two restarts: steps 0 to 4 of this allocation.
    assert!(stdout.contains("NEXT-STEP 5"), "{stdout}");
    assert_no_steps_left(&stdout);
    assert_no_segments(&stdout);
    assert_no_process_left(&["restart-test-rank", &mark]);
}

#[test]
fn the_launchers_death_and_its_whole_groups_cancel_its_steps() {
    let Some(slurm) = LocalSlurm::start("orphans") else {
        return;
    };
    // A sleep only this run starts.
    let nap = format!("777.{}", std::process::id());
    // Each phase starts the job in a session of its own (so its process group can be
    // killed whole), waits for both steps, SIGKILLs the launcher (1) or its whole
    // group, sruns included (2: only the reaper is left to cancel the steps), then
    // waits for the steps and processes to go.
    let script = r#"run=$1; nap=$2
for target in launcher group; do
  setsid "$run" --spawner slurm -n 2 sleep "$nap" & launcher=$!
  i=0; until [ "$(squeue -s -h -j "$SLURM_JOB_ID" -o %j | grep -c '^steadfast-')" = 2 ]; do
    i=$((i + 1)); [ $i -gt 300 ] && { echo NEVER-STARTED; break; }; sleep 0.1; done
  if [ $target = launcher ]; then kill -KILL $launcher; else kill -KILL -$launcher; fi
  i=0; while [ -n "$(squeue -s -h -j "$SLURM_JOB_ID" -o %i)" ] || pgrep -f "sleep $nap" >/dev/null; do
    i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1; done
  echo "$target WAITED $i"
done
echo STEPS-BEGIN; squeue -s -h -j "$SLURM_JOB_ID" -o "%i %j"; echo STEPS-END
echo PROCS-BEGIN; pgrep -af "sleep $nap"; echo PROCS-END"#;
    let (rc, stdout, stderr) = slurm.salloc(script, &[env!("CARGO_BIN_EXE_steadfast-run"), &nap]);
    assert_eq!(rc, 0, "stdout {stdout}\nstderr {stderr}");
    assert!(!stdout.contains("NEVER-STARTED"), "{stdout}\n{stderr}");
    assert!(stdout.contains("group WAITED"), "{stdout}\n{stderr}");
    for l in stdout.lines().filter(|l| l.contains(" WAITED ")) {
        println!("orphans: {l} (tenths of a second until no step and no process)");
    }
    // The group's SIGKILL took the sruns too: the reaper cancelled their steps.
    assert!(
        stderr.contains("cancelled 2 Slurm job steps"),
        "stdout {stdout}\nstderr {stderr}"
    );
    assert_no_steps_left(&stdout);
    let procs = section(&stdout, "PROCS");
    assert!(procs.is_empty(), "processes left: {procs:?}\n{stdout}");
    assert_no_process_left(&["sleep", &nap]);
}

#[test]
fn a_bad_exit_a_sigterm_and_a_node_outside_the_allocation_leave_no_step() {
    let Some(slurm) = LocalSlurm::start("stops") else {
        return;
    };
    let nap = format!("778.{}", std::process::id());
    let script = r#"run=$1; nap=$2
"$run" --spawner slurm --kill-on-bad-exit -n 2 sh -c 'if [ "$STEADFAST_RANK" = 1 ]; then sleep 0.5; exit 5; fi; exec sleep "$0"' "$nap"
echo "BAD-EXIT-RC $?"
"$run" --spawner slurm -n 2 sleep "$nap" & launcher=$!
i=0; until [ "$(squeue -s -h -j "$SLURM_JOB_ID" -o %j | grep -c '^steadfast-')" = 2 ]; do
  i=$((i + 1)); [ $i -gt 300 ] && { echo NEVER-STARTED; break; }; sleep 0.1; done
kill -TERM $launcher; wait $launcher
echo "TERM-RC $?"
SLURMD_NODENAME=nowhere "$run" --spawner slurm -n 1 true
echo "NOWHERE-RC $?"
echo STEPS-BEGIN; squeue -s -h -j "$SLURM_JOB_ID" -o "%i %j"; echo STEPS-END
echo PROCS-BEGIN; pgrep -af "sleep $nap"; echo PROCS-END"#;
    let (rc, stdout, stderr) = slurm.salloc(script, &[env!("CARGO_BIN_EXE_steadfast-run"), &nap]);
    assert_eq!(rc, 0, "stdout {stdout}\nstderr {stderr}");
    assert!(!stdout.contains("NEVER-STARTED"), "{stdout}\n{stderr}");
    // --kill-on-bad-exit: rank 1's status 5 stops rank 0's step; the job failed.
    assert!(stdout.contains("BAD-EXIT-RC 1"), "{stdout}\n{stderr}");
    assert!(stderr.contains("rank 1: exited with status 5"), "{stderr}");
    // SIGTERM to the launcher reaches the steps through their sruns.
    assert!(stdout.contains("TERM-RC 1"), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("interrupted by signal 15 (SIGTERM), relayed to every rank"),
        "{stderr}"
    );
    // A node that is not the allocation's: refused before anything starts.
    assert!(stdout.contains("NOWHERE-RC 2"), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("--spawner slurm: this node (nowhere) is not one of Slurm job"),
        "{stderr}"
    );
    assert_no_steps_left(&stdout);
    let procs = section(&stdout, "PROCS");
    assert!(procs.is_empty(), "processes left: {procs:?}\n{stdout}");
    assert_no_process_left(&["sleep", &nap]);
}

#[test]
fn a_restart_under_srun_pmi2_or_pmix_is_refused_naming_the_way_to_get_one() {
    let Some(slurm) = LocalSlurm::start("pmi") else {
        return;
    };
    let cases = [
        (
            "pmi2",
            "PMI-1 (mpiexec.hydra, srun --mpi=pmi2) has no way to start a process into a running job",
            "steadfast-run -n N PROGRAM in the batch script or salloc shell",
        ),
        (
            "pmix",
            "restarting under PMIx",
            "run the job under steadfast-run (on one node; under Slurm, inside the allocation)",
        ),
    ];
    for (mpi, why, way) in cases {
        let mark = marker(&format!("slurm-{mpi}"));
        let mut cmd = slurm.command("srun");
        // The rank program prints its segments' names from the job id, which rank 0
        // adopts from here as from steadfast-run.
        cmd.env(
            "STEADFAST_JOB_ID",
            format!(
                "{:016x}",
                0x5eed_0000_0000_0000 | u64::from(std::process::id())
            ),
        )
        .args(["-n", "2", "--overcommit", &format!("--mpi={mpi}")])
        .arg("--kill-on-bad-exit=0")
        .args([env!("CARGO_BIN_EXE_restart-test-rank"), "exits", "1", &mark]);
        let (_rc, stdout, stderr) = steadfast_testsupport::run_limited(cmd, LIMIT);
        let error = stdout
            .lines()
            .find(|l| l.starts_with("RESTART ERROR:"))
            .unwrap_or_else(|| panic!("{mpi}: stdout {stdout}\nstderr {stderr}"));
        println!("{mpi}: {error}");
        assert!(
            error.contains("cannot restart rank 1") && error.contains(why) && error.contains(way),
            "{error}"
        );
        assert_no_segments(&stdout);
        assert_no_process_left(&["restart-test-rank", &mark]);
    }
}

/// SIGKILLs rank `r`'s current incarnation and waits for the next one to start.
fn kill_and_see_restarted(job: &mut Job, r: u32) {
    let Some(gens) = job.kill(&[r]) else {
        panic!("the run ended before rank {r}'s kill:\n{}", job.out);
    };
    let limit = Instant::now() + Duration::from_secs(30);
    let restarted = job.restarted(r, gens[0], limit);
    assert!(restarted, "rank {r} was never restarted:\n{}", job.out);
}

#[test]
fn master_leader_workers_survives_a_worker_and_a_leader_killed_with_ranks_as_steps() {
    let Some(slurm) = LocalSlurm::start("mlw") else {
        return;
    };
    steadfast_testsupport::cargo_build(
        env!("CARGO_MANIFEST_DIR"),
        &["--example", "master_leader_workers"],
    );
    // Under a name of this run's own, to find its processes (and only them) after.
    let example = slurm.dir.join(format!("mlw-slurm-{}", std::process::id()));
    std::os::unix::fs::symlink(
        steadfast_testsupport::profile_dir().join("examples/master_leader_workers"),
        &example,
    )
    .expect("link the example");
    let example = example.to_str().expect("UTF-8 path").to_string();
    let mut cmd = slurm.command("salloc");
    cmd.args([
        "-n",
        "7",
        "--overcommit",
        "-t",
        "5",
        "sh",
        "-c",
        RUN_THEN_LOOK,
        "sh",
    ])
    .args([env!("CARGO_BIN_EXE_steadfast-run"), "--spawner", "slurm"])
    .args(["-n", "7", "--no-kill", "--tag-output", &example])
    .args(["--queries", "600", "--pace-ms", "10"]);
    let start = Instant::now();
    let mut run = Running::start(cmd, 7);
    let job = &mut run.job;
    let started = job.started(start + Duration::from_secs(60));
    if started {
        // A worker of group 0, then the leader of group 1 (world ranks 1 and 4 lead).
        kill_and_see_restarted(job, 2);
        kill_and_see_restarted(job, 4);
    }
    let (status, stdout, stderr) = run.finish(LIMIT.saturating_sub(start.elapsed()));
    assert!(started, "not every rank started:\n{stdout}\n{stderr}");
    assert_eq!(status, Some(0), "stdout {stdout}\nstderr {stderr}");
    assert!(
        stdout.contains("MLW OK answers=600 restarts=1"),
        "{stdout}\n{stderr}"
    );
    for r in [2, 4] {
        assert!(
            stderr.contains(&format!(
                "rank {r} incarnation 0 killed by signal 9 (SIGKILL); restarted as incarnation 1"
            )),
            "{stderr}"
        );
    }
    assert_eq!(
        stderr.matches("restarted as incarnation").count(),
        2,
        "{stderr}"
    );
    // Seven ranks and two restarts: steps 0 to 8 of this allocation.
    assert!(stdout.contains("NEXT-STEP 9"), "{stdout}");
    assert_no_steps_left(&stdout);
    assert_no_segments(&stdout);
    assert_no_process_left(&[&example]);
}
