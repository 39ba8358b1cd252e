//! The MPI library from C: builds `libsteadfast-mpi` and `steadfast-run`, lays out an
//! installed tree (`bin/steadfast-cc`, `include/mpi.h`, `include/mpi-ext.h`,
//! `lib/libsteadfast-mpi.so`) as `scripts/install-mpi.sh` does, compiles the programs of
//! `tests/c/` with `steadfast-cc` and runs them under `steadfast-run`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use steadfast_os::DieWithParent;

/// `target/<profile>`, where this test runs from (`deps/`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// Builds `args` with the profile of this test (cargo does not build a library without
/// an rlib for its integration tests).
fn cargo_build(args: &[&str]) {
    let dir = profile_dir();
    let profile = dir.file_name().and_then(|p| p.to_str()).expect("profile");
    let profile = if profile == "debug" { "dev" } else { profile };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .arg("build")
        .args(args)
        .args(["--profile", profile])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .die_with_parent()
        .status()
        .expect("run cargo build");
    assert!(status.success(), "cargo build {args:?} failed: {status}");
}

fn launcher() -> &'static Path {
    static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();
    LAUNCHER.get_or_init(|| {
        cargo_build(&["-p", "steadfast", "--bin", "steadfast-run"]);
        profile_dir().join("steadfast-run")
    })
}

/// The installed tree, made once per test process.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        cargo_build(&["-p", "steadfast-mpi", "--lib"]);
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let p = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mpi-prefix");
        for d in ["bin", "include", "lib"] {
            std::fs::create_dir_all(p.join(d)).expect("make the prefix");
        }
        let copy = |from: PathBuf, to: PathBuf| {
            // Replace, never write into a file a running program may map.
            let _ = std::fs::remove_file(&to);
            std::fs::copy(&from, &to)
                .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
        };
        copy(crate_dir.join("steadfast-cc"), p.join("bin/steadfast-cc"));
        copy(crate_dir.join("include/mpi.h"), p.join("include/mpi.h"));
        copy(
            crate_dir.join("include/mpi-ext.h"),
            p.join("include/mpi-ext.h"),
        );
        copy(
            profile_dir().join("libsteadfast_mpi.so"),
            p.join("lib/libsteadfast-mpi.so"),
        );
        p
    })
}

/// Compiles `tests/c/<name>.c` with `steadfast-cc` (warnings are errors).
fn compile(name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mpi-{name}"));
    let output = Command::new(prefix().join("bin/steadfast-cc"))
        .args([
            "-std=c11",
            "-D_POSIX_C_SOURCE=200809L",
            "-Wall",
            "-Wextra",
            "-Werror",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .die_with_parent()
        .output()
        .expect("run steadfast-cc");
    assert!(
        output.status.success(),
        "steadfast-cc failed on {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    exe
}

/// Runs `steadfast-run ARGS`; (status, stdout, stderr). Killed after `limit`; the job
/// dies with this test.
fn run(
    args: &[&str],
    program: &Path,
    prog_args: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let limit = Duration::from_secs(180);
    let mut cmd = Command::new(launcher());
    cmd.args(args)
        .arg(program)
        .args(prog_args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.die_with_parent();
    let mut child = cmd.spawn().expect("start steadfast-run");
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

fn basic(n: &str, mode: &str, env: &[(&str, &str)]) {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    let prog = PROGRAM.get_or_init(|| compile("basic"));
    let (status, out, err) = run(
        &["-np", n, "-initial-errhandler", "mpi_errors_return"],
        prog,
        &[mode],
        env,
    );
    assert_eq!(status, 0, "stdout:\n{out}\nstderr:\n{err}");
    let n: usize = n.parse().unwrap();
    for rank in 0..n {
        assert!(
            out.contains(&format!("rank {rank}: BASIC OK")),
            "stdout:\n{out}\nstderr:\n{err}"
        );
    }
}

#[test]
fn every_function_at_4_ranks_with_thread_multiple() {
    basic("4", "multiple", &[]);
}

#[test]
fn every_function_at_3_ranks_with_thread_single() {
    basic("3", "single", &[]);
}

#[test]
fn every_function_over_the_fabric() {
    basic(
        "2",
        "single",
        &[("STEADFAST_ROUTE", "fabric"), ("STEADFAST_PROVIDER", "tcp")],
    );
}
