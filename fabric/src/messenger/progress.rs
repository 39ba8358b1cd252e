//! Posting operations and handling their completions: the protocol state machines of
//! the messenger (eager, rendezvous, control messages) and peer death.

use std::time::{Duration, Instant};

use steadfast_fabric_sys as sys;

use crate::error::{fi_error_text, means_peer_gone, Error, Result};
use crate::objects::{CqEntry, CqError, CqPoll};
use crate::PeerId;

use super::slots::{Completion, Op, Outcome, BOUNCE_LEN};
use super::tags;
use super::wire::{Control, ControlOp, FinStatus, Rts, RTS_LEN};
use super::Messenger;

/// Completions read per `fi_cq_read`.
pub(super) const CQ_BATCH: usize = 16;
/// `fi_cq_read` calls per progress call at most (bounds the time one call takes).
const CQ_ROUNDS: usize = 8;

impl Messenger {
    /// Reads and handles completions.
    pub(super) fn poll_completions(&mut self) -> Result<usize> {
        if self.broken {
            return Err(Self::broken_error());
        }
        let mut handled = 0;
        for _ in 0..CQ_ROUNDS {
            match self.cq.poll(&mut self.cq_batch)? {
                CqPoll::Entries(n) => {
                    for i in 0..n {
                        // Copied out (48 bytes) so handling may borrow the messenger.
                        let entry = self.cq_batch[i];
                        self.on_completion(&entry);
                    }
                    handled += n;
                    if n < CQ_BATCH {
                        break;
                    }
                }
                CqPoll::Empty => break,
                CqPoll::ErrorAvailable => {
                    if let Some(error) = self.cq.read_error()? {
                        self.on_error(error);
                        handled += 1;
                    }
                }
            }
        }
        if !self.deferred_reads.is_empty() {
            self.retry_deferred_reads();
        }
        if !self.withdrawn_suspects.is_empty() {
            self.settle_withdrawn();
        }
        Ok(handled)
    }

    /// Sets a slot's outcome, releases its registration, frees it if detached.
    pub(super) fn finish(&mut self, index: u32, outcome: Outcome) {
        if self.slots.get(index).op == Op::RndvSend {
            self.rendezvous_outstanding -= 1;
        }
        let slot = self.slots.get_mut(index);
        slot.posted = false;
        if let Some(mr) = slot.mr.take() {
            self.cache.release(mr);
        }
        let slot = self.slots.get_mut(index);
        let outcome = match (outcome, slot.pending_error.take()) {
            (Outcome::Failed(e), _) => Outcome::Failed(e),
            (done, None) => done,
            // A successful receive delivered its data; keep that. Other operations
            // report the error that was decided while they were outstanding.
            (Outcome::Done(c), Some(_)) if slot.op == Op::Recv => Outcome::Done(c),
            (_, Some(e)) => Outcome::Failed(e),
        };
        slot.outcome = outcome;
        if slot.detached {
            self.slots.release(index);
        }
    }

    pub(super) fn on_completion(&mut self, entry: &CqEntry) {
        let Some(index) = self.slots.index_of(entry.op_context) else {
            return;
        };
        let op = self.slots.get(index).op;
        match op {
            Op::EagerSend | Op::Rma => {
                let slot = self.slots.get(index);
                let c = Completion {
                    len: slot.len,
                    value: slot.atomic[2],
                    ..slot.matched
                };
                self.finish(index, Outcome::Done(c));
            }
            Op::RndvSend => {
                let slot = self.slots.get_mut(index);
                slot.posted = false;
                self.finish_rendezvous_send_if_done(index);
            }
            Op::Recv => self.on_recv(index, entry),
            Op::Drain => self.on_drain(index, false),
            Op::Pool => self.on_pool(index, entry),
            Op::ReadChunk => self.on_read_chunk(index, None),
            Op::ControlSend => {
                let peer = self.slots.get(index).peer;
                self.finish(index, Outcome::Done(Completion::default()));
                self.probe_answered(peer);
            }
            Op::ControlRecv => {
                self.slots.get_mut(index).posted = false;
                self.on_control(index, entry);
                if self.post_control_recv(index).is_err() {
                    // The endpoint refuses receives: it is shutting down; nothing to do.
                    self.slots.release(index);
                    self.control_receives -= 1;
                }
            }
            Op::Free => {}
        }
    }

    pub(super) fn probe_answered(&mut self, peer: Option<PeerId>) {
        if let Some(Some(p)) = peer.and_then(|p| self.peers.get_mut(p as usize)) {
            p.probing = false;
        }
    }

    pub(super) fn finish_rendezvous_send_if_done(&mut self, index: u32) {
        let slot = self.slots.get(index);
        if slot.posted {
            return;
        }
        let len = slot.len;
        match (slot.fin, slot.pending_error.is_some()) {
            (Some(FinStatus::Done), _) | (Some(FinStatus::Truncated), _) => {
                // A truncating receiver consumed the message; the send itself succeeded.
                self.finish(
                    index,
                    Outcome::Done(Completion {
                        len,
                        ..Completion::default()
                    }),
                );
            }
            (Some(FinStatus::Failed), _) => {
                let peer = slot.peer.unwrap_or_default();
                self.finish(
                    index,
                    Outcome::Failed(Error::PeerUnreachable {
                        peer,
                        reason: "receiver could not read the message".into(),
                    }),
                );
            }
            (None, true) => {
                let error = self
                    .slots
                    .get_mut(index)
                    .pending_error
                    .take()
                    .expect("checked");
                self.finish(index, Outcome::Failed(error));
            }
            (None, false) => {}
        }
    }

    /// A user receive matched a message.
    pub(super) fn on_recv(&mut self, index: u32, entry: &CqEntry) {
        let (source, user_tag) = tags::decode(entry.tag);
        if self.is_stale(source, entry.tag) {
            // A replaced incarnation's message (a wildcard receive took it): dropped.
            self.slots.get_mut(index).posted = false;
            return self.repost_after_stale(index);
        }
        let (is_rts, _) = tags::classify(Self::remote_data(entry));
        let slot = self.slots.get_mut(index);
        slot.posted = false;
        slot.matched = Completion {
            source,
            tag: user_tag,
            len: entry.len,
            value: 0,
        };
        let (buf, buffer_len) = (slot.buf, slot.len);
        let staged = self.staging_area(index);
        if !is_rts {
            if let Some((staging, _, _)) = staged {
                if entry.len > buffer_len {
                    self.release_staging(index);
                    let e = Error::Truncated {
                        message_len: Some(entry.len),
                        buffer_len,
                    };
                    return self.finish(index, Outcome::Failed(e));
                }
                // SAFETY: buf is the caller's buffer of buffer_len >= entry.len bytes,
                // valid until completion; the staging buffer is a distinct allocation
                // holding the entry.len bytes the provider wrote.
                unsafe { std::ptr::copy_nonoverlapping(staging, buf, entry.len) };
                self.release_staging(index);
            }
            let c = self.slots.get(index).matched;
            return self.finish(index, Outcome::Done(c));
        }
        let mut header_bytes = [0u8; RTS_LEN];
        let header_len = entry.len.min(RTS_LEN);
        let source_ptr = staged.map_or(buf, |(p, _, _)| p);
        // SAFETY: the provider wrote entry.len bytes at source_ptr (the staging
        // area or the user's buffer); we copy at most RTS_LEN of them.
        unsafe { std::ptr::copy_nonoverlapping(source_ptr, header_bytes.as_mut_ptr(), header_len) };
        self.release_staging(index);
        let header: &[u8] = &header_bytes[..if entry.len == RTS_LEN { RTS_LEN } else { 0 }];
        let Some(rts) = Rts::decode(header) else {
            self.stats.malformed += 1;
            let e = Error::PeerUnreachable {
                peer: source,
                reason: "malformed rendezvous header".into(),
            };
            return self.finish(index, Outcome::Failed(e));
        };
        let message_len = rts.message_len as usize;
        if message_len > buffer_len {
            let fin = self.fin(FinStatus::Truncated, rts.token);
            let _ = self.send_control(source, fin);
            let e = Error::Truncated {
                message_len: Some(message_len),
                buffer_len,
            };
            return self.finish(index, Outcome::Failed(e));
        }
        self.start_rendezvous_read(index, source, rts);
    }

    /// The remote CQ data of a completion, if it carries some.
    pub(super) fn remote_data(entry: &CqEntry) -> Option<u64> {
        (entry.flags & sys::FI_REMOTE_CQ_DATA as u64 != 0).then_some(entry.data)
    }

    pub(super) fn on_control(&mut self, index: u32, entry: &CqEntry) {
        let slot = self.slots.get(index);
        let Some(control) = Control::decode(&slot.bounce[..entry.len.min(BOUNCE_LEN)]) else {
            self.stats.malformed += 1;
            return;
        };
        if control.op == ControlOp::Admit {
            return self.on_admit(&control);
        }
        if control.op != ControlOp::Fin {
            return; // probes need no answer: their delivery is the answer
        }
        let Some(target) = self.slots.index_of_token(control.token) else {
            return;
        };
        let target_slot = self.slots.get_mut(target);
        if target_slot.op != Op::RndvSend {
            return;
        }
        target_slot.fin = Some(control.status);
        self.finish_rendezvous_send_if_done(target);
    }

    pub(super) fn on_error(&mut self, error: CqError) {
        let Some(index) = self.slots.index_of(error.context) else {
            return;
        };
        let slot = self.slots.get(index);
        let (op, peer, buffer_len) = (slot.op, slot.peer, slot.len);
        if op == Op::Pool {
            return self.on_pool_error(index, error.code);
        }
        if op == Op::Drain {
            // Truncated or failed: the message is consumed (or its connection gone)
            // either way; only our cancel stops a drain.
            return self.on_drain(index, error.code == sys::FI_ECANCELED);
        }
        let text = fi_error_text(error.code as i64);
        let peer_error = |peer: PeerId| Error::PeerUnreachable {
            peer,
            reason: text.clone(),
        };
        // A provider cancels operations it cannot finish when a connection drops (we
        // only ever cancel receives ourselves); an error of an operation whose peer is
        // known dead is that death. A rendezvous read is also cancelled when its live
        // sender withdrew the message (`abandon` revokes the registration): that is no
        // death, and if the sender did die its liveness checks say so.
        let peer_dead = peer.is_some_and(|p| self.peer_failure(p).is_some());
        let withdrawn = op == Op::ReadChunk && error.code == sys::FI_ECANCELED && !peer_dead;
        let gone = means_peer_gone(error.code)
            || peer_dead
            || (error.code == sys::FI_ECANCELED
                && !matches!(op, Op::Recv | Op::ControlRecv | Op::ReadChunk));
        if gone {
            if let Some(peer) = peer {
                if op != Op::Recv {
                    self.mark_peer_dead(peer, text.clone());
                }
            }
        }
        let generic = Error::Fabric {
            call: "completion",
            code: error.code,
            message: text.clone(),
        };
        match op {
            Op::Recv => {
                self.release_staging(index);
                let e = if error.code == sys::FI_ETRUNC {
                    // net, shm and rxm (1.17) leave len and olen at 0 here.
                    let reported = error.len + error.overflow_len;
                    Error::Truncated {
                        message_len: (reported > buffer_len).then_some(reported),
                        buffer_len,
                    }
                } else if error.code == sys::FI_ECANCELED {
                    self.slots
                        .get_mut(index)
                        .pending_error
                        .take()
                        .unwrap_or(Error::Cancelled)
                } else {
                    generic
                };
                self.finish(index, Outcome::Failed(e));
            }
            Op::ReadChunk => {
                let e = if gone {
                    peer_error(peer.unwrap_or_default())
                } else if withdrawn {
                    Error::Withdrawn {
                        peer: peer.unwrap_or_default(),
                    }
                } else {
                    generic
                };
                self.on_read_chunk(index, Some(e));
            }
            Op::RndvSend => {
                let e = if gone {
                    peer_error(peer.unwrap_or_default())
                } else {
                    generic
                };
                self.slots.get_mut(index).posted = false;
                self.finish(index, Outcome::Failed(e));
            }
            Op::EagerSend | Op::Rma => {
                let e = if gone {
                    peer_error(peer.unwrap_or_default())
                } else {
                    generic
                };
                self.finish(index, Outcome::Failed(e));
            }
            Op::ControlSend => {
                self.finish(index, Outcome::Done(Completion::default()));
                if let Some(peer) = peer {
                    if error.code != sys::FI_ECANCELED {
                        self.mark_peer_dead(peer, format!("control message failed: {text}"));
                    }
                }
            }
            Op::ControlRecv => {
                self.slots.get_mut(index).posted = false;
                if error.code == sys::FI_ECANCELED || self.post_control_recv(index).is_err() {
                    self.slots.release(index);
                    self.control_receives -= 1;
                }
            }
            Op::Drain | Op::Pool | Op::Free => {}
        }
    }

    /// Records that `peer` is dead and fails every operation that waits on it.
    pub(super) fn mark_peer_dead(&mut self, peer: PeerId, reason: String) {
        let Some(Some(p)) = self.peers.get_mut(peer as usize) else {
            return;
        };
        if p.dead.is_some() {
            return;
        }
        p.dead = Some(reason.clone());
        p.probing = false;
        let affected: Vec<u32> = self
            .slots
            .active()
            .filter(|&i| self.slots.get(i).peer == Some(peer))
            .collect();
        for index in affected {
            let error = Error::PeerUnreachable {
                peer,
                reason: reason.clone(),
            };
            self.abandon(index, error);
        }
    }

    /// Ends an operation early with `error`: at once if libfabric no longer holds its
    /// buffer, else after cancelling (receives) or once the provider completes it.
    pub(super) fn abandon(&mut self, index: u32, error: Error) {
        let slot = self.slots.get_mut(index);
        if !matches!(slot.outcome, Outcome::Pending) {
            return;
        }
        match slot.op {
            Op::RndvSend if !slot.posted => {
                // Only the FIN is missing. Revoke the registration when no one else
                // uses it, so that a late reader cannot touch the buffer afterwards.
                if let Some(mr) = slot.mr.take() {
                    let (start, len) = {
                        let r = self.cache.region(mr);
                        (r.start(), r.len())
                    };
                    self.cache.release(mr);
                    self.cache.invalidate(start, len);
                }
                self.finish(index, Outcome::Failed(error));
            }
            Op::Recv if slot.posted => {
                slot.pending_error = Some(error);
                let ctx = self.slots.context(index);
                self.endpoint.cancel(ctx);
            }
            Op::Recv if slot.chunks_in_flight > 0 => {
                slot.pending_error.get_or_insert(error);
            }
            Op::Recv if slot.rts.is_some() => {
                // A rendezvous receive whose reads wait for the budget: the sender
                // still waits for its FIN, as after a failed read.
                self.deferred_reads.retain(|&i| i != index);
                self.fail_rendezvous_recv(index, error);
            }
            Op::Recv => self.finish(index, Outcome::Failed(error)),
            Op::ReadChunk => {
                let parent = slot.parent;
                if parent != super::ORPHAN {
                    self.slots
                        .get_mut(parent)
                        .pending_error
                        .get_or_insert(error);
                }
            }
            Op::ControlRecv | Op::ControlSend | Op::Drain | Op::Pool | Op::Free => {}
            _ => {
                slot.pending_error.get_or_insert(error);
            }
        }
    }
}

impl Drop for Messenger {
    fn drop(&mut self) {
        if self.broken {
            // The endpoint was closed to fence a kept buffer (`fence_kept_buffer`):
            // nothing can be flushed; keep the memory the provider knew of allocated.
            let table = std::mem::replace(&mut self.slots, super::slots::SlotTable::new(0));
            std::mem::forget(table);
            std::mem::forget(std::mem::take(&mut self.staging));
            return;
        }
        // Let internal control messages (FINs a peer waits for) leave first.
        let deadline = Instant::now() + Duration::from_secs(1);
        let control_in_flight = |m: &Self| {
            m.slots
                .active()
                .any(|i| m.slots.get(i).op == Op::ControlSend && m.slots.get(i).posted)
        };
        while control_in_flight(self) && Instant::now() < deadline {
            if self.poll_completions().is_err() {
                break;
            }
        }
        // Cancel what is posted, then let the provider flush, so that no operation
        // references the slot table when it is freed.
        let posted: Vec<u32> = self
            .slots
            .active()
            .filter(|&i| self.slots.get(i).posted)
            .collect();
        for index in posted {
            let ctx = self.slots.context(index);
            self.endpoint.cancel(ctx);
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.slots.active().any(|i| self.slots.get(i).posted) && Instant::now() < deadline {
            if self.poll_completions().is_err() {
                break;
            }
        }
        if self.slots.active().any(|i| self.slots.get(i).posted) {
            // The provider still holds slot memory: keep it allocated forever rather
            // than let the provider write into freed memory.
            let table = std::mem::replace(&mut self.slots, super::slots::SlotTable::new(0));
            std::mem::forget(table);
            std::mem::forget(std::mem::take(&mut self.staging));
        }
    }
}
