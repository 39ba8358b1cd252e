//! The large-count (`_c`) forms of the blocking collectives with per-rank counts and
//! displacements (`MPI_Gatherv_c`, `MPI_Scatterv_c`, `MPI_Allgatherv_c`,
//! `MPI_Alltoallv_c`, `MPI_Alltoallw_c`, `MPI_Reduce_scatter_c`), and the narrowing
//! of their arrays, which the non-blocking (`nbcv_c`) and persistent
//! (`coll_persistent_c`) forms share.
//!
//! An array is read only where the standard makes it significant, with the length it
//! has there: the root's counts and displacements of a `v` gather or scatter (one
//! per peer), every rank's for the others, none of the send side's under
//! `MPI_IN_PLACE`, and `MPI_Reduce_scatter_c`'s counts one per rank of the local
//! group. A peer is a rank of the communicator, of the remote group on an
//! inter-communicator. An array that is not significant reaches the `int` form as
//! null, which that form never reads. The narrowed vectors live as long as the call
//! (the non-blocking `int` forms copy what they need from their arrays before they
//! return); a persistent request owns its own.

use std::ffi::{c_int, c_void};

use crate::coll_c::{count, Raised, Shape};
use crate::consts::*;
use crate::count_c::refuse;
use crate::count_c::{narrow_aints, narrow_counts, MpiAint, MpiCount, Narrowed};

/// `n` entries of an `MPI_Count` array narrowed, or the raised refusal.
///
/// # Safety
/// `p` is null or holds `n` counts.
pub(crate) unsafe fn counts(
    p: *const MpiCount,
    n: usize,
    what: &str,
    comm: Handle,
) -> Raised<Narrowed> {
    // SAFETY: the caller's contract.
    unsafe { narrow_counts(p, n, what) }.map_err(|f| refuse(comm, f))
}

/// `n` entries of an `MPI_Aint` array narrowed, or the raised refusal.
///
/// # Safety
/// `p` is null or holds `n` displacements.
pub(crate) unsafe fn aints(
    p: *const MpiAint,
    n: usize,
    what: &str,
    comm: Handle,
) -> Raised<Narrowed> {
    // SAFETY: the caller's contract.
    unsafe { narrow_aints(p, n, what) }.map_err(|f| refuse(comm, f))
}

/// One side of a `v` or `w` call narrowed: its counts and displacements (each null
/// where the side is not significant).
#[derive(Debug)]
pub(crate) struct VSide {
    /// The counts.
    pub counts: Narrowed,
    /// The displacements (in extents for the `v` forms, in bytes for the `w` forms).
    pub displs: Narrowed,
}

impl VSide {
    /// A side of `n` entries narrowed (none read when `significant` is false).
    ///
    /// # Safety
    /// When `significant`, `counts` and `displs` are null or hold `n` entries.
    pub(crate) unsafe fn new(
        significant: bool,
        (counts_p, displs_p): (*const MpiCount, *const MpiAint),
        n: usize,
        (what_c, what_d): (&str, &str),
        comm: Handle,
    ) -> Raised<VSide> {
        let (cp, dp) = if significant {
            (counts_p, displs_p)
        } else {
            (std::ptr::null(), std::ptr::null())
        };
        // SAFETY: the caller's contract.
        unsafe {
            Ok(VSide {
                counts: counts(cp, n, what_c, comm)?,
                displs: aints(dp, n, what_d, comm)?,
            })
        }
    }

    /// The counts' pointer for the `int` form.
    pub(crate) fn c(&self) -> *const c_int {
        self.counts.ptr()
    }

    /// The displacements' pointer for the `int` form.
    pub(crate) fn d(&self) -> *const c_int {
        self.displs.ptr()
    }
}

/// A `v` call with one scalar count: `MPI_Gatherv_c`'s send count and receive arrays,
/// `MPI_Scatterv_c`'s receive count and send arrays, `MPI_Allgatherv_c`'s.
#[derive(Debug)]
pub(crate) struct OneAndMany {
    /// The scalar count.
    pub count: c_int,
    /// The arrays.
    pub many: VSide,
}

/// Argument names for refusals: the scalar count's, the counts', the displacements'.
pub(crate) type Names = (&'static str, &'static str, &'static str);

/// A `v` call's arguments narrowed, its arrays read at this rank when `significant`
/// says so given the communicator's shape.
///
/// # Safety
/// Where significant, `counts` and `displs` hold one entry per peer.
pub(crate) unsafe fn one_and_many(
    scalar: MpiCount,
    arrays: (*const MpiCount, *const MpiAint),
    significant: impl FnOnce(&Shape) -> bool,
    names: Names,
    comm: Handle,
) -> Raised<OneAndMany> {
    let shape = Shape::of(comm)?;
    let c = count(scalar, names.0, comm)?;
    let sig = significant(&shape);
    // SAFETY: the caller's contract.
    let many = unsafe { VSide::new(sig, arrays, shape.peers, (names.1, names.2), comm) }?;
    Ok(OneAndMany { count: c, many })
}

/// An all-to-all's two sides narrowed (`MPI_Alltoallv_c`, `MPI_Alltoallw_c`): the send
/// side only when `sendbuf` is not `MPI_IN_PLACE`.
///
/// # Safety
/// The receive arrays (and the send arrays but in place) hold one entry per peer.
pub(crate) unsafe fn two_sides(
    sendbuf: *const c_void,
    send: (*const MpiCount, *const MpiAint),
    recv: (*const MpiCount, *const MpiAint),
    comm: Handle,
) -> Raised<(VSide, VSide)> {
    let shape = Shape::of(comm)?;
    let n = shape.peers;
    let in_place = sendbuf as usize == IN_PLACE;
    // SAFETY: the caller's contract.
    unsafe {
        Ok((
            VSide::new(!in_place, send, n, ("sendcounts", "sdispls"), comm)?,
            VSide::new(true, recv, n, ("recvcounts", "rdispls"), comm)?,
        ))
    }
}

/// `MPI_Reduce_scatter_c`'s counts narrowed: one per rank of the local group.
///
/// # Safety
/// `recvcounts` is null or holds one count per rank of the local group.
pub(crate) unsafe fn local_counts(recvcounts: *const MpiCount, comm: Handle) -> Raised<Narrowed> {
    let shape = Shape::of(comm)?;
    // SAFETY: the caller's contract.
    unsafe { counts(recvcounts, shape.local, "recvcounts", comm) }
}

/// The names of a gather's narrowed arguments.
pub(crate) const GATHER: Names = ("sendcount", "recvcounts", "displs");
/// The names of a scatter's narrowed arguments.
pub(crate) const SCATTER: Names = ("recvcount", "sendcounts", "displs");

crate::mpi_fn! {
    /// `MPI_Gatherv_c`: the receive arrays read at the root only.
    fn MPI_Gatherv_c / PMPI_Gatherv_c(
        sendbuf: *const c_void,
        sendcount: MpiCount,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        displs: *const MpiAint,
        recvtype: Handle,
        root: c_int,
        comm: Handle
    ) {
        let is_root = |s: &Shape| s.is_root(root);
        // SAFETY: MPI's contract: at the root, one count and displacement per peer.
        let a = match unsafe { one_and_many(sendcount, (recvcounts, displs), is_root, GATHER, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: the program's arguments, narrowed; the vectors outlive the call.
        unsafe {
            crate::collv::PMPI_Gatherv(
                sendbuf, a.count, sendtype, recvbuf, a.many.c(), a.many.d(), recvtype, root, comm,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Scatterv_c`: the send arrays read at the root only.
    fn MPI_Scatterv_c / PMPI_Scatterv_c(
        sendbuf: *const c_void,
        sendcounts: *const MpiCount,
        displs: *const MpiAint,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: MpiCount,
        recvtype: Handle,
        root: c_int,
        comm: Handle
    ) {
        let is_root = |s: &Shape| s.is_root(root);
        // SAFETY: MPI's contract: at the root, one count and displacement per peer.
        let a = match unsafe { one_and_many(recvcount, (sendcounts, displs), is_root, SCATTER, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Gatherv_c`.
        unsafe {
            crate::collv::PMPI_Scatterv(
                sendbuf, a.many.c(), a.many.d(), sendtype, recvbuf, a.count, recvtype, root, comm,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Allgatherv_c`: the receive arrays read at every rank.
    fn MPI_Allgatherv_c / PMPI_Allgatherv_c(
        sendbuf: *const c_void,
        sendcount: MpiCount,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        displs: *const MpiAint,
        recvtype: Handle,
        comm: Handle
    ) {
        // SAFETY: MPI's contract: one count and displacement per peer.
        let a = match unsafe { one_and_many(sendcount, (recvcounts, displs), |_| true, GATHER, comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Gatherv_c`.
        unsafe {
            crate::collv::PMPI_Allgatherv(
                sendbuf, a.count, sendtype, recvbuf, a.many.c(), a.many.d(), recvtype, comm,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Alltoallv_c`: displacements in extents of the side's type.
    fn MPI_Alltoallv_c / PMPI_Alltoallv_c(
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
        // SAFETY: MPI's contract: one count and displacement per peer on each side used.
        let (s, r) = match unsafe { two_sides(sendbuf, (sendcounts, sdispls), (recvcounts, rdispls), comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Gatherv_c`.
        unsafe {
            crate::collv::PMPI_Alltoallv(
                sendbuf, s.c(), s.d(), sendtype, recvbuf, r.c(), r.d(), recvtype, comm,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Alltoallw_c`: displacements in bytes (`MPI_Aint`, narrowed to the `int`
    /// form's `int`s), a type per peer.
    fn MPI_Alltoallw_c / PMPI_Alltoallw_c(
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
        // SAFETY: MPI's contract: one entry per peer on each side used.
        let (s, r) = match unsafe { two_sides(sendbuf, (sendcounts, sdispls), (recvcounts, rdispls), comm) } {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Gatherv_c`.
        unsafe {
            crate::alltoallw::PMPI_Alltoallw(
                sendbuf, s.c(), s.d(), sendtypes, recvbuf, r.c(), r.d(), recvtypes, comm,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Reduce_scatter_c`: one count per rank of the local group.
    fn MPI_Reduce_scatter_c / PMPI_Reduce_scatter_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const MpiCount,
        datatype: Handle,
        op: Handle,
        comm: Handle
    ) {
        // SAFETY: MPI's contract: one count per rank of the local group.
        let c = match unsafe { local_counts(recvcounts, comm) } {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        // SAFETY: as in `MPI_Gatherv_c`.
        unsafe { crate::coll_scan::PMPI_Reduce_scatter(sendbuf, recvbuf, c.ptr(), datatype, op, comm) }
    }
}
