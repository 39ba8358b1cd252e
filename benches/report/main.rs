//! `steadfast-report DIR`: turns the raw results `benches/compare/run.sh` writes into
//! DIR (`meta.tsv`, `curves.tsv`, `pairs.tsv`, `floors.txt`, `sim.txt`) into the
//! plots (`latency.svg`, `bandwidth.svg`, `phases.svg`) and the Markdown table
//! (`comparison.md`) the README shows.

mod data;
mod plots;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: steadfast-report DIR (the directory benches/compare/run.sh wrote)");
        return ExitCode::from(2);
    };
    let results = match data::Results::load(&dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("steadfast-report: {e}");
            return ExitCode::FAILURE;
        }
    };
    let steps: [(&str, Result<(), String>); 4] = [
        (
            "latency.svg",
            plots::latency(&results, &dir.join("latency.svg")),
        ),
        (
            "bandwidth.svg",
            plots::bandwidth(&results, &dir.join("bandwidth.svg")),
        ),
        (
            "phases.svg",
            plots::phases(&results, &dir.join("phases.svg")),
        ),
        (
            "comparison.md",
            std::fs::write(dir.join("comparison.md"), table::markdown(&results))
                .map_err(|e| e.to_string()),
        ),
    ];
    let mut ok = true;
    for (name, r) in steps {
        match r {
            Ok(()) => println!("wrote {}", dir.join(name).display()),
            Err(e) => {
                eprintln!("steadfast-report: {name}: {e}");
                ok = false;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
