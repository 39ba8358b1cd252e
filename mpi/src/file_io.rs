//! The data access calls of files (MPI 4.1 §14.4) with explicit offsets and individual
//! file pointers: `MPI_File_read_at`, `write_at`, `read`, `write`, their collective
//! `_all` forms and their non-blocking `i` forms.
//!
//! The program's buffer is packed (a type with gaps, as `typemap` packs for
//! point-to-point) into the view's stream, whose byte ranges in the file (`View::runs`)
//! are written with `pwrite`; a read `pread`s the ranges into a contiguous buffer and
//! unpacks what it got. A read that meets the end of the file stops there: its status
//! counts the bytes read (`MPI_Get_count`). The collective forms do the independent
//! access (they are called by every member, as MPI requires, but wait for none); the
//! non-blocking forms do the access at the call and return a request already complete
//! with its status.

use std::ffi::{c_int, c_void};
use std::os::unix::fs::FileExt;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::file::{entry, file_call, io_fail};
use crate::request::{MPI_Status, Outcome, Req};
use crate::state::{Guard, NO_OBJECT};
use crate::status::write_status;
use crate::typemap::{unpack, Buffer};
use crate::util::{bytes_mut, new_request_out};

/// Where an access starts.
#[derive(Clone, Copy)]
pub(crate) enum At {
    /// An explicit offset (etypes of the view).
    Offset(i64),
    /// The individual file pointer, which the access moves on.
    Pointer,
    /// A place the shared file pointer gave (`file_shared`), which moved it already.
    Shared(u64),
}

/// The view position an access starts at.
fn start_of(pos: u64, at: At) -> R<u64> {
    match at {
        At::Pointer => Ok(pos),
        At::Shared(p) => Ok(p),
        At::Offset(o) => {
            u64::try_from(o).map_err(|_| Fail::new(MPI_ERR_ARG, format!("offset {o}: negative")))
        }
    }
}

/// The bytes of `buffer`, checked to be whole etypes of size `es`.
fn whole_etypes(buffer: &Buffer, es: usize) -> R<usize> {
    let len = buffer.len();
    if len % es != 0 {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            format!("{len} bytes are not a whole number of the view's {es}-byte etypes"),
        ));
    }
    Ok(len)
}

/// Reads `count` items of `datatype` into `buf`; the bytes read.
///
/// # Safety
/// MPI's contract: `buf` holds `count` items of `datatype`, writable.
pub(crate) unsafe fn read(
    g: &mut Guard,
    fh: Handle,
    at: At,
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
) -> R<usize> {
    let lib = g.lib()?;
    let buffer = lib.buffer_of(count, datatype)?;
    let e = entry(lib, fh)?;
    e.readable()?;
    if !matches!(at, At::Shared(_)) {
        e.not_sequential()?;
    }
    let es = e.view.es;
    let len = whole_etypes(&buffer, es)?;
    let start = start_of(e.pos, at)?;
    let p = start
        .checked_mul(es as u64)
        .ok_or_else(|| Fail::new(MPI_ERR_ARG, "offset overflows"))?;
    let runs = e.view.runs(p, len)?;
    let _lock = e
        .atomic
        .then(|| AccessLock::take(&e.file, false))
        .transpose()?;
    let mut temp = vec![0u8; len];
    let mut got = 0;
    'runs: for (off, n) in runs {
        let mut done = 0;
        while done < n {
            match e
                .file
                .read_at(&mut temp[got..got + n - done], off + done as u64)
            {
                Ok(0) => break 'runs,
                Ok(k) => {
                    done += k;
                    got += k;
                }
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(err) => return Err(io_fail(&err, "pread")),
            }
        }
    }
    if let At::Pointer = at {
        e.pos = start + (got / es) as u64;
    }
    match buffer {
        // SAFETY: the caller's contract; `got <= len`, the buffer's bytes.
        Buffer::Contig(_) => unsafe { bytes_mut(buf, got) }?.copy_from_slice(&temp[..got]),
        // SAFETY: as above: the pieces of `count` items are writable.
        Buffer::Packed { layout, count, .. } => unsafe {
            unpack(&layout, &temp[..got], buf.cast(), count)
        },
    }
    Ok(got)
}

/// Writes `count` items of `datatype` from `buf`; the bytes written.
///
/// # Safety
/// MPI's contract: `buf` holds `count` items of `datatype`, readable.
pub(crate) unsafe fn write(
    g: &mut Guard,
    fh: Handle,
    at: At,
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
) -> R<usize> {
    let lib = g.lib()?;
    let buffer = lib.buffer_of(count, datatype)?;
    let e = entry(lib, fh)?;
    e.writable()?;
    if !matches!(at, At::Shared(_)) {
        e.not_sequential()?;
    }
    let es = e.view.es;
    let len = whole_etypes(&buffer, es)?;
    let start = start_of(e.pos, at)?;
    let p = start
        .checked_mul(es as u64)
        .ok_or_else(|| Fail::new(MPI_ERR_ARG, "offset overflows"))?;
    let runs = e.view.runs(p, len)?;
    // SAFETY: the caller's contract.
    let data = unsafe { buffer.copy_of(buf) }?;
    let _lock = e
        .atomic
        .then(|| AccessLock::take(&e.file, true))
        .transpose()?;
    let mut from = 0;
    for (off, n) in runs {
        e.file
            .write_all_at(&data[from..from + n], off)
            .map_err(|err| io_fail(&err, "pwrite"))?;
        from += n;
    }
    if let At::Pointer = at {
        e.pos = start + (len / es) as u64;
    }
    Ok(len)
}

/// A lock on the whole file for one access in atomic mode (`flock`: shared for a
/// read, exclusive for a write), so that the access's `pread`s or `pwrite`s, one per
/// run of the view, see no concurrent write half done. Released when dropped.
struct AccessLock<'a>(&'a std::fs::File);

impl<'a> AccessLock<'a> {
    fn take(file: &'a std::fs::File, exclusive: bool) -> R<Self> {
        use std::os::fd::AsRawFd;
        let op = if exclusive {
            libc::LOCK_EX
        } else {
            libc::LOCK_SH
        };
        loop {
            // SAFETY: `flock` on a descriptor this process owns; no memory is passed.
            if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
                return Ok(AccessLock(file));
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(io_fail(&err, "flock"));
            }
        }
    }
}

impl Drop for AccessLock<'_> {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as in `take`.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// The status of an access of `bytes` bytes.
pub(crate) fn done(bytes: usize) -> Outcome {
    Outcome::ok(MPI_ANY_SOURCE, MPI_ANY_TAG, bytes)
}

/// A request complete at once with the status of an access of `bytes`.
pub(crate) fn complete(g: &mut Guard, slot: &mut Handle, bytes: usize) -> R<()> {
    *slot = g
        .lib()?
        .add_request(Req::finished(NO_OBJECT, done(bytes)))?;
    Ok(())
}

/// Defines the blocking reads and writes at an explicit offset.
macro_rules! at_calls {
    ($($(#[$doc:meta])* $name:ident / $pname:ident => $f:ident, $buf:ty;)*) => {$(
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                fh: Handle,
                offset: i64,
                buf: $buf,
                count: c_int,
                datatype: Handle,
                status: *mut MPI_Status
            ) {
                file_call(fh, |g| {
                    // SAFETY: MPI's contract for the buffer and the status.
                    unsafe {
                        let n = $f(g, fh, At::Offset(offset), buf, count, datatype)?;
                        write_status(status, &done(n), false);
                    }
                    Ok(())
                })
            }
        }
    )*};
}

at_calls! {
    /// `MPI_File_read_at`: at view position `offset`; the status counts the bytes read.
    MPI_File_read_at / PMPI_File_read_at => read, *mut c_void;
    /// `MPI_File_read_at_all`: collective in MPI; the independent read.
    MPI_File_read_at_all / PMPI_File_read_at_all => read, *mut c_void;
    /// `MPI_File_write_at`: at view position `offset`.
    MPI_File_write_at / PMPI_File_write_at => write, *const c_void;
    /// `MPI_File_write_at_all`: collective in MPI; the independent write.
    MPI_File_write_at_all / PMPI_File_write_at_all => write, *const c_void;
}

/// Defines the blocking reads and writes at the individual file pointer.
macro_rules! pointer_calls {
    ($($(#[$doc:meta])* $name:ident / $pname:ident => $f:ident, $buf:ty;)*) => {$(
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                fh: Handle,
                buf: $buf,
                count: c_int,
                datatype: Handle,
                status: *mut MPI_Status
            ) {
                file_call(fh, |g| {
                    // SAFETY: MPI's contract for the buffer and the status.
                    unsafe {
                        let n = $f(g, fh, At::Pointer, buf, count, datatype)?;
                        write_status(status, &done(n), false);
                    }
                    Ok(())
                })
            }
        }
    )*};
}

pointer_calls! {
    /// `MPI_File_read`: at the individual pointer, which moves past what was read.
    MPI_File_read / PMPI_File_read => read, *mut c_void;
    /// `MPI_File_read_all`: collective in MPI; the independent read.
    MPI_File_read_all / PMPI_File_read_all => read, *mut c_void;
    /// `MPI_File_write`: at the individual pointer, which moves past what was written.
    MPI_File_write / PMPI_File_write => write, *const c_void;
    /// `MPI_File_write_all`: collective in MPI; the independent write.
    MPI_File_write_all / PMPI_File_write_all => write, *const c_void;
}

/// Defines the non-blocking reads and writes at an explicit offset.
macro_rules! iat_calls {
    ($($(#[$doc:meta])* $name:ident / $pname:ident => $f:ident, $buf:ty;)*) => {$(
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                fh: Handle,
                offset: i64,
                buf: $buf,
                count: c_int,
                datatype: Handle,
                request: *mut Handle
            ) {
                file_call(fh, |g| {
                    // SAFETY: MPI's contract: `request` is valid for a write.
                    let slot = unsafe { new_request_out(request) }?;
                    // SAFETY: MPI's contract for the buffer.
                    let n = unsafe { $f(g, fh, At::Offset(offset), buf, count, datatype) }?;
                    complete(g, slot, n)
                })
            }
        }
    )*};
}

iat_calls! {
    /// `MPI_File_iread_at`: read at the call; the request is complete.
    MPI_File_iread_at / PMPI_File_iread_at => read, *mut c_void;
    /// `MPI_File_iread_at_all`: as `MPI_File_iread_at`.
    MPI_File_iread_at_all / PMPI_File_iread_at_all => read, *mut c_void;
    /// `MPI_File_iwrite_at`: written at the call; the request is complete.
    MPI_File_iwrite_at / PMPI_File_iwrite_at => write, *const c_void;
    /// `MPI_File_iwrite_at_all`: as `MPI_File_iwrite_at`.
    MPI_File_iwrite_at_all / PMPI_File_iwrite_at_all => write, *const c_void;
}

/// Defines the non-blocking reads and writes at the individual file pointer.
macro_rules! ipointer_calls {
    ($($(#[$doc:meta])* $name:ident / $pname:ident => $f:ident, $buf:ty;)*) => {$(
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                fh: Handle,
                buf: $buf,
                count: c_int,
                datatype: Handle,
                request: *mut Handle
            ) {
                file_call(fh, |g| {
                    // SAFETY: MPI's contract: `request` is valid for a write.
                    let slot = unsafe { new_request_out(request) }?;
                    // SAFETY: MPI's contract for the buffer.
                    let n = unsafe { $f(g, fh, At::Pointer, buf, count, datatype) }?;
                    complete(g, slot, n)
                })
            }
        }
    )*};
}

ipointer_calls! {
    /// `MPI_File_iread`: read at the call; the request is complete.
    MPI_File_iread / PMPI_File_iread => read, *mut c_void;
    /// `MPI_File_iread_all`: as `MPI_File_iread`.
    MPI_File_iread_all / PMPI_File_iread_all => read, *mut c_void;
    /// `MPI_File_iwrite`: written at the call; the request is complete.
    MPI_File_iwrite / PMPI_File_iwrite => write, *const c_void;
    /// `MPI_File_iwrite_all`: as `MPI_File_iwrite`.
    MPI_File_iwrite_all / PMPI_File_iwrite_all => write, *const c_void;
}
