//! A blocking receive that waits without being posted in the matcher (the latency
//! path): from one named shared-memory peer, while its context is quiet (no receive
//! posted, no message waiting or held), the first message from that peer that fits is
//! the one a posted receive would get, so the engine's drain copies it straight into
//! the buffer ([`DirectRecv`]). This skips the matcher's post, placement, withdrawal and
//! outcome slot for every such message.
//!
//! Whenever the context is no longer quiet at a hold of the engine (another thread
//! posted a receive on it, a message for it waits, one is held), or the peer failed,
//! the communicator was revoked or this process was excluded, the receive is posted
//! as usual in that same hold ([`Comm::recv_matched`]), which keeps MPI's matching
//! order and reports ULFM's errors: a message that arrived meanwhile is among the
//! waiting ones, where the posted receive finds it first.

use super::p2p::{outcome_result, GiveUp, RecvPlan, RECV_POLLS_PER_PROGRESS};
use super::{Comm, CommError, Spin, Status};
use crate::world::engine::{DirectRecv, Engine, Route};
use crate::world::shared::EngineGuard;

/// Polls of the peer's ring between two drains of a receive waiting unposted: bounded,
/// since the engine is held meanwhile (other threads' operations queue or wait).
const AWAIT_SPINS: u32 = 32;

impl Comm {
    /// The unposted form of a receive planned as `plan` into `buf`, when it may wait
    /// that way now (see the module docs).
    #[inline]
    pub(super) fn direct_recv(
        &self,
        e: &Engine,
        plan: &RecvPlan,
        buf: &mut [u8],
    ) -> Option<DirectRecv> {
        let rank = plan.source?;
        let c = e.comm(self.id);
        let w = *c.group().get(rank as usize)?;
        let Route::Shm(local) = e.route(w) else {
            return None;
        };
        if c.revoked() || !self.may_wait_direct(e, plan, w) {
            return None;
        }
        Some(DirectRecv {
            ctx: plan.ctx as u32,
            local,
            world: w,
            rank,
            tag: plan.tag,
            buf: buf.as_mut_ptr(),
            cap: buf.len(),
        })
    }

    /// Whether a direct receive from world rank `w` may keep waiting unposted: its
    /// context quiet, `w` not failed, this process not excluded.
    #[inline]
    fn may_wait_direct(&self, e: &Engine, plan: &RecvPlan, w: u32) -> bool {
        !e.excluded() && !e.is_failed(w) && e.recv_quiet(plan.ctx)
    }

    /// Waits for the direct receive `d` (from [`direct_recv`](Self::direct_recv), in the
    /// hold `held`), posting it as [`recv_matched`](Self::recv_matched) does once it may
    /// no longer wait unposted.
    pub(super) fn recv_direct(
        &self,
        held: EngineGuard<'_>,
        plan: &RecvPlan,
        d: &DirectRecv,
        buf: &mut [u8],
        mut spin: Spin,
        give_up: GiveUp<'_>,
    ) -> Result<Status, CommError> {
        let mut first = Some(held);
        let mut polls: u32 = 0;
        let mut turn = self.engine.turn();
        loop {
            {
                let mut guard = match first.take() {
                    // Checked by `direct_recv` in this hold.
                    Some(g) => g,
                    None => match turn.try_lock() {
                        Some(g) => {
                            let e = &*g;
                            // Giving up takes the posted path, which takes a message
                            // that came meanwhile.
                            if e.comm(self.id).revoked()
                                || !self.may_wait_direct(e, plan, d.world)
                                || give_up.is_some_and(|g| g().is_some())
                            {
                                return self.recv_matched(g, plan, buf, spin, give_up);
                            }
                            g
                        }
                        None => {
                            spin.pause();
                            continue;
                        }
                    },
                };
                let e = &mut *guard;
                if let Some(out) = e.drain_direct(d) {
                    e.tick();
                    return outcome_result(out);
                }
                polls = polls.wrapping_add(1);
                if polls % RECV_POLLS_PER_PROGRESS == 0 {
                    // Failures and revocations learnt here are seen at the next hold.
                    e.progress();
                } else if !spin.yields_at_once() {
                    // Between drains, watch only the peer's ring (under a
                    // microsecond, with the engine held). Not with more ranks than
                    // cores: the peer may need this core to write it.
                    e.await_direct(d, AWAIT_SPINS);
                }
            }
            self.engine.make_way();
            // With more ranks than cores, yield at every poll (the sender may be waiting
            // for this core); else only between progress rounds.
            if spin.yields_at_once() || polls % RECV_POLLS_PER_PROGRESS == 0 {
                spin.pause();
            }
        }
    }
}
