//! The `v` collectives (`MPI_Gatherv`, `MPI_Scatterv`, `MPI_Allgatherv`,
//! `MPI_Alltoallv`) with a type with gaps on an intra- or inter-communicator, as `coll_packed`
//! does for the others: each significant side whose type has gaps is packed block by
//! block (block `j` holds `counts[j]` items at `displs[j]` extents from the buffer's
//! start) into contiguous bytes, the collective runs on those as `MPI_BYTE` with the
//! counts and displacements in bytes, and the received blocks are unpacked into the
//! program's buffer. The classic use: a matrix scattered by blocks of a resized vector
//! type. `MPI_Alltoallw`/`MPI_Ialltoallw` pack each block by its own type the same
//! way. The non-blocking forms (`MPI_Igatherv`...) and so the persistent ones run the
//! same way, the request owning the packed bytes and unpacking them when a completion
//! call completes it (`nbc_packed::attach`). Each entry point asks here first, before
//! it takes the library's lock.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::coll_packed::{look_gapped, maybe_gapped, roles, Gapped};
use crate::consts::*;
use crate::nbc_packed::end;
use crate::typemap::{pack, Layout, Unpack};

/// `MPI_BYTE`.
const BYTE: Handle = 0x247;

/// Blocks packed into (or to be received in) contiguous bytes: the bytes, and each
/// block's byte count and displacement as the `MPI_BYTE` call takes them.
pub(crate) struct Packed {
    pub bytes: Box<[u8]>,
    pub counts: Vec<c_int>,
    pub displs: Vec<c_int>,
}

/// Reads `n` ints of a counts or displacements argument (`None`: the entry point's
/// own path reports what is wrong).
///
/// # Safety
/// `p` is null or holds `n` ints.
pub(crate) unsafe fn ints<'a>(p: *const c_int, n: usize) -> Option<&'a [c_int]> {
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
pub(crate) unsafe fn blocks(
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
    pub(crate) fn ptr(&self) -> *mut c_void {
        self.bytes.as_ptr().cast_mut().cast()
    }
}

/// One block of `count` items of `g` packed from `from`.
fn one(g: &Gapped, count: c_int, from: *const c_void) -> Option<Packed> {
    // SAFETY: MPI's contract: the send buffer holds `count` items.
    unsafe { blocks(g, &[count], &[0], from, |_| true) }
}

/// A receive side packed: the room, the program's counts and displacements, the type.
pub(crate) struct Recv<'a> {
    pub p: Packed,
    pub counts: &'a [c_int],
    pub displs: &'a [c_int],
    pub gap: Gapped,
}

impl Recv<'_> {
    /// The unpacking of every block into the program's buffer `to` (block `j` at
    /// `displs[j]` extents): one layout holding the pieces of all the blocks in the
    /// order they were packed.
    pub(crate) fn into_unpack(self, to: *mut c_void) -> Unpack {
        let g = &self.gap;
        let mut segs = Vec::new();
        for (&c, &d) in self.counts.iter().zip(self.displs) {
            let start = (d as isize).wrapping_mul(g.extent);
            for k in 0..c.max(0) as isize {
                let at = start.wrapping_add(k.wrapping_mul(g.extent));
                segs.extend(g.layout.segs.iter().map(|&(o, l)| (at.wrapping_add(o), l)));
            }
        }
        let layout = Layout {
            segs,
            lb: 0,
            extent: 0,
            true_lb: 0,
            true_ub: 0,
            align: g.layout.align,
        };
        Unpack {
            layout: Arc::new(layout),
            base: to.cast(),
            count: 1,
            temp: self.p.bytes,
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
    let (sgap, me, n, inter) = look_gapped(stype, comm)?;
    let in_place = sendbuf as usize == IN_PLACE;
    // Allgatherv: every process gives and takes; Gatherv: the root takes, the others
    // give (an intra-communicator's root too, unless in place).
    let (receives, sends) = match root {
        None => (true, !in_place),
        Some(r) => {
            let (is_root, member) = roles(r, me, inter);
            (is_root, member || (!inter && is_root && !in_place))
        }
    };
    let rgap = if receives {
        look_gapped(rtype, comm)?.0
    } else {
        None
    };
    let send = match &sgap {
        Some(g) if sends => Some(one(g, scount, sendbuf)?),
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

/// `MPI_Gatherv` (`request` `None`) or `MPI_Igatherv` with a type with gaps; `None`:
/// the entry point's own path.
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
    request: Option<*mut Handle>,
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
    // which live until the call returns (or in the request until it completes).
    let code = unsafe {
        match request {
            None => crate::collv::PMPI_Gatherv(sp, sc, st, rp, rc, rd, rt, root, comm),
            Some(q) => crate::nbc_v::PMPI_Igatherv(sp, sc, st, rp, rc, rd, rt, root, comm, q),
        }
    };
    let send = send.map(|p| p.bytes);
    Some(end(
        code,
        comm,
        request,
        send,
        recv.map(|r| r.into_unpack(recvbuf)),
    ))
}

/// `MPI_Allgatherv` or `MPI_Iallgatherv` with a type with gaps; `None`: the entry
/// point's own path.
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
    request: Option<*mut Handle>,
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
    let code = unsafe {
        match request {
            None => crate::collv::PMPI_Allgatherv(sp, sc, st, rp, rc, rd, rt, comm),
            Some(q) => crate::nbc_v::PMPI_Iallgatherv(sp, sc, st, rp, rc, rd, rt, comm, q),
        }
    };
    let send = send.map(|p| p.bytes);
    Some(end(
        code,
        comm,
        request,
        send,
        recv.map(|r| r.into_unpack(recvbuf)),
    ))
}

/// `MPI_Scatterv` or `MPI_Iscatterv` with a type with gaps; `None`: the entry point's
/// own path.
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
    request: Option<*mut Handle>,
) -> Option<c_int> {
    if !maybe_gapped(stype) && !maybe_gapped(rtype) {
        return None;
    }
    let (rgap, me, n, inter) = look_gapped(rtype, comm)?;
    let (is_root, member) = roles(root, me, inter);
    let takes = member || (!inter && is_root && recvbuf as usize != IN_PLACE);
    let sgap = if is_root {
        look_gapped(stype, comm)?.0
    } else {
        None
    };
    // SAFETY: MPI's contract at the root: `n` counts and displacements, every block of
    // the send buffer readable.
    let send = unsafe { v_side(sgap, sendbuf, scounts, displs, n as usize, |_| true) }?;
    let recv = match rgap {
        Some(g) if takes => {
            // SAFETY: nothing is read (`fill` is false).
            let p = unsafe { blocks(&g, &[rcount], &[0], recvbuf, |_| false) }?;
            Some((p, g))
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
    let (rp, rc, rt) = recv.as_ref().map_or((recvbuf, rcount, rtype), |(p, _)| {
        (p.ptr(), p.counts[0], BYTE)
    });
    // SAFETY: as in `gatherv`.
    let code = unsafe {
        match request {
            None => crate::collv::PMPI_Scatterv(sp, sc, sd, st, rp, rc, rt, root, comm),
            Some(q) => crate::nbc_v::PMPI_Iscatterv(sp, sc, sd, st, rp, rc, rt, root, comm, q),
        }
    };
    let recv = recv.map(|(p, g)| Unpack {
        layout: g.layout,
        base: recvbuf.cast(),
        count: rcount.max(0) as usize,
        temp: p.bytes,
    });
    Some(end(code, comm, request, send.map(|s| s.p.bytes), recv))
}

/// `MPI_Alltoallv` or `MPI_Ialltoallv` with a type with gaps; `None`: the entry
/// point's own path.
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
    request: Option<*mut Handle>,
) -> Option<c_int> {
    if !maybe_gapped(stype) && !maybe_gapped(rtype) {
        return None;
    }
    let (sgap, _, n, _) = look_gapped(stype, comm)?;
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
    let code = unsafe {
        match request {
            None => crate::collv::PMPI_Alltoallv(sp, sc, sd, st, rp, rc, rd, rt, comm),
            Some(q) => crate::nbc_v::PMPI_Ialltoallv(sp, sc, sd, st, rp, rc, rd, rt, comm, q),
        }
    };
    let send = send.map(|s| s.p.bytes);
    Some(end(
        code,
        comm,
        request,
        send,
        recv.map(|r| r.into_unpack(recvbuf)),
    ))
}

/// One side of an `MPI_Alltoallw` as passed: per peer a count, a byte displacement and
/// a type.
#[derive(Clone, Copy)]
pub(crate) struct WSide {
    pub counts: *const c_int,
    pub displs: *const c_int,
    pub types: *const Handle,
}

/// A `w` side's blocks: each peer's count, byte displacement and layout (a contiguous
/// type's made up), and whether any has gaps.
pub(crate) struct WBlocks {
    blocks: Vec<(usize, isize, Arc<Layout>, usize)>,
    pub gapped: bool,
}

/// Reads `n` blocks of `side` (`None`: the entry point's own path reports).
///
/// # Safety
/// The three arrays of `side` hold `n` entries (MPI's contract).
unsafe fn w_blocks(side: WSide, n: usize, comm: Handle) -> Option<WBlocks> {
    // SAFETY: the caller's contract.
    let (c, d, t) = unsafe {
        (
            ints(side.counts, n)?,
            ints(side.displs, n)?,
            (!side.types.is_null()).then(|| std::slice::from_raw_parts(side.types, n))?,
        )
    };
    let d: Vec<isize> = d.iter().map(|&d| d as isize).collect();
    w_blocks_of(c, &d, t, comm)
}

/// The blocks of counts `c`, byte displacements `d` and types `t` (`None`: the entry
/// point's own path reports). Also the neighborhood `w` collectives' (`neighbor_packed`).
pub(crate) fn w_blocks_of(c: &[c_int], d: &[isize], t: &[Handle], comm: Handle) -> Option<WBlocks> {
    let mut out = None;
    crate::state::call(comm, |g| {
        let Ok(lib) = g.lib() else { return Ok(()) };
        let mut blocks = Vec::with_capacity(c.len());
        let mut gapped = false;
        for j in 0..c.len() {
            let (Ok(e), Ok((_, l))) = (lib.datatype(t[j]), crate::typemap::describe(lib, t[j]))
            else {
                return Ok(());
            };
            let Ok(count) = usize::try_from(c[j]) else {
                return Ok(());
            };
            gapped |= lib.layouts.contains_key(&t[j]);
            blocks.push((count, d[j], Arc::new(l), e.size));
        }
        out = Some(WBlocks { blocks, gapped });
        Ok(())
    });
    out
}

impl WBlocks {
    /// Contiguous room for every block, each packed from `buf` when `fill`.
    ///
    /// # Safety
    /// When `fill`, every block of `buf` is readable (MPI's contract).
    pub(crate) unsafe fn packed(&self, buf: *const c_void, fill: bool) -> Option<Packed> {
        let (mut counts, mut displs, mut total) = (Vec::new(), Vec::new(), 0usize);
        for (count, _, _, size) in &self.blocks {
            let len = count.checked_mul(*size)?;
            counts.push(c_int::try_from(len).ok()?);
            displs.push(c_int::try_from(total).ok()?);
            total = total.checked_add(len)?;
        }
        let mut bytes = vec![0u8; total].into_boxed_slice();
        for (j, (count, disp, l, _)) in self.blocks.iter().enumerate().filter(|_| fill) {
            let at = displs[j] as usize;
            let room = &mut bytes[at..at + counts[j] as usize];
            // SAFETY: the caller's contract for block `j`.
            unsafe { pack(l, buf.cast::<u8>().wrapping_offset(*disp), *count, room) };
        }
        Some(Packed {
            bytes,
            counts,
            displs,
        })
    }

    /// The unpacking of `p` into every block of the program's buffer `to`, as one
    /// layout of all their pieces in the packed order.
    pub(crate) fn unpack(&self, p: Packed, to: *mut c_void) -> Unpack {
        let mut segs = Vec::new();
        for (count, disp, l, _) in &self.blocks {
            for k in 0..*count as isize {
                let at = disp.wrapping_add(k.wrapping_mul(l.extent));
                segs.extend(l.segs.iter().map(|&(o, len)| (at.wrapping_add(o), len)));
            }
        }
        let layout = Layout {
            segs,
            lb: 0,
            extent: 0,
            true_lb: 0,
            true_ub: 0,
            align: 1,
        };
        Unpack {
            layout: Arc::new(layout),
            base: to.cast(),
            count: 1,
            temp: p.bytes,
        }
    }
}

/// `MPI_Alltoallw` (`request` `None`) or `MPI_Ialltoallw` with a type with gaps on
/// either side: every block packed (or room for it), the call run in bytes
/// (`MPI_BYTE` blocks at byte displacements), the receive blocks unpacked; `None`:
/// the entry point's own path.
pub(crate) fn alltoallw(
    sendbuf: *const c_void,
    send: WSide,
    recvbuf: *mut c_void,
    recv: WSide,
    comm: Handle,
    request: Option<*mut Handle>,
) -> Option<c_int> {
    let (_, _, n, _) = look_gapped(BYTE, comm)?;
    let n = n as usize;
    let in_place = sendbuf as usize == IN_PLACE;
    // SAFETY: MPI's contract: `n` entries per array on each side used.
    let r = unsafe { w_blocks(recv, n, comm) }?;
    let s = if in_place {
        None
    } else {
        // SAFETY: as above.
        Some(unsafe { w_blocks(send, n, comm) }?)
    };
    if !r.gapped && !s.as_ref().is_some_and(|s| s.gapped) {
        return None;
    }
    // SAFETY: MPI's contract: every send block readable; in place, every receive one.
    let (sp, rp) = unsafe {
        (
            match &s {
                Some(s) => Some(s.packed(sendbuf, true)?),
                None => None,
            },
            r.packed(recvbuf.cast_const(), in_place)?,
        )
    };
    let bytes = vec![BYTE; n];
    let none: (*const c_int, *const c_int) = (std::ptr::null(), std::ptr::null());
    let (sb, (sc, sd)) = match &sp {
        Some(p) => (p.ptr().cast_const(), (p.counts.as_ptr(), p.displs.as_ptr())),
        None => (sendbuf, none),
    };
    let (rb, rc, rd, t) = (
        rp.ptr(),
        rp.counts.as_ptr(),
        rp.displs.as_ptr(),
        bytes.as_ptr(),
    );
    // SAFETY: the packed copies and their byte counts and displacements, which live
    // until the call returns (or in the request until it completes).
    let code = unsafe {
        match request {
            None => crate::alltoallw::PMPI_Alltoallw(sb, sc, sd, t, rb, rc, rd, t, comm),
            Some(q) => crate::alltoallw::PMPI_Ialltoallw(sb, sc, sd, t, rb, rc, rd, t, comm, q),
        }
    };
    let unpack = r.unpack(rp, recvbuf);
    Some(end(code, comm, request, sp.map(|p| p.bytes), Some(unpack)))
}
