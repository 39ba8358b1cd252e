//! `MPI_Type_create_f90_real`, `_complex` and `_integer` (MPI 4.1 §19.1.9): the
//! datatype of a Fortran `REAL`, `COMPLEX` or `INTEGER` of the kind
//! `SELECTED_REAL_KIND(p, r)` or `SELECTED_INT_KIND(r)` selects, for C programs (and
//! Fortran bindings written elsewhere) that describe Fortran data by precision and range.
//!
//! The kinds are those of gfortran on x86_64 without its 10-byte `REAL`: 4-, 8- and
//! 16-byte reals (`MPI_REAL4`, `REAL8`, `REAL16`), complex numbers of two of them, and
//! 1-, 2-, 4-, 8- and 16-byte integers. Each call makes a type that moves and reduces as
//! that sized type (a duplicate of it) and decodes as MPI says: combiner
//! `MPI_COMBINER_F90_REAL` (`_COMPLEX`, `_INTEGER`), the integers `(p, r)` (`(r)`), no
//! datatypes. A precision or range no kind holds is `MPI_ERR_ARG`.

use std::ffi::c_int;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::{call, NO_OBJECT};
use crate::type_contents as tc;

/// `MPI_COMBINER_F90_REAL` (the header's value).
pub(crate) const F90_REAL: c_int = 313;
/// `MPI_COMBINER_F90_COMPLEX`.
pub(crate) const F90_COMPLEX: c_int = 314;
/// `MPI_COMBINER_F90_INTEGER`.
pub(crate) const F90_INTEGER: c_int = 315;

// The sized Fortran types of the header (the MPI 5.0 ABI's values).
const MPI_INTEGER1: Handle = 0x2c0;
const MPI_INTEGER2: Handle = 0x2c8;
const MPI_INTEGER4: Handle = 0x2d0;
const MPI_REAL4: Handle = 0x2d2;
const MPI_INTEGER8: Handle = 0x2d8;
const MPI_REAL8: Handle = 0x2da;
const MPI_COMPLEX8: Handle = 0x2db;
const MPI_INTEGER16: Handle = 0x2e0;
const MPI_REAL16: Handle = 0x2e2;
const MPI_COMPLEX16: Handle = 0x2e3;
const MPI_COMPLEX32: Handle = 0x2eb;

/// Whether a precision or range argument allows `limit`: `MPI_UNDEFINED` (not given)
/// always does.
fn within(arg: c_int, limit: c_int) -> bool {
    arg == MPI_UNDEFINED || arg <= limit
}

/// The real kind (4, 8, 16 bytes) for precision `p` and range `r`, as the sized real
/// type of that kind and the complex type of two.
///
/// # Errors
/// `MPI_ERR_ARG` for a negative argument, both undefined, or no kind holding them.
fn real_kind(p: c_int, r: c_int) -> R<(Handle, Handle)> {
    let bad = |why: &str| {
        Fail::new(
            MPI_ERR_ARG,
            format!("Fortran real of precision {p}, range {r}: {why}"),
        )
    };
    if (p < 0 && p != MPI_UNDEFINED) || (r < 0 && r != MPI_UNDEFINED) {
        return Err(bad("a negative argument"));
    }
    if p == MPI_UNDEFINED && r == MPI_UNDEFINED {
        return Err(bad("neither is given"));
    }
    [
        (6, 37, MPI_REAL4, MPI_COMPLEX8),
        (15, 307, MPI_REAL8, MPI_COMPLEX16),
        (33, 4931, MPI_REAL16, MPI_COMPLEX32),
    ]
    .into_iter()
    .find(|&(pmax, rmax, _, _)| within(p, pmax) && within(r, rmax))
    .map(|(_, _, real, complex)| (real, complex))
    .ok_or_else(|| bad("no real kind holds it (at most 33 digits, range 4931)"))
}

/// The integer kind for a decimal range of `r` digits.
///
/// # Errors
/// `MPI_ERR_ARG` for a negative range or one no kind holds.
fn integer_kind(r: c_int) -> R<Handle> {
    [
        (2, MPI_INTEGER1),
        (4, MPI_INTEGER2),
        (9, MPI_INTEGER4),
        (18, MPI_INTEGER8),
        (38, MPI_INTEGER16),
    ]
    .into_iter()
    .find(|&(rmax, _)| (0..=rmax).contains(&r))
    .map(|(_, h)| h)
    .ok_or_else(|| {
        Fail::new(
            MPI_ERR_ARG,
            format!("Fortran integer of range {r}: no integer kind holds it (0 to 38 digits)"),
        )
    })
}

/// The sized type a type decoded as `combiner` with `ints` stands for (the external32
/// packing of such a type): `None` for another combiner or arguments no call accepts.
pub(crate) fn sized_type_of(combiner: c_int, ints: &[c_int]) -> Option<Handle> {
    match (combiner, ints) {
        (F90_REAL, &[p, r]) => real_kind(p, r).ok().map(|(real, _)| real),
        (F90_COMPLEX, &[p, r]) => real_kind(p, r).ok().map(|(_, complex)| complex),
        (F90_INTEGER, &[r]) => integer_kind(r).ok(),
        _ => None,
    }
}

/// Makes `*newtype`: a duplicate of `sized`, decoded as `combiner` with `ints`.
///
/// # Safety
/// `newtype` is valid for a write.
unsafe fn make(sized: Handle, combiner: c_int, ints: Vec<c_int>, newtype: *mut Handle) -> c_int {
    // SAFETY: the caller's contract.
    let rc = unsafe { crate::typemap::PMPI_Type_dup(sized, newtype) };
    if rc != MPI_SUCCESS {
        return rc;
    }
    call(NO_OBJECT, |g| {
        let lib = g.lib()?;
        // SAFETY: `PMPI_Type_dup` wrote `*newtype`.
        unsafe { tc::record(lib, newtype, combiner, ints, vec![], &[]) }
    })
}

crate::mpi_fn! {
    /// `MPI_Type_create_f90_real`: the type of a Fortran `REAL` with at least `p`
    /// decimal digits and a decimal exponent range of at least `r` (either may be
    /// `MPI_UNDEFINED`).
    fn MPI_Type_create_f90_real / PMPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut Handle) {
        match real_kind(p, r) {
            // SAFETY: MPI's contract: `newtype` is valid for a write.
            Ok((real, _)) => unsafe { make(real, F90_REAL, vec![p, r], newtype) },
            Err(f) => call(NO_OBJECT, |_| Err(f)),
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_f90_complex`: the type of a Fortran `COMPLEX` whose parts have
    /// at least `p` digits and range `r`.
    fn MPI_Type_create_f90_complex / PMPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut Handle) {
        match real_kind(p, r) {
            // SAFETY: MPI's contract: `newtype` is valid for a write.
            Ok((_, complex)) => unsafe { make(complex, F90_COMPLEX, vec![p, r], newtype) },
            Err(f) => call(NO_OBJECT, |_| Err(f)),
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_f90_integer`: the type of a Fortran `INTEGER` holding every
    /// number of `r` decimal digits.
    fn MPI_Type_create_f90_integer / PMPI_Type_create_f90_integer(r: c_int, newtype: *mut Handle) {
        match integer_kind(r) {
            // SAFETY: MPI's contract: `newtype` is valid for a write.
            Ok(int) => unsafe { make(int, F90_INTEGER, vec![r], newtype) },
            Err(f) => call(NO_OBJECT, |_| Err(f)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_precision_and_range() {
        assert_eq!(real_kind(3, 10).unwrap(), (MPI_REAL4, MPI_COMPLEX8));
        assert_eq!(real_kind(3, MPI_UNDEFINED).unwrap().0, MPI_REAL4);
        assert_eq!(real_kind(MPI_UNDEFINED, 30).unwrap().0, MPI_REAL4);
        assert_eq!(real_kind(7, 30).unwrap(), (MPI_REAL8, MPI_COMPLEX16));
        assert_eq!(real_kind(6, 38).unwrap().0, MPI_REAL8);
        assert_eq!(real_kind(20, MPI_UNDEFINED).unwrap().0, MPI_REAL16);
        assert_eq!(real_kind(34, 10).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(
            real_kind(MPI_UNDEFINED, MPI_UNDEFINED).unwrap_err().class,
            MPI_ERR_ARG
        );
        assert_eq!(real_kind(-2, 10).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(integer_kind(2).unwrap(), MPI_INTEGER1);
        assert_eq!(integer_kind(3).unwrap(), MPI_INTEGER2);
        assert_eq!(integer_kind(9).unwrap(), MPI_INTEGER4);
        assert_eq!(integer_kind(10).unwrap(), MPI_INTEGER8);
        assert_eq!(integer_kind(19).unwrap(), MPI_INTEGER16);
        assert_eq!(integer_kind(39).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(integer_kind(-1).unwrap_err().class, MPI_ERR_ARG);
    }

    #[test]
    fn decoded_arguments_name_the_sized_type_again() {
        assert_eq!(sized_type_of(F90_REAL, &[7, 30]), Some(MPI_REAL8));
        assert_eq!(
            sized_type_of(F90_COMPLEX, &[3, MPI_UNDEFINED]),
            Some(MPI_COMPLEX8)
        );
        assert_eq!(sized_type_of(F90_INTEGER, &[5]), Some(MPI_INTEGER4));
        assert_eq!(sized_type_of(F90_INTEGER, &[5, 1]), None);
        assert_eq!(sized_type_of(tc::DUP, &[]), None);
    }
}
