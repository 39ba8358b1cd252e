//! `steadfast-hwtests [--json] [--provider P]... [--ft auto|on|off] [--no-reference]`:
//! runs the hardware test suite (see the crate documentation) and prints the report on
//! rank 0 (or alone). Exit status 0 exactly when no test failed; 2 for bad arguments or
//! parameters. Log level: `STEADFAST_HWTESTS_LOG` (error, warn, info, debug; default
//! warn), on stderr.

use clap::{Parser, ValueEnum};
use steadfast_hwtests::suite::{self, FtMode, Options};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Ft {
    Auto,
    On,
    Off,
}

/// The suite a user runs on a new cluster: discovery, providers, shared memory, fault
/// tolerance, probes.
#[derive(Parser, Debug)]
#[command(name = "steadfast-hwtests", version)]
struct Args {
    /// Print the report as JSON (the `Report` struct, schema_version 1) instead of text.
    #[arg(long)]
    json: bool,
    /// Test only this provider (repeatable); default: gni, cxi, verbs, efa, tcp,
    /// tcp;ofi_rxm, shm.
    #[arg(long = "provider", value_name = "P")]
    providers: Vec<String>,
    /// Fault-tolerance tests (the last rank SIGKILLs itself): auto runs them with 3+
    /// ranks under a launcher known to survive a death (steadfast-run, srun --no-kill).
    #[arg(long, value_enum, default_value = "auto")]
    ft: Ft,
    /// Do not run fi_pingpong for reference figures.
    #[arg(long)]
    no_reference: bool,
}

struct StderrLog(log::LevelFilter);

impl log::Log for StderrLog {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= self.0
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            eprintln!("steadfast-hwtests {}: {}", r.level(), r.args());
        }
    }
    fn flush(&self) {}
}

fn main() {
    let args = Args::parse();
    let level = std::env::var("STEADFAST_HWTESTS_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(log::LevelFilter::Warn);
    let logger: &'static StderrLog = Box::leak(Box::new(StderrLog(level)));
    if log::set_logger(logger).is_ok() {
        log::set_max_level(level);
    }
    let opts = Options {
        providers: args.providers,
        ft: match args.ft {
            Ft::Auto => FtMode::Auto,
            Ft::On => FtMode::On,
            Ft::Off => FtMode::Off,
        },
        reference: !args.no_reference,
    };
    let outcome = match suite::run(&opts) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("steadfast-hwtests: {e}");
            std::process::exit(2);
        }
    };
    if let Some(report) = &outcome.report {
        if args.json {
            match serde_json::to_string_pretty(report) {
                Ok(s) => println!("{s}"),
                Err(e) => {
                    eprintln!("steadfast-hwtests: cannot serialise the report: {e}");
                    std::process::exit(1);
                }
            }
        } else {
            print!("{}", report.to_text());
        }
    } else if !outcome.own_ok {
        for t in outcome
            .own
            .iter()
            .filter(|t| t.status == steadfast_hwtests::report::Status::Failed)
        {
            eprintln!("{}  failed: {}", t.name, t.reason.as_deref().unwrap_or(""));
        }
    }
    std::process::exit(if outcome.own_ok { 0 } else { 1 });
}
