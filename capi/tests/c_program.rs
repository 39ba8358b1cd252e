//! The C ABI from C: `tests/c/ft.c` is compiled with the system's C compiler against
//! `include/steadfast.h` and `libsteadfast.so` (built by the test), then run
//! under `steadfast-run -n 3` (built here if needed) over shared memory and over the
//! fabric. Rank 2 kills itself; both survivors must end with `CAPI OK`.

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

/// Builds `args` with the profile of this test (cargo does not rebuild the library for
/// its integration tests: without an rlib, they do not link it).
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

/// `target/<profile>/steadfast-run`, built (or found up to date) once per test process.
fn launcher() -> &'static Path {
    static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();
    LAUNCHER.get_or_init(|| {
        cargo_build(&["-p", "steadfast", "--bin", "steadfast-run"]);
        profile_dir().join("steadfast-run")
    })
}

/// `tests/c/ft.c`, compiled once per test process (the tests run in parallel).
fn ft_program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| compile("ft"))
}

/// Compiles `tests/c/<name>.c` against the header and `libsteadfast.so` (built now, so
/// that it is this source's); the path of the program.
fn compile(name: &str) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    cargo_build(&["-p", "steadfast-capi", "--lib"]);
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
    let mut cmd = Command::new(launcher());
    cmd.args(["-n", &n.to_string()])
        .arg(program)
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
