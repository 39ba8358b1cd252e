//! MPI 4.1's buffers of a communicator and of a session (§3.6.1):
//! `MPI_Comm_attach_buffer`, `MPI_Session_attach_buffer`, their `detach` and `flush`,
//! `MPI_Buffer_flush`, the non-blocking flushes (`MPI_Buffer_iflush`,
//! `MPI_Comm_iflush_buffer`, `MPI_Session_iflush_buffer`), and the `_c` forms of every
//! attach and detach. Which buffer a buffered send draws on is
//! `bsend::Buffers::pool_for`; a detach or a flush waits until the messages counted
//! against that buffer have left (`bsend::flush`); a non-blocking flush's request
//! completes once the messages counted against it at the call have (`bsend::iflush`).

use std::ffi::c_void;

use crate::bsend::{attach, detach, flush, give_back, iflush, Pool};
use crate::consts::*;
use crate::error::R;
use crate::request::{Op, Req};
use crate::session::{entry, session_call};
use crate::state::{call, Lib, NO_OBJECT};
use crate::util::new_request_out;

/// `MPI_Count` of the header.
type Count = i64;

crate::mpi_fn! {
    /// `MPI_Buffer_attach_c`.
    fn MPI_Buffer_attach_c / PMPI_Buffer_attach_c(buffer: *mut c_void, size: Count) {
        call(NO_OBJECT, |g| attach(g, Pool::Process, buffer, size))
    }
}

crate::mpi_fn! {
    /// `MPI_Buffer_detach_c`.
    fn MPI_Buffer_detach_c / PMPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut Count) {
        call(NO_OBJECT, |g| {
            let a = detach(g, Pool::Process)?;
            // SAFETY: MPI's contract: `buffer_addr` points to a `void *`, `size` to an
            // `MPI_Count`.
            unsafe { give_back(a, buffer_addr, size, Count::MAX) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Buffer_flush`: waits until the process buffer's messages have left.
    fn MPI_Buffer_flush / PMPI_Buffer_flush() {
        call(NO_OBJECT, |g| flush(g, Pool::Process))
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_attach_buffer`: a buffer for buffered sends on `comm` alone.
    fn MPI_Comm_attach_buffer / PMPI_Comm_attach_buffer(comm: Handle, buffer: *mut c_void, size: i32) {
        call(comm, |g| {
            g.lib()?.comm(comm)?;
            attach(g, Pool::Comm(comm), buffer, i64::from(size))
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_attach_buffer_c`.
    fn MPI_Comm_attach_buffer_c / PMPI_Comm_attach_buffer_c(comm: Handle, buffer: *mut c_void, size: Count) {
        call(comm, |g| {
            g.lib()?.comm(comm)?;
            attach(g, Pool::Comm(comm), buffer, size)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_detach_buffer`.
    fn MPI_Comm_detach_buffer / PMPI_Comm_detach_buffer(comm: Handle, buffer_addr: *mut c_void, size: *mut i32) {
        call(comm, |g| {
            g.lib()?.comm(comm)?;
            let a = detach(g, Pool::Comm(comm))?;
            // SAFETY: MPI's contract: `buffer_addr` points to a `void *`, `size` to an int.
            unsafe { give_back(a, buffer_addr, size, i32::MAX) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_detach_buffer_c`.
    fn MPI_Comm_detach_buffer_c / PMPI_Comm_detach_buffer_c(comm: Handle, buffer_addr: *mut c_void, size: *mut Count) {
        call(comm, |g| {
            g.lib()?.comm(comm)?;
            let a = detach(g, Pool::Comm(comm))?;
            // SAFETY: MPI's contract: `buffer_addr` points to a `void *`, `size` to an
            // `MPI_Count`.
            unsafe { give_back(a, buffer_addr, size, Count::MAX) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_flush_buffer`: waits until the messages counted against `comm`'s
    /// buffer have left.
    fn MPI_Comm_flush_buffer / PMPI_Comm_flush_buffer(comm: Handle) {
        call(comm, |g| {
            g.lib()?.comm(comm)?;
            flush(g, Pool::Comm(comm))
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_attach_buffer`: a buffer for buffered sends on the communicators
    /// made from `session`'s groups.
    fn MPI_Session_attach_buffer / PMPI_Session_attach_buffer(session: Handle, buffer: *mut c_void, size: i32) {
        session_call(session, |g| {
            entry(g.lib()?, session)?;
            attach(g, Pool::Session(session), buffer, i64::from(size))
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_attach_buffer_c`.
    fn MPI_Session_attach_buffer_c / PMPI_Session_attach_buffer_c(session: Handle, buffer: *mut c_void, size: Count) {
        session_call(session, |g| {
            entry(g.lib()?, session)?;
            attach(g, Pool::Session(session), buffer, size)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_detach_buffer`.
    fn MPI_Session_detach_buffer / PMPI_Session_detach_buffer(session: Handle, buffer_addr: *mut c_void, size: *mut i32) {
        session_call(session, |g| {
            entry(g.lib()?, session)?;
            let a = detach(g, Pool::Session(session))?;
            // SAFETY: MPI's contract: `buffer_addr` points to a `void *`, `size` to an int.
            unsafe { give_back(a, buffer_addr, size, i32::MAX) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_detach_buffer_c`.
    fn MPI_Session_detach_buffer_c / PMPI_Session_detach_buffer_c(session: Handle, buffer_addr: *mut c_void, size: *mut Count) {
        session_call(session, |g| {
            entry(g.lib()?, session)?;
            let a = detach(g, Pool::Session(session))?;
            // SAFETY: MPI's contract: `buffer_addr` points to a `void *`, `size` to an
            // `MPI_Count`.
            unsafe { give_back(a, buffer_addr, size, Count::MAX) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_flush_buffer`: waits until the messages counted against
    /// `session`'s buffer have left.
    fn MPI_Session_flush_buffer / PMPI_Session_flush_buffer(session: Handle) {
        session_call(session, |g| {
            entry(g.lib()?, session)?;
            flush(g, Pool::Session(session))
        })
    }
}

/// Starts the flush of `pool` as a request (reported on `comm`) written to `request`.
fn start_iflush(lib: &mut Lib, pool: Pool, comm: Handle, request: *mut Handle) -> R<()> {
    // SAFETY: MPI's contract: `request` is valid for a write.
    let slot = unsafe { new_request_out(request) }?;
    let f = iflush(lib, pool);
    *slot = lib.add_request(Req::new(comm, Op::Flush(Box::new(f))))?;
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Buffer_iflush`: a request that completes once the messages counted against
    /// the process's buffer now have left.
    fn MPI_Buffer_iflush / PMPI_Buffer_iflush(request: *mut Handle) {
        call(NO_OBJECT, |g| start_iflush(g.lib()?, Pool::Process, MPI_COMM_SELF, request))
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_iflush_buffer`: as `MPI_Comm_flush_buffer`, as a request.
    fn MPI_Comm_iflush_buffer / PMPI_Comm_iflush_buffer(comm: Handle, request: *mut Handle) {
        call(comm, |g| {
            let lib = g.lib()?;
            lib.comm(comm)?;
            start_iflush(lib, Pool::Comm(comm), comm, request)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_iflush_buffer`: as `MPI_Session_flush_buffer`, as a request.
    fn MPI_Session_iflush_buffer / PMPI_Session_iflush_buffer(session: Handle, request: *mut Handle) {
        session_call(session, |g| {
            let lib = g.lib()?;
            entry(lib, session)?;
            start_iflush(lib, Pool::Session(session), MPI_COMM_SELF, request)
        })
    }
}
