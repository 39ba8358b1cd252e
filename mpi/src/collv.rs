//! The collectives with per-rank counts and displacements: `MPI_Gatherv`,
//! `MPI_Scatterv`, `MPI_Allgatherv` (every pair at once), `MPI_Alltoallv`. Blocks are
//! `count` items of the type, placed `displ` extents from the buffer's start (contiguous
//! types: extent = size).

use std::ffi::{c_int, c_void};

use crate::coll::{root_arg, Coll};
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
unsafe fn blocks_of(
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

crate::mpi_fn! {
    /// `MPI_Gatherv`.
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
        call(comm, |g| {
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            if c.me != root {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                // SAFETY: MPI's contract: `sendbuf` holds `sendcount` items.
                let data = unsafe { bytes(sendbuf, slen) }?.to_vec();
                c.exchange(g, vec![(root, data)], &[])?;
                return Ok(());
            }
            // SAFETY: MPI's contract: at the root, `n` counts and displacements.
            let (blocks, span) = unsafe { blocks_of(g, recvcounts, displs, c.n, recvtype) }?;
            let mine = if sendbuf as usize == IN_PLACE {
                None
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                // SAFETY: MPI's contract: `sendbuf` holds `sendcount` items.
                Some(unsafe { bytes(sendbuf, slen) }?.to_vec())
            };
            let recvs: Vec<(u32, usize)> =
                (0..c.n).filter(|&r| r != root).map(|r| (r, blocks[r as usize].1)).collect();
            let got = c.exchange(g, vec![], &recvs)?;
            // SAFETY: MPI's contract: `recvbuf` spans every block, the program's alone.
            let out = unsafe { bytes_mut(recvbuf, span) }?;
            for ((r, _), data) in recvs.iter().zip(&got) {
                let (start, len) = blocks[*r as usize];
                out[start..start + len].copy_from_slice(data);
            }
            if let Some(m) = mine {
                let (start, len) = blocks[root as usize];
                let k = m.len().min(len);
                out[start..start + k].copy_from_slice(&m[..k]);
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Scatterv`.
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
        call(comm, |g| {
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let in_place = c.me == root && recvbuf as usize == IN_PLACE;
            let rlen = if in_place { 0 } else { g.lib()?.byte_len(recvcount, recvtype)?.0 };
            if c.me != root {
                let got = c.exchange(g, vec![], &[(root, rlen)])?.remove(0);
                // SAFETY: MPI's contract: `recvbuf` holds `recvcount` items.
                unsafe { bytes_mut(recvbuf, rlen) }?.copy_from_slice(&got);
                return Ok(());
            }
            // SAFETY: MPI's contract: at the root, `n` counts and displacements.
            let (blocks, span) = unsafe { blocks_of(g, sendcounts, displs, c.n, sendtype) }?;
            // SAFETY: MPI's contract: the root's `sendbuf` spans every block.
            let all = unsafe { bytes(sendbuf, span) }?;
            let sends: Vec<(u32, Vec<u8>)> = (0..c.n)
                .filter(|&r| r != root)
                .map(|r| {
                    let (start, len) = blocks[r as usize];
                    (r, all[start..start + len].to_vec())
                })
                .collect();
            let (start, len) = blocks[root as usize];
            let mine = all[start..start + len].to_vec();
            c.exchange(g, sends, &[])?;
            if !in_place {
                // SAFETY: MPI's contract: `recvbuf` holds `recvcount` items.
                let out = unsafe { bytes_mut(recvbuf, rlen) }?;
                let k = mine.len().min(out.len());
                out[..k].copy_from_slice(&mine[..k]);
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Allgatherv`: every rank sends its block to every other at once.
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
        call(comm, |g| {
            let c = Coll::start(g, comm)?;
            // SAFETY: MPI's contract: `n` counts and displacements.
            let (blocks, span) = unsafe { blocks_of(g, recvcounts, displs, c.n, recvtype) }?;
            let me = c.me as usize;
            let mine = if sendbuf as usize == IN_PLACE {
                let (start, len) = blocks[me];
                // SAFETY: MPI's contract: `recvbuf` spans every block.
                unsafe { bytes(recvbuf.cast_const(), span) }?[start..start + len].to_vec()
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                // SAFETY: MPI's contract: `sendbuf` holds `sendcount` items.
                unsafe { bytes(sendbuf, slen) }?.to_vec()
            };
            let others: Vec<u32> = (0..c.n).filter(|&r| r != c.me).collect();
            let sends = others.iter().map(|&r| (r, mine.clone())).collect();
            let recvs: Vec<(u32, usize)> = others.iter().map(|&r| (r, blocks[r as usize].1)).collect();
            let got = c.exchange(g, sends, &recvs)?;
            // SAFETY: MPI's contract: `recvbuf` spans every block, the program's alone.
            let out = unsafe { bytes_mut(recvbuf, span) }?;
            for ((r, _), data) in recvs.iter().zip(&got) {
                let (start, len) = blocks[*r as usize];
                out[start..start + len].copy_from_slice(data);
            }
            let (start, len) = blocks[me];
            let k = mine.len().min(len);
            out[start..start + k].copy_from_slice(&mine[..k]);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Alltoallv`: every pair at once.
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
        call(comm, |g| {
            let c = Coll::start(g, comm)?;
            // SAFETY: MPI's contract: `n` counts and displacements on each side.
            let (rblocks, rspan) = unsafe { blocks_of(g, recvcounts, rdispls, c.n, recvtype) }?;
            let (sblocks, all) = if sendbuf as usize == IN_PLACE {
                // SAFETY: MPI's contract: `recvbuf` spans every receive block.
                (rblocks.clone(), unsafe { bytes(recvbuf.cast_const(), rspan) }?.to_vec())
            } else {
                // SAFETY: as above, for the send side.
                let (b, span) = unsafe { blocks_of(g, sendcounts, sdispls, c.n, sendtype) }?;
                // SAFETY: MPI's contract: `sendbuf` spans every send block.
                (b, unsafe { bytes(sendbuf, span) }?.to_vec())
            };
            let me = c.me as usize;
            let others: Vec<u32> = (0..c.n).filter(|&r| r != c.me).collect();
            let sends = others
                .iter()
                .map(|&r| {
                    let (start, len) = sblocks[r as usize];
                    (r, all[start..start + len].to_vec())
                })
                .collect();
            let recvs: Vec<(u32, usize)> = others.iter().map(|&r| (r, rblocks[r as usize].1)).collect();
            let got = c.exchange(g, sends, &recvs)?;
            // SAFETY: MPI's contract: `recvbuf` spans every receive block.
            let out = unsafe { bytes_mut(recvbuf, rspan) }?;
            for ((r, _), data) in recvs.iter().zip(&got) {
                let (start, len) = rblocks[*r as usize];
                out[start..start + len].copy_from_slice(data);
            }
            let (ss, sl) = sblocks[me];
            let (rs, rl) = rblocks[me];
            let k = sl.min(rl);
            out[rs..rs + k].copy_from_slice(&all[ss..ss + k]);
            Ok(())
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
}
