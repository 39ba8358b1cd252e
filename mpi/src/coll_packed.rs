//! The data-moving collectives (`MPI_Bcast`, `MPI_Gather`, `MPI_Scatter`,
//! `MPI_Allgather`, `MPI_Alltoall`), blocking or not (and so persistent: the
//! non-blocking form packs at each start), with a type with gaps (`typemap`) on an intra- or
//! inter-communicator (there each rooted call's roles are MPI's: [`roles`]; a block
//! per remote rank): the significant buffers of such a type are packed into
//! contiguous bytes, the collective runs on those as `MPI_BYTE`, and what was received
//! is unpacked into the program's buffer when the call is over (`nbc_packed::end`:
//! at once, or when a completion call completes the request). Item `k` of a buffer lies `k` extents from
//! its start, so the blocks of a gather or an alltoall unpack in one pass. Each entry
//! point asks here first, before it takes the library's lock; a basic type costs one
//! table read, another contiguous type one lookup. The reductions pack through their
//! own front end (`reduce_packed`), the `v` forms through `coll_packed_v`.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::consts::*;
use crate::nbc_packed::end;
use crate::state::{call, CommKind};
use crate::typemap::{pack, Layout, Unpack};

/// `MPI_BYTE`.
const BYTE: Handle = 0x247;

/// A type with gaps, with the facts of the communicator a collective needs.
pub(crate) struct Gapped {
    pub layout: Arc<Layout>,
    /// Packed bytes of one item.
    pub size: usize,
    /// The distance between two items (a `v` collective's displacement unit).
    pub extent: isize,
}

/// `dt`'s layout when it has gaps, this process's rank in `comm` (in its group), the
/// size of `comm` (of the remote group for an inter-communicator) and whether it is an
/// inter-communicator; `None` when the entry point's own path applies (anything it
/// will report itself).
pub(crate) fn look_gapped(dt: Handle, comm: Handle) -> Option<(Option<Gapped>, u32, u32, bool)> {
    let mut found = None;
    // Never an error here: whatever is wrong, the entry point's own path reports.
    call(comm, |g| {
        if let Ok(lib) = g.lib() {
            if let Ok(e) = lib.comm(comm) {
                {
                    let inter = matches!(e.kind, CommKind::Inter { .. });
                    let gap = lib.layouts.get(&dt).and_then(|l| {
                        let size = lib.datatype(dt).ok()?.size;
                        let (_, extent) = crate::typemap::bounds(lib, dt).ok()?;
                        Some(Gapped {
                            layout: Arc::clone(l),
                            size,
                            extent,
                        })
                    });
                    found = Some((gap, e.rank, e.size, inter));
                }
            }
        }
        Ok(())
    });
    found
}

/// What this process is in a rooted call: the root, and whether it takes part as
/// another member (an inter-communicator's root passes `MPI_ROOT`, the rest of its
/// group `MPI_PROC_NULL`, which take no part).
pub(crate) fn roles(root: c_int, me: u32, inter: bool) -> (bool, bool) {
    if inter {
        (root == MPI_ROOT, root >= 0)
    } else {
        (root == me as c_int, root != me as c_int)
    }
}

/// Whether `dt` may have gaps (not a basic type).
pub(crate) fn maybe_gapped(dt: Handle) -> bool {
    crate::datatype::basic_bytes(1, dt).is_none()
}

/// A contiguous buffer for `items` items of `g`, packed from `from` when given.
fn packed(g: &Gapped, items: usize, from: Option<*const c_void>) -> Option<Box<[u8]>> {
    let len = g.size.checked_mul(items)?;
    let mut b = vec![0u8; len].into_boxed_slice();
    if let Some(p) = from {
        // SAFETY: MPI's contract for the collective's buffer: `items` items of the type
        // at `p`, readable.
        unsafe { pack(&g.layout, p.cast(), items, &mut b) };
    }
    Some(b)
}

/// A count as the number of items it is (a negative one is the entry point's to
/// report).
fn items(count: c_int) -> Option<usize> {
    usize::try_from(count).ok()
}

/// `MPI_Bcast` (`request` `None`) or `MPI_Ibcast` of a type with gaps; `None`: the
/// entry point's own path.
pub(crate) fn bcast(
    buffer: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
    request: Option<*mut Handle>,
) -> Option<c_int> {
    if !maybe_gapped(dt) {
        return None;
    }
    let (_, me, _, inter) = look_gapped(dt, comm)?;
    let (is_root, receives) = roles(root, me, inter);
    // The root's data packed in; elsewhere room for it.
    let recv = recv_side(buffer, count, dt, 1, is_root, comm)??;
    let (p, len) = (recv.temp.as_ptr().cast_mut().cast(), recv.per);
    // SAFETY: the packed bytes live until the call returns (or in the request until it
    // completes).
    let code = unsafe {
        match request {
            None => crate::coll::PMPI_Bcast(p, len, BYTE, root, comm),
            Some(q) => crate::nbc::PMPI_Ibcast(p, len, BYTE, root, comm, q),
        }
    };
    // Unpacked where data arrives; elsewhere (the root, an inter-communicator's root
    // group) the bytes are only kept until the call is over.
    let (keep, unpack) = if receives {
        (None, Some(recv.unpack(buffer)))
    } else {
        (Some(recv.temp), None)
    };
    Some(end(code, comm, request, keep, unpack))
}

/// The send side of a gather-like call: packed when its type has gaps.
pub(crate) struct Side {
    pub ptr: *const c_void,
    pub count: c_int,
    pub dt: Handle,
    pub keep: Option<Box<[u8]>>,
}

/// A send buffer of `count` items of `dt` (`n_blocks` blocks of them), packed when
/// `dt` has gaps; `MPI_IN_PLACE` passes.
pub(crate) fn send_side(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    blocks: usize,
    comm: Handle,
) -> Option<Side> {
    if buf as usize == IN_PLACE || !maybe_gapped(dt) {
        return Some(Side {
            ptr: buf,
            count,
            dt,
            keep: None,
        });
    }
    let (gap, _, _, _) = look_gapped(dt, comm)?;
    let Some(gap) = gap else {
        return Some(Side {
            ptr: buf,
            count,
            dt,
            keep: None,
        });
    };
    let b = packed(&gap, items(count)?.checked_mul(blocks)?, Some(buf))?;
    let per = c_int::try_from(gap.size.checked_mul(items(count)?)?).ok()?;
    Some(Side {
        ptr: b.as_ptr().cast(),
        count: per,
        dt: BYTE,
        keep: Some(b),
    })
}

/// A receive buffer of `blocks` blocks of `count` items of `dt` with gaps: packed
/// bytes (holding the buffer's content when `keep_content`, for `MPI_IN_PLACE`), and
/// how to unpack them after.
pub(crate) struct RecvSide {
    pub gap: Gapped,
    pub temp: Box<[u8]>,
    pub items: usize,
    pub per: c_int,
}

pub(crate) fn recv_side(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    blocks: usize,
    keep_content: bool,
    comm: Handle,
) -> Option<Option<RecvSide>> {
    if !maybe_gapped(dt) {
        return Some(None);
    }
    let (gap, _, _, _) = look_gapped(dt, comm)?;
    let Some(gap) = gap else { return Some(None) };
    let n = items(count)?.checked_mul(blocks)?;
    let temp = packed(&gap, n, keep_content.then_some(buf.cast_const()))?;
    let per = c_int::try_from(gap.size.checked_mul(items(count)?)?).ok()?;
    Some(Some(RecvSide {
        gap,
        temp,
        items: n,
        per,
    }))
}

impl RecvSide {
    /// The unpacking of these bytes into the program's buffer `to`.
    fn unpack(self, to: *mut c_void) -> Unpack {
        Unpack {
            layout: Arc::clone(&self.gap.layout),
            base: to.cast(),
            count: self.items,
            temp: self.temp,
        }
    }
}

/// The facts of `comm` (rank, size, whether inter), or `None`.
fn facts(comm: Handle) -> Option<(u32, u32, bool)> {
    // Any type: only the communicator is looked at.
    look_gapped(BYTE, comm).map(|(_, me, n, inter)| (me, n, inter))
}

/// Which gather-like call [`moved`] runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Gather,
    Scatter,
    Allgather,
    Alltoall,
}

/// The sides of a gather-like call of `kind` as it runs with a type with gaps on
/// either side: each significant one packed (or room for it) when its type has gaps;
/// `None`: the entry point's own path (no gaps, an inter-communicator, an argument it
/// reports). Also `nbc_packed`'s.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sides(
    kind: Kind,
    sendbuf: *const c_void,
    scount: c_int,
    stype: Handle,
    recvbuf: *mut c_void,
    rcount: c_int,
    rtype: Handle,
    root: c_int,
    comm: Handle,
) -> Option<(Side, Option<RecvSide>)> {
    if !maybe_gapped(stype) && !maybe_gapped(rtype) {
        return None;
    }
    let (me, n, inter) = facts(comm)?;
    let n = n as usize;
    let (is_root, member) = roles(root, me, inter);
    let in_place = |p: usize| p == IN_PLACE;
    // An intra-communicator's root gives (gather) or takes (scatter) a block too.
    let own = |p: usize| member || (!inter && is_root && !in_place(p));
    // Which sides are significant here, and how many blocks each holds (an
    // inter-communicator's blocks are the remote group's).
    let (send_blocks, recv_blocks, send_used, recv_used) = match kind {
        Kind::Gather => (1, n, own(sendbuf as usize), is_root),
        Kind::Scatter => (n, 1, is_root, own(recvbuf as usize)),
        Kind::Allgather => (1, n, !in_place(sendbuf as usize), true),
        Kind::Alltoall => (n, n, !in_place(sendbuf as usize), true),
    };
    let send = if send_used {
        send_side(sendbuf, scount, stype, send_blocks, comm)?
    } else {
        Side {
            ptr: sendbuf,
            count: scount,
            dt: stype,
            keep: None,
        }
    };
    // In place, the receive buffer holds this rank's input: packed with the rest.
    let keep = in_place(sendbuf as usize) && kind != Kind::Scatter;
    let recv = if recv_used {
        recv_side(recvbuf, rcount, rtype, recv_blocks, keep, comm)?
    } else {
        None
    };
    if send.keep.is_none() && recv.is_none() {
        return None;
    }
    Some((send, recv))
}

/// `MPI_Gather`, `MPI_Scatter`, `MPI_Allgather` or `MPI_Alltoall` (`request` `None`)
/// or their non-blocking forms with a type with gaps on either side; `None`: the entry
/// point's own path (no gaps, an argument it reports).
#[allow(clippy::too_many_arguments)]
pub(crate) fn moved(
    kind: Kind,
    sendbuf: *const c_void,
    scount: c_int,
    stype: Handle,
    recvbuf: *mut c_void,
    rcount: c_int,
    rtype: Handle,
    root: c_int,
    comm: Handle,
    request: Option<*mut Handle>,
) -> Option<c_int> {
    let (send, recv) = sides(
        kind, sendbuf, scount, stype, recvbuf, rcount, rtype, root, comm,
    )?;
    let (rp, rc, rt) = match &recv {
        Some(r) => (r.temp.as_ptr().cast_mut().cast(), r.per, BYTE),
        None => (recvbuf, rcount, rtype),
    };
    let (sp, sc, st) = (send.ptr, send.count, send.dt);
    use crate::coll as b;
    use crate::nbc as nb;
    // SAFETY: the buffers are the program's (MPI's contract) or the packed copies,
    // which live until the call returns (or in the request until it completes).
    let code = unsafe {
        match (kind, request) {
            (Kind::Gather, None) => b::PMPI_Gather(sp, sc, st, rp, rc, rt, root, comm),
            (Kind::Gather, Some(q)) => nb::PMPI_Igather(sp, sc, st, rp, rc, rt, root, comm, q),
            (Kind::Scatter, None) => b::PMPI_Scatter(sp, sc, st, rp, rc, rt, root, comm),
            (Kind::Scatter, Some(q)) => nb::PMPI_Iscatter(sp, sc, st, rp, rc, rt, root, comm, q),
            (Kind::Allgather, None) => b::PMPI_Allgather(sp, sc, st, rp, rc, rt, comm),
            (Kind::Allgather, Some(q)) => nb::PMPI_Iallgather(sp, sc, st, rp, rc, rt, comm, q),
            (Kind::Alltoall, None) => b::PMPI_Alltoall(sp, sc, st, rp, rc, rt, comm),
            (Kind::Alltoall, Some(q)) => nb::PMPI_Ialltoall(sp, sc, st, rp, rc, rt, comm, q),
        }
    };
    let unpack = recv.map(|r| r.unpack(recvbuf));
    Some(end(code, comm, request, send.keep, unpack))
}
