//! One-sided access: windows the library allocates and registers (`MPI_Win_allocate`),
//! put and get (complete when they return), fence, and the owner's local copies.

use std::ffi::{c_int, c_void};

use sf::Window;

use crate::comm::sf_comm;
use crate::error::{guard, Error, Result, SF_ERR_NOT_INITIALIZED};
use crate::handle::{self, give, out, Home};
use crate::p2p::{bytes, bytes_mut, dest_rank};

/// A window of memory peers read and write (opaque).
pub struct sf_window {
    home: Home,
    win: Window<'static>,
}
handle::handle!(sf_window);

/// Runs `f` on the window behind `win`, inside the entry-point guard.
///
/// # Safety
/// `win` is null or a live window handle.
unsafe fn on(win: *const sf_window, f: impl FnOnce(&Window<'static>) -> Result<()>) -> c_int {
    // SAFETY: the caller's contract.
    guard(|| unsafe { handle::with(win, |w| f(&w.win)) })
}

/// Allocates a window of `len` bytes (zeroed) at every rank of `comm`, registered for
/// remote access (collective). The library owns the memory: the program reaches its
/// own part with `sf_window_read_local` / `sf_window_write_local`, never by pointer.
///
/// # Errors
/// `SF_ERR_PROC_FAILED`, `SF_ERR_REVOKED`, `SF_ERR_TRANSPORT` (registration).
///
/// # Safety
/// `comm` is null or a live communicator handle; `win` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_window_allocate(
    comm: *const sf_comm,
    len: usize,
    win: *mut *mut sf_window,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe {
            handle::with(comm, |c| {
                let slot = out(win, "win")?;
                let w = c.comm().window_allocate(len)?;
                give(
                    slot,
                    sf_window {
                        home: c.home().sibling(),
                        win: w,
                    },
                );
                Ok(())
            })
        }
    })
}

/// Writes `len` bytes from `data` at `offset` into rank `target`'s window; complete
/// (visible at the target after the next fence) when it returns.
///
/// # Errors
/// `SF_ERR_INVALID_ARG` (target or range out of bounds), `SF_ERR_PROC_FAILED`,
/// `SF_ERR_TRANSPORT`.
///
/// # Safety
/// `win` is null or a live window handle; `data` is valid for reads of `len` bytes
/// (or null when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn sf_window_put(
    win: *const sf_window,
    target: c_int,
    offset: usize,
    data: *const c_void,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(win, |w| {
            Ok(w.put(dest_rank(target)?, offset, bytes(data, len)?)?)
        })
    }
}

/// Reads `len` bytes at `offset` of rank `target`'s window into `buf`; complete when
/// it returns.
///
/// # Errors
/// As `sf_window_put`.
///
/// # Safety
/// `win` is null or a live window handle; `buf` is valid for writes of `len` bytes
/// (or null when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn sf_window_get(
    win: *const sf_window,
    target: c_int,
    offset: usize,
    buf: *mut c_void,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(win, |w| {
            Ok(w.get(dest_rank(target)?, offset, bytes_mut(buf, len)?)?)
        })
    }
}

/// Separates access epochs (`MPI_Win_fence`): puts and gets before it, at every rank,
/// are visible after it. Collective.
///
/// # Errors
/// `SF_ERR_PROC_FAILED`, `SF_ERR_REVOKED`.
///
/// # Safety
/// `win` is null or a live window handle.
#[no_mangle]
pub unsafe extern "C" fn sf_window_fence(win: *const sf_window) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { on(win, |w| Ok(w.fence()?)) }
}

/// Copies `len` bytes at `offset` of this rank's own window into `out`.
///
/// # Safety
/// `win` is null or a live window handle; `out` is valid for writes of `len` bytes
/// (or null when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn sf_window_read_local(
    win: *const sf_window,
    offset: usize,
    out: *mut c_void,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { on(win, |w| Ok(w.read_local(offset, bytes_mut(out, len)?)?)) }
}

/// Copies `len` bytes from `data` to `offset` of this rank's own window.
///
/// # Safety
/// `win` is null or a live window handle; `data` is valid for reads of `len` bytes
/// (or null when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn sf_window_write_local(
    win: *const sf_window,
    offset: usize,
    data: *const c_void,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { on(win, |w| Ok(w.write_local(offset, bytes(data, len)?)?)) }
}

/// Frees the window (`*win` becomes null; null is nothing to free): a closing barrier,
/// then the registration and the memory are released. Collective. If the barrier fails
/// (a failed peer), the memory is kept allocated (a live peer may still write it) and
/// the error returned; the handle is freed either way. After `sf_finalize` the
/// barrier cannot run: the window's memory is leaked and `SF_ERR_NOT_INITIALIZED`
/// returned.
///
/// # Safety
/// `win` is null or valid for reads and writes; `*win` is null or a live window handle.
#[no_mangle]
pub unsafe extern "C" fn sf_window_free(win: *mut *mut sf_window) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let Some(handle) = (unsafe { handle::take(win) })? else {
            return Ok(());
        };
        let state = std::rc::Rc::clone(&handle.home.state);
        if !state.is_live() {
            // The closing barrier would wait on ranks that left with their world: the
            // window is leaked (its memory stays allocated), never freed under a peer.
            std::mem::forget(handle.win);
            log::warn!("steadfast C ABI: a window freed after its world was finalized is leaked");
            return Err(Error::new(
                SF_ERR_NOT_INITIALIZED,
                "window freed after its world was finalized: its memory is leaked (free windows before sf_finalize)",
            ));
        }
        let outcome = handle.win.free();
        state.report_failures();
        Ok(outcome?)
    })
}
