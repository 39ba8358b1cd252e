//! `MPI_Neighbor_allgather`, `MPI_Neighbor_alltoall`, their `v` forms,
//! `MPI_Neighbor_alltoallw` (each block packed by its own type) and their
//! non-blocking forms (and so their persistent ones, which start those) with a type
//! with gaps on either side: the send buffer is packed into contiguous bytes (one
//! block, or one per out-neighbor; a `v` block of `counts[j]` items at `displs[j]`
//! extents, as `coll_packed_v` packs), the exchange runs on `MPI_BYTE` blocks, and what
//! was received is
//! unpacked into the program's buffer when the call is over, or when a completion
//! call completes the request (`nbc_packed::end`). The receive bytes start as a packed
//! copy of the receive buffer, so a block from `MPI_PROC_NULL` (off a non-periodic
//! edge of a grid) unpacks back to what was there: MPI leaves it untouched.

use std::ffi::{c_int, c_void};

use crate::coll_packed::{look_gapped, maybe_gapped, Gapped};
use crate::consts::*;
use crate::nbc_packed::end;
use crate::typemap::{pack, Unpack};

/// `MPI_BYTE`.
const BYTE: Handle = 0x247;

/// Which exchange.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// One send block for every out-neighbor.
    Allgather,
    /// One send block per out-neighbor.
    Alltoall,
}

/// The arguments of one call: `(buffer, count, type)` per side.
pub(crate) struct Args {
    pub send: (*const c_void, c_int, Handle),
    pub recv: (*mut c_void, c_int, Handle),
    pub comm: Handle,
}

/// `items` items of `g` packed from `from`, and the bytes of one block of `count`.
fn packed(
    g: &Gapped,
    from: *const c_void,
    items: usize,
    count: usize,
) -> Option<(Box<[u8]>, c_int)> {
    let mut b = vec![0u8; g.size.checked_mul(items)?].into_boxed_slice();
    // SAFETY: MPI's contract for the call's buffer: `items` items of the type at
    // `from`, readable.
    unsafe { pack(&g.layout, from.cast(), items, &mut b) };
    Some((b, c_int::try_from(g.size.checked_mul(count)?).ok()?))
}

/// The call `kind` (blocking when `request` is `None`) when a side's type has gaps;
/// `None`: the entry point's own path (no gaps, or an error it reports).
pub(crate) fn exchange(kind: Kind, a: Args, request: Option<*mut Handle>) -> Option<c_int> {
    let (sbuf, scount, stype) = a.send;
    let (rbuf, rcount, rtype) = a.recv;
    if !maybe_gapped(stype) && !maybe_gapped(rtype) {
        return None;
    }
    let (sgap, ..) = look_gapped(stype, a.comm)?;
    let (rgap, ..) = look_gapped(rtype, a.comm)?;
    if sgap.is_none() && rgap.is_none() {
        return None;
    }
    let (indeg, outdeg) = crate::neighbor::degrees(a.comm)?;
    let (sc, rc) = (usize::try_from(scount).ok()?, usize::try_from(rcount).ok()?);
    let blocks = if kind == Kind::Alltoall { outdeg } else { 1 };
    let (keep, send) = match &sgap {
        Some(g) => {
            let (b, n) = packed(g, sbuf, sc.checked_mul(blocks)?, sc)?;
            let p = b.as_ptr().cast::<c_void>();
            (Some(b), (p, n, BYTE))
        }
        None => (None, a.send),
    };
    let (unpack, recv) = match rgap {
        Some(g) => {
            let items = rc.checked_mul(indeg)?;
            // What is there now, so that a block nobody sends unpacks unchanged.
            let (mut temp, n) = packed(&g, rbuf, items, rc)?;
            let p = temp.as_mut_ptr().cast::<c_void>();
            let u = Unpack {
                layout: g.layout,
                base: rbuf.cast(),
                count: items,
                temp,
            };
            (Some(u), (p, n, BYTE))
        }
        None => (None, a.recv),
    };
    let ((sp, sn, st), (rp, rn, rt)) = (send, recv);
    // SAFETY: the packed bytes (moved into `keep` and `unpack`, their heap bytes
    // unmoved) live until the call returns, or in the request until it completes.
    let code = unsafe {
        use crate::neighbor::*;
        match (kind, request) {
            (Kind::Allgather, None) => PMPI_Neighbor_allgather(sp, sn, st, rp, rn, rt, a.comm),
            (Kind::Allgather, Some(q)) => {
                PMPI_Ineighbor_allgather(sp, sn, st, rp, rn, rt, a.comm, q)
            }
            (Kind::Alltoall, None) => PMPI_Neighbor_alltoall(sp, sn, st, rp, rn, rt, a.comm),
            (Kind::Alltoall, Some(q)) => PMPI_Ineighbor_alltoall(sp, sn, st, rp, rn, rt, a.comm, q),
        }
    };
    Some(end(code, a.comm, request, keep, unpack))
}

/// The arguments of a `v` call: per side the buffer, the counts and displacements
/// (`None` for an allgatherv's send side: one block of `count` items) and the type.
pub(crate) struct VArgs {
    pub send: (*const c_void, VCounts, Handle),
    pub recv: (*mut c_void, VCounts, Handle),
    pub comm: Handle,
}

/// A side's counts: one block of `count` items, or `counts`/`displs` arrays.
#[derive(Clone, Copy)]
pub(crate) enum VCounts {
    One(c_int),
    Many(*const c_int, *const c_int),
}

/// A side of a `v` call as the `MPI_BYTE` call takes it: packed blocks, or the
/// program's own arguments.
enum VSide {
    Packed(crate::coll_packed_v::Packed),
    Own,
}

/// `MPI_Neighbor_allgatherv` (`kind` `Allgather`) or `MPI_Neighbor_alltoallv`, blocking
/// when `request` is `None`, when a side's type has gaps; `None`: the entry point's own
/// path.
pub(crate) fn exchange_v(kind: Kind, a: VArgs, request: Option<*mut Handle>) -> Option<c_int> {
    use crate::coll_packed_v::{blocks, ints, Recv};
    let (sbuf, scounts, stype) = a.send;
    let (rbuf, rcounts, rtype) = a.recv;
    if !maybe_gapped(stype) && !maybe_gapped(rtype) {
        return None;
    }
    let (sgap, ..) = look_gapped(stype, a.comm)?;
    let (rgap, ..) = look_gapped(rtype, a.comm)?;
    if sgap.is_none() && rgap.is_none() {
        return None;
    }
    let (indeg, outdeg) = crate::neighbor::degrees(a.comm)?;
    let side = |c: VCounts, n: usize| -> Option<(Vec<c_int>, Vec<c_int>)> {
        match c {
            VCounts::One(k) => Some((vec![k], vec![0])),
            VCounts::Many(..) if n == 0 => Some((Vec::new(), Vec::new())),
            // SAFETY: MPI's contract: the arrays hold one entry per neighbor.
            VCounts::Many(cs, ds) => unsafe {
                Some((ints(cs, n)?.to_vec(), ints(ds, n)?.to_vec()))
            },
        }
    };
    let send = match &sgap {
        Some(g) => {
            let (c, d) = side(scounts, outdeg)?;
            // SAFETY: MPI's contract: every send block is readable.
            VSide::Packed(unsafe { blocks(g, &c, &d, sbuf, |_| true) }?)
        }
        None => VSide::Own,
    };
    let (rc, rd) = side(rcounts, indeg)?;
    let recv = match rgap {
        Some(gap) => {
            // What is there now, so that a block nobody sends unpacks unchanged.
            // SAFETY: MPI's contract: every receive block is valid (for writes, and so
            // for reads of what it holds).
            let p = unsafe { blocks(&gap, &rc, &rd, rbuf, |_| true) }?;
            Some(Recv {
                p,
                counts: &rc,
                displs: &rd,
                gap,
            })
        }
        None => None,
    };
    let own = |c: VCounts| match c {
        VCounts::One(k) => (k, std::ptr::null(), std::ptr::null()),
        VCounts::Many(cs, ds) => (0, cs, ds),
    };
    let (sp, (sk, sc, sd), st) = match &send {
        VSide::Packed(p) => (
            p.ptr().cast_const(),
            (p.counts[0], p.counts.as_ptr(), p.displs.as_ptr()),
            BYTE,
        ),
        VSide::Own => (sbuf, own(scounts), stype),
    };
    let (rp, rcp, rdp, rt) = match &recv {
        Some(r) => (r.p.ptr(), r.p.counts.as_ptr(), r.p.displs.as_ptr(), BYTE),
        None => (rbuf, rc.as_ptr(), rd.as_ptr(), rtype),
    };
    // SAFETY: the packed bytes (moved into the kept send bytes and the unpacking,
    // their heap bytes unmoved) live until the call returns, or in the request until
    // it completes; the arrays until the call returns (the call copies them).
    let code = unsafe {
        use crate::neighbor::*;
        match (kind, request) {
            (Kind::Allgather, None) => {
                PMPI_Neighbor_allgatherv(sp, sk, st, rp, rcp, rdp, rt, a.comm)
            }
            (Kind::Allgather, Some(q)) => {
                PMPI_Ineighbor_allgatherv(sp, sk, st, rp, rcp, rdp, rt, a.comm, q)
            }
            (Kind::Alltoall, None) => {
                PMPI_Neighbor_alltoallv(sp, sc, sd, st, rp, rcp, rdp, rt, a.comm)
            }
            (Kind::Alltoall, Some(q)) => {
                PMPI_Ineighbor_alltoallv(sp, sc, sd, st, rp, rcp, rdp, rt, a.comm, q)
            }
        }
    };
    let keep = match send {
        VSide::Packed(p) => Some(p.bytes),
        VSide::Own => None,
    };
    Some(end(
        code,
        a.comm,
        request,
        keep,
        recv.map(|r| r.into_unpack(rbuf)),
    ))
}

/// One side of a `w` call: the buffer, and per neighbor a count, a byte displacement
/// and a type.
pub(crate) type WSide<B> = (B, *const c_int, *const isize, *const Handle);

/// The blocks of a `w` side of `n` neighbors (`None`: the entry point's own path).
///
/// # Safety
/// The arrays hold `n` entries each (MPI's contract) when `n > 0`.
unsafe fn w_side<B>(
    side: &WSide<B>,
    n: usize,
    comm: Handle,
) -> Option<crate::coll_packed_v::WBlocks> {
    let &(_, c, d, t) = side;
    if n == 0 {
        return crate::coll_packed_v::w_blocks_of(&[], &[], &[], comm);
    }
    if c.is_null() || d.is_null() || t.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    let (c, d, t) = unsafe {
        (
            std::slice::from_raw_parts(c, n),
            std::slice::from_raw_parts(d, n),
            std::slice::from_raw_parts(t, n),
        )
    };
    crate::coll_packed_v::w_blocks_of(c, d, t, comm)
}

/// `MPI_Neighbor_alltoallw`, blocking when `request` is `None`, when a block's type has
/// gaps: every block packed by its type (the receive blocks from what is there now),
/// the call run with `MPI_BYTE` blocks, the receive blocks unpacked; `None`: the entry
/// point's own path.
pub(crate) fn exchange_w(
    send: WSide<*const c_void>,
    recv: WSide<*mut c_void>,
    comm: Handle,
    request: Option<*mut Handle>,
) -> Option<c_int> {
    let (indeg, outdeg) = crate::neighbor::degrees(comm)?;
    // SAFETY: MPI's contract: one entry per out- / in-neighbor.
    let (s, r) = unsafe { (w_side(&send, outdeg, comm)?, w_side(&recv, indeg, comm)?) };
    if !s.gapped && !r.gapped {
        return None;
    }
    // SAFETY: MPI's contract: every send block readable, every receive block valid.
    let (sp, rp) = unsafe {
        (
            s.packed(send.0, true)?,
            r.packed(recv.0.cast_const(), true)?,
        )
    };
    let aint = |v: &[c_int]| v.iter().map(|&d| d as isize).collect::<Vec<isize>>();
    let (sd, rd) = (aint(&sp.displs), aint(&rp.displs));
    let (st, rt) = (vec![BYTE; outdeg], vec![BYTE; indeg]);
    let (sb, sc, rb, rc) = (
        sp.ptr().cast_const(),
        sp.counts.as_ptr(),
        rp.ptr(),
        rp.counts.as_ptr(),
    );
    // SAFETY: the packed copies live until the call returns (or in the request until it
    // completes); their counts and displacements until the call returns.
    let code = unsafe {
        use crate::neighbor::*;
        match request {
            None => PMPI_Neighbor_alltoallw(
                sb,
                sc,
                sd.as_ptr(),
                st.as_ptr(),
                rb,
                rc,
                rd.as_ptr(),
                rt.as_ptr(),
                comm,
            ),
            Some(q) => PMPI_Ineighbor_alltoallw(
                sb,
                sc,
                sd.as_ptr(),
                st.as_ptr(),
                rb,
                rc,
                rd.as_ptr(),
                rt.as_ptr(),
                comm,
                q,
            ),
        }
    };
    let unpack = r.unpack(rp, recv.0);
    Some(end(code, comm, request, Some(sp.bytes), Some(unpack)))
}
