//! `MPI_Sendrecv` and `MPI_Sendrecv_replace`: the receive is posted first, then the
//! send, and both complete before the call returns; either side may be a type with gaps
//! (`typemap`: the send packed, the receive unpacked after).

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::count_c::MpiCount;
use crate::error::{Fail, R};
use crate::p2p::{blocking, extend_send, irecv_req_at, peers_of, recv_source};
use crate::request::{write_status, MPI_Status, Op, Outcome, Req};
use crate::state::{call, Guard};
use crate::typemap::{send_bytes, Buffer, Unpack};
use crate::util::{bytes, rank_arg, recv_tag_arg, tag_arg};

/// `MPI_Sendrecv` of `slen` bytes at `sendbuf` and `rlen` at `recvbuf`: the receive is
/// posted first, then the send; both complete before it returns. The bytes received.
#[allow(clippy::too_many_arguments)]
fn sendrecv(
    g: &mut Guard,
    sendbuf: *const c_void,
    slen: usize,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    rlen: usize,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    status: *mut MPI_Status,
) -> R<usize> {
    let (c, offset, size) = peers_of(g, comm)?;
    let stag = tag_arg(sendtag)?;
    let rtag = recv_tag_arg(recvtag)?;
    let mut rreq = if source == MPI_PROC_NULL {
        Req::finished(comm, Outcome::proc_null())
    } else {
        let src = recv_source(source, size)?.map(|s| offset + s);
        if rlen > 0 && recvbuf.is_null() {
            return Err(Fail::new(MPI_ERR_BUFFER, "a null receive buffer"));
        }
        irecv_req_at(&c, offset, comm, src, rtag, recvbuf.cast(), rlen)?
    };
    let mut sreq = if dest == MPI_PROC_NULL {
        Req::finished(comm, Outcome::empty())
    } else {
        let d = rank_arg(dest, size)?;
        // SAFETY: the caller's: `sendbuf` is valid and unchanged during the call; the
        // request completes or is dropped before it returns.
        let data = unsafe { bytes(sendbuf, slen) }?;
        // SAFETY: as above.
        let r = unsafe { c.isend(offset + d, stag, data) }?;
        Req::new(comm, Op::Send(extend_send(r)))
    };
    let mut spin = crate::util::spin_wait();
    let (so, ro) = loop {
        g.lib()?;
        let s = sreq.test();
        let r = rreq.test();
        if let (Some(s), Some(r)) = (s, r) {
            break (s, r);
        }
        g.relax(&mut spin);
    };
    let ro = blocking(ro);
    // SAFETY: MPI's contract: `status` is null or valid for a write.
    unsafe { write_status(status, &ro, false) };
    for o in [so, ro] {
        if o.error != MPI_SUCCESS {
            return Err(Fail::new(o.error, "MPI_Sendrecv failed"));
        }
    }
    Ok(ro.bytes)
}

/// [`sendrecv`] of `send` (pointer, bytes, destination, tag) with the receive into
/// `buffer` at `recvbuf` (a type with gaps: into a contiguous buffer, unpacked after).
#[allow(clippy::too_many_arguments)]
fn sendrecv_into(
    g: &mut Guard,
    send: (*const c_void, usize, c_int, c_int),
    buffer: Buffer,
    recvbuf: *mut c_void,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    status: *mut MPI_Status,
) -> R<()> {
    let (sptr, slen, dest, sendtag) = send;
    let mut u = if source == MPI_PROC_NULL {
        None
    } else {
        Unpack::of(&buffer, recvbuf)
    };
    let (rptr, rlen) = match (&mut u, buffer) {
        (Some(u), _) => (u.temp.as_mut_ptr().cast(), u.temp.len()),
        (None, Buffer::Contig(len)) => (recvbuf, len),
        (None, Buffer::Packed { .. }) => (recvbuf, 0),
    };
    let got = sendrecv(
        g, sptr, slen, dest, sendtag, rptr, rlen, source, recvtag, comm, status,
    )?;
    if let Some(u) = u {
        // SAFETY: MPI's contract: `recvbuf` holds the items; the receive is over.
        unsafe { u.apply(got) };
    }
    Ok(())
}

/// `MPI_Sendrecv`'s body with counts of any size (`MPI_Sendrecv_c` beyond the `int`
/// range calls it too).
///
/// # Safety
/// MPI's contract: `sendbuf` holds `sendcount` items of `sendtype`, unchanged during the
/// call; `recvbuf` holds room for `recvcount` items of `recvtype`, the program's alone
/// during the call; `status` is null or valid for a write.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sendrecv_counted(
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
    status: *mut MPI_Status,
) -> R<()> {
    let sb = g.lib()?.buffer_of(sendcount, sendtype)?;
    let rb = g.lib()?.buffer_of(recvcount, recvtype)?;
    let mut packed = None;
    let data: &[u8] = if dest == MPI_PROC_NULL {
        &[]
    } else {
        // SAFETY: the caller's contract: `sendbuf` holds `sendcount` items, unchanged
        // during the call.
        unsafe { send_bytes(sb, sendbuf, &mut packed) }?
    };
    let (sptr, slen) = (data.as_ptr().cast(), data.len());
    sendrecv_into(
        g,
        (sptr, slen, dest, sendtag),
        rb,
        recvbuf,
        source,
        recvtag,
        comm,
        status,
    )
}

/// `MPI_Sendrecv_replace`'s body with a count of any size.
///
/// # Safety
/// MPI's contract: `buf` holds `count` items of `datatype`, the program's alone during
/// the call; `status` is null or valid for a write.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sendrecv_replace_counted(
    g: &mut Guard,
    buf: *mut c_void,
    count: MpiCount,
    datatype: Handle,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    status: *mut MPI_Status,
) -> R<()> {
    let b = g.lib()?.buffer_of(count, datatype)?;
    let sent: Box<[u8]> = if dest == MPI_PROC_NULL {
        Box::default()
    } else {
        // SAFETY: the caller's contract: `buf` holds `count` items of `datatype`.
        unsafe { b.copy_of(buf) }?
    };
    let (sptr, slen) = (sent.as_ptr().cast(), sent.len());
    sendrecv_into(
        g,
        (sptr, slen, dest, sendtag),
        b,
        buf,
        source,
        recvtag,
        comm,
        status,
    )
}

crate::mpi_fn! {
    /// `MPI_Sendrecv`: the receive is posted first, then the send; both complete
    /// before it returns.
    fn MPI_Sendrecv / PMPI_Sendrecv(
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
        status: *mut MPI_Status
    ) {
        call(comm, |g| {
            // SAFETY: this function's contract, which is `sendrecv_counted`'s.
            unsafe {
                sendrecv_counted(
                    g, sendbuf, sendcount.into(), sendtype, dest, sendtag, recvbuf,
                    recvcount.into(), recvtype, source, recvtag, comm, status,
                )
            }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Sendrecv_replace`: sends `buf`'s content and receives into `buf`; what is
    /// sent is a copy taken at the call, so the receive may overwrite `buf` at once.
    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: Handle,
        status: *mut MPI_Status
    ) {
        call(comm, |g| {
            // SAFETY: this function's contract, which is `sendrecv_replace_counted`'s.
            unsafe {
                sendrecv_replace_counted(
                    g, buf, count.into(), datatype, dest, sendtag, source, recvtag, comm, status,
                )
            }
        })
    }
}
