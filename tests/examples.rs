//! The examples are part of the documentation (`docs/embedding.md`): each one is run
//! here, under `steadfast-run`, over shared memory and over the fabric, and must end as
//! its documentation says.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// `target/<profile>/examples/<name>`, which `cargo test` builds with the tests.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>");
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo test` builds the examples with the tests (or `cargo build --example {name}`)",
        path.display()
    );
    path
}

/// Runs `steadfast-run -n N example` with `env`; (status, stdout, stderr). The job is
/// killed after `limit`, and dies with this test.
fn run(n: u32, name: &str, env: &[(&str, &str)], limit: Duration) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.args(["-n", &n.to_string()])
        .arg(example(name))
        .envs(env.iter().copied());
    steadfast_testsupport::run_limited(cmd, limit)
}

fn embed_runs(env: &[(&str, &str)]) {
    let (status, out, err) = run(4, "embed", env, Duration::from_secs(120));
    assert_eq!(
        status, 1,
        "the launcher reports the killed rank\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert_eq!(
        out.matches("EMBED OK").count(),
        3,
        "every survivor ends well\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert!(err.contains("rank 3: killed by signal 9"), "{err}");
}

#[test]
fn the_embedding_example_survives_its_failure_over_shm() {
    embed_runs(&[]);
}

#[test]
fn the_embedding_example_survives_its_failure_over_the_fabric() {
    embed_runs(&[("STEADFAST_ROUTE", "fabric"), ("STEADFAST_PROVIDER", "tcp")]);
}
