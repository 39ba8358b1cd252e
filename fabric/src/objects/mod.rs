//! RAII handles over libfabric objects: fabric, domain, completion queue, address
//! vector, endpoint.
//!
//! Each child holds a reference-counted handle to its parent, so the closing order
//! (endpoint -> CQ/AV/MR -> domain -> fabric) holds whatever order safe code drops
//! things in. The handles are `!Send`: the domain is opened with `FI_THREAD_DOMAIN`,
//! under which the application serializes access to every object of a domain. A
//! [`Messenger`](crate::Messenger) owns a whole tree and can therefore move between
//! threads as one.
//!
//! | File | Objects |
//! |---|---|
//! | `mod.rs` | [`OwnedFid`] (one open object and its parents), fabric, domain, address vector |
//! | `cq.rs` | the completion queue, its entries and error entries |
//! | `endpoint.rs` | the endpoint and its posting calls |

mod cq;
mod endpoint;

use std::cell::Cell;
use std::ptr::{self, NonNull};
use std::rc::Rc;

use steadfast_fabric_sys as sys;

use crate::error::{check, Error, Result};
use crate::info::Info;

pub use cq::{CompletionQueue, CqEntry, CqError, CqPoll};
pub use endpoint::{Endpoint, Posted};

/// A libfabric object: a struct whose first member is its `struct fid`.
pub(crate) trait FidObject {}

impl FidObject for sys::fid_fabric {}
impl FidObject for sys::fid_domain {}
impl FidObject for sys::fid_cq {}
impl FidObject for sys::fid_av {}
impl FidObject for sys::fid_ep {}

/// The `struct fid` of an object: `&(*object).fid`, computed without a reference.
pub(crate) fn fid_of<T: FidObject>(object: *mut T) -> *mut sys::fid {
    // Every libfabric object struct begins with its `struct fid` (`fid_fabric.fid`,
    // `fid_domain.fid`, ...): the object's address is its fid's.
    object.cast()
}

/// One open libfabric object of type `T`, holding `P` (handles of its parents) open
/// until it is closed: when the last handle drops, or earlier by
/// [`close_now`](Self::close_now).
pub(crate) struct OwnedFid<T: FidObject, P> {
    ptr: NonNull<T>,
    /// Set once the object was closed before drop: every later use is an error.
    closed: Cell<bool>,
    _parents: P,
}

impl<T: FidObject, P> OwnedFid<T, P> {
    /// Takes ownership of the object `call` just opened.
    ///
    /// # Errors
    /// [`Error::Fabric`] when the provider returned success with a null object.
    fn new(call: &'static str, ptr: *mut T, parents: P) -> Result<Self> {
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::Fabric {
            call,
            code: sys::FI_EOTHER,
            message: "the provider returned a null object".into(),
        })?;
        Ok(OwnedFid {
            ptr,
            closed: Cell::new(false),
            _parents: parents,
        })
    }

    /// The object, for calls that need it open: only valid until
    /// [`close_now`](Self::close_now), so only for objects never closed early.
    pub(crate) fn ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// The object if still open, else [`Error::Broken`].
    pub(crate) fn live(&self) -> Result<*mut T> {
        if self.closed.get() {
            return Err(Error::Broken {
                reason: "the endpoint was closed to fence a buffer the provider kept",
            });
        }
        Ok(self.ptr.as_ptr())
    }

    /// Closes the object now (`call` names it in the error); a second call does
    /// nothing.
    ///
    /// # Errors
    /// [`Error::Fabric`] when `fi_close` refuses; the object then stays open.
    pub(crate) fn close_now(&self, call: &'static str) -> Result<()> {
        if self.closed.get() {
            return Ok(());
        }
        // SAFETY: the object is open (not closed yet); after a successful close no
        // handle uses it again, since `live` refuses from now on and Drop skips it.
        let ret = unsafe { sys::fi_close(fid_of(self.ptr.as_ptr())) };
        check(call, ret as i64)?;
        self.closed.set(true);
        Ok(())
    }
}

impl<T: FidObject, P> Drop for OwnedFid<T, P> {
    fn drop(&mut self) {
        if self.closed.get() {
            return;
        }
        // SAFETY: opened by its fi_* call and not closed yet; every child holds an Rc
        // of this object (through `_parents`), so none is alive any more.
        let ret = unsafe { sys::fi_close(fid_of(self.ptr.as_ptr())) };
        if ret != 0 {
            // A close error during teardown has no useful handling.
            log::warn!(
                "steadfast-fabric: fi_close failed: {}",
                crate::error::fi_error_text(ret as i64)
            );
        }
    }
}

/// An open fabric (`fi_fabric`).
#[derive(Clone)]
pub struct Fabric(Rc<OwnedFid<sys::fid_fabric, ()>>);

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
        Ok(Fabric(Rc::new(OwnedFid::new("fi_fabric", fid, ())?)))
    }
}

/// An open access domain (`fi_domain`): where memory is registered and endpoints live.
#[derive(Clone)]
pub struct Domain(Rc<OwnedFid<sys::fid_domain, Fabric>>);

impl Domain {
    /// Opens the domain described by `info` on `fabric`.
    ///
    /// # Errors
    /// [`Error::Fabric`] when the provider refuses.
    pub fn open(fabric: &Fabric, info: &Info) -> Result<Self> {
        let mut fid: *mut sys::fid_domain = ptr::null_mut();
        // SAFETY: the fabric is open; info.raw() is valid for the call.
        let ret = unsafe { sys::fi_domain(fabric.0.ptr(), info.raw(), &mut fid, ptr::null_mut()) };
        check("fi_domain", ret as i64)?;
        Ok(Domain(Rc::new(OwnedFid::new(
            "fi_domain",
            fid,
            fabric.clone(),
        )?)))
    }

    pub(crate) fn raw(&self) -> *mut sys::fid_domain {
        self.0.ptr()
    }
}

/// An address vector (`fi_av_open`): maps peers' raw endpoint names to `fi_addr_t`.
#[derive(Clone)]
pub struct AddressVector(Rc<OwnedFid<sys::fid_av, Domain>>);

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
        Ok(AddressVector(Rc::new(OwnedFid::new(
            "fi_av_open",
            fid,
            domain.clone(),
        )?)))
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
                self.0.ptr(),
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

    /// Removes one address inserted before (a peer's replaced incarnation).
    ///
    /// # Errors
    /// [`Error::Fabric`] when the provider refuses.
    pub fn remove(&self, fi_addr: sys::fi_addr_t) -> Result<()> {
        let mut address = fi_addr;
        // SAFETY: the AV is open; `address` is one fi_addr_t the call reads.
        let ret = unsafe { sys::fi_av_remove(self.0.ptr(), &mut address, 1, 0) };
        check("fi_av_remove", ret as i64).map(|_| ())
    }

    pub(crate) fn raw(&self) -> *mut sys::fid_av {
        self.0.ptr()
    }
}
