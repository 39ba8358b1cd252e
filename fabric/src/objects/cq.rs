//! The completion queue: polling completions (straight through the provider's ops
//! table, or through libfabric's shim) and reading error entries.

use std::ffi::c_void;
use std::ptr;
use std::rc::Rc;

use steadfast_fabric_sys as sys;

use super::{Domain, OwnedFid};
use crate::error::{check, Result};

/// A completion queue in the tagged format (`fi_cq_open`, `FI_CQ_FORMAT_TAGGED`).
#[derive(Clone)]
pub struct CompletionQueue(Rc<OwnedFid<sys::fid_cq, Domain>>);

/// One completion: libfabric's tagged entry.
pub type CqEntry = sys::fi_cq_tagged_entry;

/// An error completion, decoded.
#[derive(Clone, Copy, Debug)]
pub struct CqError {
    /// The context of the failed operation.
    pub context: *mut c_void,
    /// Operation flags (`FI_SEND`, `FI_RECV`, `FI_READ`, ...).
    pub flags: u64,
    /// The tag of the message (receives).
    pub tag: u64,
    /// Bytes transferred.
    pub len: usize,
    /// Bytes that did not fit (truncation).
    pub overflow_len: usize,
    /// Positive `FI_E*` error number.
    pub code: u32,
}

/// What one poll of a completion queue found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqPoll {
    /// This many entries were written.
    Entries(usize),
    /// Nothing completed.
    Empty,
    /// An error entry waits: read it with [`CompletionQueue::read_error`].
    ErrorAvailable,
}

impl CompletionQueue {
    pub(crate) fn raw(&self) -> *mut sys::fid_cq {
        self.0.ptr()
    }

    /// Opens a tagged-format completion queue of `size` entries (0: provider default).
    ///
    /// # Errors
    /// [`Error::Fabric`](crate::Error::Fabric) when the provider refuses.
    pub fn open(domain: &Domain, size: usize) -> Result<Self> {
        let mut attr = sys::fi_cq_attr {
            size,
            format: sys::FI_CQ_FORMAT_TAGGED,
            wait_obj: sys::FI_WAIT_NONE,
            ..Default::default()
        };
        let mut fid: *mut sys::fid_cq = ptr::null_mut();
        // SAFETY: domain is open; attr and fid are valid for the call.
        let ret = unsafe { sys::fi_cq_open(domain.raw(), &mut attr, &mut fid, ptr::null_mut()) };
        check("fi_cq_open", ret as i64)?;
        Ok(CompletionQueue(Rc::new(OwnedFid::new(
            "fi_cq_open",
            fid,
            domain.clone(),
        )?)))
    }

    /// Reads up to `entries.len()` completions, progressing the provider.
    ///
    /// # Errors
    /// [`Error::Fabric`](crate::Error::Fabric) for a failure of the queue itself (not of an operation).
    #[inline]
    pub fn poll(&self, entries: &mut [CqEntry]) -> Result<CqPoll> {
        let cq = self.0.ptr();
        // SAFETY: the CQ is open; its ops table is set by the provider at open and the
        // read entry is mandatory; entries has room for entries.len() tagged entries.
        // This is exactly what the static inline fi_cq_read does, without the shim call.
        let ret = unsafe {
            let read = (*(*cq).ops).read.unwrap_unchecked();
            read(cq, entries.as_mut_ptr().cast(), entries.len())
        };
        cq_poll_result(ret)
    }

    /// Like [`poll`](Self::poll) but through libfabric's `fi_cq_read` shim (kept to
    /// measure the cost of the extra call against the direct ops-table call).
    ///
    /// # Errors
    /// As [`poll`](Self::poll).
    pub fn poll_via_shim(&self, entries: &mut [CqEntry]) -> Result<CqPoll> {
        // SAFETY: as in poll.
        let ret =
            unsafe { sys::fi_cq_read(self.0.ptr(), entries.as_mut_ptr().cast(), entries.len()) };
        cq_poll_result(ret)
    }

    /// Reads the pending error entry, if any.
    ///
    /// # Errors
    /// [`Error::Fabric`](crate::Error::Fabric) for a failure of the queue itself.
    pub fn read_error(&self) -> Result<Option<CqError>> {
        let mut entry = sys::fi_cq_err_entry::default();
        // SAFETY: the CQ is open; entry is a valid, zeroed error entry (err_data null,
        // so the provider uses its own buffer).
        let ret = unsafe { sys::fi_cq_readerr(self.0.ptr(), &mut entry, 0) };
        if ret == -(sys::FI_EAGAIN as isize) {
            return Ok(None);
        }
        check("fi_cq_readerr", ret as i64)?;
        Ok(Some(CqError {
            context: entry.op_context,
            flags: entry.flags,
            tag: entry.tag,
            len: entry.len,
            overflow_len: entry.olen,
            code: entry.err.unsigned_abs(),
        }))
    }
}

/// What an `fi_cq_read` return code means.
#[inline]
fn cq_poll_result(ret: isize) -> Result<CqPoll> {
    if ret > 0 {
        Ok(CqPoll::Entries(ret as usize))
    } else if ret == -(sys::FI_EAGAIN as isize) {
        Ok(CqPoll::Empty)
    } else if ret == -(sys::FI_EAVAIL as isize) {
        Ok(CqPoll::ErrorAvailable)
    } else {
        check("fi_cq_read", ret as i64).map(|_| CqPoll::Empty)
    }
}
