//! Probes (`MPI_Iprobe`, `MPI_Probe`) that never wait for another thread's round
//! (issue 15, point 3; `docs/threads.md`, section 1), and the checks the matched probes
//! (`mprobe.rs`) share with them.
//!
//! A probe looks at the matcher, which only the progress token's holder may touch. So
//! `iprobe` *tries* the token (one try, as before when uncontended): when another
//! thread holds it, the answer is "nothing found" (`Ok(None)`) at once, which MPI
//! allows (a message that has arrived need not be found by the first probe; the
//! holder's round makes progress, and a repeated `iprobe` finds it). Errors are not
//! lost: a bad argument and a revoked communicator (the published flag, including a
//! revoke this thread queued) are reported at once; a named source that failed with
//! nothing pending, a wildcard probe with an unacknowledged failure and this process's
//! exclusion are reported by the next probe that gets the token (which a repeated
//! `iprobe` does as soon as the holder's round ends: only a holder that never lets go
//! could prevent it, and then nothing progresses anyway). The blocking `probe` and
//! `mprobe` wait by trying the token each turn (`Spin::until_polled`), never by
//! spinning on it with `lock()`: they end on the first try that finds a message or
//! an error.

use steadfast_matching::MatchError;

use super::p2p::RECV_POLLS_PER_PROGRESS;
use super::{Comm, CommError, Spin, Status};
use crate::world::engine::Engine;

impl Comm {
    /// `MPI_Iprobe`: the status of the earliest message a receive `(source, tag)` posted
    /// now would get, left waiting; `None` when none has arrived (from any path: self,
    /// shared memory or the fabric).
    ///
    /// Never waits for another thread: while another thread holds the engine, `None`
    /// at once (repeat the probe: the holder's round makes progress, and a later probe
    /// finds the message), except for the errors this thread can tell without the
    /// engine (a bad argument, a revoked communicator); the other errors are reported
    /// by the next probe that gets the engine (module doc).
    ///
    /// # Errors
    /// [`CommError::ProcFailed`] when `source` has failed and none of its messages
    /// waits; [`CommError::ProcFailedPending`] for a wildcard source while a failure is
    /// not acknowledged; [`CommError::Revoked`]; [`CommError::InvalidArgument`] for a
    /// bad rank or tag.
    pub fn iprobe(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<Option<Status>, CommError> {
        match self.engine.try_lock() {
            Some(mut guard) => self.iprobe_in(&mut guard, source, tag),
            None => self.probe_busy(source, tag).map(|()| None),
        }
    }

    /// [`iprobe`](Self::iprobe) with the engine held.
    fn iprobe_in(
        &self,
        e: &mut Engine,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<Option<Status>, CommError> {
        let ctx = self.probe_plan(e, source, tag)?;
        match e.probe(ctx, source, tag) {
            Ok(found) => Ok(found.map(|g| Status {
                source: g.source,
                tag: g.tag,
                len: g.len,
            })),
            Err(err) => Err(self.probe_error(e, err)),
        }
    }

    /// What a probe can tell while another thread holds the engine: its arguments'
    /// errors and the published revocation (`Ok(())`: nothing, for now).
    pub(crate) fn probe_busy(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<(), CommError> {
        if let Some(t) = tag {
            Self::check_tag(t)?;
        }
        if let Some(s) = source {
            if s >= self.size() {
                return Err(CommError::InvalidArgument(format!(
                    "source {s} outside a communicator of {}",
                    self.size()
                )));
            }
        }
        if self.is_revoked() {
            return Err(CommError::Revoked);
        }
        Ok(())
    }

    /// Checks before a probe of `(source, tag)` (also `improbe`): the matcher's
    /// context, after taking what arrived.
    pub(crate) fn probe_plan(
        &self,
        e: &mut Engine,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<u64, CommError> {
        let plan = self.plan_recv(e, source, tag)?;
        e.drain_arrivals();
        e.tick();
        if let Some(err) = self.interrupted(e, None, false) {
            return Err(err);
        }
        Ok(plan.ctx)
    }

    /// The caller's view of the matcher's refusal of a probe.
    pub(crate) fn probe_error(&self, e: &Engine, err: MatchError) -> CommError {
        match err {
            MatchError::ProcFailed { rank, .. } => CommError::ProcFailed {
                ranks: vec![rank.0],
            },
            MatchError::ProcFailedPending(_) => self
                .interrupted(e, None, true)
                .unwrap_or(CommError::ProcFailedPending { ranks: Vec::new() }),
            MatchError::Revoked(_) => CommError::Revoked,
            other => CommError::InvalidArgument(other.to_string()),
        }
    }

    /// `MPI_Probe`: waits until [`iprobe`](Self::iprobe) finds a message.
    ///
    /// Waits by trying the engine each turn (never for another thread's round): a try
    /// that gets it probes (with a round of progress now and then); one that does not
    /// checks what the module doc says and pauses.
    ///
    /// # Errors
    /// As [`iprobe`](Self::iprobe), except that a wildcard probe with an unacknowledged
    /// failure fails with [`CommError::ProcFailed`] (a blocking wildcard operation).
    pub fn probe(&self, source: Option<u32>, tag: Option<u32>) -> Result<Status, CommError> {
        let mut polls: u32 = 0;
        let found = Spin::until_polled(&self.engine, |turn| match turn.try_lock() {
            Some(mut e) => {
                polls = polls.wrapping_add(1);
                if polls % RECV_POLLS_PER_PROGRESS == 0 {
                    e.progress();
                }
                self.iprobe_in(&mut e, source, tag)
            }
            None => self.probe_busy(source, tag).map(|()| None),
        });
        blocking_error(found)
    }
}

/// A blocking wildcard probe's unacknowledged failure is `ProcFailed` (MPI's rule for
/// blocking wildcard operations).
pub(super) fn blocking_error<T>(found: Result<T, CommError>) -> Result<T, CommError> {
    match found {
        Err(CommError::ProcFailedPending { ranks }) => Err(CommError::ProcFailed { ranks }),
        other => other,
    }
}
