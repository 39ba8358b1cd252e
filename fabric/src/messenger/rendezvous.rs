//! The receiver's side of the rendezvous protocol: RMA reads of the sender's buffer,
//! in chunks, straight into the user's receive buffer, and their completions.

use crate::error::Error;
use crate::objects::Posted;
use crate::PeerId;

use super::slots::{Completion, Op, Outcome};
use super::wire::{FinStatus, Rts};
use super::Messenger;

impl Messenger {
    pub(super) fn start_rendezvous_read(&mut self, index: u32, source: PeerId, rts: Rts) {
        let (buf, len) = (self.slots.get(index).buf, rts.message_len as usize);
        match self.local_desc(buf, len) {
            Ok((_, mr)) => {
                let slot = self.slots.get_mut(index);
                slot.mr = mr;
                slot.rts = Some(rts);
                slot.next_offset = 0;
                slot.chunks_in_flight = 0;
                slot.matched.len = len;
                self.post_read_chunks(index, source);
            }
            Err(e) => {
                let fin = self.fin(FinStatus::Failed, rts.token);
                let _ = self.send_control(source, fin);
                self.finish(index, Outcome::Failed(e));
            }
        }
    }

    /// Posts reads of a rendezvous receive until the pipeline is full.
    pub(super) fn post_read_chunks(&mut self, index: u32, source: PeerId) {
        let Ok(src) = self.peer_addr(source) else {
            let reason = self
                .peer_failure(source)
                .unwrap_or("unknown peer")
                .to_owned();
            return self.fail_rendezvous_recv(
                index,
                Error::PeerUnreachable {
                    peer: source,
                    reason,
                },
            );
        };
        let desc = self
            .slots
            .get(index)
            .mr
            .map_or(std::ptr::null_mut(), |mr| self.cache.region(mr).desc());
        loop {
            let slot = self.slots.get(index);
            let rts = slot.rts.expect("rendezvous receive has its header");
            let total = rts.message_len as usize;
            if slot.next_offset >= total
                || slot.chunks_in_flight >= self.config.rendezvous_pipeline
                || slot.pending_error.is_some()
            {
                break;
            }
            let offset = slot.next_offset;
            let chunk = (total - offset)
                .min(self.config.rendezvous_chunk)
                .min(self.info.max_msg_size());
            let Ok(child) = self.slots.take(Op::ReadChunk, Some(source)) else {
                break;
            };
            let child_slot = self.slots.get_mut(child);
            child_slot.parent = index;
            child_slot.detached = true;
            child_slot.len = chunk;
            let ctx = self.slots.context(child);
            // SAFETY: buf + offset .. + chunk lies within the user's receive buffer
            // (message_len <= buffer length was checked), valid until the receive
            // completes, which waits for every chunk.
            let target = unsafe { self.slots.get(index).buf.add(offset) };
            // SAFETY: as above; ctx is the child slot's context.
            let posted = unsafe {
                self.endpoint.post_read(
                    target,
                    chunk,
                    desc,
                    src,
                    rts.remote_addr + offset as u64,
                    rts.key,
                    ctx,
                )
            };
            match posted {
                Ok(Posted::Yes) => {
                    self.slots.get_mut(child).posted = true;
                    let slot = self.slots.get_mut(index);
                    slot.next_offset += chunk;
                    slot.chunks_in_flight += 1;
                }
                Ok(Posted::Again) => {
                    self.slots.release(child);
                    if self.slots.get(index).chunks_in_flight == 0 {
                        // Nothing in flight will call us again: retry from progress.
                        self.deferred_reads.push(index);
                    }
                    break;
                }
                Err(e) => {
                    self.slots.release(child);
                    return self.fail_rendezvous_recv(index, e);
                }
            }
        }
        if self.slots.get(index).chunks_in_flight == 0 && !self.deferred_reads.contains(&index) {
            // Nothing could be posted and nothing is in flight: out of slots.
            let e = Error::TooManyRequests(self.slots.capacity());
            self.fail_rendezvous_recv(index, e);
        }
    }

    /// Retries rendezvous reads that met back-pressure with nothing in flight.
    pub(super) fn retry_deferred_reads(&mut self) {
        let pending = std::mem::take(&mut self.deferred_reads);
        for index in pending.iter().copied() {
            let source = self.slots.get(index).matched.source;
            self.post_read_chunks(index, source);
        }
        let mut pending = pending;
        pending.clear();
        if self.deferred_reads.is_empty() {
            self.deferred_reads = pending;
        }
    }

    /// Ends a rendezvous receive with an error once no read is in flight.
    pub(super) fn fail_rendezvous_recv(&mut self, index: u32, error: Error) {
        let slot = self.slots.get_mut(index);
        if slot.chunks_in_flight > 0 {
            slot.pending_error.get_or_insert(error);
            return;
        }
        let (source, token) = (slot.matched.source, slot.rts.map(|r| r.token));
        if let (Some(token), None) = (token, self.peer_failure(source)) {
            let fin = self.fin(FinStatus::Failed, token);
            let _ = self.send_control(source, fin);
        }
        self.finish(index, Outcome::Failed(error));
    }

    /// A rendezvous read chunk ended (`error` set if it failed).
    pub(super) fn on_read_chunk(&mut self, child: u32, error: Option<Error>) {
        let parent = self.slots.get(child).parent;
        if parent == super::ORPHAN {
            self.slots.get_mut(child).posted = false;
            return self.finish(child, Outcome::Done(Completion::default()));
        }
        let source = self.slots.get(child).peer.unwrap_or_default();
        self.finish(child, Outcome::Done(Completion::default()));
        let slot = self.slots.get_mut(parent);
        slot.chunks_in_flight -= 1;
        if let Some(error) = error {
            slot.pending_error.get_or_insert(error);
        }
        if let Some(error) = slot.pending_error.take() {
            return self.fail_rendezvous_recv(parent, error);
        }
        let rts = slot.rts.expect("rendezvous receive has its header");
        if slot.next_offset < rts.message_len as usize {
            return self.post_read_chunks(parent, source);
        }
        if slot.chunks_in_flight == 0 {
            let fin = self.fin(FinStatus::Done, rts.token);
            // If the FIN cannot be sent the sender is gone; our data is complete anyway.
            let _ = self.send_control(source, fin);
            let c = self.slots.get(parent).matched;
            self.finish(parent, Outcome::Done(c));
        }
    }
}
