//! One-sided communication calls on a window (`win`): `MPI_Put`, `MPI_Get` (complete
//! when they return: the runtime's single copy or fabric RMA), and the accumulates
//! `MPI_Accumulate`, `MPI_Get_accumulate`, `MPI_Fetch_and_op`,
//! `MPI_Compare_and_swap`, which the closing `MPI_Win_fence` applies ([`fence`]).
//!
//! # Why accumulates are atomic
//! MPI requires accumulates of the same operation (or `MPI_REPLACE`/`MPI_NO_OP`) to the
//! same location to be atomic element by element, whoever calls them. A put here is a
//! copy into the target's memory by the origin's process (or its NIC), so two origins'
//! read-modify-write copies could interleave. So an accumulate is never a copy: the
//! origin encodes it (operation, element kind, target offset, a copy of its data) and
//! keeps it until the fence that closes the epoch. There every rank sends each other
//! rank the batch of accumulates it queued for it (possibly empty), and each target
//! applies the batches itself, one operation at a time, origin by origin in rank
//! order, each origin's in the order it called them. One process (the target) executes
//! every accumulate to its memory, sequentially: each is atomic (whole, not just per
//! element), and the outcome is the same in every run (the same order). Fetching
//! operations (`Get_accumulate`, `Fetch_and_op`, `Compare_and_swap`) take the value
//! before their own update, and the target sends them back to the origin in one reply,
//! which the origin's fence writes into the result buffers (MPI defines them only after
//! the epoch ends). A barrier ends the fence, so no rank reads a window (or starts the
//! next epoch's puts and gets) before every target has applied its accumulates.
//!
//! The fence first sums, over all ranks, how many accumulates were queued (one
//! allreduce, which is also the barrier that completes the epoch's puts): an epoch of
//! puts and gets only costs that allreduce. A failed member makes the allreduce, a
//! batch receive or the closing barrier fail with `MPIX_ERR_PROC_FAILED` (the
//! runtime's collectives and receives give up on a dead member), never a hang.
//!
//! Accumulates take contiguous datatypes only (basic or `MPI_Type_contiguous`; puts and
//! gets also take types with gaps: `rma_gaps`); the origin's and the target's types
//! must have the same element kind and byte length. User operations are refused
//! (`MPI_ERR_OP`, as MPI requires predefined operations).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use sf::comm::{ReduceOp, Window};
use sf::CommError;

use crate::consts::*;
use crate::datatype::{basic_entry, reduce, Elem};
use crate::error::{Fail, R};
use crate::rma_gaps::has_gaps;
use crate::state::Guard;
use crate::util::{bytes, bytes_mut};
use crate::win::{entry, win_call, MPI_ERR_RMA_RANGE};

/// The tags of the fence's messages on the window's own communicator (the runtime's
/// window uses 1 for its descriptors).
const TAG_BATCH: u32 = 2;
const TAG_REPLY: u32 = 3;

/// `MPI_REPLACE`, `MPI_NO_OP` (the ABI's values).
const MPI_REPLACE: Handle = 0x3c;
pub(crate) const MPI_NO_OP: Handle = 0x3d;

/// Kinds of queued operations (the first byte of each encoded one).
pub(crate) const ACC: u8 = 0;
pub(crate) const FETCH: u8 = 1;
const CAS: u8 = 2;

/// Header: kind (1), operation (4), element type (4), target offset (8), length (8).
const HEADER: usize = 1 + 4 + 4 + 8 + 8;

/// An accumulate of this epoch, queued at its origin.
pub(crate) struct Pending {
    pub target: u32,
    /// The operation, encoded as the target decodes it ([`apply_batch`]).
    pub wire: Vec<u8>,
    /// Where a fetching operation's result goes (the program's buffer, valid until the
    /// epoch ends: MPI's contract), and its length.
    pub result: Option<(usize, usize)>,
}

/// A predefined type handle whose elements are `elem` (the same value in every
/// process: the ABI's), so the target can decode it.
fn wire_type(elem: Elem) -> Option<u32> {
    (0x200u32..0x2f0).find(|&h| basic_entry(h as Handle).is_some_and(|t| t.elem == elem))
}

fn encode(kind: u8, op: Handle, ty: u32, offset: u64, data: &[u8], compare: &[u8]) -> Vec<u8> {
    let mut w = Vec::with_capacity(HEADER + data.len() + compare.len());
    w.push(kind);
    w.extend_from_slice(&(op as u32).to_le_bytes());
    w.extend_from_slice(&ty.to_le_bytes());
    w.extend_from_slice(&offset.to_le_bytes());
    w.extend_from_slice(&(data.len() as u64).to_le_bytes());
    w.extend_from_slice(data);
    w.extend_from_slice(compare);
    w
}

/// One decoded operation of a batch.
struct Decoded<'a> {
    kind: u8,
    op: Handle,
    elem: Elem,
    offset: usize,
    data: &'a [u8],
    compare: &'a [u8],
}

/// The operation at the start of `b` and the rest; `None` for a malformed batch.
fn decode(b: &[u8]) -> Option<(Decoded<'_>, &[u8])> {
    let h = b.get(..HEADER)?;
    let kind = h[0];
    let op = u32::from_le_bytes(h[1..5].try_into().ok()?) as Handle;
    let ty = u32::from_le_bytes(h[5..9].try_into().ok()?) as Handle;
    let offset = usize::try_from(u64::from_le_bytes(h[9..17].try_into().ok()?)).ok()?;
    let len = usize::try_from(u64::from_le_bytes(h[17..25].try_into().ok()?)).ok()?;
    let elem = basic_entry(ty)?.elem;
    let cmp_len = if kind == CAS { len } else { 0 };
    let end = HEADER.checked_add(len)?.checked_add(cmp_len)?;
    let body = b.get(HEADER..end)?;
    let (data, compare) = body.split_at(len);
    Some((
        Decoded {
            kind,
            op,
            elem,
            offset,
            data,
            compare,
        },
        &b[end..],
    ))
}

/// `cur = data op cur` (`MPI_REPLACE`: `data`; `MPI_NO_OP`: unchanged).
fn combine(op: Handle, elem: Elem, cur: &mut [u8], data: &[u8]) -> R<()> {
    match op {
        MPI_REPLACE => {
            cur.copy_from_slice(data);
            Ok(())
        }
        MPI_NO_OP => Ok(()),
        _ => reduce(op, elem, cur, data),
    }
}

/// Applies one origin's batch to this rank's window, in order; the results of its
/// fetching operations, concatenated, and how many there were. An operation that
/// cannot be applied (the origin checked them all, so only a malformed batch) is
/// skipped and its result left zero, so the reply keeps its length.
pub(crate) fn apply_batch(win: &Window<'static>, mut batch: &[u8]) -> (Vec<u8>, usize) {
    let mut reply = Vec::new();
    let mut fetches = 0;
    while !batch.is_empty() {
        let Some((d, rest)) = decode(batch) else {
            log::warn!("a malformed accumulate batch: the rest is dropped");
            break;
        };
        batch = rest;
        let mut cur = vec![0u8; d.data.len()];
        let read = win.read_local(d.offset, &mut cur);
        if d.kind != ACC {
            fetches += 1;
            if read.is_ok() {
                reply.extend_from_slice(&cur);
            } else {
                reply.resize(reply.len() + cur.len(), 0);
            }
        }
        if read.is_err() {
            continue;
        }
        let write = if d.kind == CAS {
            if cur == d.compare {
                Some(d.data.to_vec())
            } else {
                None
            }
        } else if d.op == MPI_NO_OP {
            None
        } else {
            combine(d.op, d.elem, &mut cur, d.data).ok().map(|()| cur)
        };
        if let Some(new) = write {
            // In range: the read above was.
            let _ = win.write_local(d.offset, &new);
        }
    }
    (reply, fetches)
}

/// Writes a reply's results into the origin's result buffers, in order.
pub(crate) fn deliver(reply: &[u8], results: &[(usize, usize)]) -> R<()> {
    let want: usize = results.iter().map(|&(_, len)| len).sum();
    if reply.len() != want {
        return Err(Fail::new(
            MPI_ERR_INTERN,
            format!("an accumulate reply of {} bytes for {want}", reply.len()),
        ));
    }
    let mut at = 0;
    for &(ptr, len) in results {
        // SAFETY: MPI's contract: the result buffer of a fetching operation holds `len`
        // bytes and stays valid (and untouched by the program) until the epoch ends,
        // which is this fence; `reply` is this library's own memory.
        unsafe { std::ptr::copy_nonoverlapping(reply[at..].as_ptr(), ptr as *mut u8, len) };
        at += len;
    }
    Ok(())
}

/// The failure of a fence step that gave up: some member is known failed.
fn gave_up() -> CommError {
    CommError::ProcFailed { ranks: Vec::new() }
}

/// Receives the message from `source` with `tag` on `comm`, whatever its length. Gives
/// up with `ProcFailed` once any member is known failed (a live `source` may have
/// given up the fence before sending), as the runtime's collectives do: never a hang.
fn recv_any_len(comm: &sf::Comm, source: u32, tag: u32) -> Result<Vec<u8>, CommError> {
    let mut spin = crate::util::spin_wait();
    let st = loop {
        if let Some(st) = comm.iprobe(Some(source), Some(tag))? {
            break st;
        }
        if comm.any_failed() {
            return Err(gave_up());
        }
        spin.pause();
    };
    let mut buf = vec![0u8; st.len];
    comm.recv(Some(source), Some(tag), &mut buf)?;
    Ok(buf)
}

/// Waits for `sends`, giving up as [`recv_any_len`] does (a dropped send is cancelled).
fn wait_sends(comm: &sf::Comm, mut sends: Vec<sf::comm::SendRequest<'_>>) -> Result<(), CommError> {
    let mut spin = crate::util::spin_wait();
    while !sends.is_empty() {
        let mut i = 0;
        while i < sends.len() {
            if sends[i].test()? {
                drop(sends.swap_remove(i));
            } else {
                i += 1;
            }
        }
        if sends.is_empty() {
            break;
        }
        if comm.any_failed() {
            return Err(gave_up());
        }
        spin.pause();
    }
    Ok(())
}

/// A failure of a collective step on a window whose communicator has a failed member:
/// `MPIX_ERR_PROC_FAILED`, whatever the step saw. After a failed fence the survivors'
/// collectives on the window are out of step (a survivor may have sent its part of an
/// allreduce that the others gave up), so a later step can see a stale message
/// (`MPI_ERR_TRUNCATE`) rather than the failure that caused it.
pub(crate) fn failure_wins(comm: &sf::Comm, fail: Fail) -> Fail {
    if fail.class != MPI_ERR_PROC_FAILED && comm.any_failed() {
        return Fail::new(
            MPI_ERR_PROC_FAILED,
            format!("a member of the window has failed ({})", fail.message),
        );
    }
    fail
}

/// `MPI_Win_fence`'s work, without the library's lock: see the module doc. Once a
/// member is known failed every fence fails with `MPIX_ERR_PROC_FAILED` at once.
pub(crate) fn fence(win: &Arc<Window<'static>>, me: u32, n: u32, pending: Vec<Pending>) -> R<()> {
    let comm = win.comm();
    if comm.any_failed() {
        return Err(Fail::new(
            MPI_ERR_PROC_FAILED,
            "a member of the window has failed: fences cannot complete",
        ));
    }
    epoch_end(win, me, n, pending).map_err(|f| failure_wins(comm, f))
}

fn epoch_end(win: &Arc<Window<'static>>, me: u32, n: u32, pending: Vec<Pending>) -> R<()> {
    let comm = win.comm();
    let mut total = [pending.len() as u64];
    comm.allreduce(&mut total, ReduceOp::Sum)?;
    if total[0] == 0 {
        return Ok(());
    }
    let n = n as usize;
    let mut batches = vec![Vec::new(); n];
    let mut results: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for p in pending {
        let t = p.target as usize;
        batches[t].extend_from_slice(&p.wire);
        if let Some(r) = p.result {
            results[t].push(r);
        }
    }
    let mut sends = Vec::with_capacity(n);
    for (t, b) in batches.iter().enumerate() {
        if t != me as usize {
            // SAFETY: waited for below, or dropped (cancelled) on an early return,
            // before `batches` (declared first, so dropped last) goes.
            sends.push(unsafe { comm.isend(t as u32, TAG_BATCH, b) }?);
        }
    }
    let mut replies = Vec::new();
    let mut reply_sends = Vec::new();
    for r in 0..n {
        let (reply, fetches) = if r == me as usize {
            apply_batch(win, &batches[r])
        } else {
            let b = recv_any_len(comm, r as u32, TAG_BATCH)?;
            apply_batch(win, &b)
        };
        if fetches == 0 {
            continue;
        }
        if r == me as usize {
            deliver(&reply, &results[r])?;
        } else {
            replies.push((r, reply));
        }
    }
    for (r, reply) in &replies {
        // SAFETY: as for `sends`: `replies` outlives `reply_sends` (declared first).
        reply_sends.push(unsafe { comm.isend(*r as u32, TAG_REPLY, reply) }?);
    }
    for (t, res) in results.iter().enumerate() {
        if t != me as usize && !res.is_empty() {
            let reply = recv_any_len(comm, t as u32, TAG_REPLY)?;
            deliver(&reply, res)?;
        }
    }
    wait_sends(comm, sends)?;
    wait_sends(comm, reply_sends)?;
    comm.barrier()?;
    Ok(())
}

/// A checked target: its rank (`None`: `MPI_PROC_NULL`), the window, its byte offset.
pub(crate) struct Target {
    pub rank: Option<u32>,
    pub win: Arc<Window<'static>>,
    pub offset: usize,
}

/// Checks `target_rank` and the range of `len` bytes at `disp` units of the target's
/// displacement unit.
pub(crate) fn target(
    g: &mut Guard,
    win: Handle,
    target_rank: c_int,
    disp: isize,
    len: usize,
) -> R<Target> {
    let e = entry(g.lib()?, win)?;
    let w = Arc::clone(&e.win);
    if target_rank == MPI_PROC_NULL {
        return Ok(Target {
            rank: None,
            win: w,
            offset: 0,
        });
    }
    let rank = crate::util::rank_arg(target_rank, e.size)?;
    if w.is_dynamic() {
        // The displacement is an address of the target (`MPI_Get_address`).
        let range = |m: String| Fail::new(MPI_ERR_RMA_RANGE, m);
        let offset = usize::try_from(disp).map_err(|_| range(format!("address {disp}")))?;
        g.unlocked(|| w.check_attached(rank, offset, len))
            .map_err(|err| match err {
                CommError::InvalidArgument(m) => range(m),
                other => Fail::from(other),
            })?;
        return Ok(Target {
            rank: Some(rank),
            win: w,
            offset,
        });
    }
    let unit = e.disp_units[rank as usize];
    let size = w.len_of(rank)?;
    let offset = u64::try_from(disp)
        .ok()
        .and_then(|d| d.checked_mul(unit))
        .and_then(|o| usize::try_from(o).ok());
    match offset {
        Some(o) if o.checked_add(len).is_some_and(|end| end <= size) => Ok(Target {
            rank: Some(rank),
            win: w,
            offset: o,
        }),
        _ => Err(Fail::new(
            MPI_ERR_RMA_RANGE,
            format!(
                "{len} bytes at displacement {disp} (unit {unit}) are outside rank {rank}'s \
                 window of {size} bytes"
            ),
        )),
    }
}

/// The byte length and element kind of `count` items of `dt` (contiguous types).
fn typed(g: &mut Guard, count: c_int, dt: Handle) -> R<(usize, Elem)> {
    let (len, t) = g.lib()?.byte_len(count, dt)?;
    Ok((len, t.elem))
}

/// The origin's and the target's sides describe the same bytes of the same kind.
fn same_shape(origin: (usize, Elem), target: (usize, Elem)) -> R<()> {
    if origin.0 != target.0 || (origin.0 > 0 && origin.1 != target.1) {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            format!(
                "origin ({} bytes of {:?}) and target ({} bytes of {:?}) differ",
                origin.0, origin.1, target.0, target.1
            ),
        ));
    }
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Put`: in the target's memory when it returns.
    fn MPI_Put / PMPI_Put(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: isize,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle
    ) {
        win_call(win, |g| {
            if has_gaps(g, origin_datatype)? || has_gaps(g, target_datatype)? {
                return crate::rma_gaps::put(g, origin_addr, origin_count, origin_datatype,
                    target_rank, target_disp, target_count, target_datatype, win);
            }
            let o = typed(g, origin_count, origin_datatype)?;
            let t = typed(g, target_count, target_datatype)?;
            same_shape(o, t)?;
            let tg = target(g, win, target_rank, target_disp, t.0)?;
            let Some(rank) = tg.rank else { return Ok(()) };
            // SAFETY: MPI's contract: the origin buffer holds the bytes for the call.
            let data = unsafe { bytes(origin_addr, o.0) }?;
            Ok(g.unlocked(|| tg.win.put(rank, tg.offset, data))?)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Get`: in the origin's buffer when it returns.
    fn MPI_Get / PMPI_Get(
        origin_addr: *mut c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: isize,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle
    ) {
        win_call(win, |g| {
            if has_gaps(g, origin_datatype)? || has_gaps(g, target_datatype)? {
                return crate::rma_gaps::get(g, origin_addr, origin_count, origin_datatype,
                    target_rank, target_disp, target_count, target_datatype, win);
            }
            let o = typed(g, origin_count, origin_datatype)?;
            let t = typed(g, target_count, target_datatype)?;
            same_shape(o, t)?;
            let tg = target(g, win, target_rank, target_disp, t.0)?;
            let Some(rank) = tg.rank else { return Ok(()) };
            // SAFETY: MPI's contract: the origin buffer is the program's, writable, for
            // the call.
            let buf = unsafe { bytes_mut(origin_addr, o.0) }?;
            Ok(g.unlocked(|| tg.win.get(rank, tg.offset, buf))?)
        })
    }
}

/// Checks `op` on elements `elem` for an accumulate: a predefined operation defined on
/// them, `MPI_REPLACE` or `MPI_NO_OP`.
pub(crate) fn check_op(g: &mut Guard, op: Handle, elem: Elem) -> R<()> {
    if g.lib()?.ops.contains_key(&op) {
        return Err(Fail::new(
            MPI_ERR_OP,
            "one-sided accumulates take predefined operations only",
        ));
    }
    if op == MPI_REPLACE || op == MPI_NO_OP {
        return Ok(());
    }
    reduce(op, elem, &mut [], &[])
}

/// Queues an accumulate of this epoch on `win`.
#[allow(clippy::too_many_arguments)]
fn queue(
    g: &mut Guard,
    win: Handle,
    kind: u8,
    op: Handle,
    target_rank: c_int,
    target_disp: isize,
    t: (usize, Elem),
    data: &[u8],
    compare: &[u8],
    result: Option<usize>,
) -> R<()> {
    check_op(g, op, t.1)?;
    let tg = target(g, win, target_rank, target_disp, t.0)?;
    let Some(rank) = tg.rank else { return Ok(()) };
    queue_at(g, win, kind, op, rank, tg.offset, t, data, compare, result)
}

/// Queues an accumulate of `t.0` bytes of elements `t.1` at byte `offset` of `rank`'s
/// window (checked by the caller), or sends it to the target's agent in a passive
/// epoch.
#[allow(clippy::too_many_arguments)]
pub(crate) fn queue_at(
    g: &mut Guard,
    win: Handle,
    kind: u8,
    op: Handle,
    rank: u32,
    offset: usize,
    t: (usize, Elem),
    data: &[u8],
    compare: &[u8],
    result: Option<usize>,
) -> R<()> {
    let ty = wire_type(t.1)
        .ok_or_else(|| Fail::new(MPI_ERR_TYPE, "no predefined type of these elements"))?;
    let wire = encode(kind, op, ty, offset as u64, data, compare);
    let e = entry(g.lib()?, win)?;
    if e.locked[rank as usize] != 0 {
        // A passive epoch: the target's agent applies it now.
        let w = Arc::clone(&e.win);
        let result = result.map(|p| (p, t.0));
        return g.unlocked(|| crate::passive::accumulate(&w, rank, &wire, result));
    }
    e.pending.push(Pending {
        target: rank,
        wire,
        result: result.map(|p| (p, t.0)),
    });
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Accumulate`: applied at the target by the fence that ends the epoch.
    fn MPI_Accumulate / PMPI_Accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: isize,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle
    ) {
        win_call(win, |g| {
            if has_gaps(g, origin_datatype)? || has_gaps(g, target_datatype)? {
                return crate::rma_gaps::accumulate(g, origin_addr, origin_count,
                    origin_datatype, target_rank, target_disp, target_count,
                    target_datatype, op, win);
            }
            let o = typed(g, origin_count, origin_datatype)?;
            let t = typed(g, target_count, target_datatype)?;
            same_shape(o, t)?;
            // SAFETY: MPI's contract: the origin buffer holds the bytes (copied now).
            let data = unsafe { bytes(origin_addr, o.0) }?;
            queue(g, win, ACC, op, target_rank, target_disp, t, data, &[], None)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Get_accumulate`: the target's value before the update lands in
    /// `result_addr` at the fence that ends the epoch (`MPI_NO_OP`: a get, atomic
    /// with the accumulates).
    fn MPI_Get_accumulate / PMPI_Get_accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        result_addr: *mut c_void,
        result_count: c_int,
        result_datatype: Handle,
        target_rank: c_int,
        target_disp: isize,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle
    ) {
        win_call(win, |g| {
            let gaps = has_gaps(g, target_datatype)?
                || has_gaps(g, result_datatype)?
                || (op != MPI_NO_OP && has_gaps(g, origin_datatype)?);
            if gaps {
                return crate::rma_gaps::get_accumulate(g,
                    (origin_addr, origin_count, origin_datatype),
                    (result_addr, result_count, result_datatype),
                    target_rank, target_disp, (target_count, target_datatype), op, win);
            }
            let t = typed(g, target_count, target_datatype)?;
            let r = typed(g, result_count, result_datatype)?;
            same_shape(r, t)?;
            let zeros;
            let data = if op == MPI_NO_OP {
                // The origin buffer is ignored; the target reads as many bytes.
                zeros = vec![0u8; t.0];
                &zeros[..]
            } else {
                let o = typed(g, origin_count, origin_datatype)?;
                same_shape(o, t)?;
                // SAFETY: MPI's contract: the origin buffer holds the bytes (copied now).
                unsafe { bytes(origin_addr, o.0) }?
            };
            // SAFETY: checked for null when not empty (MPI's contract: valid until the
            // epoch ends); only written by the fence.
            let res = unsafe { bytes_mut(result_addr, r.0) }?.as_mut_ptr() as usize;
            queue(g, win, FETCH, op, target_rank, target_disp, t, data, &[], Some(res))
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Fetch_and_op`: `MPI_Get_accumulate` of one element.
    fn MPI_Fetch_and_op / PMPI_Fetch_and_op(
        origin_addr: *const c_void,
        result_addr: *mut c_void,
        datatype: Handle,
        target_rank: c_int,
        target_disp: isize,
        op: Handle,
        win: Handle
    ) {
        // SAFETY: the same contract, with counts of 1.
        unsafe {
            PMPI_Get_accumulate(
                origin_addr, 1, datatype, result_addr, 1, datatype, target_rank, target_disp,
                1, datatype, op, win,
            )
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Compare_and_swap`: the target's element becomes `origin_addr`'s when it
    /// equals `compare_addr`'s (bitwise); its former value lands in `result_addr` at the
    /// fence that ends the epoch.
    fn MPI_Compare_and_swap / PMPI_Compare_and_swap(
        origin_addr: *const c_void,
        compare_addr: *const c_void,
        result_addr: *mut c_void,
        datatype: Handle,
        target_rank: c_int,
        target_disp: isize,
        win: Handle
    ) {
        win_call(win, |g| {
            let t = typed(g, 1, datatype)?;
            // SAFETY: MPI's contract: one element at each (copied now).
            let data = unsafe { bytes(origin_addr, t.0) }?;
            // SAFETY: as above.
            let compare = unsafe { bytes(compare_addr, t.0) }?;
            // SAFETY: as in MPI_Get_accumulate.
            let res = unsafe { bytes_mut(result_addr, t.0) }?.as_mut_ptr() as usize;
            queue(g, win, CAS, MPI_REPLACE, target_rank, target_disp, t, data, compare, Some(res))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_round_trip_and_bad_batches_are_refused() {
        let w = encode(CAS, MPI_REPLACE, 0x209, 12, &[1, 0, 0, 0], &[2, 0, 0, 0]);
        let (d, rest) = decode(&w).unwrap();
        assert!(rest.is_empty());
        assert_eq!(
            (d.kind, d.op, d.elem, d.offset),
            (CAS, MPI_REPLACE, Elem::I32, 12)
        );
        assert_eq!(
            (d.data, d.compare),
            (&[1u8, 0, 0, 0][..], &[2u8, 0, 0, 0][..])
        );
        assert!(decode(&w[..w.len() - 1]).is_none());
        let mut bad = w.clone();
        bad[5] = 0xff; // not a type
        assert!(decode(&bad).is_none());
    }

    #[test]
    fn every_reducible_element_has_a_wire_type() {
        for h in 0x200..0x2f0 {
            if let Some(t) = basic_entry(h) {
                let w = wire_type(t.elem).unwrap();
                assert_eq!(basic_entry(w as Handle).unwrap().elem, t.elem);
            }
        }
    }

    #[test]
    fn replace_and_no_op_combine() {
        let mut cur = [1u8, 2];
        combine(MPI_REPLACE, Elem::U8, &mut cur, &[7, 8]).unwrap();
        assert_eq!(cur, [7, 8]);
        combine(MPI_NO_OP, Elem::U8, &mut cur, &[0, 0]).unwrap();
        assert_eq!(cur, [7, 8]);
        combine(0x21, Elem::U8, &mut cur, &[1, 1]).unwrap();
        assert_eq!(cur, [8, 9]);
    }
}
