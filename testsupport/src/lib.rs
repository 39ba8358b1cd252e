//! What the integration tests of several steadfast crates share (a dev-dependency only):
//! building with the test's own profile, the launcher, and running a job with a time
//! limit and its output captured.
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::Duration;
//! let run = steadfast_testsupport::launcher(env!("CARGO_MANIFEST_DIR"));
//! let mut cmd = Command::new(run);
//! cmd.args(["-n", "2", "/bin/true"]);
//! let (status, stdout, stderr) = steadfast_testsupport::run_limited(cmd, Duration::from_secs(60));
//! assert_eq!(status, 0, "{stdout}{stderr}");
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use steadfast_os::DieWithParent;

/// `target/<profile>`, where the running test executable lives (in `deps/`).
///
/// # Panics
/// When the test does not run from `target/<profile>/deps/`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// Runs `cargo build ARGS` with the profile of the running test, in `manifest_dir` (the
/// calling crate's `CARGO_MANIFEST_DIR`): cargo does not build a `cdylib` or another
/// crate's binaries for an integration test.
///
/// # Panics
/// When the build fails.
pub fn cargo_build(manifest_dir: &str, args: &[&str]) {
    let dir = profile_dir();
    let profile = dir.file_name().and_then(|p| p.to_str()).expect("profile");
    let profile = if profile == "debug" { "dev" } else { profile };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .arg("build")
        .args(args)
        .args(["--profile", profile])
        .current_dir(manifest_dir)
        .die_with_parent()
        .status()
        .expect("run cargo build");
    assert!(status.success(), "cargo build {args:?} failed: {status}");
}

/// `target/<profile>/steadfast-run`, built (or found up to date) once per test process.
pub fn launcher(manifest_dir: &str) -> &'static Path {
    static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();
    LAUNCHER.get_or_init(|| {
        cargo_build(manifest_dir, &["-p", "steadfast", "--bin", "steadfast-run"]);
        profile_dir().join("steadfast-run")
    })
}

/// Runs `cmd` with its output captured; it dies with the test, and is killed after
/// `limit`. (exit status, stdout, stderr): -1 for a death by signal, -2 for the limit.
///
/// # Panics
/// When `cmd` cannot be started.
pub fn run_limited(mut cmd: Command, limit: Duration) -> (i32, String, String) {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.die_with_parent();
    let mut child = cmd.spawn().expect("start the job");
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
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
        if let Some(st) = child.try_wait().expect("wait") {
            break st.code().unwrap_or(-1);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break -2;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, t_out.join().unwrap(), t_err.join().unwrap())
}

/// The processes (`pid args` lines of `ps -eo pid,args`) whose line holds every one of
/// `needles`: a test names its rank program and a marker argument unique to its run, and
/// checks that none is left.
///
/// # Panics
/// When `ps` cannot be run.
pub fn processes_with(needles: &[&str]) -> Vec<String> {
    let ps = Command::new("ps")
        .args(["-eo", "pid,args"])
        .output()
        .expect("run ps");
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| needles.iter().all(|n| l.contains(n)))
        .map(str::to_string)
        .collect()
}

/// The shared-memory segments of a job still in `/dev/shm`: the job prints its segment
/// prefix after `label` on a line of `output` (e.g. `SEGMENTS /steadfast-...`), and every
/// entry whose name starts with it is listed.
///
/// # Panics
/// When no line of `output` holds `label`, or `/dev/shm` cannot be read.
pub fn segments_left(output: &str, label: &str) -> Vec<String> {
    let prefix = output
        .lines()
        .find_map(|l| l.split(label).nth(1))
        .unwrap_or_else(|| panic!("no {label:?} line: {output}"))
        .trim()
        .to_string();
    std::fs::read_dir("/dev/shm")
        .expect("read /dev/shm")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}
