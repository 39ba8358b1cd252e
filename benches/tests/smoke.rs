//! Every steadfast-bench subcommand once, at tiny sizes, under steadfast-run (a smoke
//! test: output checked, no timing asserted).

use std::path::PathBuf;
use std::process::Command;

/// steadfast-run, built beside this test by `cargo test --workspace`.
fn launcher() -> PathBuf {
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

fn bench(ranks: u32, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(launcher());
    cmd.args([
        "-n",
        &ranks.to_string(),
        env!("CARGO_BIN_EXE_steadfast-bench"),
    ])
    .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    // SAFETY: prctl is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let out = cmd.output().expect("start steadfast-run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const TINY: &[&str] = &["--iterations", "50", "--warmup", "5", "--repetitions", "2"];

fn with(sub: &str, extra: &[&'static str]) -> Vec<String> {
    let mut v = vec![sub.to_string()];
    v.extend(TINY.iter().map(|s| s.to_string()));
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn point_to_point_and_allreduce_print_osu_tables() {
    for (sub, first, last) in [
        ("latency", "0 ", "1024 "),
        ("bw", "1 ", "1024 "),
        ("bibw", "1 ", "1024 "),
        ("put", "0 ", "1024 "),
        ("get", "0 ", "1024 "),
        ("allreduce", "8 ", "1024 "),
    ] {
        for route in ["shm", "fabric"] {
            let a = with(sub, &["--max", "1024", "--route"]);
            let mut a = args(&a);
            a.push(route);
            let (code, out, err) = bench(2, &a, &[]);
            assert_eq!(code, Some(0), "{sub} {route}: {out}\n{err}");
            assert!(out.contains(&format!("# steadfast-bench {sub}")), "{out}");
            assert!(out.lines().any(|l| l.starts_with(first)), "{sub}: {out}");
            assert!(out.lines().any(|l| l.starts_with(last)), "{sub}: {out}");
        }
    }
    let a = with("latency", &["--max", "8", "--json"]);
    let (code, out, _) = bench(2, &args(&a), &[]);
    assert_eq!(code, Some(0));
    assert!(
        out.trim_start().starts_with("{\"benchmark\": \"latency\""),
        "{out}"
    );
}

#[test]
fn fault_tolerance_phases_are_reported() {
    for (sub, rows, kills) in [
        (
            "agree",
            &[
                "failure_free",
                "first_after_kill",
                "stabilize",
                "after_failure",
            ][..],
            true,
        ),
        (
            "revoke",
            &["noise_before", "interrupt_all", "noise_after"][..],
            false,
        ),
        ("shrink", &["failure_free", "after_kill"][..], true),
    ] {
        let a = with(sub, &[]);
        let (code, out, err) = bench(3, &args(&a), &[]);
        let expected = if kills { Some(1) } else { Some(0) };
        assert_eq!(code, expected, "{sub}: {out}\n{err}");
        for r in rows {
            assert!(
                out.lines().any(|l| l.starts_with(r)),
                "{sub}: no {r}: {out}\n{err}"
            );
        }
    }
    for d in ["all", "launcher", "heartbeat"] {
        let a = with("detect", &["--detectors"]);
        let mut a = args(&a);
        a.push(d);
        let env = [
            ("STEADFAST_DETECT_TIMEOUT_MS", "300"),
            ("STEADFAST_HEARTBEAT_MS", "20"),
        ];
        let (code, out, err) = bench(3, &a, &env);
        assert_eq!(code, Some(1), "detect {d}: {out}\n{err}");
        assert!(out.contains(&format!("detect_{d}")), "{out}\n{err}");
    }
}

/// steadfast-report turns a results directory (as benches/compare/run.sh writes it)
/// into the three plots and the Markdown section; a directory without results is an
/// error naming the missing file.
#[test]
fn report_writes_plots_and_table() {
    let dir = std::env::temp_dir().join(format!("steadfast-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("meta.tsv"), "date\t2026-11-22\n").unwrap();
    std::fs::write(
        dir.join("curves.tsv"),
        "steadfast shm\tlat\t1\t0.12\nsteadfast shm\tlat\t1024\t0.5\n\
         steadfast shm\tbw\t1024\t3000\nsteadfast shm\tbw\t1048576\t14000\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pairs.tsv"),
        "ULFM 2 ranks\tagree failure free (us)\t0.35\tOpen MPI ULFM\t0.72\tlower\n\
         ULFM 2 ranks\tshrink (us)\t3.2\tOpen MPI ULFM\t63\tlower\n",
    )
    .unwrap();
    let report = env!("CARGO_BIN_EXE_steadfast-report");
    let out = Command::new(report).arg(&dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in ["latency.svg", "bandwidth.svg", "phases.svg"] {
        let svg = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("steadfast"), "{f}");
    }
    let md = std::fs::read_to_string(dir.join("comparison.md")).unwrap();
    assert!(
        md.contains("| agree failure free (us) | 0.35 | Open MPI ULFM | 0.72 | 0.49 | ahead |"),
        "{md}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let missing = Command::new(report).arg(&dir).output().unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("meta.tsv"));
}
