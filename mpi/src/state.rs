//! The library's one piece of process-wide state, the lock that serialises calls, and
//! the body every entry point runs in (the panic guard, the error handler).
//!
//! # Threads
//! MPI is process-wide, so the state is a `static` behind a mutex. Every call holds the
//! mutex for its whole duration, with two exceptions under `MPI_THREAD_MULTIPLE`:
//! `MPI_Send`, `MPI_Ssend` and `MPI_Recv` on an intra-communicator look up their
//! runtime communicator under the mutex, then run the runtime's blocking operation
//! without it ([`Guard::unlocked`]; the runtime is thread-safe, `docs/threads.md`); and
//! a call that waits on requests (`MPI_Wait`, a collective, ...) releases it between two
//! attempts, so another thread can post the send the first one waits for. Each attempt
//! is one non-blocking test of the runtime's requests under the mutex. Below
//! `MPI_THREAD_MULTIPLE` the program promises that calls never overlap, and blocking
//! calls use the runtime's blocking operations directly (its fastest path).

use std::collections::HashMap;
use std::ffi::c_int;
use std::hash::{BuildHasherDefault, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};
use std::thread::ThreadId;

use sf::comm::InterComm;
use sf::{Comm, World};
use steadfast_os::SpinWait;

use crate::consts::*;
use crate::datatype::TypeEntry;
use crate::error::{self, Fail, R};
use crate::request::Req;

/// Where the library is in its life.
pub(crate) enum Phase {
    /// Before `MPI_Init`.
    Before,
    /// Between `MPI_Init` and `MPI_Finalize`.
    Live(Box<Lib>),
    /// After `MPI_Finalize` (MPI cannot be initialised again).
    After,
}

/// The mutex's content.
pub(crate) struct Cell(Phase);

// SAFETY: the runtime's `Comm`s and requests are `Send + Sync` (docs/threads.md); its
// `World` is `!Send` as a policy ("lives on the thread that created it"), not because of
// what it holds: its engine sits behind an `Arc` of a `Sync` structure whose token
// serialises every access, and its reference counts are atomic. Here every value of the
// state is reached only through `LIB`'s mutex, so no two threads ever use one at once,
// and the mutex orders one thread's use before the next's. The raw pointers (user
// buffers of pending requests) are the program's memory, which MPI's rules keep valid
// until the request completes.
unsafe impl Send for Cell {}

static LIB: Mutex<Cell> = Mutex::new(Cell(Phase::Before));

/// A communicator's runtime side: an intra-communicator is two runtime communicators
/// over the same group, one for the program's messages and one for collectives (so a
/// wildcard receive never takes a collective's message); an inter-communicator is the
/// runtime's.
pub(crate) enum CommKind {
    Intra { p2p: Comm, coll: Comm },
    Inter(InterComm),
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
    pub errhandler: Handle,
    /// Collectives started on it: each uses its own tags, so overlapping non-blocking
    /// collectives never take each other's messages.
    pub coll_seq: u32,
    pub name: String,
}

impl CommEntry {
    pub fn new(kind: CommKind, errhandler: Handle, name: impl Into<String>) -> Self {
        let size = match &kind {
            CommKind::Intra { p2p, .. } => p2p.size(),
            CommKind::Inter(ic) => ic.remote_size(),
        };
        CommEntry {
            kind,
            size,
            errhandler,
            coll_seq: 0,
            name: name.into(),
        }
    }

    /// The two runtime communicators of an intra-communicator.
    pub fn intra(&self) -> R<(&Comm, &Comm)> {
        match &self.kind {
            CommKind::Intra { p2p, coll } => Ok((p2p, coll)),
            CommKind::Inter(_) => Err(Fail::new(
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

/// Everything MPI holds between `MPI_Init` and `MPI_Finalize`.
pub(crate) struct Lib {
    pub world: World,
    pub level: c_int,
    pub main_thread: ThreadId,
    pub ft: FtMode,
    next_handle: Handle,
    pub comms: Map<CommEntry>,
    pub requests: Map<Req>,
    /// Messages taken by `MPI_Mprobe`/`Improbe`, with their communicator's handle.
    pub messages: Map<(Handle, sf::comm::Message)>,
    /// Requests freed by `MPI_Request_free` while active: progressed by later calls
    /// and finished (boundedly) by `MPI_Finalize`.
    pub detached: Vec<Req>,
    pub types: Map<TypeEntry>,
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
}

impl Lib {
    pub fn new(world: World, level: c_int, ft: FtMode) -> Self {
        Lib {
            world,
            level,
            main_thread: std::thread::current().id(),
            ft,
            next_handle: FIRST_HANDLE,
            comms: Map::default(),
            requests: Map::default(),
            messages: Map::default(),
            detached: Vec::new(),
            types: Map::default(),
            groups: Map::default(),
            errhandlers: Map::default(),
            infos: Map::default(),
            env_info: Vec::new(),
            parent: MPI_COMM_NULL,
            saved: Vec::new(),
        }
    }

    /// A handle value never handed out before.
    pub fn new_handle(&mut self) -> Handle {
        let h = self.next_handle;
        self.next_handle += 1;
        h
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

fn bad_comm(h: Handle) -> Fail {
    if h == MPI_COMM_NULL {
        Fail::new(MPI_ERR_COMM, "MPI_COMM_NULL")
    } else {
        Fail::new(MPI_ERR_COMM, format!("{h:#x} is not a communicator"))
    }
}

/// The lock held by a call (see the module doc).
pub(crate) struct Guard {
    g: Option<MutexGuard<'static, Cell>>,
}

impl Guard {
    #[inline]
    pub fn lock() -> Guard {
        Guard {
            // A panic while holding it was caught and reported; the state stays usable
            // (each call leaves it consistent before anything can panic).
            g: Some(LIB.lock().unwrap_or_else(|p| p.into_inner())),
        }
    }

    pub fn phase(&mut self) -> &mut Phase {
        &mut self.g.as_mut().expect("held between calls").0
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

    /// Between two attempts of a wait: under `MPI_THREAD_MULTIPLE` lets other threads
    /// in; else spins (then yields) holding the lock.
    pub fn relax(&mut self, spin: &mut SpinWait) {
        let multiple = matches!(self.phase(), Phase::Live(l) if l.multiple());
        if multiple {
            self.g = None;
            std::thread::yield_now();
            self.g = Some(LIB.lock().unwrap_or_else(|p| p.into_inner()));
        } else {
            spin.pause();
        }
    }

    fn release(&mut self) {
        self.g = None;
    }

    /// Runs `f` without the lock and takes it back (a blocking point-to-point call
    /// under `MPI_THREAD_MULTIPLE`: the runtime's communicators are `Send + Sync` and
    /// wait holding its engine for one round at a time, so other threads' calls go on
    /// meanwhile). `f` must not touch the state.
    pub fn unlocked<T>(&mut self, f: impl FnOnce() -> T) -> T {
        self.release();
        let out = f();
        self.g = Some(LIB.lock().unwrap_or_else(|p| p.into_inner()));
        out
    }
}

/// The body of an entry point: runs `f` under the lock with panics caught; an error is
/// handed to the error handler of `comm` (the world's when `comm` is not a live
/// communicator), after the lock is released, since a handler may call MPI.
pub(crate) fn call(comm: Handle, f: impl FnOnce(&mut Guard) -> R<()>) -> c_int {
    let mut guard = Guard::lock();
    let outcome = match catch_unwind(AssertUnwindSafe(|| f(&mut guard))) {
        Ok(r) => r,
        Err(_) => Err(Fail::new(
            MPI_ERR_INTERN,
            "a bug in libsteadfast-mpi (a panic, caught)",
        )),
    };
    match outcome {
        Ok(()) => MPI_SUCCESS,
        Err(fail) => {
            let comm = fail.comm.unwrap_or(comm);
            let (handler, ft) = match guard.lib() {
                Ok(lib) => {
                    let h = lib
                        .comms
                        .get(&comm)
                        .or_else(|| lib.comms.get(&MPI_COMM_WORLD))
                        .map_or(MPI_ERRORS_RETURN, |e| e.errhandler);
                    let f = lib.errhandlers.get(&h).copied();
                    (Handler::of(h, f), lib.ft)
                }
                Err(_) => (Handler::Return, FtMode::Ulfm),
            };
            guard.release();
            error::raise(comm, fail, handler, ft)
        }
    }
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
