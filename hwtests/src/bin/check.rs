//! `steadfast-hwtests-check REPORT.json [--skipped a,b] [--passed c,d] [--ranks N]`:
//! checks a `steadfast-hwtests --json` report (nothing failed; the named tests skipped
//! with a reason, or passed); prints each problem and exits 1 if there is any.

use clap::Parser;
use steadfast_hwtests::check::{check, Expect};
use steadfast_hwtests::report::Report;

/// Checks a steadfast-hwtests JSON report.
#[derive(Parser, Debug)]
#[command(name = "steadfast-hwtests-check", version)]
struct Args {
    /// The report (`steadfast-hwtests --json` output).
    report: std::path::PathBuf,
    /// Tests or prefixes that must be skipped with a reason (comma-separated).
    #[arg(long, value_delimiter = ',')]
    skipped: Vec<String>,
    /// Tests that must have passed (comma-separated).
    #[arg(long, value_delimiter = ',')]
    passed: Vec<String>,
    /// Ranks the report must cover.
    #[arg(long)]
    ranks: Option<u32>,
}

fn main() {
    let args = Args::parse();
    let text = match std::fs::read_to_string(&args.report) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", args.report.display());
            std::process::exit(1);
        }
    };
    let report: Report = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "{}: not a steadfast-hwtests report: {e}",
                args.report.display()
            );
            std::process::exit(1);
        }
    };
    let expect = Expect {
        skipped: args.skipped,
        passed: args.passed,
        ranks: args.ranks,
    };
    let problems = check(&report, &expect);
    for p in &problems {
        eprintln!("{}: {p}", args.report.display());
    }
    if !problems.is_empty() {
        std::process::exit(1);
    }
    println!(
        "{}: ok ({} passed, {} skipped)",
        args.report.display(),
        report.summary.passed,
        report.summary.skipped
    );
}
