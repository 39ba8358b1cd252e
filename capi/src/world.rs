//! The world: init from the launcher's environment, finalize, rank and size, progress,
//! the failure query and the failure callback.

use std::ffi::{c_int, c_void};

use sf::World;

use crate::comm::sf_comm;
use crate::error::{guard, Error, SF_ERR_INIT};
use crate::handle::{self, copy_ranks, give, out, sf_failure_fn, Home, WorldState};

/// A world: this process's membership in the job (opaque).
pub struct sf_world {
    home: Home,
}
handle::handle!(sf_world);

/// Joins the job: bootstraps from the launcher's environment (`steadfast-run`, PMI-1
/// as Hydra and Slurm provide it, PMIx as Open MPI's `mpirun` does), with the
/// parameters of the params files and `STEADFAST_*` variables, and opens the transports.
/// The calling thread owns the world and every handle made from it (see
/// `SF_ERR_WRONG_THREAD`).
///
/// # Errors
/// `SF_ERR_INIT` naming what failed (no launcher, a bad parameter, a transport);
/// `SF_ERR_INVALID_ARG` for a null `world`.
///
/// # Safety
/// `world` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_init(world: *mut *mut sf_world) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let slot = unsafe { out(world, "world") }?;
        let w = World::init().map_err(|e| Error::new(SF_ERR_INIT, e.to_string()))?;
        log::debug!("steadfast C ABI: world rank {} of {}", w.rank(), w.size());
        let home = Home::here(WorldState::new(w));
        give(slot, sf_world { home });
        Ok(())
    })
}

/// Leaves the job, collectively (one agreement on the world communicator, which never
/// waits on a dead rank), and frees the world handle (`*world` becomes null). The
/// other handles of the world stay to be freed; calls on them fail with
/// `SF_ERR_NOT_INITIALIZED`. Free windows before: freeing one runs a barrier.
///
/// # Errors
/// `SF_ERR_INVALID_ARG` (null), `SF_ERR_WRONG_THREAD`.
///
/// # Safety
/// `world` is null or valid for reads and writes; `*world` is null or a world from
/// `sf_init` not finalized.
#[no_mangle]
pub unsafe extern "C" fn sf_finalize(world: *mut *mut sf_world) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        if let Some(handle) = unsafe { handle::take(world) }? {
            if let Some(w) = handle.home.state.take_world() {
                w.finalize();
            }
        }
        Ok(())
    })
}

/// This process's rank in the world.
///
/// # Safety
/// `world` is null or a live world handle; `rank` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_world_rank(world: *const sf_world, rank: *mut u32) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe {
            handle::with(world, |h| {
                let r = h.home.state.with_world(|w| Ok(w.rank()))?;
                *out(rank, "rank")? = r;
                Ok(())
            })
        }
    })
}

/// The number of processes in the world.
///
/// # Safety
/// `world` is null or a live world handle; `size` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_world_size(world: *const sf_world, size: *mut u32) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe {
            handle::with(world, |h| {
                let n = h.home.state.with_world(|w| Ok(w.size()))?;
                *out(size, "size")? = n;
                Ok(())
            })
        }
    })
}

/// A new handle to the communicator of every rank (free it with `sf_comm_free`).
///
/// # Safety
/// `world` is null or a live world handle; `comm` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_world_comm(world: *const sf_world, comm: *mut *mut sf_comm) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe {
            handle::with(world, |h| {
                let slot = out(comm, "comm")?;
                let c = h.home.state.with_world(|w| Ok(w.comm()))?;
                give(slot, sf_comm::new(h.home.sibling(), c));
                Ok(())
            })
        }
    })
}

/// Makes progress (heartbeats, failure reports, control messages) without
/// communicating: call it now and then while computing for longer than the failure
/// detector's timeout, or set `STEADFAST_PROGRESS_THREAD=1`. Reports new failures to
/// the callback.
///
/// # Safety
/// `world` is null or a live world handle.
#[no_mangle]
pub unsafe extern "C" fn sf_world_progress(world: *const sf_world) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe {
            handle::with(world, |h| {
                h.home.state.with_world(|w| {
                    w.progress();
                    Ok(())
                })
            })
        }
    })
}

/// The world ranks known to have failed, in the order they were learnt: the first
/// `capacity` go to `ranks`, the full count to `*count` (`count` may be null;
/// `ranks` may be null when `capacity` is 0, to ask for the count).
///
/// # Safety
/// `world` is null or a live world handle; `ranks` is null or valid for writes of
/// `capacity` values; `count` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_world_failures(
    world: *const sf_world,
    ranks: *mut u32,
    capacity: usize,
    count: *mut usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe {
            handle::with(world, |h| {
                let failed: Vec<u32> = h
                    .home
                    .state
                    .with_world(|w| Ok(w.failures().iter().map(|f| f.rank).collect()))?;
                copy_ranks(&failed, ranks, capacity, count)
            })
        }
    })
}

/// Registers `callback` (replacing any previous one; null removes it), called once per
/// failed world rank with `user_data`.
///
/// When and where it runs: on the world's thread, at the end of any `sf_*` call on a
/// handle of this world (`sf_world_progress` included) that finds a failure not
/// reported yet, after the call's own work and before it returns. A failure learnt by
/// the optional progress thread is reported at the next such call. Failures learnt
/// before the registration are reported at the next call too. The callback may call
/// the library (revoke a communicator, say); it must not unwind.
///
/// # Safety
/// `world` is null or a live world handle; `callback`, if not null, is safe to call
/// with `user_data` whenever the library calls it.
#[no_mangle]
pub unsafe extern "C" fn sf_world_on_failure(
    world: *const sf_world,
    callback: sf_failure_fn,
    user_data: *mut c_void,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe {
            handle::with(world, |h| {
                h.home.state.set_failure_callback(callback, user_data);
                Ok(())
            })
        }
    })
}
