//! The large-count (`_c`) forms of the blocking collectives whose counts are scalars
//! (`MPI_Bcast_c`, `MPI_Reduce_c`, `MPI_Allgather_c`...) and what every collective
//! `_c` form shares: [`Raised`], [`Shape`] and the [`narrowed_scalars!`]
//! macro. As `count_c` says, each narrows its `MPI_Count` arguments to `int` and calls
//! the `int` form's `PMPI_` symbol; a count beyond the `int` range is refused with
//! `MPI_ERR_COUNT` on the communicator's error handler, before any message moves.
//! Every rank that sees such a count refuses it alike, so a program whose counts are
//! too large at every rank gets the error everywhere rather than a hang.

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::count_c::refuse;
use crate::count_c::{narrow, MpiCount};
use crate::state::{call, CommKind};

/// A step of a `_c` form: its value, or the error code already raised on the
/// communicator's handler (the code to return).
pub(crate) type Raised<T> = Result<T, c_int>;

/// A count argument narrowed to `int`, or the code of the raised refusal.
pub(crate) fn count(value: MpiCount, what: &str, comm: Handle) -> Raised<c_int> {
    narrow(value, what).map_err(|f| refuse(comm, f))
}

/// What a collective's array arguments are sized by: this process's rank in `comm`
/// (in its group), the size of its group, and the number of peers (the group's size,
/// the remote group's on an inter-communicator).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// This process's rank in its group.
    pub rank: u32,
    /// The size of this process's group (`MPI_Comm_size`).
    pub local: usize,
    /// The entries of a per-peer array: the group's size, or the remote group's.
    pub peers: usize,
    /// Whether `comm` is an inter-communicator.
    pub inter: bool,
}

impl Shape {
    /// The shape of `comm`; an invalid communicator (or a call before `MPI_Init`)
    /// is raised as the `int` form would raise it.
    pub(crate) fn of(comm: Handle) -> Raised<Shape> {
        let mut found = None;
        let rc = call(comm, |g| {
            let e = g.lib()?.comm(comm)?;
            let (inter, local) = match &e.kind {
                CommKind::Intra { .. } => (false, e.size),
                CommKind::Inter { p2p, .. } => (true, p2p.local_size()),
            };
            found = Some(Shape {
                rank: e.rank,
                local: local as usize,
                peers: e.size as usize,
                inter,
            });
            Ok(())
        });
        found.ok_or(rc)
    }

    /// Whether this process is the root of a rooted call given `root` (an
    /// inter-communicator's root passes `MPI_ROOT`): where the root's arrays are
    /// significant. An invalid `root` is no root; the `int` form reports it.
    pub(crate) fn is_root(&self, root: c_int) -> bool {
        if self.inter {
            root == MPI_ROOT
        } else {
            u32::try_from(root).is_ok_and(|r| r == self.rank)
        }
    }
}

/// Defines `_c` entry points whose only wide arguments are scalar counts: each
/// narrows the arguments named in `counts(...)` (declared `MpiCount` in the argument
/// list) and calls `$int` with every argument in order; a refusal is raised on
/// `$comm`. Each item reads `MPI_X_c / PMPI_X_c => int_form, (args), counts(names),
/// raise_on = communicator;`.
macro_rules! narrowed_scalars {
    ($(
        $(#[$doc:meta])* $name:ident / $pname:ident => $int:path,
        ($($arg:ident: $ty:ty),* $(,)?), counts($($c:ident),+), raise_on = $comm:expr;
    )+) => {$(
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname($($arg: $ty),*) {
                $(
                    let $c = match crate::coll_c::count($c, stringify!($c), $comm) {
                        Ok(v) => v,
                        Err(rc) => return rc,
                    };
                )+
                // SAFETY: the program's arguments, the counts narrowed: the `int`
                // form's contract is this function's.
                unsafe { $int($($arg),*) }
            }
        }
    )+};
}
pub(crate) use narrowed_scalars;

narrowed_scalars! {
    /// `MPI_Bcast_c`: `MPI_Bcast` with an `MPI_Count` count.
    MPI_Bcast_c / PMPI_Bcast_c => crate::coll::PMPI_Bcast,
    (buffer: *mut c_void, count: MpiCount, datatype: Handle, root: c_int, comm: Handle),
    counts(count), raise_on = comm;

    /// `MPI_Reduce_c`.
    MPI_Reduce_c / PMPI_Reduce_c => crate::coll::PMPI_Reduce,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, root: c_int, comm: Handle),
    counts(count), raise_on = comm;

    /// `MPI_Allreduce_c`.
    MPI_Allreduce_c / PMPI_Allreduce_c => crate::coll::PMPI_Allreduce,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, comm: Handle),
    counts(count), raise_on = comm;

    /// `MPI_Reduce_local_c` (a refusal raised where `MPI_Reduce_local` raises its
    /// errors: on `MPI_COMM_SELF`).
    MPI_Reduce_local_c / PMPI_Reduce_local_c => crate::op::PMPI_Reduce_local,
    (inbuf: *const c_void, inoutbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle),
    counts(count), raise_on = MPI_COMM_SELF;

    /// `MPI_Scan_c`.
    MPI_Scan_c / PMPI_Scan_c => crate::coll_scan::PMPI_Scan,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, comm: Handle),
    counts(count), raise_on = comm;

    /// `MPI_Exscan_c`.
    MPI_Exscan_c / PMPI_Exscan_c => crate::coll_scan::PMPI_Exscan,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: Handle,
     op: Handle, comm: Handle),
    counts(count), raise_on = comm;

    /// `MPI_Gather_c`.
    MPI_Gather_c / PMPI_Gather_c => crate::coll::PMPI_Gather,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, root: c_int, comm: Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Scatter_c`.
    MPI_Scatter_c / PMPI_Scatter_c => crate::coll::PMPI_Scatter,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, root: c_int, comm: Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Allgather_c`.
    MPI_Allgather_c / PMPI_Allgather_c => crate::coll::PMPI_Allgather,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Alltoall_c`.
    MPI_Alltoall_c / PMPI_Alltoall_c => crate::coll::PMPI_Alltoall,
    (sendbuf: *const c_void, sendcount: MpiCount, sendtype: Handle, recvbuf: *mut c_void,
     recvcount: MpiCount, recvtype: Handle, comm: Handle),
    counts(sendcount, recvcount), raise_on = comm;

    /// `MPI_Reduce_scatter_block_c`.
    MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c
        => crate::coll_scan::PMPI_Reduce_scatter_block,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: MpiCount, datatype: Handle,
     op: Handle, comm: Handle),
    counts(recvcount), raise_on = comm;
}
