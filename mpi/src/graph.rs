//! Graph topologies (MPI 4.1 §8.5.3): `MPI_Graph_create`, `MPI_Graphdims_get`,
//! `MPI_Graph_get`, `MPI_Graph_neighbors_count`, `MPI_Graph_neighbors`,
//! `MPI_Graph_map`. As a Cartesian one (`topo.rs`), a graph communicator is a split of
//! its parent, here its first `nnodes` ranks in their order (`reorder` accepted, not
//! used), with the graph (`index` and `edges` as the program gave them) kept beside it
//! in the table; `MPI_Comm_dup` copies it and `MPI_Topo_test` answers `MPI_GRAPH`.
//! Distributed graphs: `dist_graph.rs`.

use std::ffi::c_int;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::{call, Guard};
use crate::topo::{ints, write_ints};
use crate::util::out;

/// `MPI_GRAPH`, `MPI_Topo_test`'s answer for a graph communicator.
pub const MPI_GRAPH: c_int = 201;

/// A communicator's graph: node `i`'s neighbors are `edges[index[i-1]..index[i]]`
/// (from 0 for node 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Graph {
    index: Vec<c_int>,
    edges: Vec<c_int>,
}

impl Graph {
    /// The graph of `nnodes` nodes the arrays describe: `index` non-decreasing from 0,
    /// every edge a node.
    fn new(index: &[c_int], edges: &[c_int]) -> R<Graph> {
        let mut last = 0;
        for &i in index {
            if i < last {
                return Err(Fail::new(MPI_ERR_ARG, format!("index {i} after {last}")));
            }
            last = i;
        }
        let n = c_int::try_from(index.len()).unwrap_or(c_int::MAX);
        if let Some(&e) = edges.iter().find(|&&e| e < 0 || e >= n) {
            return Err(Fail::new(
                MPI_ERR_RANK,
                format!("an edge to {e} of {n} nodes"),
            ));
        }
        Ok(Graph {
            index: index.to_vec(),
            edges: edges.to_vec(),
        })
    }

    /// The neighbors of node `rank`.
    pub(crate) fn neighbors(&self, rank: c_int) -> R<&[c_int]> {
        let r = usize::try_from(rank)
            .ok()
            .filter(|&r| r < self.index.len())
            .ok_or_else(|| {
                Fail::new(MPI_ERR_RANK, format!("node {rank} of {}", self.index.len()))
            })?;
        let from = if r == 0 { 0 } else { self.index[r - 1] };
        let to = self.index[r];
        let (from, to) = (from as usize, to as usize);
        Ok(&self.edges[from..to])
    }
}

/// The arrays of a graph argument: `index` of `nnodes` entries, `edges` of
/// `index[nnodes - 1]`.
///
/// # Safety
/// MPI's contract for `MPI_Graph_create`'s arrays.
unsafe fn graph_arg(nnodes: c_int, index: *const c_int, edges: *const c_int) -> R<Graph> {
    let n =
        usize::try_from(nnodes).map_err(|_| Fail::new(MPI_ERR_ARG, format!("{nnodes} nodes")))?;
    // SAFETY: the caller's contract.
    let index = unsafe { ints(index, n, "index") }?;
    let m = index.last().copied().unwrap_or(0);
    let m = usize::try_from(m).map_err(|_| Fail::new(MPI_ERR_ARG, format!("{m} edges")))?;
    // SAFETY: the caller's contract: `edges` holds `index[nnodes - 1]` ints.
    let edges = unsafe { ints(edges, m, "edges") }?;
    Graph::new(index, edges)
}

/// The graph of `comm`, or `MPI_ERR_TOPOLOGY`.
fn graph_of(g: &mut Guard, comm: Handle) -> R<Graph> {
    g.lib()?
        .comm(comm)?
        .graph
        .as_deref()
        .cloned()
        .ok_or_else(|| Fail::new(MPI_ERR_TOPOLOGY, "not a graph communicator"))
}

fn count_of(n: usize) -> R<c_int> {
    c_int::try_from(n).map_err(|_| Fail::new(MPI_ERR_COUNT, "too many to count in an int"))
}

crate::mpi_fn! {
    /// `MPI_Graph_create`: the first `nnodes` ranks of `comm_old`, in their order; the
    /// others get `MPI_COMM_NULL`.
    fn MPI_Graph_create / PMPI_Graph_create(
        comm_old: Handle,
        nnodes: c_int,
        index: *const c_int,
        edges: *const c_int,
        _reorder: c_int,
        comm_graph: *mut Handle
    ) {
        call(comm_old, |g| {
            // SAFETY: MPI's contract: `comm_graph` is valid for a write.
            let slot = unsafe { out(comm_graph) }?;
            // SAFETY: MPI's contract for the arrays.
            let graph = unsafe { graph_arg(nnodes, index, edges) }?;
            let e = g.lib()?.comm(comm_old)?;
            e.intra()?;
            let (me, size) = (e.rank, e.size);
            let n = graph.index.len();
            if n > size as usize {
                return Err(Fail::new(
                    MPI_ERR_ARG,
                    format!("a graph of {n} nodes on a communicator of {size}"),
                ));
            }
            let inside = (me as usize) < n;
            let h = crate::comm::split(g, comm_old, inside.then_some(0), me as c_int)?;
            if h != MPI_COMM_NULL {
                g.lib()?.comm_mut(h)?.graph = Some(Box::new(graph));
            }
            *slot = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Graphdims_get`: the number of nodes and of edges.
    fn MPI_Graphdims_get / PMPI_Graphdims_get(comm: Handle, nnodes: *mut c_int, nedges: *mut c_int) {
        call(comm, |g| {
            let graph = graph_of(g, comm)?;
            let (n, m) = (count_of(graph.index.len())?, count_of(graph.edges.len())?);
            // SAFETY: MPI's contract: both are valid for writes.
            unsafe {
                *out(nnodes)? = n;
                *out(nedges)? = m;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Graph_get`: the first `maxindex` entries of `index`, `maxedges` of `edges`.
    fn MPI_Graph_get / PMPI_Graph_get(
        comm: Handle,
        maxindex: c_int,
        maxedges: c_int,
        index: *mut c_int,
        edges: *mut c_int
    ) {
        call(comm, |g| {
            let graph = graph_of(g, comm)?;
            let mi = usize::try_from(maxindex).map_err(|_| Fail::new(MPI_ERR_ARG, "maxindex < 0"))?;
            let me = usize::try_from(maxedges).map_err(|_| Fail::new(MPI_ERR_ARG, "maxedges < 0"))?;
            // SAFETY: MPI's contract: `index` holds `maxindex` ints, `edges` `maxedges`.
            unsafe {
                write_ints(index, mi, graph.index.iter().copied())?;
                write_ints(edges, me, graph.edges.iter().copied())
            }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Graph_neighbors_count`: the degree of node `rank`.
    fn MPI_Graph_neighbors_count / PMPI_Graph_neighbors_count(
        comm: Handle,
        rank: c_int,
        nneighbors: *mut c_int
    ) {
        call(comm, |g| {
            let graph = graph_of(g, comm)?;
            let n = count_of(graph.neighbors(rank)?.len())?;
            // SAFETY: MPI's contract: `nneighbors` is valid for a write.
            *unsafe { out(nneighbors) }? = n;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Graph_neighbors`: the first `maxneighbors` neighbors of node `rank`, in
    /// the order `edges` gave them.
    fn MPI_Graph_neighbors / PMPI_Graph_neighbors(
        comm: Handle,
        rank: c_int,
        maxneighbors: c_int,
        neighbors: *mut c_int
    ) {
        call(comm, |g| {
            let graph = graph_of(g, comm)?;
            let max = usize::try_from(maxneighbors)
                .map_err(|_| Fail::new(MPI_ERR_ARG, "maxneighbors < 0"))?;
            let ns = graph.neighbors(rank)?;
            // SAFETY: MPI's contract: `neighbors` holds `maxneighbors` ints.
            unsafe { write_ints(neighbors, max, ns.iter().copied()) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Graph_map`: the rank `MPI_Graph_create` would give this process (its own
    /// among the first `nnodes`), else `MPI_UNDEFINED`. Local.
    fn MPI_Graph_map / PMPI_Graph_map(
        comm: Handle,
        nnodes: c_int,
        index: *const c_int,
        edges: *const c_int,
        newrank: *mut c_int
    ) {
        call(comm, |g| {
            // SAFETY: MPI's contract for the arrays.
            let graph = unsafe { graph_arg(nnodes, index, edges) }?;
            let e = g.lib()?.comm(comm)?;
            e.intra()?;
            if graph.index.len() > e.size as usize {
                return Err(Fail::new(MPI_ERR_ARG, "more nodes than processes"));
            }
            let r = if (e.rank as usize) < graph.index.len() { e.rank as c_int } else { MPI_UNDEFINED };
            // SAFETY: MPI's contract: `newrank` is valid for a write.
            *unsafe { out(newrank) }? = r;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbors_are_the_slices_of_edges_the_index_bounds() {
        let g = Graph::new(&[2, 3, 3, 5], &[1, 3, 0, 0, 2]).unwrap();
        assert_eq!(g.neighbors(0).unwrap(), &[1, 3]);
        assert_eq!(g.neighbors(1).unwrap(), &[0]);
        assert!(g.neighbors(2).unwrap().is_empty());
        assert_eq!(g.neighbors(3).unwrap(), &[0, 2]);
        assert_eq!(g.neighbors(4).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(Graph::new(&[2, 1], &[0, 1]).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(Graph::new(&[1], &[1]).unwrap_err().class, MPI_ERR_RANK);
    }
}
