//! # steadfast-matching
//!
//! The MPI matching engine of steadfast, as a library with no I/O, no clock and no threads
//! of its own: the progress owner feeds it posted receives and arriving messages, and it
//! says which receive got which message, in MPI's order, with ULFM's failure rules.
//!
//! - [`Engine`]: per communicator context, a posted-receive queue and an
//!   unexpected-message queue. A message matches the earliest posted receive that fits; a
//!   receive matches the earliest waiting message that fits; messages of one sender never
//!   overtake each other (MPI 4.1 §3.5). Probe, matched probe, cancel. ULFM (the MPI
//!   Forum's fault-tolerance proposal, not yet in MPI 4.1; Open MPI's and MPICH's `MPIX_`
//!   extensions):
//!   `ProcFailed`, `ProcFailedPending` (the receive stays posted), acknowledgement,
//!   `Revoked`.
//! - [`OrderGate`] and [`SendSequencer`]: per-sender sequence numbers, for transports
//!   that may deliver one sender's messages out of order.
//! - [`ContextAllocator`]: context ids that two live communicators of a process never
//!   share, agreed among the members by AND-ing their free masks.
//! - [`PostQueue`] and [`Completion`]: the lock-free pieces by which many threads post
//!   operations into the progress owner and collect their results without waiting.
//!
//! Rules, costs, the context-id layout and the wiring plan: `docs/matching.md`.
//!
//! ## Thread safety
//! [`Engine`] and [`ContextAllocator`] are plain values: `Send` when their type
//! parameters are, driven by one thread at a time (the progress-token holder).
//! [`PostQueue`] and [`Completion`] are `Sync`: any thread may use them at any time.

mod completion;
mod context;
mod context_id;
mod engine;
mod list;
mod order_gate;
mod post_queue;
mod posted;
mod sync;
mod types;
mod unexpected;

pub use completion::{Claim, Completion};
pub use post_queue::{Drainer, Full, PostQueue, Poster};

pub use context_id::{
    ContextAllocator, ContextError, Decision, OpKey, Proposal, MAX_ID_BITS, WINDOW_IDS,
};
pub use engine::{Arrival, Engine, Event, Limits, Match, PostOutcome};
pub use list::FxHasher;
pub use order_gate::{OrderGate, SendSequencer};
pub use types::{
    ContextId, Envelope, MatchError, QueueKind, Rank, RecvId, RecvSpec, Rejected, SourceSpec, Tag,
    TagSpec,
};

#[cfg(test)]
mod contract {
    //! The thread-safety contract of `docs/matching.md`, checked by the compiler.
    use super::*;

    fn send<T: Send>() {}
    fn sync<T: Sync>() {}

    #[test]
    fn shared_types_are_send_and_sync_as_documented() {
        send::<Engine<u64, Vec<u8>>>();
        send::<ContextAllocator>();
        sync::<PostQueue<Box<u8>>>();
        send::<PostQueue<Box<u8>>>();
        sync::<Completion<Vec<u8>>>();
        send::<std::sync::Arc<Completion<Vec<u8>>>>();
        send::<Drainer<'static, u8>>();
    }
}
