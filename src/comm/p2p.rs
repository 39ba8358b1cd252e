//! Point-to-point operations of a communicator: each waits by polling its transport
//! and the progress engine, and gives up with `Revoked` / `ProcFailed` as soon as the
//! engine learns the reason.

use steadfast_agreement::Rank;
use steadfast_fabric::{Completion, Error as FabricError, Request};
use steadfast_shm::ShmError;

use super::{Comm, CommError, Spin, Status};
use crate::world::engine::{Engine, Route};
use crate::world::tags::{user_match, user_tag, MAX_TAG};

fn shm_error(e: ShmError, world: &mut Engine) -> CommError {
    match e {
        ShmError::Truncated { len, capacity } => CommError::Truncated {
            len: Some(len),
            capacity,
        },
        ShmError::PeerDead(l) => {
            let w = world.local_world(l);
            world.report_failure(w, "process exited".into());
            world.apply_failures();
            CommError::from(ShmError::PeerDead(l))
        }
        other => other.into(),
    }
}

fn fabric_error(e: FabricError, world: &mut Engine) -> CommError {
    match e {
        FabricError::Truncated {
            message_len,
            buffer_len,
        } => CommError::Truncated {
            len: message_len,
            capacity: buffer_len,
        },
        FabricError::PeerUnreachable { peer, ref reason } => {
            world.report_failure(peer, format!("fabric: {reason}"));
            world.apply_failures();
            e.into()
        }
        other => other.into(),
    }
}

/// Attempts at a receive between two rounds of the engine (control messages, failure
/// reports): the round costs more than an attempt and may queue (copy) the very
/// message the receive waits for.
const RECV_POLLS_PER_PROGRESS: u32 = 16;

/// Where a receive may find its message (computed once per receive).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecvPlan {
    ctx: u64,
    tag: Option<u32>,
    pub(crate) src_world: Option<u32>,
    fabric_members: bool,
    /// `Some(Some(l))`: local rank l; `Some(None)`: any local rank; `None`: not shm.
    shm_source: Option<Option<u32>>,
    self_allowed: bool,
    wire_tag: u64,
    ignore: u64,
    pub(crate) wildcard: bool,
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
        // The latency path: a message that fits one shared-memory cell goes out under
        // one hold of the engine, without a request.
        if data.len() <= steadfast_shm::message::INLINE_MAX && tag <= MAX_TAG {
            let mut guard = self.engine.lock();
            let e = &mut *guard;
            let c = e.comm(self.id);
            if let (Some(&w), false) = (c.group().get(dest as usize), c.revoked()) {
                if let (Route::Shm(l), false, false) = (e.route(w), e.excluded(), e.is_failed(w)) {
                    let (wire_tag, _) = user_match(c.context(), Some(tag));
                    let shm = e.shm_mut().expect("shm route without endpoint");
                    if shm.try_send(l, wire_tag, data).is_ok() {
                        e.stats_mut().shm_sent += 1;
                        e.tick();
                        return Ok(());
                    }
                    // Ring full, or the peer is dead: the general path waits or reports.
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
    /// any) with `tag` ([`super::ANY_TAG`]: any).
    ///
    /// # Errors
    /// [`CommError::Truncated`] when the message is longer than `buf`;
    /// [`CommError::ProcFailed`] when `source` has failed;
    /// [`CommError::ProcFailedPending`] for a wildcard receive while a failure is not
    /// acknowledged; [`CommError::Revoked`]; [`CommError::InvalidArgument`].
    pub fn recv(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
        buf: &mut [u8],
    ) -> Result<Status, CommError> {
        let mut guard = self.engine.lock();
        let e = &mut *guard;
        let plan = self.plan_recv(e, source, tag)?;
        let mut fab_req: Option<Request> = None;
        let mut spin = Spin::new(e);
        let mut polls: u32 = 0;
        let result = loop {
            if let Some(r) = self.recv_step(e, &plan, &mut fab_req, buf) {
                break r;
            }
            // The engine's round drains the rings too (queueing the message we wait
            // for, at a copy's cost): look at our own message first, most of the time.
            polls = polls.wrapping_add(1);
            if polls % RECV_POLLS_PER_PROGRESS != 0 {
                continue;
            }
            e.progress();
            if let Some(err) = self.interrupted(e, plan.src_world, plan.wildcard) {
                break Err(err);
            }
            spin.pause();
        };
        self.recv_finish(e, &plan, &mut fab_req, result)
    }

    /// Where a receive may find its message.
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
        let src_world = match source {
            None => None,
            Some(s) => Some(*c.group().get(s as usize).ok_or_else(|| {
                CommError::InvalidArgument(format!(
                    "source {s} outside a communicator of {}",
                    c.group().len()
                ))
            })?),
        };
        let fabric_members = match src_world {
            Some(w) => e.route(w) == Route::Fabric,
            None => c.group().iter().any(|&w| e.route(w) == Route::Fabric),
        };
        let shm_source = match src_world {
            Some(w) => match e.route(w) {
                Route::Shm(l) => Some(Some(l)),
                _ => None,
            },
            None => e.has_shm().then_some(None),
        };
        let (wire_tag, ignore) = user_match(c.context(), tag);
        Ok(RecvPlan {
            ctx: c.context(),
            tag,
            src_world,
            fabric_members,
            shm_source,
            self_allowed: src_world.is_none_or(|w| w == e.rank()),
            wire_tag,
            ignore,
            wildcard: source.is_none(),
        })
    }

    /// One attempt at a receive: `Some` once it finished. A fabric receive posted into
    /// `buf` is kept in `fab_req` between attempts.
    pub(crate) fn recv_step(
        &self,
        e: &mut Engine,
        plan: &RecvPlan,
        fab_req: &mut Option<Request>,
        buf: &mut [u8],
    ) -> Option<Result<Status, CommError>> {
        if plan.self_allowed {
            let hit = e
                .self_queue_mut()
                .iter()
                .position(|m| m.ctx == plan.ctx && plan.tag.is_none_or(|t| t == m.tag));
            if let Some(i) = hit {
                // A fabric receive must not take a second message for this request.
                if let Some(done) = self.withdraw_fabric(e, fab_req) {
                    return Some(done);
                }
                let m = e.self_queue_mut().remove(i).expect("index from position");
                let me = e.comm(self.id).me();
                return Some(if m.data.len() > buf.len() {
                    Err(CommError::Truncated {
                        len: Some(m.data.len()),
                        capacity: buf.len(),
                    })
                } else {
                    buf[..m.data.len()].copy_from_slice(&m.data);
                    Ok(Status {
                        source: me,
                        tag: m.tag,
                        len: m.data.len(),
                    })
                });
            }
        }
        if let Some(local) = plan.shm_source {
            let shm = e.shm_mut().expect("shm source without endpoint");
            // With a fabric receive posted too, take the shm message only after that
            // receive is cancelled, or the message would be lost.
            let ready = if fab_req.is_some() {
                match shm.probe(local, plan.wire_tag, plan.ignore) {
                    Ok(found) => found.is_some(),
                    Err(err) => return Some(Err(shm_error(err, e))),
                }
            } else {
                true
            };
            if ready {
                if let Some(done) = self.withdraw_fabric(e, fab_req) {
                    return Some(done);
                }
                let shm = e.shm_mut().expect("shm source without endpoint");
                match shm.try_recv(local, plan.wire_tag, plan.ignore, buf) {
                    Ok(Some(r)) => {
                        let w = e.local_world(r.source);
                        let c = e.comm(self.id);
                        return Some(Ok(Status {
                            source: c.comm_rank(w).unwrap_or(u32::MAX),
                            tag: user_tag(r.tag),
                            len: r.len,
                        }));
                    }
                    Ok(None) => {}
                    Err(err) => return Some(Err(shm_error(err, e))),
                }
            }
        }
        if plan.fabric_members {
            let fab = e.fab_mut().expect("fabric members without messenger");
            if fab_req.is_none() {
                // SAFETY: the caller keeps `buf` borrowed until the receive completes or
                // is cancelled (`recv_finish`, or the request's drop), and cancel waits
                // for libfabric to release the buffer.
                match unsafe { fab.irecv(plan.src_world, plan.wire_tag, plan.ignore, buf) } {
                    Ok(req) => *fab_req = Some(req),
                    Err(err) => return Some(Err(fabric_error(err, e))),
                }
            }
            let fab = e.fab_mut().expect("fabric members without messenger");
            match fab.test(fab_req.expect("posted above")) {
                Ok(Some(done)) => {
                    *fab_req = None;
                    return Some(Ok(self.status_of_fabric(e, done)));
                }
                Ok(None) => {}
                Err(err) => {
                    *fab_req = None;
                    return Some(Err(fabric_error(err, e)));
                }
            }
        }
        None
    }

    /// Cancels the fabric receive of `fab_req`, if one is posted: `Some` with its
    /// message when it landed before the cancel (it must be delivered), or its error.
    fn withdraw_fabric(
        &self,
        e: &mut Engine,
        fab_req: &mut Option<Request>,
    ) -> Option<Result<Status, CommError>> {
        let req = fab_req.take()?;
        let fab = e.fab_mut().expect("posted without messenger");
        match fab.cancel(req) {
            Ok(Some(done)) => Some(Ok(self.status_of_fabric(e, done))),
            Ok(None) => None,
            Err(err) => Some(Err(fabric_error(err, e))),
        }
    }

    /// Ends a receive: a fabric receive still posted is cancelled (its message, if it
    /// landed meanwhile, is delivered instead of `result`); transport errors become the
    /// engine's verdict on the source when it has one.
    pub(crate) fn recv_finish(
        &self,
        e: &mut Engine,
        plan: &RecvPlan,
        fab_req: &mut Option<Request>,
        result: Result<Status, CommError>,
    ) -> Result<Status, CommError> {
        // Receives that find their message at once still let the engine run now and
        // then (heartbeats, failure reports).
        e.tick();
        if let Some(Ok(landed)) = self.withdraw_fabric(e, fab_req) {
            return Ok(landed);
        }
        match result {
            Err(err) if err.is_transport() => Err(plan
                .src_world
                .and_then(|w| self.interrupted(e, Some(w), false))
                .unwrap_or(err)),
            other => other,
        }
    }

    fn status_of_fabric(&self, e: &Engine, done: Completion) -> Status {
        let c = e.comm(self.id);
        Status {
            source: c.comm_rank(done.source).unwrap_or(u32::MAX),
            tag: user_tag(done.tag),
            len: done.len,
        }
    }
}
