//! Requests of non-blocking operations (send, receive, agreement): test, wait, free.
//! A request completes once, with its outcome as the returned code, and is freed then
//! (`*request` becomes null), as MPI's `MPI_Test` / `MPI_Wait` do.

use std::ffi::c_int;
use std::rc::Rc;

use sf::comm::{AgreeRequest, RecvRequest, SendRequest};
use sf::{CommError, Status};

use crate::comm::sf_comm;
use crate::error::{guard, Error, Result};
use crate::handle::{self, give, out, Home};

/// What a receive got (written by receives only; a send leaves it as it was).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct sf_status {
    /// The sender's rank in the communicator.
    pub source: u32,
    /// The message's tag.
    pub tag: u32,
    /// Bytes received.
    pub len: usize,
}

impl From<Status> for sf_status {
    fn from(s: Status) -> Self {
        sf_status {
            source: s.source,
            tag: s.tag,
            len: s.len,
        }
    }
}

/// The operation a request carries. The borrowed requests hold the caller's buffer
/// with a `'static` lifetime: that is the C contract (valid until completion or free),
/// and the request's drop cancels what is still posted.
pub(crate) enum Op {
    Send(SendRequest<'static>),
    Recv(RecvRequest<'static>),
    /// The caller's value cell, written at completion.
    Agree(AgreeRequest, *mut u64),
}

/// A pending non-blocking operation (opaque).
pub struct sf_request {
    home: Home,
    op: Op,
}
handle::handle!(sf_request);

impl sf_request {
    pub(crate) fn new(home: Home, op: Op) -> Self {
        sf_request { home, op }
    }

    /// Progresses once: `None` while pending, else the outcome.
    fn test(&mut self) -> Option<Result<Option<Status>>> {
        let done = match &mut self.op {
            Op::Send(r) => match r.test() {
                Ok(false) => return None,
                Ok(true) => Ok(None),
                Err(e) => Err(e),
            },
            Op::Recv(r) => match r.test() {
                Ok(None) => return None,
                Ok(Some(st)) => Ok(Some(st)),
                Err(e) => Err(e),
            },
            Op::Agree(r, value) => match r.test() {
                Ok(None) => return None,
                // SAFETY: `value` is valid until completion (the `sf_comm_iagree`
                // contract), which is now.
                Ok(Some(a)) => return Some(unsafe { agreed(a, *value) }),
                Err(e) => Err(e),
            },
        };
        Some(done.map_err(Error::from))
    }
}

/// Writes an agreement's value to the caller and turns unacknowledged failures into
/// `SF_ERR_PROC_FAILED`, as `sf_comm_agree` does.
///
/// # Safety
/// `value` is valid for a write.
unsafe fn agreed(a: sf::Agreement, value: *mut u64) -> Result<Option<Status>> {
    // SAFETY: the caller's contract.
    unsafe { *value = a.value };
    if a.all_acked {
        Ok(None)
    } else {
        Err(Error::from(CommError::ProcFailed { ranks: a.failed }))
    }
}

/// Completes the request at `*request` with `outcome`: writes the status, frees it.
///
/// # Safety
/// As `sf_test`.
unsafe fn complete(
    request: *mut *mut sf_request,
    outcome: Result<Option<Status>>,
    status: *mut sf_status,
) -> Result<()> {
    // SAFETY: the caller's contract; the handle was checked by the caller.
    drop(unsafe { handle::take(request) }?);
    let st = outcome?;
    // SAFETY: the caller's contract.
    if let (Some(st), Some(s)) = (st, unsafe { status.as_mut() }) {
        *s = sf_status::from(st);
    }
    Ok(())
}

/// Progresses the request once. If it completed, `*flag` is 1, the returned code is
/// the operation's outcome (an error completes it too), `status` (may be null) is
/// written for a receive, and the request is freed (`*request` becomes null).
/// Otherwise `*flag` is 0 and the code `SF_OK`. Test every pending request of a group
/// of operations rather than waiting on one alone: a receive progresses when tested.
///
/// # Safety
/// `request` is valid for reads and writes and `*request` is a live request handle;
/// `flag` is null or valid for a write; `status` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_test(
    request: *mut *mut sf_request,
    flag: *mut c_int,
    status: *mut sf_status,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let flag = unsafe { out(flag, "flag") }?;
        *flag = 0;
        // SAFETY: the caller's contract; `with_mut` checks null, thread and world.
        let ptr = unsafe { *out(request, "request")? };
        // SAFETY: as above.
        let Some(outcome) = (unsafe { handle::with_mut(ptr, |r| Ok(r.test())) })? else {
            return Ok(());
        };
        *flag = 1;
        // SAFETY: the caller's contract.
        unsafe { complete(request, outcome, status) }
    })
}

/// Waits until the request completes; returns its outcome, writes `status` (may be
/// null) for a receive, and frees the request (`*request` becomes null).
///
/// # Safety
/// `request` is valid for reads and writes and `*request` is a live request handle;
/// `status` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_wait(request: *mut *mut sf_request, status: *mut sf_status) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let ptr = unsafe { *out(request, "request")? };
        // SAFETY: the caller's contract; `with` checks null, thread and world.
        let state = unsafe { handle::with(ptr, |r| Ok(Rc::clone(&r.home.state))) }?;
        // SAFETY: the caller's contract; checked just above.
        let Some(req) = (unsafe { handle::take(request) })? else {
            return Err(Error::null("sf_request"));
        };
        let outcome = match req.op {
            Op::Send(r) => r.wait().map(|()| None).map_err(Error::from),
            Op::Recv(r) => r.wait().map(Some).map_err(Error::from),
            Op::Agree(r, value) => match r.wait() {
                // SAFETY: `value` is valid until completion (the `sf_comm_iagree`
                // contract), which is now.
                Ok(a) => unsafe { agreed(a, value) },
                Err(e) => Err(Error::from(e)),
            },
        };
        state.report_failures();
        let st = outcome?;
        // SAFETY: the caller's contract.
        if let (Some(st), Some(s)) = (st, unsafe { status.as_mut() }) {
            *s = sf_status::from(st);
        }
        Ok(())
    })
}

/// Frees a request (`*request` becomes null; null is nothing to free): a pending
/// receive, or a send posted to the fabric, is cancelled first (waiting until the
/// transport lets go of the buffer); a pending agreement is abandoned here (the other
/// ranks still decide). A large send over shared memory cannot be withdrawn: the
/// receiver may still copy from the buffer after this returns (it then gets whatever
/// the memory holds, and this process is not harmed), so keep the buffer's contents
/// until the message is known received if the receiver needs them.
///
/// # Safety
/// `request` is null or valid for reads and writes; `*request` is null or a live
/// request handle.
#[no_mangle]
pub unsafe extern "C" fn sf_request_free(request: *mut *mut sf_request) -> c_int {
    // SAFETY: the caller's contract.
    guard(|| unsafe { handle::take(request) }.map(drop))
}

/// Starts an agreement (`MPIX_Comm_iagree`): `*value` is this rank's contribution and
/// receives the agreed value when the request completes; it must stay valid until then
/// (or until the request is freed). Completion returns `SF_ERR_PROC_FAILED` when some
/// agreed failure was not acknowledged by every contributor, as `sf_comm_agree`;
/// `sf_comm_get_failed` lists the failed ranks.
///
/// # Safety
/// `comm` is null or a live communicator handle; `value` is null or valid for reads
/// and writes until the request completes or is freed; `request` is null or valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_iagree(
    comm: *const sf_comm,
    value: *mut u64,
    request: *mut *mut sf_request,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe {
            handle::with(comm, |c| {
                let slot = out(request, "request")?;
                let flag = *out(value, "value")?;
                let req = c.comm().iagree(flag);
                give(
                    slot,
                    sf_request::new(c.home().sibling(), Op::Agree(req, value)),
                );
                Ok(())
            })
        }
    })
}
