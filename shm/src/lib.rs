//! steadfast-shm: how ranks on one node talk, at memory speed.
//!
//! - [`ring`]: the lock-free single-producer/single-consumer fastbox.
//! - [`segment`]: the /dev/shm segments that hold the rings (one per receiving process).
//! - [`message`]: how a message sits in a cell (inline, single-copy descriptor, FIN).
//! - [`cma`]: single-copy reads from a peer's memory (`process_vm_readv`).
//! - [`xpmem`]: single copy through /dev/xpmem where it exists (compiled everywhere).
//! - [`topology`]: cores, NUMA nodes, binding, segment placement (hwloc).
//! - [`Endpoint`]: tagged send/receive between the local ranks of a job.

pub mod cma;
mod endpoint;
mod error;
pub mod message;
pub mod ring;
pub mod segment;
pub mod split;
mod sync;
pub mod topology;
pub mod xpmem;

pub use endpoint::{CopyPath, Endpoint, EndpointConfig, Received, SendRequest, ANY_TAG};
pub use error::ShmError;
