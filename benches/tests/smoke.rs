//! Every steadfast-bench subcommand once, at tiny sizes, under steadfast-run (a smoke
//! test: output checked, no timing asserted).

mod common;

use std::process::Command;

use common::bench;

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
    let doc: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON document");
    assert_eq!(doc["benchmark"], "latency");
    assert_eq!(doc["column"]["unit"], "us");
    assert_eq!(doc["facts"]["ranks"], "2");
    let labels: Vec<&str> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["0", "1", "2", "4", "8"]);
    assert!(doc["rows"][0]["median"].as_f64().unwrap() > 0.0);
}

/// mbw_mr over 2 and 4 ranks (1 and 2 pairs): the OSU table with the messages/s
/// column, and its JSON; an odd rank count is a one-line error per rank.
#[test]
fn message_rate_prints_bandwidth_and_messages_per_second() {
    for (ranks, pairs) in [
        (2, "1 (rank i sends to rank i + 1)"),
        (4, "2 (rank i sends to rank i + 2)"),
    ] {
        let a = with("mbw_mr", &["--max", "1024"]);
        let (code, out, err) = bench(ranks, &args(&a), &[]);
        assert_eq!(code, Some(0), "{out}\n{err}");
        assert!(out.contains("# steadfast-bench mbw_mr"), "{out}");
        assert!(out.contains(&format!("# pairs: {pairs}")), "{out}");
        assert!(out.contains("Messages/s"), "{out}");
        for size in ["8", "1024"] {
            let row = out
                .lines()
                .find(|l| l.split_whitespace().next() == Some(size))
                .unwrap_or_else(|| panic!("no {size} row: {out}"));
            let f: Vec<f64> = row.split_whitespace().map(|v| v.parse().unwrap()).collect();
            assert_eq!(f.len(), 5, "{row}");
            // Messages/s is the median MB/s over the size (to the printed digit).
            let rate = f[1] * 1e6 / f[0];
            assert!((f[4] - rate).abs() <= rate * 0.01 + 1.0, "{row}");
        }
        assert!(
            !out.lines().any(|l| l.starts_with("4 ")),
            "starts at 8 B: {out}"
        );
    }
    let a = with("mbw_mr", &["--min", "64", "--max", "64", "--json"]);
    let (code, out, err) = bench(2, &args(&a), &[]);
    assert_eq!(code, Some(0), "{err}");
    let doc: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON document");
    assert_eq!(doc["second_column"]["name"], "Messages/s");
    assert_eq!(doc["rows"][0]["label"], "64");
    assert!(doc["rows"][0]["second"].as_f64().unwrap() > 0.0);
    let (code, _, err) = bench(3, &args(&with("mbw_mr", &[])), &[]);
    assert_ne!(code, Some(0), "{err}");
    assert!(
        err.contains("steadfast-bench: mbw_mr needs an even number of ranks (pairs), not 3"),
        "{err}"
    );
}

/// mt_mr at 2 ranks with 1 and 3 threads on private and shared communicators, over
/// shm and the fabric: one row per thread count and layout; a bad thread list and a rank
/// count other than 2 are one-line errors.
#[test]
fn multithreaded_message_rate_has_a_row_per_thread_count_and_layout() {
    for route in ["shm", "fabric"] {
        let a = with("mt_mr", &["--threads", "1,3", "--route"]);
        let mut a = args(&a);
        a.push(route);
        let (code, out, err) = bench(2, &a, &[]);
        assert_eq!(code, Some(0), "{route}: {out}\n{err}");
        assert!(out.contains("# steadfast-bench mt_mr"), "{out}");
        assert!(out.contains("# size: 8 B"), "{out}");
        for label in ["1 private", "3 private", "1 shared", "3 shared"] {
            let row = out
                .lines()
                .find(|l| l.starts_with(&format!("{label} ")))
                .unwrap_or_else(|| panic!("no {label} row: {out}"));
            let rate: f64 = row.split_whitespace().nth(2).unwrap().parse().unwrap();
            assert!(rate > 0.0, "{row}");
        }
    }
    let a = with("mt_mr", &["--threads", "0,2"]);
    let (code, _, err) = bench(2, &args(&a), &[]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("--threads \"0,2\""), "{err}");
    let (code, _, err) = bench(4, &args(&with("mt_mr", &[])), &[]);
    assert_ne!(code, Some(0), "{err}");
    assert!(
        err.contains("mt_mr runs on exactly 2 ranks, not 4"),
        "{err}"
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

/// restart under `steadfast-run --no-kill`, over shared memory and over the fabric
/// (tcp): the last rank is killed and restarted once per repetition, each incarnation
/// answers rank 0 (the round's generation, checked), and the job ends well.
#[test]
fn restart_in_place_is_timed_over_rounds() {
    for route in ["shm", "fabric"] {
        let mut cmd = Command::new(common::launcher());
        cmd.args(["-n", "3", "--no-kill", common::bench_bin(), "restart"])
            .args(["--repetitions", "3", "--route", route])
            .env("STEADFAST_PROVIDER", "tcp");
        let out = common::dies_with_test(&mut cmd)
            .output()
            .expect("start steadfast-run");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{route}: {stdout}\n{stderr}");
        assert!(stdout.contains("# steadfast-bench restart"), "{stdout}");
        for row in ["kill_to_answer", "restart_request"] {
            let line = stdout
                .lines()
                .find(|l| l.starts_with(row))
                .unwrap_or_else(|| panic!("{route}: no {row}: {stdout}\n{stderr}"));
            let median: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
            assert!(median > 0.0, "{line}");
        }
        for g in 1..=3 {
            assert!(
                stderr.contains(&format!(
                    "rank 2 incarnation {} killed by signal 9 (SIGKILL); restarted as incarnation {g}",
                    g - 1
                )),
                "{route}: {stderr}"
            );
        }
    }
}

/// steadfast-report turns a results directory (as benches/compare/run.sh writes it)
/// into the plots and the Markdown section (worst ratio per metric, every size, the
/// phases by rank count); a directory without results is an
/// error naming the missing file.
#[test]
fn report_writes_plots_and_table() {
    let dir = std::env::temp_dir().join(format!("steadfast-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("meta.tsv"), "date\t2026-11-22\n").unwrap();
    std::fs::write(
        dir.join("curves.tsv"),
        "steadfast shm\tlat\t1\t0.12\nsteadfast shm\tlat\t1024\t0.5\n\
         Open MPI sm\tlat\t1024\t0.25\n\
         steadfast shm\tbw\t1024\t3000\nsteadfast shm\tbw\t1048576\t14000\n\
         steadfast shm\tppbw\t1024\t2048\nlibfabric shm (fi_pingpong)\tppbw\t1024\t1024\n\
         steadfast shm\tmr\t8\t1000000\nOpen MPI sm\tmr\t8\t2000000\n",
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
    for f in [
        "slowdown.svg",
        "latency.svg",
        "bandwidth.svg",
        "pingpong.svg",
        "rate.svg",
        "phases.svg",
    ] {
        let svg = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("steadfast"), "{f}");
    }
    let md = std::fs::read_to_string(dir.join("comparison.md")).unwrap();
    // The ratio at every size, and the worst per metric and peer.
    assert!(md.contains("| 1 B | 0.120 | – | – |"), "{md}");
    assert!(md.contains("| 1 KiB | 0.500 | 0.250 | **2.00** |"), "{md}");
    assert!(
        md.contains(
            "| latency | shm | Open MPI sm | **2.00** | 1 KiB | **behind at 1 of 1 sizes** |"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "| message rate | shm | Open MPI sm | **0.50** | 8 B | **behind at 1 of 1 sizes** |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| agree failure free (us) | Open MPI ULFM | 0.350 | 0.720 | 0.49 |"),
        "{md}"
    );
    assert!(
        md.contains(
            "| shrink (us) | ULFM | Open MPI ULFM | 0.05 | 2 ranks | ahead at all 1 rank counts |"
        ),
        "{md}"
    );
    assert!(md.contains("](benches/results/rate.svg)"), "{md}");
    assert!(
        md.contains(
            "| bandwidth, ping-pong | shm | libfabric shm (fi_pingpong) | 2.00 | 1 KiB | ahead at all 1 sizes |"
        ),
        "{md}"
    );
    let slowdown = std::fs::read_to_string(dir.join("slowdown.svg")).unwrap();
    assert!(
        slowdown.contains("latency shm vs Open MPI sm"),
        "{slowdown}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let missing = Command::new(report).arg(&dir).output().unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("meta.tsv"));
}
