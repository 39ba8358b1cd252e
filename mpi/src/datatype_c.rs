//! Large-count (`_c`) forms of the datatype queries and of packing (MPI 4.1, 4.1.5,
//! 5.1.11, 5.2): `MPI_Get_count_c`, `MPI_Get_elements_c`, `MPI_Type_size_c`,
//! `MPI_Type_get_extent_c`, `MPI_Type_get_true_extent_c`, `MPI_Pack_c`, `MPI_Unpack_c`,
//! `MPI_Pack_size_c`.
//!
//! The queries report whole `MPI_Count`s, never narrowed: the extent and size ones are
//! the `_x` forms (MPI 4.1 deprecates those for these), `MPI_Get_count_c` divides the
//! status's 64-bit byte count itself. Packing narrows its item count and `*position`
//! (the engine counts in `int`s: a position past the `int` range is `MPI_ERR_COUNT`)
//! and calls the `int` form; a buffer larger than the `int` range is handed on as
//! `INT_MAX` bytes, which the `int` form never reaches past, once the data is known to
//! end within them. Every error is raised where the `int` forms raise theirs (no
//! object: `MPI_COMM_WORLD`'s or `MPI_COMM_SELF`'s handler).

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::count_c::refuse;
use crate::count_c::{narrow, MpiCount};
use crate::error::Fail;
use crate::request::MPI_Status;
use crate::state::{call, NO_OBJECT};
use crate::util::out;

/// `MPI_Get_count`'s answer as an `MPI_Count`: `bytes` in items of `size` bytes,
/// `MPI_UNDEFINED` when they are not a whole number of items (a size 0 type: 0 items
/// for 0 bytes).
fn count_of(bytes: u64, size: u64) -> MpiCount {
    let undefined = MpiCount::from(MPI_UNDEFINED);
    match bytes.checked_div(size) {
        None if bytes == 0 => 0,
        Some(n) if bytes % size == 0 => MpiCount::try_from(n).unwrap_or(undefined),
        _ => undefined,
    }
}

crate::mpi_fn! {
    /// `MPI_Get_count_c`: the number of whole items received, as an `MPI_Count` (above
    /// the `int` range too); `MPI_UNDEFINED` when the bytes are not a whole number of
    /// items.
    fn MPI_Get_count_c / PMPI_Get_count_c(
        status: *const MPI_Status,
        datatype: Handle,
        count: *mut MpiCount
    ) {
        call(NO_OBJECT, |g| {
            let t = g.lib()?.datatype(datatype)?;
            // SAFETY: MPI's contract: `status` valid for reads, `count` for a write.
            let st = unsafe { status.as_ref() }
                .ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null status"))?;
            let bytes = (st.internal[0] as u32 as u64) | ((st.internal[1] as u32 as u64) << 32);
            // SAFETY: as above.
            *unsafe { out(count) }? = count_of(bytes, t.size as u64);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Get_elements_c`: `MPI_Get_elements_x`.
    fn MPI_Get_elements_c / PMPI_Get_elements_c(
        status: *const MPI_Status,
        datatype: Handle,
        count: *mut MpiCount
    ) {
        // SAFETY: this function's contract, the same.
        unsafe { crate::status_set::PMPI_Get_elements_x(status, datatype, count) }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_size_c`: `MPI_Type_size_x` (sizes past the `int` range reported).
    fn MPI_Type_size_c / PMPI_Type_size_c(datatype: Handle, size: *mut MpiCount) {
        // SAFETY: this function's contract, the same.
        unsafe { crate::datatype::PMPI_Type_size_x(datatype, size) }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_get_extent_c`: `MPI_Type_get_extent_x`.
    fn MPI_Type_get_extent_c / PMPI_Type_get_extent_c(
        datatype: Handle,
        lb: *mut MpiCount,
        extent: *mut MpiCount
    ) {
        // SAFETY: this function's contract, the same.
        unsafe { crate::typemap_ctors::PMPI_Type_get_extent_x(datatype, lb, extent) }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_get_true_extent_c`: `MPI_Type_get_true_extent_x`.
    fn MPI_Type_get_true_extent_c / PMPI_Type_get_true_extent_c(
        datatype: Handle,
        true_lb: *mut MpiCount,
        true_extent: *mut MpiCount
    ) {
        // SAFETY: this function's contract, the same.
        unsafe { crate::typemap_ctors::PMPI_Type_get_true_extent_x(datatype, true_lb, true_extent) }
    }
}

crate::mpi_fn! {
    /// `MPI_Pack_size_c`: the bytes `MPI_Pack_c` needs for `incount` items, as an
    /// `MPI_Count` (above the `int` range too, where `MPI_Pack_size` fails).
    fn MPI_Pack_size_c / PMPI_Pack_size_c(
        incount: MpiCount,
        datatype: Handle,
        _comm: Handle,
        size: *mut MpiCount
    ) {
        call(NO_OBJECT, |g| {
            let n = narrow(incount, "incount")?;
            let len = g.lib()?.buffer_of(n, datatype)?.len();
            // SAFETY: MPI's contract: `size` is valid for a write.
            *unsafe { out(size) }? = MpiCount::try_from(len)
                .map_err(|_| Fail::new(MPI_ERR_COUNT, "the packed size overflows an MPI_Count"))?;
            Ok(())
        })
    }
}

/// The buffer size to hand `MPI_Pack`/`MPI_Unpack` for a `_c` call with `size` bytes,
/// `count` items of `datatype` at `at`: `size` itself when it is an `int` (the `int`
/// form then checks everything), else `INT_MAX` once the data is known to end within
/// the `int` range. `Err` holds the code of the error already raised.
fn int_room(
    size: MpiCount,
    at: c_int,
    count: c_int,
    datatype: Handle,
    what: &str,
) -> Result<c_int, c_int> {
    if size <= MpiCount::from(c_int::MAX) {
        return narrow(size, what).map_err(|f| refuse(NO_OBJECT, f));
    }
    let code = call(NO_OBJECT, |g| {
        let len = g.lib()?.buffer_of(count, datatype)?.len();
        let start = usize::try_from(at).unwrap_or(0);
        if start
            .checked_add(len)
            .is_none_or(|end| end > c_int::MAX as usize)
        {
            return Err(Fail::new(
                MPI_ERR_COUNT,
                format!("{len} bytes at {at} end past the int range this library packs in"),
            ));
        }
        Ok(())
    });
    if code == MPI_SUCCESS {
        Ok(c_int::MAX)
    } else {
        Err(code)
    }
}

/// Reads and narrows `*position` (a null pointer stays for the `int` form to refuse).
///
/// # Safety
/// `position` is null or valid for reads.
unsafe fn start_of(position: *const MpiCount) -> Result<c_int, c_int> {
    // SAFETY: the caller's contract.
    match unsafe { position.as_ref() } {
        None => Ok(0),
        Some(&p) => narrow(p, "position").map_err(|f| refuse(NO_OBJECT, f)),
    }
}

crate::mpi_fn! {
    /// `MPI_Pack_c`: `MPI_Pack` with `MPI_Count` count, size and position.
    fn MPI_Pack_c / PMPI_Pack_c(
        inbuf: *const c_void,
        incount: MpiCount,
        datatype: Handle,
        outbuf: *mut c_void,
        outsize: MpiCount,
        position: *mut MpiCount,
        comm: Handle
    ) {
        let n = match narrow(incount, "incount") {
            Ok(n) => n,
            Err(f) => return refuse(NO_OBJECT, f),
        };
        // SAFETY: MPI's contract: `position` is valid for reads and writes.
        let mut at = match unsafe { start_of(position) } {
            Ok(at) => at,
            Err(code) => return code,
        };
        let room = match int_room(outsize, at, n, datatype, "outsize") {
            Ok(room) => room,
            Err(code) => return code,
        };
        let pos: *mut c_int = if position.is_null() { std::ptr::null_mut() } else { &mut at };
        // SAFETY: this function's contract, `MPI_Pack`'s with the values narrowed and
        // the position in a local `int`.
        let code = unsafe { crate::typemap::PMPI_Pack(inbuf, n, datatype, outbuf, room, pos, comm) };
        if code == MPI_SUCCESS {
            // SAFETY: non-null (it was read), valid for a write by MPI's contract.
            unsafe { *position = MpiCount::from(at) };
        }
        code
    }
}

crate::mpi_fn! {
    /// `MPI_Unpack_c`: `MPI_Unpack` with `MPI_Count` size, position and count.
    fn MPI_Unpack_c / PMPI_Unpack_c(
        inbuf: *const c_void,
        insize: MpiCount,
        position: *mut MpiCount,
        outbuf: *mut c_void,
        outcount: MpiCount,
        datatype: Handle,
        comm: Handle
    ) {
        let n = match narrow(outcount, "outcount") {
            Ok(n) => n,
            Err(f) => return refuse(NO_OBJECT, f),
        };
        // SAFETY: MPI's contract: `position` is valid for reads and writes.
        let mut at = match unsafe { start_of(position) } {
            Ok(at) => at,
            Err(code) => return code,
        };
        let size = match int_room(insize, at, n, datatype, "insize") {
            Ok(size) => size,
            Err(code) => return code,
        };
        let pos: *mut c_int = if position.is_null() { std::ptr::null_mut() } else { &mut at };
        // SAFETY: this function's contract, `MPI_Unpack`'s with the values narrowed and
        // the position in a local `int`.
        let code = unsafe { crate::typemap::PMPI_Unpack(inbuf, size, pos, outbuf, n, datatype, comm) };
        if code == MPI_SUCCESS {
            // SAFETY: non-null (it was read), valid for a write by MPI's contract.
            unsafe { *position = MpiCount::from(at) };
        }
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_whole_items_past_the_int_range_and_undefined_otherwise() {
        assert_eq!(count_of(12, 4), 3);
        assert_eq!(count_of(3 << 32, 1), 3 << 32);
        assert_eq!(count_of(13, 4), MpiCount::from(MPI_UNDEFINED));
        assert_eq!(count_of(0, 0), 0);
        assert_eq!(count_of(4, 0), MpiCount::from(MPI_UNDEFINED));
    }
}
