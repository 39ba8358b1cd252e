//! The non-blocking data-moving collectives (`MPI_Ibcast`, `MPI_Igather`,
//! `MPI_Iscatter`, `MPI_Iallgather`, `MPI_Ialltoall`) with a type with gaps on an
//! intra- or inter-communicator, as `coll_packed` does for the blocking ones: each significant
//! side whose type has gaps is packed at the call into bytes the request owns, the
//! collective runs on those as `MPI_BYTE`, and the bytes received are unpacked into
//! the program's buffer when a completion call completes the request (`Req::finish`
//! with `Req::unpack`), or at once when it completed at the call. Each entry point
//! asks here first, before it takes the library's lock.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::coll_packed::{maybe_gapped, recv_side, sides, Kind, RecvSide};
use crate::consts::*;
use crate::state::call;
use crate::typemap::Unpack;

/// `MPI_BYTE`.
const BYTE: Handle = 0x247;

/// `MPI_Ibcast` of a type with gaps; `None`: the entry point's own path.
pub(crate) fn ibcast(
    buffer: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
    request: *mut Handle,
) -> Option<c_int> {
    if !maybe_gapped(dt) {
        return None;
    }
    let (_, me, _, inter) = crate::coll_packed::look_gapped(dt, comm)?;
    let (is_root, receives) = crate::coll_packed::roles(root, me, inter);
    // The root's data packed in; elsewhere room for it.
    let recv = recv_side(buffer, count, dt, 1, is_root, comm)??;
    // SAFETY: the packed bytes live in the request until it completes (`attach`).
    let code = unsafe {
        crate::nbc::PMPI_Ibcast(
            recv.temp.as_ptr().cast_mut().cast(),
            recv.per,
            BYTE,
            root,
            comm,
            request,
        )
    };
    // Unpacked where data arrives; elsewhere (the root, an inter-communicator's root
    // group) the request just owns the bytes.
    let (keep, unpack) = if receives {
        (None, Some(unpack_of(recv, buffer)))
    } else {
        (Some(recv.temp), None)
    };
    Some(attach(code, comm, request, keep, unpack))
}

/// `MPI_Igather`, `MPI_Iscatter`, `MPI_Iallgather` or `MPI_Ialltoall` with a type
/// with gaps on either side; `None`: the entry point's own path.
#[allow(clippy::too_many_arguments)]
pub(crate) fn started(
    kind: Kind,
    sendbuf: *const c_void,
    scount: c_int,
    stype: Handle,
    recvbuf: *mut c_void,
    rcount: c_int,
    rtype: Handle,
    root: c_int,
    comm: Handle,
    request: *mut Handle,
) -> Option<c_int> {
    let (send, recv) = sides(
        kind, sendbuf, scount, stype, recvbuf, rcount, rtype, root, comm,
    )?;
    let (rptr, rc, rdt) = match &recv {
        Some(r) => (r.temp.as_ptr().cast_mut().cast(), r.per, BYTE),
        None => (recvbuf, rcount, rtype),
    };
    let (sp, sc, st) = (send.ptr, send.count, send.dt);
    // SAFETY: the program's buffers (MPI's contract) or the packed copies, which live
    // in the request until it completes (`attach`).
    let code = unsafe {
        match kind {
            Kind::Gather => {
                crate::nbc::PMPI_Igather(sp, sc, st, rptr, rc, rdt, root, comm, request)
            }
            Kind::Scatter => {
                crate::nbc::PMPI_Iscatter(sp, sc, st, rptr, rc, rdt, root, comm, request)
            }
            Kind::Allgather => {
                crate::nbc::PMPI_Iallgather(sp, sc, st, rptr, rc, rdt, comm, request)
            }
            Kind::Alltoall => crate::nbc::PMPI_Ialltoall(sp, sc, st, rptr, rc, rdt, comm, request),
        }
    };
    Some(attach(
        code,
        comm,
        request,
        send.keep,
        recv.map(|r| unpack_of(r, recvbuf)),
    ))
}

/// The unpacking of receive side `r` into the program's buffer `to`.
fn unpack_of(r: RecvSide, to: *mut c_void) -> Unpack {
    Unpack {
        layout: Arc::clone(&r.gap.layout),
        base: to.cast(),
        count: r.items,
        temp: r.temp,
    }
}

/// Gives the started request at `*request` the packed send bytes to own and the
/// packed receive to unpack when it completes (at once when it already has).
/// `code`: the start's. Also the non-blocking reductions' (`reduce_packed`) and `v`
/// forms' (`nbc_packed_v`).
pub(crate) fn attach(
    code: c_int,
    comm: Handle,
    request: *mut Handle,
    send: Option<Box<[u8]>>,
    unpack: Option<Unpack>,
) -> c_int {
    if code != MPI_SUCCESS {
        return code;
    }
    // SAFETY: MPI's contract: `request` is valid for reads (the start just wrote it).
    let h = unsafe { *request };
    call(comm, |g| {
        let Some(r) = g.lib()?.requests.get_mut(&h) else {
            return Ok(());
        };
        match (&r.done, unpack) {
            // Complete at the call (one member, `MPI_PROC_NULL`...): unpacked now.
            // SAFETY: MPI's contract for the receive buffer; nothing writes `temp`.
            (Some(o), Some(u)) if o.error == MPI_SUCCESS => unsafe { u.apply(usize::MAX) },
            (_, u) => r.unpack = u.map(Box::new),
        }
        r.packed = send;
        Ok(())
    })
}
