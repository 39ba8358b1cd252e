//! The engine's point-to-point half: receives posted in the process's matcher
//! (`matching.rs`), messages delivered into it (self sends, the shm endpoint's
//! arrivals), matched payloads moved into the receives' buffers.

use std::sync::Arc;

use steadfast_matching::{Envelope, Match};
use steadfast_shm::{Arrival, ArrivalData, ShmError};

use super::{Engine, DRAIN_MAX};
use crate::world::matching::{
    Delivery, Got, Outcome, Payload, Placement, Posting, RecvFailure, RecvKey, SyncToken,
};
use crate::world::tags::{sync_seq, user_tag, CONTEXT_MASK, CONTROL, USER_TAG_BITS};

/// A blocking receive from one shared-memory peer that waits without being posted in
/// the matcher (`Comm::recv`'s direct path): while its context is quiet
/// (`Matching::is_quiet`: no receive posted, no message waiting or held), the first
/// message from `local` on `ctx` that fits `tag` is the one a posted receive would get,
/// so the drain copies it straight into `buf` ([`Engine::drain_direct`]). That skips
/// the matcher's bookkeeping (post, placement, withdrawal, outcome slot) on the
/// latency path. The caller checks the context is still quiet at every hold of the
/// engine, and posts the receive otherwise.
pub(crate) struct DirectRecv {
    /// The matching context.
    pub ctx: u32,
    /// The source's index on this node (its ring).
    pub local: u32,
    /// The source's world rank.
    pub world: u32,
    /// The source's rank in the communicator (the status).
    pub rank: u32,
    /// The tag asked for (`None`: any).
    pub tag: Option<u32>,
    /// The receive buffer, valid for writes of `cap` bytes while the receive waits.
    pub buf: *mut u8,
    /// Its capacity.
    pub cap: usize,
}

impl DirectRecv {
    /// Whether a user message from ring `src` on context `ctx` with wire tag `tag` is
    /// this receive's.
    #[inline]
    fn fits(&self, src: u32, ctx: u32, tag: u64) -> bool {
        src == self.local && ctx == self.ctx && self.tag.is_none_or(|t| t == user_tag(tag))
    }
}

impl Engine {
    /// Posts a receive on context `ctx` (see `Matching::post`); a waiting message that
    /// fits is moved into `buf` now.
    #[inline]
    pub fn post_recv(
        &mut self,
        ctx: u64,
        source: Option<u32>,
        tag: Option<u32>,
        buf: *mut u8,
        cap: usize,
    ) -> RecvKey {
        match self.matching.post(ctx, source, tag, buf, cap) {
            Posting::Slot(key) => key,
            Posting::Matched(m) => {
                let key = m.recv;
                self.complete(m);
                key
            }
        }
    }

    /// Whether a receive on context `ctx` may wait unposted ([`DirectRecv`]).
    #[inline]
    pub fn recv_quiet(&self, ctx: u64) -> bool {
        self.matching.is_quiet(ctx)
    }

    /// The outcome of a posted receive once complete (its slot is freed then).
    pub fn recv_outcome(&mut self, key: RecvKey) -> Option<Outcome> {
        if self.fab.is_some() {
            // Only a fabric read leaves a matched receive in progress.
            self.pull_outcome(key);
        }
        self.matching.take(key)
    }

    /// Cancels a posted receive: `None` when withdrawn, else its outcome (a fabric read
    /// into its buffer is ended first).
    pub fn cancel_recv(&mut self, key: RecvKey) -> Option<Outcome> {
        if self.fab.is_some() {
            self.cancel_pull(key);
        }
        self.matching.cancel(key)
    }

    /// Whether a posted wildcard receive should report a pending failure.
    pub fn recv_failure_pending(&self, key: RecvKey) -> bool {
        self.matching.failure_pending(key)
    }

    /// `MPI_Iprobe` over the self and shm messages of context `ctx`.
    pub fn probe(
        &self,
        ctx: u64,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<Option<Got>, steadfast_matching::MatchError> {
        self.matching.probe(ctx, source, tag)
    }

    /// `MPI_Improbe`: takes the earliest self or shm message of `ctx` that fits out of
    /// the matcher (a synchronous sender is answered: the message is matched); receive
    /// it with [`Engine::receive_taken`] or give it back with [`Engine::release_taken`].
    pub fn take_envelope(
        &mut self,
        ctx: u64,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<Option<Envelope<Payload>>, steadfast_matching::MatchError> {
        let env = self.matching.mprobe(ctx, source, tag)?;
        if let Some(t) = env.as_ref().and_then(|e| e.payload.sync()) {
            self.sync_matched(t);
        }
        Ok(env)
    }

    /// Moves a message taken by [`Engine::take_envelope`] into `buf`.
    pub fn receive_taken(&mut self, env: Envelope<Payload>, buf: &mut [u8]) -> Outcome {
        let got = Got {
            source: env.source.0,
            tag: env.tag.0,
            len: env.len,
        };
        self.move_payload(
            env.payload,
            got,
            env.context.0,
            (buf.as_mut_ptr(), buf.len()),
        )
        .map(|()| got)
    }

    /// Lets go of a message taken by [`Engine::take_envelope`] and never received.
    pub fn release_taken(&mut self, env: Envelope<Payload>) {
        self.release(env.payload);
    }

    /// A message to this process itself, delivered at once; `sync_seq` is a
    /// synchronous send's sequence number.
    #[inline]
    pub fn send_to_self(&mut self, ctx: u64, tag: u32, data: &[u8], sync_seq: Option<u32>) {
        let sync = sync_seq.map(|seq| SyncToken {
            world: self.rank,
            seq,
        });
        let d = self.matching.deliver(
            ctx as u32,
            self.rank,
            tag,
            data.len(),
            Payload::Bytes(data.to_vec(), sync),
        );
        self.handle_delivery(d);
    }

    pub(super) fn handle_delivery(&mut self, d: Delivery) {
        match d {
            Delivery::Matched(m) => self.complete(m),
            Delivery::Kept => {}
            Delivery::Dropped(p) => self.release(p),
        }
    }

    /// Moves a matched message into its receive's buffer and records the outcome.
    pub(super) fn complete(&mut self, m: Match<RecvKey, Payload>) {
        let key = m.recv;
        let env = m.message;
        // The receive has started: a synchronous sender may complete.
        if let Some(t) = env.payload.sync() {
            self.sync_matched(t);
        }
        let (ptr, cap) = self.matching.buffer(key);
        let got = Got {
            source: env.source.0,
            tag: env.tag.0,
            len: env.len,
        };
        if let Payload::FabricPull { message, .. } = env.payload {
            // The read runs while the caller waits; a truncated message is refused by
            // the messenger, which tells its sender.
            return self.start_fabric_pull(key, message, got, env.context.0, (ptr, cap));
        }
        let outcome = self
            .move_payload(env.payload, got, env.context.0, (ptr, cap))
            .map(|()| got);
        self.matching.finish(key, outcome);
    }

    /// Copies or pulls the payload of the message `got` (the sender's comm rank, the
    /// tag, `got.len` bytes), sent on context `ctx`, into `(ptr, cap)`, the buffer of a
    /// receive: valid for writes of `cap` bytes, no reference to it alive (the
    /// receive's contract, `matching.rs`).
    pub(super) fn move_payload(
        &mut self,
        payload: Payload,
        got: Got,
        ctx: u32,
        (ptr, cap): (*mut u8, usize),
    ) -> Result<(), RecvFailure> {
        let (len, source) = (got.len, got.source);
        let truncated = RecvFailure::Truncated { got, capacity: cap };
        match payload {
            Payload::Placed {
                truncated: true, ..
            } => Err(truncated),
            Payload::Placed {
                truncated: false, ..
            } => Ok(()),
            Payload::Bytes(..) | Payload::ShmPull { .. } | Payload::FabricPull { .. }
                if len > cap =>
            {
                self.release(payload);
                Err(truncated)
            }
            Payload::Bytes(v, _) => {
                // SAFETY: `ptr` is valid for `cap >= v.len()` bytes (contract above); `v`
                // is the message's own memory, so the two do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), ptr, v.len()) };
                Ok(())
            }
            Payload::FabricPull { message, .. } => self.pull_now(message, (ptr, cap), got, ctx),
            Payload::ShmPull {
                local,
                wire_tag,
                ticket,
                ..
            } => {
                let Some(shm) = self.shm.as_mut() else {
                    return Err(RecvFailure::Freed);
                };
                let buf: &mut [u8] = if cap == 0 {
                    &mut []
                } else {
                    // SAFETY: the contract above; the slice lives for this call only.
                    unsafe { std::slice::from_raw_parts_mut(ptr, cap) }
                };
                match shm.pull(local, wire_tag, ticket, buf) {
                    Ok(_) => Ok(()),
                    Err(ShmError::Truncated { len, capacity }) => Err(RecvFailure::Truncated {
                        got: Got { len, ..got },
                        capacity,
                    }),
                    Err(ShmError::PeerDead(l)) => {
                        let w = self.local_world[l as usize];
                        self.control.report_failure(w, "process exited".into());
                        Err(RecvFailure::ProcFailed(source))
                    }
                    Err(e) => Err(RecvFailure::Transport(Arc::new(e))),
                }
            }
        }
    }

    /// Lets go of a message that will never be received (a large shm sender is
    /// answered, so its send completes).
    pub(super) fn release(&mut self, p: Payload) {
        match p {
            Payload::ShmPull { local, ticket, .. } => {
                if let Some(shm) = self.shm.as_mut() {
                    if let Err(e) = shm.refuse(local, ticket) {
                        log::debug!("releasing a large message from local rank {local}: {e}");
                    }
                }
            }
            Payload::FabricPull { message, .. } => self.decline_fabric(message),
            Payload::Placed { .. } | Payload::Bytes(..) => {}
        }
    }

    pub(super) fn release_dropped(&mut self) {
        for p in self.matching.take_dropped() {
            self.release(p);
        }
    }

    pub(super) fn retry_held(&mut self) {
        let mut out = Vec::new();
        self.matching.retry_held(&mut out);
        for d in out {
            self.handle_delivery(d);
        }
    }

    /// Takes what arrived in the shm rings and the fabric's software-matching pool (at
    /// most [`DRAIN_MAX`] each): control messages go to the control plane, user
    /// messages to the matcher, straight into the buffer of the receive they complete
    /// when one is posted. Returns how many.
    pub fn drain_arrivals(&mut self) -> usize {
        self.drain(false)
    }

    /// As [`drain_arrivals`](Self::drain_arrivals), for a receive waiting for its
    /// message: stops once a message was copied into a posted receive (most likely the
    /// one waited for), so that it returns at once; the rest waits for the next call.
    /// A blocking receive's latency and a stream's rate both gain (measured: 8 B
    /// one-way 0.01 µs less, 8 B message rate 7.5 to 8.4 million a second).
    pub fn drain_for_receive(&mut self) -> usize {
        self.receive_drains = self.receive_drains.wrapping_add(1);
        self.drain(true)
    }

    fn drain(&mut self, stop_at_placed: bool) -> usize {
        if self.draining {
            return 0;
        }
        self.draining = true;
        let (mut taken, control, _) = self.drain_shm(stop_at_placed, None);
        if self.fab.is_some() {
            taken += self.drain_fabric(stop_at_placed);
        }
        self.draining = false;
        if control {
            self.drive();
        }
        taken
    }

    /// A drain for the unposted receive `d` ([`DirectRecv`]): its outcome once its
    /// message came (copied into its buffer). Everything else that arrives is handled
    /// as [`drain_for_receive`](Self::drain_for_receive) does.
    pub(crate) fn drain_direct(&mut self, d: &DirectRecv) -> Option<Outcome> {
        if self.draining {
            return None;
        }
        // Counted as a receive's drain: `tick` then leaves the rings to it.
        self.receive_drains = self.receive_drains.wrapping_add(1);
        self.draining = true;
        let (_, control, got) = self.drain_shm(true, Some(d));
        if got.is_none() && self.fab.is_some() {
            self.drain_fabric(true);
        }
        self.draining = false;
        if control {
            self.drive();
        }
        got
    }

    /// Waits up to `spins` polls of `d`'s ring for something to arrive there (see
    /// `Endpoint::await_from`); whether something did.
    #[inline]
    pub(crate) fn await_direct(&mut self, d: &DirectRecv, spins: u32) -> bool {
        self.shm
            .as_mut()
            .is_some_and(|s| s.await_from(d.local, spins))
    }

    /// The shm half of [`Engine::drain_arrivals`] (`draining` is set): how many,
    /// whether control messages came, and the outcome of `direct` if its message came
    /// (the drain stops there); `stop_at_placed` as in `drain_for_receive`.
    ///
    /// Inlined into both drains: returned through memory, its tuple was written field
    /// by field and read back 16 bytes at a time, a store-forwarding stall per message
    /// (`Comm::recv` 37% of a receiving rank's samples at 8 B, 13% inlined).
    #[inline(always)]
    fn drain_shm(
        &mut self,
        stop_at_placed: bool,
        mut direct: Option<&DirectRecv>,
    ) -> (usize, bool, Option<Outcome>) {
        if self.shm.is_none() {
            return (0, false, None);
        }
        let mut taken = 0;
        let mut control = false;
        while taken < DRAIN_MAX && !self.matching.held_full() {
            let Some(shm) = self.shm.as_mut() else { break };
            let local_world = &self.local_world;
            let matching = &self.matching;
            let ctrl = (self.control_buf.as_mut_ptr(), self.control_buf.len());
            // The receive the last user message offered was placed into, if any (the
            // arrival returned is that message's when it comes back `Placed`).
            let mut placed: Option<Placement> = None;
            // Whether the last user message offered went to `direct`'s buffer.
            let mut to_direct = false;
            let mut choose = |src: u32, tag: u64, _len: usize| {
                placed = None;
                to_direct = false;
                if tag & CONTROL != 0 {
                    return Some(ctrl);
                }
                if Engine::is_sync_answer(tag) {
                    return None;
                }
                let ctx = ((tag >> USER_TAG_BITS) & CONTEXT_MASK) as u32;
                if let Some(d) = direct {
                    if d.fits(src, ctx, tag) {
                        to_direct = true;
                        return Some((d.buf, d.cap));
                    }
                }
                let w = *local_world.get(src as usize)?;
                let (ptr, cap, p) = matching.placement(ctx, w, user_tag(tag))?;
                placed = Some(p);
                Some((ptr, cap))
            };
            // SAFETY: a destination is the engine's control buffer (no reference to it
            // lives during the call) or a posted receive's buffer (valid for its
            // capacity while posted, `matching.rs`).
            let arrival = match unsafe { shm.next_arrival(&mut choose) } {
                Ok(Some(a)) => a,
                Ok(None) => break,
                Err(e) => {
                    log::warn!("shared-memory arrivals: {e}");
                    self.stats.control_malformed += 1;
                    break;
                }
            };
            taken += 1;
            if let (true, ArrivalData::Placed { truncated }, Some(d)) =
                (to_direct, &arrival.data, direct)
            {
                return (
                    taken,
                    control,
                    Some(self.complete_direct(d, &arrival, *truncated)),
                );
            }
            if Engine::is_sync_answer(arrival.tag) {
                let w = self.local_world[arrival.source as usize];
                self.sync_answer_arrived(w, sync_seq(arrival.tag));
            } else if arrival.tag & CONTROL != 0 {
                control = true;
                self.on_control_arrival(arrival);
            } else if let (ArrivalData::Placed { truncated }, Some(p)) = (&arrival.data, placed) {
                self.complete_placed(p, &arrival, *truncated);
                if stop_at_placed {
                    break;
                }
            } else {
                // A message from the direct receive's peer on its context that waits
                // in the matcher (an RTS: a large message is never copied by the
                // drain, even one that fits) ends the quiet the direct receive relies
                // on: a later message from that peer must not overtake it into the
                // receive's buffer (MPI 4.1 §3.5, non-overtaking). The rest of this
                // drain goes to the matcher; the caller finds the context no longer
                // quiet and posts the receive, which takes the waiting message first.
                if let Some(d) = direct {
                    let ctx = ((arrival.tag >> USER_TAG_BITS) & CONTEXT_MASK) as u32;
                    if arrival.source == d.local && ctx == d.ctx {
                        direct = None;
                    }
                }
                self.on_user_arrival(arrival);
            }
        }
        (taken, control, None)
    }

    /// The outcome of `d`, whose message `a` was just copied into its buffer.
    fn complete_direct(&mut self, d: &DirectRecv, a: &Arrival, truncated: bool) -> Outcome {
        // The receive has started: a synchronous sender may complete.
        if let Some(t) = Engine::sync_token(d.world, a.tag) {
            self.sync_matched(t);
        }
        let got = Got {
            source: d.rank,
            tag: user_tag(a.tag),
            len: a.len,
        };
        if truncated {
            Err(RecvFailure::Truncated {
                got,
                capacity: d.cap,
            })
        } else {
            Ok(got)
        }
    }

    pub(super) fn on_control_arrival(&mut self, a: Arrival) {
        let from = self.local_world[a.source as usize];
        let now = self.now_ns();
        match a.data {
            ArrivalData::Placed { truncated: false } => {
                self.control
                    .on_control(from, &self.control_buf[..a.len], now);
            }
            ArrivalData::Bytes(v) => self.control.on_control(from, &v, now),
            ArrivalData::Pull(t) => {
                let shm = self.shm.as_mut().expect("arrived through shm");
                match shm.pull(a.source, a.tag, t, &mut self.control_buf) {
                    Ok(r) => self
                        .control
                        .on_control(from, &self.control_buf[..r.len], now),
                    Err(_) => self.stats.control_malformed += 1,
                }
            }
            ArrivalData::Placed { truncated: true } => self.stats.control_malformed += 1,
        }
    }

    /// Completes the receive a user message was just copied into (the latency path:
    /// no envelope, no second search of the matcher).
    fn complete_placed(&mut self, p: Placement, a: &Arrival, truncated: bool) {
        let w = self.local_world[a.source as usize];
        // The receive has started: a synchronous sender may complete.
        if let Some(t) = Engine::sync_token(w, a.tag) {
            self.sync_matched(t);
        }
        let got = Got {
            source: p.source,
            tag: user_tag(a.tag),
            len: a.len,
        };
        let outcome = if truncated {
            Err(RecvFailure::Truncated {
                got,
                capacity: p.cap,
            })
        } else {
            Ok(got)
        };
        self.matching.finish_placed(p, outcome);
    }

    pub(super) fn on_user_arrival(&mut self, a: Arrival) {
        let w = self.local_world[a.source as usize];
        let ctx = ((a.tag >> USER_TAG_BITS) & CONTEXT_MASK) as u32;
        let sync = Engine::sync_token(w, a.tag);
        let payload = match a.data {
            ArrivalData::Placed { truncated } => Payload::Placed { truncated, sync },
            ArrivalData::Bytes(v) => Payload::Bytes(v, sync),
            ArrivalData::Pull(ticket) => Payload::ShmPull {
                local: a.source,
                wire_tag: a.tag,
                ticket,
                sync,
            },
        };
        let placed = matches!(payload, Payload::Placed { .. });
        let d = self
            .matching
            .deliver(ctx, w, user_tag(a.tag), a.len, payload);
        if placed && !matches!(d, Delivery::Matched(_)) {
            // `placement` named the receive and nothing ran in between: cannot happen.
            log::error!("matching: a message placed into a receive did not match it");
        }
        self.handle_delivery(d);
    }
}
