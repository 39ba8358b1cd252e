//! The library's one piece of process-wide state, the lock that serialises calls, and
//! the body every entry point runs in (the panic guard, the error handler).
//!
//! # Threads
//! MPI is process-wide, so the state is a `static`. Under `MPI_THREAD_SINGLE` and
//! `MPI_THREAD_FUNNELED` only the thread that initialised MPI (the main thread) may call
//! MPI: it is the state's owner and reaches the state without the mutex (the cost of a
//! call is then its checks and the runtime's work; a lock and an unlock were about half
//! of a small message's cost in this library; its `MPI_Send` and `MPI_Recv` on the world
//! read the state through [`Guard::owned_lib`], without a guard, `p2p_fast`). Another
//! thread's call there is refused with `MPI_ERR_OTHER` before it touches anything (see
//! [`Guard::lock`]). Under `MPI_THREAD_SERIALIZED` and `MPI_THREAD_MULTIPLE` (and before
//! `MPI_Init`, after `MPI_Finalize`) every call holds the mutex for its whole duration, with two
//! exceptions under `MPI_THREAD_MULTIPLE`: `MPI_Send`, `MPI_Ssend` and `MPI_Recv` on an
//! intra-communicator look up their runtime communicator under the mutex, then run the
//! runtime's blocking operation without it ([`Guard::unlocked`]; the runtime is
//! thread-safe, `docs/threads.md`; `MPIX_Comm_agree`, `shrink`, `MPI_Comm_free`, `dup`,
//! `split`, `create` and `create_group` run their runtime rounds so too, at every
//! level); and a call that waits on requests (`MPI_Wait`, a collective, ...) releases
//! it between two attempts, so another thread can post the send the first one waits
//! for. Each attempt is one non-blocking test of the runtime's requests under the
//! mutex. Below
//! `MPI_THREAD_MULTIPLE` the program promises that calls never overlap, and blocking
//! calls use the runtime's blocking operations directly (its fastest path).

use std::cell::{Cell, UnsafeCell};
use std::collections::HashMap;
use std::ffi::c_int;
use std::hash::{BuildHasherDefault, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread::ThreadId;

use crate::comm_table::CommTable;
use sf::comm::InterComm;
use sf::{Comm, World};
use steadfast_os::SpinWait;

use crate::consts::*;
use crate::datatype::TypeEntry;
use crate::error::{self, Fail, R};
use crate::op::UserOp;
use crate::reqtable::Requests;
use crate::request::Req;

/// Where the library is in its life.
pub(crate) enum Phase {
    /// Before the runtime came up (the first `MPI_Init` or `MPI_Session_init`).
    Before,
    /// While the runtime is up: the world model or a session uses it.
    Live(Box<Lib>),
    /// After the runtime went down with its last user (a session, or `MPI_Init` when
    /// the world model never started, brings it up again).
    After,
}

/// The state and its lock.
struct Lock {
    /// Held by every call that does not own the state (see the module doc).
    mutex: Mutex<()>,
    phase: UnsafeCell<Phase>,
    /// The objects made while the runtime is not up ([`Objects`]); moved into the
    /// [`Lib`] when it comes up and back when it goes down.
    early: UnsafeCell<Option<Box<Early>>>,
}

/// What [`Objects`] are kept in while the runtime is not up.
struct Early {
    next_handle: Handle,
    infos: Map<Vec<(String, String)>>,
    errhandlers: Map<ErrFn>,
    /// `MPI_INFO_ENV` (empty while the runtime is not up).
    env_info: Vec<(String, String)>,
}

/// The objects MPI 4.1 §11.4.1 lets a program make and use at any time, before the
/// runtime is up and after it went down (info objects, error handlers: a program makes
/// the info and the handler it passes to `MPI_Session_init`), with the handle counter
/// they draw from: the [`Lib`]'s while it is up, else kept aside.
pub(crate) struct Objects<'a> {
    next_handle: &'a mut Handle,
    pub infos: &'a mut Map<Vec<(String, String)>>,
    pub errhandlers: &'a mut Map<ErrFn>,
    pub env_info: &'a mut Vec<(String, String)>,
}

impl Objects<'_> {
    /// A handle value never handed out before.
    pub fn new_handle(&mut self) -> Handle {
        let h = *self.next_handle;
        *self.next_handle += 1;
        h
    }
}

// SAFETY: `phase` and `early` are reached only through a [`Guard`] that either holds `mutex` or is
// the owner's (the main thread below `MPI_THREAD_SERIALIZED`, while no other thread may
// reach it: `OWNER`'s protocol), so no two threads ever use them at once, and the mutex
// (or the owner being one thread) orders one use before the next. What it holds may
// move between threads that way: the runtime's `Comm`s and requests are
// `Send + Sync` (docs/threads.md); its `World` is `!Send` as a policy ("lives on the
// thread that created it"), not because of what it holds: its engine sits behind an
// `Arc` of a `Sync` structure whose token serialises every access, and its reference
// counts are atomic. The raw pointers (user buffers of pending requests) are the
// program's memory, which MPI's rules keep valid until the request completes.
unsafe impl Sync for Lock {}

static LIB: Lock = Lock {
    mutex: Mutex::new(()),
    phase: UnsafeCell::new(Phase::Before),
    early: UnsafeCell::new(None),
};

/// The owner of the state, when it has one: the `pthread_self` of the thread that
/// initialised MPI below `MPI_THREAD_SERIALIZED`, from the end of `MPI_Init` to
/// `MPI_Finalize`; 0 otherwise. Written only by that thread and only while it holds
/// the mutex.
static OWNER: AtomicUsize = AtomicUsize::new(0);

/// This thread's identity as `OWNER` keeps it (never 0; two live threads never share
/// one): `steadfast_os::thread_id`, one load on x86-64 Linux where `pthread_self` is a
/// call through the PLT at every MPI call.
#[inline(always)]
fn this_thread() -> usize {
    steadfast_os::thread_id::current()
}

/// A communicator's runtime side: an intra-communicator is two runtime communicators
/// over the same group, one for the program's messages and one for collectives (so a
/// wildcard receive never takes a collective's message); an inter-communicator is the
/// runtime's.
pub(crate) enum CommKind {
    Intra {
        p2p: Comm,
        coll: Comm,
    },
    /// An inter-communicator: `p2p` for the program's messages, `coll` (a dup of it,
    /// `comm::inter_half`) for the collectives, as an intra-communicator's halves.
    Inter {
        p2p: InterComm,
        coll: InterComm,
    },
}

/// Hashes a handle (a unique integer) with one multiplication: the tables are on
/// every call's path, where SipHash would cost more than the rest of the lookup.
#[derive(Default)]
pub(crate) struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        // Fibonacci hashing: spreads small consecutive integers over the high bits,
        // which the table's control bytes use.
        self.0 = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A table keyed by handles.
pub(crate) type Map<V> = HashMap<Handle, V, BuildHasherDefault<HandleHasher>>;

/// A communicator handle's state.
pub(crate) struct CommEntry {
    pub kind: CommKind,
    /// Its size (the remote group's for an inter-communicator): what ranks are
    /// checked against, without asking the runtime.
    pub size: u32,
    /// This process's rank in it (the local group's for an inter-communicator): fixed
    /// for its life, kept here since the runtime's `rank()` takes its engine.
    pub rank: u32,
    pub errhandler: Handle,
    /// Collectives started on it: each uses its own tags, so overlapping non-blocking
    /// collectives never take each other's messages.
    pub coll_seq: u32,
    pub name: String,
    /// Its Cartesian grid, if it has one (`topo.rs`).
    pub cart: Option<Box<crate::topo::Cart>>,
    /// Its graph, if it has one (`graph.rs`).
    pub graph: Option<Box<crate::graph::Graph>>,
    /// Its distributed graph, if it has one (`dist_graph.rs`).
    pub dist_graph: Option<Box<crate::dist_graph::DistGraph>>,
    /// Its partitioned initializations, counted (`partitioned.rs`).
    pub part_seqs: crate::partitioned::Seqs,
}

/// A communicator's topology, as a dup copies it (MPI 4.1 §8.4).
#[derive(Clone, Default)]
pub(crate) struct Topology {
    cart: Option<Box<crate::topo::Cart>>,
    graph: Option<Box<crate::graph::Graph>>,
    dist_graph: Option<Box<crate::dist_graph::DistGraph>>,
}

impl CommEntry {
    /// Its topology (none, or one of the three kinds).
    pub fn topology(&self) -> Topology {
        Topology {
            cart: self.cart.clone(),
            graph: self.graph.clone(),
            dist_graph: self.dist_graph.clone(),
        }
    }

    /// Gives it topology `t` (a dup's parent's).
    pub fn set_topology(&mut self, t: Topology) {
        (self.cart, self.graph, self.dist_graph) = (t.cart, t.graph, t.dist_graph);
    }

    pub fn new(kind: CommKind, errhandler: Handle, name: impl Into<String>) -> Self {
        let (size, rank) = match &kind {
            CommKind::Intra { p2p, .. } => (p2p.size(), p2p.rank()),
            CommKind::Inter { p2p, .. } => (p2p.remote_size(), p2p.rank()),
        };
        CommEntry {
            kind,
            size,
            rank,
            errhandler,
            coll_seq: 0,
            name: name.into(),
            cart: None,
            graph: None,
            dist_graph: None,
            part_seqs: Default::default(),
        }
    }

    /// The runtime communicators a collective's messages travel on, the program's
    /// and the collective twin: an intra-communicator's two halves, or the
    /// communicators over both groups under an inter-communicator's (`InterComm::union`,
    /// whose ranks are union ranks).
    pub fn halves(&self) -> (&Comm, &Comm) {
        match &self.kind {
            CommKind::Intra { p2p, coll } => (p2p, coll),
            CommKind::Inter { p2p, coll } => (p2p.union(), coll.union()),
        }
    }

    /// The two runtime communicators of an intra-communicator.
    pub fn intra(&self) -> R<(&Comm, &Comm)> {
        match &self.kind {
            CommKind::Intra { p2p, coll } => Ok((p2p, coll)),
            CommKind::Inter { .. } => Err(Fail::new(
                MPI_ERR_COMM,
                "this operation needs an intra-communicator",
            )),
        }
    }
}

/// A user error handler (`MPI_Comm_errhandler_function`).
pub(crate) type ErrFn = unsafe extern "C" fn(*mut Handle, *mut c_int, ...);

/// What `--with-ft` asked for (`STEADFAST_WITH_FT`, set by `steadfast-run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FtMode {
    /// ULFM: failures are errors the program handles.
    Ulfm,
    /// No fault tolerance: a failure is fatal, whatever the error handler.
    Off,
}

/// Where the world model (`MPI_Init` .. `MPI_Finalize`) is while the runtime is up:
/// the runtime comes up at the first `MPI_Init` or `MPI_Session_init`, so the world
/// model's predefined communicators exist before `MPI_Init` registers them.
pub(crate) enum WorldModel {
    /// Not initialised: `MPI_COMM_WORLD`, `MPI_COMM_SELF` and the parent (when spawned),
    /// made with the runtime, wait here for `MPI_Init`.
    Ready(Vec<(Handle, CommEntry)>),
    /// Between `MPI_Init` and `MPI_Finalize`: they are in the communicator table.
    Live,
    /// After `MPI_Finalize`, while sessions keep the runtime up.
    Ended,
}

/// Everything MPI holds while the runtime is up: from the first `MPI_Init` or
/// `MPI_Session_init` to the end of the last of the world model and the sessions.
pub(crate) struct Lib {
    pub world: World,
    /// The process's world: the runtime communicator under `MPI_COMM_WORLD` (its own
    /// half), over which sessions make their communicators (`session.rs`).
    pub proc_world: Comm,
    /// The world model's state.
    pub world_model: WorldModel,
    /// The live sessions (`session.rs`).
    pub sessions: Map<crate::session::Session>,
    pub level: c_int,
    pub main_thread: ThreadId,
    pub ft: FtMode,
    next_handle: Handle,
    pub comms: CommTable<CommEntry>,
    pub requests: Requests,
    /// Messages taken by `MPI_Mprobe`/`Improbe`, with their communicator's handle.
    /// And the offset of the communicator's peers (`p2p::peers`).
    pub messages: Map<(Handle, sf::comm::Message, u32)>,
    /// Requests freed by `MPI_Request_free` while active: progressed by later calls
    /// and finished (boundedly) by `MPI_Finalize`.
    pub detached: Vec<Req>,
    /// The buffers attached for buffered sends (`bsend.rs`).
    pub buffers: crate::bsend::Buffers,
    /// The program's attribute keys and values (`attr.rs`).
    pub attrs: crate::attr::Attrs,
    pub types: Map<TypeEntry>,
    /// The layouts of the types with gaps (`typemap`).
    pub layouts: Map<std::sync::Arc<crate::typemap::Layout>>,
    /// The packed twins of the types with gaps that reductions used (`reduce_packed`).
    pub twins: crate::reduce_packed::Twins,
    /// Names given by `MPI_Type_set_name` (`type_name`).
    pub type_names: Map<String>,
    /// How each derived type was made (`type_contents`).
    pub type_contents: Map<std::sync::Arc<crate::type_contents::Contents>>,
    /// Operations made by `MPI_Op_create` (`op`).
    pub ops: Map<UserOp>,
    /// Groups as lists of world ranks.
    pub groups: Map<Vec<u32>>,
    pub errhandlers: Map<ErrFn>,
    pub infos: Map<Vec<(String, String)>>,
    /// `MPI_INFO_ENV`'s content.
    pub env_info: Vec<(String, String)>,
    /// Communicators saved by `MPIX_Comm_save` (or rejoined), by name.
    pub saved: Vec<(String, Handle)>,
    /// `MPI_Comm_get_parent`'s inter-communicator (`MPI_COMM_NULL`: not spawned).
    pub parent: Handle,
    /// The error handler `MPI_COMM_WORLD` and `MPI_COMM_SELF` started with (the
    /// launcher's `-initial-errhandler`, else `MPI_ERRORS_ARE_FATAL`).
    pub initial_errhandler: Handle,
    /// The outcomes table of the `*all` / `*some` calls, kept between calls so that
    /// they allocate only when a call names more requests than any before
    /// (`request::Scratch`).
    pub scratch: Vec<Option<(crate::request::Outcome, Handle)>>,
    /// One-sided communication's windows (`win.rs`).
    pub wins: Map<crate::win::WinEntry>,
    /// Open files and `MPI_FILE_NULL`'s error handler (`file.rs`).
    pub files: crate::file::Files,
}

impl Lib {
    pub fn new(world: World, proc_world: Comm, level: c_int, ft: FtMode) -> Self {
        Lib {
            world,
            proc_world,
            world_model: WorldModel::Ready(Vec::new()),
            sessions: Map::default(),
            level,
            main_thread: std::thread::current().id(),
            ft,
            next_handle: FIRST_HANDLE,
            comms: CommTable::default(),
            requests: Requests::default(),
            messages: Map::default(),
            detached: Vec::new(),
            buffers: Default::default(),
            attrs: Default::default(),
            types: Map::default(),
            layouts: Map::default(),
            twins: Default::default(),
            type_names: Map::default(),
            type_contents: Map::default(),
            ops: Map::default(),
            groups: Map::default(),
            errhandlers: Map::default(),
            infos: Map::default(),
            env_info: Vec::new(),
            parent: MPI_COMM_NULL,
            initial_errhandler: MPI_ERRORS_ARE_FATAL,
            saved: Vec::new(),
            scratch: Vec::new(),
            wins: Map::default(),
            files: Default::default(),
        }
    }

    /// A handle value never handed out before.
    pub fn new_handle(&mut self) -> Handle {
        let h = self.next_handle;
        self.next_handle += 1;
        h
    }

    /// Keeps a new request; its handle.
    #[inline]
    pub fn add_request(&mut self, r: Req) -> R<Handle> {
        self.requests.insert(r).ok_or_else(too_many_requests)
    }

    #[inline]
    pub fn comm(&self, h: Handle) -> R<&CommEntry> {
        self.comms.get(&h).ok_or_else(|| bad_comm(h))
    }

    pub fn comm_mut(&mut self, h: Handle) -> R<&mut CommEntry> {
        self.comms.get_mut(&h).ok_or_else(|| bad_comm(h))
    }

    /// Clones of the two runtime communicators of intra-communicator `h`.
    pub fn intra(&self, h: Handle) -> R<(Comm, Comm)> {
        let (p, c) = self.comm(h)?.intra()?;
        Ok((p.clone(), c.clone()))
    }

    /// The next collective's tag on `h` (the same at every member: collectives are
    /// called in the same order everywhere).
    pub fn coll_tag(&mut self, h: Handle) -> R<u32> {
        let e = self.comm_mut(h)?;
        e.coll_seq = e.coll_seq.wrapping_add(1);
        Ok(e.coll_seq & 0xf_ffff)
    }

    #[inline]
    pub fn multiple(&self) -> bool {
        self.level == MPI_THREAD_MULTIPLE
    }
}

/// The failure of a request table with no free slot.
#[cold]
pub(crate) fn too_many_requests() -> Fail {
    Fail::new(MPI_ERR_NO_MEM, "too many live requests")
}

#[cold]
fn bad_comm(h: Handle) -> Fail {
    if h == MPI_COMM_NULL {
        Fail::new(MPI_ERR_COMM, "MPI_COMM_NULL")
    } else {
        Fail::new(MPI_ERR_COMM, format!("{h:#x} is not a communicator"))
    }
}

/// A call's access to the state: the mutex, or ownership (see the module doc).
pub(crate) struct Guard {
    /// The mutex, while this call holds it.
    g: Option<MutexGuard<'static, ()>>,
    /// The call is the owner's: the state is its alone without the mutex.
    owner: bool,
}

impl Guard {
    /// Access to the state for this call; `None` for a thread that may not call MPI
    /// (not the main thread under `MPI_THREAD_SINGLE` or `MPI_THREAD_FUNNELED`): it
    /// must not touch the state, which the main thread uses without the mutex.
    #[inline]
    pub fn lock() -> Option<Guard> {
        // ORDERING: Relaxed. The owner reads its own write (program order). Another
        // thread that reads an owner refuses without touching the state; one that reads
        // 0 takes the mutex and reads again below, under it: the owner writes `OWNER`
        // only holding the mutex, so that read sees the last write.
        let owner = OWNER.load(Ordering::Relaxed);
        if owner != 0 {
            return (owner == this_thread()).then_some(Guard {
                g: None,
                owner: true,
            });
        }
        // A panic while holding it was caught and reported; the state stays usable
        // (each call leaves it consistent before anything can panic).
        let g = LIB.mutex.lock().unwrap_or_else(|p| p.into_inner());
        // ORDERING: Relaxed; under the mutex, see above.
        match OWNER.load(Ordering::Relaxed) {
            0 => Some(Guard {
                g: Some(g),
                owner: false,
            }),
            // MPI_Init made another thread the owner while this one waited for the mutex.
            _ => None,
        }
    }

    /// The owner's access, without the mutex: `Some` only on the thread that owns the
    /// state (below `MPI_THREAD_SERIALIZED`, between `MPI_Init` and `MPI_Finalize`).
    /// The fast entries' check (one load and a compare): any other thread, and every
    /// call at the higher thread levels, takes [`Guard::lock`].
    #[inline(always)]
    pub fn owned() -> Option<Guard> {
        // ORDERING: Relaxed, as in `lock`: the owner reads its own write; any other
        // thread reads a value that is not its own identity (never 0 for a live
        // thread) and goes to `lock`.
        let owner = OWNER.load(Ordering::Relaxed);
        (owner == this_thread()).then_some(Guard {
            g: None,
            owner: true,
        })
    }

    /// The live state for the owner's fast entries (`p2p_fast`), without a [`Guard`]:
    /// `None` on any thread but the owner's, or when the state is not live.
    ///
    /// # Safety
    /// The borrow ends before the calling entry point returns, and no [`Guard`] of this
    /// thread, nor another borrow from this function, is used while it lives.
    #[inline(always)]
    pub unsafe fn owned_lib<'a>() -> Option<&'a mut Lib> {
        // ORDERING: Relaxed, as in `owned`.
        if OWNER.load(Ordering::Relaxed) != this_thread() {
            return None;
        }
        // SAFETY: this thread owns the state, so no other thread reaches it (`Lock`'s
        // SAFETY), and the caller makes no other access while the borrow lives.
        match unsafe { &mut *LIB.phase.get() } {
            Phase::Live(l) => Some(l),
            _ => None,
        }
    }

    #[inline]
    pub fn phase(&mut self) -> &mut Phase {
        assert!(self.owner || self.g.is_some(), "held between calls");
        // SAFETY: this guard holds the mutex or is the owner's (checked just above), so
        // no other thread reaches the state meanwhile (`Lock`'s SAFETY), and the
        // returned borrow of `self` keeps this thread from making a second one.
        unsafe { &mut *LIB.phase.get() }
    }

    /// The objects that exist at any time ([`Objects`]).
    pub fn objects(&mut self) -> Objects<'_> {
        assert!(self.owner || self.g.is_some(), "held between calls");
        // SAFETY: as in `phase`: this guard holds the mutex or is the owner's, and the
        // returned borrows of `self` keep this thread from making others.
        let (phase, early) = unsafe { (&mut *LIB.phase.get(), &mut *LIB.early.get()) };
        if let Phase::Live(l) = phase {
            return Objects {
                next_handle: &mut l.next_handle,
                infos: &mut l.infos,
                errhandlers: &mut l.errhandlers,
                env_info: &mut l.env_info,
            };
        }
        let e = early.get_or_insert_with(|| {
            Box::new(Early {
                next_handle: FIRST_HANDLE,
                infos: Map::default(),
                errhandlers: Map::default(),
                env_info: Vec::new(),
            })
        });
        Objects {
            next_handle: &mut e.next_handle,
            infos: &mut e.infos,
            errhandlers: &mut e.errhandlers,
            env_info: &mut e.env_info,
        }
    }

    /// Moves the objects made while the runtime was not up into `lib` (it comes up).
    pub fn adopt_early(&mut self, lib: &mut Lib) {
        assert!(self.owner || self.g.is_some(), "held between calls");
        // SAFETY: as in `phase`.
        if let Some(e) = unsafe { &mut *LIB.early.get() }.take() {
            lib.next_handle = lib.next_handle.max(e.next_handle);
            lib.infos.extend(e.infos);
            lib.errhandlers.extend(e.errhandlers);
        }
    }

    /// Keeps `lib`'s objects (and its handle counter) for after it (it goes down).
    pub fn keep_objects(&mut self, lib: &mut Lib) {
        assert!(self.owner || self.g.is_some(), "held between calls");
        let e = Early {
            next_handle: lib.next_handle,
            infos: std::mem::take(&mut lib.infos),
            errhandlers: std::mem::take(&mut lib.errhandlers),
            env_info: Vec::new(),
        };
        // SAFETY: as in `phase`.
        *unsafe { &mut *LIB.early.get() } = Some(Box::new(e));
    }

    /// The live state, or `MPI_ERR_OTHER` before `MPI_Init` / after `MPI_Finalize`.
    #[inline]
    pub fn lib(&mut self) -> R<&mut Lib> {
        match self.phase() {
            Phase::Live(l) => Ok(l),
            Phase::Before => Err(Fail::new(MPI_ERR_OTHER, "MPI is not initialized")),
            Phase::After => Err(Fail::new(MPI_ERR_OTHER, "MPI was finalized")),
        }
    }

    /// Makes this thread the state's owner when `level` allows (`MPI_Init`, holding
    /// the mutex, once the state is live): its later calls skip the mutex.
    pub fn own_below_serialized(&mut self, level: c_int) {
        if self.g.is_some() && matches!(level, MPI_THREAD_SINGLE | MPI_THREAD_FUNNELED) {
            // ORDERING: Relaxed, written under the mutex; see `lock`.
            OWNER.store(this_thread(), Ordering::Relaxed);
        }
    }

    /// Ends ownership (`MPI_Finalize`): takes the mutex for the rest of the call, so
    /// other threads' calls find the state again behind it.
    pub fn disown(&mut self) {
        if self.owner {
            self.g = Some(LIB.mutex.lock().unwrap_or_else(|p| p.into_inner()));
            // ORDERING: Relaxed, written under the mutex; see `lock`.
            OWNER.store(0, Ordering::Relaxed);
            self.owner = false;
        }
    }

    /// Between two attempts of a wait: under `MPI_THREAD_MULTIPLE` lets other threads
    /// in; else spins (then yields) holding the lock.
    pub fn relax(&mut self, spin: &mut SpinWait) {
        self.run_deferred();
        let multiple = matches!(self.phase(), Phase::Live(l) if l.multiple());
        if multiple && !self.owner {
            self.g = None;
            std::thread::yield_now();
            self.g = Some(LIB.mutex.lock().unwrap_or_else(|p| p.into_inner()));
        } else {
            spin.pause();
        }
    }

    /// Runs the user reduction functions this thread's non-blocking reductions queued
    /// (`op_deferred`), with the call's access given up as [`Guard::unlocked`] does.
    #[inline]
    pub fn run_deferred(&mut self) {
        if crate::op_deferred::any_queued() {
            self.unlocked(crate::op_deferred::run_queued);
        }
    }

    /// Gives up access for the rest of the call (before an error handler, which may
    /// call MPI).
    fn release(&mut self) {
        self.g = None;
        self.owner = false;
    }

    /// Runs `f` without the lock and takes it back (a blocking point-to-point call
    /// under `MPI_THREAD_MULTIPLE`, an agreement, a shrink, a free, a dup: the runtime's
    /// communicators are `Send + Sync` and wait holding its engine for one round at a
    /// time, so other threads' calls go on meanwhile). `f` must not touch the state. The owner has no lock to give up.
    pub fn unlocked<T>(&mut self, f: impl FnOnce() -> T) -> T {
        if self.owner {
            return f();
        }
        self.g = None;
        let out = f();
        self.g = Some(LIB.mutex.lock().unwrap_or_else(|p| p.into_inner()));
        out
    }
}

/// The body of an entry point: runs `f` under the lock with panics caught; an error is
/// handed to the error handler of `comm` (the world's when `comm` is not a live
/// communicator), after the lock is released, since a handler may call MPI.
/// A thread that may not call MPI gets `MPI_ERR_OTHER`, without a handler (which
/// lives in the state it may not touch).
pub(crate) fn call(comm: Handle, f: impl FnOnce(&mut Guard) -> R<()>) -> c_int {
    let Some(guard) = Guard::lock() else {
        return wrong_thread();
    };
    run(guard, comm, f)
}

/// [`call`]'s body once `guard` is held: `f` with panics caught, a failure handed to
/// [`failed`] (out of line, so that an entry point's own code is only its success path).
/// The guarded closure returns a boxed failure (16 bytes with the panic case, in
/// registers) rather than the 48-byte `R<()>`, which went through memory at every call.
#[inline(always)]
fn run(mut guard: Guard, comm: Handle, f: impl FnOnce(&mut Guard) -> R<()>) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| f(&mut guard).err().map(boxed)));
    // What the call's tests queued runs before it returns (the request then completes
    // at the next test).
    guard.run_deferred();
    match outcome {
        Ok(None) => MPI_SUCCESS,
        Ok(Some(fail)) => failed(guard, comm, *fail),
        Err(_) => failed(
            guard,
            comm,
            Fail::new(
                MPI_ERR_INTERN,
                "a bug in libsteadfast-mpi (a panic, caught)",
            ),
        ),
    }
}

/// A failure boxed, off the success path.
#[cold]
#[inline(never)]
pub(crate) fn boxed(fail: Fail) -> Box<Fail> {
    Box::new(fail)
}

thread_local! {
    /// Set by [`call_nested`] until the entry point it calls has failed or returned.
    static NESTED: Cell<bool> = const { Cell::new(false) };
    /// That entry point's failure, for the outer call to raise.
    static NESTED_FAIL: Cell<Option<Box<Fail>>> = const { Cell::new(None) };
}

/// Calls entry point `f` (an `MPI_`/`PMPI_` function) from within another call, with
/// the outer call's access given up ([`Guard::unlocked`]): a failure of `f` is not
/// raised on an error handler but returned, for the outer call to raise once
/// (`MPI_Start` of a persistent collective calls the non-blocking one this way).
pub(crate) fn call_nested(g: &mut Guard, f: impl FnOnce() -> c_int) -> R<()> {
    NESTED.with(|n| n.set(true));
    let rc = g.unlocked(f);
    NESTED.with(|n| n.set(false));
    let fail = NESTED_FAIL.with(|f| f.take());
    match (rc, fail) {
        (MPI_SUCCESS, _) => Ok(()),
        (_, Some(fail)) => Err(*fail),
        (rc, None) => Err(Fail::new(rc, "the call failed")),
    }
}

/// The `comm` argument of the calls that name no communicator (nor window or file):
/// their errors are raised as [`no_object_comm`] says.
pub(crate) const NO_OBJECT: Handle = MPI_COMM_NULL;

/// Where an error that concerns no live communicator is raised (a call naming none, or
/// an invalid communicator handle). MPI 4.1 (§9.3) says `MPI_COMM_SELF`; programs
/// written for MPI 3 set `MPI_COMM_WORLD`'s handler and expect it (MPICH's error
/// tests do). So: `MPI_COMM_SELF` once the program has given it another handler than
/// the one it started with, else `MPI_COMM_WORLD`.
fn no_object_comm(lib: &Lib) -> Handle {
    match lib.comms.get(&MPI_COMM_SELF) {
        Some(e) if e.errhandler != lib.initial_errhandler => MPI_COMM_SELF,
        _ => MPI_COMM_WORLD,
    }
}

/// A call's failure: handed to the error handler of the communicator it is raised on
/// (`comm`, the call's, unless `fail` names one; [`no_object_comm`] when that is not a
/// live communicator), after `guard` is released, since a handler may call MPI; the
/// code the call returns.
#[cold]
#[inline(never)]
pub(crate) fn failed(mut guard: Guard, comm: Handle, fail: Fail) -> c_int {
    if NESTED.with(|n| n.replace(false)) {
        // An entry point called by another (`call_nested`): the failure is the outer
        // call's, raised once, by it.
        let class = fail.class;
        NESTED_FAIL.with(|f| f.replace(Some(Box::new(fail))));
        return class;
    }
    let mut comm = fail.comm.unwrap_or(comm);
    let (handler, ft) = match guard.lib() {
        Ok(lib) => {
            if !lib.comms.contains_key(&comm) {
                comm = no_object_comm(lib);
            }
            // No world model (sessions only): the initial error handler (MPI 4.1 §9.3).
            let fallback = match lib.world_model {
                WorldModel::Live => MPI_ERRORS_RETURN,
                _ => lib.initial_errhandler,
            };
            let h = lib.comms.get(&comm).map_or(fallback, |e| e.errhandler);
            let f = lib.errhandlers.get(&h).copied();
            (Handler::of(h, f), lib.ft)
        }
        Err(_) => (Handler::Return, FtMode::Ulfm),
    };
    guard.release();
    error::raise(comm, fail, handler, ft)
}

/// The refusal of a call from a thread other than the main one under
/// `MPI_THREAD_SINGLE` or `MPI_THREAD_FUNNELED`.
#[cold]
pub(crate) fn wrong_thread() -> c_int {
    log::warn!(
        "an MPI call from a thread other than the main one, under MPI_THREAD_SINGLE or \
         MPI_THREAD_FUNNELED: refused (MPI_ERR_OTHER)"
    );
    MPI_ERR_OTHER
}

/// What an error handler does.
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    Return,
    Fatal,
    User(ErrFn),
}

impl Handler {
    pub fn of(h: Handle, f: Option<ErrFn>) -> Handler {
        match (h, f) {
            (_, Some(f)) => Handler::User(f),
            (MPI_ERRORS_RETURN, _) => Handler::Return,
            _ => Handler::Fatal,
        }
    }
}
