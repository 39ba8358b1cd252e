//! Windows of one-sided communication (MPI 4.1 chapter 12), active target: creation
//! (`MPI_Win_create` over the program's memory, `MPI_Win_allocate`), `MPI_Win_free`,
//! `MPI_Win_fence`, the window's group, attributes, name and error handler. The
//! communication calls and the fence's accumulate protocol are in `rma`, post, start,
//! complete and wait in `pscw`.
//!
//! A window is the runtime's [`Window`] (`src/comm/window.rs`: puts and gets complete
//! when they return, by single copy within a node and fabric RMA across nodes) over the
//! program's memory, plus what MPI adds: every rank's `disp_unit` (exchanged at
//! creation, so a displacement is scaled by the target's unit), and the accumulates of
//! the current epoch, which the fence applies (see `rma`'s module doc for why that
//! makes them atomic). The memory of a window is never seen through a Rust reference:
//! peers write it while this process runs.
//!
//! Errors of a call on a window go to the window's error handler (`win_call`), which
//! starts as the one `MPI_COMM_WORLD` started with (`MPI_ERRORS_ARE_FATAL` unless the
//! launcher's `-initial-errhandler` says otherwise).

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use sf::comm::{ReduceOp, Window, ALLREDUCE_MAX};
use sf::Comm;

use crate::consts::*;
use crate::error::{self, Fail, R};
use crate::rma::Pending;
use crate::state::{call, ErrFn, Guard, Handler, Lib, NO_OBJECT};
use crate::util::{out, read_cstr, write_str};

/// `MPI_WIN_NULL` (the ABI's value).
pub(crate) const MPI_WIN_NULL: Handle = 0x110;
/// `MPI_ERR_WIN`, `MPI_ERR_RMA_RANGE`, `MPI_ERR_SIZE`, `MPI_ERR_DISP`,
/// `MPI_ERR_RMA_SYNC`.
pub(crate) const MPI_ERR_WIN: c_int = 60;
pub(crate) const MPI_ERR_RMA_RANGE: c_int = 49;
pub(crate) const MPI_ERR_SIZE: c_int = 55;
pub(crate) const MPI_ERR_DISP: c_int = 26;
pub(crate) const MPI_ERR_RMA_SYNC: c_int = 51;
/// The window attribute keys (the MPI 5.0 ABI's values).
const MPI_WIN_BASE: c_int = 20001;
const MPI_WIN_DISP_UNIT: c_int = 20002;
const MPI_WIN_SIZE: c_int = 20003;
const MPI_WIN_CREATE_FLAVOR: c_int = 20004;
const MPI_WIN_MODEL: c_int = 20005;
/// `MPI_WIN_UNIFIED`: a put is in the target's memory when it completes, and the
/// program's own stores are what peers read (one copy of the memory).
const MPI_WIN_UNIFIED: c_int = 31;
const MPI_WIN_FLAVOR_ALLOCATE: c_int = 41;
const MPI_WIN_FLAVOR_CREATE: c_int = 42;

/// A window handle's state.
pub(crate) struct WinEntry {
    /// Shared with calls that run without the library's lock.
    pub win: Arc<Window<'static>>,
    pub rank: u32,
    pub size: u32,
    /// The world ranks of its group (`MPI_Win_get_group`).
    group: Vec<u32>,
    /// Every rank's displacement unit.
    pub disp_units: Vec<u64>,
    /// The attribute values `MPI_Win_get_attr` points to (boxed: stable addresses).
    base: usize,
    size_attr: Box<isize>,
    disp_attr: Box<c_int>,
    flavor: Box<c_int>,
    model: Box<c_int>,
    pub errhandler: Handle,
    name: String,
    /// This epoch's accumulates, in the order they were called.
    pub pending: Vec<Pending>,
    /// The origins of the exposure epoch `MPI_Win_post` started (`pscw`).
    pub exposure: Option<Vec<u32>>,
    /// The targets of the access epoch `MPI_Win_start` started (`pscw`).
    pub access: Option<Vec<u32>>,
    /// Per target: 0 unlocked, else the passive epoch's lock kind (`passive`).
    pub locked: Vec<u8>,
    /// The thread that serves other ranks' passive epochs on this rank (`passive`).
    agent: Option<crate::passive::Agent>,
    /// The segment of a shared-memory window (`shared_win`), unmapped after the free.
    pub shared: Option<crate::shared_win::SharedSeg>,
}

impl WinEntry {
    /// The window rank of world rank `w`.
    pub fn group_rank(&self, w: u32) -> Option<u32> {
        self.group.iter().position(|&m| m == w).map(|r| r as u32)
    }
}

/// The window of handle `h`.
pub(crate) fn entry(lib: &mut Lib, h: Handle) -> R<&mut WinEntry> {
    lib.wins.get_mut(&h).ok_or_else(|| bad_win(h))
}

#[cold]
fn bad_win(h: Handle) -> Fail {
    if h == MPI_WIN_NULL {
        Fail::new(MPI_ERR_WIN, "MPI_WIN_NULL")
    } else {
        Fail::new(MPI_ERR_WIN, format!("{h:#x} is not a window"))
    }
}

/// The body of an entry point on window `win`: [`call`]'s, with a failure handed to the
/// window's error handler (the no-object rule of `state` when `win` is not a window).
pub(crate) fn win_call(win: Handle, f: impl FnOnce(&mut Guard) -> R<()>) -> c_int {
    let Some(mut guard) = Guard::lock() else {
        return crate::state::wrong_thread();
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| f(&mut guard)));
    guard.run_deferred();
    let fail = match outcome {
        Ok(Ok(())) => return MPI_SUCCESS,
        Ok(Err(fail)) => fail,
        Err(_) => Fail::new(
            MPI_ERR_INTERN,
            "a bug in libsteadfast-mpi (a panic, caught)",
        ),
    };
    let found = guard.lib().ok().and_then(|lib| {
        let h = lib.wins.get(&win)?.errhandler;
        Some((Handler::of(h, lib.errhandlers.get(&h).copied()), lib.ft))
    });
    match found {
        Some((handler, ft)) => {
            // A handler may call MPI: the lock goes first.
            drop(guard);
            error::raise(win, fail, handler, ft)
        }
        None => crate::state::failed(guard, NO_OBJECT, fail),
    }
}

/// The runtime communicator a window is made on: an intra-communicator's own half.
fn comm_of(lib: &Lib, comm: Handle) -> R<Comm> {
    let (p2p, _) = lib.comm(comm)?.intra()?;
    Ok(p2p.clone())
}

fn disp_unit_arg(disp_unit: c_int) -> R<u64> {
    match u64::try_from(disp_unit) {
        Ok(u) if u > 0 => Ok(u),
        _ => Err(Fail::new(
            MPI_ERR_DISP,
            format!("disp_unit {disp_unit}: must be positive"),
        )),
    }
}

fn size_arg(size: isize) -> R<usize> {
    usize::try_from(size)
        .map_err(|_| Fail::new(MPI_ERR_SIZE, format!("window size {size}: negative")))
}

/// Every rank's displacement unit: one allreduce of a vector where each rank fills its
/// own slot (on the window's communicator, after the runtime made the window).
fn exchange_units(win: &Window<'static>, mine: u64) -> Result<Vec<u64>, sf::CommError> {
    let comm = win.comm();
    let (me, n) = (comm.rank() as usize, comm.size() as usize);
    if n > ALLREDUCE_MAX {
        return Err(sf::CommError::Unsupported(format!(
            "windows over more than {ALLREDUCE_MAX} processes"
        )));
    }
    let mut units = vec![0u64; n];
    units[me] = mine;
    comm.allreduce(&mut units, ReduceOp::Sum)?;
    Ok(units)
}

/// Makes a window on `comm` with `make` (run without the lock: collective), registers
/// it; its handle.
pub(crate) fn create(
    g: &mut Guard,
    comm: Handle,
    disp_unit: c_int,
    flavor: c_int,
    make: impl FnOnce(&Comm) -> Result<Window<'static>, sf::CommError>,
) -> R<Handle> {
    let unit = disp_unit_arg(disp_unit)?;
    let lib = g.lib()?;
    let rt = comm_of(lib, comm)?;
    let group = crate::comm::group_of(lib, comm)?;
    let errhandler = lib.initial_errhandler;
    let (win, units) = g.unlocked(|| -> Result<_, sf::CommError> {
        let win = make(&rt)?;
        let units = exchange_units(&win, unit)?;
        Ok((win, units))
    })?;
    let (rank, size) = (win.comm().rank(), win.comm().size());
    let len = win.len_of(rank)?;
    let base = win.local_ptr() as usize;
    let win = Arc::new(win);
    let agent = crate::passive::Agent::start(Arc::clone(&win));
    let lib = g.lib()?;
    let h = lib.new_handle();
    lib.wins.insert(
        h,
        WinEntry {
            win,
            rank,
            size,
            group,
            disp_units: units,
            base,
            size_attr: Box::new(len as isize),
            disp_attr: Box::new(disp_unit),
            flavor: Box::new(flavor),
            model: Box::new(MPI_WIN_UNIFIED),
            errhandler,
            name: String::new(),
            pending: Vec::new(),
            exposure: None,
            access: None,
            locked: vec![0; size as usize],
            agent: Some(agent),
            shared: None,
        },
    );
    Ok(h)
}

crate::mpi_fn! {
    /// `MPI_Win_create`: a window over the program's `size` bytes at `base` (MPI keeps
    /// them valid until `MPI_Win_free`); collective over `comm`; `info` not read.
    fn MPI_Win_create / PMPI_Win_create(
        base: *mut c_void,
        size: isize,
        disp_unit: c_int,
        _info: Handle,
        comm: Handle,
        win: *mut Handle
    ) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `win` is valid for a write.
            let slot = unsafe { out(win) }?;
            *slot = MPI_WIN_NULL;
            let len = size_arg(size)?;
            if base.is_null() && len > 0 {
                return Err(Fail::new(MPI_ERR_ARG, "a null base for a window of some bytes"));
            }
            let base = base as usize;
            *slot = create(g, comm, disp_unit, MPI_WIN_FLAVOR_CREATE, |c| {
                // SAFETY: MPI's contract for MPI_Win_create: the memory stays valid
                // until MPI_Win_free, which frees the window (collectively) first; the
                // library reaches it only through the runtime window's raw copies.
                unsafe { c.window_raw(base as *mut u8, len) }
            })?;
            Ok(())
        })
    }
}

/// The outputs of `MPI_Win_allocate(_shared)` (`*win` set to `MPI_WIN_NULL` until it
/// succeeds; `baseptr` a `void **` passed as `void *`) and the size, checked.
///
/// # Safety
/// `win` and `baseptr` are null or valid for a write.
pub(crate) unsafe fn allocate_args<'a>(
    win: *mut Handle,
    baseptr: *mut c_void,
    size: isize,
) -> R<(&'a mut Handle, &'a mut *mut c_void, usize)> {
    // SAFETY: the caller's contract.
    let slot = unsafe { out(win) }?;
    *slot = MPI_WIN_NULL;
    // SAFETY: as above.
    let base_out = unsafe { out(baseptr.cast::<*mut c_void>()) }?;
    Ok((slot, base_out, size_arg(size)?))
}

crate::mpi_fn! {
    /// `MPI_Win_allocate`: `size` zeroed bytes the window owns, their address in
    /// `*baseptr` (a `void **` passed as `void *`); collective over `comm`.
    fn MPI_Win_allocate / PMPI_Win_allocate(
        size: isize,
        disp_unit: c_int,
        _info: Handle,
        comm: Handle,
        baseptr: *mut c_void,
        win: *mut Handle
    ) {
        call(comm, |g| {
            // SAFETY: MPI's contract for the three arguments.
            let (slot, base_out, len) = unsafe { allocate_args(win, baseptr, size) }?;
            let h = create(g, comm, disp_unit, MPI_WIN_FLAVOR_ALLOCATE, |c| c.window_allocate(len))?;
            *base_out = entry(g.lib()?, h)?.base as *mut c_void;
            *slot = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_free`: collective (the runtime's closing barrier, so no rank frees
    /// memory another still reaches); `*win` becomes `MPI_WIN_NULL`. Accumulates of an
    /// epoch no fence closed are dropped (MPI makes that erroneous).
    fn MPI_Win_free / PMPI_Win_free(win: *mut Handle) {
        // SAFETY: MPI's contract: `win` is valid for reads and writes.
        let h = match unsafe { win.as_ref() } {
            Some(&h) => h,
            None => MPI_WIN_NULL,
        };
        win_call(h, |g| {
            // SAFETY: as above.
            let slot = unsafe { out(win) }?;
            entry(g.lib()?, h)?;
            // The program's attributes go first (their callbacks see a live window).
            crate::attr::delete_all(g, h)?;
            let e = g.lib()?.wins.remove(&h).ok_or_else(|| bad_win(h))?;
            *slot = MPI_WIN_NULL;
            let WinEntry { win: w, pending, agent, shared, .. } = e;
            // A member that frees its window at once while others still lock it (MPI
            // lets a target take no part in a passive epoch) must keep serving them: its
            // agent stops only once every member is in the free (a barrier while it
            // runs). Every lock, flush and unlock was answered before its origin got
            // here, so nothing is left for the agent after it. The agent ends before
            // the runtime's closing barrier (it holds the window too).
            let all_in = g.unlocked(|| w.comm().barrier()).map_err(Fail::from);
            g.unlocked(|| drop(agent));
            if !pending.is_empty() {
                log::warn!("MPI_Win_free with {} accumulates no fence closed: dropped", pending.len());
            }
            // Another thread still in a call on it (erroneous) keeps it until it returns.
            // With a member failed the closing barrier fails (the runtime then leaks
            // allocated memory rather than free it under a live peer that has not
            // finished), and the call reports the failure.
            let comm = w.comm().clone();
            let freed = match Arc::try_unwrap(w) {
                Ok(w) => g.unlocked(|| w.free()).map_err(Fail::from),
                Err(shared) => {
                    g.unlocked(|| drop(shared));
                    Ok(())
                }
            };
            if freed.is_ok() {
                drop(shared);
            } else {
                // A live peer may not have finished with it: the mapping stays.
                std::mem::forget(shared);
            }
            all_in.and(freed).map_err(|f| crate::rma::failure_wins(&comm, f))
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_fence`: ends one epoch and starts the next (collective). The puts and
    /// gets of the epoch are complete already; its accumulates are applied at their
    /// targets before any rank returns (`rma::fence`). `assert` is accepted and not
    /// used.
    fn MPI_Win_fence / PMPI_Win_fence(_assert: c_int, win: Handle) {
        win_call(win, |g| {
            let e = entry(g.lib()?, win)?;
            let w = Arc::clone(&e.win);
            let pending = std::mem::take(&mut e.pending);
            let (me, n) = (e.rank, e.size);
            g.unlocked(|| crate::rma::fence(&w, me, n, pending))
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_get_group`: the group of the communicator the window was made on.
    fn MPI_Win_get_group / PMPI_Win_get_group(win: Handle, group: *mut Handle) {
        win_call(win, |g| {
            // SAFETY: MPI's contract: `group` is valid for a write.
            let slot = unsafe { out(group) }?;
            let lib = g.lib()?;
            let members = entry(lib, win)?.group.clone();
            *slot = crate::group::new_group(lib, members);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_get_attr`: `MPI_WIN_BASE` (the address itself), `MPI_WIN_SIZE` (an
    /// `MPI_Aint`), `MPI_WIN_DISP_UNIT`, `MPI_WIN_CREATE_FLAVOR`, `MPI_WIN_MODEL`
    /// (`int`s; `MPI_WIN_UNIFIED`). Another object's predefined key: not set (`*flag`
    /// 0). Any other key: the program's (`win_attr.rs`).
    fn MPI_Win_get_attr / PMPI_Win_get_attr(
        win: Handle,
        keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int
    ) {
        win_call(win, |g| {
            // SAFETY: MPI's contract: `flag` is valid for a write, `attribute_val` for a
            // pointer's.
            let flag = unsafe { out(flag) }?;
            // SAFETY: as above.
            let val = unsafe { out(attribute_val.cast::<*const c_void>()) }?;
            let e = entry(g.lib()?, win)?;
            let p: *const c_void = match keyval {
                MPI_WIN_BASE => e.base as *const c_void,
                MPI_WIN_SIZE => (&*e.size_attr as *const isize).cast(),
                MPI_WIN_DISP_UNIT => (&*e.disp_attr as *const c_int).cast(),
                MPI_WIN_CREATE_FLAVOR => (&*e.flavor as *const c_int).cast(),
                MPI_WIN_MODEL => (&*e.model as *const c_int).cast(),
                // Another object's predefined key (`MPI_TAG_UB`...): not set here.
                k if (0..crate::attr::FIRST_KEY).contains(&k) => {
                    *flag = 0;
                    return Ok(());
                }
                // SAFETY: as above.
                k => return unsafe { crate::attr::get(g.lib()?, win, k, attribute_val, flag) },
            };
            *val = p;
            *flag = 1;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_set_name`.
    fn MPI_Win_set_name / PMPI_Win_set_name(win: Handle, name: *const c_char) {
        win_call(win, |g| {
            // SAFETY: MPI's contract: `name` is a C string.
            let mut n = unsafe { read_cstr(name) }?;
            n.truncate(MAX_OBJECT_NAME - 1);
            entry(g.lib()?, win)?.name = n;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_get_name` (empty until set).
    fn MPI_Win_get_name / PMPI_Win_get_name(win: Handle, name: *mut c_char, resultlen: *mut c_int) {
        win_call(win, |g| {
            let n = entry(g.lib()?, win)?.name.clone();
            // SAFETY: MPI's contract: `name` holds MPI_MAX_OBJECT_NAME bytes.
            unsafe { write_str(&n, name, MAX_OBJECT_NAME, resultlen) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_create_errhandler`: the function is kept beside the communicators'
    /// (a window handler gets the window's handle).
    fn MPI_Win_create_errhandler / PMPI_Win_create_errhandler(
        function: Option<ErrFn>,
        errhandler: *mut Handle
    ) {
        call(NO_OBJECT, |g| crate::comm::create_errhandler(g.lib()?, function, errhandler))
    }
}

crate::mpi_fn! {
    /// `MPI_Win_set_errhandler`.
    fn MPI_Win_set_errhandler / PMPI_Win_set_errhandler(win: Handle, errhandler: Handle) {
        win_call(win, |g| {
            let lib = g.lib()?;
            crate::comm::check_errhandler(lib, errhandler)?;
            entry(lib, win)?.errhandler = errhandler;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_get_errhandler`.
    fn MPI_Win_get_errhandler / PMPI_Win_get_errhandler(win: Handle, errhandler: *mut Handle) {
        win_call(win, |g| {
            let h = entry(g.lib()?, win)?.errhandler;
            // SAFETY: MPI's contract: `errhandler` is valid for a write.
            *unsafe { out(errhandler) }? = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_call_errhandler`: calls `win`'s handler with `errorcode`; returns
    /// `MPI_SUCCESS` once a handler that returns has run (`MPI_ERRORS_RETURN`: the
    /// code).
    fn MPI_Win_call_errhandler / PMPI_Win_call_errhandler(win: Handle, errorcode: c_int) {
        let Some(mut g) = Guard::lock() else {
            return crate::state::wrong_thread();
        };
        let found = g.lib().and_then(|lib| {
            let h = entry(lib, win)?.errhandler;
            Ok((Handler::of(h, lib.errhandlers.get(&h).copied()), lib.ft))
        });
        match found {
            Err(f) => crate::state::failed(g, NO_OBJECT, f),
            Ok((handler, ft)) => {
                drop(g);
                let rc = error::raise(win, Fail::new(errorcode, "MPI_Win_call_errhandler"), handler, ft);
                if matches!(handler, Handler::User(_)) { MPI_SUCCESS } else { rc }
            }
        }
    }
}
