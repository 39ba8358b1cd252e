//! The reaper: a child of the launcher, forked before any thread starts, that removes
//! the job's shared-memory segments if the launcher dies without doing so (SIGKILL, a
//! crash).
//!
//! The launcher tells it, over a pipe, each rank's pid (`P <pid>`) and each segment id
//! of the job (`S <hex>`) as soon as it learns them, the Slurm job and name prefix of
//! its job steps when the ranks are steps (`C <job> <prefix>`), and `D` when it has
//! cleaned up itself. When the pipe ends without `D`, the launcher is dead: the ranks
//! are dying too (PR_SET_PDEATHSIG; a step's srun cancels its step then, and the
//! reaper cancels any step of the launcher still listed), so the reaper waits for them
//! (watched through pidfds opened
//! when it heard of them, so a reused pid is never waited for), bounded by [`RANK_EXIT_WAIT`],
//! removes the segments and reports on stderr. It runs in a session of its own, so a
//! signal sent to the launcher's process group (Ctrl-C, a batch system killing the
//! group) does not reach it, and ignores SIGINT, SIGTERM and SIGHUP besides: the
//! launcher handles those and cleans up, and the reaper ends with it.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::time::{Duration, Instant};
use steadfast::fabric::liveness::ProcessWatch;
use steadfast::launcher::segments;

use crate::slurm::cancel_steps;

/// Longest wait for the ranks to die after the launcher did.
const RANK_EXIT_WAIT: Duration = Duration::from_secs(10);

/// The launcher's end of the pipe to its reaper.
pub struct Reaper {
    tx: File,
}

impl Reaper {
    /// Forks the reaper.
    ///
    /// # Safety
    /// The process must have a single thread (fork copies only the caller).
    ///
    /// # Errors
    /// The error of `pipe2` or `fork`.
    pub unsafe fn start() -> std::io::Result<Reaper> {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both are fresh descriptors that we own from here on.
        let (rx, tx) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
        let launcher = std::process::id();
        // SAFETY: the caller guarantees one thread, so the child's copy is consistent.
        match unsafe { libc::fork() } {
            -1 => Err(std::io::Error::last_os_error()),
            0 => {
                drop(tx);
                run(rx, launcher);
                // SAFETY: ends the child without running the parent's exit handlers.
                unsafe { libc::_exit(0) }
            }
            _ => Ok(Reaper { tx }),
        }
    }

    fn say(&mut self, line: &str) {
        // A dead reaper cannot be helped; the launcher still cleans up itself.
        let _ = writeln!(self.tx, "{line}");
    }

    /// Tells the reaper a rank's pid.
    pub fn rank(&mut self, pid: u32) {
        self.say(&format!("P {pid}"));
    }

    /// Tells the reaper the ranks are Slurm job steps of `job_id` named `prefix...`.
    pub fn slurm_steps(&mut self, job_id: &str, prefix: &str) {
        self.say(&format!("C {job_id} {prefix}"));
    }

    /// Tells the reaper a segment id of the job.
    pub fn segment_job(&mut self, seg_job: u64) {
        self.say(&format!("S {seg_job:x}"));
    }

    /// Tells the reaper the launcher has cleaned up; it exits.
    pub fn done(mut self) {
        self.say("D");
    }
}

fn run(rx: File, launcher: u32) {
    // A session of its own: a SIGKILL sent to the launcher's whole process group (a
    // batch system's or `timeout`'s clean-up) does not take the reaper with it.
    // SAFETY: setsid has no preconditions; a child of a fork is never a group leader.
    unsafe { libc::setsid() };
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: setting a signal to be ignored has no handler to be unsafe.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    // Nothing to say on stdout: let a reader of the launcher's output see its end.
    if let Ok(null) = File::options().write(true).open("/dev/null") {
        // SAFETY: dup2 onto descriptor 1 of this process.
        unsafe { libc::dup2(null.as_raw_fd(), 1) };
    }
    let mut ranks: Vec<ProcessWatch> = Vec::new();
    let mut seg_jobs: Vec<u64> = Vec::new();
    let mut steps: Option<(String, String)> = None;
    for line in BufReader::new(rx).lines() {
        let Ok(line) = line else { break };
        match line.split_once(' ') {
            Some(("P", pid)) => ranks.extend(pid.parse().ok().map(ProcessWatch::new)),
            Some(("S", hex)) => seg_jobs.extend(u64::from_str_radix(hex, 16).ok()),
            Some(("C", rest)) => {
                steps = rest
                    .split_once(' ')
                    .map(|(j, p)| (j.to_string(), p.to_string()))
            }
            _ if line == "D" => return,
            _ => {}
        }
    }
    // The launcher died without cleaning up (or stopped before starting a rank).
    if ranks.is_empty() && seg_jobs.is_empty() {
        return;
    }
    let start = Instant::now();
    let all_gone = wait_for_exits(&ranks, RANK_EXIT_WAIT);
    // The sruns cancel their steps as they die; one that could not (killed before it
    // started its step, or by a SIGKILL of the whole group) leaves it to us.
    let how = if steps.is_some() {
        "SIGTERM to their sruns, their parent-death signal, which cancel their steps"
    } else {
        "SIGKILL, their parent-death signal"
    };
    let cancelled = steps.map_or(0, |(job, prefix)| cancel_steps(&job, &prefix));
    let removed = segments::remove_segments(&seg_jobs);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "steadfast-run: the launcher (pid {launcher}) died; its {} ranks {} ({how}) within {:?}; removed {removed} shared-memory segment files of the job{}",
        ranks.len(),
        if all_gone { "were killed" } else { "were not all gone" },
        start.elapsed(),
        if cancelled > 0 {
            format!("; cancelled {cancelled} Slurm job steps")
        } else {
            String::new()
        }
    );
}

/// Waits until every watched process has exited or `limit` passes.
fn wait_for_exits(ranks: &[ProcessWatch], limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        if ranks.iter().all(ProcessWatch::has_exited) {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
