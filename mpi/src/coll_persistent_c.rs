//! The large-count (`_c`) forms of the persistent collectives (`MPI_Bcast_init_c`,
//! `MPI_Gatherv_init_c`...; the neighborhood ones are in `neighbor_c`).
//!
//! A persistent request keeps its arguments for every `MPI_Start`
//! (`coll_persistent`: a start closure that calls the non-blocking form with them).
//! The scalar forms narrow their counts and call the `int` `_init` form, whose closure
//! keeps the `int`s. The forms with arrays cannot hand the `int` `_init` form their
//! narrowed vectors, whose pointers it would keep past this call: each makes its
//! own start closure instead, which owns the narrowed vectors ([`init_owning`]), so
//! they live exactly as long as the request (freed with it by `MPI_Request_free`),
//! and each start calls the non-blocking `int` form with their pointers. The
//! arrays are read at the `_init` call, as the program's arrays of an `int` `_init`
//! are read at each start: MPI forbids changing them while the request lives, so
//! both see the same values.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::coll_c::{narrowed_scalars, Shape};
use crate::collv_c::{local_counts, one_and_many, two_sides, GATHER, SCATTER};
use crate::consts::*;
use crate::count_c::{MpiAint, MpiCount};
use crate::persistent::CollStart;
use crate::state::call;

/// Makes the inactive persistent collective request on `comm` whose starts run
/// `start` (which owns whatever narrowed arrays it passes) and writes its handle.
pub(crate) fn init_owning(
    comm: Handle,
    request: *mut Handle,
    start: impl Fn(*mut Handle) -> c_int + 'static,
) -> c_int {
    // `CollStart` is an `Arc` without `Send`: the request, like every request, is
    // only touched under the library's lock, and its start closure never leaves it.
    #[allow(clippy::arc_with_non_send_sync)]
    let start: CollStart = Arc::new(start);
    call(comm, |g| {
        crate::coll_persistent::init(g, comm, request, start)
    })
}

narrowed_scalars! {
    /// `MPI_Bcast_init_c`.
    MPI_Bcast_init_c / PMPI_Bcast_init_c => crate::coll_persistent::PMPI_Bcast_init,
    (buffer: *mut c_void, count: MpiCount, datatype: Handle, root: c_int, comm: Handle,
     info: Handle, request: *mut Handle),
    counts(count), raise_on = comm;

    /// `MPI_Reduce_init_c`.
    MPI_Reduce_init_c / PMPI_Reduce_init_c => crate::coll_persistent::PMPI_Reduce_init,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, root: c_int, comm: Handle, info: Handle, request: *mut Handle),
    counts(count), raise_on = comm;

    /// `MPI_Allreduce_init_c`.
    MPI_Allreduce_init_c / PMPI_Allreduce_init_c => crate::coll_persistent::PMPI_Allreduce_init,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, comm: Handle, info: Handle, request: *mut Handle),
    counts(count), raise_on = comm;

    /// `MPI_Scan_init_c`.
    MPI_Scan_init_c / PMPI_Scan_init_c => crate::coll_persistent::PMPI_Scan_init,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, comm: Handle, info: Handle, request: *mut Handle),
    counts(count), raise_on = comm;

    /// `MPI_Exscan_init_c`.
    MPI_Exscan_init_c / PMPI_Exscan_init_c => crate::coll_persistent::PMPI_Exscan_init,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, comm: Handle, info: Handle, request: *mut Handle),
    counts(count), raise_on = comm;

    /// `MPI_Gather_init_c`.
    MPI_Gather_init_c / PMPI_Gather_init_c => crate::coll_persistent::PMPI_Gather_init,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, root: c_int, comm: Handle, info: Handle,
     request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Scatter_init_c`.
    MPI_Scatter_init_c / PMPI_Scatter_init_c => crate::coll_persistent::PMPI_Scatter_init,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, root: c_int, comm: Handle, info: Handle,
     request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Allgather_init_c`.
    MPI_Allgather_init_c / PMPI_Allgather_init_c => crate::coll_persistent::PMPI_Allgather_init,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle, info: Handle, request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Alltoall_init_c`.
    MPI_Alltoall_init_c / PMPI_Alltoall_init_c => crate::coll_persistent::PMPI_Alltoall_init,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle, info: Handle, request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Reduce_scatter_block_init_c`.
    MPI_Reduce_scatter_block_init_c / PMPI_Reduce_scatter_block_init_c
        => crate::coll_persistent::PMPI_Reduce_scatter_block_init,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: MpiCount, datatype: Handle,
     op: Handle, comm: Handle, info: Handle, request: *mut Handle),
    counts(recvcount), raise_on = comm;
}

crate::mpi_fn! {
    /// `MPI_Gatherv_init_c`: the receive arrays read at the root only, kept narrowed
    /// by the request.
    fn MPI_Gatherv_init_c / PMPI_Gatherv_init_c(
        sendbuf: *const c_void,
        sendcount: MpiCount,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        displs: *const MpiAint,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
        _info: Handle,
        request: *mut Handle
    ) {
        let is_root = |s: &Shape| s.is_root(root);
        // SAFETY: MPI's contract: at the root, one count and displacement per peer.
        let a = match unsafe { one_and_many(sendcount, (recvcounts, displs), is_root, GATHER, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        let start = move |req: *mut Handle| {
            // SAFETY: the arguments of `_init`, which MPI keeps valid while the request
            // lives, and the narrowed arrays this closure owns; `req` is the start's.
            unsafe {
                crate::nbc_v::PMPI_Igatherv(
                    sendbuf, a.count, sendtype, recvbuf, a.many.c(), a.many.d(), recvtype, root,
                    comm, req,
                )
            }
        };
        init_owning(comm, request, start)
    }
}

crate::mpi_fn! {
    /// `MPI_Scatterv_init_c`: the send arrays read at the root only, kept narrowed by
    /// the request.
    fn MPI_Scatterv_init_c / PMPI_Scatterv_init_c(
        sendbuf: *const c_void,
        sendcounts: *const MpiCount,
        displs: *const MpiAint,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: MpiCount,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
        _info: Handle,
        request: *mut Handle
    ) {
        let is_root = |s: &Shape| s.is_root(root);
        // SAFETY: MPI's contract: at the root, one count and displacement per peer.
        let a = match unsafe { one_and_many(recvcount, (sendcounts, displs), is_root, SCATTER, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        let start = move |req: *mut Handle| {
            // SAFETY: as in `MPI_Gatherv_init_c`.
            unsafe {
                crate::nbc_v::PMPI_Iscatterv(
                    sendbuf, a.many.c(), a.many.d(), sendtype, recvbuf, a.count, recvtype, root,
                    comm, req,
                )
            }
        };
        init_owning(comm, request, start)
    }
}

crate::mpi_fn! {
    /// `MPI_Allgatherv_init_c`: the receive arrays kept narrowed by the request.
    fn MPI_Allgatherv_init_c / PMPI_Allgatherv_init_c(
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
        // SAFETY: MPI's contract: one count and displacement per peer.
        let a = match unsafe { one_and_many(sendcount, (recvcounts, displs), |_| true, GATHER, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        let start = move |req: *mut Handle| {
            // SAFETY: as in `MPI_Gatherv_init_c`.
            unsafe {
                crate::nbc_v::PMPI_Iallgatherv(
                    sendbuf, a.count, sendtype, recvbuf, a.many.c(), a.many.d(), recvtype, comm, req,
                )
            }
        };
        init_owning(comm, request, start)
    }
}

crate::mpi_fn! {
    /// `MPI_Alltoallv_init_c`: both sides' arrays kept narrowed by the request.
    fn MPI_Alltoallv_init_c / PMPI_Alltoallv_init_c(
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
        // SAFETY: MPI's contract: one count and displacement per peer on each side used.
        let (s, r) = match unsafe { two_sides(sendbuf, (sendcounts, sdispls), (recvcounts, rdispls), comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        let start = move |req: *mut Handle| {
            // SAFETY: as in `MPI_Gatherv_init_c`.
            unsafe {
                crate::nbc_v::PMPI_Ialltoallv(
                    sendbuf, s.c(), s.d(), sendtype, recvbuf, r.c(), r.d(), recvtype, comm, req,
                )
            }
        };
        init_owning(comm, request, start)
    }
}

crate::mpi_fn! {
    /// `MPI_Alltoallw_init_c`: both sides' counts and byte displacements kept narrowed
    /// by the request (the type arrays are the program's, as `MPI_Alltoallw_init`
    /// keeps them).
    fn MPI_Alltoallw_init_c / PMPI_Alltoallw_init_c(
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
        // SAFETY: MPI's contract: one entry per peer on each side used.
        let (s, r) = match unsafe { two_sides(sendbuf, (sendcounts, sdispls), (recvcounts, rdispls), comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        let start = move |req: *mut Handle| {
            // SAFETY: as in `MPI_Gatherv_init_c`.
            unsafe {
                crate::alltoallw::PMPI_Ialltoallw(
                    sendbuf, s.c(), s.d(), sendtypes, recvbuf, r.c(), r.d(), recvtypes, comm, req,
                )
            }
        };
        init_owning(comm, request, start)
    }
}

crate::mpi_fn! {
    /// `MPI_Reduce_scatter_init_c`: the counts (one per rank of the local group) kept
    /// narrowed by the request.
    fn MPI_Reduce_scatter_init_c / PMPI_Reduce_scatter_init_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        datatype: Handle,
        op: Handle,
        comm: Handle,
        _info: Handle,
        request: *mut Handle
    ) {
        // SAFETY: MPI's contract: one count per rank of the local group.
        let c = match unsafe { local_counts(recvcounts, comm) } {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let start = move |req: *mut Handle| {
            // SAFETY: as in `MPI_Gatherv_init_c`.
            unsafe {
                crate::nbc_scan::PMPI_Ireduce_scatter(sendbuf, recvbuf, c.ptr(), datatype, op, comm, req)
            }
        };
        init_owning(comm, request, start)
    }
}
