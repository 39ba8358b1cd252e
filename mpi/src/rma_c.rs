//! Large-count (`_c`) forms of one-sided communication (MPI 4.1, chapter 12): the
//! window creators, whose `disp_unit` is an `MPI_Aint`; `MPI_Win_shared_query_c`,
//! which reports it as one; and the communication calls, whose counts are `MPI_Count`s
//! (`target_disp` is an `MPI_Aint` in both forms, passed through). Each narrows its
//! inputs (`count_c`) and calls the `int` form's `PMPI_` symbol; a value beyond the
//! `int` range is refused with `MPI_ERR_COUNT` before anything moves, raised on the
//! window (the creators: on the communicator, as their `int` forms raise). Outputs are
//! widened, never narrowed. No `int` form here keeps a pointer to an argument after it
//! returns except the window's own memory (`base`), which is the program's by MPI's
//! rules either way.

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::count_c::{counts, refuse, set_null};
use crate::count_c::{narrow_aint, MpiAint, MpiCount};
use crate::error::Fail;
use crate::win::{win_call, MPI_WIN_NULL};

/// Raises `fail` on window `win`'s error handler and returns the code.
#[cold]
fn refuse_win(win: Handle, fail: Fail) -> c_int {
    win_call(win, |_| Err(fail))
}

/// [`refuse_win`] for a request-based call: `*request` is first set to
/// `MPI_REQUEST_NULL`, as a failed `int` form leaves it.
///
/// # Safety
/// `request` is null or valid for a write.
#[cold]
unsafe fn refuse_win_request(win: Handle, request: *mut Handle, fail: Fail) -> c_int {
    // SAFETY: the caller's contract, the same.
    unsafe { set_null(request, MPI_REQUEST_NULL) };
    refuse_win(win, fail)
}

/// A window creator's refusal on `comm`: `*win` is first set to `MPI_WIN_NULL`, as the
/// `int` forms do before they fail.
///
/// # Safety
/// `win` is null or valid for a write.
#[cold]
unsafe fn refuse_creation(comm: Handle, win: *mut Handle, fail: Fail) -> c_int {
    // SAFETY: the caller's contract, the same.
    unsafe { set_null(win, MPI_WIN_NULL) };
    refuse(comm, fail)
}

/// A put- or get-shaped `_c` call over its `int` form; `$origin` is the origin
/// buffer's type.
macro_rules! put_get_c {
    ($(#[$doc:meta])* $name:ident / $pname:ident => $int:path, $origin:ty) => {
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                origin_addr: $origin,
                origin_count: MpiCount,
                origin_datatype: Handle,
                target_rank: c_int,
                target_disp: MpiAint,
                target_count: MpiCount,
                target_datatype: Handle,
                win: Handle
            ) {
                match counts([(origin_count, "origin_count"), (target_count, "target_count")]) {
                    // SAFETY: this function's contract, the `int` form's with the counts
                    // narrowed.
                    Ok([oc, tc]) => unsafe {
                        $int(origin_addr, oc, origin_datatype, target_rank, target_disp, tc,
                            target_datatype, win)
                    },
                    Err(f) => refuse_win(win, f),
                }
            }
        }
    };
}

/// A request-based put- or get-shaped `_c` call over its `int` form.
macro_rules! rput_rget_c {
    ($(#[$doc:meta])* $name:ident / $pname:ident => $int:path, $origin:ty) => {
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                origin_addr: $origin,
                origin_count: MpiCount,
                origin_datatype: Handle,
                target_rank: c_int,
                target_disp: MpiAint,
                target_count: MpiCount,
                target_datatype: Handle,
                win: Handle,
                request: *mut Handle
            ) {
                match counts([(origin_count, "origin_count"), (target_count, "target_count")]) {
                    // SAFETY: this function's contract, the `int` form's with the counts
                    // narrowed.
                    Ok([oc, tc]) => unsafe {
                        $int(origin_addr, oc, origin_datatype, target_rank, target_disp, tc,
                            target_datatype, win, request)
                    },
                    Err(f) => {
                        // SAFETY: MPI's contract: `request` is null or valid for a write.
                        unsafe { refuse_win_request(win, request, f) }
                    }
                }
            }
        }
    };
}

put_get_c!(
    /// `MPI_Put_c`: `MPI_Put` with `MPI_Count` counts.
    MPI_Put_c / PMPI_Put_c => crate::rma::PMPI_Put, *const c_void
);
put_get_c!(
    /// `MPI_Get_c`: `MPI_Get` with `MPI_Count` counts.
    MPI_Get_c / PMPI_Get_c => crate::rma::PMPI_Get, *mut c_void
);
rput_rget_c!(
    /// `MPI_Rput_c`: `MPI_Rput` with `MPI_Count` counts.
    MPI_Rput_c / PMPI_Rput_c => crate::rma_req::PMPI_Rput, *const c_void
);
rput_rget_c!(
    /// `MPI_Rget_c`: `MPI_Rget` with `MPI_Count` counts.
    MPI_Rget_c / PMPI_Rget_c => crate::rma_req::PMPI_Rget, *mut c_void
);

crate::mpi_fn! {
    /// `MPI_Accumulate_c`: `MPI_Accumulate` with `MPI_Count` counts.
    fn MPI_Accumulate_c / PMPI_Accumulate_c(
        origin_addr: *const c_void,
        origin_count: MpiCount,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: MpiAint,
        target_count: MpiCount,
        target_datatype: Handle,
        op: Handle,
        win: Handle
    ) {
        match counts([(origin_count, "origin_count"), (target_count, "target_count")]) {
            // SAFETY: this function's contract, `MPI_Accumulate`'s with the counts
            // narrowed.
            Ok([oc, tc]) => unsafe {
                crate::rma::PMPI_Accumulate(
                    origin_addr, oc, origin_datatype, target_rank, target_disp, tc,
                    target_datatype, op, win,
                )
            },
            Err(f) => refuse_win(win, f),
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Raccumulate_c`: `MPI_Raccumulate` with `MPI_Count` counts.
    fn MPI_Raccumulate_c / PMPI_Raccumulate_c(
        origin_addr: *const c_void,
        origin_count: MpiCount,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: MpiAint,
        target_count: MpiCount,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
        request: *mut Handle
    ) {
        match counts([(origin_count, "origin_count"), (target_count, "target_count")]) {
            // SAFETY: this function's contract, `MPI_Raccumulate`'s with the counts
            // narrowed.
            Ok([oc, tc]) => unsafe {
                crate::rma_req::PMPI_Raccumulate(
                    origin_addr, oc, origin_datatype, target_rank, target_disp, tc,
                    target_datatype, op, win, request,
                )
            },
            Err(f) => {
                // SAFETY: MPI's contract: `request` is null or valid for a write.
                unsafe { refuse_win_request(win, request, f) }
            }
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Get_accumulate_c`: `MPI_Get_accumulate` with `MPI_Count` counts.
    fn MPI_Get_accumulate_c / PMPI_Get_accumulate_c(
        origin_addr: *const c_void,
        origin_count: MpiCount,
        origin_datatype: Handle,
        result_addr: *mut c_void,
        result_count: MpiCount,
        result_datatype: Handle,
        target_rank: c_int,
        target_disp: MpiAint,
        target_count: MpiCount,
        target_datatype: Handle,
        op: Handle,
        win: Handle
    ) {
        let narrowed = counts([
            (origin_count, "origin_count"),
            (result_count, "result_count"),
            (target_count, "target_count"),
        ]);
        match narrowed {
            // SAFETY: this function's contract, `MPI_Get_accumulate`'s with the counts
            // narrowed.
            Ok([oc, rc, tc]) => unsafe {
                crate::rma::PMPI_Get_accumulate(
                    origin_addr, oc, origin_datatype, result_addr, rc, result_datatype,
                    target_rank, target_disp, tc, target_datatype, op, win,
                )
            },
            Err(f) => refuse_win(win, f),
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Rget_accumulate_c`: `MPI_Rget_accumulate` with `MPI_Count` counts.
    fn MPI_Rget_accumulate_c / PMPI_Rget_accumulate_c(
        origin_addr: *const c_void,
        origin_count: MpiCount,
        origin_datatype: Handle,
        result_addr: *mut c_void,
        result_count: MpiCount,
        result_datatype: Handle,
        target_rank: c_int,
        target_disp: MpiAint,
        target_count: MpiCount,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
        request: *mut Handle
    ) {
        let narrowed = counts([
            (origin_count, "origin_count"),
            (result_count, "result_count"),
            (target_count, "target_count"),
        ]);
        match narrowed {
            // SAFETY: this function's contract, `MPI_Rget_accumulate`'s with the counts
            // narrowed.
            Ok([oc, rc, tc]) => unsafe {
                crate::rma_req::PMPI_Rget_accumulate(
                    origin_addr, oc, origin_datatype, result_addr, rc, result_datatype,
                    target_rank, target_disp, tc, target_datatype, op, win, request,
                )
            },
            Err(f) => {
                // SAFETY: MPI's contract: `request` is null or valid for a write.
                unsafe { refuse_win_request(win, request, f) }
            }
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Win_create_c`: `MPI_Win_create` with an `MPI_Aint` displacement unit.
    fn MPI_Win_create_c / PMPI_Win_create_c(
        base: *mut c_void,
        size: MpiAint,
        disp_unit: MpiAint,
        info: Handle,
        comm: Handle,
        win: *mut Handle
    ) {
        match narrow_aint(disp_unit, "disp_unit") {
            // SAFETY: this function's contract, `MPI_Win_create`'s with the unit
            // narrowed.
            Ok(unit) => unsafe { crate::win::PMPI_Win_create(base, size, unit, info, comm, win) },
            Err(f) => {
                // SAFETY: MPI's contract: `win` is null or valid for a write.
                unsafe { refuse_creation(comm, win, f) }
            }
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Win_allocate_c`: `MPI_Win_allocate` with an `MPI_Aint` displacement unit.
    fn MPI_Win_allocate_c / PMPI_Win_allocate_c(
        size: MpiAint,
        disp_unit: MpiAint,
        info: Handle,
        comm: Handle,
        baseptr: *mut c_void,
        win: *mut Handle
    ) {
        match narrow_aint(disp_unit, "disp_unit") {
            // SAFETY: this function's contract, `MPI_Win_allocate`'s with the unit
            // narrowed.
            Ok(unit) => unsafe {
                crate::win::PMPI_Win_allocate(size, unit, info, comm, baseptr, win)
            },
            Err(f) => {
                // SAFETY: MPI's contract: `win` is null or valid for a write.
                unsafe { refuse_creation(comm, win, f) }
            }
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Win_allocate_shared_c`: `MPI_Win_allocate_shared` with an `MPI_Aint`
    /// displacement unit.
    fn MPI_Win_allocate_shared_c / PMPI_Win_allocate_shared_c(
        size: MpiAint,
        disp_unit: MpiAint,
        info: Handle,
        comm: Handle,
        baseptr: *mut c_void,
        win: *mut Handle
    ) {
        match narrow_aint(disp_unit, "disp_unit") {
            // SAFETY: this function's contract, `MPI_Win_allocate_shared`'s with the
            // unit narrowed.
            Ok(unit) => unsafe {
                crate::shared_win::PMPI_Win_allocate_shared(size, unit, info, comm, baseptr, win)
            },
            Err(f) => {
                // SAFETY: MPI's contract: `win` is null or valid for a write.
                unsafe { refuse_creation(comm, win, f) }
            }
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Win_shared_query_c`: `MPI_Win_shared_query` with the displacement unit
    /// reported as an `MPI_Aint` (written only when the query succeeds).
    fn MPI_Win_shared_query_c / PMPI_Win_shared_query_c(
        win: Handle,
        rank: c_int,
        size: *mut MpiAint,
        disp_unit: *mut MpiAint,
        baseptr: *mut c_void
    ) {
        let mut unit: c_int = 0;
        // A null output stays null, so that the `int` form refuses it as it would.
        let unit_out: *mut c_int = if disp_unit.is_null() { std::ptr::null_mut() } else { &mut unit };
        // SAFETY: this function's contract, `MPI_Win_shared_query`'s with the unit
        // written to a local `int` first.
        let code = unsafe {
            crate::shared_win::PMPI_Win_shared_query(win, rank, size, unit_out, baseptr)
        };
        if code == MPI_SUCCESS {
            // SAFETY: non-null (checked above), and valid for a write by MPI's contract.
            // An `int` always fits an `MPI_Aint` (`intptr_t`, at least 32 bits).
            unsafe { *disp_unit = unit as MpiAint };
        }
        code
    }
}
