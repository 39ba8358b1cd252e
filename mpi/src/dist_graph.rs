//! Distributed graph topologies (MPI 4.1 §8.5.4): `MPI_Dist_graph_create_adjacent`,
//! `MPI_Dist_graph_create`, `MPI_Dist_graph_neighbors_count`,
//! `MPI_Dist_graph_neighbors`. As the other topologies (`topo.rs`, `graph.rs`), a
//! distributed graph communicator is a split of its parent keeping every rank in its
//! order (`reorder` accepted, not used, as MPI allows; `info` not used), with this
//! rank's part of the graph kept beside it in the table: its in-neighbors (sources)
//! and out-neighbors (destinations) in the order the program gave them, with their
//! weights unless the graph is unweighted (`MPI_UNWEIGHTED`).
//!
//! `MPI_Dist_graph_create` lets any rank name any edge: each edge is sent to both its
//! ends (one exchange of counts with every rank, then one of the edges), and each rank
//! lists what it received in the order of the senders' ranks, then of their arguments.

use std::ffi::c_int;

use crate::coll::Coll;
use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::{call, Guard};
use crate::topo::{ints, write_ints};
use crate::util::out;

/// `MPI_DIST_GRAPH`, `MPI_Topo_test`'s answer for a distributed graph communicator.
pub const MPI_DIST_GRAPH: c_int = 202;

/// `MPI_UNWEIGHTED` (the MPI ABI's value).
const UNWEIGHTED: usize = 2;
/// `MPI_WEIGHTS_EMPTY` (the MPI ABI's value): weights of a rank with no edge.
const WEIGHTS_EMPTY: usize = 3;

/// This rank's part of a distributed graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DistGraph {
    /// In-neighbors, each with its weight (0 when unweighted).
    pub sources: Vec<(u32, c_int)>,
    /// Out-neighbors, each with its weight (0 when unweighted).
    pub destinations: Vec<(u32, c_int)>,
    pub weighted: bool,
}

/// Whether a weights argument is `MPI_UNWEIGHTED`.
fn unweighted(w: *const c_int) -> bool {
    w as usize == UNWEIGHTED
}

/// `n` ranks of a communicator of `size` and their weights (zeros when unweighted;
/// `MPI_WEIGHTS_EMPTY` stands for an empty array).
///
/// # Safety
/// `ranks` holds `n` ints; `weights` is `MPI_UNWEIGHTED`, `MPI_WEIGHTS_EMPTY` or holds
/// `n` ints.
unsafe fn edges_arg(
    n: c_int,
    ranks: *const c_int,
    weights: *const c_int,
    size: u32,
    what: &str,
) -> R<Vec<(u32, c_int)>> {
    let n = usize::try_from(n).map_err(|_| Fail::new(MPI_ERR_ARG, format!("{what} {n}")))?;
    // SAFETY: the caller's contract.
    let ranks = unsafe { ints(ranks, n, what) }?;
    let weights: Vec<c_int> = if unweighted(weights) {
        vec![0; n]
    } else if weights as usize == WEIGHTS_EMPTY {
        if n > 0 {
            return Err(Fail::new(MPI_ERR_ARG, "MPI_WEIGHTS_EMPTY with edges"));
        }
        Vec::new()
    } else {
        // SAFETY: the caller's contract.
        unsafe { ints(weights, n, "weights") }?.to_vec()
    };
    if let Some(&w) = weights.iter().find(|&&w| w < 0) {
        return Err(Fail::new(MPI_ERR_ARG, format!("a negative weight {w}")));
    }
    ranks
        .iter()
        .zip(weights)
        .map(|(&r, w)| match u32::try_from(r) {
            Ok(r) if r < size => Ok((r, w)),
            _ => Err(Fail::new(
                MPI_ERR_RANK,
                format!("{what} rank {r} of {size}"),
            )),
        })
        .collect()
}

/// Makes the distributed graph communicator of `comm_old` with this rank's `graph`.
fn make(g: &mut Guard, comm_old: Handle, graph: DistGraph) -> R<Handle> {
    let me = g.lib()?.comm(comm_old)?.rank;
    let h = crate::comm::split(g, comm_old, Some(0), me as c_int)?;
    g.lib()?.comm_mut(h)?.dist_graph = Some(Box::new(graph));
    Ok(h)
}

crate::mpi_fn! {
    /// `MPI_Dist_graph_create_adjacent`: each rank gives its own in- and out-neighbors.
    fn MPI_Dist_graph_create_adjacent / PMPI_Dist_graph_create_adjacent(
        comm_old: Handle,
        indegree: c_int,
        sources: *const c_int,
        sourceweights: *const c_int,
        outdegree: c_int,
        destinations: *const c_int,
        destweights: *const c_int,
        _info: Handle,
        _reorder: c_int,
        comm_dist_graph: *mut Handle
    ) {
        call(comm_old, |g| {
            // SAFETY: MPI's contract: `comm_dist_graph` is valid for a write.
            let slot = unsafe { out(comm_dist_graph) }?;
            let e = g.lib()?.comm(comm_old)?;
            e.intra()?;
            let size = e.size;
            // SAFETY: MPI's contract for the arrays.
            let (ins, outs) = unsafe {
                (
                    edges_arg(indegree, sources, sourceweights, size, "source")?,
                    edges_arg(outdegree, destinations, destweights, size, "destination")?,
                )
            };
            let graph = DistGraph {
                sources: ins,
                destinations: outs,
                weighted: !unweighted(sourceweights) && !unweighted(destweights),
            };
            *slot = make(g, comm_old, graph)?;
            Ok(())
        })
    }
}

/// One edge as it travels to its ends: source, destination, weight.
const EDGE_LEN: usize = 12;

crate::mpi_fn! {
    /// `MPI_Dist_graph_create`: each rank gives any edges (`degrees[i]` edges out of
    /// `sources[i]`); every edge reaches both its ends.
    fn MPI_Dist_graph_create / PMPI_Dist_graph_create(
        comm_old: Handle,
        n: c_int,
        sources: *const c_int,
        degrees: *const c_int,
        destinations: *const c_int,
        weights: *const c_int,
        _info: Handle,
        _reorder: c_int,
        comm_dist_graph: *mut Handle
    ) {
        call(comm_old, |g| {
            // SAFETY: MPI's contract: `comm_dist_graph` is valid for a write.
            let slot = unsafe { out(comm_dist_graph) }?;
            let e = g.lib()?.comm(comm_old)?;
            e.intra()?;
            let size = e.size;
            // SAFETY: MPI's contract for the arrays.
            let edges = unsafe { edges_of(n, sources, degrees, destinations, weights, size) }?;
            // What each rank gets: the edges it is an end of.
            let mut to: Vec<Vec<u8>> = vec![Vec::new(); size as usize];
            for &(s, d, w) in &edges {
                let mut bytes = [0u8; EDGE_LEN];
                bytes[..4].copy_from_slice(&s.to_le_bytes());
                bytes[4..8].copy_from_slice(&d.to_le_bytes());
                bytes[8..].copy_from_slice(&w.to_le_bytes());
                to[s as usize].extend_from_slice(&bytes);
                if d != s {
                    to[d as usize].extend_from_slice(&bytes);
                }
            }
            let mut c = Coll::start_phases(g, comm_old, 2)?;
            let me = c.me;
            let counts_out: Vec<[u8; 4]> =
                to.iter().map(|v| (v.len() as u32).to_le_bytes()).collect();
            let mut counts_in = vec![[0u8; 4]; size as usize];
            {
                let sends: Vec<(u32, &[u8])> =
                    (0..size).map(|r| (r, &counts_out[r as usize][..])).collect();
                let mut recvs: Vec<(u32, &mut [u8])> =
                    counts_in.iter_mut().enumerate().map(|(r, b)| (r as u32, &mut b[..])).collect();
                c.exchange(g, &sends, &mut recvs)?;
            }
            c.next_phase();
            let mut got: Vec<Vec<u8>> = counts_in
                .iter()
                .map(|b| vec![0u8; u32::from_le_bytes(*b) as usize])
                .collect();
            {
                let sends: Vec<(u32, &[u8])> =
                    (0..size).map(|r| (r, &to[r as usize][..])).collect();
                let mut recvs: Vec<(u32, &mut [u8])> =
                    got.iter_mut().enumerate().map(|(r, b)| (r as u32, &mut b[..])).collect();
                c.exchange(g, &sends, &mut recvs)?;
            }
            let mut graph = DistGraph {
                sources: Vec::new(),
                destinations: Vec::new(),
                weighted: !unweighted(weights),
            };
            for edge in got.iter().flat_map(|b| b.chunks_exact(EDGE_LEN)) {
                let word = |i: usize| [edge[i], edge[i + 1], edge[i + 2], edge[i + 3]];
                let (s, d) = (u32::from_le_bytes(word(0)), u32::from_le_bytes(word(4)));
                let w = c_int::from_le_bytes(word(8));
                if s == me {
                    graph.destinations.push((d, w));
                }
                if d == me {
                    graph.sources.push((s, w));
                }
            }
            *slot = make(g, comm_old, graph)?;
            Ok(())
        })
    }
}

/// The edges of `MPI_Dist_graph_create`'s arguments: (source, destination, weight).
///
/// # Safety
/// MPI's contract for the arrays: `sources` and `degrees` hold `n` ints,
/// `destinations` (and `weights`, unless `MPI_UNWEIGHTED`) the sum of `degrees`.
unsafe fn edges_of(
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights: *const c_int,
    size: u32,
) -> R<Vec<(u32, u32, c_int)>> {
    let n = usize::try_from(n).map_err(|_| Fail::new(MPI_ERR_ARG, format!("n = {n}")))?;
    // SAFETY: the caller's contract.
    let (srcs, degs) = unsafe { (ints(sources, n, "sources")?, ints(degrees, n, "degrees")?) };
    let mut total: usize = 0;
    for &d in degs {
        let d = usize::try_from(d).map_err(|_| Fail::new(MPI_ERR_ARG, format!("degree {d}")))?;
        total = total.saturating_add(d);
    }
    let total_c = c_int::try_from(total).map_err(|_| Fail::new(MPI_ERR_ARG, "too many edges"))?;
    // SAFETY: the caller's contract: `destinations` and `weights` hold `total` ints.
    let dests = unsafe { edges_arg(total_c, destinations, weights, size, "destination") }?;
    let mut edges = Vec::with_capacity(total);
    let mut k = 0;
    for (&s, &d) in srcs.iter().zip(degs) {
        let s = u32::try_from(s)
            .ok()
            .filter(|&s| s < size)
            .ok_or_else(|| Fail::new(MPI_ERR_RANK, format!("source rank {s} of {size}")))?;
        for &(dest, w) in &dests[k..k + d as usize] {
            edges.push((s, dest, w));
        }
        k += d as usize;
    }
    Ok(edges)
}

/// The distributed graph of `comm`, or `MPI_ERR_TOPOLOGY`.
fn dist_graph_of(g: &mut Guard, comm: Handle) -> R<DistGraph> {
    g.lib()?
        .comm(comm)?
        .dist_graph
        .as_deref()
        .cloned()
        .ok_or_else(|| Fail::new(MPI_ERR_TOPOLOGY, "not a distributed graph communicator"))
}

fn degree(n: usize) -> R<c_int> {
    c_int::try_from(n).map_err(|_| Fail::new(MPI_ERR_COUNT, "a degree beyond an int"))
}

crate::mpi_fn! {
    /// `MPI_Dist_graph_neighbors_count`: this rank's in- and out-degree, and whether
    /// the graph is weighted.
    fn MPI_Dist_graph_neighbors_count / PMPI_Dist_graph_neighbors_count(
        comm: Handle,
        indegree: *mut c_int,
        outdegree: *mut c_int,
        weighted: *mut c_int
    ) {
        call(comm, |g| {
            let d = dist_graph_of(g, comm)?;
            let (i, o) = (degree(d.sources.len())?, degree(d.destinations.len())?);
            // SAFETY: MPI's contract: the three are valid for writes.
            unsafe {
                *out(indegree)? = i;
                *out(outdegree)? = o;
                *out(weighted)? = c_int::from(d.weighted);
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Dist_graph_neighbors`: the first `maxindegree` sources and
    /// `maxoutdegree` destinations, with their weights unless `MPI_UNWEIGHTED` is
    /// passed for them.
    fn MPI_Dist_graph_neighbors / PMPI_Dist_graph_neighbors(
        comm: Handle,
        maxindegree: c_int,
        sources: *mut c_int,
        sourceweights: *mut c_int,
        maxoutdegree: c_int,
        destinations: *mut c_int,
        destweights: *mut c_int
    ) {
        call(comm, |g| {
            let d = dist_graph_of(g, comm)?;
            let maxin = usize::try_from(maxindegree)
                .map_err(|_| Fail::new(MPI_ERR_ARG, "maxindegree < 0"))?;
            let maxout = usize::try_from(maxoutdegree)
                .map_err(|_| Fail::new(MPI_ERR_ARG, "maxoutdegree < 0"))?;
            let rank = |&(r, _): &(u32, c_int)| r as c_int;
            let weight = |&(_, w): &(u32, c_int)| w;
            // SAFETY: MPI's contract: each array holds its maximum of ints, the
            // weights unless MPI_UNWEIGHTED (or MPI_WEIGHTS_EMPTY with a maximum of 0).
            unsafe {
                write_ints(sources, maxin, d.sources.iter().map(rank))?;
                write_ints(destinations, maxout, d.destinations.iter().map(rank))?;
                if d.weighted && !unweighted(sourceweights) && maxin > 0 {
                    write_ints(sourceweights, maxin, d.sources.iter().map(weight))?;
                }
                if d.weighted && !unweighted(destweights) && maxout > 0 {
                    write_ints(destweights, maxout, d.destinations.iter().map(weight))?;
                }
            }
            Ok(())
        })
    }
}
