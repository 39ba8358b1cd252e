//! Persistent collectives (MPI 4.1 §6.13): `MPI_Barrier_init`, `MPI_Bcast_init`,
//! `MPI_Gather_init`... and the persistent neighborhood collectives
//! (`MPI_Neighbor_allgather_init`...). Each `_init` makes an inactive persistent
//! request that keeps its arguments (`persistent::Persistent::coll`); each
//! `MPI_Start` starts the matching non-blocking collective with them
//! ([`crate::state::call_nested`]: its failure is `MPI_Start`'s) and the request takes
//! over its schedule; a completion call completes it and leaves it inactive, as any
//! persistent request. Starts take the communicator's collective tags in the order
//! the program starts them, which MPI requires to be the same at every member.
//! `info` is not used.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::persistent::{CollStart, Persistent};
use crate::request::{Outcome, Req};
use crate::state::{call, call_nested, Guard};
use crate::util::new_request_out;

/// `MPI_Aint`: an address-sized signed integer.
#[allow(non_camel_case_types)]
type MPI_Aint = isize;

/// Makes the inactive persistent collective request on `comm` and writes its handle
/// (also `MPI_Bsend_init`'s, whose start is an `MPI_Ibsend`).
pub(crate) fn init(g: &mut Guard, comm: Handle, request: *mut Handle, start: CollStart) -> R<()> {
    // SAFETY: MPI's contract: `request` is valid for a write.
    let slot = unsafe { new_request_out(request) }?;
    let lib = g.lib()?;
    lib.comm(comm)?;
    let mut req = Req::finished(comm, Outcome::empty());
    req.persistent = Some(Box::new(Persistent::collective(start)));
    *slot = lib.add_request(req)?;
    Ok(())
}

/// Starts persistent collective `h` (`MPI_Start`): the non-blocking collective
/// `start` makes is moved into it.
pub(crate) fn start(g: &mut Guard, h: Handle, start: CollStart) -> R<()> {
    let mut started = MPI_REQUEST_NULL;
    call_nested(g, || start(&mut started))?;
    let lib = g.lib()?;
    let new = lib
        .requests
        .remove(&started)
        .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "a started collective left no request"))?;
    let r = lib
        .requests
        .get_mut(&h)
        .ok_or_else(|| Fail::new(MPI_ERR_REQUEST, format!("{h:#x} was freed meanwhile")))?;
    r.op = new.op;
    r.done = new.done;
    r.packed = new.packed;
    r.unpack = new.unpack;
    if let Some(p) = &mut r.persistent {
        p.active = true;
    }
    Ok(())
}

/// Defines `MPI_X_init`, which keeps its arguments for `MPI_Start` to call the
/// non-blocking `$start` with.
macro_rules! coll_init {
    ($(#[$doc:meta])* $name:ident / $pname:ident => $start:path, ($($arg:ident: $ty:ty),*)) => {
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname($($arg: $ty,)* comm: Handle, _info: Handle, request: *mut Handle) {
                call(comm, |g| {
                    let start: CollStart = Arc::new(move |req: *mut Handle| {
                        // SAFETY: the arguments as the program gave them to `_init`,
                        // which MPI keeps valid while the request lives.
                        unsafe { $start($($arg,)* comm, req) }
                    });
                    init(g, comm, request, start)
                })
            }
        }
    };
}

crate::mpi_fn! {
    /// `MPI_Barrier_init`.
    fn MPI_Barrier_init / PMPI_Barrier_init(comm: Handle, _info: Handle, request: *mut Handle) {
        call(comm, |g| {
            let start: CollStart = Arc::new(move |req: *mut Handle| {
                // SAFETY: `req` is the start's local handle.
                unsafe { crate::coll::PMPI_Ibarrier(comm, req) }
            });
            init(g, comm, request, start)
        })
    }
}

coll_init!(
    /// `MPI_Bcast_init`.
    MPI_Bcast_init / PMPI_Bcast_init => crate::nbc::PMPI_Ibcast,
    (buffer: *mut c_void, count: c_int, datatype: Handle, root: c_int)
);
coll_init!(
    /// `MPI_Reduce_init`.
    MPI_Reduce_init / PMPI_Reduce_init => crate::nbc::PMPI_Ireduce,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle,
     root: c_int)
);
coll_init!(
    /// `MPI_Allreduce_init`.
    MPI_Allreduce_init / PMPI_Allreduce_init => crate::nbc::PMPI_Iallreduce,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle)
);
coll_init!(
    /// `MPI_Gather_init`.
    MPI_Gather_init / PMPI_Gather_init => crate::nbc::PMPI_Igather,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: Handle, root: c_int)
);
coll_init!(
    /// `MPI_Scatter_init`.
    MPI_Scatter_init / PMPI_Scatter_init => crate::nbc::PMPI_Iscatter,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: Handle, root: c_int)
);
coll_init!(
    /// `MPI_Allgather_init`.
    MPI_Allgather_init / PMPI_Allgather_init => crate::nbc::PMPI_Iallgather,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: Handle)
);
coll_init!(
    /// `MPI_Alltoall_init`.
    MPI_Alltoall_init / PMPI_Alltoall_init => crate::nbc::PMPI_Ialltoall,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: Handle)
);
coll_init!(
    /// `MPI_Gatherv_init`.
    MPI_Gatherv_init / PMPI_Gatherv_init => crate::nbc_v::PMPI_Igatherv,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
     recvcounts: *const c_int, displs: *const c_int, recvtype: Handle, root: c_int)
);
coll_init!(
    /// `MPI_Scatterv_init`.
    MPI_Scatterv_init / PMPI_Scatterv_init => crate::nbc_v::PMPI_Iscatterv,
    (sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: Handle,
     recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, root: c_int)
);
coll_init!(
    /// `MPI_Allgatherv_init`.
    MPI_Allgatherv_init / PMPI_Allgatherv_init => crate::nbc_v::PMPI_Iallgatherv,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
     recvcounts: *const c_int, displs: *const c_int, recvtype: Handle)
);
coll_init!(
    /// `MPI_Alltoallv_init`.
    MPI_Alltoallv_init / PMPI_Alltoallv_init => crate::nbc_v::PMPI_Ialltoallv,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Handle,
     recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Handle)
);
coll_init!(
    /// `MPI_Alltoallw_init`.
    MPI_Alltoallw_init / PMPI_Alltoallw_init => crate::alltoallw::PMPI_Ialltoallw,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
     sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const c_int,
     rdispls: *const c_int, recvtypes: *const Handle)
);
coll_init!(
    /// `MPI_Scan_init`.
    MPI_Scan_init / PMPI_Scan_init => crate::nbc_scan::PMPI_Iscan,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle)
);
coll_init!(
    /// `MPI_Exscan_init`.
    MPI_Exscan_init / PMPI_Exscan_init => crate::nbc_scan::PMPI_Iexscan,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle)
);
coll_init!(
    /// `MPI_Reduce_scatter_block_init`.
    MPI_Reduce_scatter_block_init / PMPI_Reduce_scatter_block_init
        => crate::nbc_scan::PMPI_Ireduce_scatter_block,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: Handle,
     op: Handle)
);
coll_init!(
    /// `MPI_Reduce_scatter_init`.
    MPI_Reduce_scatter_init / PMPI_Reduce_scatter_init => crate::nbc_scan::PMPI_Ireduce_scatter,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: Handle,
     op: Handle)
);
coll_init!(
    /// `MPI_Neighbor_allgather_init`.
    MPI_Neighbor_allgather_init / PMPI_Neighbor_allgather_init
        => crate::neighbor::PMPI_Ineighbor_allgather,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: Handle)
);
coll_init!(
    /// `MPI_Neighbor_allgatherv_init`.
    MPI_Neighbor_allgatherv_init / PMPI_Neighbor_allgatherv_init
        => crate::neighbor::PMPI_Ineighbor_allgatherv,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
     recvcounts: *const c_int, displs: *const c_int, recvtype: Handle)
);
coll_init!(
    /// `MPI_Neighbor_alltoall_init`.
    MPI_Neighbor_alltoall_init / PMPI_Neighbor_alltoall_init
        => crate::neighbor::PMPI_Ineighbor_alltoall,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: Handle)
);
coll_init!(
    /// `MPI_Neighbor_alltoallv_init`.
    MPI_Neighbor_alltoallv_init / PMPI_Neighbor_alltoallv_init
        => crate::neighbor::PMPI_Ineighbor_alltoallv,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Handle,
     recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Handle)
);
coll_init!(
    /// `MPI_Neighbor_alltoallw_init`.
    MPI_Neighbor_alltoallw_init / PMPI_Neighbor_alltoallw_init
        => crate::neighbor::PMPI_Ineighbor_alltoallw,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const MPI_Aint,
     sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const c_int,
     rdispls: *const MPI_Aint, recvtypes: *const Handle)
);
