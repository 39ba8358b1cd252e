//! steadfast-shm: how ranks on one node talk, at memory speed.
//!
//! - [`ring`]: the lock-free single-producer/single-consumer fastbox.
//! - [`segment`]: the /dev/shm segments that hold the rings (one per receiving process).
//! - [`message`]: how a message sits in a cell (inline, single-copy descriptor, FIN).
//! - [`cma`]: single-copy reads from a peer's memory (`process_vm_readv`).
//! - [`xpmem`]: single copy through /dev/xpmem where it exists (compiled everywhere).
//! - [`topology`]: cores, NUMA nodes, segment placement (hwloc).
//! - [`Endpoint`]: tagged send/receive between the local ranks of a job.
//!
//! # Quick start
//!
//! Each local rank opens its endpoint (its own segment), then connects to the others'.
//! Here both ranks live in one process; normally each is a process of the job.
//!
//! ```
//! use steadfast_shm::{Endpoint, EndpointConfig};
//!
//! let job = 0x5eed_0000_0000_0000 | u64::from(std::process::id());
//! let mut a = Endpoint::open(EndpointConfig::new(job, 0, 2))?;
//! let mut b = Endpoint::open(EndpointConfig::new(job, 1, 2))?;
//! a.connect()?;
//! b.connect()?;
//! a.send(1, 7, b"hello")?; // small: copied into a ring cell, done at once
//! let mut buf = [0u8; 16];
//! let got = b.recv(Some(0), 7, 0, &mut buf)?;
//! assert_eq!((got.source, got.len, &buf[..got.len]), (0, 5, &b"hello"[..]));
//! # Ok::<(), steadfast_shm::ShmError>(())
//! ```
//!
//! # Peer death and cleanup
//! Waits check the peer's process now and then and end with [`ShmError::PeerDead`];
//! segments are removed by their owner at drop, or by any later endpoint when the
//! owner died.

mod bulk;
pub mod cma;
mod endpoint;
mod error;
pub mod message;
mod prefetch;
pub mod ring;
pub mod segment;
pub mod split;
mod sync;
pub mod topology;
pub mod xpmem;

pub use endpoint::{
    eager_whole_max, ring_cells_for, Arrival, ArrivalData, CopyPath, Endpoint, EndpointConfig,
    PullTicket, Received, SendRequest, ANY_TAG, RING_BYTES_PER_PROCESS,
};
pub use error::ShmError;
