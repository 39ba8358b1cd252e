//! Posting operations and handling their completions: the protocol state machines of
//! the messenger (eager, rendezvous, control messages) and peer death.

use std::ffi::c_void;
use std::time::{Duration, Instant};

use steadfast_fabric_sys as sys;

use crate::error::{fi_error_text, means_peer_gone, Error, Result};
use crate::mr::CacheSlot;
use crate::objects::{CqEntry, CqError, CqPoll, Posted};
use crate::PeerId;

use super::slots::{Completion, Op, Outcome, BOUNCE_LEN};
use super::tags::{self, RTS_CQ_DATA};
use super::wire::{Control, ControlOp, FinStatus, Rts, CONTROL_LEN, RTS_LEN};
use super::Messenger;

/// Completions read per `fi_cq_read`.
pub(super) const CQ_BATCH: usize = 16;
/// `fi_cq_read` calls per progress call at most (bounds the time one call takes).
const CQ_ROUNDS: usize = 8;

impl Messenger {
    /// Descriptor of a user buffer: a cached registration when the provider requires
    /// local registration, else none.
    pub(super) fn local_desc(
        &mut self,
        addr: *const u8,
        len: usize,
    ) -> Result<(*mut c_void, Option<CacheSlot>)> {
        if !self.mr_mode.local() || len == 0 {
            return Ok((std::ptr::null_mut(), None));
        }
        // SAFETY: the caller of the posting operation guarantees the buffer lives until
        // completion, and the slot releases the registration then.
        let slot = unsafe {
            self.cache.acquire(
                &self.domain,
                &self.endpoint,
                self.mr_mode,
                addr as usize,
                len,
            )?
        };
        Ok((self.cache.region(slot).desc(), Some(slot)))
    }

    /// Descriptor of slot-table memory (bounce buffers).
    pub(super) fn bounce_desc(&self) -> *mut c_void {
        self.slots_mr
            .as_ref()
            .map_or(std::ptr::null_mut(), |mr| mr.desc())
    }

    /// Posts an eager send of a slot's buffer.
    ///
    /// # Safety
    /// The slot's buffer is valid until the operation completes.
    pub(super) unsafe fn post_eager_send(
        &mut self,
        index: u32,
        dest: sys::fi_addr_t,
        tag: u64,
    ) -> Result<()> {
        let (buf, len, peer) = {
            let s = self.slots.get(index);
            (s.buf, s.len, s.peer)
        };
        let (desc, mr) = self.local_desc(buf, len)?;
        self.slots.get_mut(index).mr = mr;
        let ctx = self.slots.context(index);
        let wire_tag = tags::encode(self.config.local_id, tag);
        // SAFETY: buf is valid (caller), ctx is the slot's context, live until completion.
        self.retry_post(peer, |m| unsafe {
            m.endpoint.post_tsend(buf, len, desc, dest, wire_tag, ctx)
        })?;
        self.slots.get_mut(index).posted = true;
        Ok(())
    }

    /// Registers a slot's buffer for remote reads and posts the RTS header.
    ///
    /// # Safety
    /// The slot's buffer is valid until the FIN arrives.
    pub(super) unsafe fn post_rts(
        &mut self,
        index: u32,
        dest: sys::fi_addr_t,
        tag: u64,
    ) -> Result<()> {
        let (buf, len, peer) = {
            let s = self.slots.get(index);
            (s.buf, s.len, s.peer)
        };
        // SAFETY: buf is valid until the FIN (caller); the slot holds the registration.
        let mr = unsafe {
            self.cache.acquire(
                &self.domain,
                &self.endpoint,
                self.mr_mode,
                buf as usize,
                len,
            )?
        };
        let region = self.cache.region(mr);
        let rts = Rts {
            message_len: len as u64,
            remote_addr: region.remote_address(self.mr_mode, buf as usize),
            key: region.key(),
            token: self.slots.token(index),
        };
        let slot = self.slots.get_mut(index);
        slot.mr = Some(mr);
        let mut header = [0u8; RTS_LEN];
        rts.encode(&mut header);
        slot.bounce[..RTS_LEN].copy_from_slice(&header);
        let wire_tag = tags::encode(self.config.local_id, tag);
        if RTS_LEN <= self.inject_limit {
            // Inject: no completion to wait for, and the path every provider buffers
            // best when the receive is not posted yet.
            self.retry_post(peer, |m| {
                m.endpoint.tinjectdata(&header, RTS_CQ_DATA, dest, wire_tag)
            })?;
            return Ok(());
        }
        let header = self.slots.get(index).bounce.as_ptr();
        let desc = self.bounce_desc();
        let ctx = self.slots.context(index);
        // SAFETY: the header lives in the slot, which stays taken until completion.
        self.retry_post(peer, |m| unsafe {
            m.endpoint
                .post_tsenddata(header, RTS_LEN, desc, RTS_CQ_DATA, dest, wire_tag, ctx)
        })?;
        self.slots.get_mut(index).posted = true;
        Ok(())
    }

    /// Posts a user receive (into the bounce buffer for short buffers).
    ///
    /// # Safety
    /// The slot's buffer is valid until the operation completes.
    pub(super) unsafe fn post_user_recv(
        &mut self,
        index: u32,
        tag: u64,
        ignore: u64,
    ) -> Result<()> {
        let (ptr, len, desc, mr) = match self.staging_area(index) {
            Some((ptr, len, desc)) => (ptr, len, desc, None),
            None => {
                let (buf, len) = (self.slots.get(index).buf, self.slots.get(index).len);
                let (desc, mr) = self.local_desc(buf, len)?;
                (buf, len, desc, mr)
            }
        };
        self.slots.get_mut(index).mr = mr;
        let ctx = self.slots.context(index);
        let any = sys::FI_ADDR_UNSPEC_VALUE;
        // SAFETY: ptr is the bounce buffer or the caller's buffer, both valid until
        // completion; ctx is the slot's context.
        self.retry_post(None, |m| unsafe {
            m.endpoint.post_trecv(ptr, len, desc, any, tag, ignore, ctx)
        })?;
        self.slots.get_mut(index).posted = true;
        Ok(())
    }

    /// Posts (or re-posts) a control receive in its slot's bounce buffer.
    pub(super) fn post_control_recv(&mut self, index: u32) -> Result<()> {
        let ptr = self.slots.get_mut(index).bounce.as_mut_ptr();
        let desc = self.bounce_desc();
        let ctx = self.slots.context(index);
        let any = sys::FI_ADDR_UNSPEC_VALUE;
        // Control traffic travels untagged: its receives stay out of the tagged match
        // list, which every user message would otherwise scan past.
        // SAFETY: the bounce buffer and context live in the slot table, which outlives
        // every posted operation (see Drop).
        self.retry_post(None, |m| unsafe {
            m.endpoint.post_recv(ptr, BOUNCE_LEN, desc, any, ctx)
        })?;
        self.slots.get_mut(index).posted = true;
        Ok(())
    }

    /// Sends a control message from a detached slot; its completion frees the slot.
    pub(super) fn send_control(&mut self, peer: PeerId, control: Control) -> Result<()> {
        let dest = self.peer_addr(peer)?;
        let mut message = [0u8; CONTROL_LEN];
        control.encode(&mut message);
        if control.op == ControlOp::Fin && CONTROL_LEN <= self.inject_limit {
            // Inject: the one path every provider buffers correctly when the peer's
            // control receives are all in use. A lost FIN's peer is dead anyway.
            return self.retry_post(Some(peer), |m| m.endpoint.inject(&message, dest));
        }
        // Probes (and FINs on providers with tiny inject sizes) are sent from a slot, so
        // that a failed delivery comes back as an error completion.
        let index = self.slots.take(Op::ControlSend, Some(peer))?;
        let slot = self.slots.get_mut(index);
        slot.detached = true;
        slot.bounce[..CONTROL_LEN].copy_from_slice(&message);
        let ptr = slot.bounce.as_ptr();
        let desc = self.bounce_desc();
        let ctx = self.slots.context(index);
        // SAFETY: the message lives in the slot until its completion frees it.
        let posted = self.retry_post(Some(peer), |m| unsafe {
            m.endpoint.post_send(ptr, CONTROL_LEN, desc, dest, ctx)
        });
        match posted {
            Ok(()) => {
                self.slots.get_mut(index).posted = true;
                Ok(())
            }
            Err(e) => {
                self.slots.release(index);
                Err(e)
            }
        }
    }

    /// A FIN for `token` from this process.
    fn fin(&self, status: FinStatus, token: u64) -> Control {
        Control {
            op: ControlOp::Fin,
            status,
            source: self.config.local_id,
            token,
        }
    }

    /// Reads and handles completions.
    pub(super) fn poll_completions(&mut self) -> Result<usize> {
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
        Ok(handled)
    }

    /// Sets a slot's outcome, releases its registration, frees it if detached.
    fn finish(&mut self, index: u32, outcome: Outcome) {
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

    fn on_completion(&mut self, entry: &CqEntry) {
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

    fn probe_answered(&mut self, peer: Option<PeerId>) {
        if let Some(Some(p)) = peer.and_then(|p| self.peers.get_mut(p as usize)) {
            p.probing = false;
        }
    }

    fn finish_rendezvous_send_if_done(&mut self, index: u32) {
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
    fn on_recv(&mut self, index: u32, entry: &CqEntry) {
        let (source, user_tag) = tags::decode(entry.tag);
        let is_rts = entry.flags & sys::FI_REMOTE_CQ_DATA as u64 != 0 && entry.data == RTS_CQ_DATA;
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

    fn start_rendezvous_read(&mut self, index: u32, source: PeerId, rts: Rts) {
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
    fn post_read_chunks(&mut self, index: u32, source: PeerId) {
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
    fn fail_rendezvous_recv(&mut self, index: u32, error: Error) {
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
    fn on_read_chunk(&mut self, child: u32, error: Option<Error>) {
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

    fn on_control(&mut self, index: u32, entry: &CqEntry) {
        let slot = self.slots.get(index);
        let Some(control) = Control::decode(&slot.bounce[..entry.len.min(BOUNCE_LEN)]) else {
            self.stats.malformed += 1;
            return;
        };
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

    fn on_error(&mut self, error: CqError) {
        let Some(index) = self.slots.index_of(error.context) else {
            return;
        };
        let slot = self.slots.get(index);
        let (op, peer, buffer_len) = (slot.op, slot.peer, slot.len);
        let text = fi_error_text(error.code as i64);
        let peer_error = |peer: PeerId| Error::PeerUnreachable {
            peer,
            reason: text.clone(),
        };
        // A provider cancels operations it cannot finish when a connection drops (we
        // only ever cancel receives ourselves); an error of an operation whose peer is
        // known dead is that death.
        let peer_dead = peer.is_some_and(|p| self.peer_failure(p).is_some());
        let gone = means_peer_gone(error.code)
            || peer_dead
            || (error.code == sys::FI_ECANCELED && !matches!(op, Op::Recv | Op::ControlRecv));
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
            Op::Free => {}
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
            Op::ControlRecv | Op::ControlSend | Op::Free => {}
            _ => {
                slot.pending_error.get_or_insert(error);
            }
        }
    }
}

impl Drop for Messenger {
    fn drop(&mut self) {
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
