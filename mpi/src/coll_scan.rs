//! Prefix reductions and reduce-scatter on intra-communicators: `MPI_Scan`,
//! `MPI_Exscan` (recursive doubling over the collective twin, each call with one tag,
//! as the other collectives: rank `i` ends with the reduction of ranks `0..=i`, or
//! `0..i`), `MPI_Reduce_scatter_block` and `MPI_Reduce_scatter` (an allreduce of the
//! whole vector, `coll_rounds`, after which each rank keeps its block). The
//! operations are the predefined ones and the program's (`op`): partial results are
//! always combined in rank order, as MPI 4.1 §6.9.5 requires for a non-commutative
//! operation. Failures and revokes end them as the other collectives (`coll.rs`'s
//! module doc).

use std::ffi::{c_int, c_void};

use crate::coll::Coll;
use crate::coll_rounds::{Rounds, Scratch};
use crate::consts::*;
use crate::error::{Fail, R};
use crate::op::Reduction;
use crate::state::{call, Guard};
use crate::util::{bytes, bytes_mut, count_arg};

/// The input of a reduction whose result goes to `recvbuf` (of `recv_len` bytes):
/// `sendbuf`'s `len` bytes, or with `MPI_IN_PLACE` the first `len` of `recvbuf`'s.
/// A copy: the result is written into `recvbuf` while the input is still needed.
///
/// # Safety
/// `sendbuf` (unless `MPI_IN_PLACE`) holds `len` bytes, `recvbuf` `recv_len`.
unsafe fn input_of(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    len: usize,
    recv_len: usize,
) -> R<Vec<u8>> {
    if sendbuf as usize == IN_PLACE {
        if len > recv_len {
            return Err(Fail::new(
                MPI_ERR_BUFFER,
                "MPI_IN_PLACE with a short recvbuf",
            ));
        }
        // SAFETY: the caller's contract.
        let all = unsafe { bytes(recvbuf.cast_const(), recv_len) }?;
        return Ok(all[..len].to_vec());
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { bytes(sendbuf, len) }?.to_vec())
}

/// The prefix of ranks `0..=me` (`inclusive`) or `0..me` of `input` into `out`: in
/// round `k` (1, 2, 4, ...) each rank sends its partial result (the reduction of ranks
/// `me - 2k + 1 ..= me`, from 0) to `me + k` and combines the one from `me - k`, which
/// covers the ranks just below those it holds, so it goes on the left:
/// `partial = from_below op partial`. The exclusive prefix is the combination of what
/// was received, each piece from ranks below the previous ones, so on the left too;
/// rank 0's `out` is left as it is (MPI leaves it undefined).
fn prefix(
    g: &mut Guard,
    c: &Coll,
    input: Vec<u8>,
    out: &mut [u8],
    op: &Reduction,
    inclusive: bool,
) -> R<()> {
    let mut partial = input;
    let mut from_below = Scratch::new();
    let tmp = from_below.get(partial.len());
    let mut have_below = false;
    let mut k: u32 = 1;
    while k < c.n {
        let up = c.me.checked_add(k).filter(|&r| r < c.n);
        let down = c.me.checked_sub(k);
        {
            let sends: &[(u32, &[u8])] = &[(up.unwrap_or(0), &partial)];
            let sends = if up.is_some() { sends } else { &[] };
            let mut recv = [(down.unwrap_or(0), &mut *tmp)];
            let recvs: &mut [(u32, &mut [u8])] = if down.is_some() { &mut recv } else { &mut [] };
            c.exchange(g, sends, recvs)?;
        }
        if down.is_some() {
            // The exclusive prefix gathers what came from below in `out`.
            if !inclusive && have_below {
                op.reduce_into_higher(g, tmp, out)?;
            } else if !inclusive {
                out.copy_from_slice(tmp);
                have_below = true;
            }
            op.reduce_into_higher(g, tmp, &mut partial)?;
        }
        k = k.saturating_mul(2);
    }
    if inclusive {
        out.copy_from_slice(&partial);
    }
    Ok(())
}

/// `MPI_Scan` (`inclusive`) or `MPI_Exscan`.
#[allow(clippy::too_many_arguments)]
fn scan(
    g: &mut Guard,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
    inclusive: bool,
) -> R<()> {
    let lib = g.lib()?;
    let (len, t) = lib.byte_len(count, datatype)?;
    let op = Reduction::new(lib, op, datatype, &t)?;
    let c = Coll::start(g, comm)?;
    // SAFETY: MPI's contract: the buffers hold `count` items of `datatype`.
    let input = unsafe { input_of(sendbuf, recvbuf, len, len) }?;
    // SAFETY: MPI's contract: `recvbuf` holds `count` items, the program's alone during
    // the call.
    let out = unsafe { bytes_mut(recvbuf, len) }?;
    prefix(g, &c, input, out, &op, inclusive)
}

crate::mpi_fn! {
    /// `MPI_Scan`: rank `i` gets the reduction of ranks `0..=i`'s inputs.
    fn MPI_Scan / PMPI_Scan(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::Scan, sendbuf, recvbuf, count, datatype, op, comm, None,
        ) {
            return rc;
        }
        call(comm, |g| scan(g, sendbuf, recvbuf, count, datatype, op, comm, true))
    }
}

crate::mpi_fn! {
    /// `MPI_Exscan`: rank `i` gets the reduction of ranks `0..i`'s inputs; rank 0's
    /// `recvbuf` is not written.
    fn MPI_Exscan / PMPI_Exscan(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::Exscan, sendbuf, recvbuf, count, datatype, op, comm, None,
        ) {
            return rc;
        }
        call(comm, |g| scan(g, sendbuf, recvbuf, count, datatype, op, comm, false))
    }
}

/// Reduces the vector of `counts[0] + counts[1] + ...` items over the communicator and
/// leaves block `me` (of `counts[me]` items, the blocks laid out in rank order) in
/// `recvbuf`. With `MPI_IN_PLACE` the input is `recvbuf`'s whole vector.
#[allow(clippy::too_many_arguments)]
fn reduce_scatter(
    g: &mut Guard,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &dyn Fn(u32) -> R<usize>,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> R<()> {
    let lib = g.lib()?;
    let (item, t) = lib.byte_len(1, datatype)?;
    let op = Reduction::new(lib, op, datatype, &t)?;
    let mut c = Rounds::start(g, comm, 2)?;
    let (me, n) = (c.me, c.n);
    let mut total = 0usize;
    let mut mine = (0, 0);
    for r in 0..n {
        let items = counts(r)?;
        let len = items
            .checked_mul(item)
            .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "a count too large"))?;
        if r == me {
            mine = (total, len);
        }
        total = total
            .checked_add(len)
            .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "counts too large"))?;
    }
    let in_place = sendbuf as usize == IN_PLACE;
    // SAFETY: MPI's contract: `sendbuf` holds the whole vector; `recvbuf` its block, or
    // the whole vector with `MPI_IN_PLACE`.
    let mut acc = unsafe { input_of(sendbuf, recvbuf, total, if in_place { total } else { 0 }) }?;
    let mut scratch = Scratch::new();
    c.allreduce(g, &mut acc, scratch.get(total), &op)?;
    // SAFETY: as above; the program's alone during the call.
    let out = unsafe { bytes_mut(recvbuf, mine.1) }?;
    out.copy_from_slice(&acc[mine.0..mine.0 + mine.1]);
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Reduce_scatter_block`: the reduction of `n * recvcount` items, rank `i`
    /// keeping block `i` of `recvcount`.
    fn MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcount: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::ScatterBlock { recvcount }, sendbuf, recvbuf, recvcount, datatype, op, comm, None,
        ) {
            return rc;
        }
        if crate::coll_inter::is_inter_comm(comm) {
            // SAFETY: this function's contract; the request is the helper's local.
            return crate::coll_inter::blocking(|q| unsafe {
                crate::nbc_scan::PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, q)
            });
        }
        call(comm, |g| {
            let n = count_arg(recvcount)?;
            reduce_scatter(g, sendbuf, recvbuf, &|_| Ok(n), datatype, op, comm)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Reduce_scatter`: the reduction of `recvcounts[0] + ... + recvcounts[n-1]`
    /// items, rank `i` keeping block `i` of `recvcounts[i]`.
    fn MPI_Reduce_scatter / PMPI_Reduce_scatter(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::Scatter { recvcounts }, sendbuf, recvbuf, 0, datatype, op, comm, None,
        ) {
            return rc;
        }
        if crate::coll_inter::is_inter_comm(comm) {
            // SAFETY: this function's contract; the request is the helper's local.
            return crate::coll_inter::blocking(|q| unsafe {
                crate::nbc_scan::PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, q)
            });
        }
        call(comm, |g| {
            if recvcounts.is_null() {
                return Err(Fail::new(MPI_ERR_ARG, "a null recvcounts"));
            }
            let counts = |r: u32| {
                // SAFETY: MPI's contract: `recvcounts` holds one count per rank (`r` <
                // the communicator's size).
                count_arg(unsafe { *recvcounts.add(r as usize) })
            };
            reduce_scatter(g, sendbuf, recvbuf, &counts, datatype, op, comm)
        })
    }
}
