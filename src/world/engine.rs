//! The progress engine of one process: the two transports under the control plane
//! (`steadfast_agreement::control`: the failure set, the detector, the suspicion
//! broadcast, each communicator's agreement and revoke engines).
//!
//! Everything runs on the caller's thread: every blocking operation of a communicator
//! calls [`Engine::progress`] while it waits, which drains control messages into the
//! control plane, ticks its clock, and collects failure reports (the launcher's events,
//! dead pids of local peers, transport errors). The control plane decides; the engine
//! only moves its messages and tells the transports about failures.

use std::time::Instant;

use steadfast_agreement::control::{CommFt, ControlPlane, Output};
use steadfast_agreement::detector::Detector;
use steadfast_agreement::{CommId, CommKey, Seq};
use steadfast_fabric::{Messenger, Request};
use steadfast_matching::ContextAllocator;
use steadfast_shm::Endpoint as ShmEndpoint;

use super::matching::Matching;
use super::tags::{CONTEXT_BITS, CONTROL, CONTROL_IGNORE, RESERVED_CONTEXTS};
use control_held::{send_if_admitted, ControlHeld};
use rejoin::RestartState;

mod control_held;
mod published;
mod rejoin;
use crate::bootstrap::Bootstrap;
pub(crate) use published::CommFacts;

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

/// Largest control message accepted.
const CONTROL_MAX: usize = 64 << 10;
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

/// Arrivals taken from the shm rings per drain (a flood cannot hold the caller).
const DRAIN_MAX: usize = 256;

/// Point-to-point through the matcher: posting, completing, the shm arrivals.
#[path = "engine_p2p.rs"]
mod p2p;
pub(crate) use p2p::DirectRecv;

/// Fabric messages through the matcher: the pool's arrivals, rendezvous reads.
#[path = "engine_fabric.rs"]
mod fabric;

/// Synchronous sends: sequence numbers, answers.
#[path = "engine_sync.rs"]
mod sync;

/// Shm sends waiting for room, in posting order per destination.
#[path = "engine_sendq.rs"]
mod sendq;

/// A silent same-node neighbour busy in the kernel is not suspected.
#[path = "engine_busy.rs"]
mod busy;
pub(crate) use sendq::QueuedId;

/// The per-process engine (see the module doc). Its state is private: communicators
/// use the methods below.
pub(crate) struct Engine {
    rank: u32,
    size: u32,
    routes: Vec<Route>,
    /// Local rank -> world rank.
    local_world: Vec<u32>,
    // Field order matters for drop: the messenger goes before the buffer it may
    // still receive into.
    fab: Option<Messenger>,
    fab_ctrl: Option<Request>,
    fab_ctrl_buf: Box<[u8]>,
    shm: Option<ShmEndpoint>,
    boot: Box<dyn Bootstrap>,
    /// MPI matching of every self and shm message (`matching.rs`).
    matching: Matching,
    /// Synchronous sends in flight and answers owed (`engine_sync.rs`).
    sync: sync::SyncSends,
    /// Shm sends not accepted yet, per destination in posting order (`engine_sendq.rs`).
    sendq: sendq::SendQueues,
    /// Failed ranks whose contexts the matcher has not been told about yet.
    to_notify: Vec<u32>,
    /// Inside `drain_arrivals` (it is not re-entered).
    draining: bool,
    /// Drains of the rings for a waiting receive ([`Engine::drain_for_receive`]) so
    /// far, and their count at the last round of progress [`Engine::tick`] ran.
    receive_drains: u64,
    receive_drains_at_tick: u64,
    control: ControlPlane,
    /// The communicator contexts in use here (agreed among members at creation).
    contexts: ContextAllocator,
    /// Which failure reports are consulted besides heartbeats.
    detectors: Detectors,
    /// Waits yield the core at every poll (more ranks than cores on this node).
    yield_when_idle: bool,
    started: Instant,
    polls: u32,
    ticks: u32,
    next_slow_ns: u64,
    control_buf: Box<[u8]>,
    shm_dead: Vec<u32>,
    /// The watched process's last kernel time reading (`engine_busy.rs`).
    busy_probe: Option<busy::BusyProbe>,
    /// Failed sends of control messages, reported once the outputs are drained.
    send_failures: Vec<(u32, String)>,
    /// Control messages to local ranks that have not admitted this restarted process.
    control_held: ControlHeld,
    stats: Stats,
    /// Restarted ranks that joined and are not admitted here yet: (rank, generation).
    rejoins: Vec<(u32, u32)>,
    /// The restart this process asked the launcher for, until admitted.
    restart: Option<RestartState>,
    /// Per world rank, the newest incarnation a restart asked from here was answered
    /// with (a replacement newer than it was made by another survivor).
    restart_answered: Vec<u32>,
    /// This process is a restarted incarnation whose world communicator is still the
    /// fresh one of its init (not rejoined: `Engine::rejoin_world`).
    world_restored: bool,
    /// What readers without the token see (`engine/published.rs`).
    published: published::Published,
    /// Inter-communicators made here so far per (union group, tag) hash: the next one's
    /// number, part of its id (`Engine::next_intercomm`).
    intercomms: std::collections::HashMap<u64, u64>,
    /// Messages of keyed exchanges taken by another exchange (`comm/keyed.rs`).
    keyed_mail: crate::comm::keyed::Mail,
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
    pub generations: Vec<u32>,
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
            matching: Matching::new(parts.size),
            sync: sync::SyncSends::default(),
            sendq: sendq::SendQueues::default(),
            to_notify: Vec::new(),
            draining: false,
            receive_drains: 0,
            receive_drains_at_tick: 0,
            control: ControlPlane::new(parts.rank, parts.size, parts.detector),
            contexts: ContextAllocator::new(CONTEXT_BITS, RESERVED_CONTEXTS)
                .expect("the tag layout's context space is valid"),
            detectors: parts.detectors,
            yield_when_idle: parts.yield_when_idle,
            started: Instant::now(),
            polls: 0,
            ticks: 0,
            next_slow_ns: 0,
            control_buf: vec![0u8; CONTROL_MAX].into_boxed_slice(),
            shm_dead: Vec::new(),
            busy_probe: None,
            send_failures: Vec::new(),
            control_held: ControlHeld::default(),
            stats: Stats::default(),
            rejoins: Vec::new(),
            restart: None,
            restart_answered: vec![0; parts.size as usize],
            world_restored: false,
            published: published::Published::new(parts.size),
            intercomms: std::collections::HashMap::new(),
            keyed_mail: Default::default(),
        };
        // Each rank's incarnation is kept by the control plane alone, which every
        // source of news moves on (admission, launcher events, suspicions).
        for (w, &g) in parts.generations.iter().enumerate() {
            e.control.set_generation(w as u32, g);
        }
        e.world_restored = e.generation() > 0;
        e.post_fabric_control()?;
        Ok(e)
    }

    /// This process's world rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The world's size.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// How world rank `w` is reached.
    pub fn route(&self, w: u32) -> Route {
        self.routes[w as usize]
    }

    /// How every world rank is reached.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The fabric messenger, when some peer is reached through it.
    pub fn fab_mut(&mut self) -> Option<&mut Messenger> {
        self.fab.as_mut()
    }

    /// The shared-memory endpoint, when some peer shares the node.
    pub fn shm_mut(&mut self) -> Option<&mut ShmEndpoint> {
        self.shm.as_mut()
    }

    /// The launcher's key-value service.
    pub fn boot_mut(&mut self) -> &mut dyn Bootstrap {
        self.boot.as_mut()
    }

    /// Traffic counters (the control plane's included).
    pub fn stats(&self) -> Stats {
        let c = self.control.stats();
        Stats {
            control_sent: c.sent,
            control_received: c.received,
            control_malformed: c.malformed,
            ..self.stats
        }
    }

    /// Traffic counters, to count an operation.
    pub fn stats_mut(&mut self) -> &mut Stats {
        &mut self.stats
    }

    /// Whether waits yield the core at every poll.
    pub fn yield_when_idle(&self) -> bool {
        self.yield_when_idle
    }

    /// Whether world rank `w` is known failed.
    pub fn is_failed(&self, w: u32) -> bool {
        self.control.is_failed(w)
    }

    /// Whether the others declared this process failed.
    pub fn excluded(&self) -> bool {
        self.control.excluded()
    }

    /// Why and when each failure was learnt.
    pub fn notes(&self) -> Vec<FailureNote> {
        self.control
            .notes()
            .iter()
            .map(|n| FailureNote {
                rank: n.rank,
                how: n.how.clone(),
                at: std::time::Duration::from_nanos(n.at_ns),
            })
            .collect()
    }

    /// The number of the next inter-communicator over the union and tag that hash to
    /// `key`: every member of the union takes part in each such creation, in the same
    /// order, so each counts the same. A later creation over the same groups and tag
    /// (after a merge and free, or beside a live one) so gets an id of its own; with the
    /// first one's, the control plane dropped its agreements as late messages of the
    /// freed communicator and the creation hung.
    pub fn next_intercomm(&mut self, key: u64) -> u64 {
        let n = self.intercomms.entry(key).or_insert(0);
        *n += 1;
        *n - 1
    }

    /// Whether communicator `id` is registered here.
    pub fn has_comm(&self, id: CommId) -> bool {
        self.control.comm(id).is_some()
    }

    /// The fault-tolerance state of a live communicator.
    ///
    /// # Panics
    /// If `id` was never added: a `Comm` handle exists only for an added communicator.
    pub fn comm(&self, id: CommId) -> &CommFt {
        self.control
            .comm(id)
            .expect("a Comm handle's communicator is registered")
    }

    /// As [`comm`](Self::comm), mutable.
    pub fn comm_mut(&mut self, id: CommId) -> &mut CommFt {
        self.control
            .comm_mut(id)
            .expect("a Comm handle's communicator is registered")
    }

    /// Starts the failure detector. Called once every rank's transports are up: a
    /// first fabric message may wait for its peer to progress the connection.
    pub fn start_detector(&mut self) {
        let now = self.now_ns();
        self.control.start(now);
        self.drive();
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
    /// handled now. Its comm rank here, `None` when not a member.
    pub fn add_comm(&mut self, key: CommKey, ctx: u64, group: Vec<u32>) -> Option<u32> {
        let me = self.control.add_comm(key, ctx, group);
        if me.is_some() {
            self.publish_comm(key.comm);
        }
        self.drive();
        if me.is_some() && ctx != 0 {
            self.open_context(key.comm);
        }
        me
    }

    /// Sets the context of communicator `id`, registered without one (0), once agreed.
    pub fn set_comm_context(&mut self, id: CommId, ctx: u64) {
        self.comm_mut(id).set_context(ctx);
        self.open_context(id);
    }

    /// Opens the matching context of communicator `id` and delivers what arrived for it
    /// before.
    fn open_context(&mut self, id: CommId) {
        let c = self.comm(id);
        let ctx = c.context();
        let group = c.group().to_vec();
        let revoked = c.revoked();
        // In the order they were learnt, as later failures are notified
        // (`Engine::ack_up_to` acknowledges a prefix of that order).
        let mut failed: Vec<u32> = group
            .iter()
            .copied()
            .filter(|&w| self.control.is_failed(w))
            .collect();
        failed.sort_by_key(|&w| self.failure_position(w));
        self.matching.open(ctx, &group, &failed, revoked);
        self.retry_held();
        self.release_dropped();
    }

    /// The communicator contexts of this process (`comm::context` agrees on them).
    pub fn contexts_mut(&mut self) -> &mut ContextAllocator {
        &mut self.contexts
    }

    /// The messages keyed exchanges set aside for each other (`comm/keyed.rs`).
    pub fn keyed_mail_mut(&mut self) -> &mut crate::comm::keyed::Mail {
        &mut self.keyed_mail
    }

    /// Forgets a freed communicator: its control-plane state and its matching context;
    /// messages waiting on it that nobody received are dropped (returned: the caller
    /// logs them). `retire` when its context is never reused here (messages still
    /// arriving for it are dropped too).
    pub fn remove_comm(&mut self, id: CommId, ctx: u64, retire: bool) -> usize {
        self.control.remove_comm(id);
        self.unpublish_comm(id);
        self.keyed_mail.forget(id);
        let dropped = if ctx != 0 {
            self.matching.close(ctx, retire)
        } else {
            0
        };
        self.release_dropped();
        dropped
    }

    /// One round of progress: queued shm sends, control messages, then (now and then)
    /// the clock, the launcher and local pids; then failures learnt are applied.
    pub fn progress(&mut self) {
        self.progress_round(true);
    }

    /// A round of progress; the shm rings are drained only when `drain_rings`.
    fn progress_round(&mut self, drain_rings: bool) {
        self.push_queued();
        if !self.control_held.is_empty() {
            self.send_held_control();
        }
        if drain_rings {
            // Shared memory: everything waiting in the rings (control and user
            // messages).
            self.drain_arrivals();
        }
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
            // Receives waiting for their messages drain the rings already (control
            // messages included, in order): draining them here too would take the
            // messages of receives about to be posted and copy them out as unexpected
            // (a stream of blocking receives lost 10% of its rate that way).
            let drains = self.receive_drains;
            let receiving = drains != self.receive_drains_at_tick;
            self.receive_drains_at_tick = drains;
            self.progress_round(!receiving);
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
        self.vouch_for_a_copying_neighbour(now);
        self.control.tick(now);
        self.drive();
    }

    /// The launcher's failure events, local pids, fabric peer failures; restarted
    /// ranks that joined.
    fn other_detectors(&mut self) {
        if let Ok(events) = self.boot.failures(std::time::Duration::ZERO) {
            for ev in events {
                if ev.rank >= self.size {
                    continue;
                }
                let known = self.control.generation(ev.rank);
                // The end of an incarnation already replaced here is old news; the end
                // of one not admitted here yet means it is gone before we could.
                if ev.generation > known {
                    self.control.set_generation(ev.rank, ev.generation);
                    self.rejoins
                        .retain(|&(w, g)| w != ev.rank || g > ev.generation);
                }
                if ev.generation >= known {
                    self.control
                        .report_failure(ev.rank, format!("launcher: {}", ev.how));
                }
            }
        }
        for j in self.boot.rejoins() {
            self.rejoins.push((j.rank, j.generation));
        }
        if !self.rejoins.is_empty() {
            self.admit_rejoins();
        }
        if self.detectors != Detectors::Launcher {
            if let Some(shm) = self.shm.as_mut() {
                shm.poll_deaths(&mut self.shm_dead);
            }
            for l in std::mem::take(&mut self.shm_dead) {
                let w = self.local_world[l as usize];
                self.control
                    .report_failure(w, "process exited (pidfd)".into());
            }
            if let Some(fab) = self.fab.as_ref() {
                for w in 0..self.size {
                    if self.routes[w as usize] == Route::Fabric && !self.control.is_failed(w) {
                        if let Some(why) = fab.peer_failure(w) {
                            self.control.report_failure(w, format!("fabric: {why}"));
                        }
                    }
                }
            }
        }
        self.drive();
    }

    /// This process's incarnation.
    pub fn generation(&self) -> u32 {
        self.control.generation(self.rank)
    }

    /// A failure of world rank `w` learnt from `how` (applied at the next progress;
    /// the fabric learns at once).
    pub fn report_failure(&mut self, w: u32, how: String) {
        self.control.report_failure(w, how);
        self.drive();
    }

    /// Applies every reported failure (see `ControlPlane::apply_failures`). The clock is
    /// read only when there is one: every progress round comes here, and reading it
    /// was a fifth of a two-rank agreement's time.
    pub fn apply_failures(&mut self) {
        if self.control.failures_pending() {
            let now = self.now_ns();
            self.control.apply_failures(now);
        }
        self.drive();
    }

    /// Performs what the control plane asks: sends its messages, tells the transports
    /// about failures; a send that fails is reported back, until nothing is left.
    fn drive(&mut self) {
        loop {
            while let Some(output) = self.control.next_output() {
                match output {
                    Output::Send { to, range } => {
                        let bytes = self.control.bytes(range);
                        if let Some(how) = send_control(
                            &self.routes,
                            self.fab.as_mut(),
                            self.shm.as_mut(),
                            &mut self.control_held,
                            to,
                            bytes,
                        ) {
                            self.send_failures.push((to, how));
                        }
                    }
                    // The fabric learns at once: a control message sent before the
                    // failure is applied (a broadcast being forwarded) must not wait on
                    // the dead rank. Over net such a send stays in back-pressure until
                    // the messenger sees the death itself (the demo's survivors took
                    // 3.6-7.7 ms instead of ~1 ms).
                    Output::Reported { rank, how } => {
                        if self.routes[rank as usize] == Route::Fabric {
                            if let Some(fab) = self.fab.as_mut() {
                                fab.declare_dead(rank, &how);
                            }
                        }
                    }
                    Output::Failed { rank, how } => {
                        log::debug!("rank {rank} failed here: {how}");
                        self.publish_failure(rank);
                        match self.routes[rank as usize] {
                            Route::Shm(l) => {
                                if let Some(shm) = self.shm.as_mut() {
                                    shm.declare_dead(l);
                                }
                            }
                            Route::Fabric => {
                                if let Some(fab) = self.fab.as_mut() {
                                    fab.declare_dead(rank, &how);
                                }
                            }
                            Route::Local => {}
                        }
                        self.to_notify.push(rank);
                    }
                    Output::Revoked { comm } => {
                        self.publish_revoked(comm);
                        if let Some(c) = self.control.comm(comm) {
                            let ctx = c.context();
                            if ctx != 0 {
                                self.matching.revoke(ctx);
                                self.release_dropped();
                            }
                        }
                    }
                }
            }
            if !self.to_notify.is_empty() && !self.draining {
                // What the dead rank sent before it died and is still in its ring is
                // delivered first: a receive naming it then gets those messages.
                self.drain_arrivals();
                for w in std::mem::take(&mut self.to_notify) {
                    self.matching.notify_failure(w);
                }
                self.release_dropped();
            }
            if self.send_failures.is_empty() {
                return;
            }
            for (to, how) in std::mem::take(&mut self.send_failures) {
                self.control.report_failure(to, how);
            }
        }
    }

    fn poll_control(&mut self) {
        self.retry_held();
        self.flush_sync_answers();
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
                    let now = self.now_ns();
                    self.control
                        .on_control(c.source, &self.fab_ctrl_buf[..c.len], now);
                    self.drive();
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

    /// Starts revoking communicator `id` (delivered here at once).
    pub fn revoke(&mut self, id: CommId) {
        self.control.revoke(id);
        self.drive();
    }

    /// Enters agreement on communicator `id`; returns its sequence number.
    pub fn start_agreement(&mut self, id: CommId, value: u64) -> Seq {
        self.try_start_agreement(id, value)
            .expect("a Comm handle's communicator is registered")
    }

    /// As [`start_agreement`](Self::start_agreement); `None` for an unknown
    /// communicator (an agreement queued for the token holder never panics it).
    pub fn try_start_agreement(&mut self, id: CommId, value: u64) -> Option<Seq> {
        let seq = self.control.start_agreement(id, value)?;
        self.drive();
        Some(seq)
    }
}

/// Sends a control message to world rank `to`; a failure is returned as the reason to
/// report (control traffic toward the dead is best effort by design), never an error.
/// A message to a local rank that has not admitted this restarted process yet is held
/// (in `held`, behind the ones held for `to` already; see `control_held.rs`).
fn send_control(
    routes: &[Route],
    fab: Option<&mut Messenger>,
    shm: Option<&mut ShmEndpoint>,
    held: &mut ControlHeld,
    to: u32,
    bytes: &[u8],
) -> Option<String> {
    match routes[to as usize] {
        Route::Local => None,
        Route::Shm(l) => {
            let shm = shm?;
            if held.holds(to) {
                held.hold(to, bytes);
                return None;
            }
            match send_if_admitted(shm, l, bytes) {
                Ok(true) => None,
                Ok(false) => {
                    held.hold(to, bytes);
                    None
                }
                Err(how) => Some(how),
            }
        }
        Route::Fabric => match fab.map(|f| f.send(to, CONTROL, bytes)) {
            Some(Err(e)) => Some(format!("fabric: {e}")),
            _ => None,
        },
    }
}
