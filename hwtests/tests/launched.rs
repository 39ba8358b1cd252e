//! The binary as a user runs it: alone, and under `steadfast-run -n 2` and `-n 3`
//! (the fault-tolerance tests); the JSON report is parsed and checked.

mod common;

use std::process::Command;
use std::time::Duration;

use steadfast_hwtests::check::{check, Expect};
use steadfast_hwtests::report::{Report, Status};

const LIMIT: Duration = Duration::from_secs(300);
const HW: &str = env!("CARGO_BIN_EXE_steadfast-hwtests");

fn report_of(out: &common::Output) -> Report {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); exit {:?}\nstdout:\n{}\nstderr:\n{}",
            out.code, out.stdout, out.stderr
        )
    })
}

fn assert_clean(report: &Report, expect: &Expect, out: &common::Output) {
    let problems = check(report, expect);
    assert!(
        problems.is_empty(),
        "{problems:#?}\nstderr:\n{}",
        out.stderr
    );
}

#[test]
fn alone_tests_the_fabric_between_two_threads_and_skips_what_needs_processes() {
    let mut cmd = Command::new(HW);
    cmd.args([
        "--json",
        "--no-reference",
        "--provider",
        "gni",
        "--provider",
        "tcp;ofi_rxm",
    ]);
    let out = common::run(cmd, LIMIT);
    let report = report_of(&out);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_clean(
        &report,
        &Expect {
            skipped: vec![
                "fabric.gni".into(),
                "world.p2p".into(),
                "ft.shrink".into(),
                "shm.xpmem".into(),
            ],
            passed: vec![
                "fabric.tcp;ofi_rxm.tagged.inject".into(),
                "fabric.tcp;ofi_rxm.tagged.eager".into(),
                "fabric.tcp;ofi_rxm.tagged.rendezvous".into(),
                "fabric.tcp;ofi_rxm.rma".into(),
                "fabric.tcp;ofi_rxm.registration.cache".into(),
            ],
            ranks: Some(1),
        },
        &out,
    );
    assert_eq!(report.discovery.launcher.name, "none");
    assert!(report
        .probes
        .iter()
        .any(|p| p.name == "fabric.tcp;ofi_rxm.latency_8b" && p.value > 0.0));
}

#[test]
fn two_ranks_under_steadfast_run_pass_the_shm_and_world_tests() {
    let mut cmd = Command::new(common::workspace_bin("steadfast-run"));
    cmd.args([
        "-n",
        "2",
        HW,
        "--json",
        "--no-reference",
        "--provider",
        "shm",
        "--provider",
        "efa",
    ]);
    let out = common::run(cmd, LIMIT);
    let report = report_of(&out);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_clean(
        &report,
        &Expect {
            skipped: vec!["fabric.efa".into(), "ft.detect".into()],
            passed: vec![
                "fabric.shm.tagged.rendezvous".into(),
                "world.routes".into(),
                "world.p2p".into(),
                "shm.messages".into(),
                "shm.cma".into(),
            ],
            ranks: Some(2),
        },
        &out,
    );
    let p2p = report.tests.iter().find(|t| t.name == "world.p2p").unwrap();
    assert_eq!(p2p.ranks, vec![0, 1], "both ranks reported");
}

#[test]
fn three_ranks_run_the_recovery_sequence_and_only_the_victim_dies() {
    let mut cmd = Command::new(common::workspace_bin("steadfast-run"));
    cmd.args([
        "-n",
        "3",
        HW,
        "--json",
        "--no-reference",
        "--provider",
        "cxi",
    ]);
    let out = common::run(cmd, LIMIT);
    let report = report_of(&out);
    // The launcher reports the victim (rank 2) and nothing else.
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("1 of 3 ranks failed"), "{}", out.stderr);
    assert!(
        out.stderr.contains("rank 2: killed by signal 9"),
        "{}",
        out.stderr
    );
    assert_clean(
        &report,
        &Expect {
            skipped: vec!["fabric.cxi".into(), "ft.restart".into()],
            passed: ["ft.detect", "ft.revoke", "ft.agree", "ft.shrink"]
                .map(String::from)
                .to_vec(),
            ranks: Some(3),
        },
        &out,
    );
    let shrink = report.tests.iter().find(|t| t.name == "ft.shrink").unwrap();
    assert_eq!(
        shrink.ranks,
        vec![0, 1],
        "the survivors report the recovery"
    );
    assert!(report.tests.iter().all(|t| t.status != Status::Failed));
}
