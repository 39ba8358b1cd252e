//! Runs the Master-Leader-Workers example (`examples/master_leader_workers.rs`) as a
//! job and follows it through its output, for the tests that SIGKILL its ranks
//! (`scenario.rs`, `restart_slurm.rs`).

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use steadfast_os::DieWithParent;

/// The running job, as its output tells it: each rank's current pid and generation.
pub struct Job {
    lines: mpsc::Receiver<String>,
    /// Each rank's current process (`MLW PID`): (generation, pid).
    pids: Vec<Option<(u32, i32)>>,
    /// Each rank's newest process as it starts (`MLW STARTING`, before it joins).
    starting: Vec<Option<(u32, i32)>>,
    /// Which ranks said `MLW READY` (their communicators are saved).
    ready: Vec<bool>,
    /// The master said `MLW STOPPING`.
    pub stopping: bool,
    /// Every line read so far.
    pub out: String,
}

impl Job {
    /// Reads what has arrived, or waits up to `d` for more.
    fn read(&mut self, d: Duration) {
        let Ok(first) = self.lines.recv_timeout(d) else {
            return;
        };
        for line in std::iter::once(first).chain(self.lines.try_iter().collect::<Vec<_>>()) {
            for (what, into) in [
                ("MLW PID rank ", &mut self.pids),
                ("MLW STARTING rank ", &mut self.starting),
            ] {
                if let Some(rest) = line.split(what).nth(1) {
                    // "R generation G pid P"
                    let w: Vec<&str> = rest.split_whitespace().collect();
                    if let (Some(r), Some(g), Some(p)) = (
                        w.first().and_then(|r| r.parse::<usize>().ok()),
                        w.get(2).and_then(|g| g.parse().ok()),
                        w.get(4).and_then(|p| p.parse().ok()),
                    ) {
                        into[r] = Some((g, p));
                    }
                }
            }
            if let Some(r) = line
                .split("MLW READY rank ")
                .nth(1)
                .and_then(|r| r.trim().parse::<usize>().ok())
            {
                self.ready[r] = true;
            }
            self.stopping |= line.contains("MLW STOPPING");
            self.out.push_str(&line);
            self.out.push('\n');
        }
    }

    /// Waits until every rank has started, or `limit`.
    /// (Every first incarnation has made and saved its communicators: a kill before
    /// that would end the run, as the example says.)
    pub fn started(&mut self, limit: Instant) -> bool {
        let all = |j: &Job| j.pids.iter().all(Option::is_some) && j.ready.iter().all(|&r| r);
        while !all(self) && Instant::now() < limit {
            self.read(Duration::from_millis(20));
        }
        all(self)
    }

    /// SIGKILLs the current incarnation of each rank in `ranks` (unless the run is
    /// stopping); the generations killed.
    pub fn kill(&mut self, ranks: &[u32]) -> Option<Vec<u32>> {
        self.read(Duration::ZERO);
        if self.stopping {
            return None;
        }
        let mut gens = Vec::new();
        for &r in ranks {
            let (g, pid) = self.pids[r as usize].expect("started");
            // SAFETY: a signal to a rank process of this test's job.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            gens.push(g);
        }
        Some(gens)
    }

    /// Waits until a process of rank `r` above generation `g` starts and SIGKILLs it at
    /// once (before it joins, or just after); false if none starts by `limit` or the run
    /// is stopping.
    // Only scenario.rs kills a rank during its restart.
    #[allow(dead_code)]
    pub fn kill_when_starting(&mut self, r: u32, g: u32, limit: Instant) -> bool {
        while Instant::now() < limit && !self.stopping {
            if let Some((now, pid)) = self.starting[r as usize].filter(|&(now, _)| now > g) {
                // SAFETY: a signal to a rank process of this test's job.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                println!("killed rank {r} generation {now} as it started");
                return true;
            }
            self.read(Duration::from_millis(1));
        }
        false
    }

    /// Waits until rank `r` runs a generation above `g`, or `limit`.
    pub fn restarted(&mut self, r: u32, g: u32, limit: Instant) -> bool {
        while Instant::now() < limit {
            if self.pids[r as usize].is_some_and(|(now, _)| now > g) {
                return true;
            }
            self.read(Duration::from_millis(20));
        }
        false
    }
}

/// A started job: its stdout read line by line into `job` (pids, the whole output), its
/// stderr gathered on another thread.
pub struct Running {
    child: std::process::Child,
    /// What the job's output has told so far.
    pub job: Job,
    reader: std::thread::JoinHandle<()>,
    err_reader: std::thread::JoinHandle<String>,
}

impl Running {
    /// Starts `cmd`, a job of `ranks` ranks (it dies with this test).
    pub fn start(mut cmd: Command, ranks: usize) -> Running {
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .die_with_parent();
        let mut child = cmd.spawn().expect("start the job");
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Running {
            child,
            job: Job {
                lines: rx,
                pids: vec![None; ranks],
                starting: vec![None; ranks],
                ready: vec![false; ranks],
                stopping: false,
                out: String::new(),
            },
            reader,
            err_reader,
        }
    }

    /// Waits for the job, killing it after `limit`; (status, stdout, stderr).
    pub fn finish(mut self, limit: Duration) -> (Option<i32>, String, String) {
        let deadline = Instant::now() + limit;
        let status = loop {
            self.job.read(Duration::from_millis(20));
            if let Some(st) = self.child.try_wait().expect("wait") {
                break st.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break None;
            }
        };
        let _ = self.reader.join();
        self.job.read(Duration::ZERO);
        let err = self.err_reader.join().unwrap();
        (status, self.job.out, err)
    }
}
