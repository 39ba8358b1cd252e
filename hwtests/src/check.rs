//! Checks a `--json` report against what a site expects: nothing failed, the summary
//! agrees with the tests, named tests skipped *with a reason* (absent hardware), named
//! tests passed. Used by `scripts/hwtests.sh` (through `steadfast-hwtests-check`) and
//! the integration test.

use crate::report::{Report, Status, SCHEMA_VERSION};

/// What a report must show.
#[derive(Clone, Debug, Default)]
pub struct Expect {
    /// Tests (or name prefixes: `fabric.gni` covers `fabric.gni.*`) that must be
    /// skipped with a reason, and never passed.
    pub skipped: Vec<String>,
    /// Tests that must have passed.
    pub passed: Vec<String>,
    /// Number of ranks the report must cover, if given.
    pub ranks: Option<u32>,
}

/// Every problem found (empty: the report is as expected).
pub fn check(report: &Report, expect: &Expect) -> Vec<String> {
    let mut problems = Vec::new();
    if report.schema_version != SCHEMA_VERSION {
        problems.push(format!(
            "schema_version {} (expected {SCHEMA_VERSION})",
            report.schema_version
        ));
    }
    for t in report.tests.iter().filter(|t| t.status == Status::Failed) {
        problems.push(format!(
            "{} failed: {}",
            t.name,
            t.reason.as_deref().unwrap_or("")
        ));
    }
    let count = |s| report.tests.iter().filter(|t| t.status == s).count() as u32;
    let s = report.summary;
    if (s.passed, s.failed, s.skipped)
        != (
            count(Status::Passed),
            count(Status::Failed),
            count(Status::Skipped),
        )
    {
        problems.push(format!("summary {s:?} does not match the tests"));
    }
    for want in &expect.skipped {
        let covered = |n: &str| n == want || n.starts_with(&format!("{want}."));
        let matching: Vec<_> = report.tests.iter().filter(|t| covered(&t.name)).collect();
        if matching.is_empty() {
            problems.push(format!(
                "{want}: not reported (must be skipped with a reason)"
            ));
        }
        for t in matching {
            let reason = t.reason.as_deref().unwrap_or("").trim();
            if t.status != Status::Skipped || reason.is_empty() {
                problems.push(format!(
                    "{}: {:?} (reason {reason:?}), must be skipped with a reason",
                    t.name, t.status
                ));
            }
        }
    }
    for want in &expect.passed {
        match report.tests.iter().find(|t| &t.name == want) {
            Some(t) if t.status == Status::Passed => {}
            Some(t) => problems.push(format!(
                "{want}: {:?} ({}), must pass",
                t.status,
                t.reason.as_deref().unwrap_or("")
            )),
            None => problems.push(format!("{want}: not reported (must pass)")),
        }
    }
    if let Some(n) = expect.ranks {
        if report.ranks != n {
            problems.push(format!(
                "report covers {} ranks, expected {n}",
                report.ranks
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::Discovery;
    use crate::report::TestResult;

    fn report(tests: Vec<TestResult>) -> Report {
        Report::new(2, 1, Discovery::default(), tests, Vec::new())
    }

    #[test]
    fn absent_hardware_must_be_skipped_with_a_reason_never_passed() {
        let expect = Expect {
            skipped: vec!["fabric.gni".into()],
            passed: vec!["world.p2p".into()],
            ranks: Some(2),
        };
        let good = report(vec![
            TestResult::skipped("fabric.gni", "not present"),
            TestResult::passed("world.p2p"),
        ]);
        assert!(check(&good, &expect).is_empty());
        let passed_gni = report(vec![
            TestResult::passed("fabric.gni.endpoint"),
            TestResult::passed("world.p2p"),
        ]);
        assert_eq!(check(&passed_gni, &expect).len(), 1);
        let no_reason = report(vec![
            TestResult::skipped("fabric.gni", " "),
            TestResult::passed("world.p2p"),
        ]);
        assert_eq!(check(&no_reason, &expect).len(), 1);
        let missing = report(vec![TestResult::passed("world.p2p")]);
        assert!(check(&missing, &expect)[0].contains("not reported"));
    }

    #[test]
    fn failures_wrong_rank_counts_and_missing_passes_are_reported() {
        let expect = Expect {
            passed: vec!["ft.shrink".into()],
            ranks: Some(4),
            ..Expect::default()
        };
        let r = report(vec![TestResult::failed("world.p2p", "corrupted")]);
        let problems = check(&r, &expect);
        assert_eq!(problems.len(), 3, "{problems:?}");
        let mut tampered = report(vec![TestResult::passed("ft.shrink")]);
        tampered.summary.passed = 0;
        assert!(check(&tampered, &Expect::default())[0].contains("summary"));
    }
}
