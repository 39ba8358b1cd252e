//! steadfast: a fault-tolerant, zero-copy transport layer for HPC runtimes.
//!
//! - [`fabric`]: the libfabric layer (re-exported crate `steadfast-fabric`).
//! - [`bootstrap`]: how a rank learns its rank and exchanges addresses with the others.
//! - [`launcher`]: the service side of the built-in launcher `steadfast-run`.

pub mod bootstrap;
pub mod launcher;

pub use steadfast_fabric as fabric;
