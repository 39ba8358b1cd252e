//! Operations posted while another thread holds the engine (issue 15, point 3;
//! `src/world/posts.rs` has the lanes and the order rules): what waits in a lane, and
//! how the next token holder applies it.
//!
//! A queued operation's request learns what the engine made of it (the receive's
//! `RecvKey`, the send's route state) through a [`Cell`] it shares with the queued
//! operation: filled once by the applier, taken once by the request under the token.
//! One allocation per queued post, on the contended path only (a direct post
//! allocates nothing). A request that is dropped before its operation is applied
//! takes the token (dropping may wait; it is not posting), which applies the queue
//! first: so the cell is filled by then, and the request withdraws what it names (a
//! receive's buffer, a queued send's data) as if it had been posted directly.
//!
//! Besides sends and receives, three local steps of the fault-tolerance calls queue the
//! same way ([`Post::Revoke`], [`Post::Ack`], [`Post::Agree`]): `revoke`,
//! `failure_ack` and the start of `iagree` or `agree`. They name their communicator by id (no
//! handle: a queued revoke must not make the thread's next `free` refuse for a handle
//! it cannot see), and `free` takes the token before it releases anything, which
//! applies them first. A queued agreement's request learns its sequence number
//! through its cell, as a queued receive learns its key.
//!
//! Errors: a bad tag is refused at once (no engine needed); a bad rank, a revoked
//! communicator, a dead destination or excluded process found when the operation is
//! applied is reported by the request's first test that takes the token, which MPI
//! allows for non-blocking operations (the blocking `send`/`recv` report it from their
//! wait, as before).

use std::sync::Arc;

use steadfast_agreement::{CommId, Seq};
use steadfast_matching::Completion as Cell;

use super::send_request::{SendStart, SendState};
use super::{Comm, CommError};
use crate::world::engine::Engine;
use crate::world::matching::RecvKey;

/// A queued receive's outcome of posting.
pub(crate) type RecvCell = Arc<Cell<Result<RecvKey, CommError>>>;
/// A queued send's outcome of starting.
pub(crate) type SendCell = Arc<Cell<Result<SendStart, CommError>>>;
/// A queued agreement's sequence number, or why it did not start.
pub(crate) type AgreeCell = Arc<Cell<Result<Seq, CommError>>>;

/// An operation waiting in a thread's lane for the next token holder.
pub(crate) enum Post {
    /// `irecv` (and the blocking `recv`'s post).
    Recv {
        comm: Comm,
        source: Option<u32>,
        tag: Option<u32>,
        buf: *mut u8,
        len: usize,
        cell: RecvCell,
    },
    /// `isend` / `issend` (and the blocking sends' post).
    Send {
        comm: Comm,
        dest: u32,
        tag: u32,
        data: *const u8,
        len: usize,
        sync: bool,
        cell: SendCell,
    },
    /// `revoke` (`MPIX_Comm_revoke`).
    Revoke { id: CommId },
    /// `failure_ack` (`MPIX_Comm_failure_ack`): the failures known when applied.
    Ack { id: CommId },
    /// `ack_failed` (`MPIX_Comm_ack_failed`): the failures among the first `n` of the
    /// process's failure order, read when it was queued (`Engine::ack_up_to`).
    AckUpTo { id: CommId, n: usize },
    /// The start of `iagree` or `agree`: this rank's contribution `flag`; `agree`
    /// refuses the world communicator of a restarted process not yet rejoined
    /// (`refuse_restored`).
    Agree {
        id: CommId,
        flag: u64,
        refuse_restored: bool,
        cell: AgreeCell,
    },
}

// SAFETY: the pointers are the buffers of the requests that queued them (borrowed for
// the requests' lifetime, which the requests' drops outlast: they take the token,
// which applies this operation first, or withdraw its cell before it is applied, and
// then `apply` never touches the buffer); the engine uses them only
// under its token, whichever thread holds it. The rest (`Comm`, `Arc` of a `Sync`
// cell) is Send.
unsafe impl Send for Post {}

impl Post {
    /// Applies the operation to the engine (the token holder, before anything else).
    pub(crate) fn apply(self, e: &mut Engine) {
        match self {
            Post::Recv {
                comm,
                source,
                tag,
                buf,
                len,
                cell,
            } => {
                // Claimed before the buffer is handed to the engine: a request dropped
                // while its receive was still queued withdrew the cell, and then the
                // buffer may be gone; the receive is not posted.
                let Some(claim) = cell.claim() else {
                    return;
                };
                let posted = comm
                    .plan_recv(e, source, tag)
                    .map(|plan| e.post_recv(plan.ctx, plan.source, plan.tag, buf, len));
                claim.complete(posted);
            }
            Post::Send {
                comm,
                dest,
                tag,
                data,
                len,
                sync,
                cell,
            } => {
                // Claimed before the data is handed to the engine, as for a receive: a
                // request dropped while its send was still queued withdrew the cell,
                // and the send is not started (its buffer may be gone).
                let Some(claim) = cell.claim() else {
                    return;
                };
                let slice: &[u8] = if len == 0 {
                    &[]
                } else {
                    // SAFETY: the queuing request borrows `data..data+len` until it
                    // completes or is dropped, both after this (see the Send note; a
                    // drop before this withdrew the cell, and the claim above failed).
                    unsafe { std::slice::from_raw_parts(data, len) }
                };
                // SAFETY: as above: the request outlives every use the engine makes of
                // the buffer (its drop withdraws or finishes the send).
                let started = unsafe { comm.start_send(e, dest, tag, slice, sync) }.map(|mut s| {
                    if matches!(s.state, SendState::Waiting) {
                        // Into its destination's queue now, so later sends (of this
                        // thread, applied or direct) queue behind it: non-overtaking.
                        // SAFETY: as above; the request withdraws the entry if dropped.
                        let id = unsafe { e.queue_send(s.world, s.wire_tag, data, len) };
                        s.state = SendState::Queued(id);
                        e.push_queued();
                    }
                    s
                });
                claim.complete(started);
            }
            Post::Revoke { id } => e.revoke(id),
            Post::Ack { id } => {
                let _ = e.ack_failed(id);
            }
            Post::AckUpTo { id, n } => {
                let _ = e.ack_up_to(id, n);
            }
            Post::Agree {
                id,
                flag,
                refuse_restored,
                cell,
            } => {
                let _ = cell.complete(Comm::start_agreement_in(e, id, flag, refuse_restored));
            }
        }
    }
}

impl Comm {
    /// Queues `op` in the calling thread's lane (another thread holds the token), or,
    /// when the lane is full or no lane is free, waits for the token, which applies the
    /// queued operations first, and applies `op` after them: either way `op` takes
    /// effect after this thread's earlier operations and before its later ones.
    #[cold]
    #[inline(never)]
    pub(super) fn post_or_apply(&self, op: Post) {
        if let Err(op) = self.engine.post(op) {
            op.apply(&mut self.engine.lock());
        }
    }
}

/// The engine held by [`Comm::hold_engine_for_test`] until dropped.
#[doc(hidden)]
pub struct EngineHold<'a> {
    _guard: crate::world::shared::EngineGuard<'a>,
}

impl std::fmt::Debug for EngineHold<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineHold").finish_non_exhaustive()
    }
}

impl Comm {
    /// Test hook, not part of the API: takes the engine (waiting for it) and keeps it
    /// until the returned value is dropped, as a thread descheduled in the middle of a
    /// round would (`tests/threads.rs` checks that other threads' posts return at once
    /// meanwhile and are applied in order afterwards).
    #[doc(hidden)]
    pub fn hold_engine_for_test(&self) -> EngineHold<'_> {
        EngineHold {
            _guard: self.engine.lock(),
        }
    }
}
