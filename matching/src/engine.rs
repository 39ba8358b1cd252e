//! The engine: every open context of a process, the messages that arrived before their
//! context was opened, and the queue of events the runtime polls.

use std::collections::VecDeque;

use crate::context::Context;
use crate::list::KeyMap;
use crate::types::{
    ContextId, Envelope, MatchError, QueueKind, Rank, RecvId, RecvSpec, Rejected, Tag,
};

/// Bounds on every queue, so a flood becomes a [`MatchError::QueueFull`] instead of
/// unbounded memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Posted receives per context.
    pub max_posted: usize,
    /// Unexpected messages per context (their eager payloads are the transport's
    /// memory; this caps how many the engine holds).
    pub max_unexpected: usize,
    /// Messages held, over all contexts, for contexts not opened yet (a fast peer may
    /// send on a new communicator before this process has finished creating it).
    pub max_early: usize,
}

impl Default for Limits {
    /// 65 536 posted receives and 262 144 unexpected messages per context; 4 096 early
    /// messages (as many as the runtime keeps control messages for unknown communicators).
    fn default() -> Self {
        Limits {
            max_posted: 1 << 16,
            max_unexpected: 1 << 18,
            max_early: 4096,
        }
    }
}

/// Node slots are `u32` with one value reserved, so no queue may hold more than this.
const MAX_QUEUE: usize = (u32::MAX - 1) as usize;

/// A receive and the message it matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match<R, P> {
    /// The receive's token, as posted.
    pub recv: R,
    /// The message, with the transport's payload to copy or pull.
    pub message: Envelope<P>,
}

/// What became of a posted receive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostOutcome<R, P> {
    /// An unexpected message fit: the receive is complete.
    Matched(Match<R, P>),
    /// No message fit; the receive waits in the posted queue.
    Posted {
        /// Names the receive for [`Engine::cancel`].
        id: RecvId,
        /// A wildcard-source receive posted while a failure is not acknowledged: report
        /// `MPI_ERR_PROC_FAILED_PENDING` to its waiter; it stays posted and may still match.
        failure_pending: bool,
    },
}

/// What became of a delivered message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arrival<R, P> {
    /// It completed the earliest posted receive that fits.
    Matched(Match<R, P>),
    /// No receive fit; it waits in the unexpected queue.
    Queued,
}

/// Completions and notices that an input caused for other operations, polled with
/// [`Engine::poll_event`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<R, P> {
    /// A posted receive completed with an error: [`MatchError::ProcFailed`] (its named
    /// source failed), [`MatchError::Revoked`], or [`MatchError::UnknownContext`] (its
    /// context was closed).
    RecvFailed {
        /// The receive's token.
        recv: R,
        /// Why.
        error: MatchError,
    },
    /// A posted wildcard-source receive is still posted, but a failure is now pending
    /// (`MPI_ERR_PROC_FAILED_PENDING` for its waiter until the failure is acknowledged).
    FailurePending {
        /// A clone of the receive's token.
        recv: R,
    },
    /// A message that can never be received (its context was revoked or closed, or it
    /// was held for a context that opened smaller than its source): the transport
    /// releases it (for a rendezvous, answers the sender).
    MessageDropped {
        /// The message.
        message: Envelope<P>,
        /// Why.
        error: MatchError,
    },
}

/// The MPI matching engine of one process, with ULFM's failure rules; no I/O, no clock,
/// no threads: the progress owner calls it and the transports' bytes stay in `P`.
///
/// `R` is the receive's token (a request id, or the request's completion cell) and `P`
/// the transport's payload (eager bytes, or a rendezvous descriptor).
///
/// Call order: [`open_context`](Self::open_context) when a communicator is created
/// (messages for it may be [`deliver`](Self::deliver)ed before: they are held), then any
/// mix of `post_recv` / `deliver` / `probe` / `mprobe` / `cancel` / `notify_failure` /
/// `ack_failures` / `revoke`, draining [`poll_event`](Self::poll_event) after each of the
/// last three; [`close_context`](Self::close_context) when it is freed.
///
/// ```
/// use steadfast_matching::*;
/// let mut e: Engine<&str, Vec<u8>> = Engine::new(Limits::default());
/// let ctx = ContextId(3);
/// e.open_context(ctx, 2).unwrap();
/// let spec = RecvSpec::new(None, Some(Tag(1)));
/// assert!(matches!(e.post_recv(ctx, spec, "first").unwrap(), PostOutcome::Posted { .. }));
/// assert!(matches!(e.post_recv(ctx, spec, "second").unwrap(), PostOutcome::Posted { .. }));
/// let msg = Envelope { context: ctx, source: Rank(1), tag: Tag(1), len: 2, payload: vec![7, 8] };
/// match e.deliver(msg).unwrap() {
///     Arrival::Matched(m) => assert_eq!(m.recv, "first"),
///     Arrival::Queued => unreachable!(),
/// }
/// ```
#[derive(Debug)]
pub struct Engine<R, P> {
    /// FxHash: looked up on every post and arrival.
    contexts: KeyMap<ContextId, Context<R, P>>,
    early: VecDeque<Envelope<P>>,
    events: VecDeque<Event<R, P>>,
    limits: Limits,
    /// Contexts opened so far (each opening's incarnation).
    openings: u64,
}

impl<R, P> Engine<R, P> {
    /// An engine with no context open. Limits above `u32::MAX - 1` are lowered to it.
    pub fn new(limits: Limits) -> Self {
        let limits = Limits {
            max_posted: limits.max_posted.min(MAX_QUEUE),
            max_unexpected: limits.max_unexpected.min(MAX_QUEUE),
            max_early: limits.max_early,
        };
        Engine {
            contexts: KeyMap::default(),
            early: VecDeque::new(),
            events: VecDeque::new(),
            limits,
            openings: 0,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    fn ctx(&self, id: ContextId) -> Result<&Context<R, P>, MatchError> {
        self.contexts.get(&id).ok_or(MatchError::UnknownContext(id))
    }

    fn ctx_mut(&mut self, id: ContextId) -> Result<&mut Context<R, P>, MatchError> {
        self.contexts
            .get_mut(&id)
            .ok_or(MatchError::UnknownContext(id))
    }

    /// Opens context `id` for a communicator of `size` ranks; messages held for it become
    /// its unexpected messages, in arrival order (one from a rank `>= size` is dropped
    /// with an event).
    ///
    /// # Errors
    /// [`MatchError::ContextExists`] if `id` is open.
    pub fn open_context(&mut self, id: ContextId, size: u32) -> Result<(), MatchError> {
        if self.contexts.contains_key(&id) {
            return Err(MatchError::ContextExists(id));
        }
        self.openings += 1;
        let mut ctx = Context::new(id, size, self.openings);
        let mut kept = VecDeque::with_capacity(self.early.len());
        for env in self.early.drain(..) {
            if env.context != id {
                kept.push_back(env);
                continue;
            }
            match ctx.deliver(env, &self.limits) {
                Ok(_) => {}
                Err(Rejected { error, item }) => self.events.push_back(Event::MessageDropped {
                    message: item,
                    error,
                }),
            }
        }
        self.early = kept;
        self.contexts.insert(id, ctx);
        log::debug!("matching: opened context {} (size {size})", id.0);
        Ok(())
    }

    /// Closes context `id` (the communicator was freed): receives still posted fail and
    /// messages still waiting are dropped, both as events with
    /// [`MatchError::UnknownContext`]. The id may then be opened again.
    ///
    /// # Errors
    /// [`MatchError::UnknownContext`] if `id` is not open.
    pub fn close_context(&mut self, id: ContextId) -> Result<(), MatchError> {
        let mut ctx = self
            .contexts
            .remove(&id)
            .ok_or(MatchError::UnknownContext(id))?;
        ctx.flush(MatchError::UnknownContext(id), &mut self.events);
        Ok(())
    }

    /// Posts a receive: it takes the earliest unexpected message that fits, or waits.
    ///
    /// # Errors
    /// The token comes back with [`MatchError::UnknownContext`], `RankOutOfRange`,
    /// `Revoked`, `ProcFailed` (its named source failed and no message from it waits), or
    /// `QueueFull`.
    pub fn post_recv(
        &mut self,
        context: ContextId,
        spec: RecvSpec,
        token: R,
    ) -> Result<PostOutcome<R, P>, Rejected<R>> {
        let limits = self.limits;
        match self.contexts.get_mut(&context) {
            Some(ctx) => ctx.post(spec, token, &limits),
            None => Err(Rejected {
                error: MatchError::UnknownContext(context),
                item: token,
            }),
        }
    }

    /// Delivers a message from a transport: it completes the earliest posted receive that
    /// fits, or waits as unexpected. A message for a context not open yet is held until
    /// [`open_context`](Self::open_context).
    ///
    /// A transport must deliver the messages of one sender on one context in the order
    /// they were sent (non-overtaking rests on it).
    ///
    /// # Errors
    /// The message comes back with [`MatchError::Revoked`], `RankOutOfRange` or
    /// `QueueFull` (also for the early queue).
    pub fn deliver(&mut self, env: Envelope<P>) -> Result<Arrival<R, P>, Rejected<Envelope<P>>> {
        let limits = self.limits;
        match self.contexts.get_mut(&env.context) {
            Some(ctx) => ctx.deliver(env, &limits),
            None if self.early.len() < limits.max_early => {
                self.early.push_back(env);
                Ok(Arrival::Queued)
            }
            None => Err(Rejected {
                error: MatchError::QueueFull {
                    context: env.context,
                    queue: QueueKind::Early,
                    limit: limits.max_early,
                },
                item: env,
            }),
        }
    }

    /// Whether a message `(source, tag)` arriving on `context` now would match a posted
    /// receive (nothing changes). A transport uses it to skip staging: if true, it
    /// delivers the message with a payload that still points into its ring or buffer
    /// and copies straight into the matched receive (no engine call in between, so the
    /// answer holds); if false, it stages the data into a buffer it owns first.
    ///
    /// # Errors
    /// `UnknownContext` (the message would be held as early), `RankOutOfRange`, `Revoked`.
    pub fn would_match(
        &self,
        context: ContextId,
        source: Rank,
        tag: Tag,
    ) -> Result<bool, MatchError> {
        self.ctx(context)?.would_match(source, tag)
    }

    /// As [`would_match`](Self::would_match), naming the receive: the token of the
    /// posted receive a message `(source, tag)` arriving on `context` now would complete
    /// (nothing changes). A transport that copies straight into that receive's buffer
    /// and then calls [`deliver`](Self::deliver), with no engine call in between, gets
    /// exactly this receive back in [`Arrival::Matched`].
    ///
    /// # Errors
    /// As [`would_match`](Self::would_match).
    pub fn peek_match(
        &self,
        context: ContextId,
        source: Rank,
        tag: Tag,
    ) -> Result<Option<&R>, MatchError> {
        self.ctx(context)?.peek_match(source, tag)
    }

    /// `MPI_Iprobe`: the earliest waiting message that fits, left in the queue.
    ///
    /// # Errors
    /// `UnknownContext`, `RankOutOfRange`, `Revoked`; when no message fits,
    /// `ProcFailed` for a named failed source and `ProcFailedPending` for a wildcard source
    /// with an unacknowledged failure (a blocking probe turns the latter into
    /// `MPI_ERR_PROC_FAILED`, as ULFM asks of blocking wildcard operations).
    pub fn probe(
        &self,
        context: ContextId,
        spec: RecvSpec,
    ) -> Result<Option<&Envelope<P>>, MatchError> {
        self.ctx(context)?.probe(spec)
    }

    /// `MPI_Improbe`: takes the earliest waiting message that fits out of the queue, so no
    /// other receive can match it; `MPI_Mrecv` is then the caller's copy or pull from the
    /// returned envelope.
    ///
    /// # Errors
    /// As [`probe`](Self::probe).
    pub fn mprobe(
        &mut self,
        context: ContextId,
        spec: RecvSpec,
    ) -> Result<Option<Envelope<P>>, MatchError> {
        self.ctx_mut(context)?.mprobe(spec)
    }

    /// `MPI_Cancel` of a receive: its token if it was still posted (`None`: it already
    /// matched, failed, or was cancelled, and the cancel fails as MPI says).
    pub fn cancel(&mut self, id: RecvId) -> Option<R> {
        self.contexts.get_mut(&id.context)?.cancel(id)
    }

    /// Reports that `rank` of `context` has failed (idempotent). Receives naming it fail
    /// ([`Event::RecvFailed`] with `ProcFailed`); messages from it that already wait stay
    /// receivable; wildcard-source receives stay posted and get [`Event::FailurePending`].
    ///
    /// # Errors
    /// `UnknownContext`, `RankOutOfRange`.
    pub fn notify_failure(&mut self, context: ContextId, rank: Rank) -> Result<(), MatchError>
    where
        R: Clone,
    {
        let ctx = self
            .contexts
            .get_mut(&context)
            .ok_or(MatchError::UnknownContext(context))?;
        ctx.fail(rank, &mut self.events)?;
        log::debug!(
            "matching: context {} learned rank {} failed",
            context.0,
            rank.0
        );
        Ok(())
    }

    /// A new incarnation of the failed `rank` of `context` takes its place (restart in
    /// place): the failure is forgotten in this context, so receives naming the rank
    /// post and match again and wildcard receives no longer report it pending; every
    /// message of the old incarnation still waiting is dropped
    /// ([`Event::MessageDropped`] with `ProcFailed`), so none reaches a receive meant for
    /// the new one. Returns how many were dropped. The transport must deliver nothing of
    /// the old incarnation after this call (its fencing), and messages held for a context
    /// not open yet are not looked at.
    ///
    /// # Errors
    /// `UnknownContext`, `RankOutOfRange`.
    pub fn readmit(&mut self, context: ContextId, rank: Rank) -> Result<usize, MatchError> {
        let ctx = self
            .contexts
            .get_mut(&context)
            .ok_or(MatchError::UnknownContext(context))?;
        ctx.readmit(rank, &mut self.events)
    }

    /// `MPI_Comm_failure_ack`: acknowledges every failure known now, so wildcard-source
    /// receives stop reporting `ProcFailedPending` for them. Returns how many failures are
    /// acknowledged.
    ///
    /// # Errors
    /// `UnknownContext`.
    pub fn ack_failures(&mut self, context: ContextId) -> Result<usize, MatchError> {
        Ok(self.ctx_mut(context)?.ack())
    }

    /// `MPIX_Comm_ack_failed` with a count: acknowledges the first `count` failures of
    /// `context` in the order they were reported (all known, if fewer), never
    /// un-acknowledging one. Returns how many failures are acknowledged.
    ///
    /// # Errors
    /// `UnknownContext`.
    pub fn ack_first_failures(
        &mut self,
        context: ContextId,
        count: usize,
    ) -> Result<usize, MatchError> {
        Ok(self.ctx_mut(context)?.ack_first(count))
    }

    /// Whether `context` has a failure not yet acknowledged (a pending wildcard-source
    /// receive's waiter reports `ProcFailedPending` while it does).
    ///
    /// # Errors
    /// `UnknownContext`.
    pub fn failure_pending(&self, context: ContextId) -> Result<bool, MatchError> {
        Ok(self.ctx(context)?.failure_pending())
    }

    /// The failed ranks of `context`, in the order they were reported.
    ///
    /// # Errors
    /// `UnknownContext`.
    pub fn failed_ranks(&self, context: ContextId) -> Result<&[Rank], MatchError> {
        Ok(self.ctx(context)?.failed_ranks())
    }

    /// `MPI_Comm_revoke` took effect here (idempotent): every posted receive fails with
    /// `Revoked`, waiting messages are dropped, later posts, probes and deliveries fail.
    ///
    /// # Errors
    /// `UnknownContext`.
    pub fn revoke(&mut self, context: ContextId) -> Result<(), MatchError> {
        let ctx = self
            .contexts
            .get_mut(&context)
            .ok_or(MatchError::UnknownContext(context))?;
        ctx.revoke(&mut self.events);
        log::debug!("matching: context {} revoked", context.0);
        Ok(())
    }

    /// Whether `context` is revoked.
    ///
    /// # Errors
    /// `UnknownContext`.
    pub fn is_revoked(&self, context: ContextId) -> Result<bool, MatchError> {
        Ok(self.ctx(context)?.is_revoked())
    }

    /// The next event caused by an earlier call, oldest first.
    pub fn poll_event(&mut self) -> Option<Event<R, P>> {
        self.events.pop_front()
    }

    /// Receives posted on `context`.
    ///
    /// # Errors
    /// `UnknownContext`.
    pub fn posted_len(&self, context: ContextId) -> Result<usize, MatchError> {
        Ok(self.ctx(context)?.posted_len())
    }

    /// Unexpected messages waiting on `context`.
    ///
    /// # Errors
    /// `UnknownContext`.
    pub fn unexpected_len(&self, context: ContextId) -> Result<usize, MatchError> {
        Ok(self.ctx(context)?.unexpected_len())
    }

    /// Whether `context` is open with no receive posted and no message waiting: the
    /// next message that arrives for it is then the earliest any receive posted now
    /// could match (a blocking receive may take it without being posted). `false` for
    /// an unknown context.
    #[inline]
    pub fn is_quiet(&self, context: ContextId) -> bool {
        self.ctx(context)
            .is_ok_and(|c| c.posted_len() == 0 && c.unexpected_len() == 0)
    }

    /// Messages held for contexts not open yet.
    pub fn early_len(&self) -> usize {
        self.early.len()
    }

    /// The size of `context`'s communicator.
    ///
    /// # Errors
    /// `UnknownContext`.
    pub fn context_size(&self, context: ContextId) -> Result<u32, MatchError> {
        Ok(self.ctx(context)?.size())
    }

    /// Whether a message from `rank` waits on `context` (for example before failing a
    /// receive naming a dead rank whose last messages a transport is still draining).
    ///
    /// # Errors
    /// `UnknownContext`.
    pub fn has_message_from(&self, context: ContextId, rank: Rank) -> Result<bool, MatchError> {
        Ok(self.ctx(context)?.has_message_from(rank))
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
