//! What the large-count entry points (MPI 4.1's `_c` forms: `MPI_Send_c`,
//! `MPI_Allgatherv_c`, `MPI_Type_vector_c`, ...) share.
//!
//! A `_c` function takes its counts as `MPI_Count` and, where the standard widens them,
//! its displacements as `MPI_Aint` or `MPI_Count`. Ours narrows each to an `int` and
//! calls the `int` form's `PMPI_` symbol (so a profiling tool that wraps `MPI_Send_c`
//! sees one call, and the two forms cannot drift apart). A value outside the `int` range
//! is refused with `MPI_ERR_COUNT`, raised on the call's communicator, window or file:
//! this library's datatype and collective engines count items in `int`s. Arrays are
//! narrowed into vectors of their own, read once at the call: every `int` form copies
//! what it needs from its arrays before it returns.

use std::ffi::c_int;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::call;

/// `MPI_Count` in C (`int64_t`).
pub(crate) type MpiCount = i64;

/// `MPI_Aint` in C (`intptr_t`).
pub(crate) type MpiAint = isize;

/// The refusal of a value beyond the `int` range.
#[cold]
fn too_large(value: i128, what: &str) -> Fail {
    Fail::new(
        MPI_ERR_COUNT,
        format!(
            "{what} {value} is outside the int range: this library counts items, \
             displacements and strides in ints (at most {})",
            c_int::MAX
        ),
    )
}

/// A count (or stride, displacement) of a `_c` function as its `int` form takes it.
/// The sign is not checked here: the `int` form refuses a negative count as it always
/// does, and accepts a negative stride.
///
/// # Errors
/// `MPI_ERR_COUNT` when `value` does not fit in an `int`.
pub(crate) fn narrow(value: MpiCount, what: &str) -> R<c_int> {
    c_int::try_from(value).map_err(|_| too_large(i128::from(value), what))
}

/// An address-sized displacement (`MPI_Aint`) of a `_c` function as an `int`.
///
/// # Errors
/// `MPI_ERR_COUNT` when `value` does not fit in an `int`.
pub(crate) fn narrow_aint(value: MpiAint, what: &str) -> R<c_int> {
    c_int::try_from(value).map_err(|_| too_large(value as i128, what))
}

/// An array argument narrowed to `int`s: null stays null (an argument that is not
/// significant at this rank, or `MPI_UNWEIGHTED`-like markers, pass through as given).
#[derive(Debug)]
pub(crate) struct Narrowed {
    ints: Option<Vec<c_int>>,
}

impl Narrowed {
    /// The pointer to hand to the `int` form: null when the argument was null.
    pub(crate) fn ptr(&self) -> *const c_int {
        self.ints.as_ref().map_or(std::ptr::null(), |v| v.as_ptr())
    }

    /// The narrowed values (empty when the argument was null).
    #[cfg(test)]
    pub(crate) fn values(&self) -> &[c_int] {
        self.ints.as_deref().unwrap_or(&[])
    }
}

/// Narrows `n` entries of a `T` array, each by `one`.
///
/// # Safety
/// `p` is null or valid for reads of `n` items.
unsafe fn narrow_array<T: Copy>(
    p: *const T,
    n: usize,
    what: &str,
    one: impl Fn(T, &str) -> R<c_int>,
) -> R<Narrowed> {
    if p.is_null() {
        return Ok(Narrowed { ints: None });
    }
    // SAFETY: the caller's contract: `p` holds `n` items.
    let items = unsafe { std::slice::from_raw_parts(p, n) };
    let ints = items.iter().map(|&v| one(v, what)).collect::<R<Vec<_>>>()?;
    Ok(Narrowed { ints: Some(ints) })
}

/// Narrows an `MPI_Count` array of `n` entries (counts, strides, displacements).
///
/// # Safety
/// `p` is null or valid for reads of `n` values.
///
/// # Errors
/// `MPI_ERR_COUNT` when an entry does not fit in an `int`.
pub(crate) unsafe fn narrow_counts(p: *const MpiCount, n: usize, what: &str) -> R<Narrowed> {
    // SAFETY: the caller's contract, the same.
    unsafe { narrow_array(p, n, what, narrow) }
}

/// Narrows an `MPI_Aint` array of `n` entries (displacements in extents).
///
/// # Safety
/// `p` is null or valid for reads of `n` values.
///
/// # Errors
/// `MPI_ERR_COUNT` when an entry does not fit in an `int`.
pub(crate) unsafe fn narrow_aints(p: *const MpiAint, n: usize, what: &str) -> R<Narrowed> {
    // SAFETY: the caller's contract, the same.
    unsafe { narrow_array(p, n, what, narrow_aint) }
}

/// Narrows each `(value, what)` to an `int` (`count_c::narrow`), in order.
///
/// # Errors
/// `MPI_ERR_COUNT` for the first value outside the `int` range.
pub(crate) fn counts<const N: usize>(values: [(MpiCount, &str); N]) -> R<[c_int; N]> {
    let mut ints = [0; N];
    for (slot, (v, what)) in ints.iter_mut().zip(values) {
        *slot = narrow(v, what)?;
    }
    Ok(ints)
}

/// Raises `fail` on `comm` (its error handler, or the no-object one for
/// [`NO_OBJECT`]) and returns the code, as the `int` form would for a bad argument.
#[cold]
pub(crate) fn refuse(comm: Handle, fail: Fail) -> c_int {
    call(comm, |_| Err(fail))
}

/// [`refuse`] for a call that makes a request: `*request` is first set to
/// `MPI_REQUEST_NULL` (when `request` is not null), as the `int` forms do before they
/// fail, so that no stale handle is left behind.
///
/// # Safety
/// `request` is null or valid for a write (MPI's contract for an output handle).
#[cold]
pub(crate) unsafe fn refuse_request(comm: Handle, request: *mut Handle, fail: Fail) -> c_int {
    // SAFETY: the caller's contract, the same.
    unsafe { set_null(request, MPI_REQUEST_NULL) };
    refuse(comm, fail)
}

/// Sets the output handle `*slot` to `null` (when `slot` is not null) before a
/// refusal, as the `int` forms leave an output handle when they fail.
///
/// # Safety
/// `slot` is null or valid for a write.
pub(crate) unsafe fn set_null(slot: *mut Handle, null: Handle) {
    // SAFETY: the caller's contract: null (skipped) or valid for a write.
    if let Some(slot) = unsafe { slot.as_mut() } {
        *slot = null;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_in_the_int_range_pass_unchanged_and_others_are_count_errors() {
        assert_eq!(narrow(0, "count").unwrap(), 0);
        assert_eq!(narrow(-3, "stride").unwrap(), -3);
        assert_eq!(narrow(i64::from(c_int::MAX), "count").unwrap(), c_int::MAX);
        let f = narrow(i64::from(c_int::MAX) + 1, "count").unwrap_err();
        assert_eq!(f.class, MPI_ERR_COUNT);
        assert!(f.message.contains("count 2147483648"), "{}", f.message);
        assert_eq!(
            narrow(i64::from(c_int::MIN) - 1, "stride")
                .unwrap_err()
                .class,
            MPI_ERR_COUNT
        );
        assert_eq!(narrow_aint(-7, "displacement").unwrap(), -7);
        assert_eq!(
            narrow_aint(1 << 40, "displacement").unwrap_err().class,
            MPI_ERR_COUNT
        );
    }

    #[test]
    fn arrays_narrow_entry_by_entry_and_null_stays_null() {
        let counts: [MpiCount; 3] = [1, 2, 3];
        // SAFETY: three values.
        let n = unsafe { narrow_counts(counts.as_ptr(), 3, "recvcounts") }.unwrap();
        assert_eq!(n.values(), &[1, 2, 3]);
        assert!(!n.ptr().is_null());
        // SAFETY: null.
        let none = unsafe { narrow_counts(std::ptr::null(), 3, "recvcounts") }.unwrap();
        assert!(none.ptr().is_null());
        assert!(none.values().is_empty());
        let displs: [MpiAint; 2] = [0, 1 << 33];
        // SAFETY: two values.
        let f = unsafe { narrow_aints(displs.as_ptr(), 2, "displs") }.unwrap_err();
        assert_eq!(f.class, MPI_ERR_COUNT);
        assert!(f.message.contains("displs"), "{}", f.message);
    }

    #[test]
    fn counts_narrow_in_order_and_name_the_first_refused() {
        assert_eq!(
            counts([(3, "sendcount"), (4, "recvcount")]).unwrap(),
            [3, 4]
        );
        let big = MpiCount::from(c_int::MAX) + 1;
        let f = counts([(1, "sendcount"), (big, "recvcount")]).unwrap_err();
        assert_eq!(f.class, MPI_ERR_COUNT);
        assert!(f.message.contains("recvcount"), "{}", f.message);
    }
}
