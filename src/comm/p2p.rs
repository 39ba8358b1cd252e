//! Point-to-point operations of a communicator: each waits by polling its transport
//! and the progress engine, and gives up with `Revoked` / `ProcFailed` as soon as the
//! engine learns the reason.

use steadfast_agreement::Rank;

use super::{Comm, CommError, Spin, Status};
use crate::world::engine::{Engine, Route};
use crate::world::matching::{Outcome, RecvFailure, RecvKey};
use crate::world::shared::{EngineGuard, Shared};
use crate::world::tags::{user_match, MAX_TAG};

/// Attempts at a receive between two rounds of the engine (control messages, failure
/// reports): the round costs more than an attempt and may queue (copy) the very
/// message the receive waits for.
pub(super) const RECV_POLLS_PER_PROGRESS: u32 = 16;

/// What else ends a blocking receive ([`Comm::recv_until`]): asked between polls, it
/// returns the error to end with. `None`: nothing but the receive's own outcome.
pub(super) type GiveUp<'a> = Option<&'a dyn Fn() -> Option<CommError>>;

/// A receive's matching context and pattern (checked once per receive).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecvPlan {
    pub(crate) ctx: u64,
    pub(crate) source: Option<u32>,
    pub(crate) tag: Option<u32>,
}

/// A receive posted in the matcher by a blocking call: withdrawn when dropped unless
/// finished (`key` taken), so the matcher never keeps a buffer whose borrow ended.
struct PostedRecv<'a> {
    shared: &'a Shared,
    key: Option<RecvKey>,
}

impl Drop for PostedRecv<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            // Withdrawn, or complete (its outcome is dropped): either way the matcher
            // no longer names the buffer.
            let _ = self.shared.lock().cancel_recv(key);
        }
    }
}

/// The caller's view of a matched receive's outcome.
pub(crate) fn outcome_result(out: Outcome) -> Result<Status, CommError> {
    match out {
        Ok(g) => Ok(Status {
            source: g.source,
            tag: g.tag,
            len: g.len,
        }),
        Err(RecvFailure::Truncated { got, capacity }) => Err(CommError::Truncated {
            len: Some(got.len),
            capacity,
            sender: Some(got.source),
            tag: Some(got.tag),
        }),
        Err(RecvFailure::ProcFailed(r)) => Err(CommError::ProcFailed { ranks: vec![r] }),
        Err(RecvFailure::Revoked) => Err(CommError::Revoked),
        Err(RecvFailure::Excluded) => Err(CommError::Excluded),
        Err(RecvFailure::Freed) => Err(CommError::InvalidArgument(
            "the communicator was freed with the receive pending".into(),
        )),
        Err(RecvFailure::Transport(e)) => Err(CommError::Shm(e)),
        Err(RecvFailure::Fabric(e)) => Err(CommError::Fabric(e)),
        Err(RecvFailure::Refused(e)) => Err(CommError::InvalidArgument(e.to_string())),
    }
}

impl Comm {
    /// Why an operation on this communicator involving world rank `peer` (or any
    /// member, for a wildcard receive, when `wildcard`) cannot go on, if it cannot.
    pub(crate) fn interrupted(
        &self,
        e: &Engine,
        peer: Option<u32>,
        wildcard: bool,
    ) -> Option<CommError> {
        if e.excluded() {
            return Some(CommError::Excluded);
        }
        let c = e.comm(self.id);
        if c.revoked() {
            return Some(CommError::Revoked);
        }
        if let Some(w) = peer {
            if e.is_failed(w) {
                let r = c.comm_rank(w).unwrap_or(u32::MAX);
                return Some(CommError::ProcFailed { ranks: vec![r] });
            }
        }
        if wildcard {
            let pending: Vec<u32> = (0..c.group().len() as u32)
                .filter(|&r| e.is_failed(c.group()[r as usize]) && !c.acked().contains(Rank(r)))
                .collect();
            if !pending.is_empty() {
                return Some(CommError::ProcFailedPending { ranks: pending });
            }
        }
        None
    }

    pub(crate) fn check_tag(tag: u32) -> Result<(), CommError> {
        if tag > MAX_TAG {
            return Err(CommError::InvalidArgument(format!(
                "tag {tag} above the largest, {MAX_TAG}"
            )));
        }
        Ok(())
    }

    /// Sends `data` to comm rank `dest` with `tag`; returns once `data` may be reused.
    ///
    /// # Errors
    /// [`CommError::ProcFailed`] when `dest` has failed or fails first;
    /// [`CommError::Revoked`]; [`CommError::InvalidArgument`] for a bad rank or tag.
    pub fn send(&self, dest: u32, tag: u32, data: &[u8]) -> Result<(), CommError> {
        // The latency path: a message the shared-memory ring takes whole now (inline
        // or eager: copied into cells) goes out under one hold of the engine, without
        // a request (unless earlier sends to `dest` wait for room: it queues behind
        // them, docs/matching.md). A larger one is refused at once by `try_send`.
        // Only when the engine is free: a send that finds it taken is queued for its
        // holder by `isend` below instead of waiting (`src/world/posts.rs`).
        if let (true, Some(mut guard)) = (tag <= MAX_TAG, self.engine.try_lock()) {
            let e = &mut *guard;
            let c = e.comm(self.id);
            if let (Some(&w), false) = (c.group().get(dest as usize), c.revoked()) {
                let open = !e.excluded() && !e.is_failed(w) && !e.sends_queued(w);
                if let (Route::Shm(l), true) = (e.route(w), open) {
                    let (wire_tag, _) = user_match(c.context(), Some(tag));
                    let shm = e.shm_mut().expect("shm route without endpoint");
                    if shm.try_send(l, wire_tag, data).is_ok() {
                        e.stats_mut().shm_sent += 1;
                        e.tick();
                        return Ok(());
                    }
                    // Ring full, too large for the ring, or the peer is dead: the
                    // general path waits, takes the single-copy path, or reports.
                }
            }
        }
        // Everything else: the request completes or fails as a blocking send would
        // (inline and eager messages finish inside `isend`).
        // SAFETY: the request is waited for (or dropped on unwinding) before `data`'s
        // borrow ends.
        unsafe { self.isend(dest, tag, data) }?.wait()
    }

    /// Receives into `buf` a message from comm rank `source` ([`super::ANY_SOURCE`]:
    /// any) with `tag` ([`super::ANY_TAG`]: any). Receives match in the order they were
    /// posted (MPI's rule; see [`Comm::irecv`]).
    ///
    /// # Errors
    /// [`CommError::Truncated`] when the message is longer than `buf`;
    /// [`CommError::ProcFailed`] when `source` has failed and none of its messages
    /// waits, or, for a wildcard receive, while a failure is not acknowledged (ULFM's
    /// rule for blocking wildcard receives); [`CommError::Revoked`];
    /// [`CommError::InvalidArgument`].
    pub fn recv(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
        buf: &mut [u8],
    ) -> Result<Status, CommError> {
        self.recv_until(source, tag, buf, None)
    }

    /// [`recv`](Self::recv), also ended by `give_up` (asked between polls, at least
    /// every [`RECV_POLLS_PER_PROGRESS`] polls) with the error it returns, unless the
    /// message came first. The runtime's collectives give up this way once any member
    /// they wait on is known failed.
    pub(super) fn recv_until(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
        buf: &mut [u8],
        give_up: GiveUp<'_>,
    ) -> Result<Status, CommError> {
        let Some(e) = self.engine.try_lock() else {
            return self.recv_queued(source, tag, buf, give_up);
        };
        let plan = self.plan_recv(&e, source, tag)?;
        let spin = Spin::new(&e);
        // From one shm peer on a quiet context: waits unposted (`recv_direct.rs`).
        if let Some(d) = self.direct_recv(&e, &plan, buf) {
            return self.recv_direct(e, &plan, &d, buf, spin, give_up);
        }
        // Posted in this same hold of the engine (one round trip less).
        self.recv_matched(e, &plan, buf, spin, give_up)
    }

    /// [`recv`](Self::recv) when another thread holds the engine: posted through its
    /// queue (`src/world/posts.rs`) instead of waiting for it, then waited for as a
    /// request, which reports an unacknowledged failure of a wildcard receive as a
    /// blocking receive does.
    #[cold]
    #[inline(never)]
    fn recv_queued(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
        buf: &mut [u8],
        give_up: GiveUp<'_>,
    ) -> Result<Status, CommError> {
        // SAFETY: the request is waited for (consumed, and so cancelled if it ends
        // early) before `buf`'s borrow ends.
        let mut request = unsafe { self.irecv(source, tag, buf) }?;
        let done = match give_up {
            None => request.wait(),
            Some(give_up) => Spin::until(self, || match request.test()? {
                Some(st) => Ok(Some(st)),
                None => give_up().map_or(Ok(None), Err),
            }),
        };
        match done {
            Err(CommError::ProcFailedPending { ranks }) => Err(CommError::ProcFailed { ranks }),
            other => other,
        }
    }

    /// A blocking receive through the matcher: posted now, waited for; withdrawn if the
    /// wait ends otherwise (also on unwinding), so the matcher never keeps `buf`. The
    /// engine is held for one poll at a time: another thread's round may complete the
    /// receive meanwhile (writing `buf`, which this call borrows until it returns).
    pub(super) fn recv_matched(
        &self,
        mut held: EngineGuard<'_>,
        plan: &RecvPlan,
        buf: &mut [u8],
        mut spin: Spin,
        give_up: GiveUp<'_>,
    ) -> Result<Status, CommError> {
        let mut posted = PostedRecv {
            shared: &self.engine,
            key: None,
        };
        let key = held.post_recv(plan.ctx, plan.source, plan.tag, buf.as_mut_ptr(), buf.len());
        posted.key = Some(key);
        // The first poll in the hold that posted; then one hold per poll.
        let mut first = Some(held);
        let mut polls: u32 = 0;
        // Never waits for the engine: while another thread holds it (and so drains the
        // rings for this receive too), pause and try again, counted as waiting so
        // pollers give way.
        let mut turn = self.engine.turn();
        loop {
            {
                let mut guard = match first.take() {
                    Some(g) => g,
                    None => match turn.try_lock() {
                        Some(g) => g,
                        None => {
                            spin.pause();
                            continue;
                        }
                    },
                };
                let e = &mut *guard;
                if let Some(out) = e.recv_outcome(key) {
                    posted.key = None;
                    e.tick();
                    return outcome_result(out);
                }
                // The rings first: a message placed straight into `buf` completes it.
                e.drain_for_receive();
                if let Some(out) = e.recv_outcome(key) {
                    posted.key = None;
                    e.tick();
                    return outcome_result(out);
                }
                polls = polls.wrapping_add(1);
                if polls % RECV_POLLS_PER_PROGRESS == 0 {
                    e.progress();
                    if let Some(done) = self.matched_interrupted(e, key, true) {
                        posted.key = None;
                        return done;
                    }
                    if let Some(err) = give_up.and_then(|g| g()) {
                        posted.key = None;
                        // Its message, if it came meanwhile, is taken.
                        return match e.cancel_recv(key) {
                            None => Err(err),
                            Some(out) => outcome_result(out),
                        };
                    }
                }
            }
            self.engine.make_way();
            // As in `recv_direct`: at every poll when ranks outnumber cores.
            if spin.yields_at_once() || polls % RECV_POLLS_PER_PROGRESS == 0 {
                spin.pause();
            }
        }
    }

    /// Why a receive posted in the matcher as `key` ends without its message, if it
    /// does: it is withdrawn then (its outcome is returned instead if it completed
    /// first). A wildcard receive with an unacknowledged failure ends only when
    /// `blocking` (with `ProcFailed`); a non-blocking one reports `ProcFailedPending`
    /// from its test and stays posted, which the caller checks with
    /// [`Engine::recv_failure_pending`].
    pub(crate) fn matched_interrupted(
        &self,
        e: &mut Engine,
        key: RecvKey,
        blocking: bool,
    ) -> Option<Result<Status, CommError>> {
        let err = if e.excluded() {
            CommError::Excluded
        } else if e.comm(self.id).revoked() {
            CommError::Revoked
        } else if blocking && e.recv_failure_pending(key) {
            match self.interrupted(e, None, true) {
                Some(CommError::ProcFailedPending { ranks }) => CommError::ProcFailed { ranks },
                Some(other) => other,
                None => return None,
            }
        } else {
            return None;
        };
        Some(match e.cancel_recv(key) {
            None => Err(err),
            Some(out) => outcome_result(out),
        })
    }

    /// Where a receive may find its message.
    #[inline]
    pub(crate) fn plan_recv(
        &self,
        e: &Engine,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<RecvPlan, CommError> {
        if let Some(t) = tag {
            Self::check_tag(t)?;
        }
        let c = e.comm(self.id);
        if let Some(s) = source {
            if s as usize >= c.group().len() {
                return Err(CommError::InvalidArgument(format!(
                    "source {s} outside a communicator of {}",
                    c.group().len()
                )));
            }
        }
        Ok(RecvPlan {
            ctx: c.context(),
            source,
            tag,
        })
    }
}
