//! The groups of communicators: `MPI_Comm_group` (an inter-communicator's local
//! group), `MPI_Comm_remote_group`, `MPI_Comm_compare` (inter-communicators: both
//! groups).

use std::ffi::c_int;

use sf::comm::InterComm;

use crate::comm::group_of;
use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::{call, CommKind, Lib};
use crate::util::out;

/// How two groups of world ranks compare.
pub(crate) fn compare_groups(a: &[u32], b: &[u32]) -> c_int {
    if a == b {
        return MPI_IDENT;
    }
    let mut x = a.to_vec();
    let mut y = b.to_vec();
    x.sort_unstable();
    y.sort_unstable();
    if x == y {
        MPI_SIMILAR
    } else {
        MPI_UNEQUAL
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_compare`.
    fn MPI_Comm_compare / PMPI_Comm_compare(comm1: Handle, comm2: Handle, result: *mut c_int) {
        call(comm1, |g| {
            // SAFETY: MPI's contract: `result` is valid for a write.
            let slot = unsafe { out(result) }?;
            let lib = g.lib()?;
            lib.comm(comm1)?;
            lib.comm(comm2)?;
            *slot = if comm1 == comm2 {
                MPI_IDENT
            } else {
                // Inter-communicators: both groups compared, the lesser result; an
                // intra- and an inter-communicator are unequal.
                let (l1, r1) = groups_of(lib, comm1)?;
                let (l2, r2) = groups_of(lib, comm2)?;
                let local = compare_groups(&l1, &l2);
                let both = match (r1, r2) {
                    (None, None) => local,
                    (Some(a), Some(b)) => local.max(compare_groups(&a, &b)),
                    _ => MPI_UNEQUAL,
                };
                match both {
                    MPI_IDENT => MPI_CONGRUENT,
                    other => other,
                }
            };
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_group`: the group of `comm`, the local group of an
    /// inter-communicator.
    fn MPI_Comm_group / PMPI_Comm_group(comm: Handle, group: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `group` is valid for a write.
            let slot = unsafe { out(group) }?;
            let lib = g.lib()?;
            let members = match &lib.comm(comm)?.kind {
                CommKind::Inter { p2p, .. } => side_of(p2p, p2p.local_offset(), p2p.local_size()),
                CommKind::Intra { .. } => group_of(lib, comm)?,
            };
            *slot = crate::group::new_group(lib, members);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_remote_group`: the remote group of an inter-communicator.
    fn MPI_Comm_remote_group / PMPI_Comm_remote_group(comm: Handle, group: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `group` is valid for a write.
            let slot = unsafe { out(group) }?;
            let lib = g.lib()?;
            let members = match &lib.comm(comm)?.kind {
                CommKind::Inter { p2p, .. } => {
                    side_of(p2p, p2p.remote_offset(), p2p.remote_size())
                }
                CommKind::Intra { .. } => {
                    return Err(Fail::new(MPI_ERR_COMM, "not an inter-communicator"))
                }
            };
            *slot = crate::group::new_group(lib, members);
            Ok(())
        })
    }
}

/// The world ranks of `comm`'s group, and of its remote group when it is an
/// inter-communicator.
pub(crate) fn groups_of(lib: &Lib, comm: Handle) -> R<(Vec<u32>, Option<Vec<u32>>)> {
    Ok(match &lib.comm(comm)?.kind {
        CommKind::Inter { p2p, .. } => (
            side_of(p2p, p2p.local_offset(), p2p.local_size()),
            Some(side_of(p2p, p2p.remote_offset(), p2p.remote_size())),
        ),
        CommKind::Intra { .. } => (group_of(lib, comm)?, None),
    })
}

/// The world ranks of one group of an inter-communicator: `size` ranks of its union
/// from `offset`.
pub(crate) fn side_of(ic: &InterComm, offset: u32, size: u32) -> Vec<u32> {
    (offset..offset + size)
        .map(|r| ic.union().world_rank(r).unwrap_or(u32::MAX))
        .collect()
}
