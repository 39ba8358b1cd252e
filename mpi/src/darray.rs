//! `MPI_Type_create_darray` (MPI 4.1 §5.1.4): the part of a global array that one
//! process of a grid owns under a block, cyclic or no distribution per dimension (the
//! HPF layouts parallel I/O and ScaLAPACK-style codes use), built on `typemap`'s general
//! constructor as `MPI_Type_create_subarray` is.
//!
//! The process grid is row-major whatever the array's order. Per dimension the process
//! owns a sorted list of index runs; the type is one block per combination of the
//! slower dimensions' owned indices and run of the fastest dimension, in memory order,
//! with lower bound 0 and the whole array's extent.

use std::ffi::c_int;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::{call, NO_OBJECT};
use crate::type_contents as tc;
use crate::typemap::{arr, extent_of, n_arg};
use crate::typemap_ctors::{MPI_ORDER_C, MPI_ORDER_FORTRAN};

/// `MPI_DISTRIBUTE_BLOCK` (MPICH's value).
pub const MPI_DISTRIBUTE_BLOCK: c_int = 121;
/// `MPI_DISTRIBUTE_CYCLIC` (MPICH's value).
pub const MPI_DISTRIBUTE_CYCLIC: c_int = 122;
/// `MPI_DISTRIBUTE_NONE` (MPICH's value).
pub const MPI_DISTRIBUTE_NONE: c_int = 123;
/// `MPI_DISTRIBUTE_DFLT_DARG` (MPICH's value).
pub const MPI_DISTRIBUTE_DFLT_DARG: c_int = -49767;
/// `MPI_COMBINER_DARRAY`.
const DARRAY: c_int = 312;
/// Most blocks one darray type may have (a cyclic(1) distribution of a large array
/// has one per element).
const MAX_BLOCKS: usize = 1 << 26;

/// One dimension's distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Dist {
    Block(usize),
    Cyclic(usize),
    None,
}

/// The runs `(first index, length)` of a dimension of `gsize` that coordinate `coord`
/// of `psize` processes owns, in increasing order.
fn owned_runs(gsize: usize, dist: Dist, psize: usize, coord: usize) -> Vec<(usize, usize)> {
    match dist {
        Dist::None => vec![(0, gsize)],
        Dist::Block(b) => {
            let start = (coord * b).min(gsize);
            let end = ((coord + 1) * b).min(gsize);
            if end > start {
                vec![(start, end - start)]
            } else {
                Vec::new()
            }
        }
        Dist::Cyclic(b) => {
            let mut runs = Vec::new();
            let mut k = coord * b;
            while k < gsize {
                runs.push((k, b.min(gsize - k)));
                k += psize * b;
            }
            runs
        }
    }
}

/// Checks one dimension's arguments; its distribution.
fn dist_arg(i: usize, gsize: c_int, distrib: c_int, darg: c_int, psize: c_int) -> R<Dist> {
    let bad = |why: &str| {
        Fail::new(
            MPI_ERR_ARG,
            format!("dimension {i} (size {gsize}, distribution {distrib}, argument {darg}, {psize} processes): {why}"),
        )
    };
    if gsize < 1 || psize < 1 {
        return Err(bad("sizes must be positive"));
    }
    let (g, p) = (gsize as usize, psize as usize);
    match distrib {
        MPI_DISTRIBUTE_NONE if p != 1 => Err(bad("an undistributed dimension has 1 process")),
        MPI_DISTRIBUTE_NONE => Ok(Dist::None),
        MPI_DISTRIBUTE_BLOCK => {
            let b = match darg {
                MPI_DISTRIBUTE_DFLT_DARG => g.div_ceil(p),
                d if d >= 1 => d as usize,
                _ => return Err(bad("a block size must be positive")),
            };
            if b.checked_mul(p).is_none_or(|all| all < g) {
                return Err(bad("the blocks do not cover the dimension"));
            }
            Ok(Dist::Block(b))
        }
        MPI_DISTRIBUTE_CYCLIC => match darg {
            MPI_DISTRIBUTE_DFLT_DARG => Ok(Dist::Cyclic(1)),
            d if d >= 1 => Ok(Dist::Cyclic(d as usize)),
            _ => Err(bad("a block size must be positive")),
        },
        _ => Err(bad("not a distribution")),
    }
}

/// The blocks `(items, byte displacement)` of the owned part, in memory order:
/// `gsizes` and `runs` fastest dimension last, `ext` the old type's extent.
fn darray_blocks(
    gsizes: &[usize],
    runs: &[Vec<(usize, usize)>],
    ext: isize,
) -> R<Vec<(usize, isize)>> {
    let n = gsizes.len();
    let last = n - 1;
    let mut strides = vec![1isize; n];
    for i in (0..last).rev() {
        strides[i] = strides[i + 1] * gsizes[i + 1] as isize;
    }
    // Every owned index of the slower dimensions, expanded from their runs.
    let idx: Vec<Vec<usize>> = runs[..last]
        .iter()
        .map(|r| r.iter().flat_map(|&(s, l)| s..s + l).collect())
        .collect();
    let count = idx
        .iter()
        .map(Vec::len)
        .chain(std::iter::once(runs[last].len()))
        .try_fold(1usize, |a, x| a.checked_mul(x))
        .filter(|&c| c <= MAX_BLOCKS)
        .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "a darray of too many blocks"))?;
    let mut blocks = Vec::with_capacity(count);
    if count == 0 {
        return Ok(blocks);
    }
    let mut pos = vec![0usize; last];
    loop {
        let row: isize = (0..last)
            .map(|i| idx[i][pos[i]] as isize * strides[i])
            .sum();
        for &(s, l) in &runs[last] {
            blocks.push((l, (row + s as isize) * ext));
        }
        // The next combination, the fastest of the slower dimensions first.
        let mut i = last;
        loop {
            if i == 0 {
                return Ok(blocks);
            }
            i -= 1;
            pos[i] += 1;
            if pos[i] < idx[i].len() {
                break;
            }
            pos[i] = 0;
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_darray`: the part of an array of `gsizes` that process `rank`
    /// of a row-major grid of `psizes` (`size` processes) owns, each dimension
    /// distributed by block, cyclically or not at all (`darg`: the block size, or
    /// `MPI_DISTRIBUTE_DFLT_DARG`), in C or Fortran order; lower bound 0 and the whole
    /// array's extent.
    fn MPI_Type_create_darray / PMPI_Type_create_darray(
        size: c_int,
        rank: c_int,
        ndims: c_int,
        gsizes: *const c_int,
        distribs: *const c_int,
        dargs: *const c_int,
        psizes: *const c_int,
        order: c_int,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let n = n_arg(ndims)?;
            if n == 0 {
                return Err(Fail::new(MPI_ERR_DIMS, "a darray of 0 dimensions"));
            }
            // SAFETY: MPI's contract: the four arrays hold `ndims` values.
            let (gs, ds, da, ps) = unsafe {
                (arr(gsizes, n, "gsizes")?, arr(distribs, n, "distribs")?, arr(dargs, n, "dargs")?, arr(psizes, n, "psizes")?)
            };
            let mut dists = Vec::with_capacity(n);
            for i in 0..n {
                dists.push(dist_arg(i, gs[i], ds[i], da[i], ps[i])?);
            }
            let procs = ps.iter().try_fold(1i64, |a, &p| a.checked_mul(i64::from(p)));
            if procs != Some(i64::from(size)) {
                return Err(Fail::new(MPI_ERR_ARG, format!("the grid's processes are not {size}")));
            }
            if rank < 0 || rank >= size {
                return Err(Fail::new(MPI_ERR_RANK, format!("rank {rank} of {size}")));
            }
            // Row-major grid coordinates of `rank`.
            let mut coords = vec![0usize; n];
            let mut rest = rank as usize;
            for i in (0..n).rev() {
                coords[i] = rest % ps[i] as usize;
                rest /= ps[i] as usize;
            }
            let mut dims: Vec<(usize, Vec<(usize, usize)>)> = (0..n)
                .map(|i| (gs[i] as usize, owned_runs(gs[i] as usize, dists[i], ps[i] as usize, coords[i])))
                .collect();
            match order {
                MPI_ORDER_C => {}
                MPI_ORDER_FORTRAN => dims.reverse(),
                o => return Err(Fail::new(MPI_ERR_ARG, format!("order {o}"))),
            }
            let (gsz, runs): (Vec<usize>, Vec<_>) = dims.into_iter().unzip();
            let lib = g.lib()?;
            let blocks = darray_blocks(&gsz, &runs, extent_of(lib, oldtype)?)?;
            // SAFETY: MPI's contract: `newtype` is valid for a write.
            unsafe { crate::typemap_ctors::array_part(lib, oldtype, &gsz, blocks, newtype) }?;
            let ints = [&[size, rank, ndims][..], gs, ds, da, ps, &[order]].concat();
            // SAFETY: `newtype` was just written.
            unsafe { tc::record(lib, newtype, DARRAY, ints, vec![], &[oldtype]) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_each_distribution() {
        assert_eq!(owned_runs(10, Dist::Block(4), 3, 0), vec![(0, 4)]);
        assert_eq!(owned_runs(10, Dist::Block(4), 3, 2), vec![(8, 2)]);
        assert_eq!(owned_runs(10, Dist::Block(5), 3, 2), vec![]);
        assert_eq!(
            owned_runs(10, Dist::Cyclic(1), 3, 1),
            vec![(1, 1), (4, 1), (7, 1)]
        );
        assert_eq!(owned_runs(10, Dist::Cyclic(2), 2, 1), vec![(2, 2), (6, 2)]);
        assert_eq!(
            owned_runs(9, Dist::Cyclic(2), 2, 0),
            vec![(0, 2), (4, 2), (8, 1)]
        );
        assert_eq!(owned_runs(7, Dist::None, 1, 0), vec![(0, 7)]);
    }

    #[test]
    fn every_element_is_owned_once_across_the_grid() {
        // A 7x5 array on a 2x3 grid, cyclic(2) by block: each element in one block.
        let (gs, ps) = ([7usize, 5], [2usize, 3]);
        let dists = [Dist::Cyclic(2), Dist::Block(2)];
        let mut seen = vec![0; 35];
        for rank in 0..6 {
            let coords = [rank / 3, rank % 3];
            let runs: Vec<_> = (0..2)
                .map(|i| owned_runs(gs[i], dists[i], ps[i], coords[i]))
                .collect();
            for (len, disp) in darray_blocks(&gs, &runs, 1).unwrap() {
                for k in 0..len {
                    seen[disp as usize + k] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{seen:?}");
    }

    #[test]
    fn bad_dimensions_are_refused() {
        assert!(dist_arg(0, 10, MPI_DISTRIBUTE_BLOCK, 3, 3).is_err());
        assert!(dist_arg(0, 10, MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_DFLT_DARG, 2).is_err());
        assert!(dist_arg(0, 10, 7, 1, 1).is_err());
        assert!(dist_arg(0, 0, MPI_DISTRIBUTE_CYCLIC, 1, 1).is_err());
        assert_eq!(
            dist_arg(0, 10, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG, 3).unwrap(),
            Dist::Block(4)
        );
    }
}
