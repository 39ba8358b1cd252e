//! The tagged operations of the public API (blocking, non-blocking, wait, test,
//! cancel) and their requests: posting with back-pressure retries, and blocking waits
//! that watch the peer and the timeout.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::objects::Posted;
use crate::PeerId;

use super::slots::{Completion, Op, Outcome};
use super::tags::{self};
use super::waiter::Waiter;
use super::{Messenger, Request};

impl Messenger {
    /// Sends `data` to `peer` with `tag`, returning once `data` may be reused.
    ///
    /// # Errors
    /// [`Error::PeerUnreachable`] when the peer is or becomes dead;
    /// [`Error::InvalidArgument`] for a bad tag or peer; [`Error::Timeout`] past the
    /// configured operation timeout.
    pub fn send(&mut self, peer: PeerId, tag: u64, data: &[u8]) -> Result<()> {
        // SAFETY: we wait for completion before returning, so `data` outlives the
        // operation (wait_blocking only returns once libfabric is done with it).
        match unsafe { self.start_send(peer, tag, data.as_ptr(), data.len(), None)? } {
            None => Ok(()),
            Some(request) => self.wait_blocking(request).map(|_| ()),
        }
    }

    /// Receives a message from `source` (any if `None`) whose tag equals `tag` on the
    /// bits not set in `ignore` ([`ANY_TAG`](super::ANY_TAG) for any), into `buf`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the message is longer than `buf` (the message is
    /// consumed, `buf`'s content is unspecified); [`Error::PeerUnreachable`] when a
    /// specific source is or becomes dead; [`Error::Timeout`] past the timeout.
    pub fn recv(
        &mut self,
        source: Option<PeerId>,
        tag: u64,
        ignore: u64,
        buf: &mut [u8],
    ) -> Result<Completion> {
        // SAFETY: as in `send`: we wait until libfabric is done with `buf`.
        let request = unsafe { self.start_recv(source, tag, ignore, buf.as_mut_ptr(), buf.len())? };
        self.wait_blocking(request)
    }

    /// Starts a send without waiting. Returns `None` when the message was injected
    /// (already complete).
    ///
    /// # Safety
    /// `data` must stay valid and unchanged until the request completes ([`wait`] or
    /// [`test`] returned its result) or the messenger is dropped.
    ///
    /// # Errors
    /// As [`send`](Self::send), for what can be known at once.
    ///
    /// [`wait`]: Self::wait
    /// [`test`]: Self::test
    pub unsafe fn isend(&mut self, peer: PeerId, tag: u64, data: &[u8]) -> Result<Option<Request>> {
        // SAFETY: forwarded to the caller.
        unsafe { self.start_send(peer, tag, data.as_ptr(), data.len(), None) }
    }

    /// As [`isend`](Self::isend), with a word (at most [`MAX_EXTRA`]) the receiver's
    /// software matching sees besides the tag ([`Arrival::extra`]), carried in remote
    /// CQ data; a provider-matched receive ignores it.
    ///
    /// # Safety
    /// As [`isend`](Self::isend).
    ///
    /// # Errors
    /// As [`isend`](Self::isend); [`Error::InvalidArgument`] for a word above
    /// [`MAX_EXTRA`] or a provider without 4 bytes of remote CQ data.
    ///
    /// [`MAX_EXTRA`]: super::MAX_EXTRA
    /// [`Arrival::extra`]: super::Arrival::extra
    pub unsafe fn isend_with(
        &mut self,
        peer: PeerId,
        tag: u64,
        data: &[u8],
        extra: u32,
    ) -> Result<Option<Request>> {
        if extra > tags::MAX_EXTRA || self.info.cq_data_size() < 4 {
            return Err(Error::InvalidArgument(format!(
                "word {extra:#x} above {:#x}, or no remote CQ data",
                tags::MAX_EXTRA
            )));
        }
        // SAFETY: forwarded to the caller.
        unsafe { self.start_send(peer, tag, data.as_ptr(), data.len(), Some(extra)) }
    }

    /// Starts a receive without waiting.
    ///
    /// # Safety
    /// `buf` must stay valid and otherwise unused until the request completes or the
    /// messenger is dropped.
    ///
    /// # Errors
    /// As [`recv`](Self::recv), for what can be known at once.
    pub unsafe fn irecv(
        &mut self,
        source: Option<PeerId>,
        tag: u64,
        ignore: u64,
        buf: &mut [u8],
    ) -> Result<Request> {
        // SAFETY: forwarded to the caller.
        unsafe { self.start_recv(source, tag, ignore, buf.as_mut_ptr(), buf.len()) }
    }

    /// Waits for a request and returns its result.
    ///
    /// # Errors
    /// The operation's error; [`Error::InvalidArgument`] for a request already
    /// finished.
    pub fn wait(&mut self, request: Request) -> Result<Completion> {
        self.wait_blocking(request)
    }

    /// Progresses once and returns the request's result if it has finished.
    ///
    /// # Errors
    /// As [`wait`](Self::wait).
    pub fn test(&mut self, request: Request) -> Result<Option<Completion>> {
        self.check_request(request)?;
        self.progress()?;
        if matches!(self.slots.get(request.index).outcome, Outcome::Pending) {
            return Ok(None);
        }
        self.take_outcome(request.index).map(Some)
    }

    /// Gives up a request: a posted receive is cancelled, a send stops waiting for its
    /// peer. Returns once libfabric no longer holds the buffer: `Some` when the
    /// operation completed before the cancel took effect (a received message is then
    /// in the buffer and must be delivered), `None` when it was cancelled.
    ///
    /// # Errors
    /// The operation's own error if it failed first; [`Error::InvalidArgument`] for a
    /// request already finished.
    pub fn cancel(&mut self, request: Request) -> Result<Option<Completion>> {
        self.check_request(request)?;
        let index = request.index;
        self.abandon(index, Error::Cancelled);
        let mut waiter = Waiter::grace();
        loop {
            self.poll_completions()?;
            if !matches!(self.slots.get(index).outcome, Outcome::Pending) {
                return match self.take_outcome(index) {
                    Ok(c) => Ok(Some(c)),
                    Err(Error::Cancelled) => Ok(None),
                    Err(e) => Err(e),
                };
            }
            if waiter.timed_out().is_some() {
                return Err(self.fence_kept_buffer());
            }
            waiter.pause();
        }
    }

    /// Checks whether `peer` is alive now (its process on this host, else a probe whose
    /// failure shows later); see [`peer_failure`](Self::peer_failure) for the verdict.
    pub fn check_peer(&mut self, peer: PeerId) {
        self.check_liveness(peer, true);
    }

    /// Polls the completion queue once, handling what completed; returns how many
    /// completions were handled. Call it while waiting on manual-progress providers.
    ///
    /// # Errors
    /// [`Error::Fabric`] when the completion queue itself fails.
    pub fn progress(&mut self) -> Result<usize> {
        self.poll_completions()
    }

    pub(super) fn check_request(&self, request: Request) -> Result<()> {
        if self.broken {
            return Err(Self::broken_error());
        }
        let slot = self.slots.get(request.index);
        if slot.generation != request.generation || slot.op == Op::Free || slot.detached {
            return Err(Error::InvalidArgument("request already finished".into()));
        }
        Ok(())
    }

    /// Takes a finished slot's outcome and frees the slot.
    pub(super) fn take_outcome(&mut self, index: u32) -> Result<Completion> {
        let outcome = std::mem::replace(&mut self.slots.get_mut(index).outcome, Outcome::Pending);
        self.slots.release(index);
        match outcome {
            Outcome::Done(c) => Ok(c),
            Outcome::Failed(e) => Err(e),
            Outcome::Pending => unreachable!("take_outcome on a pending slot"),
        }
    }

    pub(super) fn request(&self, index: u32) -> Request {
        Request {
            index,
            generation: self.slots.get(index).generation,
        }
    }

    /// Posts a send of `len` bytes at `data` (with `extra` in remote CQ data); `None`
    /// when injected.
    ///
    /// # Safety
    /// `data..data+len` valid and unchanged until the returned request completes.
    pub(super) unsafe fn start_send(
        &mut self,
        peer: PeerId,
        tag: u64,
        data: *const u8,
        len: usize,
        extra: Option<u32>,
    ) -> Result<Option<Request>> {
        Self::check_tag(tag)?;
        let dest = self.peer_addr(peer)?;
        let data = if len == 0 {
            std::ptr::NonNull::<u8>::dangling().as_ptr()
        } else {
            data.cast_mut()
        };
        self.wait_admitted(peer)?;
        if len <= self.inject_limit {
            let wire_tag = tags::encode(self.config.local_id, self.config.generation, tag);
            // SAFETY: data is valid for len bytes (caller); inject copies it at once.
            let bytes = unsafe { std::slice::from_raw_parts(data, len) };
            match tags::cq_data(false, extra) {
                None => {
                    self.retry_post(Some(peer), |m| m.endpoint.tinject(bytes, dest, wire_tag))?
                }
                Some(d) => self.retry_post(Some(peer), |m| {
                    m.endpoint.tinjectdata(bytes, d, dest, wire_tag)
                })?,
            }
            self.stats.injected += 1;
            return Ok(None);
        }
        if len <= self.eager_limit() {
            let index = self.slots.take(Op::EagerSend, Some(peer))?;
            let slot = self.slots.get_mut(index);
            slot.buf = data;
            slot.len = len;
            // SAFETY: forwarded contract on data.
            unsafe { self.post_eager_send(index, dest, tag, extra) }
                .inspect_err(|_| self.slots.release(index))?;
            self.stats.eager += 1;
            return Ok(Some(self.request(index)));
        }
        // Every FIN must find a posted control receive: providers lose unexpected
        // messages under load (net in libfabric 1.17, with RMA reads in flight). FINs in
        // flight to us are at most our outstanding rendezvous sends, probes at most one
        // per peer.
        let needed = self.rendezvous_outstanding + 1 + self.peers.len() + 8;
        self.ensure_control_receives(needed)?;
        let index = self.slots.take(Op::RndvSend, Some(peer))?;
        self.rendezvous_outstanding += 1;
        let slot = self.slots.get_mut(index);
        slot.buf = data;
        slot.len = len;
        // SAFETY: forwarded contract on data.
        unsafe { self.post_rts(index, dest, tag, extra) }
            .inspect_err(|_| self.release_failed(index))?;
        self.stats.rendezvous += 1;
        Ok(Some(self.request(index)))
    }

    /// Posts a receive.
    ///
    /// # Safety
    /// `buf..buf+len` valid and unused until the returned request completes.
    pub(super) unsafe fn start_recv(
        &mut self,
        source: Option<PeerId>,
        tag: u64,
        ignore: u64,
        buf: *mut u8,
        len: usize,
    ) -> Result<Request> {
        Self::check_tag(tag)?;
        let source_incarnation = match source {
            Some(peer) => {
                self.peer_addr(peer)?;
                Some((peer, self.peer_generation(peer).unwrap_or(0)))
            }
            None => None,
        };
        let index = self.slots.take(Op::Recv, source)?;
        let slot = self.slots.get_mut(index);
        slot.buf = buf;
        slot.len = len;
        let staging = self.choose_staging(len);
        self.slots.get_mut(index).staging = staging;
        let (wire_tag, wire_ignore) = tags::user_match(source_incarnation, tag, ignore);
        // SAFETY: forwarded contract on buf.
        unsafe { self.post_user_recv(index, wire_tag, wire_ignore) }
            .inspect_err(|_| self.release_failed(index))?;
        Ok(self.request(index))
    }

    /// Releases a slot whose first post failed (nothing outstanding).
    pub(super) fn release_failed(&mut self, index: u32) {
        self.release_staging(index);
        if self.slots.get(index).op == Op::RndvSend {
            self.rendezvous_outstanding -= 1;
        }
        if let Some(mr) = self.slots.get_mut(index).mr.take() {
            self.cache.release(mr);
        }
        self.slots.release(index);
    }

    /// Calls `post` until it is accepted, progressing in between (`-FI_EAGAIN` is
    /// back-pressure). Gives up when `peer` turns out dead or the timeout passes.
    pub(super) fn retry_post(
        &mut self,
        peer: Option<PeerId>,
        mut post: impl FnMut(&mut Self) -> Result<Posted>,
    ) -> Result<()> {
        let mut waiter = Waiter::new(&self.config);
        loop {
            if post(self)? == Posted::Yes {
                return Ok(());
            }
            self.poll_completions()?;
            if let Some(full) = waiter.liveness_due() {
                if let Some(peer) = peer {
                    self.check_liveness(peer, full);
                    self.peer_addr(peer)?;
                }
            }
            if let Some(after) = waiter.timed_out() {
                return Err(Error::Timeout {
                    operation: "posting",
                    after,
                });
            }
            waiter.pause();
        }
    }

    /// Waits for a request, checking its peer's liveness; on a timeout, cancels it and
    /// waits for libfabric to release its buffer.
    pub(super) fn wait_blocking(&mut self, request: Request) -> Result<Completion> {
        self.check_request(request)?;
        let index = request.index;
        let mut waiter = Waiter::new(&self.config);
        let mut timeout_reported: Option<Duration> = None;
        loop {
            self.poll_completions()?;
            if !matches!(self.slots.get(index).outcome, Outcome::Pending) {
                return self.take_outcome(index);
            }
            if let Some(full) = waiter.liveness_due() {
                if let Some(peer) = self.slots.get(index).peer {
                    self.check_liveness(peer, full);
                    self.orphan_reads_from_exited(index, peer);
                }
            }
            if timeout_reported.is_none() {
                if let Some(after) = waiter.timed_out() {
                    timeout_reported = Some(after);
                    self.abandon(
                        index,
                        Error::Timeout {
                            operation: "waiting for completion",
                            after,
                        },
                    );
                    waiter = Waiter::grace();
                }
            } else if waiter.timed_out().is_some() {
                // libfabric still holds the user's buffer and will not give it back:
                // returning as things are would let it write into freed memory.
                return Err(self.fence_kept_buffer());
            }
            waiter.pause();
        }
    }
}
