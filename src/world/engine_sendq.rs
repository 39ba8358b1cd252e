//! Sends to shared-memory peers that the transport has not accepted yet, so that one
//! sender's messages to one destination leave in posting order (MPI 4.1 §3.5,
//! non-overtaking; docs/matching.md).
//!
//! A large shm send offers its buffer with one ring cell; when the ring to its
//! destination is full, the offer is refused (`WouldBlock`) and the send waits here, in
//! its destination's FIFO. Every later send to that destination queues behind it, and
//! each progress round pushes the FIFOs' heads in order, whichever request is tested.
//! The queue holds the data pointer the request holds (`Comm::isend`'s contract: the
//! buffer outlives the request, whose drop withdraws the entry).

use std::collections::VecDeque;

use steadfast_shm::{SendRequest as ShmSend, ShmError};

use super::{Engine, Route};

/// A queued send's name, for its request to ask after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueuedId(u64);

/// A send waiting for room in its destination's ring.
struct Queued {
    id: QueuedId,
    wire_tag: u64,
    data: *const u8,
    len: usize,
}

/// What became of a queued send, until its request takes it.
type Taken = (QueuedId, Result<ShmSend, ShmError>);

/// The FIFOs of the destinations with queued sends, and what was pushed from them.
#[derive(Default)]
pub(super) struct SendQueues {
    /// (world rank, local rank, its queued sends in posting order); only non-empty.
    queues: Vec<(u32, u32, VecDeque<Queued>)>,
    /// Sends pushed (or failed) by progress, until their request takes them.
    taken: Vec<Taken>,
    next_id: u64,
}

// SAFETY: a queued pointer is the buffer of a `Comm::isend` request (a `&[u8]`, Send
// and Sync), read only by the engine under its token; the rest is plain data, and a
// shm send request is a handle to the same kind of buffer.
unsafe impl Send for SendQueues {}

impl Engine {
    /// Whether sends to world rank `w` wait for room (a later one must queue).
    #[inline]
    pub fn sends_queued(&self, w: u32) -> bool {
        // Empty (one length check) unless some ring was full.
        self.sendq.queues.iter().any(|q| q.0 == w)
    }

    /// Queues a send to world rank `w` (reached through shm) behind the ones waiting.
    ///
    /// # Safety
    /// `data..data+len` must stay valid and unchanged until [`Engine::take_queued`]
    /// returned the send, or [`Engine::cancel_queued`] withdrew it.
    pub unsafe fn queue_send(
        &mut self,
        w: u32,
        wire_tag: u64,
        data: *const u8,
        len: usize,
    ) -> QueuedId {
        let Route::Shm(local) = self.route(w) else {
            unreachable!("only shm sends wait for room")
        };
        let id = QueuedId(self.sendq.next_id);
        self.sendq.next_id += 1;
        let entry = Queued {
            id,
            wire_tag,
            data,
            len,
        };
        match self.sendq.queues.iter_mut().find(|q| q.0 == w) {
            Some(q) => q.2.push_back(entry),
            None => self.sendq.queues.push((w, local, VecDeque::from([entry]))),
        }
        id
    }

    /// Pushes every destination's queued sends in order, as far as its ring has room.
    pub fn push_queued(&mut self) {
        if self.sendq.queues.is_empty() {
            return;
        }
        let Some(shm) = self.shm.as_mut() else { return };
        let mut failed = Vec::new();
        for (w, local, queue) in self.sendq.queues.iter_mut() {
            while let Some(head) = queue.front() {
                let data: &[u8] = if head.len == 0 {
                    &[]
                } else {
                    // SAFETY: `queue_send`'s contract: valid until taken or withdrawn.
                    unsafe { std::slice::from_raw_parts(head.data, head.len) }
                };
                // SAFETY: as above; the shm request taken keeps the same contract.
                let result = unsafe { shm.isend(*local, head.wire_tag, data) };
                match result {
                    Err(ShmError::WouldBlock) => break,
                    Err(ShmError::PeerDead(l)) => {
                        // Nothing behind it can leave either.
                        failed.push(*w);
                        for q in queue.drain(..) {
                            self.sendq.taken.push((q.id, Err(ShmError::PeerDead(l))));
                        }
                    }
                    other => {
                        let id = head.id;
                        queue.pop_front();
                        self.sendq.taken.push((id, other));
                    }
                }
            }
        }
        self.sendq.queues.retain(|q| !q.2.is_empty());
        for w in failed {
            self.report_failure(w, "process exited".into());
        }
    }

    /// The queued send `id` once pushed: its shm request, or the error that ended it.
    pub fn take_queued(&mut self, id: QueuedId) -> Option<Result<ShmSend, ShmError>> {
        let i = self.sendq.taken.iter().position(|t| t.0 == id)?;
        Some(self.sendq.taken.swap_remove(i).1)
    }

    /// Withdraws the queued send `id` (its request is dropped): out of its FIFO if it
    /// is still there (the sends behind it move up), else its pushed request is
    /// forgotten (as a dropped shm request's: a large send cannot be withdrawn).
    pub fn cancel_queued(&mut self, id: QueuedId) {
        for q in self.sendq.queues.iter_mut() {
            if let Some(i) = q.2.iter().position(|s| s.id == id) {
                q.2.remove(i);
                self.sendq.queues.retain(|q| !q.2.is_empty());
                return;
            }
        }
        drop(self.take_queued(id));
    }
}
