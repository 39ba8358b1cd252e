//! Non-blocking operations: [`Comm::isend`], [`Comm::irecv`], [`Comm::iagree`], each
//! returning a request to `test` (progress once) or `wait`. These requests borrow their
//! buffers, so a buffer cannot be reused while an operation may still touch it;
//! dropping a pending receive cancels it (waiting until the transport releases the
//! buffer). Because a request could be leaked instead (`mem::forget`), leaving the
//! transport with a buffer its owner frees, the borrowed `isend` / `irecv` are `unsafe`;
//! the safe [`Comm::isend_owned`] / [`Comm::irecv_owned`] own their buffers.
//!
//! ```compile_fail
//! # fn demo(comm: &steadfast::Comm) {
//! let mut buf = [0u8; 64];
//! let request = comm.irecv(None, None, &mut buf); // error: call to unsafe function
//! # }
//! ```
//!
//! Receives match in the order they were posted (MPI 4.1 §3.5): an `irecv` is posted
//! into the process's matching engine when it is called (`docs/matching.md`), so of
//! two pending receives that both fit a message, the earlier posted gets it however
//! they are tested, and one sender's messages on one communicator arrive in send
//! order, whichever path (self, shared memory, fabric) each message takes.

use std::marker::PhantomData;

use steadfast_fabric::Request;
use steadfast_shm::ShmError;

use super::p2p::outcome_result;
use super::{Agreement, Comm, CommError, Status};
use crate::world::engine::{Engine, QueuedId, Route};
use crate::world::matching::RecvKey;
use crate::world::tags::{fabric_sync_word, user_match, FABRIC_SYNC};

/// A receive in flight (from [`Comm::irecv`]).
#[must_use = "a receive request must be tested or waited for"]
pub struct RecvRequest<'a> {
    comm: Comm,
    /// The receive in the matcher, until its outcome is taken. The matcher may write
    /// the borrowed buffer during any progress round while the request is pending.
    key: Option<RecvKey>,
    finished: bool,
    _buf: PhantomData<&'a mut [u8]>,
}

// SAFETY: the request stands for a `&'a mut [u8]` (which is Send) and a `Comm` (Send);
// the raw pointer is only written through by the engine, under its token, whichever
// thread holds it, and the token's Acquire/Release orders those writes before the
// owner's test sees the outcome.
unsafe impl Send for RecvRequest<'_> {}
// SAFETY: a shared reference gives nothing but `Debug` (the `finished` flag); every use
// of the buffer goes through `&mut self`.
unsafe impl Sync for RecvRequest<'_> {}

impl std::fmt::Debug for RecvRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvRequest")
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl RecvRequest<'_> {
    /// Progresses once; the status when the message has arrived.
    ///
    /// # Errors
    /// As [`Comm::recv`], except that a wildcard receive reports
    /// [`CommError::ProcFailedPending`] while a failure is not acknowledged and stays
    /// pending (it may still match, be waited for after [`Comm::ack_failed`], or be
    /// dropped to cancel it); [`CommError::InvalidArgument`] once finished.
    pub fn test(&mut self) -> Result<Option<Status>, CommError> {
        if self.finished {
            return Err(CommError::InvalidArgument(
                "receive already finished".into(),
            ));
        }
        match self.key {
            Some(key) => self.test_matched(key),
            None => Err(CommError::InvalidArgument(
                "receive already finished".into(),
            )),
        }
    }

    fn test_matched(&mut self, key: RecvKey) -> Result<Option<Status>, CommError> {
        let mut guard = self.comm.engine.lock();
        let e = &mut *guard;
        let mut done = e.recv_outcome(key).map(outcome_result);
        if done.is_none() {
            e.drain_arrivals();
            done = e.recv_outcome(key).map(outcome_result);
        }
        if done.is_none() {
            e.progress();
            done = e
                .recv_outcome(key)
                .map(outcome_result)
                .or_else(|| self.comm.matched_interrupted(e, key, false));
        }
        match done {
            Some(r) => {
                self.key = None;
                self.finished = true;
                e.tick();
                r.map(Some)
            }
            None if e.recv_failure_pending(key) => match self.comm.interrupted(e, None, true) {
                Some(err @ CommError::ProcFailedPending { .. }) => Err(err),
                _ => Ok(None),
            },
            None => Ok(None),
        }
    }

    /// Waits for the message.
    ///
    /// # Errors
    /// As [`Comm::recv`] (a wildcard receive reports `ProcFailedPending` while a
    /// failure is not acknowledged; the request is consumed, so it is cancelled).
    pub fn wait(mut self) -> Result<Status, CommError> {
        let comm = self.comm.clone();
        super::Spin::until(&comm, || self.test())
    }
}

impl Drop for RecvRequest<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            // Withdrawn, or complete: the matcher no longer names the buffer either way.
            // A fabric read into the buffer is waited for first.
            let _ = self.comm.engine.lock().cancel_recv(key);
        }
    }
}

/// How long dropping an unfinished large shm send waits for its receiver's answer.
const SHM_DROP_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

enum SendState {
    /// Not offered to the transport yet (shm: before the first test).
    Waiting,
    /// In the engine's queue of its destination, behind sends posted earlier or
    /// refused for want of room (`engine_sendq.rs`).
    Queued(QueuedId),
    Shm(steadfast_shm::SendRequest),
    Fabric(Request),
    Done,
}

/// A send in flight (from [`Comm::isend`]).
#[must_use = "a send request must be tested or waited for"]
pub struct SendRequest<'a> {
    /// `None` for a send finished when it was started (no synchronous answer to wait
    /// for): it never needs the engine again, and keeping no handle spares the atomic
    /// reference counts, whose locked instructions wait for the ring's cache lines
    /// just written (the message rate). Every other send keeps one.
    comm: Option<Comm>,
    dest: u32,
    world: u32,
    wire_tag: u64,
    data: *const u8,
    len: usize,
    state: SendState,
    /// A synchronous send's sequence number: it completes once also answered.
    sync: Option<u32>,
    _data: PhantomData<&'a [u8]>,
}

// SAFETY: the request stands for a `&'a [u8]` (Send and Sync) and a `Comm` (Send and
// Sync); the pointer is only read through, by the transports under the engine's token.
unsafe impl Send for SendRequest<'_> {}
// SAFETY: as above; a shared reference gives nothing but `Debug`.
unsafe impl Sync for SendRequest<'_> {}

impl std::fmt::Debug for SendRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendRequest")
            .field("dest", &self.dest)
            .finish_non_exhaustive()
    }
}

impl SendRequest<'_> {
    /// The communicator of a send not finished at its start (the only ones that look).
    fn comm(&self) -> &Comm {
        self.comm
            .as_ref()
            .expect("a send unfinished at its start keeps its communicator")
    }

    fn data(&self) -> &[u8] {
        // SAFETY: the request borrows the caller's slice for its lifetime ('a).
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }

    /// Queues this send behind its destination's waiting sends.
    fn queue(&self, e: &mut Engine) -> QueuedId {
        // SAFETY: the request borrows `data` for 'a and, dropped earlier, withdraws the
        // entry (`Drop`); `Comm::isend`'s contract forbids leaking it.
        unsafe { e.queue_send(self.world, self.wire_tag, self.data, self.len) }
    }

    /// Progresses once; `true` when `data` may be reused.
    ///
    /// # Errors
    /// As [`Comm::send`].
    pub fn test(&mut self) -> Result<bool, CommError> {
        // A finished send (an inline or eager shm message, a fabric inject) is final:
        // answered without taking the engine (the message rate's wait loop).
        if self.sync.is_none() && matches!(self.state, SendState::Done) {
            return Ok(true);
        }
        // A handle of its own (the guard must not borrow `self`, which `step` changes);
        // only unfinished sends get here.
        let shared = std::sync::Arc::clone(&self.comm().engine);
        let mut guard = shared.lock();
        self.step(&mut guard)
    }

    /// [`test`](Self::test)'s work, with the engine held by the caller.
    fn step(&mut self, e: &mut Engine) -> Result<bool, CommError> {
        loop {
            match &mut self.state {
                SendState::Done => {
                    let Some(seq) = self.sync else {
                        return Ok(true);
                    };
                    if !e.sync_answered(self.world, seq) {
                        // The bytes left; look for the answer.
                        e.drain_arrivals();
                    }
                    if e.sync_answered(self.world, seq) {
                        e.sync_end(self.world, seq);
                        self.sync = None;
                        return Ok(true);
                    }
                    // The receive has not started yet.
                    break;
                }
                SendState::Waiting => {
                    // Behind sends to the same rank that wait for room: queue too, so
                    // none overtakes (docs/matching.md).
                    if e.sends_queued(self.world) {
                        e.push_queued();
                    }
                    if e.sends_queued(self.world) {
                        self.state = SendState::Queued(self.queue(e));
                        break;
                    }
                    let Route::Shm(l) = e.route(self.world) else {
                        unreachable!("only shm sends wait for room")
                    };
                    let shm = e.shm_mut().expect("shm route without endpoint");
                    // SAFETY: the request borrows `data` until it completes.
                    match unsafe { shm.isend(l, self.wire_tag, self.data()) } {
                        Ok(req) => self.state = SendState::Shm(req),
                        Err(ShmError::WouldBlock) => {
                            self.state = SendState::Queued(self.queue(e));
                            break;
                        }
                        Err(ShmError::PeerDead(_)) => {
                            e.report_failure(self.world, "process exited".into());
                            e.apply_failures();
                            break;
                        }
                        Err(err) => return Err(err.into()),
                    }
                }
                SendState::Queued(id) => {
                    let id = *id;
                    e.push_queued();
                    match e.take_queued(id) {
                        None => break,
                        Some(Ok(req)) => self.state = SendState::Shm(req),
                        Some(Err(ShmError::PeerDead(_))) => {
                            self.state = SendState::Done;
                            e.report_failure(self.world, "process exited".into());
                            e.apply_failures();
                            break;
                        }
                        Some(Err(err)) => {
                            self.state = SendState::Done;
                            return Err(err.into());
                        }
                    }
                }
                SendState::Shm(req) => {
                    let shm = e.shm_mut().expect("shm route without endpoint");
                    match shm.test_send(req) {
                        Ok(true) => {
                            let unread = req.unread();
                            self.state = SendState::Done;
                            if unread {
                                // The receiver dropped it unread: its communicator was
                                // revoked (or freed) before a receive took it.
                                if let Some(err) =
                                    self.comm().interrupted(e, Some(self.world), false)
                                {
                                    return Err(err);
                                }
                            }
                            e.stats_mut().shm_sent += 1;
                        }
                        Ok(false) => break,
                        Err(ShmError::PeerDead(_)) => {
                            // It cannot read our buffer any more.
                            self.state = SendState::Done;
                            e.report_failure(self.world, "process exited".into());
                            e.apply_failures();
                            break;
                        }
                        Err(err) => return Err(err.into()),
                    }
                }
                SendState::Fabric(req) => {
                    let req = *req;
                    let fab = e.fab_mut().expect("fabric route without messenger");
                    match fab.test(req) {
                        Ok(Some(_)) => {
                            e.stats_mut().fabric_sent += 1;
                            self.state = SendState::Done;
                        }
                        Ok(None) => break,
                        Err(err) => {
                            self.state = SendState::Done;
                            e.report_failure(self.world, format!("fabric: {err}"));
                            e.apply_failures();
                            return Err(self
                                .comm()
                                .interrupted(e, Some(self.world), false)
                                .unwrap_or_else(|| err.into()));
                        }
                    }
                }
            }
        }
        e.progress();
        if let Some(err) = self.comm().interrupted(e, Some(self.world), false) {
            match std::mem::replace(&mut self.state, SendState::Done) {
                SendState::Fabric(req) => {
                    let fab = e.fab_mut().expect("fabric route without messenger");
                    if let Ok(Some(_)) = fab.cancel(req) {
                        return Ok(true);
                    }
                }
                // Out of the queue: it will never leave.
                SendState::Queued(id) => e.cancel_queued(id),
                SendState::Shm(req) => {
                    // A large message offered by its address: the live receiver may be
                    // reading `data` now, so the send lasts until it answers: its FIN
                    // after the read, or its refusal of the message its revoked
                    // communicator dropped (or until it dies). Completing here let the
                    // caller reuse `data` under the receiver's read.
                    self.state = SendState::Shm(req);
                    return Ok(false);
                }
                _ => {}
            }
            self.state = SendState::Done;
            return Err(err);
        }
        Ok(false)
    }

    /// Waits until `data` may be reused.
    ///
    /// # Errors
    /// As [`Comm::send`].
    pub fn wait(mut self) -> Result<(), CommError> {
        // Finished already (an inline or eager message the ring took): nothing to take.
        if self.sync.is_none() && matches!(self.state, SendState::Done) {
            return Ok(());
        }
        let comm = self.comm().clone();
        super::Spin::until(&comm, || Ok(self.test()?.then_some(())))
    }
}

impl Drop for SendRequest<'_> {
    fn drop(&mut self) {
        if let Some(seq) = self.sync.take() {
            self.comm().engine.lock().sync_end(self.world, seq);
        }
        if let SendState::Queued(id) = self.state {
            // Out of the queue: the engine no longer names `data`.
            self.comm().engine.lock().cancel_queued(id);
        }
        // A large shm send offered by its address cannot be withdrawn: the receiver may
        // be reading the buffer. It is finished as `wait` would (the receiver answers
        // after its read, refuses a message it dropped, or dies), within a bound.
        if matches!(self.state, SendState::Shm(_)) {
            let deadline = std::time::Instant::now() + SHM_DROP_WAIT;
            while matches!(self.test(), Ok(false)) {
                if std::time::Instant::now() >= deadline {
                    log::warn!(
                        "a dropped large send to rank {} was not answered in {SHM_DROP_WAIT:?}; its buffer is released while the receiver may still read it",
                        self.dest
                    );
                    break;
                }
                std::thread::yield_now();
            }
        }
        // A fabric send still posted is cancelled (waiting for libfabric to let go of
        // the buffer).
        if let SendState::Fabric(req) = std::mem::replace(&mut self.state, SendState::Done) {
            {
                let mut e = self.comm().engine.lock();
                if let Some(fab) = e.fab_mut() {
                    let _ = fab.cancel(req);
                }
            }
        }
    }
}

/// An agreement in flight (from [`Comm::iagree`]).
#[derive(Debug)]
#[must_use = "an agreement request must be tested or waited for"]
pub struct AgreeRequest {
    comm: Comm,
    seq: u32,
}

impl AgreeRequest {
    /// Progresses once; the outcome when decided.
    ///
    /// # Errors
    /// [`CommError::Excluded`].
    pub fn test(&mut self) -> Result<Option<Agreement>, CommError> {
        self.comm.agreement_round(self.seq)
    }

    /// Waits for the outcome.
    ///
    /// # Errors
    /// [`CommError::Excluded`].
    pub fn wait(mut self) -> Result<Agreement, CommError> {
        let comm = self.comm.clone();
        super::Spin::until(&comm, || self.test())
    }
}

impl Comm {
    /// Starts a receive into `buf` (see [`Comm::recv`] for the arguments).
    ///
    /// # Safety
    /// The transport may write `buf` until the request completes or is dropped: the
    /// request must not be leaked (`mem::forget`, a reference cycle), or `buf` could be
    /// written after its owner freed or reused it. [`Comm::irecv_owned`] is the safe
    /// form.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad source or tag.
    pub unsafe fn irecv<'a>(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
        buf: &'a mut [u8],
    ) -> Result<RecvRequest<'a>, CommError> {
        let mut guard = self.engine.lock();
        let e = &mut *guard;
        let plan = self.plan_recv(e, source, tag)?;
        // Posted now, so receives match in the order they were posted.
        let key = e.post_recv(plan.ctx, plan.source, plan.tag, buf.as_mut_ptr(), buf.len());
        drop(guard);
        Ok(RecvRequest {
            comm: self.clone(),
            key: Some(key),
            finished: false,
            _buf: PhantomData,
        })
    }

    /// Starts a send of `data` to `dest` (see [`Comm::send`]); small messages are
    /// copied out at once.
    ///
    /// # Safety
    /// The transport or the receiver may read `data` until the request completes or is
    /// dropped: the request must not be leaked (`mem::forget`, a reference cycle).
    /// [`Comm::isend_owned`] is the safe form.
    ///
    /// # Errors
    /// As [`Comm::send`], for what is known at once.
    pub unsafe fn isend<'a>(
        &self,
        dest: u32,
        tag: u32,
        data: &'a [u8],
    ) -> Result<SendRequest<'a>, CommError> {
        // SAFETY: the caller's contract, the same.
        unsafe { self.isend_mode(dest, tag, data, false) }
    }

    /// Starts a synchronous send (`MPI_Issend`): as [`Comm::isend`], but the request
    /// completes only once the matching receive has started at `dest` (MPI 4.1,
    /// section 3.4), or fails: [`CommError::ProcFailed`] when `dest` fails first,
    /// [`CommError::Revoked`]. Over self, shared memory and the fabric.
    ///
    /// # Safety
    /// As [`Comm::isend`]. [`Comm::ssend`] is the blocking safe form.
    ///
    /// # Errors
    /// As [`Comm::isend`].
    pub unsafe fn issend<'a>(
        &self,
        dest: u32,
        tag: u32,
        data: &'a [u8],
    ) -> Result<SendRequest<'a>, CommError> {
        // SAFETY: the caller's contract, the same.
        unsafe { self.isend_mode(dest, tag, data, true) }
    }

    /// Sends `data` to `dest` and returns once the matching receive has started there
    /// (`MPI_Ssend`): see [`Comm::issend`].
    ///
    /// # Errors
    /// As [`Comm::issend`].
    pub fn ssend(&self, dest: u32, tag: u32, data: &[u8]) -> Result<(), CommError> {
        // SAFETY: the request is waited for (or dropped on unwinding) before `data`'s
        // borrow ends.
        unsafe { self.issend(dest, tag, data) }?.wait()
    }

    /// `isend` or, when `sync`, `issend`.
    ///
    /// # Safety
    /// As [`Comm::isend`].
    unsafe fn isend_mode<'a>(
        &self,
        dest: u32,
        tag: u32,
        data: &'a [u8],
        sync: bool,
    ) -> Result<SendRequest<'a>, CommError> {
        Self::check_tag(tag)?;
        let mut guard = self.engine.lock();
        let e = &mut *guard;
        let c = e.comm(self.id);
        let Some(&w) = c.group().get(dest as usize) else {
            return Err(CommError::InvalidArgument(format!(
                "destination {dest} outside a communicator of {}",
                c.group().len()
            )));
        };
        let ctx = c.context();
        if let Some(err) = self.interrupted(e, Some(w), false) {
            return Err(err);
        }
        let (mut wire_tag, _) = user_match(ctx, Some(tag));
        let route = e.route(w);
        let sync = if sync {
            let (seq, bits) = e.sync_start(w);
            // Over the fabric the sequence number travels beside the tag instead.
            if route != Route::Fabric {
                wire_tag |= bits;
            }
            Some(seq)
        } else {
            None
        };
        // Sends that never wait still let the engine run now and then.
        e.tick();
        let state = match route {
            Route::Local => {
                e.send_to_self(ctx, tag, data, sync);
                e.stats_mut().self_sent += 1;
                SendState::Done
            }
            Route::Shm(l) if !e.sends_queued(w) => {
                // A message the ring takes whole now leaves before the request exists:
                // building it finished, rather than finishing it through `step`, keeps
                // the request's fields out of the store buffer behind the ring's cells
                // (reading them back waited for those cache lines: 8 B message rate).
                let shm = e.shm_mut().expect("shm route without endpoint");
                match shm.try_send(l, wire_tag, data) {
                    Ok(()) => {
                        e.stats_mut().shm_sent += 1;
                        SendState::Done
                    }
                    // No room, too large, or the peer is dead: `step` below decides.
                    Err(_) => SendState::Waiting,
                }
            }
            Route::Shm(_) => SendState::Waiting,
            Route::Fabric => {
                let fab = e.fab_mut().expect("fabric route without messenger");
                let posted = match sync {
                    // SAFETY: the request borrows `data` until it completes, and its
                    // drop cancels a send still posted (waiting for libfabric to let go).
                    None => unsafe { fab.isend(w, wire_tag, data) },
                    // SAFETY: as above.
                    Some(seq) => unsafe {
                        fab.isend_with(w, wire_tag, data, fabric_sync_word(FABRIC_SYNC, seq))
                    },
                };
                match posted {
                    Ok(None) => {
                        e.stats_mut().fabric_sent += 1;
                        SendState::Done
                    }
                    Ok(Some(req)) => SendState::Fabric(req),
                    Err(err) => {
                        e.report_failure(w, format!("fabric: {err}"));
                        e.apply_failures();
                        return Err(self
                            .interrupted(e, Some(w), false)
                            .unwrap_or_else(|| err.into()));
                    }
                }
            }
        };
        let finished = sync.is_none() && matches!(state, SendState::Done);
        let mut req = SendRequest {
            comm: (!finished).then(|| self.clone()),
            dest,
            world: w,
            wire_tag,
            data: data.as_ptr(),
            len: data.len(),
            state,
            sync,
            _data: PhantomData,
        };
        // Try the ring at once, in the same hold of the engine: small messages leave now.
        let started = if matches!(req.state, SendState::Waiting) {
            req.step(e).map(|_| ())
        } else {
            Ok(())
        };
        // Before `req` may drop (its drop takes the engine).
        drop(guard);
        started?;
        Ok(req)
    }

    /// Starts an agreement (`MPIX_Comm_iagree`); see [`Comm::agree_full`].
    pub fn iagree(&self, flag: u64) -> AgreeRequest {
        let seq = self.engine.lock().start_agreement(self.id, flag);
        AgreeRequest {
            comm: self.clone(),
            seq,
        }
    }
}
