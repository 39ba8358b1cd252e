//! The progress engine of one process: the two transports, the control plane (failure
//! detector, suspicion broadcast, each communicator's agreement and revoke engines) and
//! the failure set every operation consults.
//!
//! Everything runs on the caller's thread: every blocking operation of a communicator
//! calls [`Engine::progress`] while it waits, which drains control messages, ticks the
//! detector, and collects failure reports (the launcher's events, dead pids of local
//! peers, transport errors). A failure is propagated once by reliable broadcast.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Instant;

use steadfast_agreement::bcast::{BcastAction, Broadcaster, Topic};
use steadfast_agreement::detector::{Detector, DetectorAction};
use steadfast_agreement::wire::{peek_header, FtMsg, Kind};
use steadfast_agreement::{CommId, CommKey, Decision, Epoch, Era, EraAction, Rank, RankSet, Seq};
use steadfast_fabric::{Messenger, Request};
use steadfast_shm::Endpoint as ShmEndpoint;

use super::tags::{CONTROL, CONTROL_IGNORE};
use super::two_party::{Step, TwoParty};
use crate::bootstrap::Bootstrap;

/// Hashes integer keys that are already well spread (communicator ids are FNV
/// hashes; sequence numbers are dense): the key itself, mixed once. SipHash cost ~8% of
/// an agreement's time here.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

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
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// How a peer is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// This process itself.
    Local,
    /// Shared memory, as local rank `n` of this node.
    Shm(u32),
    /// The fabric (another node, or fabric forced).
    Fabric,
}

/// The key of the world-wide detector and suspicion broadcast.
pub(crate) const FT_KEY: CommKey = CommKey {
    comm: CommId(0),
    epoch: Epoch(0),
};

/// Largest control message accepted.
const CONTROL_MAX: usize = 64 << 10;
/// Control messages kept for communicators not created here yet.
const EARLY_MAX: usize = 4096;
/// Progress calls between looks at the clock, the launcher and local pids.
const POLLS_PER_SLOW_CHECK: u32 = 32;
/// Calls of [`Engine::tick`] per round of progress.
const TICKS_PER_PROGRESS: u32 = 64;
/// Nanoseconds between looks at the launcher's failure events and local pids.
const SLOW_CHECK_NS: u64 = 200_000;

/// Counters of traffic and failures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// User messages sent through shared memory.
    pub shm_sent: u64,
    /// User messages sent through the fabric.
    pub fabric_sent: u64,
    /// User messages sent to this process itself.
    pub self_sent: u64,
    /// One-sided operations (window put/get) done by single copy within the node.
    pub one_sided_shm: u64,
    /// One-sided operations done by fabric RMA.
    pub one_sided_fabric: u64,
    /// Control messages sent.
    pub control_sent: u64,
    /// Control messages received.
    pub control_received: u64,
    /// Control messages dropped as malformed.
    pub control_malformed: u64,
}

/// Why a rank is considered failed, and when this process learnt it.
#[derive(Clone, Debug)]
pub struct FailureNote {
    /// World rank.
    pub rank: u32,
    /// Who told us.
    pub how: String,
    /// When (since the engine started).
    pub at: std::time::Duration,
}

/// A message a process sent to itself.
pub(crate) struct SelfMessage {
    pub ctx: u64,
    pub tag: u32,
    pub data: Vec<u8>,
}

/// One communicator's fault-tolerance state.
pub(crate) struct CommState {
    pub key: CommKey,
    pub ctx: u64,
    /// Comm rank -> world rank.
    pub group: Vec<u32>,
    pub me: u32,
    pub era: Era,
    pub bcast: Broadcaster,
    pub revoked: bool,
    pub decisions: IdMap<Seq, Decision>,
    pub next_seq: Seq,
    /// Failures (comm ranks) acknowledged by `ack_failed`.
    pub acked: RankSet,
    /// Communicators derived from this one so far (dup, shrink, split).
    pub children: u64,
    /// Agreement of a two-process communicator (instead of `era`).
    pub two: Option<TwoParty>,
}

impl CommState {
    /// The comm rank of world rank `w`, if a member.
    pub fn comm_rank(&self, w: u32) -> Option<u32> {
        self.group.iter().position(|&g| g == w).map(|i| i as u32)
    }
}

/// The per-process engine (see the module doc).
pub(crate) struct Engine {
    pub rank: u32,
    pub size: u32,
    pub routes: Vec<Route>,
    /// Local rank -> world rank.
    pub local_world: Vec<u32>,
    // Field order matters for drop: the messenger goes before the buffer it may
    // still receive into.
    pub fab: Option<Messenger>,
    fab_ctrl: Option<Request>,
    fab_ctrl_buf: Box<[u8]>,
    pub shm: Option<ShmEndpoint>,
    pub boot: Box<dyn Bootstrap>,
    pub self_queue: VecDeque<SelfMessage>,
    /// World ranks known failed.
    pub failed: RankSet,
    pub notes: Vec<FailureNote>,
    pending_failures: VecDeque<(u32, String)>,
    detector: Detector,
    world_bcast: Broadcaster,
    pub comms: IdMap<CommId, CommState>,
    early: IdMap<CommId, Vec<(u32, Vec<u8>)>>,
    early_count: usize,
    /// Set when the others declared this process failed.
    pub excluded: bool,
    /// Which failure reports are consulted besides heartbeats.
    detectors: Detectors,
    /// Waits yield the core at every poll (more ranks than cores on this node).
    pub yield_when_idle: bool,
    started: Instant,
    polls: u32,
    ticks: u32,
    next_slow_ns: u64,
    era_out: Vec<EraAction>,
    bcast_out: Vec<BcastAction>,
    det_out: Vec<DetectorAction>,
    encoded: Vec<u8>,
    batch: Vec<(u32, usize)>,
    two_steps: Vec<Step>,
    control_buf: Box<[u8]>,
    shm_dead: Vec<u32>,
    pub stats: Stats,
}

/// What [`Engine::new`] needs.
pub(crate) struct EngineParts {
    pub rank: u32,
    pub size: u32,
    pub routes: Vec<Route>,
    pub local_world: Vec<u32>,
    pub fab: Option<Messenger>,
    pub shm: Option<ShmEndpoint>,
    pub boot: Box<dyn Bootstrap>,
    pub detector: Detector,
    pub detectors: Detectors,
    pub yield_when_idle: bool,
}

/// Which failure reports the engine consults (parameter `detectors`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detectors {
    /// Local pids, the launcher, transport errors, heartbeats.
    All,
    /// The launcher's reports and heartbeats.
    Launcher,
    /// Heartbeats alone.
    Heartbeat,
}

impl Engine {
    pub fn new(parts: EngineParts) -> Result<Self, steadfast_fabric::Error> {
        let me = Rank(parts.rank);
        let mut e = Engine {
            rank: parts.rank,
            size: parts.size,
            routes: parts.routes,
            local_world: parts.local_world,
            fab: parts.fab,
            fab_ctrl: None,
            fab_ctrl_buf: vec![0u8; CONTROL_MAX].into_boxed_slice(),
            shm: parts.shm,
            boot: parts.boot,
            self_queue: VecDeque::new(),
            failed: RankSet::new(),
            notes: Vec::new(),
            pending_failures: VecDeque::new(),
            detector: parts.detector,
            world_bcast: Broadcaster::new(me, parts.size),
            comms: IdMap::default(),
            early: IdMap::default(),
            early_count: 0,
            excluded: false,
            detectors: parts.detectors,
            yield_when_idle: parts.yield_when_idle,
            started: Instant::now(),
            polls: 0,
            ticks: 0,
            next_slow_ns: 0,
            era_out: Vec::new(),
            bcast_out: Vec::new(),
            det_out: Vec::new(),
            encoded: Vec::with_capacity(256),
            batch: Vec::new(),
            two_steps: Vec::new(),
            control_buf: vec![0u8; CONTROL_MAX].into_boxed_slice(),
            shm_dead: Vec::new(),
            stats: Stats::default(),
        };
        e.post_fabric_control()?;
        Ok(e)
    }

    /// Starts the failure detector. Called once every rank's transports are up: a
    /// first fabric message may wait for its peer to progress the connection.
    pub fn start_detector(&mut self) {
        let now = self.now_ns();
        let mut out = std::mem::take(&mut self.det_out);
        self.detector.start(now, &mut out);
        self.det_out = out;
        self.run_detector_actions();
    }

    /// Nanoseconds since the engine started.
    pub fn now_ns(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }

    fn post_fabric_control(&mut self) -> Result<(), steadfast_fabric::Error> {
        if let Some(fab) = self.fab.as_mut() {
            // SAFETY: the buffer is owned by the engine, never touched while the receive
            // is posted, and outlives the messenger (dropped first, which cancels it).
            let req = unsafe { fab.irecv(None, CONTROL, CONTROL_IGNORE, &mut self.fab_ctrl_buf)? };
            self.fab_ctrl = Some(req);
        }
        Ok(())
    }

    /// Registers a communicator; control messages that arrived for it early are
    /// handled now.
    pub fn add_comm(&mut self, key: CommKey, ctx: u64, group: Vec<u32>) -> Option<u32> {
        let me = group.iter().position(|&g| g == self.rank)? as u32;
        let n = group.len() as u32;
        let mut state = CommState {
            key,
            ctx,
            group,
            me,
            era: Era::new(Rank(me), n, key, Default::default()),
            bcast: Broadcaster::new(Rank(me), n),
            revoked: false,
            decisions: IdMap::default(),
            next_seq: 0,
            acked: RankSet::new(),
            children: 0,
            two: (n == 2).then(TwoParty::default),
        };
        // Members already known failed.
        for (cr, &w) in state.group.iter().enumerate() {
            if self.failed.contains(Rank(w)) {
                state.era.on_failure(Rank(cr as u32), &mut self.era_out);
                state.bcast.on_failure(Rank(cr as u32), &mut self.bcast_out);
            }
        }
        self.comms.insert(key.comm, state);
        self.run_comm_actions(key.comm);
        if let Some(early) = self.early.remove(&key.comm) {
            self.early_count -= early.len();
            for (from, bytes) in early {
                self.on_control(from, &bytes);
            }
        }
        Some(me)
    }

    /// One round of progress: control messages, then (now and then) the clock, the
    /// launcher and local pids; then failures learnt are applied.
    pub fn progress(&mut self) {
        self.poll_control();
        self.polls = self.polls.wrapping_add(1);
        if self.polls % POLLS_PER_SLOW_CHECK == 0 {
            self.slow_checks();
        }
        self.apply_failures();
    }

    /// For paths that never wait (a stream of sends that find room at once): a round of
    /// progress every [`TICKS_PER_PROGRESS`] calls, so heartbeats still go out and
    /// failures are still learnt while the application only sends.
    #[inline]
    pub fn tick(&mut self) {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks % TICKS_PER_PROGRESS == 0 {
            self.progress();
        }
    }

    /// Looks at the launcher's events, local pids, fabric peer failures and the
    /// detector's clock, at most every `SLOW_CHECK_NS`.
    pub fn slow_checks(&mut self) {
        let now = self.now_ns();
        if now < self.next_slow_ns {
            return;
        }
        self.next_slow_ns = now + SLOW_CHECK_NS;
        if self.detectors != Detectors::Heartbeat {
            self.other_detectors();
        }
        if now >= self.detector.next_deadline() {
            let mut out = std::mem::take(&mut self.det_out);
            self.detector.tick(now, &mut out);
            self.det_out = out;
            self.run_detector_actions();
        }
    }

    /// The launcher's failure events, local pids, fabric peer failures.
    fn other_detectors(&mut self) {
        if let Ok(events) = self.boot.failures(std::time::Duration::ZERO) {
            for ev in events {
                self.report_failure(ev.rank, format!("launcher: {}", ev.how));
            }
        }
        if self.detectors == Detectors::Launcher {
            return;
        }
        if let Some(shm) = self.shm.as_mut() {
            shm.poll_deaths(&mut self.shm_dead);
        }
        for l in std::mem::take(&mut self.shm_dead) {
            let w = self.local_world[l as usize];
            self.report_failure(w, "process exited (pidfd)".into());
        }
        if let Some(fab) = self.fab.as_ref() {
            for w in 0..self.size {
                if self.routes[w as usize] == Route::Fabric && !self.failed.contains(Rank(w)) {
                    if let Some(why) = fab.peer_failure(w) {
                        let why = format!("fabric: {why}");
                        self.pending_failures.push_back((w, why));
                    }
                }
            }
        }
    }

    /// A failure of world rank `w` learnt from `how` (applied at the next progress).
    pub fn report_failure(&mut self, w: u32, how: String) {
        if w < self.size && !self.failed.contains(Rank(w)) {
            // The fabric learns at once: a control message sent before the failure is
            // applied (a broadcast being forwarded) must not wait on the dead rank. Over
            // net such a send stays in back-pressure until the messenger sees the death
            // itself (the demo's survivors took 3.6-7.7 ms instead of ~1 ms).
            if self.routes[w as usize] == Route::Fabric {
                if let Some(fab) = self.fab.as_mut() {
                    fab.declare_dead(w, &how);
                }
            }
            self.pending_failures.push_back((w, how));
        }
    }

    /// Applies every pending failure: the failed set, the transports, the detector,
    /// the broadcast of the suspicion, and every communicator holding the rank.
    pub fn apply_failures(&mut self) {
        while let Some((w, how)) = self.pending_failures.pop_front() {
            if w == self.rank {
                self.excluded = true;
                continue;
            }
            if !self.failed.insert(Rank(w)) {
                continue;
            }
            self.notes.push(FailureNote {
                rank: w,
                how: how.clone(),
                at: self.started.elapsed(),
            });
            match self.routes[w as usize] {
                Route::Shm(l) => {
                    if let Some(shm) = self.shm.as_mut() {
                        shm.declare_dead(l);
                    }
                }
                Route::Fabric => {
                    if let Some(fab) = self.fab.as_mut() {
                        fab.declare_dead(w, &how);
                    }
                }
                Route::Local => {}
            }
            let now = self.now_ns();
            let mut out = std::mem::take(&mut self.det_out);
            self.detector.on_failure(Rank(w), now, &mut out);
            self.det_out = out;
            self.run_detector_actions();
            let mut out = std::mem::take(&mut self.bcast_out);
            self.world_bcast
                .originate(Topic::Suspicion(Rank(w)), &mut out);
            self.world_bcast.on_failure(Rank(w), &mut out);
            self.bcast_out = out;
            self.run_world_bcast_actions();
            let ids: Vec<CommId> = self.comms.keys().copied().collect();
            for id in ids {
                let c = self.comms.get_mut(&id).expect("listed");
                if let Some(cr) = c.comm_rank(w) {
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
    }

    fn poll_control(&mut self) {
        // Shared memory: every control message waiting in the rings.
        while let Some(shm) = self.shm.as_mut() {
            match shm.try_recv(None, CONTROL, CONTROL_IGNORE, &mut self.control_buf) {
                Ok(Some(r)) => {
                    let from = self.local_world[r.source as usize];
                    // Lend the buffer out while it is handled: no copy.
                    let buf = std::mem::take(&mut self.control_buf);
                    self.on_control(from, &buf[..r.len]);
                    self.control_buf = buf;
                }
                Ok(None) => break,
                Err(_) => {
                    self.stats.control_malformed += 1;
                    break;
                }
            }
        }
        // Fabric: the posted control receive.
        for _ in 0..16 {
            let (Some(fab), Some(req)) = (self.fab.as_mut(), self.fab_ctrl) else {
                break;
            };
            match fab.test(req) {
                Ok(None) => break,
                Ok(Some(c)) => {
                    self.fab_ctrl = None;
                    // Handled in place before the buffer is posted again: no copy.
                    let buf = std::mem::take(&mut self.fab_ctrl_buf);
                    self.on_control(c.source, &buf[..c.len]);
                    self.fab_ctrl_buf = buf;
                    let _ = self.post_fabric_control();
                }
                Err(_) => {
                    self.fab_ctrl = None;
                    self.stats.control_malformed += 1;
                    let _ = self.post_fabric_control();
                }
            }
        }
    }

    /// Handles one control message from world rank `from`.
    pub fn on_control(&mut self, from: u32, bytes: &[u8]) {
        self.stats.control_received += 1;
        if from >= self.size || from == self.rank {
            self.stats.control_malformed += 1;
            return;
        }
        let Ok(h) = peek_header(bytes) else {
            self.stats.control_malformed += 1;
            return;
        };
        if h.key == FT_KEY {
            let now = self.now_ns();
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
                _ => self.stats.control_malformed += 1,
            }
            return;
        }
        let id = h.key.comm;
        let Some(c) = self.comms.get_mut(&id) else {
            if self.early_count < EARLY_MAX {
                self.early_count += 1;
                self.early
                    .entry(id)
                    .or_default()
                    .push((from, bytes.to_vec()));
            } else {
                self.stats.control_malformed += 1;
            }
            return;
        };
        let Some(cr) = c.comm_rank(from) else {
            self.stats.control_malformed += 1;
            return;
        };
        let next = c.next_seq;
        if let (Some(two), Kind::Up) = (c.two.as_mut(), h.kind) {
            match steadfast_agreement::wire::EraMsg::decode(bytes, 2) {
                Ok((_, steadfast_agreement::wire::EraMsg::Up(contribution))) => {
                    let mut steps = std::mem::take(&mut self.two_steps);
                    two.on_contribution(h.seq, contribution.value, next, &mut steps);
                    self.run_two_party(id, &mut steps);
                    self.two_steps = steps;
                }
                _ => self.stats.control_malformed += 1,
            }
            return;
        }
        match h.kind {
            Kind::Up | Kind::Down | Kind::ResultRequest => {
                if c.era.on_bytes(Rank(cr), bytes, &mut self.era_out).is_err() {
                    self.stats.control_malformed += 1;
                }
            }
            Kind::Revoke => match FtMsg::decode(bytes, c.group.len() as u32) {
                Ok((_, FtMsg::Bcast(topic))) => {
                    c.bcast.on_message(Rank(cr), topic, &mut self.bcast_out)
                }
                _ => self.stats.control_malformed += 1,
            },
            _ => self.stats.control_malformed += 1,
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

    /// Enters agreement on communicator `id`; returns its sequence number.
    pub fn start_agreement(&mut self, id: CommId, value: u64) -> Seq {
        let c = self.comms.get_mut(&id).expect("live communicator");
        let seq = c.next_seq;
        c.next_seq += 1;
        if let Some(two) = c.two.as_mut() {
            let peer = 1 - c.me;
            let w = c.group[peer as usize];
            let failed = self.failed.contains(Rank(w));
            let acked = c.acked.contains(Rank(peer));
            let mut steps = std::mem::take(&mut self.two_steps);
            two.start(seq, value, (peer, failed, acked), &mut steps);
            self.run_two_party(id, &mut steps);
            self.two_steps = steps;
            return seq;
        }
        let acked = c.acked.clone();
        // A fresh sequence number is never started twice.
        let _ = c.era.start(seq, value, &acked, &mut self.era_out);
        self.run_comm_actions(id);
        seq
    }

    /// Performs the steps of a two-process communicator's agreement.
    fn run_two_party(&mut self, id: CommId, steps: &mut Vec<Step>) {
        let Some(c) = self.comms.get_mut(&id) else {
            steps.clear();
            return;
        };
        let key = c.key;
        let peer_world = c.group[(1 - c.me) as usize];
        let mut bytes = std::mem::take(&mut self.encoded);
        for step in steps.drain(..) {
            match step {
                Step::Send(seq, contribution) => {
                    bytes.clear();
                    steadfast_agreement::wire::EraMsg::Up(contribution)
                        .encode(key, seq, &mut bytes);
                    self.send_control(peer_world, &bytes);
                }
                Step::Decided(seq, decision) => {
                    if let Some(c) = self.comms.get_mut(&id) {
                        c.decisions.insert(seq, decision);
                    }
                }
            }
        }
        self.encoded = bytes;
    }

    /// Performs the actions the engines of communicator `id` produced.
    fn run_comm_actions(&mut self, id: CommId) {
        let mut era_out = std::mem::take(&mut self.era_out);
        let mut bcast_out = std::mem::take(&mut self.bcast_out);
        while !era_out.is_empty() || !bcast_out.is_empty() {
            let Some(c) = self.comms.get_mut(&id) else {
                era_out.clear();
                bcast_out.clear();
                break;
            };
            let key = c.key;
            // Every message is encoded into one reused buffer; `batch` holds (to, end).
            let mut bytes = std::mem::take(&mut self.encoded);
            let mut batch = std::mem::take(&mut self.batch);
            bytes.clear();
            batch.clear();
            for a in era_out.drain(..) {
                match a {
                    EraAction::Send { to, seq, msg } => {
                        msg.encode(key, seq, &mut bytes);
                        batch.push((c.group[to.index()], bytes.len()));
                    }
                    EraAction::Decided { seq, decision } => {
                        for r in decision.failed.iter() {
                            let w = c.group[r.index()];
                            if !self.failed.contains(Rank(w)) {
                                self.pending_failures.push_back((w, "agreed failed".into()));
                            }
                        }
                        c.decisions.insert(seq, decision);
                    }
                    EraAction::Excluded { .. } => self.excluded = true,
                }
            }
            for a in bcast_out.drain(..) {
                match a {
                    BcastAction::Send { to, topic } => {
                        FtMsg::Bcast(topic).encode(key, 0, &mut bytes);
                        batch.push((c.group[to.index()], bytes.len()));
                    }
                    BcastAction::Deliver(Topic::Revoke) => c.revoked = true,
                    BcastAction::Deliver(Topic::Suspicion(_)) => {}
                }
            }
            let mut start = 0;
            for &(to, end) in &batch {
                self.send_control(to, &bytes[start..end]);
                start = end;
            }
            self.encoded = bytes;
            self.batch = batch;
            // Sending may have queued more actions (it never does today; loop anyway).
            era_out.append(&mut self.era_out);
            bcast_out.append(&mut self.bcast_out);
        }
        self.era_out = era_out;
        self.bcast_out = bcast_out;
    }

    fn run_world_bcast_actions(&mut self) {
        let out = std::mem::take(&mut self.bcast_out);
        for a in &out {
            match *a {
                BcastAction::Send { to, topic } => {
                    self.encoded.clear();
                    FtMsg::Bcast(topic).encode(FT_KEY, 0, &mut self.encoded);
                    let bytes = std::mem::take(&mut self.encoded);
                    self.send_control(to.0, &bytes);
                    self.encoded = bytes;
                }
                BcastAction::Deliver(Topic::Suspicion(r)) => {
                    self.report_failure(r.0, "suspicion broadcast".into())
                }
                BcastAction::Deliver(Topic::Revoke) => {}
            }
        }
        let mut out = out;
        out.clear();
        self.bcast_out = out;
    }

    fn run_detector_actions(&mut self) {
        let out = std::mem::take(&mut self.det_out);
        for a in &out {
            match *a {
                DetectorAction::Heartbeat { to } => self.send_ft(to.0, FtMsg::Heartbeat),
                DetectorAction::Observe { to } => self.send_ft(to.0, FtMsg::Observe),
                DetectorAction::Suspect(r) => self.report_failure(r.0, "heartbeat timeout".into()),
                DetectorAction::Excluded => self.excluded = true,
            }
        }
        let mut out = out;
        out.clear();
        self.det_out = out;
    }

    fn send_ft(&mut self, to: u32, msg: FtMsg) {
        self.encoded.clear();
        msg.encode(FT_KEY, 0, &mut self.encoded);
        let bytes = std::mem::take(&mut self.encoded);
        self.send_control(to, &bytes);
        self.encoded = bytes;
    }

    /// Sends a control message to world rank `to`; a dead destination is reported as
    /// a failure, never an error to the caller (control traffic is best effort toward
    /// the dead by design).
    fn send_control(&mut self, to: u32, bytes: &[u8]) {
        if self.failed.contains(Rank(to)) {
            return;
        }
        self.stats.control_sent += 1;
        let failed = match self.routes[to as usize] {
            Route::Local => None,
            Route::Shm(l) => match self.shm.as_mut().map(|s| s.send(l, CONTROL, bytes)) {
                Some(Err(steadfast_shm::ShmError::PeerDead(_))) => {
                    Some("process exited".to_string())
                }
                Some(Err(e)) => Some(format!("shm: {e}")),
                _ => None,
            },
            Route::Fabric => match self.fab.as_mut().map(|f| f.send(to, CONTROL, bytes)) {
                Some(Err(e)) => Some(format!("fabric: {e}")),
                _ => None,
            },
        };
        if let Some(how) = failed {
            self.report_failure(to, how);
        }
    }
}
