//! The large-count (`_c`) forms of the non-blocking collectives with per-rank counts
//! and displacements (`MPI_Igatherv_c`, `MPI_Iscatterv_c`, `MPI_Iallgatherv_c`,
//! `MPI_Ialltoallv_c`, `MPI_Ialltoallw_c`, `MPI_Ireduce_scatter_c`), their arrays
//! narrowed as `collv_c` narrows the blocking forms'.
//!
//! The narrowed vectors are dropped when the call returns, before the request
//! completes. That is sound because every non-blocking `int` form reads its arrays
//! only during the call: the schedules (`nbc_v`, `nbc_inter`, `alltoallw`,
//! `nbc_scan`) turn them into byte blocks at once, and a type with gaps is packed
//! (`coll_packed_v`) into buffers the request owns, its unpacking layout built from
//! the arrays at the call as well.

use std::ffi::{c_int, c_void};

use crate::coll_c::Shape;
use crate::collv_c::{local_counts, one_and_many, two_sides, GATHER, SCATTER};
use crate::consts::*;
use crate::count_c::{MpiAint, MpiCount};

crate::mpi_fn! {
    /// `MPI_Igatherv_c`: the receive arrays read at the root only.
    fn MPI_Igatherv_c / PMPI_Igatherv_c(
        sendbuf: *const c_void,
        sendcount: MpiCount,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        displs: *const MpiAint,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        let is_root = |s: &Shape| s.is_root(root);
        // SAFETY: MPI's contract: at the root, one count and displacement per peer.
        let a = match unsafe { one_and_many(sendcount, (recvcounts, displs), is_root, GATHER, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: the program's arguments, narrowed; the form reads the arrays during
        // the call only (the module doc).
        unsafe {
            crate::nbc_v::PMPI_Igatherv(
                sendbuf, a.count, sendtype, recvbuf, a.many.c(), a.many.d(), recvtype, root, comm,
                request,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Iscatterv_c`: the send arrays read at the root only.
    fn MPI_Iscatterv_c / PMPI_Iscatterv_c(
        sendbuf: *const c_void,
        sendcounts: *const MpiCount,
        displs: *const MpiAint,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: MpiCount,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        let is_root = |s: &Shape| s.is_root(root);
        // SAFETY: MPI's contract: at the root, one count and displacement per peer.
        let a = match unsafe { one_and_many(recvcount, (sendcounts, displs), is_root, SCATTER, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Igatherv_c`.
        unsafe {
            crate::nbc_v::PMPI_Iscatterv(
                sendbuf, a.many.c(), a.many.d(), sendtype, recvbuf, a.count, recvtype, root, comm,
                request,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Iallgatherv_c`: the receive arrays read at every rank.
    fn MPI_Iallgatherv_c / PMPI_Iallgatherv_c(
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
        // SAFETY: MPI's contract: one count and displacement per peer.
        let a = match unsafe { one_and_many(sendcount, (recvcounts, displs), |_| true, GATHER, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Igatherv_c`.
        unsafe {
            crate::nbc_v::PMPI_Iallgatherv(
                sendbuf, a.count, sendtype, recvbuf, a.many.c(), a.many.d(), recvtype, comm, request,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Ialltoallv_c`.
    fn MPI_Ialltoallv_c / PMPI_Ialltoallv_c(
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
        // SAFETY: MPI's contract: one count and displacement per peer on each side used.
        let (s, r) = match unsafe { two_sides(sendbuf, (sendcounts, sdispls), (recvcounts, rdispls), comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Igatherv_c`.
        unsafe {
            crate::nbc_v::PMPI_Ialltoallv(
                sendbuf, s.c(), s.d(), sendtype, recvbuf, r.c(), r.d(), recvtype, comm, request,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Ialltoallw_c`: displacements in bytes, a type per peer.
    fn MPI_Ialltoallw_c / PMPI_Ialltoallw_c(
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
        // SAFETY: MPI's contract: one entry per peer on each side used.
        let (s, r) = match unsafe { two_sides(sendbuf, (sendcounts, sdispls), (recvcounts, rdispls), comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Igatherv_c`.
        unsafe {
            crate::alltoallw::PMPI_Ialltoallw(
                sendbuf, s.c(), s.d(), sendtypes, recvbuf, r.c(), r.d(), recvtypes, comm, request,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Ireduce_scatter_c`: one count per rank of the local group.
    fn MPI_Ireduce_scatter_c / PMPI_Ireduce_scatter_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        datatype: Handle,
        op: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // SAFETY: MPI's contract: one count per rank of the local group.
        let c = match unsafe { local_counts(recvcounts, comm) } {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Igatherv_c`.
        unsafe {
            crate::nbc_scan::PMPI_Ireduce_scatter(sendbuf, recvbuf, c.ptr(), datatype, op, comm, request)
        }
    }
}
