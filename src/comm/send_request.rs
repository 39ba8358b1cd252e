//! Sends in flight: [`Comm::isend`], [`Comm::issend`] (and the blocking `ssend`) and
//! their [`SendRequest`]. A send starts under the engine when it is free, or is queued
//! for the engine's holder (`post.rs`) when it is not; its request then tests the route
//! it took (self, an shm ring or the engine's per-destination queue, the fabric).

use std::marker::PhantomData;

use steadfast_fabric::Request;
use steadfast_shm::ShmError;

use super::post::{Post, SendCell};
use super::{Comm, CommError, Spin};
use crate::world::engine::{Engine, QueuedId, Route};
use crate::world::shared::{EngineGuard, Turn};
use crate::world::tags::{fabric_sync_word, user_match, FABRIC_SYNC};

/// How long dropping an unfinished large shm send waits for its receiver's answer.
const SHM_DROP_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

pub(super) enum SendState {
    /// Queued for the token holder (`post.rs`): the start's outcome (`world`,
    /// `wire_tag`, this state, `sync`) comes through the cell. A variant rather than a
    /// field, so the request keeps its size (the 8 B message rate stores 64 of them
    /// behind the ring's cells: a larger one measured a third slower).
    Posted(SendCell),
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

/// What starting a send made of it (the request's fields it sets).
pub(crate) struct SendStart {
    pub(super) world: u32,
    pub(super) wire_tag: u64,
    pub(super) state: SendState,
    pub(super) sync: Option<u32>,
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
    ///
    /// Never waits for another thread: when another thread holds the engine, the
    /// answer is `Ok(false)`.
    pub fn test(&mut self) -> Result<bool, CommError> {
        // A finished send (an inline or eager shm message, a fabric inject) is final:
        // answered without taking the engine (the message rate's wait loop).
        if self.finished_at_start() {
            return Ok(true);
        }
        // A handle of its own (the guard must not borrow `self`, which `step` changes);
        // only unfinished sends get here.
        let shared = std::sync::Arc::clone(&self.comm().engine);
        let mut turn = shared.turn();
        self.poll(&mut turn)
    }

    /// Dropping may wait for the engine: the take applies the queued send, so its
    /// state is known and the drop withdraws or finishes it.
    #[cold]
    #[inline(never)]
    fn adopt_for_drop(&mut self) {
        let shared = std::sync::Arc::clone(&self.comm().engine);
        let mut guard: EngineGuard<'_> = shared.lock();
        while self.is_posted() {
            let _ = self.adopt();
            if self.is_posted() {
                drop(guard);
                std::thread::yield_now();
                guard = shared.lock();
            }
        }
    }

    /// Finished, with no answer to wait for.
    fn finished_at_start(&self) -> bool {
        self.sync.is_none() && matches!(self.state, SendState::Done)
    }

    /// Queued, not yet applied (or not yet adopted).
    fn is_posted(&self) -> bool {
        matches!(self.state, SendState::Posted(_))
    }

    /// One test with the engine if it is free.
    fn poll(&mut self, turn: &mut Turn<'_>) -> Result<bool, CommError> {
        let Some(mut guard) = turn.try_lock() else {
            return Ok(false);
        };
        self.adopt()?;
        if self.is_posted() {
            // Not applied by this take (a stale view of the lane): a later one will.
            return Ok(false);
        }
        self.step(&mut guard)
    }

    /// Takes the queued start's outcome if it was applied (call with the token held).
    fn adopt(&mut self) -> Result<(), CommError> {
        let SendState::Posted(cell) = &self.state else {
            return Ok(());
        };
        let Some(started) = cell.try_take() else {
            return Ok(());
        };
        match started {
            Ok(s) => {
                self.world = s.world;
                self.wire_tag = s.wire_tag;
                self.state = s.state;
                self.sync = s.sync;
                Ok(())
            }
            Err(err) => {
                self.state = SendState::Done;
                Err(err)
            }
        }
    }

    /// [`test`](Self::test)'s work, with the engine held by the caller.
    fn step(&mut self, e: &mut Engine) -> Result<bool, CommError> {
        loop {
            match &mut self.state {
                // Not applied yet (`poll` adopts first): nothing to do with it here.
                SendState::Posted(_) => break,
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
                SendState::Shm(req) if !e.excluded() && !e.is_failed(self.world) => {
                    // A large message offered by its address: the live receiver may be
                    // reading `data` now, so the send lasts until it answers: its FIN
                    // after the read, or its refusal of the message its revoked
                    // communicator dropped (or until it dies). Completing here let the
                    // caller reuse `data` under the receiver's read.
                    self.state = SendState::Shm(req);
                    return Ok(false);
                }
                // No answer will come when this process was excluded (suspected
                // while alive: the others drop what it sends) or the receiver is known
                // failed. A read the receiver might still make of `data` cannot touch
                // this process (the kernel copies out of it), and what it reads no
                // longer counts. An excluded rank waiting for the answer kept a
                // collective that had given up inside its sends' drops for a minute
                // each (`SHM_DROP_WAIT`).
                SendState::Shm(_) => {}
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
    #[inline]
    pub fn wait(self) -> Result<(), CommError> {
        // Finished already (an inline or eager message the ring took): nothing to take.
        if self.finished_at_start() {
            return Ok(());
        }
        self.wait_unfinished()
    }

    /// [`wait`](Self::wait)'s loop, out of line (the message rate's inlined wait is
    /// only the check above).
    #[inline(never)]
    fn wait_unfinished(mut self) -> Result<(), CommError> {
        let shared = std::sync::Arc::clone(&self.comm().engine);
        Spin::until_polled(&shared, |turn| Ok(self.poll(turn)?.then_some(())))
    }
}

impl Drop for SendRequest<'_> {
    fn drop(&mut self) {
        if let SendState::Posted(cell) = &self.state {
            // Still queued: withdrawn without the engine, never started (the holder
            // that pops it finds the cell withdrawn and leaves the data alone).
            if cell.withdraw() {
                self.state = SendState::Done;
                return;
            }
        }
        if self.is_posted() {
            self.adopt_for_drop();
        }
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

impl Comm {
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
        let mut guard = match self.engine.try_lock() {
            Some(g) => g,
            // SAFETY: the caller's contract, the same.
            None => match unsafe { self.isend_queued(dest, tag, data, sync) } {
                Ok(req) => return Ok(req),
                // No room in this thread's lane: wait for the token, which applies
                // the queued posts first (the order holds).
                Err(()) => self.engine.lock(),
            },
        };
        let e = &mut *guard;
        // SAFETY: the caller's contract: `data` outlives the request built below.
        let start = unsafe { self.start_send(e, dest, tag, data, sync) }?;
        let finished = start.sync.is_none() && matches!(start.state, SendState::Done);
        let mut req = SendRequest {
            comm: (!finished).then(|| self.clone()),
            dest,
            world: start.world,
            wire_tag: start.wire_tag,
            data: data.as_ptr(),
            len: data.len(),
            state: start.state,
            sync: start.sync,
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

    /// Queues a send for the token holder (`src/world/posts.rs`): started before
    /// anything else the engine does next, after this thread's earlier posts
    /// (non-overtaking holds). `Err(())` when this thread's lane is full (nothing
    /// queued).
    ///
    /// # Safety
    /// As [`Comm::isend`].
    #[cold]
    #[inline(never)]
    unsafe fn isend_queued<'a>(
        &self,
        dest: u32,
        tag: u32,
        data: &'a [u8],
        sync: bool,
    ) -> Result<SendRequest<'a>, ()> {
        let cell = SendCell::default();
        let op = Post::Send {
            comm: self.clone(),
            dest,
            tag,
            data: data.as_ptr(),
            len: data.len(),
            sync,
            cell: std::sync::Arc::clone(&cell),
        };
        self.engine.post(op).map_err(|_| ())?;
        Ok(SendRequest {
            comm: Some(self.clone()),
            dest,
            world: u32::MAX,
            wire_tag: 0,
            data: data.as_ptr(),
            len: data.len(),
            state: SendState::Posted(cell),
            sync: None,
            _data: PhantomData,
        })
    }

    /// Starts a send with the engine held: checks, the synchronous sequence number,
    /// and the first attempt (self, an shm ring that takes it whole, a fabric post);
    /// `SendState::Waiting` for an shm send the ring did not take.
    ///
    /// # Safety
    /// The engine may keep `data`'s address (a fabric post): the request that owns the
    /// start must borrow `data` until it completes or is dropped.
    #[inline(always)]
    pub(super) unsafe fn start_send(
        &self,
        e: &mut Engine,
        dest: u32,
        tag: u32,
        data: &[u8],
        sync: bool,
    ) -> Result<SendStart, CommError> {
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
        Ok(SendStart {
            world: w,
            wire_tag,
            state,
            sync,
        })
    }
}
