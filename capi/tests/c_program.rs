//! The C ABI from C: `tests/c/ft.c` is compiled with the system's C compiler against
//! `include/steadfast.h` and `libsteadfast.so` (built by the test), then run
//! under `steadfast-run -n 3` (built here if needed) over shared memory and over the
//! fabric. Rank 2 kills itself; both survivors must end with `CAPI OK`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use steadfast_os::DieWithParent;
use steadfast_testsupport::{cargo_build, launcher, profile_dir, run_limited};

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// `tests/c/ft.c`, compiled once per test process (the tests run in parallel).
fn ft_program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| compile("ft"))
}

/// Compiles `tests/c/<name>.c` against the header and `libsteadfast.so` (built now, so
/// that it is this source's); the path of the program.
fn compile(name: &str) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    cargo_build(MANIFEST, &["-p", "steadfast-capi", "--lib"]);
    let lib_dir = profile_dir();
    assert!(
        lib_dir.join("libsteadfast.so").exists(),
        "{} is missing after the build",
        lib_dir.join("libsteadfast.so").display()
    );
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capi-{name}"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let output = Command::new(&cc)
        .args([
            "-std=c11",
            "-D_POSIX_C_SOURCE=200809L",
            "-Wall",
            "-Wextra",
            "-Werror",
        ])
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("tests/c").join(format!("{name}.c")))
        .arg("-L")
        .arg(&lib_dir)
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .args(["-lsteadfast", "-lpthread", "-o"])
        .arg(&exe)
        .die_with_parent()
        .output()
        .unwrap_or_else(|e| panic!("run the C compiler `{cc}`: {e}"));
    assert!(
        output.status.success(),
        "{cc} failed on tests/c/{name}.c:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    exe
}

/// Runs `steadfast-run -n N program` with `env`; (status, stdout, stderr). The job is
/// killed after `limit`, and dies with this test.
fn run(n: u32, program: &Path, env: &[(&str, &str)], limit: Duration) -> (i32, String, String) {
    let mut cmd = Command::new(launcher(MANIFEST));
    cmd.args(["-n", &n.to_string()])
        .arg(program)
        .envs(env.iter().copied());
    run_limited(cmd, limit)
}

fn c_program_survives_its_failure(env: &[(&str, &str)]) {
    let (status, out, err) = run(3, ft_program(), env, Duration::from_secs(180));
    assert_eq!(
        status, 1,
        "the launcher reports the killed rank\nstdout:\n{out}\nstderr:\n{err}"
    );
    for rank in 0..2 {
        assert!(
            out.contains(&format!("rank {rank}: CAPI OK")),
            "survivor {rank} ends well\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
    assert!(err.contains("rank 2: killed by signal 9"), "{err}");
}

#[test]
fn the_c_program_survives_its_failure_over_shm() {
    c_program_survives_its_failure(&[]);
}

#[test]
fn the_c_program_survives_its_failure_over_the_fabric() {
    c_program_survives_its_failure(&[("STEADFAST_ROUTE", "fabric"), ("STEADFAST_PROVIDER", "tcp")]);
}
