//! The large-count (`_c`) type constructors of MPI 4.1 (§5.1.2-§5.1.7):
//! `MPI_Type_contiguous_c`, `vector_c`, `create_hvector_c`, `indexed_c`,
//! `create_hindexed_c`, `create_indexed_block_c`, `create_hindexed_block_c`,
//! `create_struct_c`, `create_subarray_c`, `create_darray_c` and `create_resized_c`.
//!
//! Each narrows its counts to `int`s (`count_c`), widens its byte displacements and
//! strides to `MPI_Aint`, and calls the `int` form's `PMPI_` symbol, which copies
//! what it needs from the arrays before it returns (the narrowed vectors here are
//! temporaries). On success the type's recorded contents are replaced by the
//! large-count form's (`type_contents::record_large`): its `MPI_Count` arguments as
//! large counts, its `int` ones as integers, as MPI 4.1 §5.1.13 decodes them.

use std::ffi::c_int;

use crate::consts::*;
use crate::count_c::{narrow, narrow_counts, MpiCount, Narrowed};
use crate::darray::PMPI_Type_create_darray;
use crate::datatype::PMPI_Type_contiguous;
use crate::error::{Fail, R};
use crate::state::{call, NO_OBJECT};
use crate::type_contents as tc;
use crate::typemap::{
    PMPI_Type_create_hindexed, PMPI_Type_create_hvector, PMPI_Type_create_indexed_block,
    PMPI_Type_create_resized, PMPI_Type_create_struct, PMPI_Type_indexed, PMPI_Type_vector,
};
use crate::typemap_ctors::{PMPI_Type_create_hindexed_block, PMPI_Type_create_subarray};
use crate::util::read_handle;

/// A refused argument: `MPI_ERR_COUNT` (or the narrowing's class) raised as the `int`
/// constructors raise theirs, on the handler of the objectless calls.
fn refuse(fail: Fail) -> c_int {
    call(NO_OBJECT, |_| Err(fail))
}

/// Unwraps a narrowed argument, or returns from the entry point with the refusal.
macro_rules! arg {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(fail) => return refuse(fail),
        }
    };
}

/// An `MPI_Count` byte displacement or stride as the `MPI_Aint` the `int` form takes.
fn aint(v: MpiCount, what: &str) -> R<isize> {
    isize::try_from(v).map_err(|_| {
        Fail::new(
            MPI_ERR_COUNT,
            format!("{what} {v} does not fit in an MPI_Aint"),
        )
    })
}

/// The entries an array argument of `count` items holds (0 for a negative count, which
/// the `int` form refuses).
fn entries(count: c_int) -> usize {
    usize::try_from(count).unwrap_or(0)
}

/// The program's `n` values at `p` (none when `p` is null), for the recorded contents.
///
/// # Safety
/// `p` is null or valid for reads of `n` values.
unsafe fn values<T: Copy>(p: *const T, n: usize) -> Vec<T> {
    if p.is_null() || n == 0 {
        return Vec::new();
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
}

/// `MPI_Count` displacements as `MPI_Aint`s (null stays null: the `int` form refuses it
/// unless there are no blocks).
///
/// # Safety
/// `p` is null or valid for reads of `n` values.
unsafe fn aints(p: *const MpiCount, n: usize, what: &str) -> R<Option<Vec<isize>>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    let v = unsafe { std::slice::from_raw_parts(p, n) };
    v.iter()
        .map(|&x| aint(x, what))
        .collect::<R<Vec<_>>>()
        .map(Some)
}

/// The pointer to hand to the `int` form for [`aints`]'s result.
fn aint_ptr(v: &Option<Vec<isize>>) -> *const isize {
    v.as_ref().map_or(std::ptr::null(), |v| v.as_ptr())
}

/// After the `int` form returned `rc`: on success, records the large-count form's
/// arguments (`args`: its integers and its `MPI_Count`s, read from the program's
/// arrays only then) as the contents of the type at `*newtype`.
fn made(
    rc: c_int,
    newtype: *mut Handle,
    args: impl FnOnce() -> (Vec<c_int>, Vec<MpiCount>),
) -> c_int {
    if rc != MPI_SUCCESS {
        return rc;
    }
    let (ints, large) = args();
    call(NO_OBJECT, |g| {
        // SAFETY: the `int` form succeeded, so it wrote `*newtype`.
        let h = unsafe { read_handle(newtype) }?;
        tc::record_large(g.lib()?, h, ints, large)
    })
}

/// A narrowed array of `count` counts.
///
/// # Safety
/// `p` is null or valid for reads of `count` values (when `count` > 0).
unsafe fn counts(p: *const MpiCount, count: c_int, what: &str) -> R<Narrowed> {
    // SAFETY: the caller's contract.
    unsafe { narrow_counts(p, entries(count), what) }
}

crate::mpi_fn! {
    /// `MPI_Type_contiguous_c`: `MPI_Type_contiguous` with an `MPI_Count` count.
    fn MPI_Type_contiguous_c / PMPI_Type_contiguous_c(count: MpiCount, oldtype: Handle, newtype: *mut Handle) {
        let c = arg!(narrow(count, "count"));
        // SAFETY: the same contract as this function's.
        let rc = unsafe { PMPI_Type_contiguous(c, oldtype, newtype) };
        made(rc, newtype, || (vec![], vec![count]))
    }
}

crate::mpi_fn! {
    /// `MPI_Type_vector_c`: `MPI_Type_vector` with `MPI_Count` arguments.
    fn MPI_Type_vector_c / PMPI_Type_vector_c(
        count: MpiCount,
        blocklength: MpiCount,
        stride: MpiCount,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        let c = arg!(narrow(count, "count"));
        let b = arg!(narrow(blocklength, "blocklength"));
        let s = arg!(narrow(stride, "stride"));
        // SAFETY: the same contract as this function's.
        let rc = unsafe { PMPI_Type_vector(c, b, s, oldtype, newtype) };
        made(rc, newtype, || (vec![], vec![count, blocklength, stride]))
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_hvector_c`: `MPI_Type_create_hvector` with `MPI_Count`
    /// arguments (the stride in bytes).
    fn MPI_Type_create_hvector_c / PMPI_Type_create_hvector_c(
        count: MpiCount,
        blocklength: MpiCount,
        stride: MpiCount,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        let c = arg!(narrow(count, "count"));
        let b = arg!(narrow(blocklength, "blocklength"));
        let s = arg!(aint(stride, "stride"));
        // SAFETY: the same contract as this function's.
        let rc = unsafe { PMPI_Type_create_hvector(c, b, s, oldtype, newtype) };
        made(rc, newtype, || (vec![], vec![count, blocklength, stride]))
    }
}

crate::mpi_fn! {
    /// `MPI_Type_indexed_c`: `MPI_Type_indexed` with `MPI_Count` arguments.
    fn MPI_Type_indexed_c / PMPI_Type_indexed_c(
        count: MpiCount,
        array_of_blocklengths: *const MpiCount,
        array_of_displacements: *const MpiCount,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        let c = arg!(narrow(count, "count"));
        // SAFETY: MPI's contract: both arrays hold `count` values.
        let (bl, d) = unsafe {
            (arg!(counts(array_of_blocklengths, c, "blocklength")), arg!(counts(array_of_displacements, c, "displacement")))
        };
        // SAFETY: the same contract as this function's; the vectors outlive the call.
        let rc = unsafe { PMPI_Type_indexed(c, bl.ptr(), d.ptr(), oldtype, newtype) };
        // SAFETY: as above (read again only after a success).
        made(rc, newtype, || (vec![], unsafe {
            [vec![count], values(array_of_blocklengths, entries(c)), values(array_of_displacements, entries(c))].concat()
        }))
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_hindexed_c`: `MPI_Type_create_hindexed` with `MPI_Count`
    /// arguments (displacements in bytes).
    fn MPI_Type_create_hindexed_c / PMPI_Type_create_hindexed_c(
        count: MpiCount,
        array_of_blocklengths: *const MpiCount,
        array_of_displacements: *const MpiCount,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        let c = arg!(narrow(count, "count"));
        let n = entries(c);
        // SAFETY: MPI's contract: both arrays hold `count` values.
        let (bl, d) = unsafe {
            (arg!(counts(array_of_blocklengths, c, "blocklength")), arg!(aints(array_of_displacements, n, "displacement")))
        };
        // SAFETY: the same contract as this function's; the vectors outlive the call.
        let rc = unsafe { PMPI_Type_create_hindexed(c, bl.ptr(), aint_ptr(&d), oldtype, newtype) };
        // SAFETY: as above.
        made(rc, newtype, || (vec![], unsafe {
            [vec![count], values(array_of_blocklengths, n), values(array_of_displacements, n)].concat()
        }))
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_indexed_block_c`: `MPI_Type_create_indexed_block` with
    /// `MPI_Count` arguments.
    fn MPI_Type_create_indexed_block_c / PMPI_Type_create_indexed_block_c(
        count: MpiCount,
        blocklength: MpiCount,
        array_of_displacements: *const MpiCount,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        let c = arg!(narrow(count, "count"));
        let b = arg!(narrow(blocklength, "blocklength"));
        // SAFETY: MPI's contract: the array holds `count` values.
        let d = unsafe { arg!(counts(array_of_displacements, c, "displacement")) };
        // SAFETY: the same contract as this function's; the vector outlives the call.
        let rc = unsafe { PMPI_Type_create_indexed_block(c, b, d.ptr(), oldtype, newtype) };
        // SAFETY: as above.
        made(rc, newtype, || (vec![], unsafe { [vec![count, blocklength], values(array_of_displacements, entries(c))].concat() }))
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_hindexed_block_c`: `MPI_Type_create_hindexed_block` with
    /// `MPI_Count` arguments (displacements in bytes).
    fn MPI_Type_create_hindexed_block_c / PMPI_Type_create_hindexed_block_c(
        count: MpiCount,
        blocklength: MpiCount,
        array_of_displacements: *const MpiCount,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        let c = arg!(narrow(count, "count"));
        let b = arg!(narrow(blocklength, "blocklength"));
        let n = entries(c);
        // SAFETY: MPI's contract: the array holds `count` values.
        let d = unsafe { arg!(aints(array_of_displacements, n, "displacement")) };
        // SAFETY: the same contract as this function's; the vector outlives the call.
        let rc = unsafe { PMPI_Type_create_hindexed_block(c, b, aint_ptr(&d), oldtype, newtype) };
        // SAFETY: as above.
        made(rc, newtype, || (vec![], unsafe { [vec![count, blocklength], values(array_of_displacements, n)].concat() }))
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_struct_c`: `MPI_Type_create_struct` with `MPI_Count`
    /// arguments (displacements in bytes).
    fn MPI_Type_create_struct_c / PMPI_Type_create_struct_c(
        count: MpiCount,
        array_of_blocklengths: *const MpiCount,
        array_of_displacements: *const MpiCount,
        array_of_types: *const Handle,
        newtype: *mut Handle
    ) {
        let c = arg!(narrow(count, "count"));
        let n = entries(c);
        // SAFETY: MPI's contract: the arrays hold `count` values.
        let (bl, d) = unsafe {
            (arg!(counts(array_of_blocklengths, c, "blocklength")), arg!(aints(array_of_displacements, n, "displacement")))
        };
        // SAFETY: the same contract as this function's; the vectors outlive the call.
        let rc = unsafe { PMPI_Type_create_struct(c, bl.ptr(), aint_ptr(&d), array_of_types, newtype) };
        // SAFETY: as above.
        made(rc, newtype, || (vec![], unsafe {
            [vec![count], values(array_of_blocklengths, n), values(array_of_displacements, n)].concat()
        }))
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_subarray_c`: `MPI_Type_create_subarray` with `MPI_Count`
    /// sizes, subsizes and starts.
    fn MPI_Type_create_subarray_c / PMPI_Type_create_subarray_c(
        ndims: c_int,
        array_of_sizes: *const MpiCount,
        array_of_subsizes: *const MpiCount,
        array_of_starts: *const MpiCount,
        order: c_int,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        let n = entries(ndims);
        // SAFETY: MPI's contract: the three arrays hold `ndims` values.
        let (sz, sub, st) = unsafe {
            (
                arg!(counts(array_of_sizes, ndims, "size")),
                arg!(counts(array_of_subsizes, ndims, "subsize")),
                arg!(counts(array_of_starts, ndims, "start")),
            )
        };
        // SAFETY: the same contract as this function's; the vectors outlive the call.
        let rc = unsafe { PMPI_Type_create_subarray(ndims, sz.ptr(), sub.ptr(), st.ptr(), order, oldtype, newtype) };
        // SAFETY: as above.
        made(rc, newtype, || (vec![ndims, order], unsafe {
            [values(array_of_sizes, n), values(array_of_subsizes, n), values(array_of_starts, n)].concat()
        }))
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_darray_c`: `MPI_Type_create_darray` with `MPI_Count` global
    /// sizes.
    fn MPI_Type_create_darray_c / PMPI_Type_create_darray_c(
        size: c_int,
        rank: c_int,
        ndims: c_int,
        array_of_gsizes: *const MpiCount,
        array_of_distribs: *const c_int,
        array_of_dargs: *const c_int,
        array_of_psizes: *const c_int,
        order: c_int,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        let n = entries(ndims);
        // SAFETY: MPI's contract: the array holds `ndims` values.
        let gs = unsafe { arg!(counts(array_of_gsizes, ndims, "gsize")) };
        // SAFETY: the same contract as this function's; the vector outlives the call.
        let rc = unsafe {
            PMPI_Type_create_darray(
                size, rank, ndims, gs.ptr(), array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype, newtype,
            )
        };
        // SAFETY: as above: the four arrays hold `ndims` values.
        made(rc, newtype, || unsafe {
            let ints = [
                vec![size, rank, ndims],
                values(array_of_distribs, n),
                values(array_of_dargs, n),
                values(array_of_psizes, n),
                vec![order],
            ];
            (ints.concat(), values(array_of_gsizes, n))
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_resized_c`: `MPI_Type_create_resized` with `MPI_Count` lower
    /// bound and extent.
    fn MPI_Type_create_resized_c / PMPI_Type_create_resized_c(
        oldtype: Handle,
        lb: MpiCount,
        extent: MpiCount,
        newtype: *mut Handle
    ) {
        let l = arg!(aint(lb, "lb"));
        let e = arg!(aint(extent, "extent"));
        // SAFETY: the same contract as this function's.
        let rc = unsafe { PMPI_Type_create_resized(oldtype, l, e, newtype) };
        made(rc, newtype, || (vec![], vec![lb, extent]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displacements_widen_and_negative_counts_have_no_entries() {
        assert_eq!(aint(-8, "lb").unwrap(), -8);
        assert_eq!(aint(1 << 40, "stride").unwrap(), 1 << 40);
        assert_eq!(entries(-1), 0);
        assert_eq!(entries(3), 3);
        let d: [MpiCount; 2] = [4, -4];
        // SAFETY: two values.
        let w = unsafe { aints(d.as_ptr(), 2, "displacement") }.unwrap();
        assert_eq!(w.as_deref(), Some(&[4isize, -4][..]));
        // SAFETY: null.
        assert!(unsafe { aints(std::ptr::null(), 2, "displacement") }
            .unwrap()
            .is_none());
        // SAFETY: null.
        assert!(unsafe { values::<i64>(std::ptr::null(), 2) }.is_empty());
    }
}
