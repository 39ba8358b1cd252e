//! `MPI_Isendrecv` and `MPI_Isendrecv_replace` (MPI 4.1 §3.10): a receive and a send
//! started at the call (the receive first, as `MPI_Sendrecv` does) behind one request
//! ([`Op::Pair`]), complete when both are; its status is the receive's, its error the
//! receive's or else the send's. `MPI_Isendrecv_replace` sends from a copy of the
//! buffer made at the call, so the receive may write the buffer at once.

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::count_c::MpiCount;
use crate::error::R;
use crate::p2p::{deferred, irecv, isend, peers, start_send, Mode};
use crate::request::{Op, Outcome, Req};
use crate::state::{call, Guard};
use crate::typemap::send_bytes;
use crate::util::{new_request_out, rank_arg, tag_arg};

/// A receive and a send behind one request.
pub(crate) struct Pair {
    recv: Req,
    send: Req,
}

impl Pair {
    /// Progresses both once; the outcome once both are complete (a wildcard receive's
    /// `MPIX_ERR_PROC_FAILED_PENDING`, which leaves it active, at once).
    pub(crate) fn test(&mut self) -> Option<Outcome> {
        let s = self.send.test();
        let r = self.recv.test()?;
        if r.keep {
            return Some(r);
        }
        let s = s?;
        Some(if r.error == MPI_SUCCESS && s.error != MPI_SUCCESS {
            Outcome {
                error: s.error,
                ..r
            }
        } else {
            r
        })
    }
}

/// Takes request `h` out of the table (it becomes half of a [`Pair`]).
fn take(g: &mut Guard, h: Handle) -> R<Req> {
    g.lib()?.requests.remove(&h).ok_or_else(|| {
        crate::error::Fail::new(MPI_ERR_INTERN, "a request vanished while being paired")
    })
}

/// Registers the pair as one request and writes its handle.
fn submit(g: &mut Guard, comm: Handle, pair: Pair, request: &mut Handle) -> R<()> {
    *request = g
        .lib()?
        .add_request(Req::new(comm, Op::Pair(Box::new(pair))))?;
    Ok(())
}

/// `MPI_Isendrecv`'s body with counts of any size (`MPI_Isendrecv_c` beyond the `int`
/// range calls it too).
///
/// # Safety
/// MPI's contract: `sendbuf` holds `sendcount` items of `sendtype` and `recvbuf` room
/// for `recvcount` items of `recvtype` until the request completes; `request` is valid
/// for a write.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn isendrecv_counted(
    g: &mut Guard,
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
    request: *mut Handle,
) -> R<()> {
    // SAFETY: the caller's contract: `request` is valid for a write.
    let slot = unsafe { new_request_out(request) }?;
    let (mut rh, mut sh) = (MPI_REQUEST_NULL, MPI_REQUEST_NULL);
    irecv(
        g, recvbuf, recvcount, recvtype, source, recvtag, comm, &mut rh,
    )?;
    let recv = take(g, rh)?;
    isend(
        g,
        sendbuf,
        sendcount,
        sendtype,
        dest,
        sendtag,
        comm,
        &mut sh,
        Mode::Standard,
    )?;
    let send = take(g, sh)?;
    submit(g, comm, Pair { recv, send }, slot)
}

/// `MPI_Isendrecv_replace`'s body with a count of any size.
///
/// # Safety
/// MPI's contract: `buf` holds `count` items of `datatype`, the program's alone until
/// the request completes; `request` is valid for a write.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn isendrecv_replace_counted(
    g: &mut Guard,
    buf: *mut c_void,
    count: MpiCount,
    datatype: Handle,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> R<()> {
    // SAFETY: the caller's contract: `request` is valid for a write.
    let slot = unsafe { new_request_out(request) }?;
    let send = send_copy(g, buf, count, datatype, dest, sendtag, comm)?;
    let mut rh = MPI_REQUEST_NULL;
    irecv(g, buf, count, datatype, source, recvtag, comm, &mut rh)?;
    let recv = take(g, rh)?;
    submit(g, comm, Pair { recv, send }, slot)
}

crate::mpi_fn! {
    /// `MPI_Isendrecv`.
    fn MPI_Isendrecv / PMPI_Isendrecv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        source: c_int,
        recvtag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        call(comm, |g| {
            // SAFETY: this function's contract, which is `isendrecv_counted`'s.
            unsafe {
                isendrecv_counted(
                    g, sendbuf, sendcount.into(), sendtype, dest, sendtag, recvbuf,
                    recvcount.into(), recvtype, source, recvtag, comm, request,
                )
            }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Isendrecv_replace`: the send is from a copy taken at the call.
    fn MPI_Isendrecv_replace / PMPI_Isendrecv_replace(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        call(comm, |g| {
            // SAFETY: this function's contract, which is `isendrecv_replace_counted`'s.
            unsafe {
                isendrecv_replace_counted(
                    g, buf, count.into(), datatype, dest, sendtag, source, recvtag, comm, request,
                )
            }
        })
    }
}

/// A standard send of a copy of `count` items of `dt` at `buf` (packed when the type
/// has gaps), which the request owns.
fn send_copy(
    g: &mut Guard,
    buf: *const c_void,
    count: MpiCount,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> R<Req> {
    let lib = g.lib()?;
    let buffer = lib.buffer_of(count, dt)?;
    let e = lib.comm(comm)?;
    let tag = tag_arg(tag)?;
    if dest == MPI_PROC_NULL {
        return Ok(Req::finished(comm, Outcome::empty()));
    }
    let dest = rank_arg(dest, e.size)?;
    let (c, offset) = peers(&e.kind);
    let mut packed = None;
    // SAFETY: MPI's contract: `buf` holds `count` items of `dt` during the call.
    let copy: Box<[u8]> = unsafe { send_bytes(buffer, buf, &mut packed) }?.into();
    // SAFETY: the copy's heap bytes stay where they are while the `Req` keeps it in
    // `packed`, which is dropped after its request (`Req`'s field order).
    let data: &'static [u8] = unsafe { std::slice::from_raw_parts(copy.as_ptr(), copy.len()) };
    // SAFETY: as above; the request lives in a `Req` within those rules.
    let r = unsafe { start_send(c, offset + dest, tag, data, Mode::Standard) };
    let mut req = deferred(
        comm,
        r.map(|r| Req::new(comm, Op::Send(r))).map_err(Into::into),
    )?;
    req.packed = Some(copy);
    Ok(req)
}
