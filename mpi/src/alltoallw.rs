//! `MPI_Alltoallw` and `MPI_Ialltoallw`: `MPI_Alltoallv` with a datatype per peer and
//! displacements in bytes. On an inter-communicator (one entry per remote rank, no
//! `MPI_IN_PLACE`) `nbc_inter::ialltoallw` runs it; the blocking form waits on it. A
//! type with gaps on either side: every block packed first (`coll_packed_v`), the call
//! below then runs on contiguous bytes, every block straight from and into the
//! program's (or the packed) buffers (`MPI_IN_PLACE`: sent from a copy of `recvbuf` laid out as the
//! receive blocks); overlapping receive blocks `MPI_ERR_ARG`.

use std::ffi::{c_int, c_void};

use crate::coll::Coll;
use crate::collv::{copy_own, disjoint_blocks};
use crate::consts::*;
use crate::error::{Fail, R};
use crate::nbc::{own_fits, request_slot, Nbc, Span, Step};
use crate::state::{call, Guard};
use crate::util::{bytes, bytes_mut};

/// One side's arguments: per peer a count, a byte displacement and a type.
#[derive(Clone, Copy)]
struct Side {
    counts: *const c_int,
    displs: *const c_int,
    types: *const Handle,
}

/// The `(byte start, byte length)` of each peer's block and the bytes they span.
///
/// # Safety
/// The three arrays of `side` hold `n` entries.
unsafe fn blocks(g: &mut Guard, side: Side, n: u32) -> R<(Vec<(usize, usize)>, usize)> {
    if side.counts.is_null() || side.displs.is_null() || side.types.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "a null counts, displacements or types array",
        ));
    }
    // SAFETY: the caller's contract.
    let (c, d, t) = unsafe {
        (
            std::slice::from_raw_parts(side.counts, n as usize),
            std::slice::from_raw_parts(side.displs, n as usize),
            std::slice::from_raw_parts(side.types, n as usize),
        )
    };
    typed_blocks(g.lib()?, c, d, t)
}

/// The `(byte start, byte length)` of blocks of `counts[j]` items of the contiguous
/// type `types[j]` at byte displacement `displs[j]`, and the bytes they span (the
/// `w` collectives' layouts: `int` displacements here, `MPI_Aint` in `neighbor.rs`).
pub(crate) fn typed_blocks<D: Copy + TryInto<usize> + std::fmt::Display>(
    lib: &crate::state::Lib,
    counts: &[c_int],
    displs: &[D],
    types: &[Handle],
) -> R<(Vec<(usize, usize)>, usize)> {
    let mut out = Vec::with_capacity(counts.len());
    let mut span = 0usize;
    for ((&c, &d), &t) in counts.iter().zip(displs).zip(types) {
        let (len, _) = lib.byte_len(c, t)?;
        let start = d
            .try_into()
            .map_err(|_| Fail::new(MPI_ERR_ARG, format!("negative displacement {d}")))?;
        let end = start
            .checked_add(len)
            .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "a block's extent overflows"))?;
        span = span.max(end);
        out.push((start, len));
    }
    Ok((out, span))
}

crate::mpi_fn! {
    /// `MPI_Alltoallw`: every block straight to its rank at once.
    fn MPI_Alltoallw / PMPI_Alltoallw(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtypes: *const Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtypes: *const Handle,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed_v`).
        let send = crate::coll_packed_v::WSide { counts: sendcounts, displs: sdispls, types: sendtypes };
        let recv = crate::coll_packed_v::WSide { counts: recvcounts, displs: rdispls, types: recvtypes };
        if let Some(rc) = crate::coll_packed_v::alltoallw(sendbuf, send, recvbuf, recv, comm, None) {
            return rc;
        }
        if crate::coll_inter::is_inter_comm(comm) {
            // SAFETY: this function's contract; the request is the helper's local.
            return crate::coll_inter::blocking(|q| unsafe {
                PMPI_Ialltoallw(
                    sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                    recvtypes, comm, q,
                )
            });
        }
        call(comm, |g| {
            let c = Coll::start(g, comm)?;
            let recv = Side { counts: recvcounts, displs: rdispls, types: recvtypes };
            // SAFETY: MPI's contract: `n` entries per array on each side.
            let (rblocks, rspan) = unsafe { blocks(g, recv, c.n) }?;
            let copy: Vec<u8>;
            let (sblocks, all) = if sendbuf as usize == IN_PLACE {
                // SAFETY: MPI's contract: `recvbuf` spans every receive block.
                copy = unsafe { bytes(recvbuf.cast_const(), rspan) }?.to_vec();
                (rblocks.clone(), &copy[..])
            } else {
                let send = Side { counts: sendcounts, displs: sdispls, types: sendtypes };
                // SAFETY: as above, for the send side.
                let (b, span) = unsafe { blocks(g, send, c.n) }?;
                // SAFETY: MPI's contract: `sendbuf` spans every send block, unchanged
                // during the call (and not `recvbuf`).
                (b, unsafe { bytes(sendbuf, span) }?)
            };
            let part = |r: u32| {
                let (start, len) = sblocks[r as usize];
                &all[start..start + len]
            };
            own_fits(part(c.me).len(), rblocks[c.me as usize].1)?;
            // SAFETY: MPI's contract: `recvbuf` spans every receive block, the
            // program's alone.
            let out = unsafe { bytes_mut(recvbuf, rspan) }?;
            let mut recvs = disjoint_blocks(out, &rblocks)?;
            if let Some(i) = recvs.iter().position(|(r, _)| *r == c.me) {
                let (_, own) = recvs.swap_remove(i);
                copy_own(own, part(c.me));
            }
            let sends: Vec<(u32, &[u8])> =
                (0..c.n).filter(|&r| r != c.me).map(|r| (r, part(r))).collect();
            c.exchange(g, &sends, &mut recvs)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Ialltoallw`: the schedule of `MPI_Ialltoallv` over these blocks.
    fn MPI_Ialltoallw / PMPI_Ialltoallw(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtypes: *const Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtypes: *const Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed_v`).
        let send = crate::coll_packed_v::WSide { counts: sendcounts, displs: sdispls, types: sendtypes };
        let recv = crate::coll_packed_v::WSide { counts: recvcounts, displs: rdispls, types: recvtypes };
        if let Some(rc) = crate::coll_packed_v::alltoallw(sendbuf, send, recvbuf, recv, comm, Some(request)) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            let send = Side { counts: sendcounts, displs: sdispls, types: sendtypes };
            let recv = Side { counts: recvcounts, displs: rdispls, types: recvtypes };
            if crate::coll_inter::is_inter(g, comm)? {
                // SAFETY: MPI's contract: one entry per remote rank in each array.
                let blocks = |g: &mut Guard, n| unsafe { Ok((blocks(g, send, n)?, blocks(g, recv, n)?)) };
                return crate::nbc_inter::ialltoallw(g, comm, sendbuf, recvbuf, blocks, slot);
            }
            let c = Coll::start(g, comm)?;
            let (me, n) = (c.me, c.n);
            let recv = Side { counts: recvcounts, displs: rdispls, types: recvtypes };
            // SAFETY: MPI's contract: `n` entries per array on each side.
            let (rblocks, rspan) = unsafe { blocks(g, recv, n) }?;
            crate::nbc_v::disjoint(&rblocks)?;
            let out = Span::at(recvbuf.cast(), rspan)?;
            let mut s = Nbc::new(c);
            let (all, sblocks) = if sendbuf as usize == IN_PLACE {
                // SAFETY: MPI's contract: `recvbuf` spans every receive block.
                let copy = unsafe { bytes(recvbuf.cast_const(), rspan) }?;
                (s.scratch(copy.len(), Some(copy)), rblocks.clone())
            } else {
                let send = Side { counts: sendcounts, displs: sdispls, types: sendtypes };
                // SAFETY: as above, for the send side.
                let (b, span) = unsafe { blocks(g, send, n) }?;
                (Span::at(sendbuf.cast_mut().cast(), span)?, b)
            };
            let block = |b: &[(usize, usize)], span: Span, r: u32| span.sub(b[r as usize].0, b[r as usize].1);
            let own = block(&sblocks, all, me);
            own_fits(own.len, rblocks[me as usize].1)?;
            s.steps.push(Step::Copy { from: own, to: out.sub(rblocks[me as usize].0, own.len) });
            let others = || (0..n).filter(move |&r| r != me);
            s.steps.push(Step::Exchange {
                sends: others().map(|r| (r, block(&sblocks, all, r))).collect(),
                recvs: others().map(|r| (r, block(&rblocks, out, r))).collect(),
            });
            s.submit(g, comm, slot)
        })
    }
}
