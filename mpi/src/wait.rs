//! `MPI_Wait` and `MPI_Test`, with fast entries: the state's owner (`MPI_THREAD_SINGLE`
//! or `MPI_THREAD_FUNNELED`, between `MPI_Init` and `MPI_Finalize`) waits on or tests
//! its request without a [`Guard`], under the same panic guard and with the same steps
//! as the general path ([`wait_general`], [`test_general`]): progress the detached
//! requests, one attempt (and for a wait, a pause, again); a failure goes to the same
//! error handler. Any other thread, and every call at the higher thread levels, takes
//! the general path.

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::consts::*;
use crate::error::Fail;
use crate::op_deferred;
use crate::request::{attempt, outcome_result, progress_detached, write_status, MPI_Status};
use crate::state::NO_OBJECT;
use crate::state::{boxed, call, failed, Guard};
use crate::util::out;

crate::mpi_fn! {
    /// `MPI_Wait`.
    fn MPI_Wait / PMPI_Wait(request: *mut Handle, status: *mut MPI_Status) {
        // SAFETY: this function's contract, the same.
        unsafe { wait(request, status) }
    }
}

/// `MPI_Wait`'s general path.
#[inline(never)]
fn wait_general(request: *mut Handle, status: *mut MPI_Status) -> c_int {
    call(NO_OBJECT, |g| {
        // SAFETY: MPI's contract: `request` is valid for reads and writes.
        let slot = unsafe { out(request) }?;
        let mut spin = crate::util::spin_wait();
        loop {
            let lib = g.lib()?;
            progress_detached(lib);
            if let Some((o, comm)) = attempt(lib, slot)? {
                // SAFETY: MPI's contract: `status` is null or valid for a write.
                unsafe { write_status(status, &o, false) };
                return outcome_result(&o, comm);
            }
            g.relax(&mut spin);
        }
    })
}

/// `MPI_Wait`'s body: the fast path when it applies, else the general one.
///
/// # Safety
/// MPI's contract for `MPI_Wait`: `request` is null or valid for reads and writes;
/// `status` is null (`MPI_STATUS_IGNORE`) or valid for a write.
#[inline(always)]
pub(crate) unsafe fn wait(request: *mut Handle, status: *mut MPI_Status) -> c_int {
    // SAFETY: MPI's contract: `request` is null or valid for reads and writes.
    if let Some(slot) = unsafe { request.as_mut() } {
        if Guard::owned().is_some() {
            let waited = catch_unwind(AssertUnwindSafe(|| {
                let mut spin = crate::util::spin_wait();
                loop {
                    // A fresh borrow each round: a user function run between two
                    // rounds may call MPI, which makes its own.
                    // SAFETY: the borrow ends within this round, before any `Guard` is
                    // made and before the queued functions run.
                    let Some(lib) = (unsafe { Guard::owned_lib() }) else {
                        return Some(boxed(Fail::new(MPI_ERR_OTHER, "MPI was finalized")));
                    };
                    progress_detached(lib);
                    match attempt(lib, slot) {
                        Ok(Some((o, comm))) => {
                            // SAFETY: MPI's contract: `status` is null or valid for a
                            // write.
                            unsafe { write_status(status, &o, false) };
                            return outcome_result(&o, comm).err().map(boxed);
                        }
                        // The owner's pause between two attempts (`Guard::relax`).
                        Ok(None) => {
                            if op_deferred::any_queued() {
                                op_deferred::run_queued();
                            }
                            spin.pause()
                        }
                        Err(fail) => return Some(boxed(fail)),
                    }
                }
            }));
            // The borrow has ended: what the wait queued may run (and call MPI).
            if op_deferred::any_queued() {
                op_deferred::run_queued();
            }
            return match waited {
                Ok(None) => MPI_SUCCESS,
                Ok(Some(fail)) => wait_failed(*fail),
                Err(_) => wait_failed(panicked()),
            };
        }
    }
    wait_general(request, status)
}

/// A failed wait or test, handed to the handler of the request's communicator (which `fail`
/// names) or the world's, as the general path does.
#[cold]
#[inline(never)]
fn wait_failed(fail: Fail) -> c_int {
    match Guard::owned() {
        Some(g) => failed(g, NO_OBJECT, fail),
        // Only the owner takes the fast path, and it stays the owner for the call.
        None => call(NO_OBJECT, |_| Err(fail)),
    }
}

crate::mpi_fn! {
    /// `MPI_Test`.
    fn MPI_Test / PMPI_Test(request: *mut Handle, flag: *mut c_int, status: *mut MPI_Status) {
        // SAFETY: this function's contract, the same.
        unsafe { test(request, flag, status) }
    }
}

/// `MPI_Test`'s general path.
#[inline(never)]
fn test_general(request: *mut Handle, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    call(NO_OBJECT, |g| {
        // SAFETY: MPI's contract: `request` and `flag` are valid for writes.
        let (slot, flag) = unsafe { (out(request)?, out(flag)?) };
        let lib = g.lib()?;
        progress_detached(lib);
        match attempt(lib, slot)? {
            Some((o, comm)) => {
                *flag = 1;
                // SAFETY: MPI's contract: `status` is null or valid for a write.
                unsafe { write_status(status, &o, false) };
                outcome_result(&o, comm)
            }
            None => {
                *flag = 0;
                Ok(())
            }
        }
    })
}

/// `MPI_Test`'s body: the fast path when it applies, else the general one.
///
/// # Safety
/// MPI's contract for `MPI_Test`: `request` is null or valid for reads and writes,
/// `flag` null or valid for a write; `status` is null (`MPI_STATUS_IGNORE`) or valid
/// for a write.
#[inline(always)]
unsafe fn test(request: *mut Handle, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: MPI's contract: `request` and `flag` are null or valid for writes.
    if let (Some(slot), Some(flag)) = unsafe { (request.as_mut(), flag.as_mut()) } {
        // SAFETY: the borrow ends within this call, before any `Guard` is made.
        if let Some(lib) = unsafe { Guard::owned_lib() } {
            let tested = catch_unwind(AssertUnwindSafe(|| {
                progress_detached(lib);
                match attempt(lib, slot) {
                    Ok(Some((o, comm))) => {
                        *flag = 1;
                        // SAFETY: MPI's contract: `status` is null or valid for a write.
                        unsafe { write_status(status, &o, false) };
                        outcome_result(&o, comm).err().map(boxed)
                    }
                    Ok(None) => {
                        *flag = 0;
                        None
                    }
                    Err(fail) => Some(boxed(fail)),
                }
            }));
            // The borrow has ended: what the test queued may run (and call MPI).
            if op_deferred::any_queued() {
                op_deferred::run_queued();
            }
            return match tested {
                Ok(None) => MPI_SUCCESS,
                Ok(Some(fail)) => wait_failed(*fail),
                Err(_) => wait_failed(panicked()),
            };
        }
    }
    test_general(request, flag, status)
}

/// The error of a panic, caught (as `state::run` makes it).
fn panicked() -> Fail {
    Fail::new(
        MPI_ERR_INTERN,
        "a bug in libsteadfast-mpi (a panic, caught)",
    )
}
