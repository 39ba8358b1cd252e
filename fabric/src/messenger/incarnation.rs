//! Peers that are restarted in place (`docs/restart.md`): replacing a dead incarnation's
//! address by its successor's, fencing what the dead one sent, and the admission
//! handshake that keeps a restarted process's messages from reaching a peer before
//! that peer has fenced.
//!
//! Fencing works with three pieces:
//! - every user message's tag carries its sender's incarnation bit (generation modulo 2,
//!   `tags.rs`); a receive from a specific source matches only the bit of the incarnation
//!   this messenger knows, a wildcard receive whose message turns out to come from
//!   another incarnation drops it and is posted again ([`Messenger::is_stale`]);
//! - at a replacement, a *drain* receive is posted for the replaced incarnation's bit
//!   and source: it takes whatever that incarnation left in the provider's queues (or
//!   sends late), is posted again at each message, and is cancelled at the next
//!   replacement of the peer, before the incarnation after next (same bit) is admitted;
//!   when a replacement skips an incarnation (the new one has the dead one's bit), the
//!   drain runs for a short while before the admission instead;
//! - a restarted messenger ([`MessengerConfig::generation`](super::MessengerConfig) > 0)
//!   sends user messages to a peer only once that peer has told it (an `Admit` control
//!   message) that it admitted this incarnation: before then, every message of this
//!   peer's id the peer receives is the dead incarnation's.

use std::time::{Duration, Instant};

use crate::address::PeerAddress;
use crate::error::{Error, Result};
use crate::PeerId;
use steadfast_os::ProcessWatch;

use super::slots::{Op, Outcome, Staging, BOUNCE_LEN};
use super::tags;
use super::waiter::Waiter;
use super::wire::{Control, ControlOp, FinStatus};
use super::{Messenger, Peer, MAX_PEER_ID};

/// How long a drain runs before an admission whose incarnation has the dead one's bit.
const SAME_BIT_DRAIN: Duration = Duration::from_millis(20);
/// Admissions by peers not added yet kept at most.
const MAX_EARLY_ADMITS: usize = 4096;

impl Messenger {
    /// Replaces peer `id` by a newer incarnation of it (restart in place), from the new
    /// incarnation's exported address bytes: the old incarnation is marked dead (its
    /// operations fail with [`Error::PeerUnreachable`]) and removed from the address
    /// vector, what it sent and nobody received is drained from now on and never
    /// delivered, the new address is inserted and the new incarnation is told that it
    /// is admitted (it sends nothing to this process before). An unknown `id` is added.
    ///
    /// # Errors
    /// [`Error::MalformedAddress`] for bytes that are not an address of this provider;
    /// [`Error::InvalidArgument`] for an out-of-range id or an incarnation that is not
    /// newer than the known one; [`Error::Fabric`] when a receive or message cannot be
    /// posted; [`Error::Broken`] on a broken messenger.
    pub fn replace_peer(&mut self, id: PeerId, address: &[u8]) -> Result<()> {
        if self.broken {
            return Err(Self::broken_error());
        }
        if id > MAX_PEER_ID {
            return Err(Error::InvalidArgument(format!(
                "peer id {id} > {MAX_PEER_ID}"
            )));
        }
        let address = PeerAddress::from_bytes(address)?;
        address.check_compatible(&self.address, &self.info.provider_name())?;
        let old = self
            .peers
            .get(id as usize)
            .and_then(Option::as_ref)
            .map(|p| (p.generation, p.fi_addr, p.drain));
        let mut drain = None;
        if let Some((old_generation, old_addr, old_drain)) = old {
            if address.generation <= old_generation {
                return Err(Error::InvalidArgument(format!(
                    "incarnation {} of peer {id} is not newer than the known {old_generation}",
                    address.generation
                )));
            }
            self.mark_peer_dead(
                id,
                format!("replaced by incarnation {}", address.generation),
            );
            if let Some(index) = old_drain {
                self.cancel_drain(index);
            }
            let index = self.post_drain(id, old_generation)?;
            if tags::incarnation_bit(old_generation) == tags::incarnation_bit(address.generation) {
                // The new incarnation has the dead one's bit: drain before it may send.
                self.drain_for(SAME_BIT_DRAIN);
                self.cancel_drain(index);
            } else {
                drain = Some(index);
            }
            if let Err(e) = self._av.remove(old_addr) {
                log::warn!("steadfast-fabric: peer {id}'s replaced address stays in the address vector: {e}");
            }
        }
        self.install_peer(id, address, true, drain)?;
        self.admit(id)
    }

    /// Tells peer `id` that this process admits its known incarnation: it may send user
    /// messages here. [`replace_peer`](Self::replace_peer) does it; a restarted process
    /// does it for the peers it adds at its start (it is new: no older incarnation of
    /// theirs ever reached it), and a process does it again for a peer whose restart it
    /// learns of after it added that incarnation, since that peer may wait for it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unknown peer; [`Error::PeerUnreachable`] for a
    /// dead one; [`Error::Fabric`] when the message cannot be posted.
    pub fn admit(&mut self, id: PeerId) -> Result<()> {
        let generation = self
            .peer_generation(id)
            .ok_or_else(|| Error::InvalidArgument(format!("unknown peer {id}")))?;
        let admit = Control {
            op: ControlOp::Admit,
            status: FinStatus::Done,
            source: self.config.local_id,
            token: u64::from(generation),
        };
        self.send_control(id, admit)
    }

    /// The incarnation of peer `id` this messenger talks to, if `id` is a peer.
    pub fn peer_generation(&self, id: PeerId) -> Option<u32> {
        Some(self.peers.get(id as usize)?.as_ref()?.generation)
    }

    /// Inserts `address` for peer `id` (whatever was there is overwritten).
    pub(super) fn install_peer(
        &mut self,
        id: PeerId,
        address: PeerAddress,
        admitted: bool,
        drain: Option<u32>,
    ) -> Result<()> {
        let fi_addr = self._av.insert(&address.raw)?;
        let watch = (address.host == self.address.host).then(|| ProcessWatch::new(address.pid));
        if let (Some(rescue), Some(_)) = (&self.shm_rescue, &watch) {
            rescue.watch(address.pid);
        }
        let index = id as usize;
        if self.peers.len() <= index {
            self.peers.resize_with(index + 1, || None);
        }
        // An admission that came before the peer was added here.
        let early = self.early_admits.iter().position(|&p| p == id);
        let admitted = admitted || early.is_some();
        if let Some(i) = early {
            self.early_admits.swap_remove(i);
        }
        self.peers[index] = Some(Peer {
            fi_addr,
            generation: address.generation,
            admitted,
            drain,
            dead: None,
            watch,
            probing: false,
            exited_at: None,
        });
        Ok(())
    }

    /// Waits until `peer` has admitted this incarnation (at once on a first start), at
    /// most [`MessengerConfig::admission_timeout`](super::MessengerConfig) (or the
    /// operation timeout when shorter): then [`Error::NotAdmitted`].
    pub(super) fn wait_admitted(&mut self, peer: PeerId) -> Result<()> {
        let admitted = |m: &Self| {
            m.peers
                .get(peer as usize)
                .and_then(Option::as_ref)
                .is_none_or(|p| p.admitted)
        };
        if admitted(self) {
            return Ok(());
        }
        let mut waiter = Waiter::bounded(&self.config, self.config.admission_timeout);
        loop {
            self.peer_addr(peer)?;
            if admitted(self) {
                return Ok(());
            }
            self.poll_completions()?;
            if let Some(full) = waiter.liveness_due() {
                self.check_liveness(peer, full);
            }
            if let Some(after) = waiter.timed_out() {
                log::warn!(
                    "peer {peer} has not admitted incarnation {} of this process within {after:?}",
                    self.config.generation
                );
                return Err(Error::NotAdmitted {
                    peer,
                    generation: self.config.generation,
                    after,
                });
            }
            waiter.pause();
        }
    }

    /// An `Admit` control message: its sender admitted incarnation `token` of this
    /// process.
    pub(super) fn on_admit(&mut self, control: &Control) {
        if control.token != u64::from(self.config.generation) {
            return;
        }
        match self.peers.get_mut(control.source as usize) {
            Some(Some(p)) => p.admitted = true,
            // Not added yet (both ends starting at once): kept for `install_peer`.
            _ if self.early_admits.len() < MAX_EARLY_ADMITS
                && !self.early_admits.contains(&control.source) =>
            {
                self.early_admits.push(control.source);
            }
            _ => {}
        }
    }

    /// Whether a received message (its wire tag) comes from an incarnation of its
    /// sender other than the one this messenger talks to.
    pub(super) fn is_stale(&self, source: PeerId, wire_tag: u64) -> bool {
        self.peers
            .get(source as usize)
            .and_then(Option::as_ref)
            .is_some_and(|p| {
                tags::incarnation_bit(p.generation) != tags::sent_incarnation_bit(wire_tag)
            })
    }

    /// Posts a receive of slot `index` again after a dead incarnation's message matched
    /// it; on failure the receive fails.
    pub(super) fn repost_after_stale(&mut self, index: u32) {
        self.stats.fenced += 1;
        if let Some(mr) = self.slots.get_mut(index).mr.take() {
            self.cache.release(mr);
        }
        let (tag, ignore) = self.slots.get(index).posted_match;
        // SAFETY: the receive has not completed: its caller's buffer is still valid
        // and unused until it does (the contract of `start_recv`).
        if let Err(e) = unsafe { self.post_user_recv(index, tag, ignore) } {
            self.release_staging(index);
            self.finish(index, Outcome::Failed(e));
        }
    }

    /// The messenger's drain buffer (index in the staging pool, never on its free list).
    fn drain_buffer(&mut self) -> Result<u16> {
        if let Some(n) = self.drain_staging {
            return Ok(n);
        }
        let n = self.add_staging_buffer(self.eager_limit.clamp(BOUNCE_LEN, 1 << 20))?;
        self.drain_staging = Some(n);
        Ok(n)
    }

    /// Posts a drain receive for the incarnation bit of `generation` of `peer`.
    fn post_drain(&mut self, peer: PeerId, generation: u32) -> Result<u32> {
        let n = self.drain_buffer()?;
        let index = self.slots.take(Op::Drain, Some(peer))?;
        let slot = self.slots.get_mut(index);
        slot.detached = true;
        slot.staging = Staging::Pool(n);
        let (tag, ignore) = tags::drain_match(peer, generation);
        // SAFETY: the drain buffer belongs to the messenger and outlives its endpoint.
        if let Err(e) = unsafe { self.post_user_recv(index, tag, ignore) } {
            self.slots.get_mut(index).staging = Staging::Direct;
            self.slots.release(index);
            return Err(e);
        }
        Ok(index)
    }

    /// A drain receive ended (`cancelled`: by our cancel): posted again unless its
    /// cancel was asked for.
    pub(super) fn on_drain(&mut self, index: u32, cancelled: bool) {
        let slot = self.slots.get_mut(index);
        slot.posted = false;
        if !cancelled {
            self.stats.fenced += 1;
        }
        let stopping = cancelled || slot.pending_error.is_some();
        if !stopping {
            let (tag, ignore) = slot.posted_match;
            // SAFETY: as in `post_drain`.
            if unsafe { self.post_user_recv(index, tag, ignore) }.is_ok() {
                return;
            }
        }
        let peer = self.slots.get(index).peer;
        if let Some(Some(p)) = peer.and_then(|p| self.peers.get_mut(p as usize)) {
            if p.drain == Some(index) {
                p.drain = None;
            }
        }
        let slot = self.slots.get_mut(index);
        slot.staging = Staging::Direct;
        slot.pending_error = None;
        self.slots.release(index);
    }

    /// Progresses for `duration`, letting drains take what arrives.
    fn drain_for(&mut self, duration: Duration) {
        let end = Instant::now() + duration;
        while Instant::now() < end {
            if self.poll_completions().is_err() {
                return;
            }
            std::thread::yield_now();
        }
    }

    /// Cancels drain receive `index` and waits (bounded) until the provider let it go,
    /// so that nothing of the next incarnation can match it.
    fn cancel_drain(&mut self, index: u32) {
        let generation = self.slots.get(index).generation;
        let current = |m: &Self| {
            let s = m.slots.get(index);
            s.generation == generation && s.op == Op::Drain
        };
        if !current(self) {
            return;
        }
        self.slots.get_mut(index).pending_error = Some(Error::Cancelled);
        if !self.slots.get(index).posted {
            return self.on_drain(index, true);
        }
        let ctx = self.slots.context(index);
        self.endpoint.cancel(ctx);
        let mut waiter = Waiter::grace();
        while current(self) {
            if self.poll_completions().is_err() {
                return;
            }
            if waiter.timed_out().is_some() {
                log::warn!(
                    "steadfast-fabric: a drain receive was not cancelled in time; it may take a message of the peer's next incarnation"
                );
                return;
            }
            waiter.pause();
        }
    }
}
