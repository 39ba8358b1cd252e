//! steadfast-hwtests: the suite a user runs on a new cluster to trust steadfast there.
//!
//! Launched like any job (`steadfast-run -n N`, `srun`, `mpiexec.hydra`, `mpirun`) or
//! alone, it discovers what the node has ([`discover`]), tests every libfabric
//! provider present ([`fabric_suite`]; the hardware ones that are absent are reported
//! as skipped with the reason), the runtime's shared-memory and fabric paths
//! ([`world_suite`]), the ULFM recovery sequence across ranks ([`ft_suite`]), takes
//! short performance probes (with `fi_pingpong`'s figure beside them where it runs),
//! and prints a [`report::Report`]: one line per test, a summary, or `--json`.
//!
//! # Quick start
//! ```text
//! cargo build --release -p steadfast-hwtests -p steadfast
//! target/release/steadfast-run -n 4 target/release/steadfast-hwtests
//! srun -N 2 -n 4 --no-kill --mpi=pmi2 target/release/steadfast-hwtests --json > hw.json
//! ```
//! The exit status is 0 exactly when no test failed.

pub mod check;
pub mod discover;
pub mod exchange;
pub mod fabric_suite;
pub mod ft_suite;
pub mod gather;
pub mod hugepage;
pub mod pingpong;
pub mod report;
pub mod settings;
pub mod suite;
pub mod world_suite;
