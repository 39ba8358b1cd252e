//! The split collective data access calls of files (MPI 4.1 §14.4.5):
//! `MPI_File_read_at_all_begin`/`_end`, `write_at_all`, `read_all`, `write_all`,
//! `read_ordered` and `write_ordered`.
//!
//! The begin call does the access, as the blocking form does (`file_io`,
//! `file_shared`), and records its name and the bytes moved in the file's entry; the
//! end call, the same operation's, writes the status. One split collective at a time per
//! file (MPI makes a second erroneous: refused here with `MPI_ERR_OTHER`, as is an end
//! without its begin).

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::error::{Fail, R};
use crate::file::{entry, file_call};
use crate::file_io::{done, read, write, At};
use crate::file_shared::shared_start;
use crate::request::MPI_Status;
use crate::state::Guard;
use crate::status::write_status;

/// Refuses a begin while another split collective of the file is active.
fn none_active(g: &mut Guard, fh: Handle, name: &str) -> R<()> {
    match entry(g.lib()?, fh)?.split {
        Some((active, _)) => Err(Fail::new(
            MPI_ERR_OTHER,
            format!("MPI_File_{name}_begin while MPI_File_{active}_begin is not ended"),
        )),
        None => Ok(()),
    }
}

/// Records the begun split collective `name`, which moved `bytes`.
fn begun(g: &mut Guard, fh: Handle, name: &'static str, bytes: usize) -> R<()> {
    entry(g.lib()?, fh)?.split = Some((name, bytes));
    Ok(())
}

/// Ends split collective `name`: the bytes its begin moved.
fn end(g: &mut Guard, fh: Handle, name: &str) -> R<usize> {
    let e = entry(g.lib()?, fh)?;
    match e.split {
        Some((begun, bytes)) if begun == name => {
            e.split = None;
            Ok(bytes)
        }
        Some((begun, _)) => Err(Fail::new(
            MPI_ERR_OTHER,
            format!("MPI_File_{name}_end, but MPI_File_{begun}_begin is the active one"),
        )),
        None => Err(Fail::new(
            MPI_ERR_OTHER,
            format!("MPI_File_{name}_end without MPI_File_{name}_begin"),
        )),
    }
}

/// Defines the end calls: the status of the begun access.
macro_rules! end_calls {
    ($($(#[$doc:meta])* $name:ident / $pname:ident => $what:literal, $buf:ty;)*) => {$(
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(fh: Handle, buf: $buf, status: *mut MPI_Status) {
                let _ = buf;
                file_call(fh, |g| {
                    let n = end(g, fh, $what)?;
                    // SAFETY: MPI's contract: `status` is null, ignored, or writable.
                    unsafe { write_status(status, &done(n), false) };
                    Ok(())
                })
            }
        }
    )*};
}

end_calls! {
    /// `MPI_File_read_at_all_end`: the status of the read its begin did.
    MPI_File_read_at_all_end / PMPI_File_read_at_all_end => "read_at_all", *mut c_void;
    /// `MPI_File_write_at_all_end`.
    MPI_File_write_at_all_end / PMPI_File_write_at_all_end => "write_at_all", *const c_void;
    /// `MPI_File_read_all_end`.
    MPI_File_read_all_end / PMPI_File_read_all_end => "read_all", *mut c_void;
    /// `MPI_File_write_all_end`.
    MPI_File_write_all_end / PMPI_File_write_all_end => "write_all", *const c_void;
    /// `MPI_File_read_ordered_end`.
    MPI_File_read_ordered_end / PMPI_File_read_ordered_end => "read_ordered", *mut c_void;
    /// `MPI_File_write_ordered_end`.
    MPI_File_write_ordered_end / PMPI_File_write_ordered_end => "write_ordered", *const c_void;
}

/// Defines the begin calls at an explicit offset.
macro_rules! at_begin_calls {
    ($($(#[$doc:meta])* $name:ident / $pname:ident => $f:ident, $what:literal, $buf:ty;)*) => {$(
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                fh: Handle,
                offset: i64,
                buf: $buf,
                count: c_int,
                datatype: Handle
            ) {
                file_call(fh, |g| {
                    none_active(g, fh, $what)?;
                    // SAFETY: MPI's contract for the buffer.
                    let n = unsafe { $f(g, fh, At::Offset(offset), buf, count, datatype) }?;
                    begun(g, fh, $what, n)
                })
            }
        }
    )*};
}

at_begin_calls! {
    /// `MPI_File_read_at_all_begin`: reads at view position `offset` now.
    MPI_File_read_at_all_begin / PMPI_File_read_at_all_begin => read, "read_at_all", *mut c_void;
    /// `MPI_File_write_at_all_begin`: writes at view position `offset` now.
    MPI_File_write_at_all_begin / PMPI_File_write_at_all_begin => write, "write_at_all", *const c_void;
}

/// Defines the begin calls at the individual pointer (`$ordered` false) or in rank
/// order at the shared pointer (`$ordered` true).
macro_rules! begin_calls {
    ($($(#[$doc:meta])* $name:ident / $pname:ident => $f:ident, $what:literal, $buf:ty, $write:expr, $ordered:expr;)*) => {$(
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(fh: Handle, buf: $buf, count: c_int, datatype: Handle) {
                file_call(fh, |g| {
                    none_active(g, fh, $what)?;
                    let at = if $ordered {
                        At::Shared(shared_start(g, fh, count, datatype, $write, true)?)
                    } else {
                        At::Pointer
                    };
                    // SAFETY: MPI's contract for the buffer.
                    let n = unsafe { $f(g, fh, at, buf, count, datatype) }?;
                    begun(g, fh, $what, n)
                })
            }
        }
    )*};
}

begin_calls! {
    /// `MPI_File_read_all_begin`: reads at the individual pointer now.
    MPI_File_read_all_begin / PMPI_File_read_all_begin => read, "read_all", *mut c_void, false, false;
    /// `MPI_File_write_all_begin`: writes at the individual pointer now.
    MPI_File_write_all_begin / PMPI_File_write_all_begin => write, "write_all", *const c_void, true, false;
    /// `MPI_File_read_ordered_begin`: reads this member's part, in rank order at the
    /// shared pointer, now.
    MPI_File_read_ordered_begin / PMPI_File_read_ordered_begin => read, "read_ordered", *mut c_void, false, true;
    /// `MPI_File_write_ordered_begin`: writes this member's part now.
    MPI_File_write_ordered_begin / PMPI_File_write_ordered_begin => write, "write_ordered", *const c_void, true, true;
}
