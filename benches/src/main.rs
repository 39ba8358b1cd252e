//! `steadfast-bench`: the multi-process microbenchmark suite. Launch it like any rank
//! program (`steadfast-run -n 2 steadfast-bench latency`, `mpiexec.hydra`, `srun`).
//!
//! Point to point (ranks 0 and 1; OSU-style tables): `latency`, `bw` (window of 64),
//! `bibw`; one-sided (rank 0 into rank 1's window): `put`, `get`; collectives: `allreduce`; fault tolerance (the phases ICLDisco's
//! ulfm-testing reports): `agree`, `revoke`, `shrink`, `detect`. Every number is the
//! median of `--repetitions` runs of `--iterations` operations after `--warmup`, with
//! min and max; `--json` prints one JSON document instead of the table.

mod ft;
mod p2p;
mod report;
mod rma;

use clap::{Parser, Subcommand};
use steadfast::params::Params;
use steadfast::World;

/// Options shared by every subcommand.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// Smallest message size in bytes (point to point, allreduce).
    #[arg(long, default_value_t = 0)]
    pub min: usize,
    /// Largest message size in bytes.
    #[arg(long, default_value_t = 4 << 20)]
    pub max: usize,
    /// Operations per repetition (fewer for large sizes).
    #[arg(long, default_value_t = 10_000)]
    pub iterations: usize,
    /// Operations before measuring.
    #[arg(long, default_value_t = 1_000)]
    pub warmup: usize,
    /// Repetitions: the median, min and max over them are reported.
    #[arg(long, default_value_t = 5)]
    pub repetitions: usize,
    /// Path between ranks: auto (shm within a node, fabric across), shm, or fabric.
    #[arg(long, default_value = "auto")]
    pub route: String,
    /// Core binding: auto, core or none.
    #[arg(long, default_value = "auto")]
    pub bind: String,
    /// Print JSON instead of the OSU-style table.
    #[arg(long)]
    pub json: bool,
}

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

fn fail(why: &str) -> ! {
    eprintln!("steadfast-bench: {why}");
    std::process::exit(2)
}

fn main() {
    let cli = Cli::parse();
    match cli.bench {
        Bench::Latency(c) => p2p::latency(&init(&c, None), &c),
        Bench::Bw(c) => p2p::bandwidth(&init(&c, None), &c, false),
        Bench::Bibw(c) => p2p::bandwidth(&init(&c, None), &c, true),
        Bench::Put(c) => rma::latency(&init(&c, None), &c, rma::OneSided::Put),
        Bench::Get(c) => rma::latency(&init(&c, None), &c, rma::OneSided::Get),
        Bench::Allreduce(c) => p2p::allreduce(&init(&c, None), &c),
        Bench::Agree(c) => ft::agree(init(&c, None), &c),
        Bench::Revoke(c) => ft::revoke(init(&c, None), &c),
        Bench::Shrink(c) => ft::shrink(init(&c, None), &c),
        Bench::Detect { common, detectors } => {
            ft::detect(init(&common, Some(&detectors)), &common, &detectors)
        }
    }
}
