//! The control plane of one process: how failures are learnt, applied and agreed on,
//! composed from the protocol engines of this crate, with no I/O.
//!
//! It owns what the runtime used to keep beside its transports: the set of failed
//! ranks and why each failed, the heartbeat [`Detector`], the world's suspicion
//! broadcast, and every communicator's fault-tolerance state ([`CommFt`]: ERA or the
//! two-party agreement, the revoke broadcaster, decisions, acknowledgements). Control
//! messages for a communicator that does not exist here yet are kept (a bounded number)
//! and replayed when it is added.
//!
//! # Call order
//! Inputs: [`report_failure`](ControlPlane::report_failure) (any detector's report:
//! the launcher, a pid, a transport error), [`on_control`](ControlPlane::on_control) (a
//! control message from another process), [`tick`](ControlPlane::tick) (time),
//! [`apply_failures`](ControlPlane::apply_failures) (reported failures take effect),
//! and the user's operations ([`add_comm`](ControlPlane::add_comm),
//! [`start_agreement`](ControlPlane::start_agreement),
//! [`revoke`](ControlPlane::revoke)). After any input the caller drains
//! [`next_output`](ControlPlane::next_output) until it returns `None`: messages to send
//! (their bytes from [`bytes`](ControlPlane::bytes)) and failures to tell the
//! transports. A send that fails is reported back with `report_failure`. Time is a
//! number of nanoseconds the caller chooses (the runtime: since it started; the
//! simulator: virtual time).
//!
//! The runtime drives it over real transports (`src/world/engine.rs`); the simulator
//! (`sim::control`, `sim::intercomm`, `sim::concurrent`, which depend on this module,
//! not the reverse) drives many of them over a simulated network with crashes and
//! checks that every survivor decides the same. [`intercomm`] holds the uniform
//! inter-communicator creation, a state machine over a communicator's agreements that
//! both drive the same way.

mod comm;
pub mod intercomm;
pub mod two_party;

pub use comm::CommFt;

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

use crate::bcast::{BcastAction, Broadcaster, Topic};
use crate::detector::{Detector, DetectorAction};
use crate::wire::{peek_header, EraMsg, FtMsg, Kind};
use crate::{CommId, CommKey, Epoch, EraAction, Rank, RankSet, Seq};
use two_party::Step;

/// Hashes integer keys that are already well spread (communicator ids are hashes;
/// sequence numbers are dense): the key itself, mixed once. SipHash cost ~8% of an
/// agreement's time in the runtime.
#[derive(Default, Clone, Copy, Debug)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by ids, hashed with [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The key of the world-wide detector and suspicion broadcast.
pub const FT_KEY: CommKey = CommKey {
    comm: CommId(0),
    epoch: Epoch(0),
};

/// Control messages kept for communicators not created here yet.
pub const EARLY_MAX: usize = 4096;
/// Removed communicators remembered, so that their late control messages (a revoke's
/// forwards, an agreement's stragglers) are dropped rather than held as early ones.
/// Communicator ids are never reused, and stragglers come soon after the removal.
pub const REMOVED_REMEMBERED: usize = 4096;

/// Why a rank is considered failed, and when this process learnt it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureNote {
    /// World rank.
    pub rank: u32,
    /// Who told us.
    pub how: String,
    /// When (the caller's time, in nanoseconds).
    pub at_ns: u64,
}

/// What the caller must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Send the control message `bytes(range)` to world rank `to`.
    Send {
        /// World rank.
        to: u32,
        /// Where its bytes are in [`ControlPlane::bytes`].
        range: Range<usize>,
    },
    /// A failure was just reported (not applied yet): a transport that keeps sends to
    /// the dead in back-pressure should let go of them now.
    Reported {
        /// World rank.
        rank: u32,
        /// Who told us.
        how: String,
    },
    /// A failure took effect: the transports should treat the rank as dead.
    Failed {
        /// World rank.
        rank: u32,
        /// Who told us.
        how: String,
    },
    /// Communicator `comm` was just revoked here (once per communicator): the runtime
    /// fails its pending receives and drops its waiting messages.
    Revoked {
        /// The communicator.
        comm: CommId,
    },
}

/// Counters of control traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControlStats {
    /// Control messages handed out to send.
    pub sent: u64,
    /// Control messages received.
    pub received: u64,
    /// Control messages dropped as malformed (or beyond the early-message bound).
    pub malformed: u64,
    /// Control messages dropped because their communicator was removed here.
    pub stale: u64,
}

/// What the control plane hands out: the outputs in order and the bytes of the
/// messages among them.
#[derive(Debug, Default)]
struct Outbox {
    outputs: VecDeque<Output>,
    bytes: Vec<u8>,
    sent: u64,
}

impl Outbox {
    /// Queues a control message to world rank `to` (never to the known dead).
    fn send(&mut self, failed: &RankSet, to: u32, encode: impl FnOnce(&mut Vec<u8>)) {
        if failed.contains(Rank(to)) {
            return;
        }
        let start = self.bytes.len();
        encode(&mut self.bytes);
        self.sent += 1;
        self.outputs.push_back(Output::Send {
            to,
            range: start..self.bytes.len(),
        });
    }
}

/// Failures reported and not applied yet.
#[derive(Debug, Default)]
struct Reports {
    pending: VecDeque<(u32, String)>,
}

impl Reports {
    /// The one entry point of a failure report (see [`ControlPlane::report_failure`]).
    fn report(&mut self, out: &mut Outbox, failed: &RankSet, size: u32, w: u32, how: String) {
        if w < size && !failed.contains(Rank(w)) {
            out.outputs.push_back(Output::Reported {
                rank: w,
                how: how.clone(),
            });
            self.pending.push_back((w, how));
        }
    }
}

/// The control plane of one process (see the module doc for the call order).
#[derive(Debug)]
pub struct ControlPlane {
    me: u32,
    size: u32,
    failed: RankSet,
    /// Each world rank's current incarnation as known here (restarts in place).
    generations: Vec<u32>,
    notes: Vec<FailureNote>,
    reports: Reports,
    detector: Detector,
    world_bcast: Broadcaster,
    comms: IdMap<CommId, CommFt>,
    early: IdMap<CommId, Vec<(u32, Vec<u8>)>>,
    early_count: usize,
    /// The most recently removed communicators, oldest first (at most
    /// [`REMOVED_REMEMBERED`]), and the same as a set.
    removed: VecDeque<CommId>,
    removed_set: IdMap<CommId, ()>,
    excluded: bool,
    era_out: Vec<EraAction>,
    bcast_out: Vec<BcastAction>,
    det_out: Vec<DetectorAction>,
    two_steps: Vec<Step>,
    out: Outbox,
    stats: ControlStats,
}

impl ControlPlane {
    /// The control plane of world rank `me` of `size`, watching peers with `detector`
    /// (started by [`start`](Self::start)).
    pub fn new(me: u32, size: u32, detector: Detector) -> Self {
        ControlPlane {
            me,
            size,
            failed: RankSet::new(),
            generations: vec![0; size as usize],
            notes: Vec::new(),
            reports: Reports::default(),
            detector,
            world_bcast: Broadcaster::new(Rank(me), size),
            comms: IdMap::default(),
            early: IdMap::default(),
            early_count: 0,
            removed: VecDeque::new(),
            removed_set: IdMap::default(),
            excluded: false,
            era_out: Vec::new(),
            bcast_out: Vec::new(),
            det_out: Vec::new(),
            two_steps: Vec::new(),
            out: Outbox::default(),
            stats: ControlStats::default(),
        }
    }

    /// Starts the failure detector (once every peer can be reached).
    pub fn start(&mut self, now: u64) {
        let mut out = std::mem::take(&mut self.det_out);
        self.detector.start(now, &mut out);
        self.det_out = out;
        self.run_detector_actions();
    }

    /// When [`tick`](Self::tick) next has something to do.
    pub fn next_deadline(&self) -> u64 {
        self.detector.next_deadline()
    }

    /// Lets time pass: heartbeats to send, peers that missed theirs.
    pub fn tick(&mut self, now: u64) {
        if now >= self.detector.next_deadline() {
            let mut out = std::mem::take(&mut self.det_out);
            self.detector.tick(now, &mut out);
            self.det_out = out;
            self.run_detector_actions();
        }
    }

    /// The next thing to do, or `None` when there is nothing left (the byte buffer is
    /// then reused).
    pub fn next_output(&mut self) -> Option<Output> {
        let o = self.out.outputs.pop_front();
        if o.is_none() {
            self.out.bytes.clear();
        }
        o
    }

    /// The bytes of an [`Output::Send`].
    pub fn bytes(&self, range: Range<usize>) -> &[u8] {
        &self.out.bytes[range]
    }

    /// World ranks known failed.
    pub fn failed(&self) -> &RankSet {
        &self.failed
    }

    /// Whether world rank `w` is known failed.
    pub fn is_failed(&self, w: u32) -> bool {
        self.failed.contains(Rank(w))
    }

    /// Why and when each failure was learnt, in order.
    pub fn notes(&self) -> &[FailureNote] {
        &self.notes
    }

    /// Whether the others declared this process failed (it must stop).
    pub fn excluded(&self) -> bool {
        self.excluded
    }

    /// The watched world rank, its silence at `now` and the detection timeout (ns).
    pub fn watched_silence(&self, now: u64) -> Option<(u32, u64, u64)> {
        let (w, silent) = self.detector.silence(now)?;
        Some((w.0, silent, self.detector.timeout_ns()))
    }

    /// Other evidence that the watched world rank `w` is alive though silent counts as
    /// its heartbeat, for at most `max_ns` of silence in a row (`Detector::vouch`).
    pub fn vouch_for_watched(&mut self, w: u32, now: u64, max_ns: u64) -> bool {
        self.detector.vouch(Rank(w), now, max_ns)
    }

    /// Traffic counters.
    pub fn stats(&self) -> ControlStats {
        ControlStats {
            sent: self.out.sent,
            ..self.stats
        }
    }

    /// The fault-tolerance state of communicator `id`.
    pub fn comm(&self, id: CommId) -> Option<&CommFt> {
        self.comms.get(&id)
    }

    /// The fault-tolerance state of communicator `id`, to acknowledge failures, take
    /// decisions and derive children.
    pub fn comm_mut(&mut self, id: CommId) -> Option<&mut CommFt> {
        self.comms.get_mut(&id)
    }

    /// A failure of world rank `w` learnt from `how`; it takes effect at the next
    /// [`apply_failures`](Self::apply_failures) (an [`Output::Reported`] now). Reports
    /// of a rank already failed, or out of range, are ignored.
    pub fn report_failure(&mut self, w: u32, how: String) {
        self.reports
            .report(&mut self.out, &self.failed, self.size, w, how);
    }

    /// Whether some reported failure waits for [`apply_failures`](Self::apply_failures)
    /// (a caller with nothing to apply need not read its clock).
    pub fn failures_pending(&self) -> bool {
        !self.reports.pending.is_empty()
    }

    /// Applies every reported failure: the failed set, the transports (an
    /// [`Output::Failed`]), the detector, the suspicion broadcast, and every
    /// communicator holding the rank. A report about this process itself excludes it.
    pub fn apply_failures(&mut self, now: u64) {
        while let Some((w, how)) = self.reports.pending.pop_front() {
            if w == self.me {
                self.excluded = true;
                continue;
            }
            if !self.failed.insert(Rank(w)) {
                continue;
            }
            self.notes.push(FailureNote {
                rank: w,
                how: how.clone(),
                at_ns: now,
            });
            self.out.outputs.push_back(Output::Failed { rank: w, how });
            let mut out = std::mem::take(&mut self.det_out);
            self.detector.on_failure(Rank(w), now, &mut out);
            self.det_out = out;
            self.run_detector_actions();
            let mut out = std::mem::take(&mut self.bcast_out);
            let topic = Topic::Suspicion {
                rank: Rank(w),
                incarnation: self.generation(w),
            };
            self.world_bcast.originate(topic, &mut out);
            self.world_bcast.on_failure(Rank(w), &mut out);
            self.bcast_out = out;
            self.run_world_bcast_actions();
            let ids: Vec<CommId> = self.comms.keys().copied().collect();
            for id in ids {
                let Some(c) = self.comms.get_mut(&id) else {
                    continue;
                };
                let Some(cr) = c.comm_rank(w) else {
                    continue;
                };
                c.era.on_failure(Rank(cr), &mut self.era_out);
                c.bcast.on_failure(Rank(cr), &mut self.bcast_out);
                if let Some(two) = c.two.as_mut() {
                    let acked = c.acked.contains(Rank(cr));
                    let mut steps = std::mem::take(&mut self.two_steps);
                    two.on_peer_failure(cr, acked, &mut steps);
                    self.run_two_party(id, &mut steps);
                    self.two_steps = steps;
                }
                self.run_comm_actions(id);
            }
        }
    }

    /// World rank `w`'s current incarnation is `generation` (this process's own at
    /// start, the live ranks' when a restarted process joins, a newer incarnation that
    /// ended before it was admitted). Never moves back.
    pub fn set_generation(&mut self, w: u32, generation: u32) {
        if let Some(g) = self.generations.get_mut(w as usize) {
            *g = (*g).max(generation);
        }
    }

    /// World rank `w`'s current incarnation as known here.
    pub fn generation(&self, w: u32) -> u32 {
        self.generations.get(w as usize).copied().unwrap_or(0)
    }

    /// A new incarnation `generation` of the failed world rank `w` joined (a restart in
    /// place, see `docs/restart.md`): it is no longer failed for the transports and the
    /// detector, and failures reported about it and not applied yet (about the dead
    /// incarnation) are dropped. Communicators keep it failed: their agreement, revoke
    /// and acknowledgement state is about the dead incarnation, as ULFM requires, and
    /// their decisions naming it no longer report the rank failed (it is another
    /// process now); [`new_epoch`](Self::new_epoch) brings it back into one. The known
    /// incarnation moves to `generation` even when `w` was not failed here (its death
    /// not learnt yet). Returns whether `w` was failed.
    pub fn readmit(&mut self, w: u32, generation: u32, now: u64) -> bool {
        if w == self.me {
            return false;
        }
        self.set_generation(w, generation);
        self.reports.pending.retain(|(r, _)| *r != w);
        self.world_bcast.readmit(Rank(w), generation);
        if !self.failed.remove(Rank(w)) {
            return false;
        }
        let mut out = std::mem::take(&mut self.det_out);
        self.detector.on_rejoin(Rank(w), now, &mut out);
        self.det_out = out;
        self.run_detector_actions();
        true
    }

    /// Registers a communicator over `group` (comm rank -> world rank) with the
    /// runtime's opaque `context`; returns this process's comm rank, or `None` when it
    /// is not a member. Control messages that arrived for it early are handled now.
    pub fn add_comm(&mut self, key: CommKey, context: u64, group: Vec<u32>) -> Option<u32> {
        let incarnations = group.iter().map(|&w| self.generation(w)).collect();
        self.add_comm_at(key, context, group, incarnations)
    }

    /// As [`add_comm`](Self::add_comm), with each member's incarnation given
    /// (`incarnations[r]` for comm rank `r`, as many as `group`): a member whose
    /// incarnation here is later than that one is treated as failed in it. A
    /// restarted process registers a communicator it rejoins this way
    /// (`docs/restart.md`); registering an id already registered replaces its state
    /// (a restarted process rejoining its world communicator at the survivors'
    /// epoch). `None` also when the lengths differ.
    pub fn add_comm_at(
        &mut self,
        key: CommKey,
        context: u64,
        group: Vec<u32>,
        incarnations: Vec<u32>,
    ) -> Option<u32> {
        if incarnations.len() != group.len() {
            return None;
        }
        let me = group.iter().position(|&g| g == self.me)? as u32;
        let mut state = CommFt::new(key, context, group, incarnations, me);
        // Members already known failed (or replaced by a later incarnation).
        for (cr, &w) in state.group.iter().enumerate() {
            if self.failed.contains(Rank(w)) || state.incarnations[cr] < self.generation(w) {
                state.era.on_failure(Rank(cr as u32), &mut self.era_out);
                state.bcast.on_failure(Rank(cr as u32), &mut self.bcast_out);
            }
        }
        self.comms.insert(key.comm, state);
        self.run_comm_actions(key.comm);
        self.replay_early(key.comm);
        Some(me)
    }

    /// Handles the control messages held for communicator `id` (those for a later
    /// epoch than the registered one are held again).
    fn replay_early(&mut self, id: CommId) {
        if let Some(early) = self.early.remove(&id) {
            self.early_count -= early.len();
            for (from, bytes) in early {
                self.dispatch(from, &bytes, 0);
            }
        }
    }

    /// Moves communicator `id` to its next epoch (`docs/restart.md`, "Communicators"):
    /// fresh agreement and revoke state over the same group and context, each member at
    /// its current incarnation, so the members in `readmitted` (comm ranks, restarted
    /// and admitted here) take part again. The acknowledgements of the other failures
    /// and a revocation carry over. Every member calls it at the same point (after an
    /// agreement on the old epoch); messages of the old epoch are dropped from then on,
    /// messages of the new one that came early are handled now. Returns the new key,
    /// `None` for an unknown communicator.
    pub fn new_epoch(&mut self, id: CommId, readmitted: &[u32]) -> Option<CommKey> {
        let old = self.comms.remove(&id)?;
        let key = CommKey {
            comm: id,
            epoch: Epoch(old.key.epoch.0.wrapping_add(1)),
        };
        let acked = RankSet::from_ranks(old.acked.iter().filter(|r| !readmitted.contains(&r.0)));
        self.add_comm(key, old.context, old.group)?;
        let c = self.comms.get_mut(&id)?;
        c.acked = acked;
        c.revoked = old.revoked;
        Some(key)
    }

    /// Forgets communicator `id` (it was freed): its state, and control messages held
    /// for it. Control messages that arrive for it later are dropped (counted as
    /// `stale`) while it is among the last [`REMOVED_REMEMBERED`] removed. Returns
    /// whether it was registered.
    pub fn remove_comm(&mut self, id: CommId) -> bool {
        if let Some(early) = self.early.remove(&id) {
            self.early_count -= early.len();
        }
        if self.removed_set.insert(id, ()).is_none() {
            self.removed.push_back(id);
            if self.removed.len() > REMOVED_REMEMBERED {
                if let Some(old) = self.removed.pop_front() {
                    self.removed_set.remove(&old);
                }
            }
        }
        self.comms.remove(&id).is_some()
    }

    /// Handles one control message from world rank `from` at time `now`.
    pub fn on_control(&mut self, from: u32, bytes: &[u8], now: u64) {
        self.stats.received += 1;
        self.dispatch(from, bytes, now);
    }

    /// Handles a message (`now` matters only to the world-wide detector, whose
    /// messages are never kept early).
    fn dispatch(&mut self, from: u32, bytes: &[u8], now: u64) {
        if from >= self.size || from == self.me {
            self.stats.malformed += 1;
            return;
        }
        let Ok(h) = peek_header(bytes) else {
            self.stats.malformed += 1;
            return;
        };
        if h.key == FT_KEY {
            match FtMsg::decode(bytes, self.size) {
                Ok((_, FtMsg::Heartbeat)) => self.detector.on_heartbeat(Rank(from), now),
                Ok((_, FtMsg::Observe)) => {
                    let mut out = std::mem::take(&mut self.det_out);
                    self.detector.on_observe(Rank(from), now, &mut out);
                    self.det_out = out;
                    self.run_detector_actions();
                }
                Ok((_, FtMsg::Bcast(topic))) => {
                    let mut out = std::mem::take(&mut self.bcast_out);
                    self.world_bcast.on_message(Rank(from), topic, &mut out);
                    self.bcast_out = out;
                    self.run_world_bcast_actions();
                }
                _ => self.stats.malformed += 1,
            }
            return;
        }
        let id = h.key.comm;
        // A message for a later epoch than ours waits for our switch; one for an
        // earlier epoch is stale.
        let epoch = self.comms.get(&id).map(|c| c.key.epoch);
        if epoch.is_some_and(|e| h.key.epoch < e) {
            self.stats.stale += 1;
            return;
        }
        let held = epoch.is_some_and(|e| h.key.epoch > e);
        let c = if held { None } else { self.comms.get_mut(&id) };
        let Some(c) = c else {
            if self.removed_set.contains_key(&id) {
                self.stats.stale += 1;
            } else if self.early_count < EARLY_MAX {
                self.early_count += 1;
                self.early
                    .entry(id)
                    .or_default()
                    .push((from, bytes.to_vec()));
            } else {
                self.stats.malformed += 1;
            }
            return;
        };
        let Some(cr) = c.comm_rank(from) else {
            self.stats.malformed += 1;
            return;
        };
        if c.incarnations[cr as usize] < self.generations[from as usize] {
            // From a later incarnation, which is not a member of this epoch.
            self.stats.stale += 1;
            return;
        }
        let next = c.next_seq;
        if let (Some(two), Kind::Up) = (c.two.as_mut(), h.kind) {
            match EraMsg::decode(bytes, 2) {
                Ok((_, EraMsg::Up(contribution))) => {
                    let mut steps = std::mem::take(&mut self.two_steps);
                    two.on_contribution(h.seq, contribution.value, next, &mut steps);
                    self.run_two_party(id, &mut steps);
                    self.two_steps = steps;
                }
                _ => self.stats.malformed += 1,
            }
            return;
        }
        match h.kind {
            Kind::Up | Kind::Down | Kind::ResultRequest => {
                if c.era.on_bytes(Rank(cr), bytes, &mut self.era_out).is_err() {
                    self.stats.malformed += 1;
                }
            }
            Kind::Revoke => match FtMsg::decode(bytes, c.group.len() as u32) {
                Ok((_, FtMsg::Bcast(topic))) => {
                    c.bcast.on_message(Rank(cr), topic, &mut self.bcast_out)
                }
                _ => self.stats.malformed += 1,
            },
            _ => self.stats.malformed += 1,
        }
        self.run_comm_actions(id);
    }

    /// Starts revoking communicator `id` (delivered here at once).
    pub fn revoke(&mut self, id: CommId) {
        if let Some(c) = self.comms.get_mut(&id) {
            c.bcast.originate(Topic::Revoke, &mut self.bcast_out);
            self.run_comm_actions(id);
        }
    }

    /// Enters agreement on communicator `id` with `value`; its sequence number, whose
    /// decision [`CommFt::take_decision`] gives once known. `None` for an unknown
    /// communicator.
    pub fn start_agreement(&mut self, id: CommId, value: u64) -> Option<Seq> {
        let c = self.comms.get_mut(&id)?;
        let seq = c.next_seq;
        c.next_seq += 1;
        if let Some(two) = c.two.as_mut() {
            let peer = 1 - c.me;
            let w = c.group[peer as usize];
            // A peer replaced by a later incarnation is not in this epoch.
            let failed = self.failed.contains(Rank(w))
                || c.incarnations[peer as usize] < self.generations[w as usize];
            let acked = c.acked.contains(Rank(peer));
            let mut steps = std::mem::take(&mut self.two_steps);
            two.start(seq, value, (peer, failed, acked), &mut steps);
            self.run_two_party(id, &mut steps);
            self.two_steps = steps;
            return Some(seq);
        }
        let acked = c.acked.clone();
        // A fresh sequence number is never started twice.
        let _ = c.era.start(seq, value, &acked, &mut self.era_out);
        self.run_comm_actions(id);
        Some(seq)
    }

    /// Performs the steps of a two-process communicator's agreement.
    fn run_two_party(&mut self, id: CommId, steps: &mut Vec<Step>) {
        let Some(c) = self.comms.get(&id) else {
            steps.clear();
            return;
        };
        let key = c.key;
        let peer_world = c.group[(1 - c.me) as usize];
        for step in steps.drain(..) {
            match step {
                Step::Send(seq, contribution) => {
                    let msg = EraMsg::Up(contribution);
                    self.out
                        .send(&self.failed, peer_world, |b| msg.encode(key, seq, b));
                }
                Step::Decided(seq, decision) => {
                    if let Some(c) = self.comms.get_mut(&id) {
                        c.decisions.insert(seq, decision);
                    }
                }
            }
        }
    }

    /// Performs the actions the engines of communicator `id` produced.
    fn run_comm_actions(&mut self, id: CommId) {
        let Some(c) = self.comms.get_mut(&id) else {
            self.era_out.clear();
            self.bcast_out.clear();
            return;
        };
        let key = c.key;
        for a in self.era_out.drain(..) {
            match a {
                EraAction::Send { to, seq, msg } => {
                    self.out.send(&self.failed, c.group[to.index()], |b| {
                        msg.encode(key, seq, b)
                    });
                }
                EraAction::Decided { seq, decision } => {
                    for r in decision.failed.iter() {
                        let w = c.group[r.index()];
                        // A replaced incarnation's failure is old news: the rank is
                        // another process now.
                        if c.incarnations[r.index()] < self.generations[w as usize] {
                            continue;
                        }
                        self.reports.report(
                            &mut self.out,
                            &self.failed,
                            self.size,
                            w,
                            "agreed failed".into(),
                        );
                    }
                    c.decisions.insert(seq, decision);
                }
                EraAction::Excluded { .. } => self.excluded = true,
            }
        }
        for a in self.bcast_out.drain(..) {
            match a {
                BcastAction::Send { to, topic } => {
                    self.out.send(&self.failed, c.group[to.index()], |b| {
                        FtMsg::Bcast(topic).encode(key, 0, b)
                    });
                }
                BcastAction::Deliver(Topic::Revoke) => {
                    if !c.revoked {
                        c.revoked = true;
                        self.out
                            .outputs
                            .push_back(Output::Revoked { comm: key.comm });
                    }
                }
                BcastAction::Deliver(Topic::Suspicion { .. }) => {}
            }
        }
    }

    fn run_world_bcast_actions(&mut self) {
        let mut out = std::mem::take(&mut self.bcast_out);
        for a in out.drain(..) {
            match a {
                BcastAction::Send { to, topic } => {
                    self.out.send(&self.failed, to.0, |b| {
                        FtMsg::Bcast(topic).encode(FT_KEY, 0, b)
                    });
                }
                BcastAction::Deliver(Topic::Suspicion { rank, incarnation }) => {
                    self.on_suspicion(rank.0, incarnation)
                }
                BcastAction::Deliver(Topic::Revoke) => {}
            }
        }
        self.bcast_out = out;
    }

    /// A suspicion of world rank `w`'s incarnation `incarnation` was delivered by the
    /// world broadcast. One of an incarnation replaced here is about a dead process
    /// (late, or resent by a forwarder's ring repair) and is dropped; one of a later
    /// incarnation than known here means that one ended before it was admitted.
    fn on_suspicion(&mut self, w: u32, incarnation: u32) {
        if incarnation < self.generation(w) {
            self.stats.stale += 1;
            return;
        }
        self.set_generation(w, incarnation);
        self.report_failure(w, "suspicion broadcast".into());
    }

    fn run_detector_actions(&mut self) {
        let mut out = std::mem::take(&mut self.det_out);
        for a in out.drain(..) {
            match a {
                DetectorAction::Heartbeat { to } => self.out.send(&self.failed, to.0, |b| {
                    FtMsg::Heartbeat.encode(FT_KEY, 0, b)
                }),
                DetectorAction::Observe { to } => self
                    .out
                    .send(&self.failed, to.0, |b| FtMsg::Observe.encode(FT_KEY, 0, b)),
                DetectorAction::Suspect(r) => self.report_failure(r.0, "heartbeat timeout".into()),
                DetectorAction::Excluded => self.excluded = true,
            }
        }
        self.det_out = out;
    }
}

#[cfg(test)]
mod tests;
