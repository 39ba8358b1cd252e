//! Communicators with ULFM semantics over the real transports.
//!
//! - point to point: [`Comm::send`] / [`Comm::recv`] with [`ANY_SOURCE`] / [`ANY_TAG`];
//! - an operation involving a failed peer returns [`CommError::ProcFailed`]; after a
//!   failure, [`ANY_SOURCE`] receives return [`CommError::ProcFailedPending`] until it is
//!   acknowledged ([`Comm::ack_failed`], [`Comm::get_failed`]);
//! - [`Comm::revoke`]: every pending and future operation on the communicator, on every
//!   rank, returns [`CommError::Revoked`] (a blocked receive included);
//! - [`Comm::agree`]: the ERA agreement, over control messages that revocation does not
//!   block; [`Comm::shrink`]: the survivors' communicator; [`Comm::dup`];
//! - one-sided: [`Comm::window`] exposes memory that the other ranks [`Window::put`]
//!   into and [`Window::get`] from;
//! - contexts: every communicator's message context is agreed among its members at
//!   creation, so two live communicators never share one; [`Comm::free`] releases it.

mod abort;
mod app_store;
mod collective;
mod context;
mod create_group;
mod give_up;
mod idup;
mod inter;
pub(crate) mod keyed;
mod merge;
mod mprobe;
mod nonblocking;
mod owned;
mod p2p;
mod post;
mod probe;
mod queries;
mod recv_direct;
mod refound;
mod rejoin;
mod restart;
mod send_request;
mod spawn;
mod wait_any;
mod window;
mod window_desc;
mod words;
mod world;

pub use collective::{ReduceOp, ALLREDUCE_MAX};
pub use give_up::{GiveUpClock, GRACE as GIVE_UP_GRACE};
pub use idup::{DupRequest, InterDupRequest};
pub use inter::{InterComm, Stage};
pub use mprobe::Message;
pub use nonblocking::{AgreeRequest, RecvRequest};
pub use owned::{IoBuf, IoBufMut, OwnedRecvRequest, OwnedSendRequest, RawBuf};
pub use restart::RestartRequest;
pub use send_request::SendRequest;
pub use spawn::{Parent, SpawnApps, Spawned};
pub use wait_any::{wait_all, wait_any, AnyRequest, Completion};
pub use window::{Window, MAX_REGIONS as MAX_WINDOW_REGIONS};

pub(crate) use post::Post;

use std::sync::Arc;

use steadfast_agreement::{CommId, CommKey, Outcome};
use steadfast_os::SpinWait;

use crate::world::engine::{CommFacts, Engine};
use crate::world::shared::Shared;

// The thread-safety contract (docs/threads.md), checked at compile time: every
// communicator, request and window may be moved to and shared with other threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Comm>();
    send_sync::<InterComm>();
    send_sync::<RecvRequest<'static>>();
    send_sync::<SendRequest<'static>>();
    send_sync::<AgreeRequest>();
    send_sync::<RestartRequest>();
    send_sync::<OwnedRecvRequest<Vec<u8>>>();
    send_sync::<OwnedSendRequest<std::sync::Arc<[u8]>>>();
    send_sync::<AnyRequest<'static>>();
    send_sync::<Message>();
    send_sync::<Window<'static>>();
    send_sync::<CommError>();
};

/// Receive from any source.
pub const ANY_SOURCE: Option<u32> = None;
/// Receive any tag.
pub const ANY_TAG: Option<u32> = None;

/// Errors of communicator operations.
///
/// `Clone` (transport errors are shared behind an [`Arc`]) and comparable: variants
/// without a transport error compare by value, transport errors only to clones of the
/// same error.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CommError {
    /// A peer the operation involves has failed (comm ranks).
    #[error("process failed: ranks {ranks:?}")]
    ProcFailed {
        /// The failed ranks (in this communicator).
        ranks: Vec<u32>,
    },
    /// A wildcard receive cannot proceed: failures not acknowledged yet (comm ranks).
    #[error("process failure pending acknowledgement: ranks {ranks:?}")]
    ProcFailedPending {
        /// The unacknowledged failed ranks.
        ranks: Vec<u32>,
    },
    /// The communicator was revoked.
    #[error("communicator revoked")]
    Revoked,
    /// The message is longer than the buffer (the message is consumed).
    #[error("message of {len:?} bytes truncated to a {capacity}-byte buffer")]
    Truncated {
        /// Message length, when the transport reports it.
        len: Option<usize>,
        /// Buffer length.
        capacity: usize,
        /// The message's source (comm rank), when a receive matched it (MPI's status
        /// names it whatever the receive was posted with).
        sender: Option<u32>,
        /// The message's tag, likewise.
        tag: Option<u32>,
    },
    /// Bad input from the caller.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The other processes declared this one failed: it must stop.
    #[error("this process was declared failed by the others")]
    Excluded,
    /// A fabric error that is not (yet known as) a peer failure.
    #[error("fabric transport: {0}")]
    Fabric(#[source] Arc<steadfast_fabric::Error>),
    /// A shared-memory error that is not (yet known as) a peer failure.
    #[error("shared-memory transport: {0}")]
    Shm(#[source] Arc<steadfast_shm::ShmError>),
    /// Single-copy access (`process_vm_readv`/`writev`) to the window of a process of
    /// this node failed; `EPERM` means the ptrace policy forbids it.
    #[error(
        "single-copy access to rank {rank}'s window: {source}{}",
        ptrace_hint(source)
    )]
    WindowAccess {
        /// The window's owner (world rank).
        rank: u32,
        /// The system call's error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A peer's window descriptor does not decode or lacks what its route needs.
    #[error("window descriptor of rank {rank}: {problem}")]
    WindowDescriptor {
        /// The sender (communicator rank).
        rank: u32,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A peer's message does not follow the protocol of the operation.
    #[error("rank {rank} broke the protocol: {problem}")]
    Protocol {
        /// The sender (communicator rank).
        rank: u32,
        /// What is wrong.
        problem: &'static str,
    },
    /// No communicator context is free at every member of a creation: too many live
    /// communicators (free some with [`Comm::free`]).
    #[error(
        "no communicator context is free at every member ({capacity} contexts, {live} in \
         use or retired here): free communicators before creating more"
    )]
    ContextsExhausted {
        /// Contexts in the space (reserved ones included).
        capacity: u32,
        /// Contexts in use (or retired) at this process.
        live: u32,
    },
    /// The operation is not available for these arguments (named).
    #[error("not supported: {0}")]
    Unsupported(String),
    /// A peer is reached through the fabric, but this process has no fabric endpoint.
    #[error("a peer is reached through the fabric, but this process has no fabric endpoint")]
    NoFabricEndpoint,
    /// A restart in place could not be done (no spawner, the new process ended before
    /// it joined, the rank is alive, ...).
    #[error("restart failed: {0}")]
    Restart(String),
    /// [`Comm::spawn`] started no process (no free spare slot, no spawner, every start
    /// failed: the reasons).
    #[error("spawn failed: {0}")]
    Spawn(String),
    /// This process is a restarted incarnation that has not rejoined its world
    /// communicator: agreement-based operations on it are not available (its world's
    /// agreement state cannot match the survivors', who hold its previous incarnation
    /// failed). Once the survivors saved the world ([`Comm::save`]) and readmit on it
    /// ([`Comm::readmit`]), `World::rejoin` of that name in the restarted process
    /// switches its world to their epoch and these operations work again (see
    /// `docs/restart.md`).
    #[error(
        "this process is a restarted incarnation that has not rejoined its world communicator: agreement, shrink and finalize's agreement are not available on it (the survivors save and readmit the world, this process calls World::rejoin)"
    )]
    RestoredWorld,
    /// The launcher's store refused or could not be reached (saving or rejoining a
    /// communicator, aborting a group).
    #[error("launcher: {0}")]
    Launcher(String),
}

/// The explanation added to an `EPERM` of single-copy access.
fn ptrace_hint(e: &std::io::Error) -> &'static str {
    if e.raw_os_error() == Some(libc::EPERM) {
        " (the ptrace policy, /proc/sys/kernel/yama/ptrace_scope, forbids \
         process_vm_readv/writev between these processes)"
    } else {
        ""
    }
}

impl PartialEq for CommError {
    fn eq(&self, other: &Self) -> bool {
        use CommError::*;
        match (self, other) {
            (ProcFailed { ranks: a }, ProcFailed { ranks: b }) => a == b,
            (ProcFailedPending { ranks: a }, ProcFailedPending { ranks: b }) => a == b,
            (Restart(a), Restart(b))
            | (Spawn(a), Spawn(b))
            | (Launcher(a), Launcher(b))
            | (Unsupported(a), Unsupported(b)) => a == b,
            (RestoredWorld, RestoredWorld) => true,
            (Revoked, Revoked) | (Excluded, Excluded) | (NoFabricEndpoint, NoFabricEndpoint) => {
                true
            }
            (
                Truncated {
                    len: a,
                    capacity: c,
                    sender: s,
                    tag: t,
                },
                Truncated {
                    len: b,
                    capacity: d,
                    sender: s2,
                    tag: t2,
                },
            ) => a == b && c == d && s == s2 && t == t2,
            (InvalidArgument(a), InvalidArgument(b)) => a == b,
            (
                ContextsExhausted {
                    capacity: a,
                    live: l,
                },
                ContextsExhausted {
                    capacity: b,
                    live: m,
                },
            ) => a == b && l == m,
            (Fabric(a), Fabric(b)) => Arc::ptr_eq(a, b),
            (Shm(a), Shm(b)) => Arc::ptr_eq(a, b),
            (WindowAccess { rank: a, source: s }, WindowAccess { rank: b, source: t }) => {
                a == b && Arc::ptr_eq(s, t)
            }
            (
                Protocol {
                    rank: a,
                    problem: p,
                },
                Protocol {
                    rank: b,
                    problem: q,
                },
            ) => a == b && p == q,
            (
                WindowDescriptor {
                    rank: a,
                    problem: p,
                },
                WindowDescriptor {
                    rank: b,
                    problem: q,
                },
            ) => a == b && p == q,
            _ => false,
        }
    }
}

impl Eq for CommError {}

impl From<steadfast_fabric::Error> for CommError {
    fn from(e: steadfast_fabric::Error) -> Self {
        CommError::Fabric(Arc::new(e))
    }
}

impl From<steadfast_shm::ShmError> for CommError {
    fn from(e: steadfast_shm::ShmError) -> Self {
        CommError::Shm(Arc::new(e))
    }
}

/// What a receive got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// Sender (comm rank).
    pub source: u32,
    /// Tag.
    pub tag: u32,
    /// Bytes received.
    pub len: usize,
}

/// The outcome of an agreement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agreement {
    /// Bitwise AND of the contributed values.
    pub value: u64,
    /// Ranks (of this communicator) agreed to have failed.
    pub failed: Vec<u32>,
    /// Whether every contributor had acknowledged every failure in `failed` (else
    /// [`Comm::agree`] reports `ProcFailed`).
    pub all_acked: bool,
}

impl From<steadfast_agreement::Decision> for Agreement {
    fn from(d: steadfast_agreement::Decision) -> Self {
        Agreement {
            value: d.value,
            failed: d.failed.iter().map(|r| r.0).collect(),
            all_acked: d.outcome == Outcome::Success,
        }
    }
}

/// A communicator: a group of ranks with its own message space and fault-tolerance
/// state. Cloning gives another handle to the same communicator.
///
/// `Send + Sync`: any thread may call any operation on it, at the same time as other
/// threads; collective operations (agreement, shrink, dup, split, ...) are called by
/// one thread per rank at a time, in the same order on every rank (see
/// `docs/threads.md`).
#[derive(Clone)]
pub struct Comm {
    pub(crate) engine: Arc<Shared>,
    pub(crate) id: CommId,
    /// Its group and this rank (fixed while it lives) and its published flags, read
    /// without the engine (`src/world/engine/published.rs`). Shared by every handle to
    /// this communicator and by the engine's registry of it (one reference, until it
    /// is freed): [`Comm::free`] refuses while other handles exist
    /// ([`other_handles`](Self::other_handles)).
    facts: Arc<CommFacts>,
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comm")
            .field("id", &self.id.0)
            .field("rank", &self.rank())
            .field("size", &self.size())
            .finish()
    }
}

/// Bounded spinning, then yielding the core (a wake-up costs ~85 µs here, so waits
/// poll).
/// When the node runs more ranks than cores, waits yield at once: the peer a rank
/// waits for may need its core.
pub(crate) struct Spin(SpinWait, bool);

impl Spin {
    pub(crate) fn new(e: &Engine) -> Self {
        Self::with_policy(e.yield_when_idle())
    }

    /// As [`new`](Self::new), given the engine's idle policy (`Shared::yield_when_idle`,
    /// readable without the engine).
    pub(crate) fn with_policy(yield_when_idle: bool) -> Self {
        Spin(
            if yield_when_idle {
                SpinWait::new(0)
            } else {
                SpinWait::default()
            },
            yield_when_idle,
        )
    }

    /// Whether every pause yields the core (more ranks than cores): a wait loop that
    /// pauses only every so many polls must pause at each poll then, or the rank it
    /// waits for does not run meanwhile.
    pub(crate) fn yields_at_once(&self) -> bool {
        self.1
    }

    /// Calls `test` until it yields a value, pausing between calls; `comm` gives the
    /// engine's idle policy.
    ///
    /// `test` takes the engine itself, for one round: nothing holds it across the wait.
    pub(crate) fn until<T>(
        comm: &Comm,
        mut test: impl FnMut() -> Result<Option<T>, CommError>,
    ) -> Result<T, CommError> {
        let mut spin = Spin::with_policy(comm.engine.yield_when_idle());
        loop {
            if let Some(v) = test()? {
                return Ok(v);
            }
            comm.engine.make_way();
            spin.pause();
        }
    }

    pub(crate) fn pause(&mut self) {
        self.0.pause();
    }

    /// Calls `poll` with this thread's turn at `shared`'s engine until it yields a
    /// value, pausing between calls and, when the last call got the engine, giving way
    /// to a thread waiting for it (`Shared::make_way`): the wait of every request that
    /// only tries the engine.
    pub(crate) fn until_polled<T>(
        shared: &Shared,
        mut poll: impl FnMut(&mut crate::world::shared::Turn<'_>) -> Result<Option<T>, CommError>,
    ) -> Result<T, CommError> {
        let mut spin = Spin::with_policy(shared.yield_when_idle());
        let mut turn = shared.turn();
        loop {
            if let Some(v) = poll(&mut turn)? {
                return Ok(v);
            }
            if !turn.waiting() {
                shared.make_way();
            }
            spin.pause();
        }
    }
}

/// The id of the `child`-th communicator of `kind` derived from `key` (equal on every
/// member, which all derive in the same order).
fn derive(key: CommKey, kind: u8, child: u64) -> CommId {
    let bytes = [
        key.comm.0.to_le_bytes().as_slice(),
        &key.epoch.0.to_le_bytes(),
        &[kind],
        &child.to_le_bytes(),
    ]
    .concat();
    // 0 and 1 are the detector's and the world's.
    CommId(steadfast_os::fnv1a64(&bytes).max(2))
}

impl Comm {
    /// A handle to the registered communicator whose published `facts` are given
    /// (`Engine::facts`, taken with the engine held when it was registered).
    pub(crate) fn new(engine: Arc<Shared>, facts: Arc<CommFacts>) -> Self {
        Comm {
            engine,
            id: facts.id,
            facts,
        }
    }

    /// How many other handles to this communicator exist (clones, requests, windows,
    /// an inter-communicator over it): the references to its facts but this one and
    /// the engine's registry's. (The facts are shared this way rather than through a
    /// second reference count of their own: a request that keeps a handle then pays
    /// one atomic increment, as before.)
    pub(crate) fn other_handles(&self) -> usize {
        Arc::strong_count(&self.facts).saturating_sub(2)
    }

    /// Revokes the communicator on every rank (`MPIX_Comm_revoke`): a reliable
    /// broadcast; pending and future operations on it return [`CommError::Revoked`].
    /// Agreements and shrink still work on a revoked communicator. Local and never
    /// failing, as in ULFM.
    ///
    /// Never waits for another thread: when another thread holds the engine, the revoke
    /// is queued in this thread's lane (`src/world/posts.rs`) and applied by the next
    /// holder before anything else (then the broadcast starts). It takes effect for
    /// this thread before any of its later operations: each of those either takes the
    /// engine, and every take applies the queued operations first (this thread always
    /// sees its own queued ones counted), or is queued behind it in the same lane
    /// (a thread keeps its lane while it has operations queued), or, with the lane full,
    /// waits for the engine, which applies the queue first. Operations of other threads
    /// are ordered by when they are applied (`docs/threads.md`, section 4).
    pub fn revoke(&self) {
        match self.engine.try_lock() {
            Some(mut e) => e.revoke(self.id),
            None => {
                self.post_or_apply(Post::Revoke { id: self.id });
                // Queued (or applied): `is_revoked` says so from now on, as this
                // thread's later operations see it (`queries.rs`).
                self.facts.flags.set_revoked(true);
            }
        }
    }

    /// Agrees with every live rank on the AND of `flag` and on the failed set
    /// (`MPIX_Comm_agree`). Returns the full outcome; errors only when this process
    /// was excluded.
    ///
    /// Never waits for another thread's round: its start is queued as
    /// [`iagree`](Self::iagree)'s when another thread holds the engine, and its
    /// rounds only try the engine (as [`AgreeRequest::wait`]).
    ///
    /// # Errors
    /// [`CommError::Excluded`]; [`CommError::RestoredWorld`] on the world communicator
    /// of a restarted process that has not rejoined it ([`World::rejoin`]).
    ///
    /// [`World::rejoin`]: crate::World::rejoin
    pub fn agree_full(&self, flag: u64) -> Result<Agreement, CommError> {
        // Started (or queued) without waiting for another thread, then one round per
        // hold of the engine, each only tried: other threads go on meanwhile, and while
        // one holds it, its rounds progress this agreement too.
        self.start_agree(flag, true).wait()
    }

    /// One round of agreement `seq` (started here), with the engine held: its decision
    /// if held, else one round of progress and the decision if that round brought it.
    ///
    /// The decision is looked for again right after the round, before the caller
    /// pauses: with more ranks than cores a pause is a context switch, and one per rank
    /// per agreement was a third of a failure-free agreement's time at 4 ranks on 2
    /// cores.
    ///
    /// # Errors
    /// [`CommError::Excluded`].
    pub(crate) fn agreement_step(
        &self,
        e: &mut Engine,
        seq: u32,
    ) -> Result<Option<Agreement>, CommError> {
        if let Some(d) = e.comm_mut(self.id).take_decision(seq) {
            return Ok(Some(Agreement::from(d)));
        }
        e.progress();
        if let Some(d) = e.comm_mut(self.id).take_decision(seq) {
            return Ok(Some(Agreement::from(d)));
        }
        if e.excluded() {
            return Err(CommError::Excluded);
        }
        Ok(None)
    }

    /// As [`agree_full`](Self::agree_full), returning the agreed value, or
    /// [`CommError::ProcFailed`] (naming the agreed failed ranks) when some failure was
    /// not acknowledged by every contributor.
    ///
    /// # Errors
    /// `ProcFailed`; `Excluded`.
    pub fn agree(&self, flag: u64) -> Result<u64, CommError> {
        let a = self.agree_full(flag)?;
        if a.all_acked {
            Ok(a.value)
        } else {
            Err(CommError::ProcFailed { ranks: a.failed })
        }
    }

    /// The survivors' communicator (`MPIX_Comm_shrink`): acknowledges and agrees on the
    /// failed set until an agreement succeeds, then builds the communicator of every
    /// rank outside that set, in the same order. Works on a revoked communicator.
    ///
    /// # Errors
    /// `Excluded`.
    pub fn shrink(&self) -> Result<Comm, CommError> {
        let failed = loop {
            self.failure_ack();
            let a = self.agree_full(1)?;
            if a.all_acked {
                break a.failed;
            }
        };
        self.derive_comm(3, 0, Agree::OwnAgreement, |group| {
            group
                .iter()
                .enumerate()
                .filter(|(i, _)| !failed.contains(&(*i as u32)))
                .map(|(_, &w)| w)
                .collect()
        })
    }

    /// A new communicator with the same group (`MPI_Comm_dup`). Collective: the members
    /// agree on its context with an allreduce over this communicator.
    ///
    /// # Errors
    /// [`CommError::Revoked`] on a revoked communicator; `ProcFailed`;
    /// [`CommError::ContextsExhausted`]; `Excluded`.
    pub fn dup(&self) -> Result<Comm, CommError> {
        if self.is_revoked() {
            return Err(CommError::Revoked);
        }
        self.derive_comm(1, 0, Agree::OverParent, |group| group.to_vec())
    }

    /// A new communicator with the same group whose creation neither a revoke of this
    /// one nor a failure interrupts: its context is agreed by agreements over itself
    /// (as a shrink's), which work on a revoked communicator and never wait on a dead
    /// member, so every member that calls it gets it. Costlier than [`dup`](Self::dup)
    /// (two agreements instead of an allreduce). For a library that pairs the
    /// communicator a shrink made with one of its own (the C library's collective
    /// half), since a shrink must succeed despite failures.
    ///
    /// # Errors
    /// [`CommError::ContextsExhausted`]; `Excluded`.
    pub fn twin(&self) -> Result<Comm, CommError> {
        self.derive_comm(9, 0, Agree::OwnAgreement, |group| group.to_vec())
    }

    /// Splits the communicator (`MPI_Comm_split`): ranks with equal `color` form a
    /// communicator, ordered by `key` then by rank here. Collective; every rank learns
    /// every other's (color, key) by point-to-point exchange, so a failed member makes
    /// it return `ProcFailed` (acknowledged failed ranks are left out). The context is
    /// then agreed by one more such exchange among the same ranks.
    ///
    /// # Errors
    /// `ProcFailed`, `Revoked`, [`CommError::ContextsExhausted`], `Excluded`.
    pub fn split(&self, color: u32, key: u32) -> Result<Comm, CommError> {
        const TAG: u32 = super::world::tags::MAX_TAG - 1;
        let (me, n) = (self.rank(), self.size());
        let acked = self.get_failed();
        let live: Vec<u32> = (0..n).filter(|r| !acked.contains(r)).collect();
        let mut table = vec![None; n as usize];
        table[me as usize] = Some((color, key));
        let mine = [color.to_le_bytes(), key.to_le_bytes()].concat();
        self.exchange_live(
            &live,
            TAG,
            &mine,
            "split: a (color, key) message that is not 8 bytes",
            |r, b| {
                let c = u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
                let k = u32::from_le_bytes(b[4..].try_into().expect("4 bytes"));
                table[r as usize] = Some((c, k));
            },
        )?;
        let mut members: Vec<(u32, u32)> = table
            .iter()
            .enumerate()
            .filter_map(|(r, ck)| ck.filter(|(c, _)| *c == color).map(|(_, k)| (k, r as u32)))
            .collect();
        members.sort_unstable();
        let ranks: Vec<u32> = members.into_iter().map(|(_, r)| r).collect();
        self.derive_comm(
            5,
            u64::from(color) << 32,
            Agree::OverLive(&live),
            move |group| ranks.iter().map(|&r| group[r as usize]).collect(),
        )
    }

    /// Creates the `kind` child of this communicator over `group_of(parent group)`, with
    /// a context agreed as `agree` says (see `context.rs`).
    fn derive_comm(
        &self,
        kind: u8,
        salt: u64,
        agree: Agree<'_>,
        group_of: impl FnOnce(&[u32]) -> Vec<u32>,
    ) -> Result<Comm, CommError> {
        let (id, op, group) = {
            let mut e = self.engine.lock();
            let c = e.comm_mut(self.id);
            let child = c.next_child();
            let op = context::op_key(c.context(), child);
            let id = derive(c.key(), kind, child ^ salt);
            let group = group_of(c.group());
            if e.has_comm(id) {
                return Err(CommError::InvalidArgument(format!(
                    "derived communicator id {:#x} already in use",
                    id.0
                )));
            }
            (id, op, group)
        };
        let key = CommKey {
            comm: id,
            epoch: Default::default(),
        };
        let over = match agree {
            Agree::OverParent => Some(context::Over::Parent(self)),
            Agree::OverLive(live) => Some(context::Over::Live(self, live)),
            Agree::OwnAgreement => None,
        };
        match over {
            Some(over) => {
                let ctx = context::agree_context(over, op)?;
                let mut e = self.engine.lock();
                if e.add_comm(key, ctx, group).is_none() {
                    // Not a member: give the id back (every member took it, and they
                    // release it on their own).
                    let _ = e.contexts_mut().release((ctx as u32).into());
                    return Err(CommError::Excluded);
                }
                let facts = e.facts(id);
                drop(e);
                Ok(Comm::new(Arc::clone(&self.engine), facts))
            }
            None => {
                let facts = {
                    let mut e = self.engine.lock();
                    e.add_comm(key, context::UNAGREED, group)
                        .ok_or(CommError::Excluded)?;
                    e.facts(id)
                };
                let child = Comm::new(Arc::clone(&self.engine), facts);
                context::set_agreed_context(&child, op)?;
                Ok(child)
            }
        }
    }
}

/// How a creation agrees on its context.
#[derive(Clone, Copy)]
enum Agree<'a> {
    /// An allreduce over the parent (dup).
    OverParent,
    /// An exchange among these parent ranks (split: its live ranks).
    OverLive(&'a [u32]),
    /// Agreements over the new communicator (shrink: the parent is broken).
    OwnAgreement,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids_differ_by_kind_and_child_and_avoid_reserved() {
        let k = CommKey::default();
        assert_ne!(derive(k, 1, 0), derive(k, 1, 1));
        assert_ne!(derive(k, 1, 0), derive(k, 3, 0));
        assert!(derive(k, 1, 0).0 >= 2);
    }

    #[test]
    fn contexts_exhausted_compares_by_value_and_names_the_bound() {
        let e = CommError::ContextsExhausted {
            capacity: 65_536,
            live: 65_534,
        };
        assert_eq!(e.clone(), e);
        assert_ne!(
            e,
            CommError::ContextsExhausted {
                capacity: 65_536,
                live: 3
            }
        );
        let text = e.to_string();
        assert!(text.contains("65536") && text.contains("65534"), "{text}");
    }
}
