//! The large-count (`_c`) forms of the neighborhood collectives: `MPI_Neighbor_*_c`,
//! `MPI_Ineighbor_*_c` and `MPI_Neighbor_*_init_c` for `allgather`, `allgatherv`,
//! `alltoall`, `alltoallv` and `alltoallw`.
//!
//! The arrays have one entry per neighbor of this rank in the communicator's topology:
//! the receive side's per in-neighbor, the send side's per out-neighbor
//! (`neighbor::degrees`). On a communicator without a topology (or an invalid one)
//! no array is read: they reach the `int` form as null and it reports the error.
//! `MPI_Neighbor_alltoallw` already takes `MPI_Aint` byte displacements, so the `_c`
//! form narrows only its counts. The non-blocking `int` forms read their arrays
//! during the call (`neighbor::run` turns them into byte blocks at once); the
//! persistent forms own their narrowed arrays in their start closure, as
//! `coll_persistent_c` explains.

use std::ffi::{c_int, c_void};

use crate::coll_c::narrowed_scalars;
use crate::coll_persistent_c::init_owning;
use crate::collv_c::{counts, VSide};
use crate::consts::*;
use crate::count_c::{MpiAint, MpiCount, Narrowed};

narrowed_scalars! {
    /// `MPI_Neighbor_allgather_c`.
    MPI_Neighbor_allgather_c / PMPI_Neighbor_allgather_c
        => crate::neighbor::PMPI_Neighbor_allgather,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Ineighbor_allgather_c`.
    MPI_Ineighbor_allgather_c / PMPI_Ineighbor_allgather_c
        => crate::neighbor::PMPI_Ineighbor_allgather,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle, request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Neighbor_allgather_init_c`.
    MPI_Neighbor_allgather_init_c / PMPI_Neighbor_allgather_init_c
        => crate::coll_persistent::PMPI_Neighbor_allgather_init,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle, info: Handle, request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Neighbor_alltoall_c`.
    MPI_Neighbor_alltoall_c / PMPI_Neighbor_alltoall_c
        => crate::neighbor::PMPI_Neighbor_alltoall,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Ineighbor_alltoall_c`.
    MPI_Ineighbor_alltoall_c / PMPI_Ineighbor_alltoall_c
        => crate::neighbor::PMPI_Ineighbor_alltoall,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle, request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Neighbor_alltoall_init_c`.
    MPI_Neighbor_alltoall_init_c / PMPI_Neighbor_alltoall_init_c
        => crate::coll_persistent::PMPI_Neighbor_alltoall_init,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle, info: Handle, request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;
}

/// This rank's in- and out-degrees in `comm`'s topology, `None` without one.
fn degrees(comm: Handle) -> Option<(usize, usize)> {
    crate::neighbor::degrees(comm)
}

/// `MPI_Neighbor_allgatherv_c`'s arguments narrowed: the send count and the receive
/// arrays (one entry per in-neighbor).
#[derive(Debug)]
struct AllgathervArgs {
    sendcount: c_int,
    recv: VSide,
}

/// Narrows `MPI_Neighbor_allgatherv_c`'s arguments.
///
/// # Safety
/// With a topology, `recvcounts` and `displs` hold one entry per in-neighbor.
unsafe fn allgatherv_args(
    sendcount: MpiCount,
    recvcounts: *const MpiCount,
    displs: *const MpiAint,
    comm: Handle,
) -> Result<AllgathervArgs, c_int> {
    let sendcount = crate::coll_c::count(sendcount, "sendcount", comm)?;
    let deg = degrees(comm);
    let indeg = deg.map_or(0, |d| d.0);
    // SAFETY: the caller's contract.
    let recv = unsafe {
        VSide::new(
            deg.is_some(),
            (recvcounts, displs),
            indeg,
            ("recvcounts", "displs"),
            comm,
        )
    }?;
    Ok(AllgathervArgs { sendcount, recv })
}

/// Narrows the two sides of `MPI_Neighbor_alltoallv_c`: the send side's per
/// out-neighbor, the receive side's per in-neighbor.
///
/// # Safety
/// With a topology, the arrays hold one entry per neighbor of their side.
unsafe fn alltoallv_args(
    send: (*const MpiCount, *const MpiAint),
    recv: (*const MpiCount, *const MpiAint),
    comm: Handle,
) -> Result<(VSide, VSide), c_int> {
    let deg = degrees(comm);
    let (indeg, outdeg) = deg.unwrap_or((0, 0));
    let known = deg.is_some();
    // SAFETY: the caller's contract.
    unsafe {
        Ok((
            VSide::new(known, send, outdeg, ("sendcounts", "sdispls"), comm)?,
            VSide::new(known, recv, indeg, ("recvcounts", "rdispls"), comm)?,
        ))
    }
}

/// Narrows the counts of `MPI_Neighbor_alltoallw_c` (its displacements are already
/// `MPI_Aint`): the send counts per out-neighbor, the receive counts per in-neighbor.
///
/// # Safety
/// With a topology, the arrays hold one count per neighbor of their side.
unsafe fn alltoallw_counts(
    sendcounts: *const MpiCount,
    recvcounts: *const MpiCount,
    comm: Handle,
) -> Result<(Narrowed, Narrowed), c_int> {
    let (s, r, (indeg, outdeg)) = match degrees(comm) {
        Some(d) => (sendcounts, recvcounts, d),
        None => (std::ptr::null(), std::ptr::null(), (0, 0)),
    };
    // SAFETY: the caller's contract.
    unsafe {
        Ok((
            counts(s, outdeg, "sendcounts", comm)?,
            counts(r, indeg, "recvcounts", comm)?,
        ))
    }
}

crate::mpi_fn! {
    /// `MPI_Neighbor_allgatherv_c`.
    fn MPI_Neighbor_allgatherv_c / PMPI_Neighbor_allgatherv_c(
        sendbuf: *const c_void,
        sendcount: MpiCount,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        displs: *const MpiAint,
        recvtype: Handle,
        comm: Handle
    ) {
        // SAFETY: MPI's contract: one entry per in-neighbor.
        let a = match unsafe { allgatherv_args(sendcount, recvcounts, displs, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: the program's arguments, narrowed; the vectors outlive the call.
        unsafe {
            crate::neighbor::PMPI_Neighbor_allgatherv(
                sendbuf, a.sendcount, sendtype, recvbuf, a.recv.c(), a.recv.d(), recvtype, comm,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Ineighbor_allgatherv_c`.
    fn MPI_Ineighbor_allgatherv_c / PMPI_Ineighbor_allgatherv_c(
        sendbuf: *const c_void,
        sendcount: MpiCount,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        displs: *const MpiAint,
        recvtype: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // SAFETY: MPI's contract: one entry per in-neighbor.
        let a = match unsafe { allgatherv_args(sendcount, recvcounts, displs, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Neighbor_allgatherv_c`: the form reads the arrays during
        // the call only (the module doc).
        unsafe {
            crate::neighbor::PMPI_Ineighbor_allgatherv(
                sendbuf, a.sendcount, sendtype, recvbuf, a.recv.c(), a.recv.d(), recvtype, comm,
                request,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Neighbor_allgatherv_init_c`: the receive arrays kept narrowed by the
    /// request.
    fn MPI_Neighbor_allgatherv_init_c / PMPI_Neighbor_allgatherv_init_c(
        sendbuf: *const c_void,
        sendcount: MpiCount,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        displs: *const MpiAint,
        recvtype: Handle,
        comm: Handle,
        _info: Handle,
        request: *mut Handle
    ) {
        // SAFETY: MPI's contract: one entry per in-neighbor.
        let a = match unsafe { allgatherv_args(sendcount, recvcounts, displs, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        let start = move |req: *mut Handle| {
            // SAFETY: the arguments of `_init`, which MPI keeps valid while the request
            // lives, and the narrowed arrays this closure owns; `req` is the start's.
            unsafe {
                crate::neighbor::PMPI_Ineighbor_allgatherv(
                    sendbuf, a.sendcount, sendtype, recvbuf, a.recv.c(), a.recv.d(), recvtype, comm,
                    req,
                )
            }
        };
        init_owning(comm, request, start)
    }
}

crate::mpi_fn! {
    /// `MPI_Neighbor_alltoallv_c`.
    fn MPI_Neighbor_alltoallv_c / PMPI_Neighbor_alltoallv_c(
        sendbuf: *const c_void,
        sendcounts: *const MpiCount,
        sdispls: *const MpiAint,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        rdispls: *const MpiAint,
        recvtype: Handle,
        comm: Handle
    ) {
        // SAFETY: MPI's contract: one entry per neighbor of each side.
        let (s, r) = match unsafe { alltoallv_args((sendcounts, sdispls), (recvcounts, rdispls), comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Neighbor_allgatherv_c`.
        unsafe {
            crate::neighbor::PMPI_Neighbor_alltoallv(
                sendbuf, s.c(), s.d(), sendtype, recvbuf, r.c(), r.d(), recvtype, comm,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Ineighbor_alltoallv_c`.
    fn MPI_Ineighbor_alltoallv_c / PMPI_Ineighbor_alltoallv_c(
        sendbuf: *const c_void,
        sendcounts: *const MpiCount,
        sdispls: *const MpiAint,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        rdispls: *const MpiAint,
        recvtype: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // SAFETY: MPI's contract: one entry per neighbor of each side.
        let (s, r) = match unsafe { alltoallv_args((sendcounts, sdispls), (recvcounts, rdispls), comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Ineighbor_allgatherv_c`.
        unsafe {
            crate::neighbor::PMPI_Ineighbor_alltoallv(
                sendbuf, s.c(), s.d(), sendtype, recvbuf, r.c(), r.d(), recvtype, comm, request,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Neighbor_alltoallv_init_c`: both sides' arrays kept narrowed by the
    /// request.
    fn MPI_Neighbor_alltoallv_init_c / PMPI_Neighbor_alltoallv_init_c(
        sendbuf: *const c_void,
        sendcounts: *const MpiCount,
        sdispls: *const MpiAint,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        rdispls: *const MpiAint,
        recvtype: Handle,
        comm: Handle,
        _info: Handle,
        request: *mut Handle
    ) {
        // SAFETY: MPI's contract: one entry per neighbor of each side.
        let (s, r) = match unsafe { alltoallv_args((sendcounts, sdispls), (recvcounts, rdispls), comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        let start = move |req: *mut Handle| {
            // SAFETY: as in `MPI_Neighbor_allgatherv_init_c`.
            unsafe {
                crate::neighbor::PMPI_Ineighbor_alltoallv(
                    sendbuf, s.c(), s.d(), sendtype, recvbuf, r.c(), r.d(), recvtype, comm, req,
                )
            }
        };
        init_owning(comm, request, start)
    }
}

crate::mpi_fn! {
    /// `MPI_Neighbor_alltoallw_c`: the counts narrowed, the `MPI_Aint` byte
    /// displacements and the types as given.
    fn MPI_Neighbor_alltoallw_c / PMPI_Neighbor_alltoallw_c(
        sendbuf: *const c_void,
        sendcounts: *const MpiCount,
        sdispls: *const MpiAint,
        sendtypes: *const Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        rdispls: *const MpiAint,
        recvtypes: *const Handle,
        comm: Handle
    ) {
        // SAFETY: MPI's contract: one count per neighbor of each side.
        let (sc, rc) = match unsafe { alltoallw_counts(sendcounts, recvcounts, comm) } {
            Ok(a) => a,
            Err(code) => return code,
        };
        // SAFETY: as in `MPI_Neighbor_allgatherv_c`.
        unsafe {
            crate::neighbor::PMPI_Neighbor_alltoallw(
                sendbuf, sc.ptr(), sdispls, sendtypes, recvbuf, rc.ptr(), rdispls, recvtypes, comm,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Ineighbor_alltoallw_c`.
    fn MPI_Ineighbor_alltoallw_c / PMPI_Ineighbor_alltoallw_c(
        sendbuf: *const c_void,
        sendcounts: *const MpiCount,
        sdispls: *const MpiAint,
        sendtypes: *const Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        rdispls: *const MpiAint,
        recvtypes: *const Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // SAFETY: MPI's contract: one count per neighbor of each side.
        let (sc, rc) = match unsafe { alltoallw_counts(sendcounts, recvcounts, comm) } {
            Ok(a) => a,
            Err(code) => return code,
        };
        // SAFETY: as in `MPI_Ineighbor_allgatherv_c`.
        unsafe {
            crate::neighbor::PMPI_Ineighbor_alltoallw(
                sendbuf, sc.ptr(), sdispls, sendtypes, recvbuf, rc.ptr(), rdispls, recvtypes, comm,
                request,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Neighbor_alltoallw_init_c`: the counts kept narrowed by the request (the
    /// displacements and types are the program's, as `MPI_Neighbor_alltoallw_init`
    /// keeps them).
    fn MPI_Neighbor_alltoallw_init_c / PMPI_Neighbor_alltoallw_init_c(
        sendbuf: *const c_void,
        sendcounts: *const MpiCount,
        sdispls: *const MpiAint,
        sendtypes: *const Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        rdispls: *const MpiAint,
        recvtypes: *const Handle,
        comm: Handle,
        _info: Handle,
        request: *mut Handle
    ) {
        // SAFETY: MPI's contract: one count per neighbor of each side.
        let (sc, rc) = match unsafe { alltoallw_counts(sendcounts, recvcounts, comm) } {
            Ok(a) => a,
            Err(code) => return code,
        };
        let start = move |req: *mut Handle| {
            // SAFETY: as in `MPI_Neighbor_allgatherv_init_c`.
            unsafe {
                crate::neighbor::PMPI_Ineighbor_alltoallw(
                    sendbuf, sc.ptr(), sdispls, sendtypes, recvbuf, rc.ptr(), rdispls, recvtypes,
                    comm, req,
                )
            }
        };
        init_owning(comm, request, start)
    }
}
