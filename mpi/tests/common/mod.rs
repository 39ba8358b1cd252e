//! What the C-program tests share (`c_programs.rs`, `c_ulfm.rs`): the installed tree
//! laid out as `scripts/install-mpi.sh` does, `steadfast-cc` on a program of `tests/c/`,
//! and `steadfast-run` on it. Each test binary uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use steadfast_os::DieWithParent;
use steadfast_testsupport::{cargo_build, profile_dir, run_limited};

pub const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

pub fn launcher() -> &'static Path {
    steadfast_testsupport::launcher(MANIFEST)
}

/// The installed tree, made once per test process.
pub fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        cargo_build(MANIFEST, &["-p", "steadfast-mpi", "--lib"]);
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
pub fn compile(name: &str) -> PathBuf {
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

/// Runs `steadfast-run ARGS`; (status, stdout, stderr). Killed after 180 s; the job
/// dies with this test.
pub fn run(
    args: &[&str],
    program: &Path,
    prog_args: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let mut cmd = Command::new(launcher());
    cmd.args(args)
        .arg(program)
        .args(prog_args)
        .envs(env.iter().copied());
    run_limited(cmd, Duration::from_secs(180))
}

/// `tests/c/<name>.c` compiled (once per test process).
pub fn program(name: &'static str) -> &'static Path {
    static PROGRAMS: std::sync::Mutex<Vec<(&'static str, &'static Path)>> =
        std::sync::Mutex::new(Vec::new());
    let mut done = PROGRAMS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, p)) = done.iter().find(|(n, _)| *n == name) {
        return p;
    }
    let p: &'static Path = Box::leak(compile(name).into_boxed_path());
    done.push((name, p));
    p
}

/// Runs `tests/c/<name>.c` at `n` ranks under `--with-ft ulfm --exit-status survivors`;
/// (status, stdout, stderr).
pub fn run_ulfm(n: usize, name: &'static str, env: &[(&str, &str)]) -> (i32, String, String) {
    run_ulfm_with(n, name, &[], env)
}

/// As [`run_ulfm`], with the program's arguments.
pub fn run_ulfm_with(
    n: usize,
    name: &'static str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let np = n.to_string();
    run(
        &[
            "-np",
            &np,
            "--with-ft",
            "ulfm",
            "--exit-status",
            "survivors",
        ],
        program(name),
        args,
        env,
    )
}

/// Runs `name` (with `args`) at `n` ranks under ULFM, its last rank SIGKILLed: the
/// survivors' status is 0 and each of them prints `ok` once. Returns the outputs.
pub fn survivors_print(n: usize, name: &'static str, args: &[&str], ok: &str) -> (String, String) {
    let (status, out, err) = run_ulfm_with(n, name, args, &[]);
    assert_eq!(status, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(
        out.matches(ok).count(),
        n - 1,
        "stdout:\n{out}\nstderr:\n{err}"
    );
    (out, err)
}
