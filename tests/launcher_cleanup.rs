//! No shared-memory segment outlives its job when the launcher is SIGKILLed (its
//! reaper removes them) or interrupted (it removes them itself), and signals are named.

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use steadfast_os::DieWithParent;

/// Starts two ranks streaming to each other over shared memory for a minute; the
/// launcher leads a process group of its own.
fn start_job() -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.process_group(0);
    cmd.args([
        "-n",
        "2",
        env!("CARGO_BIN_EXE_ft-test-rank"),
        "stream",
        "60000",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    cmd.die_with_parent();
    cmd.spawn().expect("start steadfast-run")
}

/// The rank processes of `launcher`: its children running the rank program.
fn ranks_of(launcher: u32) -> Vec<u32> {
    let rank_exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_ft-test-rank")).unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let ppid = status.lines().find_map(|l| l.strip_prefix("PPid:"));
            ppid.map(str::trim) == Some(launcher.to_string().as_str())
                && std::fs::read_link(format!("/proc/{pid}/exe")).ok() == Some(rank_exe.clone())
        })
        .collect()
}

/// The /dev/shm segments the ranks have mapped.
fn segments_mapped_by(pids: &[u32]) -> BTreeSet<PathBuf> {
    pids.iter()
        .flat_map(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/maps"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| {
                    let path = l.split_whitespace().nth(5)?;
                    path.starts_with("/dev/shm/steadfast-")
                        .then(|| PathBuf::from(path))
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// Starts a job and waits until both ranks have both segments mapped.
fn job_with_segments() -> (Child, BTreeSet<PathBuf>) {
    let launcher = start_job();
    let mut segments = BTreeSet::new();
    let found = wait_until(Duration::from_secs(60), || {
        let ranks = ranks_of(launcher.id());
        segments = segments_mapped_by(&ranks);
        ranks.len() == 2 && segments.len() >= 2
    });
    assert!(found, "the ranks never mapped their segments: {segments:?}");
    (launcher, segments)
}

fn left_over(segments: &BTreeSet<PathBuf>) -> Vec<&PathBuf> {
    segments.iter().filter(|p| p.exists()).collect()
}

#[test]
fn sigkill_of_the_launcher_leaves_no_segment() {
    let (mut launcher, segments) = job_with_segments();
    launcher.kill().unwrap();
    let status = launcher.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    assert!(
        wait_until(Duration::from_secs(15), || left_over(&segments).is_empty()),
        "left over: {:?}",
        left_over(&segments)
    );
    // The reaper's report (it holds the launcher's stderr until it is done).
    let mut err = String::new();
    std::io::Read::read_to_string(&mut launcher.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("SIGKILL") && err.contains("removed"), "{err}");
}

#[test]
fn sigkill_of_the_whole_process_group_leaves_no_segment() {
    let (mut launcher, segments) = job_with_segments();
    // SAFETY: signalling the process group our child leads.
    unsafe { libc::kill(-(launcher.id() as libc::pid_t), libc::SIGKILL) };
    let _ = launcher.wait();
    assert!(
        wait_until(Duration::from_secs(15), || left_over(&segments).is_empty()),
        "left over: {:?}",
        left_over(&segments)
    );
    // The reaper, outside the group, survived to do it (a starting job elsewhere on
    // the machine may also sweep segments of dead owners, so its report is the proof).
    let mut err = String::new();
    std::io::Read::read_to_string(&mut launcher.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("died") && err.contains("removed"), "{err}");
}

#[test]
fn sigint_of_the_launcher_leaves_no_segment_and_names_the_signal() {
    let (launcher, segments) = job_with_segments();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(launcher.id() as libc::pid_t, libc::SIGINT) };
    let out = launcher.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted by signal 2 (SIGINT)"), "{err}");
    assert!(err.contains("killed by signal 2 (SIGINT)"), "{err}");
    // The launcher removed them before it exited.
    assert!(
        left_over(&segments).is_empty(),
        "left over: {:?}",
        left_over(&segments)
    );
}
