//! The non-blocking dup (`MPI_Comm_idup`): [`Comm::idup_on_tag`] starts the creation
//! and returns at once; each [`DupRequest::test`] advances it without waiting.
//!
//! It is [`Comm::dup`] cut into steps: a first round with nothing in it (every member
//! has started the dup once it completes), then the context proposal ANDed over the
//! parent by a recursive-doubling allreduce of non-blocking sends and receives on the
//! caller's tag ([`AndRound`]), then the allocator's decision, retried in the next
//! window (or in the same one, while another creation holds the mask) as the blocking
//! form does. The first round keeps a dup out of the allocator's turns until every
//! member is in it ([`DupState::step`] says why).
//!
//! A creation in progress may hold this process's mask of free ids (the lowest one in
//! progress gets it: `steadfast_matching::ContextAllocator`), and any other creation
//! here retries until it lets go, which needs its request to be advanced. So that a
//! program may start a dup, then make another communicator (or wait for a later
//! dup) before it tests the first, every creation that has to retry first advances the
//! other non-blocking dups of the process ([`advance_others`]).

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use steadfast_agreement::CommKey;
use steadfast_matching::{ContextError, Decision, OpKey, Proposal};

use super::context::{self, MAX_ROUNDS};
use super::{derive, Comm, CommError, OwnedRecvRequest, OwnedSendRequest, Spin};
use crate::world::tags::MAX_TAG;

/// A communicator being duplicated without blocking ([`Comm::idup_on_tag`]).
///
/// Dropping it before it completes gives the creation up here (the other members'
/// requests then never complete: MPI requires every member to complete it).
#[derive(Debug)]
pub struct DupRequest {
    state: Arc<Mutex<DupState>>,
}

/// The non-blocking dups of this process that are still in progress.
static PENDING: Mutex<Vec<Weak<Mutex<DupState>>>> = Mutex::new(Vec::new());

fn lock_state(state: &Mutex<DupState>) -> MutexGuard<'_, DupState> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Advances every other non-blocking dup in progress here that no thread is advancing
/// now (see the module doc). `me`: the caller's own, skipped.
pub(super) fn advance_others(me: Option<&Arc<Mutex<DupState>>>) {
    let pending: Vec<Arc<Mutex<DupState>>> = {
        let mut list = PENDING.lock().unwrap_or_else(|p| p.into_inner());
        list.retain(|w| w.strong_count() > 0);
        list.iter().filter_map(Weak::upgrade).collect()
    };
    for other in pending {
        if me.is_some_and(|m| Arc::ptr_eq(m, &other)) {
            continue;
        }
        if let Ok(mut s) = other.try_lock() {
            // Its outcome stays in it for its own test.
            let _ = s.advance(false);
        }
    }
}

impl Comm {
    /// Starts a dup of this communicator (`MPI_Comm_idup`) and returns at once; the new
    /// communicator comes from [`DupRequest::wait`] (or [`DupRequest::test`]). Its
    /// messages carry `tag` on this communicator: no other operation on it may use that
    /// tag until the request completes (the C library takes one of its collective tag
    /// sequence, as for its non-blocking collectives). Like every collective, the
    /// members start their creations on a communicator in the same order; several may
    /// be in progress at once on different tags.
    ///
    /// ```no_run
    /// # fn f(comm: &steadfast::Comm) -> Result<(), steadfast::CommError> {
    /// let mut req = comm.idup_on_tag(7)?;
    /// // ... other work, messages on `comm` with other tags ...
    /// let copy = req.wait()?;
    /// assert_eq!(copy.size(), comm.size());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `InvalidArgument` for a tag above `MAX_TAG`; `Revoked`; later, from the request,
    /// those of [`Comm::dup`].
    pub fn idup_on_tag(&self, tag: u32) -> Result<DupRequest, CommError> {
        if tag > MAX_TAG {
            return Err(CommError::InvalidArgument(format!(
                "tag {tag} above {MAX_TAG}"
            )));
        }
        if self.is_revoked() {
            return Err(CommError::Revoked);
        }
        let start = if self.size() == 1 {
            // Nobody to wait for (and a restarted process's solo context is special).
            Start::Done(self.dup())
        } else {
            let mut e = self.engine.lock();
            let c = e.comm_mut(self.id);
            let child = c.next_child();
            let op = context::op_key(c.context(), child);
            // The id `dup` would derive for the same creation number.
            let id = derive(c.key(), 1, child);
            let group = c.group().to_vec();
            if e.has_comm(id) {
                return Err(CommError::InvalidArgument(format!(
                    "derived communicator id {:#x} already in use",
                    id.0
                )));
            }
            Start::Creation {
                op,
                key: CommKey {
                    comm: id,
                    epoch: Default::default(),
                },
                group,
            }
        };
        let state = match start {
            Start::Done(outcome) => DupState::finished(self.clone(), tag, outcome),
            Start::Creation { op, key, group } => DupState {
                parent: self.clone(),
                tag,
                op,
                key,
                group,
                window: 0,
                windows_tried: 0,
                started_everywhere: Some(AndRound::new(self, Vec::new())),
                round: None,
                outcome: None,
            },
        };
        let state = Arc::new(Mutex::new(state));
        PENDING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(&state));
        let mut req = DupRequest { state };
        // Post the first round now: the peers' rounds need this one's messages.
        let _ = req.test();
        Ok(req)
    }
}

enum Start {
    Done(Result<Comm, CommError>),
    Creation {
        op: OpKey,
        key: CommKey,
        group: Vec<u32>,
    },
}

impl DupRequest {
    /// Advances the creation without waiting; `true` once it is complete (then
    /// [`wait`](Self::wait) returns at once).
    ///
    /// # Errors
    /// Those of [`Comm::dup`], once the creation failed (again at every later call).
    pub fn test(&mut self) -> Result<bool, CommError> {
        let mut s = lock_state(&self.state);
        let done = s.advance(true)?;
        drop(s);
        if !done {
            advance_others(Some(&self.state));
        }
        Ok(done)
    }

    /// Waits until the creation completes; the new communicator.
    ///
    /// # Errors
    /// As [`test`](Self::test).
    pub fn wait(mut self) -> Result<Comm, CommError> {
        let parent = lock_state(&self.state).parent.clone();
        Spin::until(&parent, || self.test().map(|done| done.then_some(())))?;
        // Leave an outcome behind, so the drop below finds the creation over.
        let taken = Err(CommError::InvalidArgument(
            "the dup's communicator was already taken".into(),
        ));
        let outcome = lock_state(&self.state).outcome.replace(taken);
        outcome.expect("complete: tested above")
    }
}

impl Drop for DupRequest {
    fn drop(&mut self) {
        let mut s = lock_state(&self.state);
        if s.outcome.is_none() {
            s.round = None;
            s.parent.engine.lock().contexts_mut().abandon(s.op);
            s.outcome = Some(Err(CommError::InvalidArgument(
                "the dup request was dropped".into(),
            )));
        }
    }
}

/// A non-blocking dup's progress.
#[derive(Debug)]
pub(super) struct DupState {
    parent: Comm,
    tag: u32,
    op: OpKey,
    key: CommKey,
    group: Vec<u32>,
    window: u32,
    windows_tried: u32,
    /// A round with nothing in it, before the first proposal: until it completes some
    /// member may not have started this dup, so it takes no part in the allocator's
    /// turns (see [`DupState::step`]).
    started_everywhere: Option<AndRound>,
    /// The AND of the proposals in flight.
    round: Option<AndRound>,
    /// Set once: the new communicator or the error.
    outcome: Option<Result<Comm, CommError>>,
}

impl DupState {
    fn finished(parent: Comm, tag: u32, outcome: Result<Comm, CommError>) -> Self {
        DupState {
            parent,
            tag,
            op: 0,
            key: CommKey::default(),
            group: Vec::new(),
            window: 0,
            windows_tried: 0,
            started_everywhere: None,
            round: None,
            outcome: Some(outcome),
        }
    }

    /// Advances as far as it can without waiting; `true` once complete. `own`: the
    /// request's own test (a failure is returned), not another creation's help.
    fn advance(&mut self, own: bool) -> Result<bool, CommError> {
        loop {
            match &self.outcome {
                Some(Ok(_)) => return Ok(true),
                Some(Err(e)) => return if own { Err(e.clone()) } else { Ok(true) },
                None => {}
            }
            match self.step() {
                Ok(Some(true)) => continue,
                Ok(Some(false)) => return Ok(false),
                Ok(None) => return Ok(false),
                Err(e) => {
                    self.round = None;
                    self.parent.engine.lock().contexts_mut().abandon(self.op);
                    self.outcome = Some(Err(e));
                }
            }
        }
    }

    /// One step: `Some(true)` when something finished (look again), `Some(false)` or
    /// `None` when it waits for messages or for another creation.
    fn step(&mut self) -> Result<Option<bool>, CommError> {
        // Every member starts this dup before it proposes. The allocator gives the mask
        // to the lowest creation in progress here; had this one proposed before a
        // member started it, it could hold that turn (and the mask) while that member
        // waits for another creation of this process, which would wait for the mask:
        // MPICH's `threads/comm/idup_deadlock`, where threads start their dups only
        // after other threads' dups complete.
        if let Some(sync) = &mut self.started_everywhere {
            if !sync.advance(&self.parent, self.tag)? {
                return Ok(None);
            }
            self.started_everywhere = None;
        }
        if self.round.is_none() {
            let mine = self
                .parent
                .engine
                .lock()
                .contexts_mut()
                .propose(self.op, self.window);
            self.round = Some(AndRound::new(&self.parent, mine.to_words()));
        }
        let round = self.round.as_mut().expect("posted above");
        if !round.advance(&self.parent, self.tag)? {
            return Ok(None);
        }
        let words = std::mem::take(&mut round.values);
        self.round = None;
        let agreed = Proposal::from_words(&words).map_err(|e| self.bad_round(e))?;
        let decision = self
            .parent
            .engine
            .lock()
            .contexts_mut()
            .finish(self.op, &agreed);
        match decision {
            Ok(Decision::Allocated(id)) => {
                let ctx = u64::from(id.0);
                let mut e = self.parent.engine.lock();
                if e.add_comm(self.key, ctx, std::mem::take(&mut self.group))
                    .is_none()
                {
                    let _ = e.contexts_mut().release(id);
                    self.outcome = Some(Err(CommError::Excluded));
                    return Ok(Some(true));
                }
                let facts = e.facts(self.key.comm);
                drop(e);
                self.outcome = Some(Ok(Comm::new(Arc::clone(&self.parent.engine), facts)));
                Ok(Some(true))
            }
            Ok(Decision::Retry { window }) if window == self.window => {
                // Another creation holds the mask: the next test tries again.
                Ok(Some(false))
            }
            Ok(Decision::Retry { window }) => {
                self.windows_tried += 1;
                if self.windows_tried >= MAX_ROUNDS {
                    return Err(CommError::Protocol {
                        rank: self.parent.rank(),
                        problem: "the context-id agreement did not settle",
                    });
                }
                self.window = window;
                Ok(Some(true))
            }
            Err(ContextError::ContextsExhausted { capacity, live }) => {
                Err(CommError::ContextsExhausted { capacity, live })
            }
            Err(e) => Err(self.bad_round(e)),
        }
    }

    fn bad_round(&self, e: ContextError) -> CommError {
        log::warn!("context agreement of creation {:#x}: {e}", self.op);
        CommError::Protocol {
            rank: self.parent.rank(),
            problem: "the members' context proposals do not combine",
        }
    }
}

/// Where a non-blocking allreduce is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// A rank above the largest power of two: hand the values to its partner below
    /// and get the result back.
    Extra,
    /// Take the values of the rank above the power of two that folds into this one.
    FoldIn,
    /// Exchange with the rank whose number differs in this bit.
    Round(u32),
    /// Hand the result to the rank that folded in.
    FoldOut,
    Done,
}

/// A non-blocking allreduce (bitwise AND) of `u64` words over a communicator, with the
/// blocking [`Comm::allreduce`]'s recursive doubling: each step posts its send and its
/// receive at once and is over when both are.
#[derive(Debug)]
pub(super) struct AndRound {
    values: Vec<u64>,
    me: u32,
    n: u32,
    pow2: u32,
    step: Step,
    posted: bool,
    send: Option<OwnedSendRequest<Vec<u8>>>,
    recv: Option<OwnedRecvRequest<Vec<u8>>>,
}

impl AndRound {
    fn new(comm: &Comm, values: Vec<u64>) -> Self {
        let (me, n) = (comm.rank(), comm.size());
        let pow2 = if n.is_power_of_two() {
            n
        } else {
            n.next_power_of_two() / 2
        };
        let step = if me >= pow2 {
            Step::Extra
        } else if me + pow2 < n {
            Step::FoldIn
        } else {
            Step::Round(1)
        };
        let mut round = AndRound {
            values,
            me,
            n,
            pow2,
            step,
            posted: false,
            send: None,
            recv: None,
        };
        round.skip_empty_rounds();
        round
    }

    /// Past the rounds there is nothing to exchange in.
    fn skip_empty_rounds(&mut self) {
        if let Step::Round(mask) = self.step {
            if mask >= self.pow2 {
                self.step = if self.me + self.pow2 < self.n {
                    Step::FoldOut
                } else {
                    Step::Done
                };
            }
        }
    }

    fn bytes(&self) -> Vec<u8> {
        self.values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// Posts the step's send and receive.
    fn post(&mut self, comm: &Comm, tag: u32) -> Result<(), CommError> {
        let len = self.values.len() * 8;
        let (to, from) = match self.step {
            Step::Extra => (Some(self.me - self.pow2), Some(self.me - self.pow2)),
            Step::FoldIn => (None, Some(self.me + self.pow2)),
            Step::Round(mask) => (Some(self.me ^ mask), Some(self.me ^ mask)),
            Step::FoldOut => (Some(self.me + self.pow2), None),
            Step::Done => (None, None),
        };
        if let Some(from) = from {
            self.recv = Some(comm.irecv_owned(Some(from), Some(tag), vec![0u8; len])?);
        }
        if let Some(to) = to {
            self.send = Some(comm.isend_owned(to, tag, self.bytes())?);
        }
        self.posted = true;
        Ok(())
    }

    /// Advances without waiting; `true` once `values` holds the AND of every member's.
    ///
    /// # Errors
    /// `ProcFailed` once a member is known failed while a message is still awaited (as
    /// the blocking collectives); `Revoked`; `Protocol` for a message of the wrong
    /// length.
    fn advance(&mut self, comm: &Comm, tag: u32) -> Result<bool, CommError> {
        loop {
            if self.step == Step::Done {
                return Ok(true);
            }
            if !self.posted {
                self.post(comm, tag)?;
            }
            if let Some(s) = &mut self.send {
                if s.test()? {
                    self.send = None;
                }
            }
            let mut theirs = None;
            if let Some(r) = &mut self.recv {
                if let Some(st) = r.test()? {
                    let (buf, _) = self.recv.take().expect("tested above").wait();
                    if st.len != buf.len() {
                        return Err(CommError::Protocol {
                            rank: st.source,
                            problem: "an allreduce message of the wrong length",
                        });
                    }
                    theirs = Some(buf);
                }
            }
            if let Some(buf) = theirs {
                let words = buf
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")));
                if self.step == Step::Extra {
                    self.values = words.collect();
                } else {
                    for (v, w) in self.values.iter_mut().zip(words) {
                        *v &= w;
                    }
                }
            }
            if self.send.is_some() || self.recv.is_some() {
                if self.recv.is_some() && comm.any_failed() {
                    return Err(CommError::ProcFailed {
                        ranks: comm.failed_ranks(),
                    });
                }
                return Ok(false);
            }
            self.posted = false;
            self.step = match self.step {
                Step::Extra | Step::FoldOut | Step::Done => Step::Done,
                Step::FoldIn => Step::Round(1),
                Step::Round(mask) => Step::Round(mask << 1),
            };
            self.skip_empty_rounds();
        }
    }
}

/// An inter-communicator being duplicated without blocking
/// ([`InterComm::idup_on_tag`](super::InterComm::idup_on_tag)).
#[derive(Debug)]
pub struct InterDupRequest {
    shape: super::InterComm,
    req: DupRequest,
}

impl super::InterComm {
    /// Starts a dup of this inter-communicator (`MPI_Comm_idup`) and returns at once:
    /// [`Comm::idup_on_tag`] over the union of both groups, so `tag` is a tag of the
    /// union's that no other operation uses until the request completes.
    ///
    /// # Errors
    /// As [`Comm::idup_on_tag`].
    pub fn idup_on_tag(&self, tag: u32) -> Result<InterDupRequest, CommError> {
        Ok(InterDupRequest {
            shape: self.clone(),
            req: self.union().idup_on_tag(tag)?,
        })
    }
}

impl InterDupRequest {
    /// As [`DupRequest::test`].
    ///
    /// # Errors
    /// As [`DupRequest::test`].
    pub fn test(&mut self) -> Result<bool, CommError> {
        self.req.test()
    }

    /// Waits until the creation completes; the new inter-communicator, with the same
    /// groups.
    ///
    /// # Errors
    /// As [`DupRequest::test`].
    pub fn wait(self) -> Result<super::InterComm, CommError> {
        let union = self.req.wait()?;
        Ok(self.shape.with_union(union))
    }
}
