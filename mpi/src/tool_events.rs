//! MPI_T events and event sources (MPI 4.1 section 15.3.8): none of either, which the
//! standard allows. Counts are 0, indices `MPI_T_ERR_INVALID_INDEX`, names
//! `MPI_T_ERR_INVALID_NAME`, and registrations and instances (none can exist)
//! `MPI_T_ERR_INVALID_HANDLE`.

use std::ffi::{c_char, c_int, c_void};

use crate::consts::*;
use crate::tool::{name_arg, put_required, tool_call};

/// An `MPI_Count`.
type Count = i64;

crate::mpi_fn! {
    /// `MPI_T_source_get_num`: 0.
    fn MPI_T_source_get_num / PMPI_T_source_get_num(num_sources: *mut c_int) {
        // SAFETY: MPI's contract: a valid output pointer.
        tool_call(|_| unsafe { put_required(num_sources, 0) })
    }
}

crate::mpi_fn! {
    /// `MPI_T_source_get_info`: no index is valid.
    fn MPI_T_source_get_info / PMPI_T_source_get_info(
        source_index: c_int, name: *mut c_char, name_len: *mut c_int, desc: *mut c_char,
        desc_len: *mut c_int, ordering: *mut c_int, ticks_per_second: *mut Count,
        max_ticks: *mut Count, info: *mut Handle,
    ) {
        let _ = (source_index, name, name_len, desc, desc_len, ordering, ticks_per_second);
        let _ = (max_ticks, info);
        tool_call(|_| Err(MPI_T_ERR_INVALID_INDEX))
    }
}

crate::mpi_fn! {
    /// `MPI_T_source_get_timestamp`: no index is valid.
    fn MPI_T_source_get_timestamp / PMPI_T_source_get_timestamp(source_index: c_int, timestamp: *mut Count) {
        let _ = (source_index, timestamp);
        tool_call(|_| Err(MPI_T_ERR_INVALID_INDEX))
    }
}

crate::mpi_fn! {
    /// `MPI_T_event_get_num`: 0.
    fn MPI_T_event_get_num / PMPI_T_event_get_num(num_events: *mut c_int) {
        // SAFETY: MPI's contract: a valid output pointer.
        tool_call(|_| unsafe { put_required(num_events, 0) })
    }
}

crate::mpi_fn! {
    /// `MPI_T_event_get_info`: no index is valid.
    fn MPI_T_event_get_info / PMPI_T_event_get_info(
        event_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int,
        array_of_datatypes: *mut Handle, array_of_displacements: *mut isize,
        num_elements: *mut c_int, enumtype: *mut Handle, info: *mut Handle, desc: *mut c_char,
        desc_len: *mut c_int, bind: *mut c_int,
    ) {
        let _ = (event_index, name, name_len, verbosity, array_of_datatypes);
        let _ = (array_of_displacements, num_elements, enumtype, info, desc, desc_len, bind);
        tool_call(|_| Err(MPI_T_ERR_INVALID_INDEX))
    }
}

crate::mpi_fn! {
    /// `MPI_T_event_get_index`: no name is valid.
    fn MPI_T_event_get_index / PMPI_T_event_get_index(name: *const c_char, event_index: *mut c_int) {
        let _ = event_index;
        tool_call(|_| {
            // SAFETY: MPI's contract: a C string.
            unsafe { name_arg(name) }?;
            Err(MPI_T_ERR_INVALID_NAME)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_event_handle_alloc`: no index is valid.
    fn MPI_T_event_handle_alloc / PMPI_T_event_handle_alloc(
        event_index: c_int, obj_handle: *mut c_void, info: Handle, event_registration: *mut Handle,
    ) {
        let _ = (event_index, obj_handle, info, event_registration);
        tool_call(|_| Err(MPI_T_ERR_INVALID_INDEX))
    }
}

/// Defines event calls that take a registration or instance first: none is valid.
macro_rules! no_handle {
    ($($(#[$doc:meta])* fn $name:ident / $pname:ident ( $h:ident : $hty:ty $(, $arg:ident : $ty:ty)* );)+) => {
        $(crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname($h: $hty $(, $arg: $ty)*) {
                let _ = ($h, $($arg),*);
                tool_call(|_| Err(MPI_T_ERR_INVALID_HANDLE))
            }
        })+
    };
}

no_handle! {
    /// `MPI_T_event_handle_set_info`: no registration exists.
    fn MPI_T_event_handle_set_info / PMPI_T_event_handle_set_info(reg: Handle, info: Handle);
    /// `MPI_T_event_handle_get_info`: no registration exists.
    fn MPI_T_event_handle_get_info / PMPI_T_event_handle_get_info(reg: Handle, info_used: *mut Handle);
    /// `MPI_T_event_register_callback`: no registration exists.
    fn MPI_T_event_register_callback / PMPI_T_event_register_callback(
        reg: Handle, cb_safety: c_int, info: Handle, user_data: *mut c_void, cb: *mut c_void);
    /// `MPI_T_event_callback_set_info`: no registration exists.
    fn MPI_T_event_callback_set_info / PMPI_T_event_callback_set_info(
        reg: Handle, cb_safety: c_int, info: Handle);
    /// `MPI_T_event_callback_get_info`: no registration exists.
    fn MPI_T_event_callback_get_info / PMPI_T_event_callback_get_info(
        reg: Handle, cb_safety: c_int, info_used: *mut Handle);
    /// `MPI_T_event_handle_free`: no registration exists.
    fn MPI_T_event_handle_free / PMPI_T_event_handle_free(
        reg: Handle, user_data: *mut c_void, free_cb: *mut c_void);
    /// `MPI_T_event_set_dropped_handler`: no registration exists.
    fn MPI_T_event_set_dropped_handler / PMPI_T_event_set_dropped_handler(reg: Handle, cb: *mut c_void);
    /// `MPI_T_event_read`: no instance exists.
    fn MPI_T_event_read / PMPI_T_event_read(inst: Handle, element_index: c_int, buffer: *mut c_void);
    /// `MPI_T_event_copy`: no instance exists.
    fn MPI_T_event_copy / PMPI_T_event_copy(inst: Handle, buffer: *mut c_void);
    /// `MPI_T_event_get_timestamp`: no instance exists.
    fn MPI_T_event_get_timestamp / PMPI_T_event_get_timestamp(inst: Handle, event_timestamp: *mut Count);
    /// `MPI_T_event_get_source`: no instance exists.
    fn MPI_T_event_get_source / PMPI_T_event_get_source(inst: Handle, source_index: *mut c_int);
}
