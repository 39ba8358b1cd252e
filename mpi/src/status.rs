//! What a completed operation's status says: `MPI_Get_count`, `MPI_Get_elements`,
//! `MPI_Test_cancelled`, and `MPI_Request_get_status` (a request's status without
//! freeing it); and how the completion calls write one (`write_status`,
//! `write_status_ok`). The status layout is `request::MPI_Status`.

use std::ffi::c_int;

use crate::consts::*;
use crate::datatype::{Elem, TypeEntry};
use crate::error::Fail;
use crate::request::{progress_detached, MPI_Status, Outcome};
use crate::state::call;
use crate::state::NO_OBJECT;
use crate::util::out;

crate::mpi_fn! {
    /// `MPI_Test_cancelled`.
    fn MPI_Test_cancelled / PMPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) {
        call(NO_OBJECT, |_| {
            // SAFETY: MPI's contract: `status` valid for reads, `flag` for a write.
            let st = unsafe { status.as_ref() }
                .ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null status"))?;
            // SAFETY: as above.
            *unsafe { out(flag) }? = c_int::from(st.internal[2] != 0);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Get_count`: `MPI_UNDEFINED` when the bytes are not a whole number of items.
    fn MPI_Get_count / PMPI_Get_count(
        status: *const MPI_Status,
        datatype: Handle,
        count: *mut c_int
    ) {
        call(NO_OBJECT, |g| {
            let t: TypeEntry = g.lib()?.datatype(datatype)?;
            // SAFETY: MPI's contract: `status` valid for reads, `count` for a write.
            let st = unsafe { status.as_ref() }
                .ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null status"))?;
            let bytes = (st.internal[0] as u32 as u64) | ((st.internal[1] as u32 as u64) << 32);
            let n = if t.size == 0 {
                if bytes == 0 { 0 } else { MPI_UNDEFINED }
            } else if bytes % t.size as u64 == 0 {
                c_int::try_from(bytes / t.size as u64).unwrap_or(MPI_UNDEFINED)
            } else {
                MPI_UNDEFINED
            };
            // SAFETY: as above.
            *unsafe { out(count) }? = n;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Get_elements`: the basic elements received (a type of `k` elements counts
    /// `k` per whole item, whatever their sizes; a part of an item counts its elements
    /// when they are all of one kind); `MPI_UNDEFINED` when the bytes are not a whole
    /// number of elements, or part of an item of a type mixing kinds.
    fn MPI_Get_elements / PMPI_Get_elements(
        status: *const MPI_Status,
        datatype: Handle,
        count: *mut c_int
    ) {
        call(NO_OBJECT, |g| {
            let t: TypeEntry = g.lib()?.datatype(datatype)?;
            // SAFETY: MPI's contract: `status` valid for reads, `count` for a write.
            let st = unsafe { status.as_ref() }
                .ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null status"))?;
            let bytes = (st.internal[0] as u32 as u64) | ((st.internal[1] as u32 as u64) << 32);
            let elem = t.size.checked_div(t.elems).unwrap_or(0) as u64;
            let n = if t.size > 0 && bytes % t.size as u64 == 0 {
                // Whole items: any type, its elements of whatever sizes.
                (bytes / t.size as u64)
                    .checked_mul(t.elems as u64)
                    .and_then(|n| c_int::try_from(n).ok())
                    .unwrap_or(MPI_UNDEFINED)
            } else if t.elem == Elem::Opaque {
                // A part of an item whose elements differ in kind (and maybe size).
                MPI_UNDEFINED
            } else if elem == 0 {
                if bytes == 0 { 0 } else { MPI_UNDEFINED }
            } else if bytes % elem == 0 {
                c_int::try_from(bytes / elem).unwrap_or(MPI_UNDEFINED)
            } else {
                MPI_UNDEFINED
            };
            // SAFETY: as above.
            *unsafe { out(count) }? = n;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Request_get_status`: whether the request is complete, and then its status,
    /// without freeing it (a later completion call gives the same outcome and frees it).
    fn MPI_Request_get_status / PMPI_Request_get_status(
        request: Handle,
        flag: *mut c_int,
        status: *mut MPI_Status
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `flag` is valid for a write.
            let flag = unsafe { out(flag) }?;
            if request == MPI_REQUEST_NULL {
                *flag = 1;
                // SAFETY: MPI's contract: `status` is null or valid for a write.
                unsafe { write_status(status, &Outcome::empty(), false) };
                return Ok(());
            }
            let lib = g.lib()?;
            progress_detached(lib);
            let r = lib.requests.get_mut(&request).ok_or_else(|| {
                Fail::new(MPI_ERR_REQUEST, format!("{request:#x} is not a request"))
            })?;
            match r.test() {
                Some(o) => {
                    *flag = 1;
                    // SAFETY: as above.
                    unsafe { write_status(status, &o, false) };
                }
                None => *flag = 0,
            }
            Ok(())
        })
    }
}

/// Writes `o` into `st` (when not `MPI_STATUS_IGNORE`); `MPI_ERROR` only when `error`.
///
/// # Safety
/// `st` is null or valid for a write.
pub(crate) unsafe fn write_status(st: *mut MPI_Status, o: &Outcome, error: bool) {
    // SAFETY: the caller's contract.
    let Some(st) = (unsafe { st.as_mut() }) else {
        return;
    };
    st.MPI_SOURCE = o.source;
    st.MPI_TAG = o.tag;
    if error {
        st.MPI_ERROR = o.error;
    }
    st.internal[0] = o.bytes as u32 as c_int;
    st.internal[1] = (o.bytes as u64 >> 32) as u32 as c_int;
    st.internal[2] = c_int::from(o.cancelled);
}

/// Writes the status of a successful receive (`MPI_ERROR` untouched, as
/// [`write_status`] without `error`) from its fields one at a time. The latency path
/// uses it with the runtime's `Status` fields straight from the receive's result: going
/// through an [`Outcome`] copied the fields with one 16-byte load over the runtime's
/// separate 4- and 8-byte stores, which the processor cannot forward (a stall of about
/// 5 ns per receive, seen in `perf annotate` of `MPI_Recv`).
///
/// # Safety
/// `st` is null or valid for a write.
#[inline(always)]
pub(crate) unsafe fn write_status_ok(st: *mut MPI_Status, source: u32, tag: u32, bytes: usize) {
    // SAFETY: the caller's contract.
    let Some(st) = (unsafe { st.as_mut() }) else {
        return;
    };
    st.MPI_SOURCE = source as c_int;
    st.MPI_TAG = tag as c_int;
    st.internal[0] = bytes as u32 as c_int;
    st.internal[1] = (bytes as u64 >> 32) as u32 as c_int;
    st.internal[2] = 0;
}
