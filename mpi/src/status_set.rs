//! What a program may write into a status or ask of sizes (MPI 4.1 §3.2.5, §13.6.3,
//! §4.1.11): `MPI_Status_set_elements`, `MPI_Status_set_elements_x`,
//! `MPI_Status_set_cancelled` (for generalized requests and layered libraries),
//! `MPI_Get_elements_x`, and `MPI_Type_match_size`. A status holds its byte count in
//! its first two hidden words and whether it was cancelled in the third, as the
//! completion calls write them (`request::write_status`).

use std::ffi::c_int;

use crate::consts::*;
use crate::datatype::TypeEntry;
use crate::error::{Fail, R};
use crate::request::MPI_Status;
use crate::state::{call, NO_OBJECT};
use crate::util::out;

/// `MPI_TYPECLASS_INTEGER`, `_REAL`, `_COMPLEX` (`MPI_Type_match_size`).
const TYPECLASS_INTEGER: c_int = 1;
const TYPECLASS_REAL: c_int = 2;
const TYPECLASS_COMPLEX: c_int = 3;

/// The bytes of one basic element of `t` (0 for an empty type).
fn element_bytes(t: &TypeEntry) -> u64 {
    t.size.checked_div(t.elems).unwrap_or(0) as u64
}

/// `status` for a write, or `MPI_ERR_ARG`.
///
/// # Safety
/// `status` is null or valid for reads and writes.
unsafe fn status_mut<'a>(status: *mut MPI_Status) -> R<&'a mut MPI_Status> {
    // SAFETY: the caller's contract.
    unsafe { status.as_mut() }.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null status"))
}

/// Sets `status` to say `count` elements of `datatype` were received.
///
/// # Safety
/// `status` is null or valid for reads and writes.
unsafe fn set_elements(status: *mut MPI_Status, datatype: Handle, count: i64) -> c_int {
    call(NO_OBJECT, |g| {
        let t = g.lib()?.datatype(datatype)?;
        let n = u64::try_from(count)
            .map_err(|_| Fail::new(MPI_ERR_COUNT, format!("negative count {count}")))?;
        let bytes = n
            .checked_mul(element_bytes(&t))
            .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "count times element size overflows"))?;
        // SAFETY: the caller's contract.
        let st = unsafe { status_mut(status) }?;
        st.internal[0] = bytes as u32 as c_int;
        st.internal[1] = (bytes >> 32) as u32 as c_int;
        Ok(())
    })
}

crate::mpi_fn! {
    /// `MPI_Status_set_elements`: `MPI_Get_elements` on `datatype` then gives `count`.
    fn MPI_Status_set_elements / PMPI_Status_set_elements(
        status: *mut MPI_Status,
        datatype: Handle,
        count: c_int
    ) {
        // SAFETY: MPI's contract: `status` is valid for reads and writes.
        unsafe { set_elements(status, datatype, i64::from(count)) }
    }
}

crate::mpi_fn! {
    /// `MPI_Status_set_elements_x`.
    fn MPI_Status_set_elements_x / PMPI_Status_set_elements_x(
        status: *mut MPI_Status,
        datatype: Handle,
        count: i64
    ) {
        // SAFETY: MPI's contract: `status` is valid for reads and writes.
        unsafe { set_elements(status, datatype, count) }
    }
}

crate::mpi_fn! {
    /// `MPI_Status_set_cancelled`: `MPI_Test_cancelled` then gives `flag`.
    fn MPI_Status_set_cancelled / PMPI_Status_set_cancelled(status: *mut MPI_Status, flag: c_int) {
        call(NO_OBJECT, |_| {
            // SAFETY: MPI's contract: `status` is valid for reads and writes.
            unsafe { status_mut(status) }?.internal[2] = c_int::from(flag != 0);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Get_elements_x`: as `MPI_Get_elements`, as an `MPI_Count`.
    fn MPI_Get_elements_x / PMPI_Get_elements_x(
        status: *const MPI_Status,
        datatype: Handle,
        count: *mut i64
    ) {
        call(NO_OBJECT, |g| {
            let t = g.lib()?.datatype(datatype)?;
            // SAFETY: MPI's contract: `status` valid for reads, `count` for a write.
            let st = unsafe { status.as_ref() }
                .ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null status"))?;
            let bytes = (st.internal[0] as u32 as u64) | ((st.internal[1] as u32 as u64) << 32);
            let elem = element_bytes(&t);
            let n = match bytes.checked_div(elem) {
                None if bytes == 0 => 0,
                Some(n) if bytes % elem == 0 => i64::try_from(n).unwrap_or(i64::from(MPI_UNDEFINED)),
                _ => i64::from(MPI_UNDEFINED),
            };
            // SAFETY: as above.
            *unsafe { out(count) }? = n;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_match_size`: the sized type of `typeclass` (`MPI_TYPECLASS_INTEGER`,
    /// `_REAL`, `_COMPLEX`) of `size` bytes (`MPI_INTEGER1`...`16`, `MPI_REAL4`...`16`,
    /// `MPI_COMPLEX8`...`32`); `MPI_ERR_ARG` when there is none.
    fn MPI_Type_match_size / PMPI_Type_match_size(
        typeclass: c_int,
        size: c_int,
        datatype: *mut Handle
    ) {
        call(NO_OBJECT, |_| {
            let t = match (typeclass, size) {
                (TYPECLASS_INTEGER, 1) => 0x2c0,
                (TYPECLASS_INTEGER, 2) => 0x2c8,
                (TYPECLASS_INTEGER, 4) => 0x2d0,
                (TYPECLASS_INTEGER, 8) => 0x2d8,
                (TYPECLASS_INTEGER, 16) => 0x2e0,
                (TYPECLASS_REAL, 4) => 0x2d2,
                (TYPECLASS_REAL, 8) => 0x2da,
                (TYPECLASS_REAL, 16) => 0x2e2,
                (TYPECLASS_COMPLEX, 8) => 0x2db,
                (TYPECLASS_COMPLEX, 16) => 0x2e3,
                (TYPECLASS_COMPLEX, 32) => 0x2eb,
                _ => {
                    return Err(Fail::new(
                        MPI_ERR_ARG,
                        format!("no type of class {typeclass} and {size} bytes"),
                    ))
                }
            };
            // SAFETY: MPI's contract: `datatype` is valid for a write.
            *unsafe { out(datatype) }? = t;
            Ok(())
        })
    }
}
