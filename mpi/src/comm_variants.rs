//! `MPI_Comm_dup`'s variants and communicator hints: `MPI_Comm_dup_with_info` and
//! `MPI_Comm_idup_with_info` (`MPI_Comm_dup` and `MPI_Comm_idup`, which is `idup.rs`:
//! the library reads no hint),
//! `MPI_Comm_set_info` (hints accepted, none used) and `MPI_Comm_get_info` (a new,
//! empty info: no hint is in effect).

use crate::consts::*;
use crate::error::Fail;
use crate::state::call;
use crate::util::out;

/// Checks that `info` is `MPI_INFO_NULL` or an info object.
pub(crate) fn info_ok(lib: &crate::state::Lib, info: Handle) -> Result<(), Fail> {
    if info == MPI_INFO_NULL || info == MPI_INFO_ENV || lib.infos.contains_key(&info) {
        Ok(())
    } else {
        Err(Fail::new(
            MPI_ERR_INFO,
            format!("{info:#x} is not an info object"),
        ))
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_dup_with_info`: `MPI_Comm_dup` (the hints are not read).
    fn MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info(comm: Handle, info: Handle, newcomm: *mut Handle) {
        let checked = call(comm, |g| info_ok(g.lib()?, info));
        if checked != MPI_SUCCESS {
            return checked;
        }
        // SAFETY: this function's contract covers `MPI_Comm_dup`'s.
        unsafe { crate::comm::PMPI_Comm_dup(comm, newcomm) }
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_idup_with_info`: `MPI_Comm_idup` (the hints are not read).
    fn MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info(comm: Handle, info: Handle, newcomm: *mut Handle, request: *mut Handle) {
        let checked = call(comm, |g| info_ok(g.lib()?, info));
        if checked != MPI_SUCCESS {
            return checked;
        }
        // SAFETY: this function's contract covers `MPI_Comm_idup`'s.
        unsafe { crate::idup::PMPI_Comm_idup(comm, newcomm, request) }
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_set_info`: the hints are accepted; none changes what the library does.
    fn MPI_Comm_set_info / PMPI_Comm_set_info(comm: Handle, info: Handle) {
        call(comm, |g| {
            let lib = g.lib()?;
            lib.comm(comm)?;
            info_ok(lib, info)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_get_info`: a new info object with the hints in effect (none).
    fn MPI_Comm_get_info / PMPI_Comm_get_info(comm: Handle, info_used: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `info_used` is valid for a write.
            let slot = unsafe { out(info_used) }?;
            let lib = g.lib()?;
            lib.comm(comm)?;
            let h = lib.new_handle();
            lib.infos.insert(h, Vec::new());
            *slot = h;
            Ok(())
        })
    }
}
