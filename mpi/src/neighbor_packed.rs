//! `MPI_Neighbor_allgather`, `MPI_Neighbor_alltoall`, their non-blocking forms (and so
//! their persistent ones, which start those) with a type with gaps on either side:
//! the send buffer is packed into contiguous bytes (one block, or one per
//! out-neighbor), the exchange runs on `MPI_BYTE` blocks, and what was received is
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
#[derive(Clone, Copy, PartialEq, Eq)]
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
