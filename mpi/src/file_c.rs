//! The large-count (`_c`) MPI-IO calls of MPI 4.1 (chapter 14): the reads and writes
//! at explicit offsets, at the individual and the shared pointer, their non-blocking
//! and split-collective forms, whose count is an `MPI_Count`, and
//! `MPI_File_get_type_extent_c`, whose result is one.
//!
//! Each data access narrows its count to an `int` (`MPI_ERR_COUNT` beyond, raised on
//! the file's error handler) and calls the `int` form's `PMPI_` symbol; none of them
//! takes an array. The extent is written as the `MPI_Count` it is, not narrowed.

use std::ffi::c_void;

use crate::consts::*;
use crate::count_c::{narrow, MpiCount};
use crate::file::file_call;
use crate::file_io::{
    PMPI_File_iread, PMPI_File_iread_all, PMPI_File_iread_at, PMPI_File_iread_at_all,
    PMPI_File_iwrite, PMPI_File_iwrite_all, PMPI_File_iwrite_at, PMPI_File_iwrite_at_all,
    PMPI_File_read, PMPI_File_read_all, PMPI_File_read_at, PMPI_File_read_at_all, PMPI_File_write,
    PMPI_File_write_all, PMPI_File_write_at, PMPI_File_write_at_all,
};
use crate::file_shared::{
    PMPI_File_iread_shared, PMPI_File_iwrite_shared, PMPI_File_read_ordered, PMPI_File_read_shared,
    PMPI_File_write_ordered, PMPI_File_write_shared,
};
use crate::file_split::{
    PMPI_File_read_all_begin, PMPI_File_read_at_all_begin, PMPI_File_read_ordered_begin,
    PMPI_File_write_all_begin, PMPI_File_write_at_all_begin, PMPI_File_write_ordered_begin,
};
use crate::file_view::PMPI_File_get_type_extent;
use crate::request::MPI_Status;
use crate::util::out;

/// Defines `_c` data-access calls: the arguments are the `int` form's, `$count` the
/// one narrowed to an `int` before the `int` form (`$int`) is called with them all.
macro_rules! file_c_calls {
    ($($(#[$doc:meta])* $name:ident / $pname:ident => $int:ident ($($arg:ident : $ty:ty),*) count $count:ident;)*) => {$(
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(fh: Handle, $($arg: $ty),*) {
                let $count = match narrow($count, "count") {
                    Ok(c) => c,
                    Err(fail) => return file_call(fh, |_| Err(fail)),
                };
                // SAFETY: the same contract as this function's; only `count` narrowed.
                unsafe { $int(fh, $($arg),*) }
            }
        }
    )*};
}

file_c_calls! {
    /// `MPI_File_read_at_c`: `MPI_File_read_at` with an `MPI_Count` count.
    MPI_File_read_at_c / PMPI_File_read_at_c => PMPI_File_read_at
        (offset: i64, buf: *mut c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
    /// `MPI_File_read_at_all_c`: `MPI_File_read_at_all` with an `MPI_Count` count.
    MPI_File_read_at_all_c / PMPI_File_read_at_all_c => PMPI_File_read_at_all
        (offset: i64, buf: *mut c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
    /// `MPI_File_write_at_c`: `MPI_File_write_at` with an `MPI_Count` count.
    MPI_File_write_at_c / PMPI_File_write_at_c => PMPI_File_write_at
        (offset: i64, buf: *const c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
    /// `MPI_File_write_at_all_c`: `MPI_File_write_at_all` with an `MPI_Count` count.
    MPI_File_write_at_all_c / PMPI_File_write_at_all_c => PMPI_File_write_at_all
        (offset: i64, buf: *const c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
    /// `MPI_File_read_c`: `MPI_File_read` with an `MPI_Count` count.
    MPI_File_read_c / PMPI_File_read_c => PMPI_File_read
        (buf: *mut c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
    /// `MPI_File_read_all_c`: `MPI_File_read_all` with an `MPI_Count` count.
    MPI_File_read_all_c / PMPI_File_read_all_c => PMPI_File_read_all
        (buf: *mut c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
    /// `MPI_File_write_c`: `MPI_File_write` with an `MPI_Count` count.
    MPI_File_write_c / PMPI_File_write_c => PMPI_File_write
        (buf: *const c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
    /// `MPI_File_write_all_c`: `MPI_File_write_all` with an `MPI_Count` count.
    MPI_File_write_all_c / PMPI_File_write_all_c => PMPI_File_write_all
        (buf: *const c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
    /// `MPI_File_read_shared_c`: `MPI_File_read_shared` with an `MPI_Count` count.
    MPI_File_read_shared_c / PMPI_File_read_shared_c => PMPI_File_read_shared
        (buf: *mut c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
    /// `MPI_File_write_shared_c`: `MPI_File_write_shared` with an `MPI_Count` count.
    MPI_File_write_shared_c / PMPI_File_write_shared_c => PMPI_File_write_shared
        (buf: *const c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
    /// `MPI_File_read_ordered_c`: `MPI_File_read_ordered` with an `MPI_Count` count.
    MPI_File_read_ordered_c / PMPI_File_read_ordered_c => PMPI_File_read_ordered
        (buf: *mut c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
    /// `MPI_File_write_ordered_c`: `MPI_File_write_ordered` with an `MPI_Count` count.
    MPI_File_write_ordered_c / PMPI_File_write_ordered_c => PMPI_File_write_ordered
        (buf: *const c_void, count: MpiCount, datatype: Handle, status: *mut MPI_Status) count count;
}

file_c_calls! {
    /// `MPI_File_iread_at_c`: `MPI_File_iread_at` with an `MPI_Count` count.
    MPI_File_iread_at_c / PMPI_File_iread_at_c => PMPI_File_iread_at
        (offset: i64, buf: *mut c_void, count: MpiCount, datatype: Handle, request: *mut Handle) count count;
    /// `MPI_File_iread_at_all_c`: `MPI_File_iread_at_all` with an `MPI_Count` count.
    MPI_File_iread_at_all_c / PMPI_File_iread_at_all_c => PMPI_File_iread_at_all
        (offset: i64, buf: *mut c_void, count: MpiCount, datatype: Handle, request: *mut Handle) count count;
    /// `MPI_File_iwrite_at_c`: `MPI_File_iwrite_at` with an `MPI_Count` count.
    MPI_File_iwrite_at_c / PMPI_File_iwrite_at_c => PMPI_File_iwrite_at
        (offset: i64, buf: *const c_void, count: MpiCount, datatype: Handle, request: *mut Handle) count count;
    /// `MPI_File_iwrite_at_all_c`: `MPI_File_iwrite_at_all` with an `MPI_Count` count.
    MPI_File_iwrite_at_all_c / PMPI_File_iwrite_at_all_c => PMPI_File_iwrite_at_all
        (offset: i64, buf: *const c_void, count: MpiCount, datatype: Handle, request: *mut Handle) count count;
    /// `MPI_File_iread_c`: `MPI_File_iread` with an `MPI_Count` count.
    MPI_File_iread_c / PMPI_File_iread_c => PMPI_File_iread
        (buf: *mut c_void, count: MpiCount, datatype: Handle, request: *mut Handle) count count;
    /// `MPI_File_iread_all_c`: `MPI_File_iread_all` with an `MPI_Count` count.
    MPI_File_iread_all_c / PMPI_File_iread_all_c => PMPI_File_iread_all
        (buf: *mut c_void, count: MpiCount, datatype: Handle, request: *mut Handle) count count;
    /// `MPI_File_iwrite_c`: `MPI_File_iwrite` with an `MPI_Count` count.
    MPI_File_iwrite_c / PMPI_File_iwrite_c => PMPI_File_iwrite
        (buf: *const c_void, count: MpiCount, datatype: Handle, request: *mut Handle) count count;
    /// `MPI_File_iwrite_all_c`: `MPI_File_iwrite_all` with an `MPI_Count` count.
    MPI_File_iwrite_all_c / PMPI_File_iwrite_all_c => PMPI_File_iwrite_all
        (buf: *const c_void, count: MpiCount, datatype: Handle, request: *mut Handle) count count;
    /// `MPI_File_iread_shared_c`: `MPI_File_iread_shared` with an `MPI_Count` count.
    MPI_File_iread_shared_c / PMPI_File_iread_shared_c => PMPI_File_iread_shared
        (buf: *mut c_void, count: MpiCount, datatype: Handle, request: *mut Handle) count count;
    /// `MPI_File_iwrite_shared_c`: `MPI_File_iwrite_shared` with an `MPI_Count` count.
    MPI_File_iwrite_shared_c / PMPI_File_iwrite_shared_c => PMPI_File_iwrite_shared
        (buf: *const c_void, count: MpiCount, datatype: Handle, request: *mut Handle) count count;
}

file_c_calls! {
    /// `MPI_File_read_at_all_begin_c`: `MPI_File_read_at_all_begin` with an
    /// `MPI_Count` count.
    MPI_File_read_at_all_begin_c / PMPI_File_read_at_all_begin_c => PMPI_File_read_at_all_begin
        (offset: i64, buf: *mut c_void, count: MpiCount, datatype: Handle) count count;
    /// `MPI_File_write_at_all_begin_c`: `MPI_File_write_at_all_begin` with an
    /// `MPI_Count` count.
    MPI_File_write_at_all_begin_c / PMPI_File_write_at_all_begin_c => PMPI_File_write_at_all_begin
        (offset: i64, buf: *const c_void, count: MpiCount, datatype: Handle) count count;
    /// `MPI_File_read_all_begin_c`: `MPI_File_read_all_begin` with an `MPI_Count`
    /// count.
    MPI_File_read_all_begin_c / PMPI_File_read_all_begin_c => PMPI_File_read_all_begin
        (buf: *mut c_void, count: MpiCount, datatype: Handle) count count;
    /// `MPI_File_write_all_begin_c`: `MPI_File_write_all_begin` with an `MPI_Count`
    /// count.
    MPI_File_write_all_begin_c / PMPI_File_write_all_begin_c => PMPI_File_write_all_begin
        (buf: *const c_void, count: MpiCount, datatype: Handle) count count;
    /// `MPI_File_read_ordered_begin_c`: `MPI_File_read_ordered_begin` with an
    /// `MPI_Count` count.
    MPI_File_read_ordered_begin_c / PMPI_File_read_ordered_begin_c => PMPI_File_read_ordered_begin
        (buf: *mut c_void, count: MpiCount, datatype: Handle) count count;
    /// `MPI_File_write_ordered_begin_c`: `MPI_File_write_ordered_begin` with an
    /// `MPI_Count` count.
    MPI_File_write_ordered_begin_c / PMPI_File_write_ordered_begin_c => PMPI_File_write_ordered_begin
        (buf: *const c_void, count: MpiCount, datatype: Handle) count count;
}

crate::mpi_fn! {
    /// `MPI_File_get_type_extent_c`: `MPI_File_get_type_extent` with an `MPI_Count`
    /// result (written whole).
    fn MPI_File_get_type_extent_c / PMPI_File_get_type_extent_c(
        fh: Handle,
        datatype: Handle,
        extent: *mut MpiCount
    ) {
        let mut x: isize = 0;
        // SAFETY: the same contract as this function's; `x` is a local.
        let rc = unsafe { PMPI_File_get_type_extent(fh, datatype, &mut x) };
        if rc != MPI_SUCCESS {
            return rc;
        }
        // SAFETY: MPI's contract: `extent` is valid for a write.
        match unsafe { out(extent) } {
            Ok(slot) => {
                // An `MPI_Aint` always fits in an `MPI_Count` (both 64 bits here).
                *slot = x as MpiCount;
                MPI_SUCCESS
            }
            Err(fail) => file_call(fh, |_| Err(fail)),
        }
    }
}
