//! Generalized requests (MPI 4.1 §13.2): `MPI_Grequest_start` makes a request the
//! program completes itself with `MPI_Grequest_complete`; the completion calls
//! (`MPI_Wait`, `MPI_Test`...) then complete it as any other.
//!
//! The three callbacks are the program's and may call MPI (a `query_fn` typically
//! calls `MPI_Status_set_elements`), so none runs where the library's state is held:
//! - `query_fn` runs in `MPI_Grequest_complete`, without the lock, and the status it
//!   writes (and its return code, the completion's error) is what the completion
//!   calls give; MPI has them call it, which makes no difference to a `query_fn` that
//!   reports the completed operation, as MPI intends it to;
//! - `free_fn` runs when the request goes (completed by a completion call, or freed
//!   with `MPI_Request_free` and then completed), queued on the thread that drops it
//!   and run before that call returns (`op_deferred::defer_call`);
//! - `cancel_fn` runs in `MPI_Cancel`, without the lock, told whether the request has
//!   completed.

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::error::{Fail, R};
use crate::request::{MPI_Status, Op, Outcome, Req};
use crate::state::{call, Guard, NO_OBJECT};
use crate::util::new_request_out;

/// `MPI_Grequest_query_function`.
pub(crate) type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
/// `MPI_Grequest_free_function`.
pub(crate) type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `MPI_Grequest_cancel_function`.
pub(crate) type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// A generalized request's callbacks and, once the program completed it, its outcome.
pub(crate) struct Greq {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    extra: *mut c_void,
    outcome: Option<Outcome>,
}

impl Greq {
    /// The outcome once `MPI_Grequest_complete` was called.
    pub(crate) fn test(&self) -> Option<Outcome> {
        self.outcome
    }
}

impl Drop for Greq {
    fn drop(&mut self) {
        if let Some(f) = self.free {
            let extra = self.extra as usize;
            crate::op_deferred::defer_call(Box::new(move || {
                // SAFETY: the program's `free_fn` with its `extra_state` (MPI's
                // contract for `MPI_Grequest_start`), run without the lock.
                let rc = unsafe { f(extra as *mut c_void) };
                if rc != MPI_SUCCESS {
                    log::debug!("a generalized request's free_fn returned {rc}");
                }
            }));
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Grequest_start`.
    fn MPI_Grequest_start / PMPI_Grequest_start(
        query_fn: Option<QueryFn>,
        free_fn: Option<FreeFn>,
        cancel_fn: Option<CancelFn>,
        extra_state: *mut c_void,
        request: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { new_request_out(request) }?;
            let greq = Greq {
                query: query_fn,
                free: free_fn,
                cancel: cancel_fn,
                extra: extra_state,
                outcome: None,
            };
            *slot = g.lib()?.add_request(Req::new(NO_OBJECT, Op::Grequest(Box::new(greq))))?;
            Ok(())
        })
    }
}

/// The generalized request `h`, not yet completed by the program.
fn pending(g: &mut Guard, h: Handle) -> R<&mut Greq> {
    match g.lib()?.requests.get_mut(&h).map(|r| &mut r.op) {
        Some(Op::Grequest(q)) if q.outcome.is_none() => Ok(q),
        _ => Err(Fail::new(
            MPI_ERR_REQUEST,
            format!("{h:#x} is not a generalized request the program has yet to complete"),
        )),
    }
}

crate::mpi_fn! {
    /// `MPI_Grequest_complete`: the request completes; its `query_fn` gives the status.
    fn MPI_Grequest_complete / PMPI_Grequest_complete(request: Handle) {
        call(NO_OBJECT, |g| {
            let q = pending(g, request)?;
            let (query, extra) = (q.query, q.extra as usize);
            let mut st = MPI_Status {
                MPI_SOURCE: MPI_UNDEFINED,
                MPI_TAG: MPI_UNDEFINED,
                MPI_ERROR: MPI_SUCCESS,
                internal: [0; 5],
            };
            let st_p = &raw mut st;
            let rc = match query {
                // SAFETY: the program's `query_fn` with its `extra_state` and a status
                // that lives across the call; no borrow of the state is held.
                Some(f) => g.unlocked(|| unsafe { f(extra as *mut c_void, st_p) }),
                None => MPI_SUCCESS,
            };
            let bytes = (st.internal[0] as u32 as u64) | ((st.internal[1] as u32 as u64) << 32);
            let outcome = Outcome {
                bytes: bytes as usize,
                cancelled: st.internal[2] != 0,
                ..Outcome::ok(st.MPI_SOURCE, st.MPI_TAG, 0)
            };
            let outcome = if rc == MPI_SUCCESS {
                outcome
            } else {
                Outcome { error: rc, ..outcome }
            };
            pending(g, request)?.outcome = Some(outcome);
            Ok(())
        })
    }
}

/// `MPI_Cancel` of generalized request `h`: its `cancel_fn`, told whether it has
/// completed. `false` when `h` is not a generalized request.
pub(crate) fn cancel(g: &mut Guard, h: Handle) -> R<bool> {
    let Some(Op::Grequest(q)) = g.lib()?.requests.get_mut(&h).map(|r| &r.op) else {
        return Ok(false);
    };
    let (f, extra, complete) = (q.cancel, q.extra as usize, q.outcome.is_some());
    if let Some(f) = f {
        // SAFETY: the program's `cancel_fn` with its `extra_state`; no borrow of the
        // state is held.
        let rc = g.unlocked(|| unsafe { f(extra as *mut c_void, c_int::from(complete)) });
        if rc != MPI_SUCCESS {
            return Err(Fail::new(rc, "the generalized request's cancel_fn failed"));
        }
    }
    Ok(true)
}
