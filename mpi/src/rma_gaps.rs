//! `MPI_Put`, `MPI_Get` and `MPI_Accumulate` with datatypes that have gaps (vector, indexed, struct,
//! resized...), on either side.
//!
//! The origin's side is packed into a contiguous copy before a put (`typemap::pack`),
//! and a get lands in a contiguous buffer unpacked into the origin's items after it. The
//! target's side is its pieces (each contiguous run of bytes of `count` items, in type
//! order): the whole span is checked against the target's window first (nothing is
//! written when any piece is out of range: `MPI_ERR_RMA_RANGE`), then each piece is one
//! put or get of the runtime, which completes when it returns, as the contiguous calls.
//! Both sides must describe the same number of bytes of the same element kind.
//! `MPI_Accumulate` too: one accumulate per target piece, queued as the contiguous
//! ones (`rma`); the fetching accumulates keep to contiguous types.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use sf::CommError;

use crate::consts::*;
use crate::datatype::Elem;
use crate::error::{Fail, R};
use crate::rma::{target, MPI_NO_OP};
use crate::state::Guard;
use crate::typemap::{Buffer, Layout};
use crate::util::{bytes, bytes_mut};
use crate::win::MPI_ERR_RMA_RANGE;

/// Whether `dt` has gaps (a layout of pieces).
pub(crate) fn has_gaps(g: &mut Guard, dt: Handle) -> R<bool> {
    Ok(g.lib()?.layouts.contains_key(&dt))
}

/// One side: `count` items of a type, its packed length, element kind, and for a type
/// with gaps its layout.
struct Side {
    len: usize,
    elem: Elem,
    layout: Option<(Arc<Layout>, usize)>,
}

fn side(g: &mut Guard, count: c_int, dt: Handle) -> R<Side> {
    let lib = g.lib()?;
    let elem = lib.datatype(dt)?.elem;
    Ok(match lib.buffer_of(count, dt)? {
        Buffer::Contig(len) => Side {
            len,
            elem,
            layout: None,
        },
        Buffer::Packed { layout, count, len } => Side {
            len,
            elem,
            layout: Some((layout, count)),
        },
    })
}

/// The target's pieces as (byte offset in its window, length), in order, every one
/// checked to lie in the window; `None` for `MPI_PROC_NULL`.
#[allow(clippy::type_complexity)]
fn pieces(
    g: &mut Guard,
    win: Handle,
    rank: c_int,
    disp: isize,
    t: &Side,
) -> R<Option<(u32, Arc<sf::comm::Window<'static>>, Vec<(usize, usize)>)>> {
    let rel: Vec<(isize, usize)> = match &t.layout {
        Some((l, count)) => l.pieces(*count).filter(|p| p.1 > 0).collect(),
        None => vec![(0, t.len)],
    };
    let lo = rel.iter().map(|p| p.0).min().unwrap_or(0);
    let hi = rel.iter().map(|p| p.0 + p.1 as isize).max().unwrap_or(0);
    // The base: the displacement scaled by the target's unit, checked alone.
    let tg = target(g, win, rank, disp, 0)?;
    let Some(r) = tg.rank else { return Ok(None) };
    let range = |m: String| Fail::new(MPI_ERR_RMA_RANGE, m);
    let start = usize::try_from(tg.offset as isize + lo).map_err(|_| {
        range(format!(
            "the type reaches {lo} bytes before displacement {disp}"
        ))
    })?;
    let span = (hi - lo) as usize;
    if tg.win.is_dynamic() {
        g.unlocked(|| tg.win.check_attached(r, start, span))
            .map_err(|err| match err {
                CommError::InvalidArgument(m) => range(m),
                other => Fail::from(other),
            })?;
    } else {
        let size = tg.win.len_of(r)?;
        if start + span > size {
            return Err(range(format!(
                "{span} bytes at byte {start} are outside rank {r}'s window of {size} bytes"
            )));
        }
    }
    let abs = rel
        .into_iter()
        .map(|(o, len)| ((tg.offset as isize + o) as usize, len))
        .collect();
    Ok(Some((r, tg.win, abs)))
}

fn same_shape(o: &Side, t: &Side) -> R<()> {
    if o.len != t.len || (o.len > 0 && o.elem != t.elem) {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            format!(
                "origin ({} bytes of {:?}) and target ({} bytes of {:?}) differ",
                o.len, o.elem, t.len, t.elem
            ),
        ));
    }
    Ok(())
}

/// `MPI_Put` with a type with gaps on either side.
#[allow(clippy::too_many_arguments)]
pub(crate) fn put(
    g: &mut Guard,
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: Handle,
    target_rank: c_int,
    target_disp: isize,
    target_count: c_int,
    target_datatype: Handle,
    win: Handle,
) -> R<()> {
    let o = side(g, origin_count, origin_datatype)?;
    let t = side(g, target_count, target_datatype)?;
    same_shape(&o, &t)?;
    let Some((rank, w, pieces)) = pieces(g, win, target_rank, target_disp, &t)? else {
        return Ok(());
    };
    let packed: Box<[u8]>;
    let data: &[u8] = match &o.layout {
        Some((l, count)) => {
            // SAFETY: MPI's contract: the origin buffer holds `count` items of its type.
            packed = unsafe { crate::typemap::packed_copy(l, origin_addr, *count, o.len) };
            &packed
        }
        // SAFETY: MPI's contract: the origin buffer holds the bytes for the call.
        None => unsafe { bytes(origin_addr, o.len) }?,
    };
    g.unlocked(|| {
        let mut at = 0;
        for (off, len) in pieces {
            w.put(rank, off, &data[at..at + len])?;
            at += len;
        }
        Ok(())
    })
}

/// `MPI_Get` with a type with gaps on either side.
#[allow(clippy::too_many_arguments)]
pub(crate) fn get(
    g: &mut Guard,
    origin_addr: *mut c_void,
    origin_count: c_int,
    origin_datatype: Handle,
    target_rank: c_int,
    target_disp: isize,
    target_count: c_int,
    target_datatype: Handle,
    win: Handle,
) -> R<()> {
    let o = side(g, origin_count, origin_datatype)?;
    let t = side(g, target_count, target_datatype)?;
    same_shape(&o, &t)?;
    let Some((rank, w, pieces)) = pieces(g, win, target_rank, target_disp, &t)? else {
        return Ok(());
    };
    let mut temp = vec![0u8; o.len];
    g.unlocked(|| -> Result<(), CommError> {
        let mut at = 0;
        for (off, len) in pieces {
            w.get(rank, off, &mut temp[at..at + len])?;
            at += len;
        }
        Ok(())
    })?;
    match &o.layout {
        Some((l, count)) => {
            // SAFETY: MPI's contract: the origin buffer is the program's, writable, for
            // `count` items of its type.
            unsafe { crate::typemap::unpack(l, &temp, origin_addr.cast(), *count) };
        }
        None => {
            // SAFETY: MPI's contract: the origin buffer is writable for the call.
            unsafe { bytes_mut(origin_addr, o.len) }?.copy_from_slice(&temp);
        }
    }
    Ok(())
}

/// `MPI_Accumulate` with a type with gaps on either side: one accumulate per piece of
/// the target's, each of the packed origin's bytes in order (MPI's atomicity is per
/// element, and one origin's accumulates stay in call order).
#[allow(clippy::too_many_arguments)]
pub(crate) fn accumulate(
    g: &mut Guard,
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: Handle,
    target_rank: c_int,
    target_disp: isize,
    target_count: c_int,
    target_datatype: Handle,
    op: Handle,
    win: Handle,
) -> R<()> {
    let o = side(g, origin_count, origin_datatype)?;
    let t = side(g, target_count, target_datatype)?;
    same_shape(&o, &t)?;
    crate::rma::check_op(g, op, t.elem)?;
    let Some((rank, _, pieces)) = pieces(g, win, target_rank, target_disp, &t)? else {
        return Ok(());
    };
    let packed: Box<[u8]>;
    let data: &[u8] = match &o.layout {
        Some((l, count)) => {
            // SAFETY: MPI's contract: the origin buffer holds `count` items of its type.
            packed = unsafe { crate::typemap::packed_copy(l, origin_addr, *count, o.len) };
            &packed
        }
        // SAFETY: MPI's contract: the origin buffer holds the bytes (copied now).
        None => unsafe { bytes(origin_addr, o.len) }?,
    };
    let mut at = 0;
    for (off, len) in pieces {
        let piece = &data[at..at + len];
        crate::rma::queue_at(
            g,
            win,
            crate::rma::ACC,
            op,
            rank,
            off,
            (len, t.elem),
            piece,
            &[],
            None,
        )?;
        at += len;
    }
    Ok(())
}

/// The pieces `(address, length)` of `s`'s items at `addr`, in the packed order.
fn local_pieces(addr: usize, s: &Side) -> Vec<(usize, usize)> {
    match &s.layout {
        Some((l, count)) => l
            .pieces(*count)
            .filter(|p| p.1 > 0)
            .map(|(o, len)| (addr.wrapping_add_signed(o), len))
            .collect(),
        None => vec![(addr, s.len)],
    }
}

/// `MPI_Get_accumulate` with a type with gaps on any of its three sides: one fetching
/// accumulate per run where a target piece and a result piece overlap in the packed
/// order, each with the origin's packed bytes of that run (pieces are whole elements,
/// so every run is; MPI's atomicity is per element, and one origin's operations stay
/// in call order). The fetched bytes land straight in the result's pieces when the
/// epoch ends, as an unpieced call's do.
#[allow(clippy::too_many_arguments)]
pub(crate) fn get_accumulate(
    g: &mut Guard,
    origin: (*const c_void, c_int, Handle),
    result: (*mut c_void, c_int, Handle),
    target_rank: c_int,
    target_disp: isize,
    target: (c_int, Handle),
    op: Handle,
    win: Handle,
) -> R<()> {
    let t = side(g, target.0, target.1)?;
    let r = side(g, result.1, result.2)?;
    same_shape(&r, &t)?;
    crate::rma::check_op(g, op, t.elem)?;
    let packed: Box<[u8]>;
    let data: &[u8] = if op == MPI_NO_OP {
        // The origin buffer is ignored; the target reads as many bytes.
        packed = vec![0u8; t.len].into_boxed_slice();
        &packed
    } else {
        let o = side(g, origin.1, origin.2)?;
        same_shape(&o, &t)?;
        match &o.layout {
            Some((l, count)) => {
                // SAFETY: MPI's contract: the origin buffer holds `count` items of its
                // type.
                packed = unsafe { crate::typemap::packed_copy(l, origin.0, *count, o.len) };
                &packed
            }
            // SAFETY: MPI's contract: the origin buffer holds the bytes (copied now).
            None => unsafe { bytes(origin.0, o.len) }?,
        }
    };
    if r.len > 0 && result.0.is_null() {
        return Err(Fail::new(MPI_ERR_BUFFER, "a null result buffer"));
    }
    let Some((rank, _, tpieces)) = pieces(g, win, target_rank, target_disp, &t)? else {
        return Ok(());
    };
    let rpieces = local_pieces(result.0 as usize, &r);
    // Walk both piece lists over the packed stream.
    let (mut ti, mut ri, mut tdone, mut rdone, mut at) = (0, 0, 0, 0, 0);
    while ti < tpieces.len() && ri < rpieces.len() {
        let (toff, tlen) = tpieces[ti];
        let (raddr, rlen) = rpieces[ri];
        let run = (tlen - tdone).min(rlen - rdone);
        crate::rma::queue_at(
            g,
            win,
            crate::rma::FETCH,
            op,
            rank,
            toff + tdone,
            (run, t.elem),
            &data[at..at + run],
            &[],
            Some(raddr + rdone),
        )?;
        at += run;
        tdone += run;
        rdone += run;
        if tdone == tlen {
            (ti, tdone) = (ti + 1, 0);
        }
        if rdone == rlen {
            (ri, rdone) = (ri + 1, 0);
        }
    }
    Ok(())
}
