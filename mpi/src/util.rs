//! Argument checks and conversions shared by the entry points: out pointers, strings,
//! user buffers, ranks, tags and counts.

use std::ffi::{c_char, c_int, c_void, CStr};

use crate::consts::*;
use crate::error::{Fail, R};

/// An out pointer, checked for null.
///
/// # Safety
/// `p` is null or valid for writes of a `T` and not aliased during the call.
pub(crate) unsafe fn out<'a, T>(p: *mut T) -> R<&'a mut T> {
    // SAFETY: the caller's contract.
    unsafe { p.as_mut() }.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null output pointer"))
}

/// The output of a call that creates a request, set to `MPI_REQUEST_NULL` at once: a
/// call that fails leaves no stale handle behind (a program that waits on it after the
/// error, as ULFM programs do after `MPI_ERR_REVOKED`, gets an empty request rather than
/// `MPI_ERR_REQUEST`); the call overwrites it on success.
///
/// # Safety
/// `p` is null or valid for a write.
pub(crate) unsafe fn new_request_out<'a>(p: *mut Handle) -> R<&'a mut Handle> {
    // SAFETY: the caller's contract.
    let slot = unsafe { out(p) }?;
    *slot = MPI_REQUEST_NULL;
    Ok(slot)
}

/// Writes `s` (cut to `cap - 1` bytes) and a NUL into `buf`, its length into `*len`.
///
/// # Safety
/// `buf` is valid for writes of `cap` bytes; `len` is valid for a write.
pub(crate) unsafe fn write_str(s: &str, buf: *mut c_char, cap: usize, len: *mut c_int) -> R<()> {
    if buf.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null string buffer"));
    }
    let n = s.len().min(cap.saturating_sub(1));
    // SAFETY: `buf` holds `cap > n` bytes (the caller's contract) and cannot overlap `s`,
    // which this library owns.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), buf, n);
        *buf.add(n) = 0;
    }
    if !len.is_null() {
        // SAFETY: the caller's contract.
        unsafe { *len = n as c_int };
    }
    Ok(())
}

/// A C string argument.
///
/// # Safety
/// `p` is null or a NUL-terminated string valid for the call.
pub(crate) unsafe fn read_cstr(p: *const c_char) -> R<String> {
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null string"));
    }
    // SAFETY: the caller's contract.
    let s = unsafe { CStr::from_ptr(p) };
    Ok(s.to_string_lossy().into_owned())
}

/// A user buffer of `n` bytes to read (null allowed when `n` is 0).
///
/// # Safety
/// `buf` is valid for reads of `n` bytes for `'a`, and not written meanwhile.
#[inline(always)]
pub(crate) unsafe fn bytes<'a>(buf: *const c_void, n: usize) -> R<&'a [u8]> {
    if n == 0 {
        return Ok(&[]);
    }
    if buf.is_null() {
        return Err(null_buffer(n));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), n) })
}

/// A user buffer of `n` bytes to write (null allowed when `n` is 0).
///
/// # Safety
/// `buf` is valid for writes of `n` bytes for `'a`, and not otherwise used meanwhile.
#[inline(always)]
pub(crate) unsafe fn bytes_mut<'a>(buf: *mut c_void, n: usize) -> R<&'a mut [u8]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if buf.is_null() {
        return Err(null_buffer(n));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n) })
}

/// The error of a null buffer of `n` bytes (out of line: the checks above stay small
/// enough to inline on the message path).
#[cold]
#[inline(never)]
fn null_buffer(n: usize) -> Fail {
    Fail::new(MPI_ERR_BUFFER, format!("a null buffer for {n} bytes"))
}

/// A rank of a group of `size`.
#[inline]
pub(crate) fn rank_arg(r: c_int, size: u32) -> R<u32> {
    match u32::try_from(r) {
        Ok(v) if v < size => Ok(v),
        _ => Err(bad_rank(r, size)),
    }
}

#[cold]
#[inline(never)]
fn bad_rank(r: c_int, size: u32) -> Fail {
    Fail::new(MPI_ERR_RANK, format!("rank {r} outside a group of {size}"))
}

/// A tag to send with.
#[inline]
pub(crate) fn tag_arg(t: c_int) -> R<u32> {
    if (0..=TAG_UB).contains(&t) {
        Ok(t as u32)
    } else {
        Err(bad_tag(t))
    }
}

#[cold]
#[inline(never)]
fn bad_tag(t: c_int) -> Fail {
    Fail::new(MPI_ERR_TAG, format!("tag {t} outside 0..={TAG_UB}"))
}

/// A tag to receive with (`MPI_ANY_TAG`: `None`).
#[inline]
pub(crate) fn recv_tag_arg(t: c_int) -> R<Option<u32>> {
    if t == MPI_ANY_TAG {
        Ok(None)
    } else {
        tag_arg(t).map(Some)
    }
}

/// A count: an `int` one, or a large-count (`_c`) call's `MPI_Count`.
#[inline]
pub(crate) fn count_arg(c: impl Into<i64>) -> R<usize> {
    let c = c.into();
    usize::try_from(c).map_err(|_| Fail::new(MPI_ERR_COUNT, format!("negative count {c}")))
}

/// A handle argument given as a pointer (an `MPI_Comm *`...), read.
///
/// # Safety
/// `p` is null or valid for reads.
pub(crate) unsafe fn read_handle(p: *const Handle) -> R<Handle> {
    // SAFETY: the caller's contract.
    unsafe { p.as_ref() }
        .copied()
        .ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null handle pointer"))
}

/// Polls a wait loop spins before it yields: `SpinWait`'s default, or 0 (yield at
/// every poll) on a node with more ranks than cores; set by `MPI_Init`.
static SPINS_BEFORE_YIELD: std::sync::atomic::AtomicU32 =
    std::sync::atomic::AtomicU32::new(steadfast_os::SpinWait::DEFAULT_SPINS_BEFORE_YIELD);

/// Sets the wait loops' policy from the runtime's (`World::yields_when_idle`).
pub(crate) fn set_yield_when_idle(yields: bool) {
    let spins = if yields {
        0
    } else {
        steadfast_os::SpinWait::DEFAULT_SPINS_BEFORE_YIELD
    };
    // ORDERING: Relaxed; a tuning hint read by later waits, no data published with it.
    SPINS_BEFORE_YIELD.store(spins, std::sync::atomic::Ordering::Relaxed);
}

/// A waiter for a wait loop of this library (collectives, request waits), with the
/// runtime's idle policy: 2000 polls of 4 ranks on 2 cores each cost a core's time
/// slice the awaited rank needed (an 8-byte MPI_Allreduce took about 1 ms).
pub(crate) fn spin_wait() -> steadfast_os::SpinWait {
    // ORDERING: Relaxed; see `set_yield_when_idle`.
    steadfast_os::SpinWait::new(SPINS_BEFORE_YIELD.load(std::sync::atomic::Ordering::Relaxed))
}
