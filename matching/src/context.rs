//! One communicator context: its two queues and its ULFM state (failed ranks, how many
//! of them are acknowledged, revoked or not). The rules live here; [`crate::Engine`]
//! finds the context and collects the events.

use std::collections::VecDeque;

use crate::engine::{Arrival, Event, Limits, Match, PostOutcome};
use crate::posted::PostedQueue;
use crate::types::{
    ContextId, Envelope, MatchError, QueueKind, Rank, RecvId, RecvSpec, Rejected, SourceSpec,
};
use crate::unexpected::UnexpectedQueue;

#[derive(Debug)]
pub(crate) struct Context<R, P> {
    id: ContextId,
    /// Distinguishes this opening of `id` from earlier ones (stale `RecvId`s).
    incarnation: u64,
    size: u32,
    posted: PostedQueue<R>,
    unexpected: UnexpectedQueue<P>,
    /// `failed[r]`: rank `r` is known to have failed.
    failed: Vec<bool>,
    /// Failed ranks in the order they were reported.
    failed_order: Vec<Rank>,
    /// The first `acked` entries of `failed_order` are acknowledged.
    acked: usize,
    revoked: bool,
}

impl<R, P> Context<R, P> {
    pub(crate) fn new(id: ContextId, size: u32, incarnation: u64) -> Self {
        Context {
            id,
            incarnation,
            size,
            posted: PostedQueue::new(size),
            unexpected: UnexpectedQueue::new(size),
            failed: vec![false; size as usize],
            failed_order: Vec::new(),
            acked: 0,
            revoked: false,
        }
    }

    pub(crate) fn size(&self) -> u32 {
        self.size
    }

    pub(crate) fn posted_len(&self) -> usize {
        self.posted.len()
    }

    pub(crate) fn unexpected_len(&self) -> usize {
        self.unexpected.len()
    }

    pub(crate) fn is_revoked(&self) -> bool {
        self.revoked
    }

    pub(crate) fn failed_ranks(&self) -> &[Rank] {
        &self.failed_order
    }

    /// Whether a failure is known but not acknowledged.
    pub(crate) fn failure_pending(&self) -> bool {
        self.acked < self.failed_order.len()
    }

    fn check_rank(&self, rank: Rank) -> Result<(), MatchError> {
        if rank.0 < self.size {
            Ok(())
        } else {
            Err(MatchError::RankOutOfRange {
                context: self.id,
                rank,
                size: self.size,
            })
        }
    }

    fn check_spec(&self, spec: RecvSpec) -> Result<(), MatchError> {
        if self.revoked {
            return Err(MatchError::Revoked(self.id));
        }
        match spec.source {
            SourceSpec::Rank(r) => self.check_rank(r),
            SourceSpec::Any => Ok(()),
        }
    }

    /// The error a receive or probe that found no message gets, if any (ULFM): a named
    /// dead source fails; a wildcard source with an unacknowledged failure is pending.
    fn unmatched_error(&self, spec: RecvSpec) -> Option<MatchError> {
        match spec.source {
            SourceSpec::Rank(r) if self.failed[r.0 as usize] => Some(MatchError::ProcFailed {
                context: self.id,
                rank: r,
            }),
            SourceSpec::Any if self.failure_pending() => {
                Some(MatchError::ProcFailedPending(self.id))
            }
            _ => None,
        }
    }

    pub(crate) fn post(
        &mut self,
        spec: RecvSpec,
        token: R,
        limits: &Limits,
    ) -> Result<PostOutcome<R, P>, Rejected<R>> {
        if let Err(error) = self.check_spec(spec) {
            return Err(Rejected { error, item: token });
        }
        if let Some(message) = self.unexpected.take(spec) {
            return Ok(PostOutcome::Matched(Match {
                recv: token,
                message,
            }));
        }
        let failure_pending = match self.unmatched_error(spec) {
            Some(error @ MatchError::ProcFailed { .. }) => {
                return Err(Rejected { error, item: token })
            }
            Some(_) => true,
            None => false,
        };
        if self.posted.len() >= limits.max_posted {
            return Err(Rejected {
                error: MatchError::QueueFull {
                    context: self.id,
                    queue: QueueKind::Posted,
                    limit: limits.max_posted,
                },
                item: token,
            });
        }
        let (slot, seq) = self.posted.push(spec, token);
        Ok(PostOutcome::Posted {
            id: RecvId {
                context: self.id,
                incarnation: self.incarnation,
                slot,
                seq,
            },
            failure_pending,
        })
    }

    pub(crate) fn deliver(
        &mut self,
        env: Envelope<P>,
        limits: &Limits,
    ) -> Result<Arrival<R, P>, Rejected<Envelope<P>>> {
        let checked = if self.revoked {
            Err(MatchError::Revoked(self.id))
        } else {
            self.check_rank(env.source)
        };
        if let Err(error) = checked {
            return Err(Rejected { error, item: env });
        }
        if let Some(node) = self.posted.take_match(env.source, env.tag) {
            return Ok(Arrival::Matched(Match {
                recv: node.token,
                message: env,
            }));
        }
        if self.unexpected.len() >= limits.max_unexpected {
            return Err(Rejected {
                error: MatchError::QueueFull {
                    context: self.id,
                    queue: QueueKind::Unexpected,
                    limit: limits.max_unexpected,
                },
                item: env,
            });
        }
        self.unexpected.push(env);
        Ok(Arrival::Queued)
    }

    pub(crate) fn would_match(
        &self,
        source: Rank,
        tag: crate::types::Tag,
    ) -> Result<bool, MatchError> {
        if self.revoked {
            return Err(MatchError::Revoked(self.id));
        }
        self.check_rank(source)?;
        Ok(self.posted.has_match(source, tag))
    }

    pub(crate) fn peek_match(
        &self,
        source: Rank,
        tag: crate::types::Tag,
    ) -> Result<Option<&R>, MatchError> {
        if self.revoked {
            return Err(MatchError::Revoked(self.id));
        }
        self.check_rank(source)?;
        Ok(self.posted.peek_match(source, tag))
    }

    pub(crate) fn probe(&self, spec: RecvSpec) -> Result<Option<&Envelope<P>>, MatchError> {
        self.check_spec(spec)?;
        match self.unexpected.peek(spec) {
            Some(e) => Ok(Some(e)),
            None => self.unmatched_error(spec).map_or(Ok(None), Err),
        }
    }

    pub(crate) fn mprobe(&mut self, spec: RecvSpec) -> Result<Option<Envelope<P>>, MatchError> {
        self.check_spec(spec)?;
        match self.unexpected.take(spec) {
            Some(e) => Ok(Some(e)),
            None => self.unmatched_error(spec).map_or(Ok(None), Err),
        }
    }

    pub(crate) fn cancel(&mut self, id: RecvId) -> Option<R> {
        if id.incarnation != self.incarnation {
            return None;
        }
        self.posted.take(id.slot, id.seq).map(|n| n.token)
    }

    /// Applies the failure of `rank` (idempotent): receives naming it fail, wildcard
    /// receives are told a failure is pending.
    pub(crate) fn fail(
        &mut self,
        rank: Rank,
        events: &mut VecDeque<Event<R, P>>,
    ) -> Result<(), MatchError>
    where
        R: Clone,
    {
        self.check_rank(rank)?;
        if std::mem::replace(&mut self.failed[rank.0 as usize], true) {
            return Ok(());
        }
        self.failed_order.push(rank);
        if self.revoked {
            return Ok(());
        }
        let error = MatchError::ProcFailed {
            context: self.id,
            rank,
        };
        for node in self.posted.take_from_source(rank) {
            events.push_back(Event::RecvFailed {
                recv: node.token,
                error,
            });
        }
        for node in self.posted.any_source() {
            events.push_back(Event::FailurePending {
                recv: node.token.clone(),
            });
        }
        Ok(())
    }

    /// A new incarnation of `rank` replaces the failed one: the failure is forgotten here
    /// (an acknowledged one uncounted) and every message of the old incarnation still
    /// waiting is dropped into `events`; returns how many.
    pub(crate) fn readmit(
        &mut self,
        rank: Rank,
        events: &mut VecDeque<Event<R, P>>,
    ) -> Result<usize, MatchError> {
        self.check_rank(rank)?;
        if std::mem::replace(&mut self.failed[rank.0 as usize], false) {
            if let Some(i) = self.failed_order.iter().position(|&r| r == rank) {
                self.failed_order.remove(i);
                if i < self.acked {
                    self.acked -= 1;
                }
            }
        }
        let error = MatchError::ProcFailed {
            context: self.id,
            rank,
        };
        let mut dropped = 0;
        while let Some(message) = self.unexpected.take_from(rank) {
            events.push_back(Event::MessageDropped { message, error });
            dropped += 1;
        }
        Ok(dropped)
    }

    /// Acknowledges every failure known now; returns how many are acknowledged.
    pub(crate) fn ack(&mut self) -> usize {
        self.acked = self.failed_order.len();
        self.acked
    }

    /// Acknowledges the first `count` failures of the reported order (those known, if
    /// fewer); never fewer than acknowledged already. Returns how many are
    /// acknowledged.
    pub(crate) fn ack_first(&mut self, count: usize) -> usize {
        self.acked = self.acked.max(count.min(self.failed_order.len()));
        self.acked
    }

    /// Revokes (idempotent): every posted receive fails with `Revoked`, every waiting
    /// message is dropped (handed out so the transport can release it).
    pub(crate) fn revoke(&mut self, events: &mut VecDeque<Event<R, P>>) {
        if std::mem::replace(&mut self.revoked, true) {
            return;
        }
        self.flush(MatchError::Revoked(self.id), events);
    }

    /// Empties both queues into `events` with `error`.
    pub(crate) fn flush(&mut self, error: MatchError, events: &mut VecDeque<Event<R, P>>) {
        for node in self.posted.drain() {
            events.push_back(Event::RecvFailed {
                recv: node.token,
                error,
            });
        }
        for message in self.unexpected.drain() {
            events.push_back(Event::MessageDropped { message, error });
        }
    }

    /// Whether a message from `rank` waits (tests and the runtime's drain checks).
    pub(crate) fn has_message_from(&self, rank: Rank) -> bool {
        self.unexpected.has_from(rank)
    }
}
