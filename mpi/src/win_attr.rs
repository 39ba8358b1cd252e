//! Attributes with the program's own keys on windows (MPI 4.1 §12.2.7):
//! `MPI_Win_create_keyval`, `MPI_Win_free_keyval`, `MPI_Win_set_attr`,
//! `MPI_Win_delete_attr`, and `MPI_Win_get_attr` for those keys (`win.rs` answers the
//! predefined ones). They share the communicators' table and keys (`attr.rs`; a
//! window's handle never equals a communicator's or a datatype's); `MPI_Win_free`
//! deletes them, last set first. A window is never copied, so a key's copy callback is
//! kept and never called. Also the window's info hints (`MPI_Win_set_info`,
//! `MPI_Win_get_info`: accepted, none in effect).

use std::ffi::{c_int, c_void};

use crate::attr::DeleteFn;
use crate::consts::*;
use crate::win::{entry, win_call};

crate::mpi_fn! {
    /// `MPI_Win_create_keyval`: a key as `MPI_Comm_create_keyval` makes
    /// (`MPI_WIN_DUP_FN`, `MPI_WIN_NULL_COPY_FN`, `MPI_WIN_NULL_DELETE_FN` have the
    /// communicator ones' values).
    fn MPI_Win_create_keyval / PMPI_Win_create_keyval(
        copy_fn: usize,
        delete_fn: Option<DeleteFn>,
        keyval: *mut c_int,
        extra_state: *mut c_void
    ) {
        // SAFETY: the same contract (the callbacks have the same C signatures).
        unsafe { crate::attr::PMPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state) }
    }
}

crate::mpi_fn! {
    /// `MPI_Win_free_keyval`.
    fn MPI_Win_free_keyval / PMPI_Win_free_keyval(keyval: *mut c_int) {
        // SAFETY: the same contract.
        unsafe { crate::attr::PMPI_Comm_free_keyval(keyval) }
    }
}

crate::mpi_fn! {
    /// `MPI_Win_set_attr`: a value already set is deleted first (its callback runs).
    /// A predefined key is `MPI_ERR_KEYVAL`: those are read-only.
    fn MPI_Win_set_attr / PMPI_Win_set_attr(win: Handle, keyval: c_int, attribute_val: *mut c_void) {
        win_call(win, |g| {
            entry(g.lib()?, win)?;
            crate::attr::set(g, win, keyval, attribute_val)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_delete_attr`: runs the key's delete callback.
    fn MPI_Win_delete_attr / PMPI_Win_delete_attr(win: Handle, keyval: c_int) {
        win_call(win, |g| {
            entry(g.lib()?, win)?;
            crate::attr::delete(g, win, keyval)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_set_info`: the hints are accepted; none changes what the library does.
    fn MPI_Win_set_info / PMPI_Win_set_info(win: Handle, info: Handle) {
        win_call(win, |g| {
            let lib = g.lib()?;
            entry(lib, win)?;
            crate::comm_variants::info_ok(lib, info)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_get_info`: a new info object with the hints in effect (none).
    fn MPI_Win_get_info / PMPI_Win_get_info(win: Handle, info_used: *mut Handle) {
        win_call(win, |g| {
            // SAFETY: MPI's contract: `info_used` is valid for a write.
            let slot = unsafe { crate::util::out(info_used) }?;
            let lib = g.lib()?;
            entry(lib, win)?;
            let h = lib.new_handle();
            lib.infos.insert(h, Vec::new());
            *slot = h;
            Ok(())
        })
    }
}
