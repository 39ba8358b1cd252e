//! The one error type of the shared-memory transport.

use crate::segment::SegmentError;

/// Errors of the shared-memory transport.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShmError {
    /// A segment could not be created, found or validated.
    #[error(transparent)]
    Segment(#[from] SegmentError),
    /// The peer's process is gone.
    #[error("local rank {0} is dead")]
    PeerDead(u32),
    /// The message is longer than the receive buffer (the message is consumed).
    #[error("message of {len} bytes truncated to a {capacity}-byte buffer")]
    Truncated {
        /// Message length.
        len: usize,
        /// Buffer length.
        capacity: usize,
    },
    /// A peer's ring holds impossible counters or a cell that does not decode.
    #[error("ring from local rank {rank} is corrupt: {what}")]
    Corrupt {
        /// The peer.
        rank: u32,
        /// What was wrong.
        what: String,
    },
    /// The single-copy read from the peer's memory failed.
    #[error("process_vm_readv from rank {rank} failed: {source}")]
    Cma {
        /// The peer.
        rank: u32,
        /// The OS error (EPERM: ptrace policy forbids it).
        source: std::io::Error,
    },
    /// A bad rank, tag or size from the caller.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The non-blocking call cannot proceed now (ring full).
    #[error("would block")]
    WouldBlock,
    /// Waited longer than the configured timeout.
    #[error("timed out after {0:?}")]
    Timeout(std::time::Duration),
}
