//! The large-count (`_c`) forms of the non-blocking collectives whose counts are
//! scalars (`MPI_Ibcast_c`, `MPI_Iallreduce_c`, `MPI_Ialltoall_c`...): each narrows its
//! counts and calls the `int` form (`coll_c::narrowed_scalars!`). A count keeps no
//! storage: the request holds the `int` the form was given.

use std::ffi::{c_int, c_void};

use crate::coll_c::narrowed_scalars;
use crate::consts::*;
use crate::count_c::MpiCount;

narrowed_scalars! {
    /// `MPI_Ibcast_c`.
    MPI_Ibcast_c / PMPI_Ibcast_c => crate::nbc::PMPI_Ibcast,
    (buffer: *mut c_void, count: MpiCount, datatype: Handle, root: c_int, comm: Handle,
     request: *mut Handle),
    counts(count), raise_on = comm;

    /// `MPI_Ireduce_c`.
    MPI_Ireduce_c / PMPI_Ireduce_c => crate::nbc::PMPI_Ireduce,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, root: c_int, comm: Handle, request: *mut Handle),
    counts(count), raise_on = comm;

    /// `MPI_Iallreduce_c`.
    MPI_Iallreduce_c / PMPI_Iallreduce_c => crate::nbc::PMPI_Iallreduce,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, comm: Handle, request: *mut Handle),
    counts(count), raise_on = comm;

    /// `MPI_Iscan_c`.
    MPI_Iscan_c / PMPI_Iscan_c => crate::nbc_scan::PMPI_Iscan,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, comm: Handle, request: *mut Handle),
    counts(count), raise_on = comm;

    /// `MPI_Iexscan_c`.
    MPI_Iexscan_c / PMPI_Iexscan_c => crate::nbc_scan::PMPI_Iexscan,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, comm: Handle, request: *mut Handle),
    counts(count), raise_on = comm;

    /// `MPI_Igather_c`.
    MPI_Igather_c / PMPI_Igather_c => crate::nbc::PMPI_Igather,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, root: c_int, comm: Handle, request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Iscatter_c`.
    MPI_Iscatter_c / PMPI_Iscatter_c => crate::nbc::PMPI_Iscatter,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, root: c_int, comm: Handle, request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Iallgather_c`.
    MPI_Iallgather_c / PMPI_Iallgather_c => crate::nbc::PMPI_Iallgather,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle, request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Ialltoall_c`.
    MPI_Ialltoall_c / PMPI_Ialltoall_c => crate::nbc::PMPI_Ialltoall,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle, request: *mut Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Ireduce_scatter_block_c`.
    MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c
        => crate::nbc_scan::PMPI_Ireduce_scatter_block,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: MpiCount, datatype: Handle,
     op: Handle, comm: Handle, request: *mut Handle),
    counts(recvcount), raise_on = comm;
}
