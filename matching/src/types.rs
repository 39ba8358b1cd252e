//! The vocabulary of matching: ranks, tags, contexts, selectors, envelopes and errors.

use std::fmt;

/// A process's rank in one communicator (not its world rank).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rank(pub u32);

/// An application tag (MPI tags are non-negative; the wire layout bounds them, see
/// `docs/matching.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(pub u32);

/// A communicator's context id: the one number that keeps the messages of two live
/// communicators of a process apart (allocated by [`crate::ContextAllocator`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContextId(pub u32);

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {}", self.0)
    }
}

impl fmt::Display for ContextId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "context {}", self.0)
    }
}

/// Which senders a receive or probe accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceSpec {
    /// Only this rank.
    Rank(Rank),
    /// `MPI_ANY_SOURCE`.
    Any,
}

/// Which tags a receive or probe accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TagSpec {
    /// Only this tag.
    Tag(Tag),
    /// `MPI_ANY_TAG`.
    Any,
}

impl SourceSpec {
    /// Whether a message from `source` fits.
    #[inline]
    pub fn accepts(self, source: Rank) -> bool {
        match self {
            SourceSpec::Rank(r) => r == source,
            SourceSpec::Any => true,
        }
    }
}

impl TagSpec {
    /// Whether a message with `tag` fits.
    #[inline]
    pub fn accepts(self, tag: Tag) -> bool {
        match self {
            TagSpec::Tag(t) => t == tag,
            TagSpec::Any => true,
        }
    }
}

/// What a receive (or probe) asks for: the `(source, tag)` pair of MPI, on the context
/// it is posted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecvSpec {
    /// Accepted senders.
    pub source: SourceSpec,
    /// Accepted tags.
    pub tag: TagSpec,
}

impl RecvSpec {
    /// A receive for `(source, tag)`; `None` is the wildcard.
    ///
    /// ```
    /// use steadfast_matching::{Rank, RecvSpec, SourceSpec, Tag, TagSpec};
    /// let any = RecvSpec::new(None, Some(Tag(7)));
    /// assert_eq!(any.source, SourceSpec::Any);
    /// assert_eq!(any.tag, TagSpec::Tag(Tag(7)));
    /// assert!(any.accepts(Rank(3), Tag(7)));
    /// ```
    pub fn new(source: Option<Rank>, tag: Option<Tag>) -> Self {
        RecvSpec {
            source: source.map_or(SourceSpec::Any, SourceSpec::Rank),
            tag: tag.map_or(TagSpec::Any, TagSpec::Tag),
        }
    }

    /// Whether a message from `source` with `tag` fits.
    #[inline]
    pub fn accepts(self, source: Rank, tag: Tag) -> bool {
        self.source.accepts(source) && self.tag.accepts(tag)
    }
}

/// A message as a transport delivers it: the matching fields, its length, and an opaque
/// payload of the transport's choosing (eager bytes inline, or a rendezvous descriptor the
/// receiver pulls after the match).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope<P> {
    /// The communicator context the sender used.
    pub context: ContextId,
    /// The sender's rank in that communicator.
    pub source: Rank,
    /// The application tag.
    pub tag: Tag,
    /// Length of the message in bytes (the status's count; lets the receiver detect
    /// truncation before it pulls a rendezvous payload).
    pub len: usize,
    /// Where the data is: the transport's business, carried untouched.
    pub payload: P,
}

/// Names one posted receive in one context (for [`crate::Engine::cancel`]). Stale ids
/// (the receive already matched, failed or was cancelled, or its context was closed and
/// opened again) never name another receive: the slot is paired with the context's
/// incarnation and the receive's posting number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecvId {
    pub(crate) context: ContextId,
    pub(crate) incarnation: u64,
    pub(crate) slot: u32,
    pub(crate) seq: u64,
}

impl RecvId {
    /// The context the receive was posted to.
    pub fn context(&self) -> ContextId {
        self.context
    }
}

/// Which queue of a context hit its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    /// Posted receives.
    Posted,
    /// Unexpected messages.
    Unexpected,
    /// Messages held for a context not opened yet.
    Early,
    /// Messages held by an [`crate::OrderGate`] until the ones sent before them arrive.
    OutOfOrder,
}

impl fmt::Display for QueueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QueueKind::Posted => "posted-receive",
            QueueKind::Unexpected => "unexpected-message",
            QueueKind::Early => "early-message",
            QueueKind::OutOfOrder => "out-of-order",
        })
    }
}

/// Why the engine refused an input or failed an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MatchError {
    /// No context with this id is open.
    #[error("{0} is not open")]
    UnknownContext(ContextId),
    /// A context with this id is already open.
    #[error("{0} is already open")]
    ContextExists(ContextId),
    /// A rank outside the communicator.
    #[error("{rank} is outside {context} (size {size})")]
    RankOutOfRange {
        /// The context.
        context: ContextId,
        /// The offending rank.
        rank: Rank,
        /// The communicator's size (ranks are `0..size`).
        size: u32,
    },
    /// The communicator is revoked (ULFM `MPI_ERR_REVOKED`).
    #[error("{0} is revoked")]
    Revoked(ContextId),
    /// The named source has failed and no message from it is waiting (ULFM
    /// `MPI_ERR_PROC_FAILED`).
    #[error("{rank} of {context} has failed")]
    ProcFailed {
        /// The context.
        context: ContextId,
        /// The failed rank.
        rank: Rank,
    },
    /// A wildcard-source operation cannot be sure to complete: a failure in the context
    /// is not acknowledged (ULFM `MPI_ERR_PROC_FAILED_PENDING`). A receive that gets this
    /// stays posted.
    #[error("{0} has unacknowledged failures; the wildcard receive stays posted")]
    ProcFailedPending(ContextId),
    /// A sequence number admitted twice by an [`crate::OrderGate`] (a transport bug).
    #[error("message {seq} from {sender} of {context} was already admitted")]
    Duplicate {
        /// The context.
        context: ContextId,
        /// The sender.
        sender: Rank,
        /// The repeated sequence number.
        seq: u64,
    },
    /// A queue reached its configured bound.
    #[error("the {queue} queue of {context} is full ({limit} entries)")]
    QueueFull {
        /// The context.
        context: ContextId,
        /// Which queue.
        queue: QueueKind,
        /// The bound ([`crate::Limits`]).
        limit: usize,
    },
}

/// An input the engine refused, handed back so that nothing is lost: the receive's token
/// or the message (whose rendezvous sender may need an answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected<T> {
    /// Why.
    pub error: MatchError,
    /// The refused receive token or envelope.
    pub item: T,
}

impl<T> fmt::Display for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl<T: fmt::Debug> std::error::Error for Rejected<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
