//! The request-based one-sided calls (MPI 4.1 §12.3.5): `MPI_Rput`, `MPI_Rget`,
//! `MPI_Raccumulate`, `MPI_Rget_accumulate`. MPI allows them in passive-target epochs,
//! and their request completes when the origin's buffers may be used again (and, for
//! the gets, hold the result). Here each is its blocking call (`rma.rs`), which
//! returns with exactly that done: a put's data is in the target's memory, a get's in
//! the origin's buffer, an accumulate's data copied into its queue, and a passive
//! epoch's fetching accumulate answered by the target's agent. So the request is
//! complete when made. A failed call makes no request (`*request` is
//! `MPI_REQUEST_NULL`) and returns the call's error, raised once on the window's
//! handler.

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::request::{Outcome, Req};
use crate::state::{call, NO_OBJECT};
use crate::util::new_request_out;

/// After the blocking call's `code`: on success a request complete at once in
/// `*request`.
///
/// # Safety
/// `request` is null or valid for a write.
unsafe fn complete_request(code: c_int, request: *mut Handle) -> c_int {
    if code != MPI_SUCCESS {
        // SAFETY: the caller's contract.
        if let Some(r) = unsafe { request.as_mut() } {
            *r = MPI_REQUEST_NULL;
        }
        return code;
    }
    call(NO_OBJECT, |g| {
        // SAFETY: the caller's contract.
        let slot = unsafe { new_request_out(request) }?;
        *slot = g
            .lib()?
            .add_request(Req::finished(NO_OBJECT, Outcome::empty()))?;
        Ok(())
    })
}

crate::mpi_fn! {
    /// `MPI_Rput`.
    fn MPI_Rput / PMPI_Rput(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: isize,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle,
        request: *mut Handle
    ) {
        // SAFETY: the same contract as `MPI_Put`'s, and `request` valid for a write.
        unsafe {
            let code = crate::rma::PMPI_Put(
                origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                target_count, target_datatype, win,
            );
            complete_request(code, request)
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Rget`.
    fn MPI_Rget / PMPI_Rget(
        origin_addr: *mut c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: isize,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle,
        request: *mut Handle
    ) {
        // SAFETY: the same contract as `MPI_Get`'s, and `request` valid for a write.
        unsafe {
            let code = crate::rma::PMPI_Get(
                origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                target_count, target_datatype, win,
            );
            complete_request(code, request)
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Raccumulate`.
    fn MPI_Raccumulate / PMPI_Raccumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: isize,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
        request: *mut Handle
    ) {
        // SAFETY: the same contract as `MPI_Accumulate`'s, and `request` valid for a
        // write.
        unsafe {
            let code = crate::rma::PMPI_Accumulate(
                origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                target_count, target_datatype, op, win,
            );
            complete_request(code, request)
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Rget_accumulate`.
    fn MPI_Rget_accumulate / PMPI_Rget_accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        result_addr: *mut c_void,
        result_count: c_int,
        result_datatype: Handle,
        target_rank: c_int,
        target_disp: isize,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
        request: *mut Handle
    ) {
        // SAFETY: the same contract as `MPI_Get_accumulate`'s, and `request` valid for
        // a write.
        unsafe {
            let code = crate::rma::PMPI_Get_accumulate(
                origin_addr, origin_count, origin_datatype, result_addr, result_count,
                result_datatype, target_rank, target_disp, target_count, target_datatype,
                op, win,
            );
            complete_request(code, request)
        }
    }
}
