//! The non-blocking prefix reductions and reduce-scatters on intra-communicators:
//! `MPI_Iscan`, `MPI_Iexscan` (recursive doubling, as the blocking `coll_scan`: in
//! round k each rank sends its partial result k ranks up), `MPI_Ireduce_scatter_block`
//! and `MPI_Ireduce_scatter` (as the blocking ones: a reduction of the whole vector,
//! each rank keeping its block; here to rank 0 and broadcast). Every reduction is in
//! rank order, as a non-commutative operation (the program's) needs: what a scan
//! receives from `me - k` covers the ranks just below its partial result's, so its
//! `Reduce` steps put it on the left (`other_lower`).

use std::ffi::{c_int, c_void};

use crate::coll::Coll;
use crate::consts::*;
use crate::error::{Fail, R};
use crate::nbc::{reduction, reduction_input, request_slot, Nbc, Span, Step};
use crate::state::call;
use crate::util::count_arg;

/// Adds the recursive-doubling rounds of a scan to `s`: `partial` (this rank's input,
/// in scratch) ends as the reduction of ranks 0..=me; `exclusive`, when given, as that
/// of ranks 0..me (untouched at rank 0).
fn scan_rounds(s: &mut Nbc, partial: Span, exclusive: Option<Span>) {
    let (me, n) = (s.rank(), s.size());
    let tmp = s.scratch(partial.len, None);
    let mut first = true;
    let mut k = 1u32;
    while k < n {
        let sends = if me + k < n {
            vec![(me + k, partial)]
        } else {
            Vec::new()
        };
        let recvs = if me >= k {
            vec![(me - k, tmp)]
        } else {
            Vec::new()
        };
        let received = !recvs.is_empty();
        s.steps.push(Step::Exchange { sends, recvs });
        if received {
            if let Some(ex) = exclusive {
                if first {
                    s.steps.push(Step::Copy { from: tmp, to: ex });
                } else {
                    s.steps.push(Step::Reduce {
                        acc: ex,
                        other: tmp,
                        other_lower: true,
                    });
                }
            }
            first = false;
            s.steps.push(Step::Reduce {
                acc: partial,
                other: tmp,
                other_lower: true,
            });
        }
        k = k.saturating_mul(2);
    }
}

/// The arguments of `MPI_Iscan` and `MPI_Iexscan`.
struct ScanArgs {
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
}

/// The shared body of `MPI_Iscan` and `MPI_Iexscan`.
fn iscan(a: ScanArgs, comm: Handle, request: *mut Handle, exclusive: bool) -> c_int {
    let ScanArgs {
        sendbuf,
        recvbuf,
        count,
        datatype,
        op,
    } = a;
    call(comm, |g| {
        // SAFETY: MPI's contract: `request` is valid for a write.
        let slot = unsafe { request_slot(request) }?;
        let (len, t) = g.lib()?.byte_len(count, datatype)?;
        let red = reduction(g.lib()?, op, datatype, &t)?;
        let c = Coll::start(g, comm)?;
        let mut s = Nbc::new(c);
        s.reduction = Some(red);
        let partial = reduction_input(&mut s, sendbuf, recvbuf, len)?;
        let out = Span::at(recvbuf.cast(), len)?;
        if exclusive {
            scan_rounds(&mut s, partial, Some(out));
        } else {
            scan_rounds(&mut s, partial, None);
            s.steps.push(Step::Copy {
                from: partial,
                to: out,
            });
        }
        s.submit(g, comm, slot)
    })
}

crate::mpi_fn! {
    /// `MPI_Iscan`: the inclusive prefix reduction (`MPI_IN_PLACE` allowed).
    fn MPI_Iscan / PMPI_Iscan(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::Scan, sendbuf, recvbuf, count, datatype, op, comm, Some(request),
        ) {
            return rc;
        }
        iscan(ScanArgs { sendbuf, recvbuf, count, datatype, op }, comm, request, false)
    }
}

crate::mpi_fn! {
    /// `MPI_Iexscan`: the exclusive prefix reduction; rank 0's `recvbuf` is left as it
    /// is (`MPI_IN_PLACE` allowed).
    fn MPI_Iexscan / PMPI_Iexscan(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::Exscan, sendbuf, recvbuf, count, datatype, op, comm, Some(request),
        ) {
            return rc;
        }
        iscan(ScanArgs { sendbuf, recvbuf, count, datatype, op }, comm, request, true)
    }
}

/// The shared body of the reduce-scatters: `blocks` are the `(start, len)` bytes of
/// each rank's block in the whole vector of `total` bytes.
fn ireduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    blocks: impl FnOnce(&Coll, usize) -> R<(Vec<(usize, usize)>, usize)>,
    datatype: Handle,
    op: Handle,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    call(comm, |g| {
        // SAFETY: MPI's contract: `request` is valid for a write.
        let slot = unsafe { request_slot(request) }?;
        if crate::coll_inter::is_inter(g, comm)? {
            return crate::nbc_inter::ireduce_scatter(
                g, comm, sendbuf, recvbuf, blocks, datatype, op, slot,
            );
        }
        let t = g.lib()?.datatype(datatype)?;
        let red = reduction(g.lib()?, op, datatype, &t)?;
        let c = Coll::start(g, comm)?;
        let (blocks, total) = blocks(&c, t.size)?;
        let me = c.me as usize;
        let mut s = Nbc::new(c);
        s.reduction = Some(red);
        // With MPI_IN_PLACE the whole vector is in `recvbuf`.
        let acc = reduction_input(&mut s, sendbuf, recvbuf, total)?;
        s.reduce_to_zero(acc);
        s.bcast(acc, 0);
        let (start, len) = blocks[me];
        let out = Span::at(recvbuf.cast(), len)?;
        s.steps.push(Step::Copy {
            from: acc.sub(start, len),
            to: out,
        });
        s.submit(g, comm, slot)
    })
}

crate::mpi_fn! {
    /// `MPI_Ireduce_scatter_block`: block `i` of the reduction to rank `i`.
    fn MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcount: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::ScatterBlock { recvcount }, sendbuf, recvbuf, recvcount, datatype, op, comm, Some(request),
        ) {
            return rc;
        }
        let blocks = |c: &Coll, size: usize| -> R<(Vec<(usize, usize)>, usize)> {
            let len = count_arg(recvcount)?
                .checked_mul(size)
                .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "the block's size overflows"))?;
            let n = c.n as usize;
            let total = len.checked_mul(n).ok_or_else(|| Fail::new(MPI_ERR_COUNT, "the vector's size overflows"))?;
            Ok(((0..n).map(|i| (i * len, len)).collect(), total))
        };
        ireduce_scatter(sendbuf, recvbuf, blocks, datatype, op, comm, request)
    }
}

crate::mpi_fn! {
    /// `MPI_Ireduce_scatter`: rank `i` gets `recvcounts[i]` items of the reduction,
    /// the blocks in rank order.
    fn MPI_Ireduce_scatter / PMPI_Ireduce_scatter(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::Scatter { recvcounts }, sendbuf, recvbuf, 0, datatype, op, comm, Some(request),
        ) {
            return rc;
        }
        let blocks = |c: &Coll, size: usize| -> R<(Vec<(usize, usize)>, usize)> {
            if recvcounts.is_null() {
                return Err(Fail::new(MPI_ERR_ARG, "a null recvcounts array"));
            }
            // SAFETY: MPI's contract: `recvcounts` holds one count per rank.
            let counts = unsafe { std::slice::from_raw_parts(recvcounts, c.n as usize) };
            let mut out = Vec::with_capacity(counts.len());
            let mut at = 0usize;
            for &k in counts {
                let len = count_arg(k)?
                    .checked_mul(size)
                    .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "a block's size overflows"))?;
                out.push((at, len));
                at = at.checked_add(len).ok_or_else(|| Fail::new(MPI_ERR_COUNT, "the vector's size overflows"))?;
            }
            Ok((out, at))
        };
        ireduce_scatter(sendbuf, recvbuf, blocks, datatype, op, comm, request)
    }
}
