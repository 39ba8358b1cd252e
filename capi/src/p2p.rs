//! Tagged point-to-point messages: blocking send and receive, and the non-blocking
//! forms over the caller's memory (completed with `sf_test` / `sf_wait`).

use std::ffi::{c_int, c_void};

use crate::comm::sf_comm;
use crate::error::{guard, Error, Result};
use crate::handle::{self, give, out};
use crate::request::{sf_request, sf_status, Op};

/// Receive from any source (`MPI_ANY_SOURCE`).
pub const SF_ANY_SOURCE: c_int = -1;
/// Receive with any tag (`MPI_ANY_TAG`).
pub const SF_ANY_TAG: c_int = -1;

/// A destination rank from C.
pub(crate) fn dest_rank(dest: c_int) -> Result<u32> {
    u32::try_from(dest).map_err(|_| Error::invalid(format!("destination rank {dest} is negative")))
}

/// A send tag from C.
pub(crate) fn send_tag(tag: c_int) -> Result<u32> {
    u32::try_from(tag).map_err(|_| Error::invalid(format!("tag {tag} is negative")))
}

/// A receive source or tag from C: `-1` is the wildcard.
pub(crate) fn wildcard(value: c_int, what: &str) -> Result<Option<u32>> {
    match value {
        -1 => Ok(None),
        v => u32::try_from(v)
            .map(Some)
            .map_err(|_| Error::invalid(format!("{what} {v} is negative and not the wildcard -1"))),
    }
}

/// The caller's bytes as a slice (any pointer for a length of 0).
///
/// # Safety
/// `buf` is null or valid for reads of `len` bytes for `'a`, and not written meanwhile.
pub(crate) unsafe fn bytes<'a>(buf: *const c_void, len: usize) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if buf.is_null() {
        return Err(Error::invalid(format!(
            "buffer is a null pointer of length {len}"
        )));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(buf.cast(), len) })
}

/// The caller's writable bytes as a slice (any pointer for a length of 0).
///
/// # Safety
/// `buf` is null or valid for reads and writes of `len` bytes for `'a`, and not
/// accessed otherwise meanwhile.
pub(crate) unsafe fn bytes_mut<'a>(buf: *mut c_void, len: usize) -> Result<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if buf.is_null() {
        return Err(Error::invalid(format!(
            "buffer is a null pointer of length {len}"
        )));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.cast(), len) })
}

/// Sends `len` bytes from `buf` to rank `dest` of `comm` with `tag` (>= 0); returns
/// when `buf` may be reused.
///
/// # Errors
/// `SF_ERR_INVALID_ARG` (rank or tag out of range), `SF_ERR_PROC_FAILED`,
/// `SF_ERR_REVOKED`, `SF_ERR_EXCLUDED`, `SF_ERR_TRANSPORT`.
///
/// # Safety
/// `comm` is null or a live communicator handle; `buf` is valid for reads of `len`
/// bytes (or null when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn sf_send(
    comm: *const sf_comm,
    buf: *const c_void,
    len: usize,
    dest: c_int,
    tag: c_int,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe {
            handle::with(comm, |c| {
                let data = bytes(buf, len)?;
                Ok(c.comm().send(dest_rank(dest)?, send_tag(tag)?, data)?)
            })
        }
    })
}

/// Receives into `buf` (capacity `len`) a message from `source` (or `SF_ANY_SOURCE`)
/// with `tag` (or `SF_ANY_TAG`); `status` (may be null) gets its source, tag and length.
///
/// # Errors
/// `SF_ERR_TRUNCATED` (the message is consumed), `SF_ERR_PROC_FAILED` (the source
/// failed, or a wildcard receive while a failure is not acknowledged: a blocking
/// receive cannot stay posted), `SF_ERR_REVOKED`, `SF_ERR_INVALID_ARG`,
/// `SF_ERR_TRANSPORT`.
///
/// # Safety
/// `comm` is null or a live communicator handle; `buf` is valid for writes of `len`
/// bytes (or null when `len` is 0); `status` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_recv(
    comm: *const sf_comm,
    buf: *mut c_void,
    len: usize,
    source: c_int,
    tag: c_int,
    status: *mut sf_status,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe {
            handle::with(comm, |c| {
                let (source, tag) = (wildcard(source, "source")?, wildcard(tag, "tag")?);
                let st = c.comm().recv(source, tag, bytes_mut(buf, len)?)?;
                if let Some(s) = status.as_mut() {
                    *s = sf_status::from(st);
                }
                Ok(())
            })
        }
    })
}

/// Starts a send of `len` bytes at `buf`; `*request` gets the request, to complete
/// with `sf_test` / `sf_wait` or cancel with `sf_request_free`.
///
/// The buffer is the caller's, not copied: it must stay valid, and unmodified, until
/// the request completes (`sf_test` reports it, `sf_wait` returns) or is freed. A
/// request never completed nor freed leaves the transport free to read it at any time.
///
/// # Errors
/// As `sf_send`, for what is known at once.
///
/// # Safety
/// `comm` is null or a live communicator handle; `buf` is valid for reads of `len`
/// bytes until the request completes or is freed (or null when `len` is 0);
/// `request` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_isend(
    comm: *const sf_comm,
    buf: *const c_void,
    len: usize,
    dest: c_int,
    tag: c_int,
    request: *mut *mut sf_request,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract, which includes the buffer outliving the
        // request; the request lives in the handle until completed or freed, and its
        // drop cancels what is still posted.
        unsafe {
            handle::with(comm, |c| {
                let slot = out(request, "request")?;
                let data: &'static [u8] = bytes(buf, len)?;
                let req = c.comm().isend(dest_rank(dest)?, send_tag(tag)?, data)?;
                give(slot, sf_request::new(c.home().sibling(), Op::Send(req)));
                Ok(())
            })
        }
    })
}

/// Starts a receive into `buf` (capacity `len`) from `source` (or `SF_ANY_SOURCE`)
/// with `tag` (or `SF_ANY_TAG`); `*request` gets the request. A receive makes progress
/// when it is tested or waited for.
///
/// The buffer must stay valid, and untouched by the program, until the request
/// completes or is freed: the transport writes it meanwhile.
///
/// # Errors
/// `SF_ERR_INVALID_ARG` for a bad source or tag.
///
/// # Safety
/// `comm` is null or a live communicator handle; `buf` is valid for writes of `len`
/// bytes until the request completes or is freed (or null when `len` is 0);
/// `request` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_irecv(
    comm: *const sf_comm,
    buf: *mut c_void,
    len: usize,
    source: c_int,
    tag: c_int,
    request: *mut *mut sf_request,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract, as in `sf_isend`.
        unsafe {
            handle::with(comm, |c| {
                let slot = out(request, "request")?;
                let (source, tag) = (wildcard(source, "source")?, wildcard(tag, "tag")?);
                let data: &'static mut [u8] = bytes_mut(buf, len)?;
                let req = c.comm().irecv(source, tag, data)?;
                give(slot, sf_request::new(c.home().sibling(), Op::Recv(req)));
                Ok(())
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_and_bounds() {
        assert_eq!(wildcard(-1, "tag").unwrap(), None);
        assert_eq!(wildcard(5, "tag").unwrap(), Some(5));
        let e = wildcard(-2, "source").unwrap_err();
        assert!(e.message.contains("source -2"), "{}", e.message);
        assert!(dest_rank(-1).is_err());
        assert!(send_tag(-3).unwrap_err().message.contains("-3"));
    }

    #[test]
    fn null_buffers_only_when_empty() {
        // SAFETY: null with length 0 is allowed; with a length it is refused before use.
        unsafe {
            assert!(bytes(std::ptr::null(), 0).unwrap().is_empty());
            assert!(bytes(std::ptr::null(), 3).is_err());
            assert!(bytes_mut(std::ptr::null_mut(), 3).is_err());
        }
    }
}
