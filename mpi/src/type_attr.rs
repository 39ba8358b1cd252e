//! Attributes on datatypes (MPI 4.1 §5.1.14... §7.7.4): `MPI_Type_create_keyval`,
//! `MPI_Type_free_keyval`, `MPI_Type_set_attr`, `MPI_Type_get_attr`,
//! `MPI_Type_delete_attr`. They share the communicators' table and keys (`attr.rs`;
//! a datatype's handle never equals a communicator's); `MPI_Type_dup` copies them
//! through their copy callbacks, `MPI_Type_free` deletes them.

use std::ffi::{c_int, c_void};

use crate::attr::DeleteFn;
use crate::consts::*;
use crate::state::{call, NO_OBJECT};

crate::mpi_fn! {
    /// `MPI_Type_create_keyval`: a key as `MPI_Comm_create_keyval` makes
    /// (`MPI_TYPE_DUP_FN`, `MPI_TYPE_NULL_COPY_FN`, `MPI_TYPE_NULL_DELETE_FN` have the
    /// communicator ones' values).
    fn MPI_Type_create_keyval / PMPI_Type_create_keyval(
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
    /// `MPI_Type_free_keyval`.
    fn MPI_Type_free_keyval / PMPI_Type_free_keyval(keyval: *mut c_int) {
        // SAFETY: the same contract.
        unsafe { crate::attr::PMPI_Comm_free_keyval(keyval) }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_set_attr`.
    fn MPI_Type_set_attr / PMPI_Type_set_attr(
        datatype: Handle,
        keyval: c_int,
        attribute_val: *mut c_void
    ) {
        call(NO_OBJECT, |g| {
            g.lib()?.is_datatype(datatype)?;
            crate::attr::set(g, datatype, keyval, attribute_val)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_get_attr`: `*flag` 0 when the key has no value on the type.
    fn MPI_Type_get_attr / PMPI_Type_get_attr(
        datatype: Handle,
        keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            lib.is_datatype(datatype)?;
            // SAFETY: MPI's contract: `attribute_val` points to a `void *`, `flag` to
            // an int.
            unsafe { crate::attr::get(lib, datatype, keyval, attribute_val, flag) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_delete_attr`.
    fn MPI_Type_delete_attr / PMPI_Type_delete_attr(datatype: Handle, keyval: c_int) {
        call(NO_OBJECT, |g| {
            g.lib()?.is_datatype(datatype)?;
            crate::attr::delete(g, datatype, keyval)
        })
    }
}
