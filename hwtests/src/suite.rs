//! The order of a run: discovery; the fabric tests per provider (over the launcher's
//! bootstrap, or between two threads when alone); then, launched, the runtime's own
//! paths through `World`; the results gathered at rank 0; then the fault-tolerance
//! tests, whose survivors report over the shrunk communicator.

use std::time::Duration;

use steadfast::bootstrap::{self, Bootstrap, BootstrapError};
use steadfast::World;

use crate::discover::{self, Discovery};
use crate::exchange::{Exchange, InProcess};
use crate::fabric_suite::{self, Placement};
use crate::ft_suite;
use crate::gather::{self, RankResults};
use crate::report::{self, Probe, Report, TestResult};
use crate::settings::Settings;
use crate::world_suite;

/// When to run the fault-tolerance tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FtMode {
    /// With >= 3 ranks under a launcher known to keep the job when a rank dies.
    Auto,
    /// With >= 3 ranks, whatever the launcher (the user knows it survives a death).
    On,
    /// Never.
    Off,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Providers to test; empty: the hardware ones and the portable ones.
    pub providers: Vec<String>,
    /// Fault-tolerance tests.
    pub ft: FtMode,
    /// Run `fi_pingpong` for reference figures.
    pub reference: bool,
}

/// What a rank ends with: the report on rank 0 (or alone), and whether this rank's
/// own tests all held.
pub struct Outcome {
    /// The job's report (rank 0 only).
    pub report: Option<Report>,
    /// No test of this rank failed.
    pub own_ok: bool,
    /// This rank's own results (printed by ranks other than 0 when they failed).
    pub own: Vec<TestResult>,
}

/// Tests of the world suite, skipped together when there is no world.
const WORLD_TESTS: &[&str] = &[
    "world.routes",
    "world.p2p",
    "shm.messages",
    "world.fabric_messages",
    "shm.cma",
];

/// Runs everything this process can.
///
/// # Errors
/// Bad parameters, or a launcher environment that cannot be used (both before any test).
pub fn run(opts: &Options) -> Result<Outcome, String> {
    let settings = Settings::load()?;
    let (discovery, found) = discover::discover();
    let providers: Vec<String> = if opts.providers.is_empty() {
        fabric_suite::HARDWARE
            .iter()
            .map(|(n, _)| n.to_string())
            .chain(fabric_suite::PORTABLE.iter().map(|s| s.to_string()))
            .collect()
    } else {
        opts.providers.clone()
    };
    match bootstrap::from_env() {
        Err(BootstrapError::NotLaunched { .. }) => {
            Ok(alone(opts, &settings, discovery, found, &providers))
        }
        Err(e) => Err(format!("launcher environment found but unusable: {e}")),
        Ok(boot) => Ok(launched(
            opts, &settings, discovery, found, &providers, boot,
        )),
    }
}

/// Free huge pages of the default size, and that size in bytes.
fn hugepages(d: &Discovery) -> (u64, usize) {
    (
        d.hugepages.free,
        d.hugepages.default_size_kib as usize * 1024,
    )
}

fn own_ok(tests: &[TestResult]) -> bool {
    tests.iter().all(|t| t.status != report::Status::Failed)
}

/// Alone: the fabric tests between two threads; what needs processes is skipped.
fn alone(
    opts: &Options,
    settings: &Settings,
    discovery: Discovery,
    found: Vec<TestResult>,
    providers: &[String],
) -> Outcome {
    let place = Placement {
        domain: settings.domain(),
        nodes: 1,
        reference: opts.reference,
        hugepages: hugepages(&discovery),
    };
    let threads: Vec<_> = InProcess::group(2, Duration::from_secs(300))
        .into_iter()
        .map(|mut ex| {
            let providers = providers.to_vec();
            let place = place.clone();
            std::thread::spawn(move || {
                let mut tests = Vec::new();
                let mut probes = Vec::new();
                for p in &providers {
                    let (t, q) = fabric_suite::run_provider(&mut ex, p, &place);
                    tests.extend(t);
                    probes.extend(q);
                }
                (ex.rank(), tests, probes)
            })
        })
        .collect();
    let mut per_rank = Vec::new();
    let mut probes = Vec::new();
    for t in threads {
        match t.join() {
            Ok((rank, tests, q)) => {
                if rank == 0 {
                    probes = q;
                }
                per_rank.push((rank, tests));
            }
            Err(_) => per_rank.push((
                0,
                vec![TestResult::failed("fabric", "a test thread panicked")],
            )),
        }
    }
    per_rank.sort_by_key(|(r, _)| *r);
    if let Some((_, first)) = per_rank.first_mut() {
        let mut all = found;
        all.append(first);
        *first = all;
    }
    let mut tests = report::merge(&per_rank);
    let why = "needs 2 or more processes: run under a launcher (steadfast-run -n 2, srun, mpiexec)";
    tests.extend(WORLD_TESTS.iter().map(|t| TestResult::skipped(*t, why)));
    tests.push(world_suite::xpmem());
    tests.extend(ft_suite::skipped(
        "needs 3 or more processes under a launcher that survives a death (steadfast-run -n 3, srun --no-kill)",
    ));
    let report = Report::new(1, 1, discovery, tests, probes);
    Outcome {
        own_ok: report.ok(),
        own: report.tests.clone(),
        report: Some(report),
    }
}

/// Every rank's node identity, through the bootstrap.
fn node_map(boot: &mut Box<dyn Bootstrap>, settings: &Settings) -> Result<Vec<String>, String> {
    boot.publish("hw.node", settings.node_id().as_bytes())?;
    boot.barrier()?;
    (0..boot.size())
        .map(|r| {
            boot.fetch(r, "hw.node")
                .map(|v| String::from_utf8_lossy(&v).to_string())
        })
        .collect()
}

fn launched(
    opts: &Options,
    settings: &Settings,
    discovery: Discovery,
    mut own: Vec<TestResult>,
    providers: &[String],
    mut boot: Box<dyn Bootstrap>,
) -> Outcome {
    let (me, n) = (Exchange::rank(&boot), Exchange::size(&boot));
    let node_of = match node_map(&mut boot, settings) {
        Ok(v) => v,
        Err(e) => {
            own.push(TestResult::failed("world.node_map", e));
            return finish_alone_rank(me, n, 1, discovery, own, Vec::new());
        }
    };
    let mut distinct = node_of.clone();
    distinct.sort();
    distinct.dedup();
    let nodes = distinct.len() as u32;
    let place = Placement {
        domain: settings.domain(),
        nodes,
        reference: opts.reference,
        hugepages: hugepages(&discovery),
    };
    let mut probes = Vec::new();
    for p in providers {
        let (t, q) = fabric_suite::run_provider(&mut boot, p, &place);
        own.extend(t);
        probes.extend(q);
    }
    let world = match World::init_with(boot, settings.params()) {
        Ok(w) => w,
        Err(e) => {
            own.push(TestResult::failed("world.init", e.to_string()));
            return finish_alone_rank(me, n, nodes, discovery, own, probes);
        }
    };
    own.push(TestResult::passed("world.init"));
    let job = world_suite::Job {
        node_of: &node_of,
        route_fabric: settings.route_fabric(),
        cma: (discovery.cma.available, &discovery.cma.detail),
    };
    let (t, q) = world_suite::run(&world, &job);
    own.extend(t);
    probes.extend(q);
    let comm = world.comm();
    let mut per_rank: Vec<RankResults> = gather::to_root(
        &comm,
        RankResults {
            rank: me,
            tests: std::mem::take(&mut own),
            probes: probes.clone(),
        },
    );
    let ft_reason = if n < 3 {
        Some(format!("needs 3 or more ranks (this job has {n})"))
    } else {
        match opts.ft {
            FtMode::Off => Some("--ft off".to_string()),
            FtMode::Auto if !discovery.launcher.survives_death => Some(format!(
                "the launcher may end the job when a rank dies ({}); use steadfast-run or srun --no-kill, or --ft on",
                discovery.launcher.detail
            )),
            _ => None,
        }
    };
    if let Some(why) = ft_reason {
        if me == 0 {
            per_rank[0].tests.extend(ft_suite::skipped(&why));
        }
    } else {
        let (t, q, small) = ft_suite::run(&world, &comm, &node_of);
        let mine = RankResults {
            rank: me,
            tests: t,
            probes: q,
        };
        let got = match &small {
            Some(s) => gather::to_root(s, mine),
            None => vec![mine],
        };
        // Rank 0 files everyone's; the others keep their own (in per_rank[0]).
        for mut r in got {
            if r.rank == per_rank[0].rank {
                per_rank[0].probes.append(&mut r.probes);
            }
            match per_rank.iter_mut().find(|p| p.rank == r.rank) {
                Some(p) => p.tests.extend(r.tests),
                None => per_rank.push(r),
            }
        }
        drop(small);
    }
    drop(comm);
    world.finalize();
    if me != 0 {
        let own: Vec<TestResult> = per_rank.into_iter().flat_map(|r| r.tests).collect();
        return Outcome {
            report: None,
            own_ok: own_ok(&own),
            own,
        };
    }
    let merged = report::merge(
        &per_rank
            .iter()
            .map(|r| (r.rank, r.tests.clone()))
            .collect::<Vec<_>>(),
    );
    let probes: Vec<Probe> = per_rank
        .first()
        .map(|r| r.probes.clone())
        .unwrap_or_default();
    let report = Report::new(n, nodes, discovery, merged, probes);
    Outcome {
        own_ok: report.ok(),
        own: Vec::new(),
        report: Some(report),
    }
}

/// A rank that could not join the others: its own report, whatever its rank.
fn finish_alone_rank(
    me: u32,
    n: u32,
    nodes: u32,
    discovery: Discovery,
    own: Vec<TestResult>,
    probes: Vec<Probe>,
) -> Outcome {
    let tests = report::merge(&[(me, own)]);
    let report = Report::new(n, nodes, discovery, tests, probes);
    Outcome {
        own_ok: report.ok(),
        own: report.tests.clone(),
        report: (me == 0).then_some(report),
    }
}
