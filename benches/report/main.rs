//! `steadfast-report DIR`: turns the raw results `benches/compare/run.sh` writes into
//! DIR (`meta.tsv`, `curves.tsv`, `pairs.tsv`, `floors.txt`, `sim.txt`) into the
//! plots (`slowdown.svg`: steadfast against each peer at every size, `latency.svg`,
//! `bandwidth.svg` (window of 64), `pingpong.svg` (ping-pong bandwidth) and `rate.svg`
//! when the run measured them, `phases.svg`) and the Markdown (`comparison.md`) the
//! README shows: a summary
//! line per metric with the worst ratio to each peer, the ratio at every size, the
//! ULFM phases by rank count.

mod data;
mod plots;
mod ratios;
mod table;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use data::Results;

/// A plot: its file, what it shows, how to draw it.
type Plot = (
    &'static str,
    &'static str,
    fn(&Results, &Path) -> Result<(), String>,
);

const PLOTS: [Plot; 6] = [
    (
        "slowdown.svg",
        "how many times slower steadfast is than each peer at each size (above 1: behind)",
        plots::slowdown,
    ),
    (
        "latency.svg",
        "one-way latency against message size",
        plots::latency,
    ),
    (
        "bandwidth.svg",
        "bandwidth (window of 64) against message size",
        plots::bandwidth,
    ),
    (
        "pingpong.svg",
        "ping-pong bandwidth (one message in flight) against message size",
        plots::pingpong,
    ),
    ("rate.svg", "message rate against message size", plots::rate),
    (
        "phases.svg",
        "ULFM phases, steadfast against Open MPI",
        plots::phases,
    ),
];

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: steadfast-report DIR (the directory benches/compare/run.sh wrote)");
        return ExitCode::from(2);
    };
    let results = match Results::load(&dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("steadfast-report: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut ok = true;
    let mut written = Vec::new();
    for (file, alt, draw) in PLOTS {
        // The message rate and ping-pong bandwidth are optional: older runs did not
        // measure them.
        let optional = match file {
            "rate.svg" => Some("mr"),
            "pingpong.svg" => Some("ppbw"),
            _ => None,
        };
        if optional.is_some_and(|m| results.series(m).is_empty()) {
            continue;
        }
        match draw(&results, &dir.join(file)) {
            Ok(()) => {
                println!("wrote {}", dir.join(file).display());
                written.push((file, alt));
            }
            Err(e) => {
                eprintln!("steadfast-report: {file}: {e}");
                ok = false;
            }
        }
    }
    let md = dir.join("comparison.md");
    match std::fs::write(&md, table::markdown(&results, &written)) {
        Ok(()) => println!("wrote {}", md.display()),
        Err(e) => {
            eprintln!("steadfast-report: {}: {e}", md.display());
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
