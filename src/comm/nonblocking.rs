//! Non-blocking operations: [`Comm::isend`] (`send_request.rs`), [`Comm::irecv`],
//! [`Comm::iagree`], each
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
//! into the process's matching engine when it is called (`docs/matching.md`), or, when
//! another thread holds the engine, queued in the calling thread's lane and posted by
//! the holder before anything else, after the thread's earlier posts (`post.rs`,
//! `docs/threads.md`), so of two pending receives of one thread that both fit a
//! message, the earlier posted gets it however they are tested, and one sender's
//! messages on one communicator arrive in send order, whichever path (self, shared
//! memory, fabric) each message takes.

use std::marker::PhantomData;

use super::p2p::outcome_result;
use super::post::{AgreeCell, Post, RecvCell};
use super::{Agreement, Comm, CommError, Spin, Status};
use crate::world::engine::Engine;
use crate::world::matching::RecvKey;
use crate::world::shared::Turn;

/// A receive in flight (from [`Comm::irecv`]).
#[must_use = "a receive request must be tested or waited for"]
pub struct RecvRequest<'a> {
    comm: Comm,
    st: RecvSt,
    _buf: PhantomData<&'a mut [u8]>,
}

/// A receive request's state (apart from its communicator, which its turn borrows).
struct RecvSt {
    /// The receive in the matcher, until its outcome is taken. The matcher may write
    /// the borrowed buffer during any progress round while the request is pending.
    key: Option<RecvKey>,
    /// A receive queued for the token holder (`post.rs`): its key comes through here.
    queued: Option<RecvCell>,
    finished: bool,
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
            .field("finished", &self.st.finished)
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
    ///
    /// Never waits for another thread: when another thread holds the engine (and so
    /// makes progress for this receive too), the answer is `Ok(None)`.
    pub fn test(&mut self) -> Result<Option<Status>, CommError> {
        let mut turn = self.comm.engine.turn();
        self.st.poll(&self.comm, &mut turn)
    }

    /// Waits for the message: tests, pausing between tests (it never waits for the
    /// engine itself; while another thread holds it, that thread's rounds progress this
    /// receive, and it gives way to this one when it lets go).
    ///
    /// # Errors
    /// As [`Comm::recv`] (a wildcard receive reports `ProcFailedPending` while a
    /// failure is not acknowledged; the request is consumed, so it is cancelled).
    pub fn wait(mut self) -> Result<Status, CommError> {
        let comm = &self.comm;
        Spin::until_polled(&comm.engine, |turn| self.st.poll(comm, turn))
    }
}

impl RecvSt {
    /// One test: the engine if free, the queued post's key, then one round.
    fn poll(&mut self, comm: &Comm, turn: &mut Turn<'_>) -> Result<Option<Status>, CommError> {
        if self.finished {
            return Err(CommError::InvalidArgument(
                "receive already finished".into(),
            ));
        }
        let Some(mut guard) = turn.try_lock() else {
            return Ok(None);
        };
        self.adopt()?;
        match self.key {
            Some(key) => self.test_matched(comm, &mut guard, key),
            // Not applied yet (cannot happen once the token is held: the take applied
            // every queued operation; a stale view only delays).
            None if self.queued.is_some() => Ok(None),
            None => Err(CommError::InvalidArgument(
                "receive already finished".into(),
            )),
        }
    }

    /// Takes the queued post's outcome if it was applied (call with the token held).
    fn adopt(&mut self) -> Result<(), CommError> {
        let Some(cell) = &self.queued else {
            return Ok(());
        };
        match cell.try_take() {
            None => Ok(()),
            Some(posted) => {
                self.queued = None;
                match posted {
                    Ok(key) => {
                        self.key = Some(key);
                        Ok(())
                    }
                    Err(err) => {
                        self.finished = true;
                        Err(err)
                    }
                }
            }
        }
    }

    fn test_matched(
        &mut self,
        comm: &Comm,
        e: &mut Engine,
        key: RecvKey,
    ) -> Result<Option<Status>, CommError> {
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
                .or_else(|| comm.matched_interrupted(e, key, false));
        }
        match done {
            Some(r) => {
                self.key = None;
                self.finished = true;
                e.tick();
                r.map(Some)
            }
            None if e.recv_failure_pending(key) => match comm.interrupted(e, None, true) {
                Some(err @ CommError::ProcFailedPending { .. }) => Err(err),
                _ => Ok(None),
            },
            None => Ok(None),
        }
    }
}

impl Drop for RecvRequest<'_> {
    fn drop(&mut self) {
        if self.st.key.is_none() && self.st.queued.is_none() {
            return;
        }
        if let Some(cell) = &self.st.queued {
            // Still queued: withdrawn without the engine. The holder that pops it
            // finds the cell withdrawn and never posts (or touches) the buffer.
            if cell.withdraw() {
                return;
            }
        }
        // Applied (posted): withdrawing it needs the engine, and dropping may wait for
        // it (it is not posting). The take adopts the key, and it is withdrawn below.
        let mut guard = self.comm.engine.lock();
        while self.st.queued.is_some() {
            let _ = self.st.adopt();
            if self.st.queued.is_some() {
                // Not applied yet by this take (a stale view of the lane): the next
                // take applies it.
                drop(guard);
                std::thread::yield_now();
                guard = self.comm.engine.lock();
            }
        }
        if let Some(key) = self.st.key.take() {
            // Withdrawn, or complete: the matcher no longer names the buffer either way.
            // A fabric read into the buffer is waited for first.
            let _ = guard.cancel_recv(key);
        }
    }
}

/// An agreement in flight (from [`Comm::iagree`]).
#[must_use = "an agreement request must be tested or waited for"]
pub struct AgreeRequest {
    comm: Comm,
    st: AgreeSt,
}

/// Which agreement of the communicator the request waits for.
enum AgreeSt {
    /// Started: its sequence number.
    Started(u32),
    /// Queued for the token holder (`post.rs`): the number comes through here.
    Queued(AgreeCell),
    /// Its start was refused: reported by the next test.
    Refused(CommError),
    /// Its start failed, and that was reported.
    Failed,
}

impl std::fmt::Debug for AgreeRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the communicator's Debug, which takes the engine.
        let mut d = f.debug_struct("AgreeRequest");
        match &self.st {
            AgreeSt::Started(seq) => d.field("seq", seq),
            AgreeSt::Queued(_) => d.field("seq", &"queued"),
            AgreeSt::Refused(_) | AgreeSt::Failed => d.field("seq", &"refused"),
        };
        d.finish_non_exhaustive()
    }
}

impl AgreeRequest {
    /// Progresses once; the outcome when decided.
    ///
    /// Never waits for another thread: when another thread holds the engine (and so
    /// makes progress for this agreement too), the answer is `Ok(None)`; so is it while
    /// a start queued by [`Comm::iagree`] waits to be applied.
    ///
    /// # Errors
    /// [`CommError::Excluded`]; `InvalidArgument` once its start failed.
    pub fn test(&mut self) -> Result<Option<Agreement>, CommError> {
        let mut turn = self.comm.engine.turn();
        self.st.poll(&self.comm, &mut turn)
    }

    /// Waits for the outcome: tests, pausing between tests (as
    /// [`RecvRequest::wait`]: it never waits for the engine itself).
    ///
    /// # Errors
    /// [`CommError::Excluded`].
    pub fn wait(mut self) -> Result<Agreement, CommError> {
        let comm = &self.comm;
        Spin::until_polled(&comm.engine, |turn| self.st.poll(comm, turn))
    }
}

impl AgreeSt {
    /// One test: the engine if free, the queued start's number, then one round.
    fn poll(&mut self, comm: &Comm, turn: &mut Turn<'_>) -> Result<Option<Agreement>, CommError> {
        if let AgreeSt::Refused(_) | AgreeSt::Failed = self {
            return Err(match std::mem::replace(self, AgreeSt::Failed) {
                AgreeSt::Refused(err) => err,
                _ => CommError::InvalidArgument("agreement that failed to start".into()),
            });
        }
        let Some(mut guard) = turn.try_lock() else {
            return Ok(None);
        };
        let seq = match self {
            AgreeSt::Started(seq) => *seq,
            AgreeSt::Queued(cell) => match cell.try_take() {
                // Not applied yet (a stale view of the lane: the next take applies it).
                None => return Ok(None),
                Some(Ok(seq)) => {
                    *self = AgreeSt::Started(seq);
                    seq
                }
                Some(Err(err)) => {
                    *self = AgreeSt::Failed;
                    return Err(err);
                }
            },
            AgreeSt::Refused(_) | AgreeSt::Failed => unreachable!("returned above"),
        };
        comm.agreement_step(&mut guard, seq)
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
    /// Never waits for another thread: when another thread holds the engine, the
    /// receive is queued for it (`src/world/posts.rs`) and posted before anything else
    /// the engine does next, after this thread's earlier posts, so receives still
    /// match in the order each thread posted them.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad tag; for a bad source too, or from the request's
    /// first test when the receive was queued.
    pub unsafe fn irecv<'a>(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
        buf: &'a mut [u8],
    ) -> Result<RecvRequest<'a>, CommError> {
        let mut guard = match self.engine.try_lock() {
            Some(g) => g,
            None => match self.irecv_queued(source, tag, buf.as_mut_ptr(), buf.len())? {
                Ok(st) => {
                    return Ok(RecvRequest {
                        comm: self.clone(),
                        st,
                        _buf: PhantomData,
                    })
                }
                // No room in this thread's lane: wait for the token (which applies
                // the queued posts first, keeping the order).
                Err(()) => self.engine.lock(),
            },
        };
        let e = &mut *guard;
        let plan = self.plan_recv(e, source, tag)?;
        // Posted now, so receives match in the order they were posted.
        let key = e.post_recv(plan.ctx, plan.source, plan.tag, buf.as_mut_ptr(), buf.len());
        drop(guard);
        Ok(RecvRequest {
            comm: self.clone(),
            st: RecvSt {
                key: Some(key),
                queued: None,
                finished: false,
            },
            _buf: PhantomData,
        })
    }

    /// Queues a receive for the token holder: the request's state, or `Err(())` when
    /// the lane is full (nothing queued).
    #[cold]
    #[inline(never)]
    fn irecv_queued(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
        buf: *mut u8,
        len: usize,
    ) -> Result<Result<RecvSt, ()>, CommError> {
        if let Some(t) = tag {
            Self::check_tag(t)?;
        }
        let cell = RecvCell::default();
        let op = Post::Recv {
            comm: self.clone(),
            source,
            tag,
            buf,
            len,
            cell: std::sync::Arc::clone(&cell),
        };
        Ok(match self.engine.post(op) {
            Ok(()) => Ok(RecvSt {
                key: None,
                queued: Some(cell),
                finished: false,
            }),
            Err(_) => Err(()),
        })
    }

    /// Starts an agreement (`MPIX_Comm_iagree`); see [`Comm::agree_full`].
    ///
    /// Never waits for another thread: when another thread holds the engine, the start
    /// is queued in this thread's lane (`src/world/posts.rs`) and applied by the next
    /// holder before anything else, after this thread's earlier operations and before
    /// its later ones (so this thread's agreements on a communicator keep their
    /// order); the request learns which agreement it is then, and its tests answer
    /// "not yet" until it has.
    pub fn iagree(&self, flag: u64) -> AgreeRequest {
        self.start_agree(flag, false)
    }

    /// Starts an agreement, or queues its start when another thread holds the engine;
    /// with `refuse_restored`, the world communicator of a restarted process that has
    /// not rejoined it refuses (`agree_full`'s rule).
    pub(super) fn start_agree(&self, flag: u64, refuse_restored: bool) -> AgreeRequest {
        let st = match self.engine.try_lock() {
            Some(mut e) => match Self::start_agreement_in(&mut e, self.id, flag, refuse_restored) {
                Ok(seq) => AgreeSt::Started(seq),
                Err(err) => AgreeSt::Refused(err),
            },
            None => self.start_agree_queued(flag, refuse_restored),
        };
        AgreeRequest {
            comm: self.clone(),
            st,
        }
    }

    /// Queues the start of an agreement for the token holder (or, with no room in the
    /// lane, starts it after waiting for the token).
    #[cold]
    #[inline(never)]
    fn start_agree_queued(&self, flag: u64, refuse_restored: bool) -> AgreeSt {
        let cell = AgreeCell::default();
        self.post_or_apply(Post::Agree {
            id: self.id,
            flag,
            refuse_restored,
            cell: std::sync::Arc::clone(&cell),
        });
        AgreeSt::Queued(cell)
    }

    /// Starts agreement on communicator `id` with the engine held (directly, or as the
    /// applier of a queued start); see [`start_agree`](Self::start_agree).
    pub(super) fn start_agreement_in(
        e: &mut Engine,
        id: steadfast_agreement::CommId,
        flag: u64,
        refuse_restored: bool,
    ) -> Result<u32, CommError> {
        if refuse_restored && id == crate::world::WORLD_COMM && e.world_restored() {
            return Err(CommError::RestoredWorld);
        }
        // Unknown only if freed, which a request's own handle prevents.
        e.try_start_agreement(id, flag).ok_or_else(|| {
            CommError::InvalidArgument("agreement on a communicator no longer registered".into())
        })
    }
}
