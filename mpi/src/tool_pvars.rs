//! MPI_T performance variables: none. The runtime's counters (`World::stats`) sit
//! behind the MPI state's lock and the engine's; exposing them would make MPI_T depend on
//! MPI's state, and counting more would add work to the message path. Sessions are real
//! (tools create one before looking for variables); every handle is invalid.

use std::ffi::{c_char, c_int, c_void};

use crate::consts::*;
use crate::tool::{name_arg, put_required, tool_call, Tool};

/// `MPI_T_PVAR_ALL_HANDLES` (header value).
const ALL_HANDLES: Handle = 1;

/// Checks a session (`MPI_T_ERR_INVALID_SESSION`).
fn session(t: &Tool, s: Handle) -> Result<(), c_int> {
    if t.sessions.contains(&s) {
        Ok(())
    } else {
        Err(MPI_T_ERR_INVALID_SESSION)
    }
}

/// A call on one handle, or on every handle of the session (of which there are none).
fn on_handles(t: &Tool, s: Handle, h: Handle, all_allowed: bool) -> Result<(), c_int> {
    session(t, s)?;
    if h == ALL_HANDLES && all_allowed {
        Ok(())
    } else {
        Err(MPI_T_ERR_INVALID_HANDLE)
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_get_num`: 0.
    fn MPI_T_pvar_get_num / PMPI_T_pvar_get_num(num_pvar: *mut c_int) {
        // SAFETY: MPI's contract: a valid output pointer.
        tool_call(|_| unsafe { put_required(num_pvar, 0) })
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_get_info`: no index is valid.
    fn MPI_T_pvar_get_info / PMPI_T_pvar_get_info(
        pvar_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int,
        var_class: *mut c_int, datatype: *mut Handle, enumtype: *mut Handle, desc: *mut c_char,
        desc_len: *mut c_int, bind: *mut c_int, readonly: *mut c_int, continuous: *mut c_int,
        atomic: *mut c_int,
    ) {
        let _ = (pvar_index, name, name_len, verbosity, var_class, datatype, enumtype);
        let _ = (desc, desc_len, bind, readonly, continuous, atomic);
        tool_call(|_| Err(MPI_T_ERR_INVALID_INDEX))
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_get_index`: no name is valid.
    fn MPI_T_pvar_get_index / PMPI_T_pvar_get_index(name: *const c_char, var_class: c_int, pvar_index: *mut c_int) {
        let _ = (var_class, pvar_index);
        tool_call(|_| {
            // SAFETY: MPI's contract: a C string.
            unsafe { name_arg(name) }?;
            Err(MPI_T_ERR_INVALID_NAME)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_session_create`.
    fn MPI_T_pvar_session_create / PMPI_T_pvar_session_create(session_out: *mut Handle) {
        tool_call(|t| {
            if session_out.is_null() {
                return Err(MPI_T_ERR_INVALID);
            }
            let s = t.new_handle();
            t.sessions.insert(s);
            // SAFETY: MPI's contract: a valid output pointer (checked non-null).
            unsafe { put_required(session_out, s) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_session_free`: sets `*session` to `MPI_T_PVAR_SESSION_NULL`.
    fn MPI_T_pvar_session_free / PMPI_T_pvar_session_free(session_io: *mut Handle) {
        tool_call(|t| {
            // SAFETY: MPI's contract: a valid pointer.
            let s = unsafe { session_io.as_mut() }.ok_or(MPI_T_ERR_INVALID)?;
            if !t.sessions.remove(s) {
                return Err(MPI_T_ERR_INVALID_SESSION);
            }
            *s = 0;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_handle_alloc`: no index is valid.
    fn MPI_T_pvar_handle_alloc / PMPI_T_pvar_handle_alloc(
        session_h: Handle, pvar_index: c_int, obj_handle: *mut c_void, handle: *mut Handle,
        count: *mut c_int,
    ) {
        let _ = (pvar_index, obj_handle, handle, count);
        tool_call(|t| {
            session(t, session_h)?;
            Err(MPI_T_ERR_INVALID_INDEX)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_handle_free`: no handle is valid.
    fn MPI_T_pvar_handle_free / PMPI_T_pvar_handle_free(session_h: Handle, handle: *mut Handle) {
        let _ = handle;
        tool_call(|t| on_handles(t, session_h, 0, false))
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_start`: `MPI_T_PVAR_ALL_HANDLES` starts the session's none.
    fn MPI_T_pvar_start / PMPI_T_pvar_start(session_h: Handle, handle: Handle) {
        tool_call(|t| on_handles(t, session_h, handle, true))
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_stop`: `MPI_T_PVAR_ALL_HANDLES` stops the session's none.
    fn MPI_T_pvar_stop / PMPI_T_pvar_stop(session_h: Handle, handle: Handle) {
        tool_call(|t| on_handles(t, session_h, handle, true))
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_read`: no handle is valid.
    fn MPI_T_pvar_read / PMPI_T_pvar_read(session_h: Handle, handle: Handle, buf: *mut c_void) {
        let _ = buf;
        tool_call(|t| on_handles(t, session_h, handle, false))
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_write`: no handle is valid.
    fn MPI_T_pvar_write / PMPI_T_pvar_write(session_h: Handle, handle: Handle, buf: *const c_void) {
        let _ = buf;
        tool_call(|t| on_handles(t, session_h, handle, false))
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_reset`: `MPI_T_PVAR_ALL_HANDLES` resets the session's none.
    fn MPI_T_pvar_reset / PMPI_T_pvar_reset(session_h: Handle, handle: Handle) {
        tool_call(|t| on_handles(t, session_h, handle, true))
    }
}

crate::mpi_fn! {
    /// `MPI_T_pvar_readreset`: no handle is valid.
    fn MPI_T_pvar_readreset / PMPI_T_pvar_readreset(session_h: Handle, handle: Handle, buf: *mut c_void) {
        let _ = buf;
        tool_call(|t| on_handles(t, session_h, handle, false))
    }
}
