//! Large-count (`_c`) forms of point to point (MPI 4.1, 3.2-3.9): the blocking,
//! non-blocking and persistent sends and receives, `MPI_Sendrecv_c` and its replace,
//! non-blocking and matched-probe kin.
//!
//! `MPI_Send_c`, `Ssend_c`, `Rsend_c`, `Recv_c`, `Isend_c`, `Issend_c`, `Irsend_c`,
//! `Irecv_c`, `Sendrecv_c`, `Sendrecv_replace_c`, `Isendrecv_c`, `Isendrecv_replace_c`,
//! `Mrecv_c` and `Imrecv_c` take any count: one that fits in an `int` goes to the `int`
//! form's `PMPI_` symbol (and its fast path), a larger one to the same general path with
//! the count whole (`p2p::send`, `recv`, `isend`, `irecv`, `sendrecv::sendrecv_counted`,
//! `mprobe::mrecv_counted`, ... take an `MPI_Count`), so more than `INT_MAX` items move,
//! of any datatype. The others (the buffered and persistent calls) narrow their
//! `MPI_Count`s (`count_c`) and call the `int` form's `PMPI_` symbol; a count beyond the
//! `int` range is refused with `MPI_ERR_COUNT` on the communicator's error handler before
//! anything is sent or posted. None of the `int` forms keeps a pointer to a count (they
//! are passed by value) and none of these functions takes a count array, so nothing
//! narrowed needs to outlive the call.

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::count_c::{narrow, refuse, refuse_request, MpiCount};
use crate::p2p::Mode;
use crate::request::MPI_Status;
use crate::state::{call, NO_OBJECT};

/// A blocking send's `_c` form taking any count: the `int` form when the count fits,
/// else `p2p::send` in `$mode` with the count whole.
macro_rules! wide_send_c {
    ($(#[$doc:meta])* $name:ident / $pname:ident => $int:path, $mode:expr) => {
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                buf: *const c_void,
                count: MpiCount,
                datatype: Handle,
                dest: c_int,
                tag: c_int,
                comm: Handle
            ) {
                match c_int::try_from(count) {
                    // SAFETY: this function's contract, which is the `int` form's.
                    Ok(count) => unsafe { $int(buf, count, datatype, dest, tag, comm) },
                    Err(_) => call(comm, |g| {
                        crate::p2p::send(g, buf, count, datatype, dest, tag, comm, $mode)
                    }),
                }
            }
        }
    };
}

/// A non-blocking send's `_c` form taking any count: the `int` form when the count
/// fits, else `p2p::isend` in `$mode` with the count whole.
macro_rules! wide_isend_c {
    ($(#[$doc:meta])* $name:ident / $pname:ident => $int:path, $mode:expr) => {
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                buf: *const c_void,
                count: MpiCount,
                datatype: Handle,
                dest: c_int,
                tag: c_int,
                comm: Handle,
                request: *mut Handle
            ) {
                match c_int::try_from(count) {
                    // SAFETY: this function's contract, which is the `int` form's.
                    Ok(count) => unsafe { $int(buf, count, datatype, dest, tag, comm, request) },
                    Err(_) => call(comm, |g| {
                        crate::p2p::isend(g, buf, count, datatype, dest, tag, comm, request, $mode)
                    }),
                }
            }
        }
    };
}

/// A blocking send's `_c` form over its `int` form (the count narrowed).
macro_rules! send_c {
    ($(#[$doc:meta])* $name:ident / $pname:ident => $int:path) => {
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                buf: *const c_void,
                count: MpiCount,
                datatype: Handle,
                dest: c_int,
                tag: c_int,
                comm: Handle
            ) {
                match narrow(count, "count") {
                    // SAFETY: this function's contract, which is the `int` form's with
                    // the count narrowed.
                    Ok(count) => unsafe { $int(buf, count, datatype, dest, tag, comm) },
                    Err(f) => refuse(comm, f),
                }
            }
        }
    };
}

/// A `_c` form of a call that makes a request from one buffer (non-blocking sends and
/// receives, persistent inits) over its `int` form; `$buf` is the buffer's type.
macro_rules! request_c {
    ($(#[$doc:meta])* $name:ident / $pname:ident => $int:path, $buf:ty) => {
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                buf: $buf,
                count: MpiCount,
                datatype: Handle,
                peer: c_int,
                tag: c_int,
                comm: Handle,
                request: *mut Handle
            ) {
                match narrow(count, "count") {
                    // SAFETY: this function's contract, which is the `int` form's with
                    // the count narrowed (passed by value: the request keeps no pointer
                    // to it).
                    Ok(count) => unsafe { $int(buf, count, datatype, peer, tag, comm, request) },
                    Err(f) => {
                        // SAFETY: MPI's contract: `request` is null or valid for a write.
                        unsafe { refuse_request(comm, request, f) }
                    }
                }
            }
        }
    };
}

wide_send_c!(
    /// `MPI_Send_c`: `MPI_Send` with an `MPI_Count` count (any count).
    MPI_Send_c / PMPI_Send_c => crate::p2p::PMPI_Send, Mode::Standard
);
send_c!(
    /// `MPI_Bsend_c`: `MPI_Bsend` with an `MPI_Count` count.
    MPI_Bsend_c / PMPI_Bsend_c => crate::bsend::PMPI_Bsend
);
wide_send_c!(
    /// `MPI_Ssend_c`: `MPI_Ssend` with an `MPI_Count` count (any count).
    MPI_Ssend_c / PMPI_Ssend_c => crate::p2p::PMPI_Ssend, Mode::Sync
);
wide_send_c!(
    /// `MPI_Rsend_c`: `MPI_Rsend` (a standard send) with an `MPI_Count` count (any
    /// count).
    MPI_Rsend_c / PMPI_Rsend_c => crate::p2p::PMPI_Rsend, Mode::Standard
);

wide_isend_c!(
    /// `MPI_Isend_c`: `MPI_Isend` with an `MPI_Count` count (any count).
    MPI_Isend_c / PMPI_Isend_c => crate::p2p::PMPI_Isend, Mode::Standard
);
request_c!(
    /// `MPI_Ibsend_c`: `MPI_Ibsend` with an `MPI_Count` count.
    MPI_Ibsend_c / PMPI_Ibsend_c => crate::bsend::PMPI_Ibsend, *const c_void
);
wide_isend_c!(
    /// `MPI_Issend_c`: `MPI_Issend` with an `MPI_Count` count (any count).
    MPI_Issend_c / PMPI_Issend_c => crate::p2p::PMPI_Issend, Mode::Sync
);
wide_isend_c!(
    /// `MPI_Irsend_c`: `MPI_Irsend` (a standard send) with an `MPI_Count` count (any
    /// count).
    MPI_Irsend_c / PMPI_Irsend_c => crate::p2p::PMPI_Irsend, Mode::Standard
);

crate::mpi_fn! {
    /// `MPI_Irecv_c`: `MPI_Irecv` with an `MPI_Count` count (any count: one beyond the
    /// `int` range goes to `p2p::irecv` whole).
    fn MPI_Irecv_c / PMPI_Irecv_c(
        buf: *mut c_void,
        count: MpiCount,
        datatype: Handle,
        source: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        match c_int::try_from(count) {
            // SAFETY: this function's contract, `MPI_Irecv`'s.
            Ok(count) => unsafe {
                crate::p2p::PMPI_Irecv(buf, count, datatype, source, tag, comm, request)
            },
            Err(_) => call(comm, |g| {
                crate::p2p::irecv(g, buf, count, datatype, source, tag, comm, request)
            }),
        }
    }
}
request_c!(
    /// `MPI_Send_init_c`: `MPI_Send_init` with an `MPI_Count` count.
    MPI_Send_init_c / PMPI_Send_init_c => crate::persistent::PMPI_Send_init, *const c_void
);
request_c!(
    /// `MPI_Bsend_init_c`: `MPI_Bsend_init` with an `MPI_Count` count.
    MPI_Bsend_init_c / PMPI_Bsend_init_c => crate::bsend::PMPI_Bsend_init, *const c_void
);
request_c!(
    /// `MPI_Ssend_init_c`: `MPI_Ssend_init` with an `MPI_Count` count.
    MPI_Ssend_init_c / PMPI_Ssend_init_c => crate::persistent::PMPI_Ssend_init, *const c_void
);
request_c!(
    /// `MPI_Rsend_init_c`: `MPI_Rsend_init` with an `MPI_Count` count.
    MPI_Rsend_init_c / PMPI_Rsend_init_c => crate::persistent::PMPI_Rsend_init, *const c_void
);
request_c!(
    /// `MPI_Recv_init_c`: `MPI_Recv_init` with an `MPI_Count` count.
    MPI_Recv_init_c / PMPI_Recv_init_c => crate::persistent::PMPI_Recv_init, *mut c_void
);

crate::mpi_fn! {
    /// `MPI_Recv_c`: `MPI_Recv` with an `MPI_Count` count (any count: one beyond the
    /// `int` range goes to `p2p::recv` whole; the status's byte count is 64-bit
    /// already, `MPI_Get_count_c` reads it whole).
    fn MPI_Recv_c / PMPI_Recv_c(
        buf: *mut c_void,
        count: MpiCount,
        datatype: Handle,
        source: c_int,
        tag: c_int,
        comm: Handle,
        status: *mut MPI_Status
    ) {
        match c_int::try_from(count) {
            // SAFETY: this function's contract, `MPI_Recv`'s.
            Ok(count) => unsafe {
                crate::p2p::PMPI_Recv(buf, count, datatype, source, tag, comm, status)
            },
            Err(_) => call(comm, |g| {
                crate::p2p::recv(g, buf, count, datatype, source, tag, comm, status)
            }),
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Sendrecv_c`: `MPI_Sendrecv` with `MPI_Count` counts, of any size (beyond the
    /// `int` range through `sendrecv::sendrecv_counted` whole).
    fn MPI_Sendrecv_c / PMPI_Sendrecv_c(
        sendbuf: *const c_void,
        sendcount: MpiCount,
        sendtype: Handle,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: MpiCount,
        recvtype: Handle,
        source: c_int,
        recvtag: c_int,
        comm: Handle,
        status: *mut MPI_Status
    ) {
        match (c_int::try_from(sendcount), c_int::try_from(recvcount)) {
            // SAFETY: this function's contract, `MPI_Sendrecv`'s.
            (Ok(sc), Ok(rc)) => unsafe {
                crate::sendrecv::PMPI_Sendrecv(
                    sendbuf, sc, sendtype, dest, sendtag, recvbuf, rc, recvtype, source,
                    recvtag, comm, status,
                )
            },
            // SAFETY: this function's contract, `sendrecv_counted`'s.
            _ => call(comm, |g| unsafe {
                crate::sendrecv::sendrecv_counted(
                    g, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                    recvtype, source, recvtag, comm, status,
                )
            }),
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Sendrecv_replace_c`: `MPI_Sendrecv_replace` with an `MPI_Count` count, of
    /// any size.
    fn MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c(
        buf: *mut c_void,
        count: MpiCount,
        datatype: Handle,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: Handle,
        status: *mut MPI_Status
    ) {
        match c_int::try_from(count) {
            // SAFETY: this function's contract, `MPI_Sendrecv_replace`'s.
            Ok(count) => unsafe {
                crate::sendrecv::PMPI_Sendrecv_replace(
                    buf, count, datatype, dest, sendtag, source, recvtag, comm, status,
                )
            },
            // SAFETY: this function's contract, `sendrecv_replace_counted`'s.
            Err(_) => call(comm, |g| unsafe {
                crate::sendrecv::sendrecv_replace_counted(
                    g, buf, count, datatype, dest, sendtag, source, recvtag, comm, status,
                )
            }),
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Isendrecv_c`: `MPI_Isendrecv` with `MPI_Count` counts, of any size.
    fn MPI_Isendrecv_c / PMPI_Isendrecv_c(
        sendbuf: *const c_void,
        sendcount: MpiCount,
        sendtype: Handle,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: MpiCount,
        recvtype: Handle,
        source: c_int,
        recvtag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        match (c_int::try_from(sendcount), c_int::try_from(recvcount)) {
            // SAFETY: this function's contract, `MPI_Isendrecv`'s.
            (Ok(sc), Ok(rc)) => unsafe {
                crate::isendrecv::PMPI_Isendrecv(
                    sendbuf, sc, sendtype, dest, sendtag, recvbuf, rc, recvtype, source,
                    recvtag, comm, request,
                )
            },
            // SAFETY: this function's contract, `isendrecv_counted`'s.
            _ => call(comm, |g| unsafe {
                crate::isendrecv::isendrecv_counted(
                    g, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                    recvtype, source, recvtag, comm, request,
                )
            }),
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Isendrecv_replace_c`: `MPI_Isendrecv_replace` with an `MPI_Count` count, of
    /// any size.
    fn MPI_Isendrecv_replace_c / PMPI_Isendrecv_replace_c(
        buf: *mut c_void,
        count: MpiCount,
        datatype: Handle,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        match c_int::try_from(count) {
            // SAFETY: this function's contract, `MPI_Isendrecv_replace`'s.
            Ok(count) => unsafe {
                crate::isendrecv::PMPI_Isendrecv_replace(
                    buf, count, datatype, dest, sendtag, source, recvtag, comm, request,
                )
            },
            // SAFETY: this function's contract, `isendrecv_replace_counted`'s.
            Err(_) => call(comm, |g| unsafe {
                crate::isendrecv::isendrecv_replace_counted(
                    g, buf, count, datatype, dest, sendtag, source, recvtag, comm, request,
                )
            }),
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Mrecv_c`: `MPI_Mrecv` with an `MPI_Count` count, of any size.
    fn MPI_Mrecv_c / PMPI_Mrecv_c(
        buf: *mut c_void,
        count: MpiCount,
        datatype: Handle,
        message: *mut Handle,
        status: *mut MPI_Status
    ) {
        match c_int::try_from(count) {
            // SAFETY: this function's contract, `MPI_Mrecv`'s.
            Ok(count) => unsafe {
                crate::mprobe::PMPI_Mrecv(buf, count, datatype, message, status)
            },
            // SAFETY: this function's contract, `mrecv_counted`'s.
            Err(_) => call(NO_OBJECT, |g| unsafe {
                crate::mprobe::mrecv_counted(g, buf, count, datatype, message, status)
            }),
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Imrecv_c`: `MPI_Imrecv` with an `MPI_Count` count, of any size.
    fn MPI_Imrecv_c / PMPI_Imrecv_c(
        buf: *mut c_void,
        count: MpiCount,
        datatype: Handle,
        message: *mut Handle,
        request: *mut Handle
    ) {
        match c_int::try_from(count) {
            // SAFETY: this function's contract, `MPI_Imrecv`'s.
            Ok(count) => unsafe {
                crate::mprobe::PMPI_Imrecv(buf, count, datatype, message, request)
            },
            // SAFETY: this function's contract, `imrecv_counted`'s.
            Err(_) => call(NO_OBJECT, |g| unsafe {
                crate::mprobe::imrecv_counted(g, buf, count, datatype, message, request)
            }),
        }
    }
}
