//! The report: one result per test, the probes, what was discovered, and a summary.
//!
//! [`Report`] is the stable `--json` document (schema [`SCHEMA_VERSION`]). Fields are
//! only ever added; a change of meaning or a removal bumps the version. Collecting it
//! across clusters: `steadfast-hwtests --json > $(hostname)-hwtests.json`.
//!
//! ```
//! use steadfast_hwtests::report::{Status, TestResult};
//! let r = TestResult::skipped("fabric.gni", "provider gni not present");
//! let json = serde_json::to_string(&r).unwrap();
//! assert_eq!(
//!     json,
//!     r#"{"name":"fabric.gni","status":"skipped","reason":"provider gni not present","ranks":[]}"#
//! );
//! assert_eq!(r.status, Status::Skipped);
//! ```

use serde::{Deserialize, Serialize};

use crate::discover::Discovery;

/// Version of the JSON layout of [`Report`].
pub const SCHEMA_VERSION: u32 = 1;

/// How a test ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// It ran and every check held.
    Passed,
    /// It ran and a check failed (the reason says which, on which rank).
    Failed,
    /// It did not run here (the reason says why: absent hardware, too few ranks...).
    Skipped,
}

/// One test's result (merged over the ranks that ran it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestResult {
    /// Dotted name: `discover.*`, `fabric.<provider>.*`, `shm.*`, `world.*`, `ft.*`.
    pub name: String,
    /// Outcome.
    pub status: Status,
    /// Why it failed or was skipped; `null` when it passed.
    pub reason: Option<String>,
    /// The world ranks that reported it (empty in a single rank's own list).
    #[serde(default)]
    pub ranks: Vec<u32>,
}

impl TestResult {
    /// A passed test.
    pub fn passed(name: impl Into<String>) -> Self {
        Self::new(name, Status::Passed, None)
    }

    /// A failed test and why.
    pub fn failed(name: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::new(name, Status::Failed, Some(reason.into()))
    }

    /// A skipped test and why.
    pub fn skipped(name: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::new(name, Status::Skipped, Some(reason.into()))
    }

    fn new(name: impl Into<String>, status: Status, reason: Option<String>) -> Self {
        TestResult {
            name: name.into(),
            status,
            reason,
            ranks: Vec::new(),
        }
    }

    /// `Ok` passes, `Err(reason)` fails.
    pub fn from_result(name: impl Into<String>, result: Result<(), String>) -> Self {
        match result {
            Ok(()) => Self::passed(name),
            Err(reason) => Self::failed(name, reason),
        }
    }
}

/// A short performance measurement. Never asserted: the figure and, when the
/// provider's own `fi_pingpong` ran, the ratio to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// Dotted name: `fabric.<provider>.latency_8b`, `world.agree`, ...
    pub name: String,
    /// Measured value.
    pub value: f64,
    /// Unit of `value` and `reference` (`us`, `MB/s`).
    pub unit: String,
    /// The same figure from the reference tool (`fi_pingpong`), when it ran.
    pub reference: Option<f64>,
    /// `value / reference` (for latency, above 1 means slower than the reference).
    pub ratio: Option<f64>,
    /// How it was measured.
    pub note: String,
}

/// Counts over the tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Tests that passed.
    pub passed: u32,
    /// Tests that failed.
    pub failed: u32,
    /// Tests skipped.
    pub skipped: u32,
}

/// The whole report of one run (printed by rank 0 for the job).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Version of steadfast-hwtests.
    pub version: String,
    /// Ranks in the job (1 when run alone).
    pub ranks: u32,
    /// Distinct nodes among them.
    pub nodes: u32,
    /// What rank 0 found on its node.
    pub discovery: Discovery,
    /// Every test, in the order they ran.
    pub tests: Vec<TestResult>,
    /// Performance probes (rank 0's view).
    pub probes: Vec<Probe>,
    /// Counts of `tests` by status.
    pub summary: Summary,
}

impl Report {
    /// Builds the report and its summary.
    pub fn new(
        ranks: u32,
        nodes: u32,
        discovery: Discovery,
        tests: Vec<TestResult>,
        probes: Vec<Probe>,
    ) -> Self {
        let mut summary = Summary::default();
        for t in &tests {
            match t.status {
                Status::Passed => summary.passed += 1,
                Status::Failed => summary.failed += 1,
                Status::Skipped => summary.skipped += 1,
            }
        }
        Report {
            schema_version: SCHEMA_VERSION,
            version: env!("CARGO_PKG_VERSION").to_string(),
            ranks,
            nodes,
            discovery,
            tests,
            probes,
            summary,
        }
    }

    /// Whether nothing failed (the exit status is 0 exactly then).
    pub fn ok(&self) -> bool {
        self.summary.failed == 0
    }

    /// The human-readable report: a header, one line per test, the probes, a summary.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "steadfast-hwtests {}: {} rank(s) on {} node(s), launcher {}\n",
            self.version, self.ranks, self.nodes, self.discovery.launcher.name
        );
        for line in self.discovery.lines() {
            s.push_str(&format!("  {line}\n"));
        }
        let width = self.tests.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for t in &self.tests {
            let outcome = match (t.status, &t.reason) {
                (Status::Passed, _) => "passed".to_string(),
                (Status::Failed, r) => format!("failed: {}", r.as_deref().unwrap_or("")),
                (Status::Skipped, r) => format!("skipped: {}", r.as_deref().unwrap_or("")),
            };
            s.push_str(&format!("{:width$}  {outcome}\n", t.name));
        }
        for p in &self.probes {
            s.push_str(&format!("probe {} = {:.2} {}", p.name, p.value, p.unit));
            if let (Some(r), Some(q)) = (p.reference, p.ratio) {
                s.push_str(&format!(" (reference {r:.2} {}, ratio {q:.2})", p.unit));
            }
            s.push_str(&format!(" [{}]\n", p.note));
        }
        s.push_str(&format!(
            "summary: {} passed, {} failed, {} skipped\n",
            self.summary.passed, self.summary.failed, self.summary.skipped
        ));
        s
    }
}

/// Merges the ranks' own result lists (`(rank, results)`), keeping first-seen order:
/// a test failed if it failed on any rank (the reasons name the ranks), passed if it
/// passed on some rank and failed on none, and is skipped only if every rank skipped it.
pub fn merge(per_rank: &[(u32, Vec<TestResult>)]) -> Vec<TestResult> {
    let mut merged: Vec<TestResult> = Vec::new();
    for (rank, results) in per_rank {
        for r in results {
            let at = match merged.iter().position(|m| m.name == r.name) {
                Some(i) => i,
                None => {
                    merged.push(TestResult {
                        ranks: Vec::new(),
                        ..r.clone()
                    });
                    merged.len() - 1
                }
            };
            let m = &mut merged[at];
            m.ranks.push(*rank);
            let tagged = r.reason.as_ref().map(|why| format!("rank {rank}: {why}"));
            if m.ranks.len() == 1 {
                m.status = r.status;
                m.reason = if r.status == Status::Failed {
                    tagged
                } else {
                    r.reason.clone()
                };
                continue;
            }
            match (m.status, r.status) {
                (Status::Failed, Status::Failed) => {
                    let prev = m.reason.take().unwrap_or_default();
                    m.reason = Some(format!("{prev}; {}", tagged.unwrap_or_default()));
                }
                (_, Status::Failed) => {
                    m.status = Status::Failed;
                    m.reason = tagged;
                }
                (Status::Skipped, Status::Passed) => {
                    m.status = Status::Passed;
                    m.reason = None;
                }
                _ => {}
            }
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_fails_if_any_rank_failed_and_passes_over_skips() {
        let a = vec![
            TestResult::passed("x"),
            TestResult::skipped("y", "no"),
            TestResult::skipped("z", "absent"),
        ];
        let b = vec![
            TestResult::failed("x", "bad data"),
            TestResult::passed("y"),
            TestResult::skipped("z", "absent"),
        ];
        let m = merge(&[(0, a), (1, b)]);
        assert_eq!(m[0].status, Status::Failed);
        assert_eq!(m[0].reason.as_deref(), Some("rank 1: bad data"));
        assert_eq!(m[0].ranks, vec![0, 1]);
        assert_eq!(m[1].status, Status::Passed);
        assert_eq!(m[1].reason, None);
        assert_eq!(m[2].status, Status::Skipped);
        assert_eq!(m[2].reason.as_deref(), Some("absent"));
    }

    #[test]
    fn merge_keeps_every_failing_rank() {
        let m = merge(&[
            (0, vec![TestResult::failed("x", "a")]),
            (2, vec![TestResult::failed("x", "b")]),
        ]);
        assert_eq!(m[0].reason.as_deref(), Some("rank 0: a; rank 2: b"));
    }

    #[test]
    fn summary_counts_and_exit_rule() {
        let r = Report::new(
            1,
            1,
            Discovery::default(),
            vec![
                TestResult::passed("a"),
                TestResult::skipped("b", "why"),
                TestResult::failed("c", "oops"),
            ],
            Vec::new(),
        );
        assert_eq!(
            r.summary,
            Summary {
                passed: 1,
                failed: 1,
                skipped: 1
            }
        );
        assert!(!r.ok());
        let text = r.to_text();
        assert!(text.contains("b  skipped: why"), "{text}");
        assert!(text.contains("c  failed: oops"), "{text}");
        assert!(text.contains("summary: 1 passed, 1 failed, 1 skipped"));
        let back: Report = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
