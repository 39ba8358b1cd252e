//! The type constructors and queries added after MPICH's test suite asked for them:
//! `MPI_Type_create_subarray`, `MPI_Type_create_hindexed_block` and the `MPI_Count`
//! queries (`MPI_Type_get_extent_x`, `MPI_Type_get_true_extent_x`), built on
//! `typemap`'s general constructor.

use crate::state::NO_OBJECT;
use crate::type_contents as tc;
use std::ffi::c_int;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::call;
use crate::state::Lib;
use crate::typemap::{
    arr, blocks_of, bounds, describe, extent_of, forget, n_arg, register, Builder, Layout,
};
use crate::util::out;

crate::mpi_fn! {
    /// `MPI_Type_create_hindexed_block`: blocks of one length at byte displacements.
    fn MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block(
        count: c_int,
        blocklength: c_int,
        displacements: *const isize,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let (n, bl) = (n_arg(count)?, n_arg(blocklength)?);
            // SAFETY: MPI's contract: `displacements` holds `count` values.
            let d = unsafe { arr(displacements, n, "displacements") }?;
            let blocks = d.iter().map(|&x| (bl, x));
            blocks_of(lib, oldtype, blocks, newtype)?;
            let (ints, aints) = (vec![count, blocklength], d.to_vec());
            // SAFETY: `blocks_of` wrote `*newtype`.
            unsafe { tc::record(lib, newtype, tc::HINDEXED_BLOCK, ints, aints, &[oldtype]) }
        })
    }
}

/// `MPI_ORDER_C`: the last dimension varies fastest (MPICH's value).
pub const MPI_ORDER_C: c_int = 56;
/// `MPI_ORDER_FORTRAN`: the first dimension varies fastest (MPICH's value).
pub const MPI_ORDER_FORTRAN: c_int = 57;

/// The blocks of a subarray (MPI 4.1 §5.1.3): one block of `subsizes` of the fastest
/// dimension per combination of the other dimensions' indices, as `(items, byte
/// displacement)`, in memory order; `sizes` etc. are given fastest dimension last.
fn subarray_blocks(
    sizes: &[usize],
    subsizes: &[usize],
    starts: &[usize],
    ext: isize,
) -> Vec<(usize, isize)> {
    let n = sizes.len();
    let Some(last) = n.checked_sub(1) else {
        return Vec::new();
    };
    // strides[i]: items between consecutive indices of dimension i.
    let mut strides = vec![1isize; n];
    for i in (0..last).rev() {
        strides[i] = strides[i + 1] * sizes[i + 1] as isize;
    }
    let rows: usize = subsizes[..last].iter().product();
    let mut blocks = Vec::with_capacity(rows);
    let mut idx = vec![0usize; last];
    for _ in 0..rows {
        let mut at = starts[last] as isize;
        for i in 0..last {
            at += (starts[i] + idx[i]) as isize * strides[i];
        }
        blocks.push((subsizes[last], at * ext));
        for i in (0..last).rev() {
            idx[i] += 1;
            if idx[i] < subsizes[i] {
                break;
            }
            idx[i] = 0;
        }
    }
    blocks
}

/// Writes to `*newtype` the type of part of an array of `sizes` items of `oldtype`:
/// `blocks` (items, byte displacement) in memory order, its lower bound 0 and its
/// extent the whole array's, so consecutive items are consecutive arrays (the
/// subarray and darray constructors).
///
/// # Safety
/// `newtype` is valid for a write.
pub(crate) unsafe fn array_part(
    lib: &mut Lib,
    oldtype: Handle,
    sizes: &[usize],
    blocks: Vec<(usize, isize)>,
    newtype: *mut Handle,
) -> R<()> {
    let whole = sizes
        .iter()
        .try_fold(extent_of(lib, oldtype)?, |acc, &x| {
            acc.checked_mul(x as isize)
        })
        .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "the array's extent overflows"))?;
    let mut inner = MPI_DATATYPE_NULL;
    blocks_of(lib, oldtype, blocks.into_iter(), &mut inner)?;
    // SAFETY: the caller's contract.
    let slot = unsafe { out(newtype) }?;
    let (t, l) = describe(lib, inner)?;
    forget(lib, inner);
    lib.types.remove(&inner);
    let mut b = Builder::new();
    b.layout = Layout {
        lb: 0,
        extent: whole,
        ..l
    };
    b.first = false;
    *slot = register(lib, b, t.size, t.elem, t.elems);
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Type_create_subarray`: the `subsizes` block at `starts` of an array of
    /// `sizes`, in C or Fortran order; its lower bound 0 and extent the whole array's,
    /// so consecutive items are consecutive arrays.
    fn MPI_Type_create_subarray / PMPI_Type_create_subarray(
        ndims: c_int,
        sizes: *const c_int,
        subsizes: *const c_int,
        starts: *const c_int,
        order: c_int,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let n = n_arg(ndims)?;
            if n == 0 {
                return Err(Fail::new(MPI_ERR_DIMS, "a subarray of 0 dimensions"));
            }
            // SAFETY: MPI's contract: the three arrays hold `ndims` values.
            let (sz, sub, st) = unsafe { (arr(sizes, n, "sizes")?, arr(subsizes, n, "subsizes")?, arr(starts, n, "starts")?) };
            let (mut d_sz, mut d_sub, mut d_st) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
            for i in 0..n {
                let (a, b, c) = (sz[i], sub[i], st[i]);
                if a < 1 || b < 0 || c < 0 || i64::from(b) + i64::from(c) > i64::from(a) {
                    return Err(Fail::new(
                        MPI_ERR_ARG,
                        format!("dimension {i}: size {a}, subsize {b}, start {c}"),
                    ));
                }
                d_sz.push(a as usize);
                d_sub.push(b as usize);
                d_st.push(c as usize);
            }
            match order {
                MPI_ORDER_C => {}
                MPI_ORDER_FORTRAN => {
                    d_sz.reverse();
                    d_sub.reverse();
                    d_st.reverse();
                }
                o => return Err(Fail::new(MPI_ERR_ARG, format!("order {o}"))),
            }
            let lib = g.lib()?;
            let ext = extent_of(lib, oldtype)?;
            let blocks = subarray_blocks(&d_sz, &d_sub, &d_st, ext);
            // SAFETY: MPI's contract: `newtype` is valid for a write.
            unsafe { array_part(lib, oldtype, &d_sz, blocks, newtype) }?;
            let ints = [&[ndims][..], sz, sub, st, &[order]].concat();
            // SAFETY: `newtype` was just written.
            unsafe { tc::record(lib, newtype, tc::SUBARRAY, ints, vec![], &[oldtype]) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_get_extent_x`: `MPI_Type_get_extent` with `MPI_Count` results.
    fn MPI_Type_get_extent_x / PMPI_Type_get_extent_x(datatype: Handle, lb: *mut i64, extent: *mut i64) {
        call(NO_OBJECT, |g| {
            let (l, e) = bounds(g.lib()?, datatype)?;
            // SAFETY: MPI's contract: both are valid for writes.
            unsafe {
                *out(lb)? = l as i64;
                *out(extent)? = e as i64;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_get_true_extent_x`: `MPI_Type_get_true_extent` with `MPI_Count`
    /// results.
    fn MPI_Type_get_true_extent_x / PMPI_Type_get_true_extent_x(
        datatype: Handle,
        true_lb: *mut i64,
        true_extent: *mut i64
    ) {
        call(NO_OBJECT, |g| {
            let (_, l) = describe(g.lib()?, datatype)?;
            // SAFETY: MPI's contract: both are valid for writes.
            unsafe {
                *out(true_lb)? = l.true_lb as i64;
                *out(true_extent)? = (l.true_ub - l.true_lb) as i64;
            }
            Ok(())
        })
    }
}
