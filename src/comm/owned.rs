//! Non-blocking operations that own their buffers: [`Comm::isend_owned`] and
//! [`Comm::irecv_owned`].
//!
//! A transport or a peer may touch the buffer of a pending operation at any time (a
//! posted fabric receive, an RMA read of a rendezvous send, a peer's single-copy read).
//! The borrowed variants ([`Comm::isend`], [`Comm::irecv`]) rely on the request being
//! waited for or dropped, which safe code cannot promise (`mem::forget`), so they are
//! `unsafe`. These variants take the buffer by value and give it back on completion, as
//! tokio-uring and rust-ibverbs do: a request that is leaked leaks its buffer with it,
//! so nothing ever writes into freed or reused memory.
//!
//! ```no_run
//! # fn demo(comm: &steadfast::Comm) -> Result<(), steadfast::CommError> {
//! let peer = 1 - comm.rank();
//! let recv = comm.irecv_owned(Some(peer), Some(7), vec![0u8; 1 << 20])?;
//! let send = comm.isend_owned(peer, 7, vec![42u8; 1 << 20])?;
//! let (outbox, sent) = send.wait();
//! let (inbox, status) = recv.wait();
//! sent?;
//! assert_eq!(status?.len, inbox.len());
//! # drop(outbox);
//! # Ok(()) }
//! ```
//!
//! The buffer is moved into the request, so it cannot be touched while the operation
//! is pending:
//!
//! ```compile_fail
//! # fn demo(comm: &steadfast::Comm) {
//! let mut buf = vec![0u8; 64];
//! let recv = comm.irecv_owned(None, None, buf).unwrap();
//! buf[0] = 1; // error: `buf` was moved into the request
//! # }
//! ```

use std::marker::PhantomData;
use std::sync::Arc;

use super::nonblocking::RecvRequest;
use super::send_request::SendRequest;
use super::{Comm, CommError, Status};

/// The raw parts of an owned buffer while an operation holds it.
#[derive(Clone, Copy, Debug)]
pub struct RawBuf {
    /// First byte.
    pub ptr: *mut u8,
    /// Length in bytes.
    pub len: usize,
    /// Whatever else the owner needs to rebuild itself (a `Vec`'s capacity).
    pub extra: usize,
}

/// A buffer that an operation can own while a transport or a peer reads it.
///
/// # Safety
/// [`into_raw`](Self::into_raw) must return a pointer valid for reads of `len` bytes
/// that stays valid, at that address and unchanged by anyone else, until
/// [`from_raw`](Self::from_raw) rebuilds the value from the same parts; never calling
/// `from_raw` (a leaked request) must leave the memory allocated.
pub unsafe trait IoBuf: Sized {
    /// Gives up the buffer for the operation.
    fn into_raw(self) -> RawBuf;

    /// Takes the buffer back.
    ///
    /// # Safety
    /// `raw` comes from `into_raw` of this type and is used once.
    unsafe fn from_raw(raw: RawBuf) -> Self;
}

/// A buffer that an operation can own while a transport or a peer writes it.
///
/// # Safety
/// As [`IoBuf`], and the pointer is also valid for writes of `len` bytes.
pub unsafe trait IoBufMut: IoBuf {}

// SAFETY: a Vec's heap memory does not move when the Vec's parts are taken apart, and
// stays allocated until the Vec is rebuilt and dropped.
unsafe impl IoBuf for Vec<u8> {
    fn into_raw(self) -> RawBuf {
        let mut v = std::mem::ManuallyDrop::new(self);
        RawBuf {
            ptr: v.as_mut_ptr(),
            len: v.len(),
            extra: v.capacity(),
        }
    }

    unsafe fn from_raw(raw: RawBuf) -> Self {
        // SAFETY: the parts of a Vec<u8> taken apart by `into_raw` (contract).
        unsafe { Vec::from_raw_parts(raw.ptr, raw.len, raw.extra) }
    }
}

// SAFETY: writable: the Vec was owned exclusively.
unsafe impl IoBufMut for Vec<u8> {}

// SAFETY: as for Vec: Box::into_raw keeps the allocation until Box::from_raw.
unsafe impl IoBuf for Box<[u8]> {
    fn into_raw(self) -> RawBuf {
        let len = self.len();
        RawBuf {
            ptr: Box::into_raw(self).cast::<u8>(),
            len,
            extra: 0,
        }
    }

    unsafe fn from_raw(raw: RawBuf) -> Self {
        let slice = std::ptr::slice_from_raw_parts_mut(raw.ptr, raw.len);
        // SAFETY: the pointer and length of a Box<[u8]> given up by `into_raw`.
        unsafe { Box::from_raw(slice) }
    }
}

// SAFETY: writable: the Box was owned exclusively.
unsafe impl IoBufMut for Box<[u8]> {}

// SAFETY: Arc::into_raw keeps the allocation (one strong count) until Arc::from_raw;
// the bytes are only read, as every holder of an Arc<[u8]> may.
unsafe impl IoBuf for Arc<[u8]> {
    fn into_raw(self) -> RawBuf {
        let len = self.len();
        RawBuf {
            ptr: Arc::into_raw(self).cast::<u8>().cast_mut(),
            len,
            extra: 0,
        }
    }

    unsafe fn from_raw(raw: RawBuf) -> Self {
        let slice = std::ptr::slice_from_raw_parts(raw.ptr.cast_const(), raw.len);
        // SAFETY: the pointer and length of an Arc<[u8]> given up by `into_raw`.
        unsafe { Arc::from_raw(slice) }
    }
}

// SAFETY: static memory is valid for ever and only read.
unsafe impl IoBuf for &'static [u8] {
    fn into_raw(self) -> RawBuf {
        RawBuf {
            ptr: self.as_ptr().cast_mut(),
            len: self.len(),
            extra: 0,
        }
    }

    unsafe fn from_raw(raw: RawBuf) -> Self {
        // SAFETY: the parts of a &'static [u8] given up by `into_raw`.
        unsafe { std::slice::from_raw_parts(raw.ptr.cast_const(), raw.len) }
    }
}

/// A receive that owns its buffer (from [`Comm::irecv_owned`]).
#[must_use = "a receive request must be tested or waited for"]
pub struct OwnedRecvRequest<B: IoBufMut> {
    /// Dropped (cancelled, the transport lets go) before the buffer is rebuilt.
    inner: Option<RecvRequest<'static>>,
    raw: Option<RawBuf>,
    /// The outcome once known (a test that finished it).
    outcome: Option<Result<Status, CommError>>,
    _buf: PhantomData<B>,
}

// SAFETY: the request owns the buffer `B` (by raw parts) and a `RecvRequest` (Send):
// moving it moves the ownership of `B`, so it is Send when `B` is.
unsafe impl<B: IoBufMut + Send> Send for OwnedRecvRequest<B> {}
// SAFETY: a shared reference gives nothing but `Debug` (the outcome); the buffer is
// reached only through `&mut self` or by value.
unsafe impl<B: IoBufMut + Sync> Sync for OwnedRecvRequest<B> {}

impl<B: IoBufMut> std::fmt::Debug for OwnedRecvRequest<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedRecvRequest")
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

impl<B: IoBufMut> OwnedRecvRequest<B> {
    /// Progresses once; the status when the message has arrived (then
    /// [`wait`](Self::wait) returns at once with the buffer).
    ///
    /// # Errors
    /// As [`Comm::recv`].
    pub fn test(&mut self) -> Result<Option<Status>, CommError> {
        if let Some(outcome) = &self.outcome {
            return outcome.clone().map(Some);
        }
        let inner = self
            .inner
            .as_mut()
            .expect("pending until an outcome is known");
        match inner.test() {
            Ok(None) => Ok(None),
            // The receive stays posted (a wildcard receive with a failure pending).
            Err(err @ CommError::ProcFailedPending { .. }) => Err(err),
            done => {
                let done = done.map(|st| st.expect("finished"));
                self.outcome = Some(done.clone());
                done.map(Some)
            }
        }
    }

    /// Waits for the message; gives the buffer back whatever the outcome.
    pub fn wait(mut self) -> (B, Result<Status, CommError>) {
        let outcome = match self.outcome.take() {
            Some(outcome) => outcome,
            None => self.inner.take().expect("pending").wait(),
        };
        (self.take_buffer(), outcome)
    }

    fn take_buffer(&mut self) -> B {
        // The transport must let go first: dropping a pending request cancels it.
        self.inner.take();
        let raw = self.raw.take().expect("the buffer is taken once");
        // SAFETY: `raw` came from B::into_raw in `irecv_owned`, and is used once.
        unsafe { B::from_raw(raw) }
    }
}

impl<B: IoBufMut> Drop for OwnedRecvRequest<B> {
    fn drop(&mut self) {
        if self.raw.is_some() {
            drop(self.take_buffer());
        }
    }
}

/// A send that owns its buffer (from [`Comm::isend_owned`]).
#[must_use = "a send request must be tested or waited for"]
pub struct OwnedSendRequest<B: IoBuf> {
    /// Dropped before the buffer is rebuilt.
    inner: Option<SendRequest<'static>>,
    raw: Option<RawBuf>,
    outcome: Option<Result<(), CommError>>,
    _buf: PhantomData<B>,
}

// SAFETY: as for `OwnedRecvRequest`: it owns `B` and a `SendRequest` (Send).
unsafe impl<B: IoBuf + Send> Send for OwnedSendRequest<B> {}
// SAFETY: a shared reference gives nothing but `Debug`.
unsafe impl<B: IoBuf + Sync> Sync for OwnedSendRequest<B> {}

impl<B: IoBuf> std::fmt::Debug for OwnedSendRequest<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedSendRequest")
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

impl<B: IoBuf> OwnedSendRequest<B> {
    /// Progresses once; `true` when the send is complete (then
    /// [`wait`](Self::wait) returns at once with the buffer).
    ///
    /// # Errors
    /// As [`Comm::send`].
    pub fn test(&mut self) -> Result<bool, CommError> {
        if let Some(outcome) = &self.outcome {
            return outcome.clone().map(|()| true);
        }
        let inner = self
            .inner
            .as_mut()
            .expect("pending until an outcome is known");
        match inner.test() {
            Ok(false) => Ok(false),
            done => {
                let done = done.map(|_| ());
                self.outcome = Some(done.clone());
                done.map(|()| true)
            }
        }
    }

    /// Waits until the send is complete; gives the buffer back whatever the outcome.
    pub fn wait(mut self) -> (B, Result<(), CommError>) {
        let outcome = match self.outcome.take() {
            Some(outcome) => outcome,
            None => self.inner.take().expect("pending").wait(),
        };
        (self.take_buffer(), outcome)
    }

    fn take_buffer(&mut self) -> B {
        self.inner.take();
        let raw = self.raw.take().expect("the buffer is taken once");
        // SAFETY: `raw` came from B::into_raw in `isend_owned`, and is used once.
        unsafe { B::from_raw(raw) }
    }
}

impl<B: IoBuf> Drop for OwnedSendRequest<B> {
    fn drop(&mut self) {
        if self.raw.is_some() {
            drop(self.take_buffer());
        }
    }
}

impl Comm {
    /// Starts a receive into `buf`, which the request owns until it gives it back
    /// ([`OwnedRecvRequest::wait`]); see [`Comm::recv`] for the arguments.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad source or tag (the buffer is dropped).
    pub fn irecv_owned<B: IoBufMut>(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
        buf: B,
    ) -> Result<OwnedRecvRequest<B>, CommError> {
        let raw = buf.into_raw();
        // SAFETY: the memory is the request's until it rebuilds the buffer, after the
        // inner request is gone; a leaked request leaks the memory with it.
        let slice = unsafe { std::slice::from_raw_parts_mut(raw.ptr, raw.len) };
        // SAFETY: the inner request is dropped or completed before the buffer is
        // rebuilt (`take_buffer`), and never outlives the memory (leaked together).
        match unsafe { self.irecv(source, tag, slice) } {
            Ok(inner) => Ok(OwnedRecvRequest {
                inner: Some(inner),
                raw: Some(raw),
                outcome: None,
                _buf: PhantomData,
            }),
            Err(err) => {
                // SAFETY: nothing holds the memory; the parts are B's own, used once.
                drop(unsafe { B::from_raw(raw) });
                Err(err)
            }
        }
    }

    /// Starts a send of `buf` to `dest`, which the request owns until it gives it back
    /// ([`OwnedSendRequest::wait`]); see [`Comm::send`].
    ///
    /// # Errors
    /// As [`Comm::send`], for what is known at once (the buffer is dropped).
    pub fn isend_owned<B: IoBuf>(
        &self,
        dest: u32,
        tag: u32,
        buf: B,
    ) -> Result<OwnedSendRequest<B>, CommError> {
        let raw = buf.into_raw();
        // SAFETY: as in `irecv_owned`, read-only.
        let slice = unsafe { std::slice::from_raw_parts(raw.ptr.cast_const(), raw.len) };
        // SAFETY: as in `irecv_owned`.
        match unsafe { self.isend(dest, tag, slice) } {
            Ok(inner) => Ok(OwnedSendRequest {
                inner: Some(inner),
                raw: Some(raw),
                outcome: None,
                _buf: PhantomData,
            }),
            Err(err) => {
                // SAFETY: the failed isend holds nothing; the parts are B's own.
                drop(unsafe { B::from_raw(raw) });
                Err(err)
            }
        }
    }
}
