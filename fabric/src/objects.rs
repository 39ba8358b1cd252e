//! RAII handles over libfabric objects: fabric, domain, completion queue, address
//! vector, endpoint.
//!
//! Each child holds a reference-counted handle to its parent, so the closing order
//! (endpoint -> CQ/AV/MR -> domain -> fabric) holds whatever order safe code drops
//! things in. The handles are `!Send`: the domain is opened with `FI_THREAD_DOMAIN`,
//! under which the application serializes access to every object of a domain. A
//! [`Messenger`](crate::Messenger) owns a whole tree and can therefore move between
//! threads as one.

use std::ffi::c_void;
use std::ptr::{self, NonNull};
use std::rc::Rc;

use steadfast_fabric_sys as sys;

use crate::error::{check, Error, Result};
use crate::info::Info;

/// Closes a fid, ignoring errors (a close error during teardown has no useful handling).
///
/// # Safety
/// `fid` must be an open libfabric object that nothing uses after this call.
unsafe fn close_fid(fid: *mut sys::fid) {
    // SAFETY: guaranteed by the caller.
    let ret = unsafe { sys::fi_close(fid) };
    if ret != 0 {
        log::warn!(
            "steadfast-fabric: fi_close failed: {}",
            crate::error::fi_error_text(ret as i64)
        );
    }
}

struct FabricInner(NonNull<sys::fid_fabric>);

impl Drop for FabricInner {
    fn drop(&mut self) {
        // SAFETY: opened by fi_fabric; every child holds an Rc to us, so none is alive.
        unsafe { close_fid(&mut (*self.0.as_ptr()).fid) }
    }
}

/// An open fabric (`fi_fabric`).
#[derive(Clone)]
pub struct Fabric(Rc<FabricInner>);

impl Fabric {
    /// Opens the fabric described by `info`.
    ///
    /// # Errors
    /// [`Error::Fabric`] when the provider refuses.
    pub fn open(info: &Info) -> Result<Self> {
        let mut fid: *mut sys::fid_fabric = ptr::null_mut();
        // SAFETY: info.raw() is a valid fi_info whose fabric_attr is non-null.
        let ret = unsafe { sys::fi_fabric((*info.raw()).fabric_attr, &mut fid, ptr::null_mut()) };
        check("fi_fabric", ret as i64)?;
        Ok(Fabric(Rc::new(FabricInner(
            NonNull::new(fid).expect("fi_fabric returned null"),
        ))))
    }
}

pub(crate) struct DomainInner {
    fid: NonNull<sys::fid_domain>,
    _fabric: Fabric,
}

impl Drop for DomainInner {
    fn drop(&mut self) {
        // SAFETY: opened by fi_domain; children hold Rc<DomainInner>, so none is alive.
        unsafe { close_fid(&mut (*self.fid.as_ptr()).fid) }
    }
}

/// An open access domain (`fi_domain`): where memory is registered and endpoints live.
#[derive(Clone)]
pub struct Domain(pub(crate) Rc<DomainInner>);

impl Domain {
    /// Opens the domain described by `info` on `fabric`.
    ///
    /// # Errors
    /// [`Error::Fabric`] when the provider refuses.
    pub fn open(fabric: &Fabric, info: &Info) -> Result<Self> {
        let mut fid: *mut sys::fid_domain = ptr::null_mut();
        // SAFETY: the fabric is open; info.raw() is valid for the call.
        let ret =
            unsafe { sys::fi_domain(fabric.0 .0.as_ptr(), info.raw(), &mut fid, ptr::null_mut()) };
        check("fi_domain", ret as i64)?;
        Ok(Domain(Rc::new(DomainInner {
            fid: NonNull::new(fid).expect("fi_domain returned null"),
            _fabric: fabric.clone(),
        })))
    }

    pub(crate) fn raw(&self) -> *mut sys::fid_domain {
        self.0.fid.as_ptr()
    }
}

struct CqInner {
    fid: NonNull<sys::fid_cq>,
    _domain: Domain,
}

impl Drop for CqInner {
    fn drop(&mut self) {
        // SAFETY: opened by fi_cq_open; endpoints bound to it hold an Rc, so none is alive.
        unsafe { close_fid(&mut (*self.fid.as_ptr()).fid) }
    }
}

/// A completion queue in the tagged format (`fi_cq_open`, `FI_CQ_FORMAT_TAGGED`).
#[derive(Clone)]
pub struct CompletionQueue(Rc<CqInner>);

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
    /// Opens a tagged-format completion queue of `size` entries (0: provider default).
    ///
    /// # Errors
    /// [`Error::Fabric`] when the provider refuses.
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
        Ok(CompletionQueue(Rc::new(CqInner {
            fid: NonNull::new(fid).expect("fi_cq_open returned null"),
            _domain: domain.clone(),
        })))
    }

    /// Reads up to `entries.len()` completions, progressing the provider.
    ///
    /// # Errors
    /// [`Error::Fabric`] for a failure of the queue itself (not of an operation).
    #[inline]
    pub fn poll(&self, entries: &mut [CqEntry]) -> Result<CqPoll> {
        let cq = self.0.fid.as_ptr();
        // SAFETY: the CQ is open; its ops table is set by the provider at open and the
        // read entry is mandatory; entries has room for entries.len() tagged entries.
        // This is exactly what the static inline fi_cq_read does, without the shim call.
        let ret = unsafe {
            let read = (*(*cq).ops).read.unwrap_unchecked();
            read(cq, entries.as_mut_ptr().cast(), entries.len())
        };
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

    /// Like [`poll`](Self::poll) but through libfabric's `fi_cq_read` shim (kept to
    /// measure the cost of the extra call against the direct ops-table call).
    ///
    /// # Errors
    /// As [`poll`](Self::poll).
    pub fn poll_via_shim(&self, entries: &mut [CqEntry]) -> Result<CqPoll> {
        // SAFETY: as in poll.
        let ret = unsafe {
            sys::fi_cq_read(
                self.0.fid.as_ptr(),
                entries.as_mut_ptr().cast(),
                entries.len(),
            )
        };
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

    /// Reads the pending error entry, if any.
    ///
    /// # Errors
    /// [`Error::Fabric`] for a failure of the queue itself.
    pub fn read_error(&self) -> Result<Option<CqError>> {
        let mut entry = sys::fi_cq_err_entry::default();
        // SAFETY: the CQ is open; entry is a valid, zeroed error entry (err_data null,
        // so the provider uses its own buffer).
        let ret = unsafe { sys::fi_cq_readerr(self.0.fid.as_ptr(), &mut entry, 0) };
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

struct AvInner {
    fid: NonNull<sys::fid_av>,
    _domain: Domain,
}

impl Drop for AvInner {
    fn drop(&mut self) {
        // SAFETY: opened by fi_av_open; endpoints bound to it hold an Rc, so none is alive.
        unsafe { close_fid(&mut (*self.fid.as_ptr()).fid) }
    }
}

/// An address vector (`fi_av_open`): maps peers' raw endpoint names to `fi_addr_t`.
#[derive(Clone)]
pub struct AddressVector(Rc<AvInner>);

impl AddressVector {
    /// Opens an address vector with room for about `count` peers.
    ///
    /// # Errors
    /// [`Error::Fabric`] when the provider refuses.
    pub fn open(domain: &Domain, count: usize) -> Result<Self> {
        let mut attr = sys::fi_av_attr {
            type_: sys::FI_AV_UNSPEC,
            count,
            ..Default::default()
        };
        let mut fid: *mut sys::fid_av = ptr::null_mut();
        // SAFETY: domain is open; attr and fid are valid for the call.
        let ret = unsafe { sys::fi_av_open(domain.raw(), &mut attr, &mut fid, ptr::null_mut()) };
        check("fi_av_open", ret as i64)?;
        Ok(AddressVector(Rc::new(AvInner {
            fid: NonNull::new(fid).expect("fi_av_open returned null"),
            _domain: domain.clone(),
        })))
    }

    /// Inserts one raw provider address and returns its `fi_addr_t`.
    ///
    /// The caller must have checked that `raw` has the provider's address length and
    /// format; [`crate::PeerAddress`] does.
    ///
    /// # Errors
    /// [`Error::MalformedAddress`] when the provider rejects the address.
    pub fn insert(&self, raw: &[u8]) -> Result<sys::fi_addr_t> {
        let mut out: sys::fi_addr_t = sys::FI_ADDR_NOTAVAIL_VALUE;
        // SAFETY: the AV is open; raw is readable for its length, which the caller has
        // matched to the provider's address length; out receives one address.
        let ret = unsafe {
            sys::fi_av_insert(
                self.0.fid.as_ptr(),
                raw.as_ptr().cast(),
                1,
                &mut out,
                0,
                ptr::null_mut(),
            )
        };
        if ret != 1 || out == sys::FI_ADDR_NOTAVAIL_VALUE {
            return Err(Error::MalformedAddress(format!(
                "the provider rejected the address ({})",
                if ret < 0 {
                    crate::error::fi_error_text(ret as i64)
                } else {
                    format!("{ret} inserted")
                }
            )));
        }
        Ok(out)
    }
}

struct EndpointInner {
    fid: NonNull<sys::fid_ep>,
    /// Set once [`Endpoint::close_now`] closed the fid: every later use is an error.
    closed: std::cell::Cell<bool>,
    // Kept only to hold the parents open until the endpoint is closed.
    _cq: CompletionQueue,
    _av: AddressVector,
    _domain: Domain,
}

impl Drop for EndpointInner {
    fn drop(&mut self) {
        if self.closed.get() {
            return;
        }
        // SAFETY: opened by fi_endpoint, not closed yet; memory regions bound to it
        // hold an Rc.
        unsafe { close_fid(&mut (*self.fid.as_ptr()).fid) }
    }
}

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
pub struct Endpoint(Rc<EndpointInner>);

impl Endpoint {
    /// Opens, binds and enables an endpoint.
    ///
    /// # Errors
    /// [`Error::Fabric`] when the provider refuses any of the steps.
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
        let ep = Endpoint(Rc::new(EndpointInner {
            fid: NonNull::new(fid).expect("fi_endpoint returned null"),
            closed: std::cell::Cell::new(false),
            _cq: cq.clone(),
            _av: av.clone(),
            _domain: domain.clone(),
        }));
        let flags = (sys::FI_TRANSMIT | sys::FI_RECV) as u64;
        // SAFETY: the endpoint, CQ and AV are open and of the same domain.
        unsafe {
            check(
                "fi_ep_bind(cq)",
                sys::fi_ep_bind(fid, &mut (*cq.0.fid.as_ptr()).fid, flags) as i64,
            )?;
            check(
                "fi_ep_bind(av)",
                sys::fi_ep_bind(fid, &mut (*av.0.fid.as_ptr()).fid, 0) as i64,
            )?;
            check("fi_enable", sys::fi_enable(fid) as i64)?;
        }
        Ok(ep)
    }

    /// The open fid; [`Error::Broken`] once [`close_now`](Self::close_now) closed it.
    pub(crate) fn live(&self) -> Result<*mut sys::fid_ep> {
        if self.0.closed.get() {
            return Err(Error::Broken {
                reason: "the endpoint was closed to fence a buffer the provider kept",
            });
        }
        Ok(self.0.fid.as_ptr())
    }

    /// Closes the endpoint now, before its handles are dropped: libfabric discards the
    /// operations still posted ("outstanding operations posted to the endpoint when
    /// fi_close is called will be discarded", fi_endpoint(3)), so afterwards the
    /// provider touches none of their buffers. Every later use of any handle of this
    /// endpoint returns [`Error::Broken`].
    ///
    /// # Errors
    /// [`Error::Fabric`] when `fi_close` refuses (e.g. `FI_EBUSY`); the endpoint then
    /// stays open.
    pub(crate) fn close_now(&self) -> Result<()> {
        if self.0.closed.get() {
            return Ok(());
        }
        // SAFETY: the fid is open (not closed yet); after a successful close no handle
        // uses it again, since `live` refuses from now on and Drop skips it.
        let ret = unsafe { sys::fi_close(&mut (*self.0.fid.as_ptr()).fid) };
        check("fi_close(endpoint)", ret as i64)?;
        self.0.closed.set(true);
        Ok(())
    }

    /// This endpoint's raw provider address (`fi_getname`).
    ///
    /// # Errors
    /// [`Error::Fabric`] when the provider refuses.
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
    /// [`Error::Fabric`] when the provider refuses.
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
    /// [`Error::Fabric`] when the provider refuses.
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
    /// [`Error::Fabric`]; `-FI_EAGAIN` comes back as [`Posted::Again`].
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
    /// [`Error::Fabric`]; `-FI_EAGAIN` comes back as [`Posted::Again`].
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
    /// [`Error::Fabric`]; `-FI_EAGAIN` comes back as [`Posted::Again`].
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
