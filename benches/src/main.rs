//! `steadfast-bench`: the multi-process microbenchmark suite. Launch it like any rank
//! program (`steadfast-run -n 2 steadfast-bench latency`, `mpiexec.hydra`, `srun`).
//!
//! Point to point (ranks 0 and 1; OSU-style tables): `latency`, `bw` (window of 64),
//! `bibw`; message rate (OSU's `osu_mbw_mr`: rank i sends to rank i + n/2, windows of
//! 64): `mbw_mr`, and with threads (T threads per rank, private or shared
//! communicators): `mt_mr`; one-sided (rank 0 into rank 1's window): `put`, `get`; collectives:
//! `allreduce`; fault tolerance (the phases ICLDisco's ulfm-testing reports): `agree`,
//! `revoke`, `shrink`, `detect`; restart in place: `restart` (under `steadfast-run
//! --no-kill`). Every number is the median of `--repetitions` runs of
//! `--iterations` operations after `--warmup`, with min and max.
//!
//! `--json` prints one JSON document at rank 0 instead of the table (written with
//! serde, the shape is `report::Document`'s): `benchmark`, `first_column`, `column`
//! (`name`, `unit`), `second_column` (mbw_mr only), `facts` (an object of strings, in
//! the table header's order) and `rows` (`label`, `median`, `min`, `max`, and `second`
//! with a second column).
//!
//! Bad input is one line on stderr and exit status 2: a flag out of range names the
//! value and the bound (see `args.rs`). A communication error during a benchmark that
//! injects no failure (a peer died, the transport broke) is one line naming the rank,
//! the operation and the error, and exit status 1, as is a closed stdout; a panic is a
//! bug.

mod args;
mod ft;
mod p2p;
mod rate;
mod report;
mod rma;
mod threads;

use std::fmt::Display;

use clap::{Parser, Subcommand};
use steadfast::params::Params;
use steadfast::World;

pub use args::{Common, SizeRange};

#[derive(Parser, Debug)]
#[command(
    name = "steadfast-bench",
    about = "steadfast's multi-process microbenchmarks"
)]
struct Cli {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Subcommand, Debug)]
enum Bench {
    /// One-way latency between ranks 0 and 1 (half the round trip).
    Latency(Common),
    /// Bandwidth from rank 0 to rank 1, 64 messages in flight.
    Bw(Common),
    /// Bidirectional bandwidth between ranks 0 and 1, 64 messages each way.
    Bibw(Common),
    /// Message rate and bandwidth of pairs (rank i sends to rank i + n/2), 64
    /// messages in flight per pair, as OSU's osu_mbw_mr (an even number of ranks).
    #[command(name = "mbw_mr")]
    MbwMr(Common),
    /// Multithreaded message rate between ranks 0 and 1 (2 ranks): T threads per
    /// rank, thread t sending 64-message windows of `--min` bytes (8) to thread t,
    /// each pair on a communicator of its own and/or all on one.
    #[command(name = "mt_mr")]
    MtMr {
        #[command(flatten)]
        common: Common,
        /// Thread counts per rank, comma separated (1 to 64 each).
        #[arg(long, default_value = "1,2,4,8")]
        threads: String,
        /// Communicators: private (one per thread pair), shared (one for all) or both.
        #[arg(long, default_value = "both")]
        comms: String,
    },
    /// Latency of a put from rank 0 into rank 1's window (complete at the target).
    Put(Common),
    /// Latency of a get by rank 0 from rank 1's window.
    Get(Common),
    /// MPI_Allreduce-style sum of u64 values over every rank.
    Allreduce(Common),
    /// Agreement: failure-free; then the last rank dies: first agreement after it,
    /// stabilization, agreement with the hole.
    Agree(Common),
    /// Revoke a communicator all ranks loop agreements on: time until every rank is
    /// interrupted; then agreement noise on a separate communicator.
    Revoke(Common),
    /// Shrink after the last rank dies, and failure-free.
    Shrink(Common),
    /// Restart in place: rank 0 has the last rank SIGKILLed, restarts it and times
    /// its answer (kill to answer; the restart request alone), --repetitions rounds.
    /// Under `steadfast-run --no-kill`, over shared memory or the fabric.
    Restart(Common),
    /// SIGKILL of the last rank to the first ProcFailed at every survivor.
    Detect {
        #[command(flatten)]
        common: Common,
        /// Which reports may tell: all, launcher (its report and heartbeats) or
        /// heartbeat (heartbeats alone).
        #[arg(long, default_value = "all")]
        detectors: String,
    },
}

/// Checks `common` for `bench` (with its sizes, if it has any) before any rank starts
/// talking.
fn checked(mut common: Common, bench: &str, range: Option<SizeRange>) -> Common {
    common.resolve(bench, range).unwrap_or_else(|e| fail(&e));
    common
}

fn init(common: &Common, detectors: Option<&str>) -> World {
    let mut params = Params::load().unwrap_or_else(|e| fail(&e.to_string()));
    let mut set = |name: &str, value: &str| {
        params
            .set(name, value)
            .unwrap_or_else(|e| fail(&e.to_string()))
    };
    match common.route.as_str() {
        "auto" => {}
        "fabric" => set("route", "fabric"),
        // Every rank on one node: force shared memory by a common node id.
        "shm" => set("node_id", "steadfast-bench-one-node"),
        other => fail(&format!("--route {other:?}: expected auto, shm or fabric")),
    }
    set("bind", &common.bind);
    if let Some(d) = detectors {
        set("detectors", d);
    }
    let boot = steadfast::bootstrap::from_env().unwrap_or_else(|e| fail(&e.to_string()));
    World::init_with(boot, params).unwrap_or_else(|e| fail(&e.to_string()))
}

/// Bad input: one line, exit status 2.
fn fail(why: &str) -> ! {
    say(format_args!("{why}"));
    std::process::exit(2)
}

/// A failure while running (a peer's death, a transport error, memory): one line
/// naming the rank, exit status 1.
fn fail_at(rank: u32, why: impl Display) -> ! {
    say(format_args!("rank {rank}: {why}"));
    std::process::exit(1)
}

/// Stdout failed (closed by the reader, full disk): one line, exit status 1.
fn fail_output(e: std::io::Error) -> ! {
    say(format_args!("writing the results: {e}"));
    std::process::exit(1)
}

/// Writes "steadfast-bench: LINE" to stderr in one write, so that the lines of ranks
/// sharing the launcher's stderr do not interleave.
fn say(line: std::fmt::Arguments) {
    use std::io::Write;
    let text = format!("steadfast-bench: {line}\n");
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Turns an error of a benchmark's operation into [`fail_at`]'s line.
pub(crate) trait OrFail<T> {
    /// The value, or exit with "rank RANK: WHAT: the error".
    fn or_fail(self, rank: u32, what: impl Display) -> T;
}

impl<T, E: Display> OrFail<T> for Result<T, E> {
    fn or_fail(self, rank: u32, what: impl Display) -> T {
        match self {
            Ok(v) => v,
            Err(e) => fail_at(rank, format_args!("{what}: {e}")),
        }
    }
}

/// Parses the command line; a usage error is one line (help and version print as
/// usual).
fn parse() -> Cli {
    use clap::error::ErrorKind;
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            e.exit()
        }
        Err(e) if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("bad command line");
            fail(first.trim_start_matches("error: "))
        }
    }
}

/// Each benchmark that borrows the world ends with `World::finalize`, the collective
/// exit: a rank that left without it looks failed to a rank still in the final
/// barrier, and a runtime collective gives up once any member is known failed.
fn main() {
    let cli = parse();
    match cli.bench {
        Bench::Latency(c) => {
            let c = checked(c, "latency", Some(p2p::LATENCY_SIZES));
            let world = init(&c, None);
            p2p::latency(&world, &c);
            world.finalize();
        }
        Bench::Bw(c) => {
            let c = checked(c, "bw", Some(p2p::BANDWIDTH_SIZES));
            let world = init(&c, None);
            p2p::bandwidth(&world, &c, false);
            world.finalize();
        }
        Bench::Bibw(c) => {
            let c = checked(c, "bibw", Some(p2p::BANDWIDTH_SIZES));
            let world = init(&c, None);
            p2p::bandwidth(&world, &c, true);
            world.finalize();
        }
        Bench::MbwMr(c) => {
            let c = checked(c, "mbw_mr", Some(rate::SIZES));
            let world = init(&c, None);
            rate::mbw_mr(&world, &c);
            world.finalize();
        }
        Bench::MtMr {
            common,
            threads,
            comms,
        } => {
            let c = checked(common, "mt_mr", Some(threads::SIZES));
            let counts = threads::parse_threads(&threads).unwrap_or_else(|e| fail(&e));
            let layouts = threads::Layout::parse_list(&comms).unwrap_or_else(|e| fail(&e));
            let world = init(&c, None);
            threads::mt_mr(&world, &c, &counts, &layouts);
            world.finalize();
        }
        Bench::Put(c) => {
            let c = checked(c, "put", Some(rma::SIZES));
            let world = init(&c, None);
            rma::latency(&world, &c, rma::OneSided::Put);
            world.finalize();
        }
        Bench::Get(c) => {
            let c = checked(c, "get", Some(rma::SIZES));
            let world = init(&c, None);
            rma::latency(&world, &c, rma::OneSided::Get);
            world.finalize();
        }
        Bench::Allreduce(c) => {
            let c = checked(c, "allreduce", Some(p2p::ALLREDUCE_SIZES));
            let world = init(&c, None);
            p2p::allreduce(&world, &c);
            world.finalize();
        }
        Bench::Agree(c) => {
            let c = checked(c, "agree", None);
            ft::agree(init(&c, None), &c)
        }
        Bench::Revoke(c) => {
            let c = checked(c, "revoke", None);
            ft::revoke(init(&c, None), &c)
        }
        Bench::Shrink(c) => {
            let c = checked(c, "shrink", None);
            ft::shrink(init(&c, None), &c)
        }
        Bench::Restart(c) => {
            let c = checked(c, "restart", None);
            ft::restart(init(&c, None), &c)
        }
        Bench::Detect { common, detectors } => {
            let c = checked(common, "detect", None);
            ft::detect(init(&c, Some(&detectors)), &c, &detectors)
        }
    }
}
