//! The endpoint: opening and binding it, and posting operations (each `unsafe` where
//! libfabric keeps using a buffer after the call).

use std::ffi::c_void;
use std::ptr;
use std::rc::Rc;

use steadfast_fabric_sys as sys;

use super::{fid_of, AddressVector, CompletionQueue, Domain, OwnedFid};
use crate::error::{check, Result};
use crate::info::Info;

/// What posting an operation returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Posted {
    /// The operation is queued (or, for inject, done).
    Yes,
    /// `-FI_EAGAIN`: no room now; progress the completion queue and retry.
    Again,
}

/// Turns a post's return code into [`Posted`] or an error of `call`.
#[inline]
fn posted(call: &'static str, ret: isize) -> Result<Posted> {
    if ret == 0 {
        Ok(Posted::Yes)
    } else if ret == -(sys::FI_EAGAIN as isize) {
        Ok(Posted::Again)
    } else {
        check(call, ret as i64).map(|_| Posted::Yes)
    }
}

/// A reliable-datagram endpoint (`FI_EP_RDM`) bound to one completion queue (for both
/// directions) and one address vector, enabled.
///
/// Posting operations is `unsafe`: libfabric keeps using the buffer and the context
/// until the operation completes. [`Messenger`](crate::Messenger) is the safe layer.
#[derive(Clone)]
pub struct Endpoint(Rc<OwnedFid<sys::fid_ep, EndpointParents>>);

/// What an endpoint holds open until it is closed.
type EndpointParents = (CompletionQueue, AddressVector, Domain);

impl Endpoint {
    /// Opens, binds and enables an endpoint.
    ///
    /// # Errors
    /// [`Error::Fabric`](crate::Error::Fabric) when the provider refuses any of the steps.
    pub fn open(
        domain: &Domain,
        info: &Info,
        cq: &CompletionQueue,
        av: &AddressVector,
    ) -> Result<Self> {
        let mut fid: *mut sys::fid_ep = ptr::null_mut();
        // SAFETY: domain is open and info valid for the call.
        let ret = unsafe { sys::fi_endpoint(domain.raw(), info.raw(), &mut fid, ptr::null_mut()) };
        check("fi_endpoint", ret as i64)?;
        let ep = Endpoint(Rc::new(OwnedFid::new(
            "fi_endpoint",
            fid,
            (cq.clone(), av.clone(), domain.clone()),
        )?));
        let flags = (sys::FI_TRANSMIT | sys::FI_RECV) as u64;
        // SAFETY: the endpoint, CQ and AV are open and of the same domain.
        unsafe {
            check(
                "fi_ep_bind(cq)",
                sys::fi_ep_bind(fid, fid_of(cq.raw()), flags) as i64,
            )?;
            check(
                "fi_ep_bind(av)",
                sys::fi_ep_bind(fid, fid_of(av.raw()), 0) as i64,
            )?;
            check("fi_enable", sys::fi_enable(fid) as i64)?;
        }
        Ok(ep)
    }

    /// The open fid; [`Error::Broken`](crate::Error::Broken) once [`close_now`](Self::close_now) closed it.
    pub(crate) fn live(&self) -> Result<*mut sys::fid_ep> {
        self.0.live()
    }

    /// Closes the endpoint now, before its handles are dropped: libfabric discards the
    /// operations still posted ("outstanding operations posted to the endpoint when
    /// fi_close is called will be discarded", fi_endpoint(3)), so afterwards the
    /// provider touches none of their buffers. Every later use of any handle of this
    /// endpoint returns [`Error::Broken`](crate::Error::Broken).
    ///
    /// # Errors
    /// [`Error::Fabric`](crate::Error::Fabric) when `fi_close` refuses (e.g. `FI_EBUSY`); the endpoint then
    /// stays open.
    pub(crate) fn close_now(&self) -> Result<()> {
        self.0.close_now("fi_close(endpoint)")
    }

    /// This endpoint's raw provider address (`fi_getname`).
    ///
    /// # Errors
    /// [`Error::Fabric`](crate::Error::Fabric) when the provider refuses.
    pub fn name(&self) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; 256];
        loop {
            let mut len = buf.len();
            // SAFETY: buf is writable for len bytes; len is updated to the needed size.
            let ret = unsafe {
                sys::fi_getname(&mut (*self.live()?).fid, buf.as_mut_ptr().cast(), &mut len)
            };
            if ret == -(sys::FI_ETOOSMALL as i32) && len > buf.len() {
                buf.resize(len, 0);
                continue;
            }
            check("fi_getname", ret as i64)?;
            buf.truncate(len);
            return Ok(buf);
        }
    }

    /// Posts a tagged send.
    ///
    /// # Safety
    /// `buf..buf+len` must stay readable and unchanged, and `context` must point to a
    /// live `fi_context2` that nothing else uses, until this operation's completion is
    /// read from the completion queue. `desc` must be the descriptor of a registration
    /// covering the buffer when the provider needs one (`FI_MR_LOCAL`), else null.
    #[inline]
    pub unsafe fn post_tsend(
        &self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        dest: sys::fi_addr_t,
        tag: u64,
        context: *mut c_void,
    ) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: the endpoint is open with FI_TAGGED, so its tagged ops table and
        // send entry are set; the caller upholds the buffer and context contract.
        let ret = unsafe {
            (*(*ep).tagged).send.unwrap_unchecked()(ep, buf.cast(), len, desc, dest, tag, context)
        };
        posted("fi_tsend", ret)
    }

    /// Posts a tagged send through libfabric's `fi_tsend` shim instead of the ops table.
    ///
    /// # Safety
    /// As [`post_tsend`](Self::post_tsend).
    pub unsafe fn post_tsend_via_shim(
        &self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        dest: sys::fi_addr_t,
        tag: u64,
        context: *mut c_void,
    ) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: upheld by the caller as for post_tsend; the endpoint is open.
        let ret = unsafe { sys::fi_tsend(ep, buf.cast(), len, desc, dest, tag, context) };
        posted("fi_tsend", ret)
    }

    /// Sends a small tagged message that is buffered at once: no completion is
    /// generated and `buf` may be reused on return. `len` must not exceed the
    /// provider's inject size.
    ///
    /// # Errors
    /// [`Error::Fabric`](crate::Error::Fabric) when the provider refuses.
    #[inline]
    pub fn tinject(&self, buf: &[u8], dest: sys::fi_addr_t, tag: u64) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: the endpoint is open with FI_TAGGED; inject copies buf before
        // returning, so a borrowed slice suffices.
        let ret = unsafe {
            (*(*ep).tagged).inject.unwrap_unchecked()(ep, buf.as_ptr().cast(), buf.len(), dest, tag)
        };
        posted("fi_tinject", ret)
    }

    /// Like [`tinject`](Self::tinject), with 64 bits of remote CQ data.
    ///
    /// # Errors
    /// [`Error::Fabric`](crate::Error::Fabric) when the provider refuses.
    #[inline]
    pub fn tinjectdata(
        &self,
        buf: &[u8],
        data: u64,
        dest: sys::fi_addr_t,
        tag: u64,
    ) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: as in tinject; injectdata is mandatory in the tagged ops table.
        let ret = unsafe {
            (*(*ep).tagged).injectdata.unwrap_unchecked()(
                ep,
                buf.as_ptr().cast(),
                buf.len(),
                data,
                dest,
                tag,
            )
        };
        posted("fi_tinjectdata", ret)
    }

    /// Like [`post_tsend`](Self::post_tsend), with 64 bits of remote CQ data.
    ///
    /// # Safety
    /// As [`post_tsend`](Self::post_tsend).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn post_tsenddata(
        &self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        data: u64,
        dest: sys::fi_addr_t,
        tag: u64,
        context: *mut c_void,
    ) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: as for post_tsend.
        let ret = unsafe {
            (*(*ep).tagged).senddata.unwrap_unchecked()(
                ep,
                buf.cast(),
                len,
                desc,
                data,
                dest,
                tag,
                context,
            )
        };
        posted("fi_tsenddata", ret)
    }

    /// Posts an untagged receive (the endpoint's message queue, matched apart from the
    /// tagged one).
    ///
    /// # Safety
    /// `buf..buf+len` must stay valid and unaliased, and `context` must stay valid,
    /// until the operation's completion is read (or the endpoint is closed).
    ///
    /// # Errors
    /// [`Error::Fabric`](crate::Error::Fabric); `-FI_EAGAIN` comes back as [`Posted::Again`].
    pub unsafe fn post_recv(
        &self,
        buf: *mut u8,
        len: usize,
        desc: *mut c_void,
        src: sys::fi_addr_t,
        context: *mut c_void,
    ) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: the endpoint is open with FI_MSG, so its msg ops table and recv entry
        // are set; the caller upholds the buffer and context contract.
        let ret = unsafe {
            (*(*ep).msg).recv.unwrap_unchecked()(ep, buf.cast(), len, desc, src, context)
        };
        posted("fi_recv", ret)
    }

    /// Sends a small untagged message, copied before returning (no completion).
    ///
    /// # Errors
    /// [`Error::Fabric`](crate::Error::Fabric); `-FI_EAGAIN` comes back as [`Posted::Again`].
    pub fn inject(&self, buf: &[u8], dest: sys::fi_addr_t) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: the endpoint is open with FI_MSG; inject copies buf before returning,
        // so a borrowed slice suffices.
        let ret = unsafe {
            (*(*ep).msg).inject.unwrap_unchecked()(ep, buf.as_ptr().cast(), buf.len(), dest)
        };
        posted("fi_inject", ret)
    }

    /// Posts an untagged send.
    ///
    /// # Safety
    /// `buf..buf+len` must stay valid and unchanged, and `context` valid, until the
    /// operation's completion is read (or the endpoint is closed).
    ///
    /// # Errors
    /// [`Error::Fabric`](crate::Error::Fabric); `-FI_EAGAIN` comes back as [`Posted::Again`].
    pub unsafe fn post_send(
        &self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        dest: sys::fi_addr_t,
        context: *mut c_void,
    ) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: the endpoint is open with FI_MSG, so its msg ops table and send entry
        // are set; the caller upholds the buffer and context contract.
        let ret = unsafe {
            (*(*ep).msg).send.unwrap_unchecked()(ep, buf.cast(), len, desc, dest, context)
        };
        posted("fi_send", ret)
    }

    /// Posts a tagged receive matching `tag` on the bits not set in `ignore`.
    ///
    /// # Safety
    /// `buf..buf+len` must stay writable and otherwise unused, and `context` must point
    /// to a live `fi_context2`, until the completion is read. `desc` as for sends.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn post_trecv(
        &self,
        buf: *mut u8,
        len: usize,
        desc: *mut c_void,
        src: sys::fi_addr_t,
        tag: u64,
        ignore: u64,
        context: *mut c_void,
    ) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: as for post_tsend; the caller upholds the buffer and context contract.
        let ret = unsafe {
            (*(*ep).tagged).recv.unwrap_unchecked()(
                ep,
                buf.cast(),
                len,
                desc,
                src,
                tag,
                ignore,
                context,
            )
        };
        posted("fi_trecv", ret)
    }

    /// Posts an RMA read of `len` bytes at `remote_addr` (key `key`) of `src` into `buf`.
    ///
    /// # Safety
    /// As [`post_trecv`](Self::post_trecv) for `buf` and `context`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn post_read(
        &self,
        buf: *mut u8,
        len: usize,
        desc: *mut c_void,
        src: sys::fi_addr_t,
        remote_addr: u64,
        key: u64,
        context: *mut c_void,
    ) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: the endpoint is open with FI_RMA|FI_READ, so the rma ops are set;
        // the caller upholds the buffer and context contract.
        let ret = unsafe {
            (*(*ep).rma).read.unwrap_unchecked()(
                ep,
                buf.cast(),
                len,
                desc,
                src,
                remote_addr,
                key,
                context,
            )
        };
        posted("fi_read", ret)
    }

    /// Posts an RMA write of `buf` to `remote_addr` (key `key`) of `dest`.
    ///
    /// # Safety
    /// As [`post_tsend`](Self::post_tsend) for `buf` and `context`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn post_write(
        &self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        dest: sys::fi_addr_t,
        remote_addr: u64,
        key: u64,
        context: *mut c_void,
    ) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: as for post_read with FI_WRITE.
        let ret = unsafe {
            (*(*ep).rma).write.unwrap_unchecked()(
                ep,
                buf.cast(),
                len,
                desc,
                dest,
                remote_addr,
                key,
                context,
            )
        };
        posted("fi_write", ret)
    }

    /// Posts an RMA write like [`post_write`](Self::post_write) whose completion means
    /// the data is in the target's memory (`fi_writemsg` with `FI_DELIVERY_COMPLETE`),
    /// not merely that `buf` may be reused.
    ///
    /// # Safety
    /// As [`post_write`](Self::post_write).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn post_write_delivered(
        &self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        dest: sys::fi_addr_t,
        remote_addr: u64,
        key: u64,
        context: *mut c_void,
    ) -> Result<Posted> {
        let ep = self.live()?;
        let iov = sys::iovec {
            iov_base: buf.cast_mut().cast(),
            iov_len: len,
        };
        let rma_iov = sys::fi_rma_iov {
            addr: remote_addr,
            len,
            key,
        };
        let mut descs = [desc];
        let msg = sys::fi_msg_rma {
            msg_iov: &iov,
            desc: descs.as_mut_ptr(),
            iov_count: 1,
            addr: dest,
            rma_iov: &rma_iov,
            rma_iov_count: 1,
            context,
            data: 0,
        };
        let flags = (sys::FI_DELIVERY_COMPLETE | sys::FI_COMPLETION) as u64;
        // SAFETY: as for post_write; `msg` and the iovecs it points to live across the
        // call, which copies what it keeps.
        let ret = unsafe { (*(*ep).rma).writemsg.unwrap_unchecked()(ep, &msg, flags) };
        posted("fi_writemsg", ret)
    }

    /// Posts a fetching atomic on one u64 (`fi_fetch_atomic`).
    ///
    /// # Safety
    /// `operand` (read) and `result` (written) must stay valid, and `context` live,
    /// until the completion is read; descriptors as for sends.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn post_fetch_atomic_u64(
        &self,
        operand: *const u64,
        operand_desc: *mut c_void,
        result: *mut u64,
        result_desc: *mut c_void,
        dest: sys::fi_addr_t,
        remote_addr: u64,
        key: u64,
        op: sys::fi_op,
        context: *mut c_void,
    ) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: upheld by the caller; the endpoint is open.
        let ret = unsafe {
            sys::fi_fetch_atomic(
                ep,
                operand.cast(),
                1,
                operand_desc,
                result.cast(),
                result_desc,
                dest,
                remote_addr,
                key,
                sys::FI_UINT64,
                op,
                context,
            )
        };
        posted("fi_fetch_atomic", ret)
    }

    /// Posts a compare-and-swap on one u64 (`fi_compare_atomic`, `FI_CSWAP`).
    ///
    /// # Safety
    /// As [`post_fetch_atomic_u64`](Self::post_fetch_atomic_u64), for all three buffers.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn post_compare_swap_u64(
        &self,
        swap: *const u64,
        swap_desc: *mut c_void,
        compare: *const u64,
        compare_desc: *mut c_void,
        result: *mut u64,
        result_desc: *mut c_void,
        dest: sys::fi_addr_t,
        remote_addr: u64,
        key: u64,
        context: *mut c_void,
    ) -> Result<Posted> {
        let ep = self.live()?;
        // SAFETY: upheld by the caller; the endpoint is open.
        let ret = unsafe {
            sys::fi_compare_atomic(
                ep,
                swap.cast(),
                1,
                swap_desc,
                compare.cast(),
                compare_desc,
                result.cast(),
                result_desc,
                dest,
                remote_addr,
                key,
                sys::FI_UINT64,
                sys::FI_CSWAP,
                context,
            )
        };
        posted("fi_compare_atomic", ret)
    }

    /// Asks the provider to cancel the operation posted with `context` (a receive, in
    /// practice). A cancelled operation completes with `FI_ECANCELED`.
    /// On a closed endpoint there is nothing left to cancel: a no-op.
    pub(crate) fn cancel(&self, context: *mut c_void) {
        let Ok(ep) = self.live() else {
            return;
        };
        // SAFETY: the endpoint is open; cancelling an unknown context is harmless.
        unsafe {
            sys::fi_cancel(&mut (*ep).fid, context);
        }
    }
}
