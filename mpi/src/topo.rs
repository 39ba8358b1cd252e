//! Cartesian topologies (MPI 4.1, chapter 8): `MPI_Dims_create`, `MPI_Cart_create`,
//! `MPI_Cart_get`, `MPI_Cartdim_get`, `MPI_Cart_rank`, `MPI_Cart_coords`,
//! `MPI_Cart_shift`, `MPI_Cart_sub`, `MPI_Topo_test`. A Cartesian communicator is an
//! intra-communicator made by a split of its parent (ranks in row-major order of their
//! coordinates, the last dimension varying fastest; `reorder` is accepted and not used,
//! which MPI allows) with its grid kept beside it in the table ([`Cart`]);
//! `MPI_Comm_dup` copies the grid. Graph topologies: `graph.rs`.

use std::ffi::c_int;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::NO_OBJECT;
use crate::state::{call, Guard};
use crate::util::out;

/// `MPI_CART`, `MPI_Topo_test`'s answer for a Cartesian communicator (`mpi.h` also
/// defines `MPI_GRAPH` 201, `graph.rs`, and `MPI_DIST_GRAPH` 202, `dist_graph.rs`).
pub const MPI_CART: c_int = 203;

/// A communicator's Cartesian grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cart {
    dims: Vec<u32>,
    periods: Vec<bool>,
}

impl Cart {
    /// The grid's number of processes.
    fn size(&self) -> u64 {
        self.dims.iter().map(|&d| u64::from(d)).product()
    }

    /// The coordinates of `rank` (< [`size`](Self::size)).
    fn coords(&self, rank: u32) -> Vec<u32> {
        let mut c = vec![0; self.dims.len()];
        let mut r = rank;
        for (i, &d) in self.dims.iter().enumerate().rev() {
            c[i] = r % d;
            r /= d;
        }
        c
    }

    /// The neighbors of `rank` in the order of the neighborhood collectives (MPI 4.1
    /// §8.6): in each dimension the rank one step down, then one step up; `None` off
    /// the edge of a non-periodic dimension (`MPI_PROC_NULL`).
    pub(crate) fn neighbors(&self, rank: u32) -> Vec<Option<u32>> {
        let here: Vec<i64> = self.coords(rank).into_iter().map(i64::from).collect();
        let mut out = Vec::with_capacity(2 * here.len());
        for d in 0..here.len() {
            for step in [-1, 1] {
                let mut x = here.clone();
                x[d] += step;
                out.push(self.rank(&x));
            }
        }
        out
    }

    /// The rank at `coords`, wrapped in periodic dimensions; `None` outside a
    /// non-periodic one.
    fn rank(&self, coords: &[i64]) -> Option<u32> {
        let mut r: u64 = 0;
        for ((&c, &d), &p) in coords.iter().zip(&self.dims).zip(&self.periods) {
            let d = i64::from(d);
            let c = if p {
                c.rem_euclid(d)
            } else if (0..d).contains(&c) {
                c
            } else {
                return None;
            };
            r = r * d as u64 + c as u64;
        }
        u32::try_from(r).ok()
    }
}

/// Fills the zero entries of `dims` so that the product of all is `nnodes`, as evenly
/// as possible, the filled entries in non-increasing order (`MPI_Dims_create`).
pub(crate) fn dims_create(nnodes: u32, dims: &mut [u32]) -> Result<(), String> {
    let fixed: u64 = dims
        .iter()
        .filter(|&&d| d > 0)
        .map(|&d| u64::from(d))
        .product();
    let free: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == 0).collect();
    if fixed == 0 || u64::from(nnodes) % fixed != 0 {
        return Err(format!(
            "{nnodes} processes cannot fill a grid whose fixed dimensions make {fixed}"
        ));
    }
    let mut rest = (u64::from(nnodes) / fixed) as u32;
    if free.is_empty() {
        return if rest == 1 {
            Ok(())
        } else {
            Err(format!("the dimensions make {fixed}, not {nnodes}"))
        };
    }
    // Prime factors, largest first, each to the free dimension with the smallest
    // product so far.
    let mut factors = Vec::new();
    let mut p = 2;
    while p * p <= rest {
        while rest % p == 0 {
            factors.push(p);
            rest /= p;
        }
        p += 1;
    }
    if rest > 1 {
        factors.push(rest);
    }
    let mut got = vec![1u32; free.len()];
    for f in factors.into_iter().rev() {
        let smallest = (0..got.len()).min_by_key(|&i| got[i]).unwrap_or(0);
        got[smallest] *= f;
    }
    got.sort_unstable_by(|a, b| b.cmp(a));
    for (&i, g) in free.iter().zip(got) {
        dims[i] = g;
    }
    Ok(())
}

/// Reads `n` ints the program passed.
///
/// # Safety
/// `p` holds `n` ints when `n > 0`.
pub(crate) unsafe fn ints<'a>(p: *const c_int, n: usize, what: &str) -> R<&'a [c_int]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("a null {what}")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// A dimension count argument.
fn ndims_arg(ndims: c_int) -> R<usize> {
    usize::try_from(ndims).map_err(|_| Fail::new(MPI_ERR_DIMS, format!("{ndims} dimensions")))
}

/// The grid of `comm`, or `MPI_ERR_TOPOLOGY`.
fn cart_of(g: &mut Guard, comm: Handle) -> R<Cart> {
    g.lib()?
        .comm(comm)?
        .cart
        .as_deref()
        .cloned()
        .ok_or_else(|| Fail::new(MPI_ERR_TOPOLOGY, "not a Cartesian communicator"))
}

crate::mpi_fn! {
    /// `MPI_Dims_create`: fills the zero entries of `dims` (see [`dims_create`]).
    fn MPI_Dims_create / PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) {
        call(NO_OBJECT, |_| {
            let n = ndims_arg(ndims)?;
            let nnodes = u32::try_from(nnodes)
                .map_err(|_| Fail::new(MPI_ERR_ARG, format!("{nnodes} processes")))?;
            // SAFETY: MPI's contract: `dims` holds `ndims` ints.
            let given = unsafe { ints(dims, n, "dims") }?;
            let mut d = Vec::with_capacity(n);
            for &v in given {
                d.push(u32::try_from(v).map_err(|_| {
                    Fail::new(MPI_ERR_DIMS, format!("a negative dimension {v}"))
                })?);
            }
            dims_create(nnodes, &mut d).map_err(|why| Fail::new(MPI_ERR_DIMS, why))?;
            for (i, v) in d.into_iter().enumerate() {
                // SAFETY: as above; `i` < `ndims`.
                unsafe { *dims.add(i) = v as c_int };
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Cart_create`: the first `dims[0] * dims[1] * ...` ranks of `comm_old`, in
    /// their order; the others get `MPI_COMM_NULL`.
    fn MPI_Cart_create / PMPI_Cart_create(
        comm_old: Handle,
        ndims: c_int,
        dims: *const c_int,
        periods: *const c_int,
        _reorder: c_int,
        comm_cart: *mut Handle
    ) {
        call(comm_old, |g| {
            // SAFETY: MPI's contract: `comm_cart` is valid for a write.
            let slot = unsafe { out(comm_cart) }?;
            let n = ndims_arg(ndims)?;
            // SAFETY: MPI's contract: `dims` and `periods` hold `ndims` ints.
            let (d, p) = unsafe { (ints(dims, n, "dims")?, ints(periods, n, "periods")?) };
            let mut grid = Cart { dims: Vec::with_capacity(n), periods: Vec::with_capacity(n) };
            for (&dim, &per) in d.iter().zip(p) {
                let dim = u32::try_from(dim).ok().filter(|&x| x > 0).ok_or_else(|| {
                    Fail::new(MPI_ERR_DIMS, format!("a dimension of {dim}"))
                })?;
                grid.dims.push(dim);
                grid.periods.push(per != 0);
            }
            let e = g.lib()?.comm(comm_old)?;
            e.intra()?;
            let (me, size) = (e.rank, e.size);
            if grid.size() > u64::from(size) {
                return Err(Fail::new(
                    MPI_ERR_DIMS,
                    format!("a grid of {} processes on a communicator of {size}", grid.size()),
                ));
            }
            let inside = u64::from(me) < grid.size();
            let h = crate::comm::split(g, comm_old, inside.then_some(0), me as c_int)?;
            if h != MPI_COMM_NULL {
                g.lib()?.comm_mut(h)?.cart = Some(Box::new(grid));
            }
            *slot = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Cart_map`: the rank `MPI_Cart_create` would give this process in a grid of
    /// `dims` (its own rank among the first `dims[0] * dims[1] * ...`; `reorder` is
    /// not used), else `MPI_UNDEFINED`. Local: nothing is exchanged.
    fn MPI_Cart_map / PMPI_Cart_map(
        comm: Handle,
        ndims: c_int,
        dims: *const c_int,
        _periods: *const c_int,
        newrank: *mut c_int
    ) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `newrank` is valid for a write.
            let slot = unsafe { out(newrank) }?;
            let n = ndims_arg(ndims)?;
            // SAFETY: MPI's contract: `dims` holds `ndims` ints.
            let d = unsafe { ints(dims, n, "dims") }?;
            let mut cells: u64 = 1;
            for &dim in d {
                let dim = u64::try_from(dim).ok().filter(|&x| x > 0).ok_or_else(|| {
                    Fail::new(MPI_ERR_DIMS, format!("a dimension of {dim}"))
                })?;
                cells = cells.saturating_mul(dim);
            }
            let e = g.lib()?.comm(comm)?;
            e.intra()?;
            let (me, size) = (e.rank, e.size);
            if cells > u64::from(size) {
                return Err(Fail::new(
                    MPI_ERR_DIMS,
                    format!("a grid of {cells} processes on a communicator of {size}"),
                ));
            }
            *slot = if u64::from(me) < cells { me as c_int } else { MPI_UNDEFINED };
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Cartdim_get`.
    fn MPI_Cartdim_get / PMPI_Cartdim_get(comm: Handle, ndims: *mut c_int) {
        call(comm, |g| {
            let c = cart_of(g, comm)?;
            // SAFETY: MPI's contract: `ndims` is valid for a write.
            *unsafe { out(ndims) }? = c.dims.len() as c_int;
            Ok(())
        })
    }
}

/// Writes the first `n` of `values` to the program's array `p` (of `maxdims` ints).
///
/// # Safety
/// `p` holds `maxdims` ints when `maxdims > 0`.
pub(crate) unsafe fn write_ints(
    p: *mut c_int,
    maxdims: usize,
    values: impl Iterator<Item = c_int>,
) -> R<()> {
    if maxdims == 0 {
        return Ok(());
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null array"));
    }
    for (i, v) in values.take(maxdims).enumerate() {
        // SAFETY: the caller's contract; `i` < `maxdims`.
        unsafe { *p.add(i) = v };
    }
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Cart_get`: the grid and this process's coordinates.
    fn MPI_Cart_get / PMPI_Cart_get(
        comm: Handle,
        maxdims: c_int,
        dims: *mut c_int,
        periods: *mut c_int,
        coords: *mut c_int
    ) {
        call(comm, |g| {
            let c = cart_of(g, comm)?;
            let me = g.lib()?.comm(comm)?.rank;
            let m = ndims_arg(maxdims)?;
            // SAFETY: MPI's contract: each array holds `maxdims` ints.
            unsafe {
                write_ints(dims, m, c.dims.iter().map(|&d| d as c_int))?;
                write_ints(periods, m, c.periods.iter().map(|&p| c_int::from(p)))?;
                write_ints(coords, m, c.coords(me).into_iter().map(|x| x as c_int))?;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Cart_rank`: coordinates wrap in periodic dimensions; outside a
    /// non-periodic one they are `MPI_ERR_ARG`.
    fn MPI_Cart_rank / PMPI_Cart_rank(comm: Handle, coords: *const c_int, rank: *mut c_int) {
        call(comm, |g| {
            let c = cart_of(g, comm)?;
            // SAFETY: MPI's contract: `coords` holds one int per dimension.
            let given = unsafe { ints(coords, c.dims.len(), "coords") }?;
            let wide: Vec<i64> = given.iter().map(|&x| i64::from(x)).collect();
            let r = c.rank(&wide).ok_or_else(|| {
                Fail::new(MPI_ERR_ARG, format!("coordinates {given:?} outside the grid"))
            })?;
            // SAFETY: MPI's contract: `rank` is valid for a write.
            *unsafe { out(rank) }? = r as c_int;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Cart_coords`.
    fn MPI_Cart_coords / PMPI_Cart_coords(
        comm: Handle,
        rank: c_int,
        maxdims: c_int,
        coords: *mut c_int
    ) {
        call(comm, |g| {
            let c = cart_of(g, comm)?;
            let size = g.lib()?.comm(comm)?.size;
            let r = crate::util::rank_arg(rank, size)?;
            let m = ndims_arg(maxdims)?;
            // SAFETY: MPI's contract: `coords` holds `maxdims` ints.
            unsafe { write_ints(coords, m, c.coords(r).into_iter().map(|x| x as c_int)) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Cart_shift`: the ranks `disp` steps down and up dimension `direction` from
    /// this process (`MPI_PROC_NULL` past the edge of a non-periodic dimension).
    fn MPI_Cart_shift / PMPI_Cart_shift(
        comm: Handle,
        direction: c_int,
        disp: c_int,
        rank_source: *mut c_int,
        rank_dest: *mut c_int
    ) {
        call(comm, |g| {
            let c = cart_of(g, comm)?;
            let me = g.lib()?.comm(comm)?.rank;
            let dir = usize::try_from(direction)
                .ok()
                .filter(|&d| d < c.dims.len())
                .ok_or_else(|| Fail::new(MPI_ERR_ARG, format!("direction {direction}")))?;
            let here: Vec<i64> = c.coords(me).into_iter().map(i64::from).collect();
            let at = |step: i64| {
                let mut x = here.clone();
                x[dir] += step;
                c.rank(&x).map_or(MPI_PROC_NULL, |r| r as c_int)
            };
            let (src, dst) = (at(-i64::from(disp)), at(i64::from(disp)));
            // SAFETY: MPI's contract: both are valid for writes.
            unsafe {
                *out(rank_source)? = src;
                *out(rank_dest)? = dst;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Cart_sub`: the sub-grids that keep the dimensions marked in `remain_dims`,
    /// one communicator per sub-grid (a split by the dropped coordinates); with no
    /// dimension kept, a grid of one process each.
    fn MPI_Cart_sub / PMPI_Cart_sub(comm: Handle, remain_dims: *const c_int, newcomm: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `newcomm` is valid for a write.
            let slot = unsafe { out(newcomm) }?;
            let c = cart_of(g, comm)?;
            let me = g.lib()?.comm(comm)?.rank;
            // SAFETY: MPI's contract: `remain_dims` holds one int per dimension.
            let keep = unsafe { ints(remain_dims, c.dims.len(), "remain_dims") }?;
            let here = c.coords(me);
            let (mut color, mut key) = (0u64, 0u64);
            let mut sub = Cart { dims: Vec::new(), periods: Vec::new() };
            for (i, &k) in keep.iter().enumerate() {
                let d = u64::from(c.dims[i]);
                if k != 0 {
                    key = key * d + u64::from(here[i]);
                    sub.dims.push(c.dims[i]);
                    sub.periods.push(c.periods[i]);
                } else {
                    color = color * d + u64::from(here[i]);
                }
            }
            // Both fit: their products are at most the grid's size, a rank count.
            let h = crate::comm::split(g, comm, Some(color as u32), key as c_int)?;
            g.lib()?.comm_mut(h)?.cart = Some(Box::new(sub));
            *slot = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Topo_test`: `MPI_CART`, `MPI_GRAPH` or `MPI_UNDEFINED`.
    fn MPI_Topo_test / PMPI_Topo_test(comm: Handle, status: *mut c_int) {
        call(comm, |g| {
            let e = g.lib()?.comm(comm)?;
            let t = if e.cart.is_some() {
                MPI_CART
            } else if e.graph.is_some() {
                crate::graph::MPI_GRAPH
            } else if e.dist_graph.is_some() {
                crate::dist_graph::MPI_DIST_GRAPH
            } else {
                MPI_UNDEFINED
            };
            // SAFETY: MPI's contract: `status` is valid for a write.
            *unsafe { out(status) }? = t;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(n: u32, given: &[u32]) -> Result<Vec<u32>, String> {
        let mut d = given.to_vec();
        dims_create(n, &mut d).map(|()| d)
    }

    #[test]
    fn dims_are_balanced_and_non_increasing() {
        assert_eq!(dims(6, &[0, 0]), Ok(vec![3, 2]));
        assert_eq!(dims(7, &[0, 0]), Ok(vec![7, 1]));
        assert_eq!(dims(24, &[0, 0, 0]), Ok(vec![4, 3, 2]));
        assert_eq!(dims(16, &[0, 0]), Ok(vec![4, 4]));
        assert_eq!(dims(12, &[0, 3, 0]), Ok(vec![2, 3, 2]));
        assert_eq!(dims(1, &[0, 0]), Ok(vec![1, 1]));
        assert_eq!(dims(8, &[2, 4]), Ok(vec![2, 4]));
        assert!(dims(7, &[0, 3]).is_err());
        assert!(dims(8, &[2, 2]).is_err());
    }

    #[test]
    fn ranks_and_coordinates_are_row_major_and_wrap_where_periodic() {
        let c = Cart {
            dims: vec![2, 3],
            periods: vec![false, true],
        };
        assert_eq!(c.coords(4), vec![1, 1]);
        assert_eq!(c.rank(&[1, 1]), Some(4));
        assert_eq!(c.rank(&[1, 3]), Some(3));
        assert_eq!(c.rank(&[1, -1]), Some(5));
        assert_eq!(c.rank(&[2, 0]), None);
        for r in 0..6 {
            let x: Vec<i64> = c.coords(r).into_iter().map(i64::from).collect();
            assert_eq!(c.rank(&x), Some(r));
        }
    }
}
