//! Shared file pointers (MPI 4.1 §14.4.4): `MPI_File_read_shared`, `write_shared`,
//! `read_ordered`, `write_ordered`, `seek_shared`, `get_position_shared`.
//!
//! The pointer lives in a side file beside the file, `.NAME.shfp` in its directory: 8
//! bytes, the position in etypes of the view (absent or short: 0). Every use takes an
//! exclusive `flock` on it, reads the pointer, writes the moved one and lets go, so
//! every process that reaches the file through a file system with working `flock`
//! sees one pointer. Rank 0 resets it when the file is opened (to the end under
//! `MPI_MODE_APPEND`) and when a view is set, and removes it when the file is closed.
//! The ordered calls take their place with one update at rank 0: an allreduce gives
//! every member the counts of the others, a second one rank 0's old pointer.

use std::ffi::{c_int, c_void};
use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sf::comm::{ReduceOp, ALLREDUCE_MAX};

use crate::consts::*;
use crate::error::{Fail, R};
use crate::file::{agree, elsewhere, entry, file_call, file_size, io_fail};
use crate::file_io::{read, write, At};
use crate::file_view::seek_target;
use crate::request::MPI_Status;
use crate::state::Guard;
use crate::status::write_status;

/// The side file of the file at `path`.
fn side_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.shfp"))
}

/// Sets the shared pointer of the file at `path` to `value` (rank 0, while no member
/// uses it): 0 removes the side file.
pub(crate) fn reset(path: &Path, value: u64) -> R<()> {
    let side = side_path(path);
    if value == 0 {
        return match std::fs::remove_file(&side) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                Err(io_fail(&e, "remove the shared file pointer's file"))
            }
            _ => Ok(()),
        };
    }
    std::fs::write(&side, value.to_le_bytes())
        .map_err(|e| io_fail(&e, "write the shared file pointer's file"))
}

/// Moves the shared pointer of the file at `path` to `f(old)` under the lock; `old`.
fn update(path: &Path, f: impl FnOnce(u64) -> R<u64>) -> R<u64> {
    let side = side_path(path);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .open(&side)
        .map_err(|e| io_fail(&e, "open the shared file pointer's file"))?;
    loop {
        // SAFETY: the descriptor is `file`'s, open for the whole call; the lock goes
        // when `file` is closed at the end of this function.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != ErrorKind::Interrupted {
            return Err(io_fail(&e, "lock the shared file pointer"));
        }
    }
    let mut b = [0u8; 8];
    let mut got = 0;
    while got < b.len() {
        match file.read_at(&mut b[got..], got as u64) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(io_fail(&e, "read the shared file pointer")),
        }
    }
    let old = if got == b.len() {
        u64::from_le_bytes(b)
    } else {
        0
    };
    let new = f(old)?;
    if new != old || got != b.len() {
        file.write_all_at(&new.to_le_bytes(), 0)
            .map_err(|e| io_fail(&e, "write the shared file pointer"))?;
    }
    Ok(old)
}

/// The file's path and the etypes of `count` items of `datatype`, the access checked
/// (`write`: a write) before the pointer moves.
fn access_of(
    g: &mut Guard,
    fh: Handle,
    count: c_int,
    datatype: Handle,
    write: bool,
) -> R<(PathBuf, u64)> {
    let lib = g.lib()?;
    let len = lib.buffer_of(count, datatype)?.len();
    let e = entry(lib, fh)?;
    if write {
        e.writable()?;
    } else {
        e.readable()?;
    }
    let es = e.view.es;
    if len % es != 0 {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            format!("{len} bytes are not a whole number of the view's {es}-byte etypes"),
        ));
    }
    Ok((e.path.clone(), (len / es) as u64))
}

/// Where this member's part of an ordered access starts: the counts of all members
/// gathered, rank 0 moving the pointer past them all, its old value spread.
fn ordered_start(g: &mut Guard, fh: Handle, path: &Path, mine: u64) -> R<u64> {
    let comm = entry(g.lib()?, fh)?.comm.clone();
    g.unlocked(|| -> R<u64> {
        let (me, n) = (comm.rank() as usize, comm.size() as usize);
        if n > ALLREDUCE_MAX {
            return Err(Fail::new(
                MPI_ERR_UNSUPPORTED_OPERATION,
                format!("ordered file access over more than {ALLREDUCE_MAX} processes"),
            ));
        }
        let mut counts = vec![0u64; n];
        counts[me] = mine;
        comm.allreduce(&mut counts, ReduceOp::Sum)?;
        let before: u64 = counts[..me].iter().sum();
        let total: u64 = counts.iter().sum();
        let mut v = [0u64, 0];
        if me == 0 {
            match update(path, |p| Ok(p + total)) {
                Ok(p) => v[0] = p,
                Err(f) => v[1] = f.class as u64,
            }
        }
        comm.allreduce(&mut v, ReduceOp::Sum)?;
        if v[1] != 0 {
            return Err(elsewhere(v[1] as c_int, "the shared file pointer's update"));
        }
        Ok(v[0] + before)
    })
}

/// Where an access of `count` items of `datatype` at the shared pointer starts (view
/// position), the pointer moved past it: by this member alone, or (`ordered`, a
/// collective) past every member's part, this one's in rank order. `write`: the access
/// is a write (checked before the pointer moves).
pub(crate) fn shared_start(
    g: &mut Guard,
    fh: Handle,
    count: c_int,
    datatype: Handle,
    write: bool,
    ordered: bool,
) -> R<u64> {
    let (path, n) = access_of(g, fh, count, datatype, write)?;
    if ordered {
        ordered_start(g, fh, &path, n)
    } else {
        update(&path, |p| Ok(p + n))
    }
}

/// Defines the shared-pointer reads and writes; `$ordered`: collective, in rank order.
macro_rules! shared_calls {
    ($($(#[$doc:meta])* $name:ident / $pname:ident => $f:ident, $buf:ty, $write:expr, $ordered:expr;)*) => {$(
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
                    let start = shared_start(g, fh, count, datatype, $write, $ordered)?;
                    // SAFETY: MPI's contract for the buffer and the status.
                    unsafe {
                        let got = $f(g, fh, At::Shared(start), buf, count, datatype)?;
                        write_status(status, &crate::file_io::done(got), false);
                    }
                    Ok(())
                })
            }
        }
    )*};
}

shared_calls! {
    /// `MPI_File_read_shared`: at the shared pointer, which moves past the request.
    MPI_File_read_shared / PMPI_File_read_shared => read, *mut c_void, false, false;
    /// `MPI_File_write_shared`: at the shared pointer, which moves past the data.
    MPI_File_write_shared / PMPI_File_write_shared => write, *const c_void, true, false;
    /// `MPI_File_read_ordered`: collective; the members' parts in rank order.
    MPI_File_read_ordered / PMPI_File_read_ordered => read, *mut c_void, false, true;
    /// `MPI_File_write_ordered`: collective; the members' parts in rank order.
    MPI_File_write_ordered / PMPI_File_write_ordered => write, *const c_void, true, true;
}

/// Defines the non-blocking shared-pointer reads and writes.
macro_rules! ishared_calls {
    ($($(#[$doc:meta])* $name:ident / $pname:ident => $f:ident, $buf:ty, $write:expr;)*) => {$(
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
                    let slot = unsafe { crate::util::new_request_out(request) }?;
                    let start = shared_start(g, fh, count, datatype, $write, false)?;
                    // SAFETY: MPI's contract for the buffer.
                    let got = unsafe { $f(g, fh, At::Shared(start), buf, count, datatype) }?;
                    crate::file_io::complete(g, slot, got)
                })
            }
        }
    )*};
}

ishared_calls! {
    /// `MPI_File_iread_shared`: read at the call, at the shared pointer; the request
    /// is complete.
    MPI_File_iread_shared / PMPI_File_iread_shared => read, *mut c_void, false;
    /// `MPI_File_iwrite_shared`: written at the call, at the shared pointer; the
    /// request is complete.
    MPI_File_iwrite_shared / PMPI_File_iwrite_shared => write, *const c_void, true;
}

crate::mpi_fn! {
    /// `MPI_File_seek_shared`: collective (every member passes the same arguments);
    /// once all are in, rank 0 moves the pointer; every member gets its outcome.
    fn MPI_File_seek_shared / PMPI_File_seek_shared(fh: Handle, offset: i64, whence: c_int) {
        file_call(fh, |g| {
            let e = entry(g.lib()?, fh)?;
            let (path, comm) = (e.path.clone(), e.comm.clone());
            let end = e.view.eof_pos(file_size(e)?)?;
            g.unlocked(|| -> R<()> {
                // Every member is in the call before the pointer moves (one may have
                // read it just before).
                comm.barrier()?;
                let mut class = 0;
                if comm.rank() == 0 {
                    let moved = update(&path, |p| seek_target(whence, offset, p, || Ok(end)));
                    class = moved.err().map_or(0, |f| f.class);
                }
                match agree(&comm, class)? {
                    0 => Ok(()),
                    c => Err(Fail::new(c, "MPI_File_seek_shared failed at rank 0")),
                }
            })
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_get_position_shared`: the shared pointer (etypes of the view).
    fn MPI_File_get_position_shared / PMPI_File_get_position_shared(fh: Handle, offset: *mut i64) {
        file_call(fh, |g| {
            let path = entry(g.lib()?, fh)?.path.clone();
            let p = update(&path, Ok)?;
            // SAFETY: MPI's contract: `offset` is valid for a write.
            *unsafe { crate::util::out(offset) }? = p as i64;
            Ok(())
        })
    }
}
