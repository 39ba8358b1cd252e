//! What the suite's tests share: the launcher beside them and running the benchmark
//! under it, every child dying with its test.

#![allow(dead_code)] // Each test file uses its own part.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use steadfast_os::DieWithParent;

/// steadfast-run, built beside these tests by `cargo test --workspace` (or
/// `cargo build -p steadfast --bin steadfast-run`).
pub fn launcher() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let run = dir.join("steadfast-run");
    assert!(
        run.exists(),
        "{} missing: run the tests with cargo test --workspace",
        run.display()
    );
    run
}

/// The benchmark binary.
pub fn bench_bin() -> &'static str {
    env!("CARGO_BIN_EXE_steadfast-bench")
}

/// `cmd`, made to die with the test (SIGKILL when the test process goes).
pub fn dies_with_test(cmd: &mut Command) -> &mut Command {
    cmd.die_with_parent();
    cmd
}

/// A command line of steadfast-bench under steadfast-run with `ranks` ranks.
pub fn under_launcher(ranks: u32, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(launcher());
    cmd.args(["-n", &ranks.to_string(), bench_bin()]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    dies_with_test(&mut cmd);
    cmd
}

/// Runs steadfast-bench under steadfast-run: (exit code, stdout, stderr).
pub fn bench(ranks: u32, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let out = under_launcher(ranks, args, env)
        .output()
        .expect("start steadfast-run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs steadfast-bench alone (no launcher): (exit code, stdout, stderr).
pub fn alone(args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(bench_bin());
    cmd.args(args);
    // Without a launcher's variables, only the checks before bootstrap can pass.
    for k in ["STEADFAST_RUN_ADDR", "PMI_FD", "PMI_PORT", "PMIX_RANK"] {
        cmd.env_remove(k);
    }
    let out = dies_with_test(&mut cmd)
        .output()
        .expect("start steadfast-bench");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A child killed (and reaped) when dropped, so a failing test leaves no job behind.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts steadfast-bench under steadfast-run with piped output.
pub fn spawn(ranks: u32, args: &[&str], env: &[(&str, &str)]) -> KillOnDrop {
    let child = under_launcher(ranks, args, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start steadfast-run");
    KillOnDrop(child)
}

/// The pid of the launcher's child running as `rank` (by its STEADFAST_RANK), once
/// it exists (None after `timeout`).
pub fn rank_pid(launcher_pid: u32, rank: u32, timeout: Duration) -> Option<i32> {
    let want = format!("STEADFAST_RANK={rank}");
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        let children = std::fs::read_dir(format!("/proc/{launcher_pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .flat_map(|s| {
                s.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok())
                    .collect::<Vec<_>>()
            });
        for pid in children {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            if env.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
                return Some(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// The first `n` bytes `child` prints, within `timeout` (None if it prints fewer, or
/// not in time). The rest of its output is read and dropped, so that it never
/// writes into a closed pipe.
pub fn first_bytes(child: &mut KillOnDrop, n: usize, timeout: Duration) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut stdout = child.0.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    // The reader ends with the child's stdout (at the latest when the child is killed).
    std::thread::spawn(move || {
        let mut head = vec![0u8; n];
        let _ = tx.send(stdout.read_exact(&mut head).ok().map(|()| head));
        let _ = std::io::copy(&mut stdout, &mut std::io::sink());
    });
    rx.recv_timeout(timeout).ok().flatten()
}

/// Waits for `child` for at most `timeout`: its exit code, or None (then it is
/// killed when dropped).
pub fn wait_for(child: &mut KillOnDrop, timeout: Duration) -> Option<Option<i32>> {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if let Some(status) = child.0.try_wait().expect("wait for steadfast-run") {
            return Some(status.code());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}
