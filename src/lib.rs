//! steadfast: a fault-tolerant, zero-copy transport layer for HPC runtimes.
//!
//! For now this crate gives access to the libfabric layer ([`fabric`]); the bootstrap,
//! communicators and ULFM operations that compose it with the shared-memory transport
//! and the fault-tolerance core are built on top of it here.

pub use steadfast_fabric as fabric;
