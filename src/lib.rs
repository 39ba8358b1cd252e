//! steadfast: a fault-tolerant, zero-copy transport layer for HPC runtimes.
//!
//! - [`World`]: bootstrap from the launcher, node map (shared memory within a node, the
//!   fabric between nodes), progress engine; [`Comm`]: communicators with ULFM
//!   semantics (send/recv, revoke, agree, shrink).
//! - [`fabric`]: the libfabric layer (re-exported crate `steadfast-fabric`).
//! - [`bootstrap`]: how a rank learns its rank and exchanges addresses with the others.
//! - [`launcher`]: the service side of the built-in launcher `steadfast-run`.
//! - [`params`]: the typed, bounded tunables, from the program, the environment and params files.

pub mod bootstrap;
pub mod comm;
pub mod launcher;
pub mod params;
pub mod world;

pub use comm::{
    Agreement, Comm, CommError, IoBuf, IoBufMut, OwnedRecvRequest, OwnedSendRequest, RawBuf,
    Status, Window, ANY_SOURCE, ANY_TAG,
};
pub use steadfast_fabric as fabric;
pub use world::{InitError, World};
