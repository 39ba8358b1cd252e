//! `MPI_Comm_split` on an inter-communicator (MPI 4.1 §7.4.2): each new
//! inter-communicator joins the processes of one color in the local group with those
//! of the same color in the remote group; a color absent on the other side gives
//! `MPI_COMM_NULL`.
//!
//! Built from the calls that exist, each fault tolerant on its own: the two groups are
//! merged (`MPI_Intercomm_merge`, both passing `high = 0`: one group first, local
//! orders kept), the merged communicator is split by color (ordered by key, ties by
//! the old order), each side of a color is split off as the new local group, the sides
//! learn which rank leads the other (an allgather of the side flags over the color's
//! communicator: the other side's lowest rank there has the lowest key, so it is rank
//! 0 of that side's new group), and `MPI_Intercomm_create` joins them. The helper
//! communicators return errors and are freed before returning.

use std::ffi::c_int;

use crate::coll::PMPI_Allgather;
use crate::comm::{
    PMPI_Comm_free, PMPI_Comm_get_errhandler, PMPI_Comm_rank, PMPI_Comm_remote_size,
    PMPI_Comm_set_errhandler, PMPI_Comm_size, PMPI_Comm_split, PMPI_Intercomm_create,
    PMPI_Intercomm_merge,
};
use crate::consts::*;

/// `MPI_INT` (the header's value).
const MPI_INT: Handle = 0x209;

/// The tag of a split's final `MPI_Intercomm_create`. Two splits giving the same
/// groups may share it: the runtime's inter-communicator id counts the earlier ones
/// over the same groups and tag (`Engine::next_intercomm`), so a second split of an
/// inter-communicator (or of its dup) by the same colors gets a communicator of its
/// own, while the first lives or after it was merged and freed (MPICH's `iccreate.c`).
const SPLIT_TAG: c_int = 0;

/// Turns an MPI return code into a `Result`.
fn ok(rc: c_int) -> Result<(), c_int> {
    if rc == MPI_SUCCESS {
        Ok(())
    } else {
        Err(rc)
    }
}

/// Frees a helper communicator (best effort: the call's outcome is already decided).
fn free(c: &mut Handle) {
    if *c != MPI_COMM_NULL {
        // SAFETY: `c` is a communicator this module created and owns.
        let _ = unsafe { PMPI_Comm_free(c) };
    }
}

/// Splits the inter-communicator `comm` by `color` (`MPI_UNDEFINED`: no new
/// communicator) and `key`; the result or `MPI_COMM_NULL` in `newcomm`. Collective over
/// both groups. Returns an MPI return code; the helpers' errors are returned, not
/// raised (their handler is `MPI_ERRORS_RETURN`), for the caller to raise on `comm`.
///
/// # Safety
/// `newcomm` is valid for a write.
pub(crate) unsafe fn split(comm: Handle, color: c_int, key: c_int, newcomm: *mut Handle) -> c_int {
    let mut merged = MPI_COMM_NULL;
    let mut by_color = MPI_COMM_NULL;
    let mut local = MPI_COMM_NULL;
    // SAFETY: the locals are valid for writes; `newcomm` by this function's contract.
    let r = unsafe {
        steps(
            comm,
            color,
            key,
            &mut merged,
            &mut by_color,
            &mut local,
            newcomm,
        )
    };
    free(&mut local);
    free(&mut by_color);
    free(&mut merged);
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(rc) => rc,
    }
}

/// The steps of [`split`], leaving the helpers in the `&mut` slots for it to free.
///
/// # Safety
/// `newcomm` is valid for a write.
unsafe fn steps(
    comm: Handle,
    color: c_int,
    key: c_int,
    merged: &mut Handle,
    by_color: &mut Handle,
    local: &mut Handle,
    newcomm: *mut Handle,
) -> Result<(), c_int> {
    let (mut local_rank, mut remote_size, mut merged_rank) = (0, 0, 0);
    // SAFETY: every pointer below is a local valid for the write; the handles are
    // `comm` (the caller's) or the helpers made here.
    unsafe {
        ok(PMPI_Comm_rank(comm, &mut local_rank))?;
        ok(PMPI_Comm_remote_size(comm, &mut remote_size))?;
        ok(PMPI_Intercomm_merge(comm, 0, merged))?;
        ok(PMPI_Comm_set_errhandler(*merged, MPI_ERRORS_RETURN))?;
        ok(PMPI_Comm_rank(*merged, &mut merged_rank))?;
        // The merge keeps the local order: this group came first iff the ranks agree
        // (else they differ by the remote group's size, at least 1).
        let side: c_int = if merged_rank == local_rank { 0 } else { 1 };
        ok(PMPI_Comm_split(*merged, color, key, by_color))?;
        if *by_color == MPI_COMM_NULL {
            *newcomm = MPI_COMM_NULL;
            return Ok(());
        }
        ok(PMPI_Comm_split(*by_color, side, key, local))?;
        let mut n = 0;
        ok(PMPI_Comm_size(*by_color, &mut n))?;
        let mut sides = vec![0 as c_int; usize::try_from(n).unwrap_or(0)];
        ok(PMPI_Allgather(
            (&side as *const c_int).cast(),
            1,
            MPI_INT,
            sides.as_mut_ptr().cast(),
            1,
            MPI_INT,
            *by_color,
        ))?;
        match sides.iter().position(|&s| s != side) {
            None => *newcomm = MPI_COMM_NULL,
            Some(leader) => {
                ok(PMPI_Intercomm_create(
                    *local,
                    0,
                    *by_color,
                    leader as c_int,
                    SPLIT_TAG,
                    newcomm,
                ))?;
                // The new communicator takes `comm`'s handler, not the helpers'.
                let mut handler = MPI_ERRORS_RETURN;
                ok(PMPI_Comm_get_errhandler(comm, &mut handler))?;
                ok(PMPI_Comm_set_errhandler(*newcomm, handler))?;
            }
        }
    }
    Ok(())
}
