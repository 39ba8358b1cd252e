//! The fast entries of `MPI_Send`, `MPI_Recv`, `MPI_Isend` and `MPI_Irecv`: the common
//! case (the state's owner, `MPI_COMM_WORLD`, a basic datatype, a real peer) goes
//! straight to the runtime's call with only the checks that case needs; every other
//! call takes the general path (`p2p::send`, `recv`, `isend`, `irecv`), which checks
//! everything and reports.
//!
//! The fast path keeps every semantic of the general one: it is taken only by the
//! thread that owns the state (`Guard::owned_lib`: `MPI_THREAD_SINGLE` or
//! `MPI_THREAD_FUNNELED`, between `MPI_Init` and `MPI_Finalize`; under
//! `MPI_THREAD_SERIALIZED` and `MPI_THREAD_MULTIPLE` no thread owns it, so each call
//! takes the mutex as before); it runs under the same panic guard, and a runtime error
//! (ULFM's failures, revocation, truncation) goes through the same conversion and
//! error handler (`state::failed`), with the status or the request handle written as
//! the general path writes them. An argument the fast path does not take
//! (`MPI_PROC_NULL`, a derived datatype, a rank, tag or count out of range, a null
//! buffer or request pointer, a communicator that is not live) sends the call, before
//! anything happened, to the general path, which gives the error or the special
//! case's result.

use std::any::Any;
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use sf::Comm;

use crate::comm_table::CommTable;
use crate::consts::*;
use crate::datatype::basic_bytes;
use crate::error::Fail;
use crate::p2p::{irecv_req, posted, recv_error, Mode, Posted};
use crate::reqtable::Requests;
use crate::request::{write_status_ok, MPI_Status, Op, Req};
use crate::state::{boxed, call, failed, too_many_requests, CommEntry, CommKind, Guard};

/// What the runtime call of a fast path gave: its result, or the panic it raised.
type Caught<T> = Result<Result<T, sf::CommError>, Box<dyn Any + Send>>;

/// `MPI_Send`'s body: the fast path when it applies, else the general one.
///
/// # Safety
/// MPI's contract for `MPI_Send`: `buf` holds `count` items of `dt`, unchanged during
/// the call.
#[inline(always)]
pub(crate) unsafe fn send(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    if comm == MPI_COMM_WORLD {
        // SAFETY: the borrow ends within this call, before any `Guard` is made.
        if let Some(lib) = unsafe { Guard::owned_lib() } {
            if let Some((p2p, size)) = world(&lib.comms) {
                if let (Some(len), Some(tag), Some(dest)) =
                    (basic_bytes(count, dt), tag_ok(tag), rank_ok(dest, size))
                {
                    if len == 0 || !buf.is_null() {
                        let data: &[u8] = if len == 0 {
                            &[]
                        } else {
                            // SAFETY: MPI's contract: `buf` holds `count` items of `dt`
                            // (`len` bytes, not null), unchanged during the call.
                            unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) }
                        };
                        return match catch_unwind(AssertUnwindSafe(|| p2p.send(dest, tag, data))) {
                            Ok(Ok(())) => MPI_SUCCESS,
                            other => send_failed(other),
                        };
                    }
                }
            }
        }
    }
    send_general(buf, count, dt, dest, tag, comm)
}

/// The general path of `MPI_Send`: every check, every case (out of line: the fast
/// path's code stays small).
#[inline(never)]
fn send_general(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    call(comm, |g| {
        crate::p2p::send(g, buf, count, dt, dest, tag, comm, Mode::Standard)
    })
}

/// The failure of the fast path's send (or its panic), handed to the world's error
/// handler as the general path does.
#[cold]
#[inline(never)]
fn send_failed(r: Caught<()>) -> c_int {
    let fail = match r {
        Ok(Ok(())) => return MPI_SUCCESS,
        Ok(Err(e)) => Fail::from(e),
        Err(_) => panicked(),
    };
    fail_on_world(fail)
}

/// `MPI_Recv`'s body: the fast path when it applies, else the general one.
///
/// # Safety
/// MPI's contract for `MPI_Recv`: `buf` holds `count` items of `dt`, untouched by the
/// program during the call; `status` is null (`MPI_STATUS_IGNORE`) or valid for a
/// write.
#[inline(always)]
pub(crate) unsafe fn recv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MPI_Status,
) -> c_int {
    if comm == MPI_COMM_WORLD {
        // SAFETY: the borrow ends within this call, before any `Guard` is made.
        if let Some(lib) = unsafe { Guard::owned_lib() } {
            if let Some((p2p, size)) = world(&lib.comms) {
                if let (Some(len), Some((source, tag))) =
                    (basic_bytes(count, dt), recv_pattern(source, tag, size))
                {
                    if len == 0 || !buf.is_null() {
                        let data: &mut [u8] = if len == 0 {
                            &mut []
                        } else {
                            // SAFETY: MPI's contract: `buf` holds `count` items of `dt`
                            // (`len` bytes, not null), the program's alone during the
                            // call.
                            unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) }
                        };
                        return match catch_unwind(AssertUnwindSafe(|| p2p.recv(source, tag, data)))
                        {
                            Ok(Ok(st)) => {
                                // SAFETY: MPI's contract: `status` is null or valid for a
                                // write.
                                unsafe { write_status_ok(status, st.source, st.tag, st.len) };
                                MPI_SUCCESS
                            }
                            // SAFETY: as above.
                            other => unsafe {
                                recv_failed(other, len, posted(source, tag, 0), status)
                            },
                        };
                    }
                }
            }
        }
    }
    recv_general(buf, count, dt, source, tag, comm, status)
}

/// The general path of `MPI_Recv` (out of line, as `send_general`).
#[inline(never)]
fn recv_general(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MPI_Status,
) -> c_int {
    call(comm, |g| {
        crate::p2p::recv(g, buf, count, dt, source, tag, comm, status)
    })
}

/// The failure of the fast path's receive into `len` bytes (or its panic): the status
/// written and the error handed to the world's handler, as the general path does.
///
/// # Safety
/// `status` is null or valid for a write.
#[cold]
#[inline(never)]
unsafe fn recv_failed(
    r: Caught<sf::comm::Status>,
    len: usize,
    posted: Posted,
    status: *mut MPI_Status,
) -> c_int {
    let fail = match r {
        Ok(Ok(st)) => {
            // SAFETY: the caller's contract.
            unsafe { write_status_ok(status, st.source, st.tag, st.len) };
            return MPI_SUCCESS;
        }
        // SAFETY: the caller's contract.
        Ok(Err(e)) => unsafe { recv_error(e, len, posted, status) },
        Err(_) => panicked(),
    };
    fail_on_world(fail)
}

/// `MPI_Isend`'s body: the fast path when it applies, else the general one.
///
/// # Safety
/// MPI's contract for `MPI_Isend`: `buf` holds `count` items of `dt`, unchanged until
/// the request completes or is freed; `request` is valid for a write.
#[inline(always)]
pub(crate) unsafe fn isend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    if comm == MPI_COMM_WORLD && !request.is_null() {
        // SAFETY: the borrow ends within this call, before any `Guard` is made.
        if let Some(lib) = unsafe { Guard::owned_lib() } {
            if let Some((p2p, size)) = world(&lib.comms) {
                if let (Some(len), Some(tag), Some(dest)) =
                    (basic_bytes(count, dt), tag_ok(tag), rank_ok(dest, size))
                {
                    if len == 0 || !buf.is_null() {
                        let data: &'static [u8] = if len == 0 {
                            &[]
                        } else {
                            // SAFETY: MPI's contract: `buf` holds `count` items of `dt`
                            // (`len` bytes, not null), unchanged until the request
                            // completes or is freed, which the `Req` holding it follows.
                            unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) }
                        };
                        let make = || {
                            // SAFETY: as above: the request lives in a `Req`, completed
                            // or dropped within MPI's rules for the buffer.
                            let r = unsafe { p2p.isend(dest, tag, data) }
                                .map(|r| Req::new(comm, Op::Send(r)))
                                .map_err(runtime_fail);
                            crate::p2p::deferred(comm, r)
                        };
                        // SAFETY: checked not null; MPI's contract: valid for a write.
                        return unsafe { start_request(&mut lib.requests, request, make) };
                    }
                }
            }
        }
    }
    isend_general(buf, count, dt, dest, tag, comm, request)
}

/// The general path of `MPI_Isend` (out of line, as `send_general`).
#[inline(never)]
fn isend_general(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    call(comm, |g| {
        crate::p2p::isend(g, buf, count, dt, dest, tag, comm, request, Mode::Standard)
    })
}

/// `MPI_Irecv`'s body: the fast path when it applies, else the general one.
///
/// # Safety
/// MPI's contract for `MPI_Irecv`: `buf` holds `count` items of `dt`, untouched by the
/// program until the request completes or is freed; `request` is valid for a write.
#[inline(always)]
pub(crate) unsafe fn irecv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    if comm == MPI_COMM_WORLD && !request.is_null() {
        // SAFETY: the borrow ends within this call, before any `Guard` is made.
        if let Some(lib) = unsafe { Guard::owned_lib() } {
            if let Some((p2p, size)) = world(&lib.comms) {
                if let (Some(len), Some((source, tag))) =
                    (basic_bytes(count, dt), recv_pattern(source, tag, size))
                {
                    if len == 0 || !buf.is_null() {
                        let make = || irecv_req(p2p, comm, source, tag, buf.cast(), len);
                        // SAFETY: checked not null; MPI's contract: valid for a write.
                        return unsafe { start_request(&mut lib.requests, request, make) };
                    }
                }
            }
        }
    }
    irecv_general(buf, count, dt, source, tag, comm, request)
}

/// The general path of `MPI_Irecv` (out of line, as `send_general`).
#[inline(never)]
fn irecv_general(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    call(comm, |g| {
        crate::p2p::irecv(g, buf, count, dt, source, tag, comm, request)
    })
}

/// Makes a request with `make` under the panic guard and stores it in `*request`; a
/// failure (or panic) goes to the world's handler with `MPI_REQUEST_NULL` written, as
/// the general path does.
///
/// # Safety
/// `request` is not null and valid for a write.
#[inline(always)]
unsafe fn start_request(
    requests: &mut Requests,
    request: *mut Handle,
    make: impl FnOnce() -> Result<Req, Fail>,
) -> c_int {
    let started = catch_unwind(AssertUnwindSafe(|| match make() {
        // SAFETY: the caller's contract.
        Ok(req) => unsafe { keep(requests, req, request) },
        Err(fail) => Some(boxed(fail)),
    }));
    // SAFETY: the caller's contract.
    unsafe { request_made(started, request) }
}

/// Keeps a fast `MPI_Isend`'s or `MPI_Irecv`'s request; its handle goes to `*request`.
///
/// # Safety
/// `request` is valid for a write.
#[inline(always)]
unsafe fn keep(requests: &mut Requests, req: Req, request: *mut Handle) -> Option<Box<Fail>> {
    match requests.insert(req) {
        Some(h) => {
            // SAFETY: the caller's contract.
            unsafe { *request = h };
            None
        }
        None => Some(boxed(too_many_requests())),
    }
}

/// The end of a fast `MPI_Isend` / `MPI_Irecv`: on a failure (or a panic), as the
/// general path leaves it, `MPI_REQUEST_NULL` in `*request` and the failure handed to
/// the world's handler.
///
/// # Safety
/// `request` is valid for a write.
#[inline(always)]
unsafe fn request_made(
    started: Result<Option<Box<Fail>>, Box<dyn Any + Send>>,
    request: *mut Handle,
) -> c_int {
    match started {
        Ok(None) => MPI_SUCCESS,
        // SAFETY: the caller's contract.
        Ok(Some(fail)) => unsafe { request_failed(*fail, request) },
        // SAFETY: the caller's contract.
        Err(_) => unsafe { request_failed(panicked(), request) },
    }
}

/// The failure of a fast `MPI_Isend` / `MPI_Irecv` (see [`request_made`]).
///
/// # Safety
/// `request` is valid for a write.
#[cold]
#[inline(never)]
unsafe fn request_failed(fail: Fail, request: *mut Handle) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { *request = MPI_REQUEST_NULL };
    fail_on_world(fail)
}

/// The world's runtime communicator for the program's messages and its size, when the
/// world is an intra-communicator (always, once `MPI_Init` has run; `None` sends the
/// call to the general path, which reports otherwise).
#[inline(always)]
fn world(comms: &CommTable<CommEntry>) -> Option<(&Comm, u32)> {
    let e = comms.get(&MPI_COMM_WORLD)?;
    match &e.kind {
        CommKind::Intra { p2p, .. } => Some((p2p, e.size)),
        CommKind::Inter { .. } => None,
    }
}

/// A tag to send with, or a named tag to receive with: `None` out of range.
#[inline(always)]
fn tag_ok(tag: c_int) -> Option<u32> {
    u32::try_from(tag).ok().filter(|&t| t <= TAG_UB as u32)
}

/// A receive's `(source, tag)` as the runtime takes them (`None`: any), when the fast
/// path takes them (`MPI_PROC_NULL`, negative, does not: the general path).
#[inline(always)]
fn recv_pattern(source: c_int, tag: c_int, size: u32) -> Option<(Option<u32>, Option<u32>)> {
    let tag = if tag == MPI_ANY_TAG {
        None
    } else {
        Some(tag_ok(tag)?)
    };
    let source = if source == MPI_ANY_SOURCE {
        None
    } else {
        Some(rank_ok(source, size)?)
    };
    Some((source, tag))
}

/// A rank of a group of `size`: `None` out of range (`MPI_PROC_NULL` and
/// `MPI_ANY_SOURCE` among them).
#[inline(always)]
fn rank_ok(rank: c_int, size: u32) -> Option<u32> {
    u32::try_from(rank).ok().filter(|&r| r < size)
}

/// The error of a panic in the runtime, caught (as `state::run` makes it).
fn panicked() -> Fail {
    Fail::new(
        MPI_ERR_INTERN,
        "a bug in libsteadfast-mpi (a panic, caught)",
    )
}

/// Hands a fast path's failure on the world to the world's error handler.
fn fail_on_world(fail: Fail) -> c_int {
    match Guard::owned() {
        Some(g) => failed(g, MPI_COMM_WORLD, fail),
        // Only the owner takes a fast path, and it stays the owner for the call.
        None => crate::state::call(MPI_COMM_WORLD, |_| Err(fail)),
    }
}

/// A runtime error as the program sees it (out of line: off the success path).
#[cold]
#[inline(never)]
fn runtime_fail(e: sf::CommError) -> Fail {
    Fail::from(e)
}
