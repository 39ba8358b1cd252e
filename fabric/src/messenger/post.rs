//! Posting operations: eager sends, RTS headers, user and control receives, control
//! messages (FIN, probes), with the descriptors each provider needs.

use std::ffi::c_void;

use steadfast_fabric_sys as sys;

use crate::error::Result;
use crate::mr::CacheSlot;
use crate::PeerId;

use super::slots::{Op, BOUNCE_LEN};
use super::tags::{self, RTS_CQ_DATA};
use super::wire::{Control, ControlOp, FinStatus, Rts, CONTROL_LEN, RTS_LEN};
use super::Messenger;

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
        extra: Option<u32>,
    ) -> Result<()> {
        let (buf, len, peer) = {
            let s = self.slots.get(index);
            (s.buf, s.len, s.peer)
        };
        let (desc, mr) = self.local_desc(buf, len)?;
        self.slots.get_mut(index).mr = mr;
        let ctx = self.slots.context(index);
        let wire_tag = tags::encode(self.config.local_id, self.config.generation, tag);
        let data = tags::cq_data(false, extra);
        // SAFETY: buf is valid (caller), ctx is the slot's context, live until completion.
        self.retry_post(peer, |m| unsafe {
            match data {
                None => m.endpoint.post_tsend(buf, len, desc, dest, wire_tag, ctx),
                Some(d) => m
                    .endpoint
                    .post_tsenddata(buf, len, desc, d, dest, wire_tag, ctx),
            }
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
        extra: Option<u32>,
    ) -> Result<()> {
        let (buf, len, peer) = {
            let s = self.slots.get(index);
            (s.buf, s.len, s.peer)
        };
        let cq_data = tags::cq_data(true, extra).unwrap_or(RTS_CQ_DATA);
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
        let wire_tag = tags::encode(self.config.local_id, self.config.generation, tag);
        if RTS_LEN <= self.inject_limit {
            // Inject: no completion to wait for, and the path every provider buffers
            // best when the receive is not posted yet.
            self.retry_post(peer, |m| {
                m.endpoint.tinjectdata(&header, cq_data, dest, wire_tag)
            })?;
            return Ok(());
        }
        let header = self.slots.get(index).bounce.as_ptr();
        let desc = self.bounce_desc();
        let ctx = self.slots.context(index);
        // SAFETY: the header lives in the slot, which stays taken until completion.
        self.retry_post(peer, |m| unsafe {
            m.endpoint
                .post_tsenddata(header, RTS_LEN, desc, cq_data, dest, wire_tag, ctx)
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
        let slot = self.slots.get_mut(index);
        slot.mr = mr;
        slot.posted_match = (tag, ignore);
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
    pub(super) fn fin(&self, status: FinStatus, token: u64) -> Control {
        Control {
            op: ControlOp::Fin,
            status,
            source: self.config.local_id,
            token,
        }
    }
}
