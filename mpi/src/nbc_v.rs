//! The non-blocking collectives with per-rank counts and displacements on
//! intra-communicators: `MPI_Igatherv`, `MPI_Iscatterv`, `MPI_Iallgatherv`,
//! `MPI_Ialltoallv`, as schedules of `nbc` (a copy of the own block, then every send
//! and receive at once), laid out as `collv` lays out the blocking ones (blocks of
//! `count` items `displ` extents from the buffer's start; contiguous types).

use std::ffi::{c_int, c_void};

use crate::coll::{root_arg, Coll};
use crate::collv::blocks_of;
use crate::consts::*;
use crate::error::{Fail, R};
use crate::nbc::{own_fits, request_slot, Nbc, Span, Step};
use crate::state::call;
use crate::util::bytes;

/// Checks that receive blocks `(start, len)` never write a byte twice (MPI forbids it;
/// empty blocks may sit anywhere).
pub(crate) fn disjoint(blocks: &[(usize, usize)]) -> R<()> {
    let mut order: Vec<usize> = (0..blocks.len()).filter(|&r| blocks[r].1 > 0).collect();
    order.sort_unstable_by_key(|&r| blocks[r].0);
    for w in order.windows(2) {
        let (a, b) = (blocks[w[0]], blocks[w[1]]);
        if a.0 + a.1 > b.0 {
            return Err(Fail::new(
                MPI_ERR_ARG,
                format!(
                    "receive block of rank {} overlaps another (MPI writes a byte once)",
                    w[1]
                ),
            ));
        }
    }
    Ok(())
}

/// The program's send buffer of `count` items (`MPI_IN_PLACE` not allowed here).
fn send_span(g: &mut crate::state::Guard, buf: *const c_void, count: c_int, dt: Handle) -> R<Span> {
    let (len, _) = g.lib()?.byte_len(count, dt)?;
    Span::at(buf.cast_mut().cast(), len)
}

crate::mpi_fn! {
    /// `MPI_Igatherv`: every block straight into its place at the root.
    fn MPI_Igatherv / PMPI_Igatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed_v`).
        if let Some(rc) = crate::coll_packed_v::gatherv(
            sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, Some(request),
        ) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            if crate::coll_inter::is_inter(g, comm)? {
                let send = crate::coll_inter::SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = crate::coll_inter::RecvVArg { ptr: recvbuf, counts: recvcounts, displs, dt: recvtype };
                // SAFETY: MPI's contract: the counts and displacements hold one int per
                // remote rank where significant.
                return unsafe { crate::nbc_inter::igatherv(g, comm, send, recv, root, slot) };
            }
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let (me, n) = (c.me, c.n);
            let in_place = me == root && sendbuf as usize == IN_PLACE;
            let mine = if in_place { None } else { Some(send_span(g, sendbuf, sendcount, sendtype)?) };
            if me != root {
                let mut s = Nbc::new(c);
                let mine = mine.unwrap_or(Span::at(std::ptr::null_mut(), 0)?);
                s.steps.push(Step::Exchange { sends: vec![(root, mine)], recvs: Vec::new() });
                return s.submit(g, comm, slot);
            }
            // SAFETY: MPI's contract: at the root, `n` counts and displacements.
            let (blocks, span) = unsafe { blocks_of(g, recvcounts, displs, n, recvtype) }?;
            disjoint(&blocks)?;
            let out = Span::at(recvbuf.cast(), span)?;
            let mut s = Nbc::new(c);
            if let Some(mine) = mine {
                let (start, len) = blocks[root as usize];
                own_fits(mine.len, len)?;
                s.steps.push(Step::Copy { from: mine, to: out.sub(start, mine.len) });
            }
            let recvs = (0..n)
                .filter(|&r| r != root)
                .map(|r| (r, out.sub(blocks[r as usize].0, blocks[r as usize].1)))
                .collect();
            s.steps.push(Step::Exchange { sends: Vec::new(), recvs });
            s.submit(g, comm, slot)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Iscatterv`: every block straight from the root's buffer.
    fn MPI_Iscatterv / PMPI_Iscatterv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        displs: *const c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed_v`).
        if let Some(rc) = crate::coll_packed_v::scatterv(
            sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, Some(request),
        ) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            if crate::coll_inter::is_inter(g, comm)? {
                let send = crate::coll_inter::SendVArg { ptr: sendbuf, counts: sendcounts, displs, dt: sendtype };
                let recv = crate::coll_inter::RecvArg { ptr: recvbuf, count: recvcount, dt: recvtype };
                // SAFETY: MPI's contract: the counts and displacements hold one int per
                // remote rank where significant.
                return unsafe { crate::nbc_inter::iscatterv(g, comm, send, recv, root, slot) };
            }
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let (me, n) = (c.me, c.n);
            let out = crate::nbc::scatter_out(g, me == root, recvbuf, recvcount, recvtype)?;
            if me != root {
                let mut s = Nbc::new(c);
                let out = out.unwrap_or(Span::at(std::ptr::null_mut(), 0)?);
                s.steps.push(Step::Exchange { sends: Vec::new(), recvs: vec![(root, out)] });
                return s.submit(g, comm, slot);
            }
            // SAFETY: MPI's contract: at the root, `n` counts and displacements.
            let (blocks, span) = unsafe { blocks_of(g, sendcounts, displs, n, sendtype) }?;
            let all = Span::at(sendbuf.cast_mut().cast(), span)?;
            let mut s = Nbc::new(c);
            if let Some(out) = out {
                let (start, len) = blocks[root as usize];
                own_fits(len, out.len)?;
                s.steps.push(Step::Copy { from: all.sub(start, len), to: out.sub(0, len) });
            }
            let sends = (0..n)
                .filter(|&r| r != root)
                .map(|r| (r, all.sub(blocks[r as usize].0, blocks[r as usize].1)))
                .collect();
            s.steps.push(Step::Exchange { sends, recvs: Vec::new() });
            s.submit(g, comm, slot)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Iallgatherv`: every rank's block to every other at once.
    fn MPI_Iallgatherv / PMPI_Iallgatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed_v`).
        if let Some(rc) = crate::coll_packed_v::allgatherv(
            sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, Some(request),
        ) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            if crate::coll_inter::is_inter(g, comm)? {
                let send = crate::coll_inter::SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = crate::coll_inter::RecvVArg { ptr: recvbuf, counts: recvcounts, displs, dt: recvtype };
                // SAFETY: MPI's contract: the counts and displacements hold one int per
                // remote rank where significant.
                return unsafe { crate::nbc_inter::iallgatherv(g, comm, send, recv, slot) };
            }
            let c = Coll::start(g, comm)?;
            let (me, n) = (c.me, c.n);
            // SAFETY: MPI's contract: `n` counts and displacements at every rank.
            let (blocks, span) = unsafe { blocks_of(g, recvcounts, displs, n, recvtype) }?;
            disjoint(&blocks)?;
            let out = Span::at(recvbuf.cast(), span)?;
            let (start, len) = blocks[me as usize];
            let mut s = Nbc::new(c);
            let mine = if sendbuf as usize == IN_PLACE {
                out.sub(start, len)
            } else {
                let mine = send_span(g, sendbuf, sendcount, sendtype)?;
                own_fits(mine.len, len)?;
                s.steps.push(Step::Copy { from: mine, to: out.sub(start, mine.len) });
                mine
            };
            let others = || (0..n).filter(move |&r| r != me);
            s.steps.push(Step::Exchange {
                sends: others().map(|r| (r, mine)).collect(),
                recvs: others().map(|r| (r, out.sub(blocks[r as usize].0, blocks[r as usize].1))).collect(),
            });
            s.submit(g, comm, slot)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Ialltoallv`: every block straight to its rank at once (`MPI_IN_PLACE`: sent
    /// from a copy of `recvbuf` taken at the call, laid out as the receive blocks).
    fn MPI_Ialltoallv / PMPI_Ialltoallv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtype: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed_v`).
        if let Some(rc) = crate::coll_packed_v::alltoallv(
            sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, Some(request),
        ) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            if crate::coll_inter::is_inter(g, comm)? {
                let send = crate::coll_inter::SendVArg { ptr: sendbuf, counts: sendcounts, displs: sdispls, dt: sendtype };
                let recv = crate::coll_inter::RecvVArg { ptr: recvbuf, counts: recvcounts, displs: rdispls, dt: recvtype };
                // SAFETY: MPI's contract: the counts and displacements hold one int per
                // remote rank where significant.
                return unsafe { crate::nbc_inter::ialltoallv(g, comm, send, recv, slot) };
            }
            let c = Coll::start(g, comm)?;
            let (me, n) = (c.me, c.n);
            // SAFETY: MPI's contract: `n` receive counts and displacements.
            let (rblocks, rspan) = unsafe { blocks_of(g, recvcounts, rdispls, n, recvtype) }?;
            disjoint(&rblocks)?;
            let out = Span::at(recvbuf.cast(), rspan)?;
            let mut s = Nbc::new(c);
            let (all, sblocks) = if sendbuf as usize == IN_PLACE {
                // SAFETY: MPI's contract: `recvbuf` spans every receive block.
                let copy = unsafe { bytes(recvbuf.cast_const(), rspan) }?;
                (s.scratch(copy.len(), Some(copy)), rblocks.clone())
            } else {
                // SAFETY: MPI's contract: `n` send counts and displacements.
                let (sblocks, sspan) = unsafe { blocks_of(g, sendcounts, sdispls, n, sendtype) }?;
                (Span::at(sendbuf.cast_mut().cast(), sspan)?, sblocks)
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
