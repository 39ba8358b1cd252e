//! steadfast-run with real rank processes: bootstrap exchange, a SIGKILLed rank reported
//! to the survivors and in the summary, secrets enforced, no orphans.

use std::process::Command;
use steadfast_os::DieWithParent;

// libc is a dependency of the crate under test; tests use it for signals.

fn run(n: u32, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_steadfast-run"))
        .args([
            "-n",
            &n.to_string(),
            "--tag-output",
            env!("CARGO_BIN_EXE_bootstrap-test-rank"),
        ])
        .args(args)
        .output()
        .expect("start steadfast-run")
}

#[test]
fn four_ranks_exchange_addresses() {
    let out = run(4, &["exchange"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout {stdout}\nstderr {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for r in 0..4 {
        assert!(
            stdout.contains(&format!("[{r}] rank {r} of 4: exchange ok")),
            "{stdout}"
        );
    }
}

#[test]
fn a_killed_rank_is_reported_to_survivors_and_in_the_summary() {
    let out = run(4, &["die", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout {stdout}\nstderr {stderr}"
    );
    for r in [0, 1, 3] {
        assert!(
            stdout.contains(&format!("rank {r} saw rank 2 die")),
            "{stdout}\n{stderr}"
        );
    }
    assert!(stderr.contains("1 of 4 ranks failed"), "{stderr}");
    assert!(stderr.contains("rank 2: killed by signal 9"), "{stderr}");
}

#[test]
fn outside_the_launcher_the_error_says_what_was_looked_for() {
    let out = Command::new(env!("CARGO_BIN_EXE_bootstrap-test-rank"))
        .env_remove("STEADFAST_RUN_ADDR")
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .env_remove("PMIX_RANK")
        .env_remove("PMIX_NAMESPACE")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("STEADFAST_RUN_ADDR") && err.contains("PMI_FD"),
        "{err}"
    );
}

#[test]
fn a_wrong_secret_is_refused() {
    // A listener we control stands in for nothing: use the real launcher with a rank
    // program whose secret is overridden to a wrong value through the environment.
    let out = Command::new(env!("CARGO_BIN_EXE_steadfast-run"))
        .args(["-n", "1", "/bin/sh", "-c"])
        .arg(format!(
            "STEADFAST_RUN_SECRET={} exec {}",
            "00".repeat(32),
            env!("CARGO_BIN_EXE_bootstrap-test-rank")
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("refused"), "{err}");
}

/// Processes whose whole command line is `/bin/sleep SECS` (the ranks, not the launcher
/// whose command line also names them).
fn ranks_sleeping(secs: &str) -> usize {
    let want = format!("/bin/sleep\0{secs}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| c == want.as_bytes())
                .unwrap_or(false)
        })
        .count()
}

/// Starts steadfast-run; it dies with this test process (PR_SET_PDEATHSIG).
fn launcher(args: &[&str], capture_stderr: bool) -> std::process::Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.args(args);
    if capture_stderr {
        cmd.stderr(std::process::Stdio::piped());
    }
    // The child dies with this process (and never outlives a parent that died first).
    cmd.die_with_parent();
    cmd.spawn().expect("start steadfast-run")
}

fn wait_until(mut cond: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(20) {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

#[test]
fn ctrl_c_reaches_every_rank() {
    let secs = format!("{}", 3000 + std::process::id() % 1000); // unique marker
    let launcher = launcher(&["-n", "3", "/bin/sleep", &secs], true);
    assert!(wait_until(|| ranks_sleeping(&secs) == 3));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(launcher.id() as libc::pid_t, libc::SIGINT) };
    let out = launcher.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("3 of 3 ranks failed") && err.contains("killed by signal 2"),
        "{err}"
    );
    assert_eq!(ranks_sleeping(&secs), 0);
}

#[test]
fn killing_the_launcher_leaves_no_orphan() {
    let secs = format!("{}", 5000 + std::process::id() % 1000);
    let mut launcher = launcher(&["-n", "2", "/bin/sleep", &secs], false);
    assert!(wait_until(|| ranks_sleeping(&secs) == 2));
    launcher.kill().unwrap();
    let _ = launcher.wait();
    assert!(
        wait_until(|| ranks_sleeping(&secs) == 0),
        "ranks outlived their launcher"
    );
}
