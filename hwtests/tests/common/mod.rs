//! Helpers of the multi-process tests: where the built binaries are, and running a
//! command that dies with its test and is killed past a time limit.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `target/<profile>`, where `cargo test --workspace` builds every binary.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>/deps")
        .to_path_buf()
}

/// A binary of another crate of the workspace, built beside this test.
pub fn workspace_bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.exists(),
        "{} missing: build it first (cargo build -p steadfast) or run cargo test --workspace",
        p.display()
    );
    p
}

/// Kills and reaps the child on drop.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a finished command gave.
pub struct Output {
    /// Exit code (`None`: killed by a signal or by the time limit).
    pub code: Option<i32>,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

/// Runs `cmd` (dying with this process), killing it past `limit`.
pub fn run(mut cmd: Command, limit: Duration) -> Output {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null());
    // SAFETY: prctl is async-signal-safe and only affects the child being started.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut guard = Guard(cmd.spawn().expect("start the command"));
    let mut out = guard.0.stdout.take().expect("piped stdout");
    let mut err = guard.0.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let code = loop {
        match guard.0.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if start.elapsed() > limit => {
                // SIGINT first: steadfast-run and srun relay it to their ranks.
                // SAFETY: signalling our own child.
                unsafe { libc::kill(guard.0.id() as libc::pid_t, libc::SIGINT) };
                std::thread::sleep(Duration::from_secs(2));
                let _ = guard.0.kill();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("waiting for the command: {e}"),
        }
    };
    drop(guard);
    Output {
        code,
        stdout: reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    }
}
