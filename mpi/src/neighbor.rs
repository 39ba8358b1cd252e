//! The neighborhood collectives (MPI 4.1 §8.6), blocking and non-blocking:
//! `MPI_Neighbor_allgather`, `_allgatherv`, `_alltoall`, `_alltoallv`, `_alltoallw`
//! and their `MPI_Ineighbor_` forms, on a communicator with a Cartesian grid
//! (`topo.rs`), a graph (`graph.rs`) or a distributed graph (`dist_graph.rs`).
//!
//! Each rank receives block `j` from its `j`-th in-neighbor and sends its block `j`
//! (all the same block for the allgathers) to its `j`-th out-neighbor: one exchange,
//! every receive posted in block order and every send straight from the program's
//! buffer, on one tag of the communicator's collective sequence (the blocking form
//! through `Coll::exchange`, the non-blocking one as a one-step `nbc` schedule).
//! Neighbors are, on a grid, in each dimension the rank one step down then one step
//! up (`MPI_PROC_NULL` off a non-periodic edge: nothing sent, the block not written);
//! on a graph, its neighbors in the order of `edges`; on a distributed graph, the
//! sources and destinations as given.
//!
//! Two messages between the same pair of ranks on one tag match in the order they
//! were posted. On a periodic dimension of one or two processes a rank's down and up
//! neighbors are one process, and MPI wants what a rank sends upwards to arrive in its
//! upper neighbor's block from below; so in each dimension the send upwards is posted
//! before the send downwards, and it meets the receive from below, posted first.

use std::ffi::{c_int, c_void};

use crate::coll::Coll;
use crate::collv::{blocks_of, disjoint_blocks};
use crate::consts::*;
use crate::error::{Fail, R};
use crate::nbc::{request_slot, Nbc, Span, Step};
use crate::state::{call, Guard};
use crate::util::{bytes, bytes_mut};

/// `MPI_Aint`: an address-sized signed integer.
#[allow(non_camel_case_types)]
type MPI_Aint = isize;

/// Who this rank exchanges with, in block order (`None`: `MPI_PROC_NULL`).
struct Neighbors {
    sources: Vec<Option<u32>>,
    destinations: Vec<Option<u32>>,
    /// The order in which the sends are posted (block indices; see the module doc).
    send_order: Vec<usize>,
}

/// The neighbors of this rank in `comm`'s topology, or `MPI_ERR_TOPOLOGY`.
fn neighbors_of(g: &mut Guard, comm: Handle) -> R<Neighbors> {
    let e = g.lib()?.comm(comm)?;
    e.intra()?;
    if let Some(c) = &e.cart {
        let list = c.neighbors(e.rank);
        let send_order = (0..list.len() / 2)
            .flat_map(|d| [2 * d + 1, 2 * d])
            .collect();
        return Ok(Neighbors {
            sources: list.clone(),
            destinations: list,
            send_order,
        });
    }
    if let Some(gr) = &e.graph {
        let list: Vec<Option<u32>> = gr
            .neighbors(e.rank as c_int)?
            .iter()
            .map(|&r| Some(r as u32))
            .collect();
        return Ok(Neighbors {
            send_order: (0..list.len()).collect(),
            sources: list.clone(),
            destinations: list,
        });
    }
    if let Some(d) = &e.dist_graph {
        return Ok(Neighbors {
            sources: d.sources.iter().map(|&(r, _)| Some(r)).collect(),
            destinations: d.destinations.iter().map(|&(r, _)| Some(r)).collect(),
            send_order: (0..d.destinations.len()).collect(),
        });
    }
    Err(Fail::new(
        MPI_ERR_TOPOLOGY,
        "a neighborhood collective on a communicator without a topology",
    ))
}

/// This rank's in- and out-degrees in `comm`'s topology; `None` when it has none (the
/// entry point reports that).
pub(crate) fn degrees(comm: Handle) -> Option<(usize, usize)> {
    let mut found = None;
    call(comm, |g| {
        if let Ok(nb) = neighbors_of(g, comm) {
            found = Some((nb.sources.len(), nb.destinations.len()));
        }
        Ok(())
    });
    found
}

/// Byte blocks: `(start, length)` per neighbor, and the span they cover.
type Blocks = (Vec<(usize, usize)>, usize);

/// `n` blocks of `len` bytes one after another.
fn consecutive(n: usize, len: usize) -> Blocks {
    ((0..n).map(|j| (j * len, len)).collect(), n * len)
}

/// `n` times the same block of `len` bytes (an allgather's send side).
fn same(n: usize, len: usize) -> Blocks {
    (vec![(0, len); n], len)
}

/// The blocks of a `v` argument (counts and displacements in items of `dt`, which
/// must be contiguous).
///
/// # Safety
/// `counts` and `displs` hold `n` ints.
unsafe fn v_blocks(
    g: &mut Guard,
    counts: *const c_int,
    displs: *const c_int,
    n: usize,
    dt: Handle,
) -> R<Blocks> {
    g.lib()?.byte_len(0, dt)?;
    // SAFETY: the caller's contract.
    unsafe { blocks_of(g, counts, displs, n as u32, dt) }
}

/// The blocks of a `w` argument: a count, a byte displacement and a contiguous type
/// per neighbor.
///
/// # Safety
/// The three arrays hold `n` entries.
unsafe fn w_blocks(
    g: &mut Guard,
    counts: *const c_int,
    displs: *const MPI_Aint,
    types: *const Handle,
    n: usize,
) -> R<Blocks> {
    if n == 0 {
        return Ok((Vec::new(), 0));
    }
    if counts.is_null() || displs.is_null() || types.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "a null counts, displacements or types array",
        ));
    }
    // SAFETY: the caller's contract.
    let (c, d, t) = unsafe {
        (
            std::slice::from_raw_parts(counts, n),
            std::slice::from_raw_parts(displs, n),
            std::slice::from_raw_parts(types, n),
        )
    };
    crate::alltoallw::typed_blocks(g.lib()?, c, d, t)
}

/// One call's messages: `(rank, start, length)` per send in posting order and per
/// receive in block order, and the bytes each buffer spans.
struct Plan {
    sends: Vec<(u32, usize, usize)>,
    recvs: Vec<(u32, usize, usize)>,
    send_span: usize,
    recv_span: usize,
}

impl Plan {
    fn new(nb: &Neighbors, (sblocks, send_span): Blocks, (rblocks, recv_span): Blocks) -> Plan {
        let sends = nb
            .send_order
            .iter()
            .filter_map(|&j| nb.destinations[j].map(|r| (r, sblocks[j].0, sblocks[j].1)))
            .collect();
        let recvs = nb
            .sources
            .iter()
            .zip(&rblocks)
            .filter_map(|(&s, &(start, len))| s.map(|r| (r, start, len)))
            .collect();
        Plan {
            sends,
            recvs,
            send_span,
            recv_span,
        }
    }

    /// The receive blocks, checked to be disjoint (MPI writes a byte once).
    fn check_recvs(&self) -> R<()> {
        let mut blocks: Vec<(usize, usize)> = self.recvs.iter().map(|&(_, s, l)| (s, l)).collect();
        blocks.retain(|&(_, l)| l > 0);
        blocks.sort_unstable();
        if blocks.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
            return Err(Fail::new(
                MPI_ERR_ARG,
                "two receive blocks overlap (MPI writes a byte once)",
            ));
        }
        Ok(())
    }

    /// Whether the buffers overlap where both are used.
    fn buffers_overlap(&self, sendbuf: *const c_void, recvbuf: *mut c_void) -> bool {
        let (s, r) = (sendbuf as usize, recvbuf as usize);
        self.send_span > 0 && self.recv_span > 0 && s < r + self.recv_span && r < s + self.send_span
    }
}

/// Runs `plan` now: the blocking forms.
///
/// # Safety
/// `sendbuf` holds `plan.send_span` bytes, `recvbuf` `plan.recv_span`.
unsafe fn exchange_now(
    g: &mut Guard,
    comm: Handle,
    plan: &Plan,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
) -> R<()> {
    if plan.buffers_overlap(sendbuf, recvbuf) {
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            "the send and receive buffers overlap",
        ));
    }
    // SAFETY: the caller's contract; the two do not overlap (checked just above).
    let (sb, rb) = unsafe {
        (
            bytes(sendbuf, plan.send_span)?,
            bytes_mut(recvbuf, plan.recv_span)?,
        )
    };
    let blocks: Vec<(usize, usize)> = plan.recvs.iter().map(|&(_, s, l)| (s, l)).collect();
    let mut parts = disjoint_blocks(rb, &blocks)?;
    // Posted in block order (see the module doc), not in buffer order.
    parts.sort_unstable_by_key(|&(j, _)| j);
    let mut recvs: Vec<(u32, &mut [u8])> = parts
        .into_iter()
        .map(|(j, b)| (plan.recvs[j as usize].0, b))
        .collect();
    let sends: Vec<(u32, &[u8])> = plan
        .sends
        .iter()
        .map(|&(r, s, l)| (r, &sb[s..s + l]))
        .collect();
    let c = Coll::start(g, comm)?;
    c.exchange(g, &sends, &mut recvs)
}

/// Starts `plan` as a request: the non-blocking forms.
///
/// # Safety
/// `sendbuf` holds `plan.send_span` bytes, `recvbuf` `plan.recv_span`, both valid
/// until the request completes (MPI's contract); `request` is null or valid for a
/// write.
unsafe fn exchange_later(
    g: &mut Guard,
    comm: Handle,
    plan: &Plan,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    request: *mut Handle,
) -> R<()> {
    // SAFETY: the caller's contract.
    let slot = unsafe { request_slot(request) }?;
    if plan.buffers_overlap(sendbuf, recvbuf) {
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            "the send and receive buffers overlap",
        ));
    }
    plan.check_recvs()?;
    let sb = Span::at(sendbuf.cast_mut().cast(), plan.send_span)?;
    let rb = Span::at(recvbuf.cast(), plan.recv_span)?;
    let sends = plan
        .sends
        .iter()
        .map(|&(r, s, l)| (r, sb.sub(s, l)))
        .collect();
    let recvs = plan
        .recvs
        .iter()
        .map(|&(r, s, l)| (r, rb.sub(s, l)))
        .collect();
    let mut s = Nbc::new(Coll::start(g, comm)?);
    s.steps.push(Step::Exchange { sends, recvs });
    s.submit(g, comm, slot)
}

/// A call's arguments once its blocks are known.
struct Call {
    comm: Handle,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    /// `None` for the blocking form.
    request: Option<*mut Handle>,
}

/// Runs `call` with the blocks `blocks` computes from the neighbors' counts
/// (`indegree`, `outdegree`).
fn run(
    call_args: Call,
    blocks: impl FnOnce(&mut Guard, usize, usize) -> R<(Blocks, Blocks)>,
) -> c_int {
    let Call {
        comm,
        sendbuf,
        recvbuf,
        request,
    } = call_args;
    call(comm, |g| {
        let nb = neighbors_of(g, comm)?;
        let (sends, recvs) = blocks(g, nb.sources.len(), nb.destinations.len())?;
        let plan = Plan::new(&nb, sends, recvs);
        match request {
            // SAFETY: MPI's contract for the buffers and the request.
            Some(req) => unsafe { exchange_later(g, comm, &plan, sendbuf, recvbuf, req) },
            // SAFETY: MPI's contract for the buffers.
            None => unsafe { exchange_now(g, comm, &plan, sendbuf, recvbuf) },
        }
    })
}

/// The blocks of an allgather: the send buffer to every out-neighbor, one block of
/// the receive type per in-neighbor.
fn allgather_blocks(
    g: &mut Guard,
    (indeg, outdeg): (usize, usize),
    (scount, stype): (c_int, Handle),
    (rcount, rtype): (c_int, Handle),
) -> R<(Blocks, Blocks)> {
    let lib = g.lib()?;
    let (slen, _) = lib.byte_len(scount, stype)?;
    let (rlen, _) = lib.byte_len(rcount, rtype)?;
    Ok((same(outdeg, slen), consecutive(indeg, rlen)))
}

/// The blocks of an alltoall: one block of each type per neighbor.
fn alltoall_blocks(
    g: &mut Guard,
    (indeg, outdeg): (usize, usize),
    (scount, stype): (c_int, Handle),
    (rcount, rtype): (c_int, Handle),
) -> R<(Blocks, Blocks)> {
    let lib = g.lib()?;
    let (slen, _) = lib.byte_len(scount, stype)?;
    let (rlen, _) = lib.byte_len(rcount, rtype)?;
    Ok((consecutive(outdeg, slen), consecutive(indeg, rlen)))
}

/// Defines a neighborhood collective's blocking and non-blocking entry points, which
/// differ only in the request.
macro_rules! neighbor_pair {
    (
        $(#[$doc:meta])* $name:ident / $pname:ident,
        $(#[$idoc:meta])* $iname:ident / $piname:ident,
        ($($arg:ident: $ty:ty),*),
        recvbuf = $rb:ident,
        $(gapped = |$sb:ident, $cm:ident, $q:ident| $gap:expr,)?
        |$g:ident, $indeg:ident, $outdeg:ident| $blocks:expr
    ) => {
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                sendbuf: *const c_void,
                $($arg: $ty,)*
                comm: Handle
            ) {
                $(
                    // A type with gaps: packed, then this call in bytes.
                    let ($sb, $cm, $q) = (sendbuf, comm, None);
                    if let Some(rc) = $gap {
                        return rc;
                    }
                )?
                run(
                    Call { comm, sendbuf, recvbuf: $rb, request: None },
                    |$g, $indeg, $outdeg| $blocks,
                )
            }
        }
        crate::mpi_fn! {
            $(#[$idoc])*
            fn $iname / $piname(
                sendbuf: *const c_void,
                $($arg: $ty,)*
                comm: Handle,
                request: *mut Handle
            ) {
                $(
                    // As above.
                    let ($sb, $cm, $q) = (sendbuf, comm, Some(request));
                    if let Some(rc) = $gap {
                        return rc;
                    }
                )?
                run(
                    Call { comm, sendbuf, recvbuf: $rb, request: Some(request) },
                    |$g, $indeg, $outdeg| $blocks,
                )
            }
        }
    };
}

neighbor_pair! {
    /// `MPI_Neighbor_allgather`.
    MPI_Neighbor_allgather / PMPI_Neighbor_allgather,
    /// `MPI_Ineighbor_allgather`.
    MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather,
    (sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle),
    recvbuf = recvbuf,
    gapped = |sendbuf, comm, request| crate::neighbor_packed::exchange(
        crate::neighbor_packed::Kind::Allgather,
        crate::neighbor_packed::Args {
            send: (sendbuf, sendcount, sendtype),
            recv: (recvbuf, recvcount, recvtype),
            comm,
        },
        request,
    ),
    |g, indeg, outdeg| allgather_blocks(g, (indeg, outdeg), (sendcount, sendtype), (recvcount, recvtype))
}

neighbor_pair! {
    /// `MPI_Neighbor_alltoall`.
    MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall,
    /// `MPI_Ineighbor_alltoall`.
    MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall,
    (sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle),
    recvbuf = recvbuf,
    gapped = |sendbuf, comm, request| crate::neighbor_packed::exchange(
        crate::neighbor_packed::Kind::Alltoall,
        crate::neighbor_packed::Args {
            send: (sendbuf, sendcount, sendtype),
            recv: (recvbuf, recvcount, recvtype),
            comm,
        },
        request,
    ),
    |g, indeg, outdeg| alltoall_blocks(g, (indeg, outdeg), (sendcount, sendtype), (recvcount, recvtype))
}

neighbor_pair! {
    /// `MPI_Neighbor_allgatherv`: block `j` at `displs[j]` items of `recvtype`.
    MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv,
    /// `MPI_Ineighbor_allgatherv`.
    MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv,
    (
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: Handle
    ),
    recvbuf = recvbuf,
    gapped = |sendbuf, comm, request| crate::neighbor_packed::exchange_v(
        crate::neighbor_packed::Kind::Allgather,
        crate::neighbor_packed::VArgs {
            send: (sendbuf, crate::neighbor_packed::VCounts::One(sendcount), sendtype),
            recv: (recvbuf, crate::neighbor_packed::VCounts::Many(recvcounts, displs), recvtype),
            comm,
        },
        request,
    ),
    |g, indeg, outdeg| {
        let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
        // SAFETY: MPI's contract: the arrays hold one entry per in-neighbor.
        let recvs = unsafe { v_blocks(g, recvcounts, displs, indeg, recvtype) }?;
        Ok((same(outdeg, slen), recvs))
    }
}

neighbor_pair! {
    /// `MPI_Neighbor_alltoallv`.
    MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv,
    /// `MPI_Ineighbor_alltoallv`.
    MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv,
    (
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtype: Handle
    ),
    recvbuf = recvbuf,
    gapped = |sendbuf, comm, request| crate::neighbor_packed::exchange_v(
        crate::neighbor_packed::Kind::Alltoall,
        crate::neighbor_packed::VArgs {
            send: (sendbuf, crate::neighbor_packed::VCounts::Many(sendcounts, sdispls), sendtype),
            recv: (recvbuf, crate::neighbor_packed::VCounts::Many(recvcounts, rdispls), recvtype),
            comm,
        },
        request,
    ),
    |g, indeg, outdeg| {
        // SAFETY: MPI's contract: the arrays hold one entry per out- / in-neighbor.
        unsafe {
            Ok((
                v_blocks(g, sendcounts, sdispls, outdeg, sendtype)?,
                v_blocks(g, recvcounts, rdispls, indeg, recvtype)?,
            ))
        }
    }
}

neighbor_pair! {
    /// `MPI_Neighbor_alltoallw`: a count, a byte displacement and a type per neighbor.
    MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw,
    /// `MPI_Ineighbor_alltoallw`.
    MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw,
    (
        sendcounts: *const c_int,
        sdispls: *const MPI_Aint,
        sendtypes: *const Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const MPI_Aint,
        recvtypes: *const Handle
    ),
    recvbuf = recvbuf,
    gapped = |sendbuf, comm, request| crate::neighbor_packed::exchange_w(
        (sendbuf, sendcounts, sdispls, sendtypes),
        (recvbuf, recvcounts, rdispls, recvtypes),
        comm,
        request,
    ),
    |g, indeg, outdeg| {
        // SAFETY: MPI's contract: the arrays hold one entry per out- / in-neighbor.
        unsafe {
            Ok((
                w_blocks(g, sendcounts, sdispls, sendtypes, outdeg)?,
                w_blocks(g, recvcounts, rdispls, recvtypes, indeg)?,
            ))
        }
    }
}
