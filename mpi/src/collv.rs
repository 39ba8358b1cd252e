//! The collectives with per-rank counts and displacements: `MPI_Gatherv`,
//! `MPI_Scatterv`, `MPI_Allgatherv` (every pair at once), `MPI_Alltoallv`. Blocks are
//! `count` items of the type, placed `displ` extents from the buffer's start (contiguous
//! types: extent = size). On an inter-communicator each hands the call to `coll_inter`.

use std::ffi::{c_int, c_void};

use crate::coll::{root_arg, Coll};
use crate::coll_inter::{self, is_inter, RecvArg, RecvVArg, SendArg, SendVArg};
use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::{call, Guard};
use crate::util::{bytes, bytes_mut, count_arg};

/// An `int` array argument of `n` entries.
///
/// # Safety
/// `p` is valid for reads of `n` ints.
unsafe fn ints<'a>(p: *const c_int, n: u32, what: &str) -> R<&'a [c_int]> {
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("a null {what} array")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

/// The byte ranges of `n` blocks given counts and displacements of a type of `size`
/// bytes; the length of the buffer they span.
fn layout(counts: &[c_int], displs: &[c_int], size: usize) -> R<(Vec<(usize, usize)>, usize)> {
    let mut blocks = Vec::with_capacity(counts.len());
    let mut span = 0usize;
    for (&c, &d) in counts.iter().zip(displs) {
        let c = count_arg(c)?;
        let d = usize::try_from(d)
            .map_err(|_| Fail::new(MPI_ERR_ARG, format!("negative displacement {d}")))?;
        let overflow = || Fail::new(MPI_ERR_COUNT, "a block's extent overflows");
        let start = d.checked_mul(size).ok_or_else(overflow)?;
        let len = c.checked_mul(size).ok_or_else(overflow)?;
        span = span.max(start.checked_add(len).ok_or_else(overflow)?);
        blocks.push((start, len));
    }
    Ok((blocks, span))
}

/// Counts and displacements of a `v` argument, laid out over a type.
///
/// # Safety
/// `counts` and `displs` hold `n` ints.
pub(crate) unsafe fn blocks_of(
    g: &mut Guard,
    counts: *const c_int,
    displs: *const c_int,
    n: u32,
    dt: Handle,
) -> R<(Vec<(usize, usize)>, usize)> {
    let size = g.lib()?.datatype(dt)?.size;
    // SAFETY: the caller's contract.
    let (c, d) = unsafe {
        (
            ints(counts, n, "counts")?,
            ints(displs, n, "displacements")?,
        )
    };
    layout(c, d, size)
}

/// `buf` cut into the receive blocks `blocks` (byte start and length per rank), each
/// with its rank, ordered by start. MPI forbids a receive layout that writes a byte
/// twice: overlapping blocks are `MPI_ERR_ARG` (empty blocks may sit anywhere).
pub(crate) fn disjoint_blocks<'a>(
    buf: &'a mut [u8],
    blocks: &[(usize, usize)],
) -> R<Vec<(u32, &'a mut [u8])>> {
    let mut order: Vec<u32> = (0..blocks.len() as u32).collect();
    order.sort_unstable_by_key(|&r| blocks[r as usize].0);
    let mut out = Vec::with_capacity(blocks.len());
    let mut rest = buf;
    let mut offset = 0usize;
    for r in order {
        let (start, len) = blocks[r as usize];
        if len == 0 {
            out.push((r, <&mut [u8]>::default()));
            continue;
        }
        let skip = start.checked_sub(offset).ok_or_else(|| {
            Fail::new(
                MPI_ERR_ARG,
                format!("receive block of rank {r} overlaps another (MPI writes a byte once)"),
            )
        })?;
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(skip);
        let (block, tail) = tail.split_at_mut(len);
        out.push((r, block));
        rest = tail;
        offset = start + len;
    }
    Ok(out)
}

/// The root's or a rank's own block copied into its place (at most its length).
pub(crate) fn copy_own(dst: &mut [u8], src: &[u8]) {
    let k = src.len().min(dst.len());
    dst[..k].copy_from_slice(&src[..k]);
}

crate::mpi_fn! {
    /// `MPI_Gatherv`: every block straight into its place at the root.
    fn MPI_Gatherv / PMPI_Gatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed_v`).
        if let Some(rc) = crate::coll_packed_v::gatherv(
            sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, None,
        ) {
            return rc;
        }
        call(comm, |g| {
            if is_inter(g, comm)? {
                let send = SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = RecvVArg { ptr: recvbuf, counts: recvcounts, displs, dt: recvtype };
                // SAFETY: this function's contract: MPI's rules for its arguments.
                return unsafe { coll_inter::gatherv(g, comm, send, recv, root) };
            }
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let in_place = c.me == root && sendbuf as usize == IN_PLACE;
            let mine = if in_place {
                &[][..]
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                // SAFETY: MPI's contract: `sendbuf` holds `sendcount` items, unchanged
                // during the call.
                unsafe { bytes(sendbuf, slen) }?
            };
            if c.me != root {
                return c.exchange(g, &[(root, mine)], &mut []);
            }
            // SAFETY: MPI's contract: at the root, `n` counts and displacements.
            let (blocks, span) = unsafe { blocks_of(g, recvcounts, displs, c.n, recvtype) }?;
            // SAFETY: MPI's contract: `recvbuf` spans every block, the program's alone
            // (and not `sendbuf`).
            let out = unsafe { bytes_mut(recvbuf, span) }?;
            let mut recvs = disjoint_blocks(out, &blocks)?;
            if let Some(i) = recvs.iter().position(|(r, _)| *r == root) {
                let (_, own) = recvs.swap_remove(i);
                if !in_place {
                    copy_own(own, mine);
                }
            }
            c.exchange(g, &[], &mut recvs)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Scatterv`: every block straight from its place at the root.
    fn MPI_Scatterv / PMPI_Scatterv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        displs: *const c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed_v`).
        if let Some(rc) = crate::coll_packed_v::scatterv(
            sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, None,
        ) {
            return rc;
        }
        call(comm, |g| {
            if is_inter(g, comm)? {
                let send = SendVArg { ptr: sendbuf, counts: sendcounts, displs, dt: sendtype };
                let recv = RecvArg { ptr: recvbuf, count: recvcount, dt: recvtype };
                // SAFETY: this function's contract: MPI's rules for its arguments.
                return unsafe { coll_inter::scatterv(g, comm, send, recv, root) };
            }
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let in_place = c.me == root && recvbuf as usize == IN_PLACE;
            let rlen = if in_place { 0 } else { g.lib()?.byte_len(recvcount, recvtype)?.0 };
            // SAFETY: MPI's contract: `recvbuf` holds `recvcount` items, the program's
            // alone (and not the root's `sendbuf`).
            let out = unsafe { bytes_mut(recvbuf, rlen) }?;
            if c.me != root {
                return c.exchange(g, &[], &mut [(root, out)]);
            }
            // SAFETY: MPI's contract: at the root, `n` counts and displacements.
            let (blocks, span) = unsafe { blocks_of(g, sendcounts, displs, c.n, sendtype) }?;
            // SAFETY: MPI's contract: the root's `sendbuf` spans every block, unchanged
            // during the call.
            let all = unsafe { bytes(sendbuf, span) }?;
            let part = |r: u32| {
                let (start, len) = blocks[r as usize];
                &all[start..start + len]
            };
            let sends: Vec<(u32, &[u8])> =
                (0..c.n).filter(|&r| r != root).map(|r| (r, part(r))).collect();
            if !in_place {
                copy_own(out, part(root));
            }
            c.exchange(g, &sends, &mut [])
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Allgatherv`: every rank sends its block to every other at once, each
    /// received straight into its place.
    fn MPI_Allgatherv / PMPI_Allgatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: Handle,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed_v`).
        if let Some(rc) = crate::coll_packed_v::allgatherv(
            sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, None,
        ) {
            return rc;
        }
        call(comm, |g| {
            if is_inter(g, comm)? {
                let send = SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = RecvVArg { ptr: recvbuf, counts: recvcounts, displs, dt: recvtype };
                // SAFETY: this function's contract: MPI's rules for its arguments.
                return unsafe { coll_inter::allgatherv(g, comm, send, recv) };
            }
            let c = Coll::start(g, comm)?;
            // SAFETY: MPI's contract: `n` counts and displacements.
            let (blocks, span) = unsafe { blocks_of(g, recvcounts, displs, c.n, recvtype) }?;
            let in_place = sendbuf as usize == IN_PLACE;
            let sent = if in_place {
                &[][..]
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                // SAFETY: MPI's contract: `sendbuf` holds `sendcount` items, unchanged
                // during the call.
                unsafe { bytes(sendbuf, slen) }?
            };
            // SAFETY: MPI's contract: `recvbuf` spans every block, the program's alone
            // (and not `sendbuf`).
            let out = unsafe { bytes_mut(recvbuf, span) }?;
            let mut recvs = disjoint_blocks(out, &blocks)?;
            let i = recvs
                .iter()
                .position(|(r, _)| *r == c.me)
                .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "no block of this rank"))?;
            let (_, own) = recvs.swap_remove(i);
            // In place, this rank's block is already in `recvbuf`: sent from there.
            let mine: &[u8] = if in_place {
                own
            } else {
                copy_own(own, sent);
                sent
            };
            let sends: Vec<(u32, &[u8])> =
                (0..c.n).filter(|&r| r != c.me).map(|r| (r, mine)).collect();
            c.exchange(g, &sends, &mut recvs)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Alltoallv`: every pair at once, straight from `sendbuf` into `recvbuf`
    /// (`MPI_IN_PLACE`: from a copy of `recvbuf`).
    fn MPI_Alltoallv / PMPI_Alltoallv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtype: Handle,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed_v`).
        if let Some(rc) = crate::coll_packed_v::alltoallv(
            sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, None,
        ) {
            return rc;
        }
        call(comm, |g| {
            if is_inter(g, comm)? {
                let send = SendVArg { ptr: sendbuf, counts: sendcounts, displs: sdispls, dt: sendtype };
                let recv = RecvVArg { ptr: recvbuf, counts: recvcounts, displs: rdispls, dt: recvtype };
                // SAFETY: this function's contract: MPI's rules for its arguments.
                return unsafe { coll_inter::alltoallv(g, comm, send, recv) };
            }
            let c = Coll::start(g, comm)?;
            // SAFETY: MPI's contract: `n` counts and displacements on each side.
            let (rblocks, rspan) = unsafe { blocks_of(g, recvcounts, rdispls, c.n, recvtype) }?;
            let copy: Vec<u8>;
            let (sblocks, all) = if sendbuf as usize == IN_PLACE {
                // SAFETY: MPI's contract: `recvbuf` spans every receive block.
                copy = unsafe { bytes(recvbuf.cast_const(), rspan) }?.to_vec();
                (rblocks.clone(), &copy[..])
            } else {
                // SAFETY: as above, for the send side.
                let (b, span) = unsafe { blocks_of(g, sendcounts, sdispls, c.n, sendtype) }?;
                // SAFETY: MPI's contract: `sendbuf` spans every send block, unchanged
                // during the call (and not `recvbuf`).
                (b, unsafe { bytes(sendbuf, span) }?)
            };
            let part = |r: u32| {
                let (start, len) = sblocks[r as usize];
                &all[start..start + len]
            };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_spans_the_furthest_block_and_refuses_negative_values() {
        let (b, span) = layout(&[2, 0, 1], &[3, 0, 0], 4).unwrap();
        assert_eq!(b, vec![(12, 8), (0, 0), (0, 4)]);
        assert_eq!(span, 20);
        assert_eq!(layout(&[-1], &[0], 4).unwrap_err().class, MPI_ERR_COUNT);
        assert_eq!(layout(&[1], &[-2], 4).unwrap_err().class, MPI_ERR_ARG);
    }

    #[test]
    fn receive_blocks_are_cut_in_any_order_and_overlaps_refused() {
        let mut buf = [0u8; 10];
        // Rank 0 at 6..10, rank 1 empty at 0, rank 2 at 0..4.
        let parts = disjoint_blocks(&mut buf, &[(6, 4), (0, 0), (0, 4)]).unwrap();
        let got: Vec<(u32, usize)> = parts.iter().map(|(r, b)| (*r, b.len())).collect();
        assert_eq!(got, vec![(1, 0), (2, 4), (0, 4)]);
        for (r, b) in parts {
            b.fill(r as u8 + 1);
        }
        assert_eq!(buf, [3, 3, 3, 3, 0, 0, 1, 1, 1, 1]);
        let mut buf = [0u8; 8];
        let err = disjoint_blocks(&mut buf, &[(0, 4), (3, 2)]).unwrap_err();
        assert_eq!(err.class, MPI_ERR_ARG);
    }
}
