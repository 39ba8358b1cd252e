//! Receives whose rendezvous message its sender withdrew during the read
//! (`steadfast_fabric::Error::Withdrawn`): a live sender withdraws a matched send only
//! when its communicator was revoked or it counts the receiver failed, so the receive
//! ends as ULFM says once this process learns that: `Revoked` at the revoke of its
//! context, `ProcFailed` at the failure of its sender (a death that showed as a
//! cancelled read), at once if either is known already; or `Excluded` for its waiter
//! (`Comm::matched_interrupted`). A sender that withdrew for another reason (a Rust
//! caller dropped its request) sends neither: after [`WITHDRAWN_WAIT`] the receive
//! ends with the fabric's error, so it never hangs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use steadfast_matching::{ContextId, Rank};

use super::{Matching, RecvFailure, RecvKey, SlotState};

/// How long a withdrawn receive waits for the revoke or the failure that explains it:
/// far beyond a revoke's spread or a failure's detection on a busy machine.
pub(crate) const WITHDRAWN_WAIT: Duration = Duration::from_secs(20);

/// The failure of a receive withdrawn by world rank `world` that nothing explained.
pub(crate) fn unexplained(world: u32) -> RecvFailure {
    RecvFailure::Fabric(Arc::new(steadfast_fabric::Error::Withdrawn { peer: world }))
}

impl Matching {
    /// The sender of the message being read into receive `key` withdrew it: the
    /// receive waits for why (the module doc), or ends at once if that is known.
    pub(crate) fn withdraw(&mut self, key: RecvKey) {
        let Some(&SlotState::Pulling {
            got, ctx, world, ..
        }) = self.slot(key).map(|s| &s.state)
        else {
            return;
        };
        let id = ContextId(ctx);
        let ended = if self.matcher.is_revoked(id).unwrap_or(false) {
            SlotState::Done(Err(RecvFailure::Revoked))
        } else if !self.ctxs.contains_key(&ctx) {
            SlotState::Done(Err(RecvFailure::Freed))
        } else if self
            .matcher
            .failed_ranks(id)
            .is_ok_and(|f| f.contains(&Rank(got.source)))
        {
            SlotState::Done(Err(RecvFailure::ProcFailed(got.source)))
        } else {
            SlotState::Withdrawn {
                ctx,
                world,
                source: got.source,
                since: Instant::now(),
            }
        };
        self.slots[key.slot as usize].state = ended;
    }

    /// Ends the withdrawn receives for which `ends(ctx, world, source)` names a
    /// failure.
    pub(super) fn end_withdrawn(&mut self, ends: impl Fn(u32, u32, u32) -> Option<RecvFailure>) {
        for s in &mut self.slots {
            if let SlotState::Withdrawn {
                ctx, world, source, ..
            } = s.state
            {
                if let Some(f) = ends(ctx, world, source) {
                    s.state = SlotState::Done(Err(f));
                }
            }
        }
    }

    /// Ends receive `key` if it was withdrawn [`WITHDRAWN_WAIT`] ago and nothing
    /// explained it since.
    pub(super) fn withdrawn_expired(&mut self, key: RecvKey) {
        if let Some(&SlotState::Withdrawn { world, since, .. }) = self.slot(key).map(|s| &s.state) {
            if since.elapsed() >= WITHDRAWN_WAIT {
                self.slots[key.slot as usize].state = SlotState::Done(Err(unexplained(world)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A matching over world ranks [3, 1] on context 7, with a receive whose message
    /// world rank 1 (comm rank 1) withdrew at `since`.
    fn withdrawn_at(since: Instant) -> (Matching, RecvKey) {
        let mut m = Matching::new(4);
        m.open(7, &[3, 1], &[], false);
        let key = m.alloc(std::ptr::null_mut(), 0);
        m.slots[key.slot as usize].state = SlotState::Withdrawn {
            ctx: 7,
            world: 1,
            source: 1,
            since,
        };
        (m, key)
    }

    #[test]
    fn a_withdrawn_receive_waits_for_the_revoke_of_its_context() {
        let (mut m, key) = withdrawn_at(Instant::now());
        assert!(m.take(key).is_none(), "nothing explains it yet");
        m.notify_failure(3);
        assert!(m.take(key).is_none(), "another rank's failure does not");
        m.revoke(7);
        assert!(matches!(m.take(key), Some(Err(RecvFailure::Revoked))));
    }

    #[test]
    fn a_withdrawn_receive_ends_with_its_senders_failure_as_proc_failed() {
        let (mut m, key) = withdrawn_at(Instant::now());
        m.notify_failure(1);
        assert!(matches!(m.take(key), Some(Err(RecvFailure::ProcFailed(1)))));
    }

    #[test]
    fn an_unexplained_withdrawal_ends_with_the_fabrics_error_after_the_bound() {
        let long_ago = Instant::now()
            .checked_sub(WITHDRAWN_WAIT)
            .expect("the monotonic clock counts from boot, long before");
        let (mut m, key) = withdrawn_at(long_ago);
        match m.take(key) {
            Some(Err(RecvFailure::Fabric(e))) => assert!(
                matches!(*e, steadfast_fabric::Error::Withdrawn { peer: 1 }),
                "{e}"
            ),
            other => panic!("gave {other:?}"),
        }
    }

    #[test]
    fn cancelling_or_freeing_a_withdrawn_receive_releases_it() {
        let (mut m, key) = withdrawn_at(Instant::now());
        assert!(m.cancel(key).is_none(), "withdrawn: nothing was received");
        assert!(m.take(key).is_none(), "its slot is free");
        let (mut m, key) = withdrawn_at(Instant::now());
        m.close(7, false);
        assert!(matches!(m.take(key), Some(Err(RecvFailure::Freed))));
    }
}
