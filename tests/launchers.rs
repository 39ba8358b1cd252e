//! Smoke runs of the runtime under the launchers clusters use: MPICH Hydra
//! (`mpiexec.hydra`, PMI-1), Open MPI (`mpirun.openmpi`, PMIx), and a single-node Slurm
//! started for the test (`srun --mpi=pmi2` and `--mpi=pmix`). Each runs the p2p
//! scenario and an agreement loop; a launcher that is not installed is skipped with a
//! message (`.ci/run` installs them all).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use steadfast_os::DieWithParent;

fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Runs `cmd` with a time limit (killing its process group past it).
fn run(mut cmd: Command, limit: Duration) -> Output {
    use std::os::unix::process::CommandExt;
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // The child dies with this process (and never outlives a parent that died first).
    cmd.die_with_parent();
    let child = cmd.spawn().expect("start the launcher");
    let pid = child.id() as libc::pid_t;
    let watchdog = std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(100));
            // SAFETY: probing whether our child's group still exists.
            if unsafe { libc::kill(-pid, 0) } != 0 {
                return;
            }
        }
        // SAFETY: killing the process group we created.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    });
    let out = child.wait_with_output().expect("wait for the launcher");
    // The launcher is gone; its group may linger only if a rank outlived it.
    // SAFETY: killing the process group we created.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let _ = watchdog.join();
    out
}

fn check(what: &str, out: &Output, ranks: usize) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ctx = format!("{what}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(out.status.success(), "{ctx}");
    assert_eq!(stdout.matches("P2P OK").count(), ranks, "{ctx}");
}

fn check_agree(what: &str, out: &Output, ranks: usize) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ctx = format!(
        "{what}\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{ctx}");
    let digests: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("DIGEST "))
        .map(|d| d.split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(digests.len(), ranks, "{ctx}");
    assert!(digests.iter().all(|d| *d == digests[0]), "{ctx}");
}

const RANK: &str = env!("CARGO_BIN_EXE_ft-test-rank");
const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn under_mpich_hydra() {
    if !installed("mpiexec.hydra") {
        eprintln!("SKIPPED: mpiexec.hydra not installed (apt-get install mpich)");
        return;
    }
    let mut cmd = Command::new("mpiexec.hydra");
    cmd.args(["-n", "3", RANK, "p2p"]);
    check("hydra p2p", &run(cmd, LIMIT), 3);
    let mut cmd = Command::new("mpiexec.hydra");
    cmd.args(["-n", "2", RANK, "agree-loop", "500", "99", "1"]);
    check_agree("hydra agree", &run(cmd, LIMIT), 2);
}

#[test]
fn under_open_mpi_mpirun() {
    if !installed("mpirun.openmpi") {
        eprintln!("SKIPPED: mpirun.openmpi not installed (apt-get install openmpi-bin)");
        return;
    }
    let mut cmd = Command::new("mpirun.openmpi");
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-n",
        "3",
        RANK,
        "p2p",
    ]);
    check("mpirun p2p", &run(cmd, LIMIT), 3);
    let mut cmd = Command::new("mpirun.openmpi");
    cmd.args([
        "--allow-run-as-root",
        "-n",
        "2",
        RANK,
        "agree-loop",
        "500",
        "99",
        "1",
    ]);
    check_agree("mpirun agree", &run(cmd, LIMIT), 2);
}

/// A single-node Slurm for the duration of a test.
struct Slurm {
    dir: PathBuf,
}

impl Slurm {
    fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm-local.sh")
    }

    fn start() -> Slurm {
        let dir = std::env::temp_dir().join(format!("steadfast-slurm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = run(
            {
                let mut c = Command::new(Self::script());
                c.arg("start").arg(&dir);
                c
            },
            Duration::from_secs(60),
        );
        assert!(
            out.status.success(),
            "slurm-local start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Slurm { dir }
    }

    fn srun(&self, args: &[&str]) -> Command {
        let mut c = Command::new("srun");
        c.env("SLURM_CONF", self.dir.join("slurm.conf")).args(args);
        c
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let _ = Command::new(Self::script())
            .arg("stop")
            .arg(&self.dir)
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn under_single_node_slurm_with_pmi2_and_pmix() {
    if !installed("srun") || !installed("slurmctld") || !installed("slurmd") {
        eprintln!("SKIPPED: Slurm not installed (apt-get install slurm-wlm)");
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: slurmd needs root");
        return;
    }
    let slurm = Slurm::start();
    for mpi in ["pmi2", "pmix"] {
        let flag = format!("--mpi={mpi}");
        let cmd = slurm.srun(&["-n", "2", &flag, RANK, "p2p"]);
        check(&format!("srun {flag} p2p"), &run(cmd, LIMIT), 2);
        let cmd = slurm.srun(&["-n", "2", &flag, RANK, "agree-loop", "500", "99", "1"]);
        check_agree(&format!("srun {flag} agree"), &run(cmd, LIMIT), 2);
    }
}
