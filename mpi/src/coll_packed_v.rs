//! The `v` collectives (`MPI_Gatherv`, `MPI_Scatterv`, `MPI_Allgatherv`,
//! `MPI_Alltoallv`) with a type with gaps on an intra-communicator, as `coll_packed`
//! does for the others: each significant side whose type has gaps is packed block by
//! block (block `j` holds `counts[j]` items at `displs[j]` extents from the buffer's
//! start) into contiguous bytes, the collective runs on those as `MPI_BYTE` with the
//! counts and displacements in bytes, and the received blocks are unpacked into the
//! program's buffer. The classic use: a matrix scattered by blocks of a resized vector
//! type. Each entry point asks here first, before it takes the library's lock.

use std::ffi::{c_int, c_void};

use crate::coll_packed::{look_gapped, maybe_gapped, Gapped};
use crate::consts::*;
use crate::typemap::{pack, unpack};

/// `MPI_BYTE`.
const BYTE: Handle = 0x247;

/// Blocks packed into (or to be received in) contiguous bytes: the bytes, and each
/// block's byte count and displacement as the `MPI_BYTE` call takes them.
struct Packed {
    bytes: Box<[u8]>,
    counts: Vec<c_int>,
    displs: Vec<c_int>,
}

/// Reads `n` ints of a counts or displacements argument (`None`: the entry point's
/// own path reports what is wrong).
///
/// # Safety
/// `p` is null or holds `n` ints.
unsafe fn ints<'a>(p: *const c_int, n: usize) -> Option<&'a [c_int]> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Room for blocks of `counts[j]` items of `g` one after another; each block copied
/// from the program's buffer `from` (at `displs[j]` extents) when `fill(j)`.
///
/// # Safety
/// When `fill(j)`, block `j` of the program's buffer is readable (MPI's contract).
unsafe fn blocks(
    g: &Gapped,
    counts: &[c_int],
    displs: &[c_int],
    from: *const c_void,
    fill: impl Fn(usize) -> bool,
) -> Option<Packed> {
    let mut byte_counts = Vec::with_capacity(counts.len());
    let mut byte_displs = Vec::with_capacity(counts.len());
    let mut total = 0usize;
    for &c in counts {
        let len = usize::try_from(c).ok()?.checked_mul(g.size)?;
        byte_counts.push(c_int::try_from(len).ok()?);
        byte_displs.push(c_int::try_from(total).ok()?);
        total = total.checked_add(len)?;
    }
    let mut bytes = vec![0u8; total].into_boxed_slice();
    for (j, (&c, &d)) in counts.iter().zip(displs).enumerate() {
        if !fill(j) || c == 0 {
            continue;
        }
        let at = byte_displs[j] as usize;
        let base = from.cast::<u8>().wrapping_offset(d as isize * g.extent);
        // SAFETY: the caller's contract for block `j`; the destination is its room.
        unsafe {
            pack(
                &g.layout,
                base,
                c as usize,
                &mut bytes[at..at + byte_counts[j] as usize],
            )
        };
    }
    Some(Packed {
        bytes,
        counts: byte_counts,
        displs: byte_displs,
    })
}

impl Packed {
    /// Unpacks every block into the program's buffer `to` (block `j` at `displs[j]`
    /// extents).
    ///
    /// # Safety
    /// Every block of the program's buffer is writable and the program's alone during
    /// the call (MPI's contract).
    unsafe fn unpack_into(&self, g: &Gapped, to: *mut c_void, counts: &[c_int], displs: &[c_int]) {
        for (j, (&c, &d)) in counts.iter().zip(displs).enumerate() {
            let at = self.displs[j] as usize;
            let len = self.counts[j] as usize;
            let base = to.cast::<u8>().wrapping_offset(d as isize * g.extent);
            // SAFETY: the caller's contract for block `j`.
            unsafe { unpack(&g.layout, &self.bytes[at..at + len], base, c as usize) };
        }
    }

    fn ptr(&self) -> *mut c_void {
        self.bytes.as_ptr().cast_mut().cast()
    }
}

/// One block of `count` items of `g` packed from `from`.
fn one(g: &Gapped, count: c_int, from: *const c_void) -> Option<Packed> {
    // SAFETY: MPI's contract: the send buffer holds `count` items.
    unsafe { blocks(g, &[count], &[0], from, |_| true) }
}

/// A receive side packed: the room, the program's counts and displacements, the type.
struct Recv<'a> {
    p: Packed,
    counts: &'a [c_int],
    displs: &'a [c_int],
    gap: Gapped,
}

impl Recv<'_> {
    /// Unpacks what the call received, if it succeeded.
    ///
    /// # Safety
    /// MPI's contract for the program's receive buffer `to`.
    unsafe fn finish(&self, code: c_int, to: *mut c_void) {
        if code == MPI_SUCCESS {
            // SAFETY: the caller's contract.
            unsafe { self.p.unpack_into(&self.gap, to, self.counts, self.displs) };
        }
    }
}

/// A one-block send side as the call takes it: packed, or the program's.
fn one_args(
    p: &Option<Packed>,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
) -> (*const c_void, c_int, Handle) {
    p.as_ref().map_or((buf, count, dt), |p| {
        (p.ptr().cast_const(), p.counts[0], BYTE)
    })
}

/// A `v` side as the call takes it: packed (bytes), or the program's.
fn v_args(
    p: Option<&Packed>,
    buf: *mut c_void,
    counts: *const c_int,
    displs: *const c_int,
    dt: Handle,
) -> (*mut c_void, *const c_int, *const c_int, Handle) {
    p.map_or((buf, counts, displs, dt), |p| {
        (p.ptr(), p.counts.as_ptr(), p.displs.as_ptr(), BYTE)
    })
}

/// The `v` side of `n` blocks at `buf` packed when `gap` is given; every block copied
/// in when `fill` says so (in place, or a send side).
///
/// # Safety
/// `counts` and `displs` hold `n` ints, and the blocks `fill` names are readable
/// (MPI's contract).
unsafe fn v_side<'a>(
    gap: Option<Gapped>,
    buf: *const c_void,
    counts: *const c_int,
    displs: *const c_int,
    n: usize,
    fill: impl Fn(usize) -> bool,
) -> Option<Option<Recv<'a>>> {
    let Some(gap) = gap else { return Some(None) };
    // SAFETY: the caller's contract.
    let (c, d) = unsafe { (ints(counts, n)?, ints(displs, n)?) };
    // SAFETY: the caller's contract.
    let p = unsafe { blocks(&gap, c, d, buf, fill) }?;
    Some(Some(Recv {
        p,
        counts: c,
        displs: d,
        gap,
    }))
}

/// The packed sides of `MPI_Gatherv` (at `root`) or `MPI_Allgatherv` (`None`).
#[allow(clippy::too_many_arguments)]
fn gather_sides<'a>(
    sendbuf: *const c_void,
    scount: c_int,
    stype: Handle,
    recvbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rtype: Handle,
    root: Option<c_int>,
    comm: Handle,
) -> Option<(Option<Packed>, Option<Recv<'a>>)> {
    let (sgap, me, n) = look_gapped(stype, comm)?;
    let receives = root.is_none_or(|r| r == me as c_int);
    let rgap = if receives {
        look_gapped(rtype, comm)?.0
    } else {
        None
    };
    let in_place = sendbuf as usize == IN_PLACE;
    let send = match &sgap {
        Some(g) if !in_place => Some(one(g, scount, sendbuf)?),
        _ => None,
    };
    // In place, this rank's own block is its input: packed with the rest.
    // SAFETY: MPI's contract: `n` counts and displacements where significant, this
    // rank's block readable in place.
    let recv = unsafe {
        v_side(rgap, recvbuf, rcounts, displs, n as usize, |j| {
            in_place && j == me as usize
        })
    }?;
    Some((send, recv))
}

/// `MPI_Gatherv` with a type with gaps; `None`: the entry point's own path.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gatherv(
    sendbuf: *const c_void,
    scount: c_int,
    stype: Handle,
    recvbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rtype: Handle,
    root: c_int,
    comm: Handle,
) -> Option<c_int> {
    if !maybe_gapped(stype) && !maybe_gapped(rtype) {
        return None;
    }
    let (send, recv) = gather_sides(
        sendbuf,
        scount,
        stype,
        recvbuf,
        rcounts,
        displs,
        rtype,
        Some(root),
        comm,
    )?;
    if send.is_none() && recv.is_none() {
        return None;
    }
    let (sp, sc, st) = one_args(&send, sendbuf, scount, stype);
    let (rp, rc, rd, rt) = v_args(recv.as_ref().map(|r| &r.p), recvbuf, rcounts, displs, rtype);
    // SAFETY: the program's buffers and arrays (MPI's contract) or the packed copies,
    // which live until the call returns.
    let code = unsafe { crate::collv::PMPI_Gatherv(sp, sc, st, rp, rc, rd, rt, root, comm) };
    if let Some(r) = &recv {
        // SAFETY: MPI's contract for the root's receive buffer.
        unsafe { r.finish(code, recvbuf) };
    }
    Some(code)
}

/// `MPI_Allgatherv` with a type with gaps; `None`: the entry point's own path.
#[allow(clippy::too_many_arguments)]
pub(crate) fn allgatherv(
    sendbuf: *const c_void,
    scount: c_int,
    stype: Handle,
    recvbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rtype: Handle,
    comm: Handle,
) -> Option<c_int> {
    if !maybe_gapped(stype) && !maybe_gapped(rtype) {
        return None;
    }
    let (send, recv) = gather_sides(
        sendbuf, scount, stype, recvbuf, rcounts, displs, rtype, None, comm,
    )?;
    if send.is_none() && recv.is_none() {
        return None;
    }
    let (sp, sc, st) = one_args(&send, sendbuf, scount, stype);
    let (rp, rc, rd, rt) = v_args(recv.as_ref().map(|r| &r.p), recvbuf, rcounts, displs, rtype);
    // SAFETY: as in `gatherv`.
    let code = unsafe { crate::collv::PMPI_Allgatherv(sp, sc, st, rp, rc, rd, rt, comm) };
    if let Some(r) = &recv {
        // SAFETY: MPI's contract for the receive buffer.
        unsafe { r.finish(code, recvbuf) };
    }
    Some(code)
}

/// `MPI_Scatterv` with a type with gaps; `None`: the entry point's own path.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scatterv(
    sendbuf: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    stype: Handle,
    recvbuf: *mut c_void,
    rcount: c_int,
    rtype: Handle,
    root: c_int,
    comm: Handle,
) -> Option<c_int> {
    if !maybe_gapped(stype) && !maybe_gapped(rtype) {
        return None;
    }
    let (rgap, me, n) = look_gapped(rtype, comm)?;
    let is_root = root == me as c_int;
    let sgap = if is_root {
        look_gapped(stype, comm)?.0
    } else {
        None
    };
    // SAFETY: MPI's contract at the root: `n` counts and displacements, every block of
    // the send buffer readable.
    let send = unsafe { v_side(sgap, sendbuf, scounts, displs, n as usize, |_| true) }?;
    let recv = match rgap {
        Some(g) if recvbuf as usize != IN_PLACE => {
            // SAFETY: nothing is read (`fill` is false).
            let p = unsafe { blocks(&g, &[rcount], &[0], recvbuf, |_| false) }?;
            Some(Recv {
                p,
                counts: &[],
                displs: &[],
                gap: g,
            })
        }
        _ => None,
    };
    if send.is_none() && recv.is_none() {
        return None;
    }
    let (sp, sc, sd, st) = v_args(
        send.as_ref().map(|s| &s.p),
        sendbuf.cast_mut(),
        scounts,
        displs,
        stype,
    );
    let (rp, rc, rt) = recv.as_ref().map_or((recvbuf, rcount, rtype), |r| {
        (r.p.ptr(), r.p.counts[0], BYTE)
    });
    // SAFETY: as in `gatherv`.
    let code = unsafe { crate::collv::PMPI_Scatterv(sp, sc, sd, st, rp, rc, rt, root, comm) };
    if let (MPI_SUCCESS, Some(r)) = (code, &recv) {
        // SAFETY: MPI's contract for the receive buffer.
        unsafe { r.p.unpack_into(&r.gap, recvbuf, &[rcount], &[0]) };
    }
    Some(code)
}

/// `MPI_Alltoallv` with a type with gaps; `None`: the entry point's own path.
#[allow(clippy::too_many_arguments)]
pub(crate) fn alltoallv(
    sendbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stype: Handle,
    recvbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtype: Handle,
    comm: Handle,
) -> Option<c_int> {
    if !maybe_gapped(stype) && !maybe_gapped(rtype) {
        return None;
    }
    let (sgap, _, n) = look_gapped(stype, comm)?;
    let rgap = look_gapped(rtype, comm)?.0;
    let in_place = sendbuf as usize == IN_PLACE;
    let sgap = if in_place { None } else { sgap };
    // SAFETY: MPI's contract: `n` counts and displacements on each side, every send
    // block readable (in place, the receive blocks are the input).
    let (send, recv) = unsafe {
        (
            v_side(sgap, sendbuf, scounts, sdispls, n as usize, |_| true)?,
            v_side(rgap, recvbuf, rcounts, rdispls, n as usize, |_| in_place)?,
        )
    };
    if send.is_none() && recv.is_none() {
        return None;
    }
    let (sp, sc, sd, st) = v_args(
        send.as_ref().map(|s| &s.p),
        sendbuf.cast_mut(),
        scounts,
        sdispls,
        stype,
    );
    let (rp, rc, rd, rt) = v_args(
        recv.as_ref().map(|r| &r.p),
        recvbuf,
        rcounts,
        rdispls,
        rtype,
    );
    // SAFETY: as in `gatherv`.
    let code = unsafe { crate::collv::PMPI_Alltoallv(sp, sc, sd, st, rp, rc, rd, rt, comm) };
    if let Some(r) = &recv {
        // SAFETY: MPI's contract for the receive buffer.
        unsafe { r.finish(code, recvbuf) };
    }
    Some(code)
}
