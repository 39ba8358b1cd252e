//! Runs `ft-test-rank` jobs under `steadfast-run` for the multi-process tests
//! (`ft.rs`, `contexts.rs`).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use steadfast_os::DieWithParent;

/// What a job printed and how it ended.
pub struct Job {
    /// Every rank's stdout (`--tag-output`: lines start with `[rank] `).
    pub stdout: String,
    /// The launcher's and ranks' stderr.
    pub stderr: String,
    /// The launcher's exit code (`None`: killed, or it hung).
    pub code: Option<i32>,
}

impl Job {
    /// `(rank, line)` of every line starting with `prefix`.
    pub fn lines(&self, prefix: &str) -> Vec<(u32, String)> {
        self.stdout
            .lines()
            .filter_map(|l| {
                let (r, rest) = l.strip_prefix('[')?.split_once("] ")?;
                rest.starts_with(prefix)
                    .then(|| (r.parse().ok(), rest.to_string()))
                    .and_then(|(r, s)| Some((r?, s)))
            })
            .collect()
    }

    /// Both outputs, for assertion messages.
    pub fn context(&self) -> String {
        format!("stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr)
    }
}

/// Runs `ft-test-rank ARGS` on `n` ranks with `env`; the launcher is killed (and its
/// ranks with it) if the job outlives `limit`.
pub fn run(n: u32, env: &[(&str, &str)], args: &[&str], limit: Duration) -> Job {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.args([
        "-n",
        &n.to_string(),
        "--tag-output",
        env!("CARGO_BIN_EXE_ft-test-rank"),
    ])
    .args(args)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    // The child dies with this process (and never outlives a parent that died first).
    cmd.die_with_parent();
    let mut child = cmd.spawn().expect("start steadfast-run");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > limit {
            // SIGINT: the launcher relays it to every rank, then exits.
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            std::thread::sleep(Duration::from_secs(2));
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let job = Job {
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        code: status.and_then(|s| s.code()),
    };
    assert!(
        status.is_some(),
        "job ft-test-rank {args:?} on {n} ranks hung past {limit:?}\n{}",
        job.context()
    );
    job
}
