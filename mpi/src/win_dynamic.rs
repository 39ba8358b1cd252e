//! Dynamic windows: `MPI_Win_create_dynamic`, `MPI_Win_attach`, `MPI_Win_detach`, over
//! the runtime's `Comm::window_dynamic` (its regions table: `src/comm/window/dynamic.rs`).
//! A target displacement on such a window is an address of the target
//! (`MPI_Get_address`); an access checks that the target attached the range
//! (`MPI_ERR_RMA_RANGE` otherwise), accumulates at the origin before they are queued.
//! Accesses work between processes of one node; through the fabric they fail with
//! `MPI_ERR_UNSUPPORTED_OPERATION`.

use std::ffi::{c_int, c_void};

use sf::CommError;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::call;
use crate::util::out;
use crate::win::{entry, win_call, MPI_WIN_NULL};

/// `MPI_WIN_FLAVOR_DYNAMIC` (the ABI's value).
const MPI_WIN_FLAVOR_DYNAMIC: c_int = 43;
/// `MPI_ERR_RMA_ATTACH`.
const MPI_ERR_RMA_ATTACH: c_int = 47;
/// `MPI_ERR_RMA_FLAVOR`.
const MPI_ERR_RMA_FLAVOR: c_int = 52;

/// A runtime refusal of an attach or detach, as MPI names it.
fn attach_error(err: CommError) -> Fail {
    match err {
        CommError::InvalidArgument(m) => Fail::new(MPI_ERR_RMA_ATTACH, m),
        other => other.into(),
    }
}

/// The runtime window of `win`, which must be dynamic.
fn dynamic(
    g: &mut crate::state::Guard,
    win: Handle,
) -> R<std::sync::Arc<sf::comm::Window<'static>>> {
    let e = entry(g.lib()?, win)?;
    if !e.win.is_dynamic() {
        return Err(Fail::new(MPI_ERR_RMA_FLAVOR, "the window is not dynamic"));
    }
    Ok(std::sync::Arc::clone(&e.win))
}

crate::mpi_fn! {
    /// `MPI_Win_create_dynamic`: a window with no memory (`MPI_WIN_BASE` is
    /// `MPI_BOTTOM`, the size 0, the displacement unit 1); collective over `comm`;
    /// `info` not read.
    fn MPI_Win_create_dynamic / PMPI_Win_create_dynamic(_info: Handle, comm: Handle, win: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `win` is valid for a write.
            let slot = unsafe { out(win) }?;
            *slot = MPI_WIN_NULL;
            *slot = crate::win::create(g, comm, 1, MPI_WIN_FLAVOR_DYNAMIC, |c| c.window_dynamic())?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_attach`: exposes `size` bytes at `base` through a dynamic window
    /// (local; at most `steadfast::comm::MAX_WINDOW_REGIONS` at once, then
    /// `MPI_ERR_RMA_ATTACH`). MPI's contract keeps the memory valid until it is
    /// detached and the peers are done with it, or the window freed.
    fn MPI_Win_attach / PMPI_Win_attach(win: Handle, base: *mut c_void, size: isize) {
        win_call(win, |g| {
            let w = dynamic(g, win)?;
            let len = usize::try_from(size)
                .map_err(|_| Fail::new(crate::win::MPI_ERR_SIZE, format!("size {size}: negative")))?;
            if base.is_null() && len > 0 {
                return Err(Fail::new(MPI_ERR_RMA_ATTACH, "a null base for some bytes"));
            }
            // SAFETY: MPI's contract for MPI_Win_attach (above), which is the runtime's.
            unsafe { w.attach(base.cast(), len) }.map_err(attach_error)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_detach`: the region attached at `base` is no longer exposed
    /// (`MPI_ERR_RMA_ATTACH` when none is).
    fn MPI_Win_detach / PMPI_Win_detach(win: Handle, base: *const c_void) {
        win_call(win, |g| {
            let w = dynamic(g, win)?;
            w.detach(base.cast()).map_err(attach_error)
        })
    }
}
