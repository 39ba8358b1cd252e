//! Parameters across a real job under steadfast-run (`ft-test-rank` ranks): values that
//! differ between ranks stop every rank at once with an error naming the parameter,
//! its values and the ranks (issue 21, item 2); the overflowing heartbeat of issue 21
//! is an error, not a panic (item 3); a long heartbeat with the progress thread does not
//! delay a rank's exit (item 4).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use steadfast_os::DieWithParent;

struct Job {
    stdout: String,
    stderr: String,
    code: Option<i32>,
    took: Duration,
}

impl Job {
    fn context(&self) -> String {
        format!(
            "exit {:?} after {:?}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.took, self.stdout, self.stderr
        )
    }
}

/// Runs `ft-test-rank ARGS` on `n` ranks with `env`; `rank0_env` is exported by a
/// `sh` wrapper in rank 0 alone. The launcher (and its ranks) are killed if the job
/// outlives `limit`, which fails the test.
fn run(n: u32, env: &[(&str, &str)], rank0_env: &str, args: &[&str], limit: Duration) -> Job {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.args(["-n", &n.to_string(), "--tag-output", "sh", "-c"])
        .arg(format!(
            r#"if [ "$STEADFAST_RANK" = 0 ]; then export {rank0_env}; fi; exec "$0" "$@""#
        ))
        .arg(env!("CARGO_BIN_EXE_ft-test-rank"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.die_with_parent();
    let start = Instant::now();
    let mut child = cmd.spawn().expect("start steadfast-run");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
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
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let job = Job {
        took: start.elapsed(),
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        code: status.and_then(|s| s.code()),
    };
    assert!(
        status.is_some(),
        "job hung past {limit:?}\n{}",
        job.context()
    );
    job
}

/// The mismatch is found after the first fence, long before the 30 s the shared-memory
/// connect used to wait: 15 s leaves room for a loaded machine starting three ranks.
const FAST: Duration = Duration::from_secs(15);
const LIMIT: Duration = Duration::from_secs(60);

/// Every rank reports `needle` in its init error.
fn every_rank_says(job: &Job, n: u32, needle: &str) {
    for r in 0..n {
        assert!(
            job.stderr
                .lines()
                .any(|l| l.starts_with(&format!("[{r}] init: ")) && l.contains(needle)),
            "rank {r} does not report {needle:?}\n{}",
            job.context()
        );
    }
    assert!(!job.stderr.contains("panicked"), "{}", job.context());
}

#[test]
fn a_route_set_on_rank_0_alone_stops_every_rank_at_once() {
    let job = run(3, &[], "STEADFAST_ROUTE=fabric", &["p2p"], LIMIT);
    assert_eq!(job.code, Some(1), "{}", job.context());
    assert!(job.took < FAST, "{}", job.context());
    every_rank_says(&job, 3, r#"route: "fabric" on rank 0, "auto" on ranks 1-2"#);
    assert!(!job.stdout.contains("P2P OK"), "{}", job.context());
}

#[test]
fn different_heartbeats_per_rank_are_named_with_their_ranks() {
    let env = [("STEADFAST_DETECT_TIMEOUT_MS", "3000")];
    let job = run(3, &env, "STEADFAST_HEARTBEAT_MS=20", &["p2p"], LIMIT);
    assert_eq!(job.code, Some(1), "{}", job.context());
    assert!(job.took < FAST, "{}", job.context());
    every_rank_says(
        &job,
        3,
        r#"heartbeat_ms: "20" on rank 0, "50" on ranks 1-2"#,
    );
}

#[test]
fn equal_parameters_from_different_sources_pass_the_check() {
    // Rank 0 sets the default explicitly: same value, other source.
    let job = run(2, &[], "STEADFAST_HEARTBEAT_MS=050", &["p2p"], LIMIT);
    assert_eq!(job.code, Some(0), "{}", job.context());
    assert_eq!(job.stdout.matches("P2P OK").count(), 2, "{}", job.context());
}

#[test]
fn the_overflowing_heartbeat_of_issue_21_is_an_error_on_every_rank() {
    let env = [
        ("STEADFAST_HEARTBEAT_MS", "18446744073709"),
        ("STEADFAST_DETECT_TIMEOUT_MS", "18446744073710"),
    ];
    let job = run(2, &env, "UNUSED=1", &["p2p"], LIMIT);
    assert_eq!(job.code, Some(1), "{}", job.context());
    every_rank_says(
        &job,
        2,
        "heartbeat_ms = 18446744073709 (from environment STEADFAST_HEARTBEAT_MS) is out of bounds: 1..=3600000 ms",
    );
}

#[test]
fn a_20_s_heartbeat_with_the_progress_thread_does_not_delay_exit() {
    let env = [
        ("STEADFAST_HEARTBEAT_MS", "20000"),
        ("STEADFAST_DETECT_TIMEOUT_MS", "60000"),
        ("STEADFAST_PROGRESS_THREAD", "1"),
    ];
    let job = run(2, &env, "UNUSED=1", &["p2p"], LIMIT);
    assert_eq!(job.code, Some(0), "{}", job.context());
    // "FINALIZED in N us": the closing agreement plus the progress thread's stop, which
    // used to sleep out its 10 s (half the heartbeat).
    let mut seen = 0;
    for l in job.stdout.lines().filter(|l| l.contains("FINALIZED in ")) {
        let us: u64 = l
            .rsplit("FINALIZED in ")
            .next()
            .and_then(|v| v.trim_end_matches(" us").parse().ok())
            .unwrap_or_else(|| panic!("bad line {l:?}"));
        assert!(us < 2_000_000, "exit took {us} us\n{}", job.context());
        seen += 1;
    }
    assert_eq!(seen, 2, "{}", job.context());
}
