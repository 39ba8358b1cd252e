//! The environment: init (all four thread levels), finalize, abort, time, names; the
//! runtime's bring-up and tear-down, shared with the Sessions model (`session.rs`).

use std::ffi::{c_char, c_double, c_int};
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

use sf::bootstrap::BootstrapError;
use sf::params::Params;
use sf::{InitError, World};

use crate::consts::*;
use crate::error::{abort_job, exit_now, Fail, R};
use crate::singleton::Singleton;
use crate::state::NO_OBJECT;
use crate::state::{call, CommEntry, CommKind, FtMode, Guard, Lib, Phase, WorldModel};
use crate::util::{out, write_str};

/// `MPI_UNIVERSE_SIZE`'s value, pointed to by `MPI_Comm_get_attr` (an atomic, so that
/// the program may even write through the pointer without a data race in Rust terms).
pub(crate) static UNIVERSE_SIZE: AtomicI32 = AtomicI32::new(0);

/// Where MPI is in its life for `MPI_Initialized` / `MPI_Finalized`, which any thread
/// may call at any time, also while another holds the library's lock in a blocking
/// call: 0 before `MPI_Init`, 1 after it, 2 after `MPI_Finalize`.
static STAGE: AtomicU8 = AtomicU8::new(0);

/// The error handler named by `mpiexec -initial-errhandler` (`steadfast-run` hands it
/// over as `STEADFAST_INITIAL_ERRHANDLER`): the handle and its MPI-4 name.
pub(crate) fn initial_errhandler() -> (Handle, &'static str) {
    let Ok(name) = std::env::var("STEADFAST_INITIAL_ERRHANDLER") else {
        return (MPI_ERRORS_ARE_FATAL, "mpi_errors_are_fatal");
    };
    match name.to_ascii_lowercase().as_str() {
        "mpi_errors_return" | "errors_return" => (MPI_ERRORS_RETURN, "mpi_errors_return"),
        "mpi_errors_abort" | "errors_abort" => (MPI_ERRORS_ABORT, "mpi_errors_abort"),
        "mpi_errors_are_fatal" | "errors_are_fatal" => {
            (MPI_ERRORS_ARE_FATAL, "mpi_errors_are_fatal")
        }
        other => {
            log::warn!(
                "initial error handler {other:?} is not mpi_errors_are_fatal, mpi_errors_abort \
                 or mpi_errors_return; using mpi_errors_are_fatal"
            );
            (MPI_ERRORS_ARE_FATAL, "mpi_errors_are_fatal")
        }
    }
}

/// The `create_group` tag of `MPI_COMM_SELF` in a process restarted in place.
const RESTORED_SELF_TAG: u32 = 1;
/// The tag of `MPI_COMM_SELF`'s creation in a first incarnation.
const SELF_TAG: u32 = 2;

/// The `create_group` tag of `MPI_COMM_WORLD` when the universe has spare slots.
const STARTED_WORLD_TAG: u32 = 2;

/// `--with-ft` of the launcher (`STEADFAST_WITH_FT`): `no` makes failures fatal.
fn ft_mode() -> FtMode {
    match std::env::var("STEADFAST_WITH_FT").as_deref() {
        Ok("no") => FtMode::Off,
        _ => FtMode::Ulfm,
    }
}

extern "C" {
    /// The C library's standard output stream.
    static mut stdout: *mut libc::FILE;
}

/// Makes the program's `stdout` line-buffered when it is not a terminal (a file or
/// a pipe, where C buffers it fully), as `mpiexec`s that give ranks a pseudo-terminal
/// do: a rank's lines reach the output as it prints them, and a rank that is killed
/// (or dies) loses at most its last unfinished line, not everything it printed.
/// Only under a launcher; a program started alone keeps C's buffering.
fn line_buffer_stdout() {
    // SAFETY: isatty only reads the descriptor's state.
    if unsafe { libc::isatty(libc::STDOUT_FILENO) } == 1 {
        return;
    }
    // SAFETY: `stdout` is the C library's stream, initialised before main; fflush
    // writes out what the program printed before MPI_Init, so setvbuf (which only
    // changes the mode, keeping the library's own buffer) finds the buffer empty.
    unsafe {
        let out = stdout;
        libc::fflush(out);
        libc::setvbuf(out, std::ptr::null_mut(), libc::_IOLBF, 0);
    }
}

/// The thread level a program asks for, as this library provides it.
pub(crate) fn level_arg(required: c_int) -> R<c_int> {
    match required {
        MPI_THREAD_SINGLE | MPI_THREAD_FUNNELED | MPI_THREAD_SERIALIZED | MPI_THREAD_MULTIPLE => {
            Ok(required)
        }
        // An unknown level above SERIALIZED is asked for more than we know: give the
        // highest (MPI lets the library provide more than required).
        r if r > MPI_THREAD_SERIALIZED => Ok(MPI_THREAD_MULTIPLE),
        r => Err(Fail::new(
            MPI_ERR_ARG,
            format!("thread level {r} is not one of MPI's"),
        )),
    }
}

/// The MPI name of thread level `level`.
pub(crate) fn level_name(level: c_int) -> &'static str {
    match level {
        MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        MPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        _ => "MPI_THREAD_MULTIPLE",
    }
}

/// `MPI_Init`: brings the runtime up unless a session did, then registers the world
/// model's predefined communicators; the level provided (at least `required`).
fn init(g: &mut Guard, required: c_int) -> R<c_int> {
    let level = level_arg(required)?;
    match g.phase() {
        Phase::Before => bring_up(g, level)?,
        Phase::Live(_) => {}
        // ORDERING: Acquire; pairs with MPI_Finalize's Release (the same thread, or one
        // the program ordered after it).
        Phase::After if STAGE.load(Ordering::Acquire) == 2 => {
            return Err(Fail::new(
                MPI_ERR_OTHER,
                "MPI cannot be initialized after MPI_Finalize",
            ))
        }
        // Sessions alone brought the runtime up and down: it comes up again.
        Phase::After => bring_up(g, level)?,
    }
    let lib = g.lib()?;
    let entries = match std::mem::replace(&mut lib.world_model, WorldModel::Live) {
        WorldModel::Ready(entries) => entries,
        WorldModel::Live => return Err(Fail::new(MPI_ERR_OTHER, "MPI is already initialized")),
        WorldModel::Ended => {
            lib.world_model = WorldModel::Ended;
            return Err(Fail::new(
                MPI_ERR_OTHER,
                "MPI cannot be initialized after MPI_Finalize",
            ));
        }
    };
    for (h, e) in entries {
        lib.comms.insert(h, e);
    }
    lib.main_thread = std::thread::current().id();
    raise_level(g, level)?;
    // ORDERING: Release; pairs with the Acquire in MPI_Initialized / MPI_Finalized
    // (a thread that sees the flag also sees what init did).
    STAGE.store(1, Ordering::Release);
    Ok(g.lib()?.level)
}

/// Raises the runtime's thread level to `level` when a later user asks for more than
/// the first one did (`MPI_Init_thread` after `MPI_Session_init`, or the reverse); a
/// level from `MPI_THREAD_SERIALIZED` up ends the owner's mutex-free access.
pub(crate) fn raise_level(g: &mut Guard, level: c_int) -> R<()> {
    let lib = g.lib()?;
    if level <= lib.level {
        return Ok(());
    }
    lib.level = level;
    if let Some(e) = lib.env_info.iter_mut().find(|(k, _)| k == "thread_level") {
        e.1 = level_name(level).into();
    }
    if level >= MPI_THREAD_SERIALIZED {
        g.disown();
    }
    Ok(())
}

/// Brings the runtime up at thread level `level` (the first `MPI_Init` or
/// `MPI_Session_init` of the process): the world, the process's world communicator,
/// and the world model's predefined communicators, kept aside until `MPI_Init`
/// registers them. Collective over the job's processes, whichever call each makes.
pub(crate) fn bring_up(g: &mut Guard, level: c_int) -> R<()> {
    crate::error::clear_excluded();
    let mut launched = true;
    let params = mpi_params().map_err(|e| Fail::new(MPI_ERR_OTHER, e.to_string()))?;
    if params.pmi_failure_signal() {
        // Before connecting, as `World::init` does: Hydra may signal a failure from
        // then on.
        sf::bootstrap::pmi1::tolerate_failure_signal_if_launched();
    }
    let world = match sf::bootstrap::from_env() {
        Ok(boot) => World::init_with(boot, params),
        // Started without a launcher: a job of one (MPI's singleton init).
        Err(BootstrapError::NotLaunched { .. }) => {
            launched = false;
            World::init_with(Box::new(Singleton::default()), params)
        }
        Err(e) => Err(InitError::Bootstrap(e)),
    }
    .map_err(|e| Fail::new(MPI_ERR_OTHER, e.to_string()))?;
    let (errh, errh_name) = initial_errhandler();
    crate::util::set_yield_when_idle(world.yields_when_idle());
    let universe = world.size();
    let mut parent = None;
    let mut wc = world.comm();
    if world.is_spawned() {
        // A process of MPI_Comm_spawn: its world is the children spawned together.
        let p = world
            .parent()?
            .ok_or_else(|| Fail::new(MPI_ERR_SPAWN, "a spawned process without a parent"))?;
        wc = p.world;
        parent = Some(p.inter);
        // ORDERING: Relaxed; read by the program after MPI_Init returns, as
        // UNIVERSE_SIZE below.
        crate::comm::APPNUM_VALUE.store(p.appnum as i32, Ordering::Relaxed);
    } else if world.job_ranks() < universe && !world.is_restored() {
        // The universe has spare slots (`docs/spawn.md`): MPI_COMM_WORLD is the ranks
        // started with the job.
        let started: Vec<u32> = (0..world.job_ranks()).collect();
        wc = wc.create_group(&started, STARTED_WORLD_TAG)?;
    }
    let me = wc.rank();
    let (wcoll, selfc) = if world.is_restored() && parent.is_none() {
        // A process restarted in place: its world is restored, not rejoined (the
        // survivors are past the collectives that made their twins), so it makes
        // nothing over it. Collectives on MPI_COMM_WORLD are not for a restarted
        // process until it rejoins it (MPIX_Comm_rejoin of the name the survivors saved
        // MPI_COMM_WORLD under replaces its collectives half); point to point on it
        // works. MPI_COMM_SELF's contexts come from the top of the space
        // (`restored_solo_context`), clear of the communicators it may rejoin.
        (wc.clone(), wc.create_group(&[me], RESTORED_SELF_TAG)?)
    } else {
        // A rank that returned from MPI_Init first may revoke MPI_COMM_WORLD while the
        // others still make its half (see `comm::collective_half`).
        let wcoll = crate::comm::world_collective_half(&wc)?;
        // MPI_COMM_SELF: a group of this process alone, made without the others (a
        // split of the world fails at a member that already knows of the death of one
        // that left MPI_Init first).
        let selfc = wc.create_group(&[me], SELF_TAG)?;
        (wcoll, selfc)
    };
    let selfcoll = selfc.dup()?;
    let size = wc.size();
    let mut lib = Lib::new(world, wc.clone(), level, ft_mode());
    g.adopt_early(&mut lib);
    lib.initial_errhandler = errh;
    // ORDERING: Relaxed; read by the program after MPI_Init returns, which the mutex
    // (and the program's own synchronisation) orders after this store.
    UNIVERSE_SIZE.store(universe as i32, Ordering::Relaxed);
    let mut entries = Vec::with_capacity(3);
    if let Some(ic) = parent {
        // Its collective half with the parents (who make theirs in MPI_Comm_spawn once
        // the children joined).
        let (p2p, coll) = crate::comm::inter_half(ic)?;
        let h = lib.new_handle();
        let kind = CommKind::Inter { p2p, coll };
        entries.push((h, CommEntry::new(kind, errh, "MPI_COMM_PARENT")));
        lib.parent = h;
    }
    let kind = CommKind::Intra {
        p2p: wc,
        coll: wcoll,
    };
    entries.push((MPI_COMM_WORLD, CommEntry::new(kind, errh, "MPI_COMM_WORLD")));
    let kind = CommKind::Intra {
        p2p: selfc,
        coll: selfcoll,
    };
    entries.push((MPI_COMM_SELF, CommEntry::new(kind, errh, "MPI_COMM_SELF")));
    // ORDERING: Acquire; as in `init`.
    lib.world_model = if STAGE.load(Ordering::Acquire) == 2 {
        // A session after MPI_Finalize: the world model started once already and
        // cannot again (its communicators are dropped unregistered).
        WorldModel::Ended
    } else {
        WorldModel::Ready(entries)
    };
    let args: Vec<String> = std::env::args().collect();
    lib.env_info = crate::info::env_entries(&args, size as usize, level_name(level), errh_name);
    *g.phase() = Phase::Live(Box::new(lib));
    g.own_below_serialized(level);
    if launched {
        line_buffer_stdout();
    }
    Ok(())
}

/// [`init`], whose failure to initialize MPI goes to the initial error handler (MPI
/// 4.0 §9.3; there is no communicator yet). Unless that is `MPI_ERRORS_RETURN`, this
/// process ends at once with the error class as its status: it is connected to no
/// other process, so only it ends (under fault tolerance the others see it fail; under
/// `--with-ft no` the launcher ends the job). Before, the call returned the class to a
/// program that, like nearly every MPI program, does not test `MPI_Init`'s return, and
/// every later call failed silently: a child of an `MPI_Comm_spawn` that failed at its
/// parents (`MPIX_ERR_PROC_FAILED`: one of them had died) then ran the program as one
/// of the job's first ranks, spawning in turn (ICLDisco/ulfm-testing's
/// `stress/spawn.c`; `tests/c/spawn_orphan.c`). A second `MPI_Init`, or one after
/// `MPI_Finalize`, still returns its error.
fn init_or_end(g: &mut Guard, required: c_int) -> R<c_int> {
    // ORDERING: Acquire; as in `init`.
    let first = match g.phase() {
        Phase::Before => true,
        Phase::After => STAGE.load(Ordering::Acquire) != 2,
        Phase::Live(_) => false,
    };
    let fail = match init(g, required) {
        Ok(level) => return Ok(level),
        Err(fail) => fail,
    };
    if !first || initial_errhandler().0 == MPI_ERRORS_RETURN {
        return Err(fail);
    }
    log::error!(
        "MPI_Init failed ({}): the initial error handler ends this process",
        fail.message
    );
    exit_now(fail.class)
}

crate::mpi_fn! {
    /// `MPI_Init`: `MPI_Init_thread` with `MPI_THREAD_SINGLE`.
    fn MPI_Init / PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) {
        call(NO_OBJECT, |g| {
            init_or_end(g, MPI_THREAD_SINGLE).map(drop)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Init_thread`: every level is provided as asked (see the thread contract in
    /// `docs/mpi.md`).
    fn MPI_Init_thread / PMPI_Init_thread(
        _argc: *mut c_int,
        _argv: *mut *mut *mut c_char,
        required: c_int,
        provided: *mut c_int
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `provided` is valid for a write.
            let slot = unsafe { out(provided) }?;
            *slot = init_or_end(g, required)?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Finalize`: ends the world model. When no session holds the runtime, it
    /// goes down: collective (an agreement on the world, which never waits on a dead
    /// process); requests freed while active get a bounded chance to finish. Else
    /// `MPI_COMM_WORLD`, `MPI_COMM_SELF` and the parent go, and the last
    /// `MPI_Session_finalize` brings the runtime down.
    fn MPI_Finalize / PMPI_Finalize() {
        call(NO_OBJECT, |g| {
            match g.lib()?.world_model {
                WorldModel::Live => {}
                WorldModel::Ready(_) => {
                    return Err(Fail::new(MPI_ERR_OTHER, "MPI is not initialized"))
                }
                WorldModel::Ended => return Err(Fail::new(MPI_ERR_OTHER, "MPI was finalized")),
            }
            if crate::op::in_user_function() {
                // It would end the state under the reduction that called the function.
                return Err(Fail::new(
                    MPI_ERR_OTHER,
                    "MPI_Finalize inside a user reduction function",
                ));
            }
            // MPI_COMM_SELF's attributes first: libraries clean up in their callbacks.
            crate::attr::finalize_self(g)?;
            let lib = g.lib()?;
            if lib.sessions.is_empty() {
                tear_down(g)?;
            } else {
                let parent = lib.parent;
                for h in [MPI_COMM_WORLD, MPI_COMM_SELF, parent] {
                    lib.comms.remove(&h);
                }
                lib.world_model = WorldModel::Ended;
            }
            // ORDERING: Release; pairs with the Acquire in MPI_Finalized.
            STAGE.store(2, Ordering::Release);
            Ok(())
        })
    }
}

/// Brings the runtime down (its last user ends: `MPI_Finalize` or the last
/// `MPI_Session_finalize`): the requests freed while active get a bounded chance to
/// finish, then the world's agreement ends it. A later `MPI_Session_init` (or
/// `MPI_Init`, when the world model never started) brings it up again.
pub(crate) fn tear_down(g: &mut Guard) -> R<()> {
    finish_detached(g)?;
    // This process's ports close and its names go: a later connect or lookup gets
    // MPI_ERR_PORT or MPI_ERR_NAME, not its exit as a failure.
    crate::ports::withdraw_all(&g.lib()?.world.comm());
    g.disown();
    let Phase::Live(mut lib) = std::mem::replace(g.phase(), Phase::After) else {
        return Err(Fail::new(MPI_ERR_OTHER, "MPI is not initialized"));
    };
    g.keep_objects(&mut lib);
    finalize(*lib);
    Ok(())
}

/// Gives the requests freed while active (and the communicators' closings) up to 10 s
/// to finish, the user reduction functions they queue running between two attempts
/// (`Guard::relax`).
fn finish_detached(g: &mut Guard) -> R<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut spin = crate::util::spin_wait();
    loop {
        let lib = g.lib()?;
        crate::request::progress_detached(lib);
        if lib.detached.is_empty() || std::time::Instant::now() >= deadline {
            return Ok(());
        }
        g.relax(&mut spin);
    }
}

fn finalize(lib: Lib) {
    if !lib.detached.is_empty() {
        log::warn!(
            "MPI_Finalize: {} request(s) freed with MPI_Request_free or communicator \
             closing(s) (MPI_Comm_free) did not complete in 10 s",
            lib.detached.len()
        );
    }
    let Lib {
        world,
        comms,
        requests,
        detached,
        ..
    } = lib;
    drop(requests);
    drop(detached);
    drop(comms);
    world.finalize();
}

crate::mpi_fn! {
    /// `MPI_Initialized`.
    fn MPI_Initialized / PMPI_Initialized(flag: *mut c_int) {
        // ORDERING: Acquire; pairs with the Release of MPI_Init.
        let v = STAGE.load(Ordering::Acquire) >= 1;
        // SAFETY: MPI's contract: `flag` is valid for a write.
        match unsafe { out(flag) } {
            Ok(f) => { *f = c_int::from(v); MPI_SUCCESS }
            Err(e) => e.class,
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Finalized`.
    fn MPI_Finalized / PMPI_Finalized(flag: *mut c_int) {
        // ORDERING: Acquire; pairs with the Release of MPI_Finalize.
        let v = STAGE.load(Ordering::Acquire) == 2;
        // SAFETY: MPI's contract: `flag` is valid for a write.
        match unsafe { out(flag) } {
            Ok(f) => { *f = c_int::from(v); MPI_SUCCESS }
            Err(e) => e.class,
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Query_thread`.
    fn MPI_Query_thread / PMPI_Query_thread(provided: *mut c_int) {
        call(NO_OBJECT, |g| {
            let level = g.lib()?.level;
            // SAFETY: MPI's contract: `provided` is valid for a write.
            *unsafe { out(provided) }? = level;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Is_thread_main`: whether this thread called `MPI_Init(_thread)`.
    fn MPI_Is_thread_main / PMPI_Is_thread_main(flag: *mut c_int) {
        call(NO_OBJECT, |g| {
            let main = g.lib()?.main_thread == std::thread::current().id();
            // SAFETY: MPI's contract: `flag` is valid for a write.
            *unsafe { out(flag) }? = c_int::from(main);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Abort`: with fault tolerance (`--with-ft ulfm`, the default) on an
    /// intra-communicator other than `MPI_COMM_WORLD`, ends that communicator's
    /// processes only (`Comm::abort`: the rest of the job sees them fail and goes on;
    /// this process exits with `errorcode`); otherwise, or when that is refused (a
    /// member on another host), ends every process of the job (under `steadfast-run`;
    /// elsewhere this process, whose death the others then see), with `errorcode` as
    /// this process's exit status.
    fn MPI_Abort / PMPI_Abort(comm: Handle, errorcode: c_int) {
        let group = {
            let mut g = Guard::lock();
            match g.as_mut().map(|g| g.lib()) {
                Some(Ok(lib)) if lib.ft == FtMode::Ulfm && comm != MPI_COMM_WORLD => {
                    lib.intra(comm).ok().map(|(p2p, _)| p2p)
                }
                _ => None,
            }
        };
        if let Some(p2p) = group {
            // Returns only when it refuses, before killing anyone.
            let refused = p2p.abort(errorcode);
            log::warn!("MPI_Abort on communicator {comm:#x}: {refused}; aborting the job");
        }
        abort_job(errorcode, &format!("MPI_Abort on communicator {comm:#x}"))
    }
}

fn now_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// `MPI_Wtime` (the monotonic clock; not synchronised between processes).
#[no_mangle]
pub extern "C" fn PMPI_Wtime() -> c_double {
    now_seconds()
}

/// `MPI_Wtime`.
#[no_mangle]
pub extern "C" fn MPI_Wtime() -> c_double {
    PMPI_Wtime()
}

/// `MPI_Wtick`: the monotonic clock's resolution.
#[no_mangle]
pub extern "C" fn PMPI_Wtick() -> c_double {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec into `ts`.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// `MPI_Wtick`.
#[no_mangle]
pub extern "C" fn MPI_Wtick() -> c_double {
    PMPI_Wtick()
}

crate::mpi_fn! {
    /// `MPI_Get_processor_name`: the host name.
    fn MPI_Get_processor_name / PMPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) {
        call(NO_OBJECT, |_| {
            let host = host_name()?;
            // SAFETY: MPI's contract: `name` holds MPI_MAX_PROCESSOR_NAME bytes.
            unsafe { write_str(&host, name, MAX_PROCESSOR_NAME, resultlen) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Get_version`.
    fn MPI_Get_version / PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) {
        // SAFETY: MPI's contract: both are valid for writes.
        match unsafe { (out(version), out(subversion)) } {
            (Ok(v), Ok(s)) => { *v = 4; *s = 1; MPI_SUCCESS }
            _ => MPI_ERR_ARG,
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Get_library_version`.
    fn MPI_Get_library_version / PMPI_Get_library_version(
        version: *mut c_char,
        resultlen: *mut c_int
    ) {
        let text = concat!(
            "libsteadfast-mpi ",
            env!("CARGO_PKG_VERSION"),
            " (MPI 4.1 subset with ULFM, over steadfast)"
        );
        // SAFETY: MPI's contract: `version` holds MPI_MAX_LIBRARY_VERSION_STRING bytes.
        match unsafe { write_str(text, version, MAX_LIBRARY_VERSION_STRING, resultlen) } {
            Ok(()) => MPI_SUCCESS,
            Err(e) => e.class,
        }
    }
}

/// This host's name (`gethostname`).
pub(crate) fn host_name() -> R<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return Err(Fail::new(
            MPI_ERR_OTHER,
            std::io::Error::last_os_error().to_string(),
        ));
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

crate::mpi_fn! {
    /// `MPI_Pcontrol`: the profiling control MPI leaves to tools (MPI 4.1 §15.2.4: "MPI
    /// libraries themselves make no use of this routine, and simply return
    /// immediately"); a tool that interposes it sees the level. C declares it
    /// variadic; the arguments after `level` are the tool's, and C's calling
    /// conventions let this definition take the first alone.
    fn MPI_Pcontrol / PMPI_Pcontrol(level: c_int) {
        let _ = level;
        MPI_SUCCESS
    }
}

/// The runtime's parameters for an MPI program: as `World::init` reads them, with the
/// progress thread on unless the environment or a params file sets
/// `progress_thread`. An MPI program computes outside the library for as long as it
/// likes; without the thread its heartbeats stop meanwhile, and after
/// `detect_timeout_ms` (2 s by default) its peers declared it failed (MPICH's
/// `bsendpending.c`, whose receiver computes for 2 s, saw its sender's next barrier
/// fail with `MPIX_ERR_PROC_FAILED`, and then was excluded itself).
pub(crate) fn mpi_params() -> Result<Params, sf::params::ParamError> {
    let mut params = Params::load()?;
    if matches!(
        params.get("progress_thread"),
        Some((_, sf::params::Source::Default))
    ) {
        params.set("progress_thread", "1")?;
    }
    Ok(params)
}
