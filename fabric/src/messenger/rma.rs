//! One-sided operations: exposing memory, RMA read/write into a peer's exposed region,
//! and u64 atomics (fetch-add, compare-and-swap) where the provider has them.

use crate::error::{Error, Result};
use crate::mr::{Access, MemoryRegion};
use crate::PeerId;

use steadfast_fabric_sys as sys;

use super::slots::{Completion, Op};
use super::{Messenger, Request};

/// What a peer needs to access an exposed region: base address, key and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteRegion {
    /// Address of the region's first byte as the provider wants it (virtual address or 0).
    pub addr: u64,
    /// Access key.
    pub key: u64,
    /// Length in bytes.
    pub len: u64,
}

impl RemoteRegion {
    /// Encoded length.
    pub const ENCODED_LEN: usize = 24;

    /// Encodes to 24 little-endian bytes.
    pub fn to_bytes(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0u8; Self::ENCODED_LEN];
        out[0..8].copy_from_slice(&self.addr.to_le_bytes());
        out[8..16].copy_from_slice(&self.key.to_le_bytes());
        out[16..24].copy_from_slice(&self.len.to_le_bytes());
        out
    }

    /// Decodes 24 bytes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a wrong length.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != Self::ENCODED_LEN {
            return Err(Error::InvalidArgument(format!(
                "remote region descriptor of {} bytes, expected 24",
                bytes.len()
            )));
        }
        let at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        Ok(RemoteRegion {
            addr: at(0),
            key: at(8),
            len: at(16),
        })
    }

    fn check_range(&self, offset: u64, len: usize) -> Result<()> {
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > self.len)
        {
            return Err(Error::InvalidArgument(format!(
                "{len} bytes at offset {offset} exceed the remote region of {} bytes",
                self.len
            )));
        }
        Ok(())
    }
}

/// A registration of memory for remote access, made by [`Messenger::expose`].
///
/// The registration itself lives inside the messenger (so that none of the messenger's
/// libfabric handles ever leaves it, whichever thread it moves to); this is its handle,
/// closed by [`Messenger::unexpose`]. Dropping a handle without closing it leaves the
/// registration open until the messenger is dropped.
#[derive(Debug)]
#[must_use = "an exposure stays open until Messenger::unexpose"]
pub struct Exposure {
    messenger: u64,
    index: usize,
    remote: RemoteRegion,
}

impl Exposure {
    /// The descriptor to send to peers.
    pub fn remote(&self) -> RemoteRegion {
        self.remote
    }
}

/// Memory exposed to peers that the exposure owns (from [`Messenger::expose_owned`]).
///
/// Peers may write the memory at any time while it is exposed, so no Rust reference to
/// it is handed out: [`read`](Self::read) and [`write`](Self::write) copy through raw
/// pointers (what they see of a concurrent remote write is unspecified: read after the
/// peers said, by a message, that they are done). Sound whatever the caller does: an
/// `ExposedBuffer` dropped or leaked without [`Messenger::unexpose_owned`] leaks its
/// memory, which the registration may still reach, instead of freeing it.
///
/// ```no_run
/// # fn demo(m: &mut steadfast_fabric::Messenger) -> steadfast_fabric::Result<()> {
/// let exposed = m.expose_owned(vec![0u8; 4096])?;
/// let descriptor = exposed.remote(); // send it to the peers
/// # let _ = descriptor;
/// // ... the peers write, then say so ...
/// let mut first = [0u8; 8];
/// exposed.read(0, &mut first)?;
/// let buffer: Vec<u8> = m.unexpose_owned(exposed)?; // registration closed first
/// # let _ = buffer;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "an exposed buffer leaks unless given back with Messenger::unexpose_owned"]
pub struct ExposedBuffer {
    exposure: Exposure,
    base: *mut u8,
    len: usize,
    capacity: usize,
}

impl ExposedBuffer {
    /// The descriptor to send to peers.
    pub fn remote(&self) -> RemoteRegion {
        self.exposure.remote
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty (never: empty buffers cannot be exposed).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `out.len()` bytes at `offset` out of the buffer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the range exceeds the buffer.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        check_range(offset, out.len(), self.len)?;
        // SAFETY: the range is inside the buffer, which this value owns and never frees
        // while the registration may be open; no Rust reference to it exists, and `out`
        // is the caller's own buffer.
        unsafe { std::ptr::copy(self.base.add(offset), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Copies `data` into the buffer at `offset`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the range exceeds the buffer.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        check_range(offset, data.len(), self.len)?;
        // SAFETY: as in `read`; ptr::copy tolerates overlap.
        unsafe { std::ptr::copy(data.as_ptr(), self.base.add(offset), data.len()) };
        Ok(())
    }
}

fn check_range(offset: usize, len: usize, size: usize) -> Result<()> {
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(Error::InvalidArgument(format!(
            "{len} bytes at offset {offset} exceed the exposed region of {size} bytes"
        )));
    }
    Ok(())
}

impl Messenger {
    /// Registers `len` bytes at `base` for remote reads, writes and atomics.
    ///
    /// # Safety
    /// Peers may write the memory until [`unexpose`](Self::unexpose) closes the
    /// registration (or the messenger is dropped): until then it must stay allocated
    /// and mapped, and this process may touch it only through raw pointers (no Rust
    /// reference may be alive while a peer can write). Prefer the safe
    /// [`expose_owned`](Self::expose_owned).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty range; [`Error::Fabric`] when
    /// registration fails.
    pub unsafe fn expose(&mut self, base: *mut u8, len: usize) -> Result<Exposure> {
        if len == 0 {
            return Err(Error::InvalidArgument(
                "cannot expose an empty buffer".into(),
            ));
        }
        let key = 0x5f00_0000 + u64::from(self.config.local_id) * 0x1_0000 + self.exposed_count;
        self.exposed_count += 1;
        // SAFETY: the memory stays mapped while the region is open: this function's
        // contract (the region stays in `self.exposures` until `unexpose`).
        let region = unsafe {
            MemoryRegion::register(
                &self.domain,
                &self.endpoint,
                self.mr_mode,
                base,
                len,
                Access::ALL,
                key,
            )?
        };
        let remote = RemoteRegion {
            addr: region.remote_address(self.mr_mode, base as usize),
            key: region.key(),
            len: len as u64,
        };
        let index = match self.exposures.iter().position(Option::is_none) {
            Some(free) => {
                self.exposures[free] = Some(region);
                free
            }
            None => {
                self.exposures.push(Some(region));
                self.exposures.len() - 1
            }
        };
        Ok(Exposure {
            messenger: self.id,
            index,
            remote,
        })
    }

    /// Closes a registration made by [`expose`](Self::expose): peers can no longer
    /// access the memory once this returns.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `exposure` belongs to another messenger.
    pub fn unexpose(&mut self, exposure: Exposure) -> Result<()> {
        if exposure.messenger != self.id {
            return Err(Error::InvalidArgument(
                "the exposure belongs to another messenger".into(),
            ));
        }
        // Dropping the region closes it (fi_close).
        self.exposures[exposure.index].take();
        Ok(())
    }

    /// Registers `buf` for remote reads, writes and atomics; the exposure owns the
    /// buffer until [`unexpose_owned`](Self::unexpose_owned) gives it back.
    ///
    /// # Errors
    /// As [`expose`](Self::expose).
    pub fn expose_owned(&mut self, buf: Vec<u8>) -> Result<ExposedBuffer> {
        let mut buf = std::mem::ManuallyDrop::new(buf);
        let (base, len, capacity) = (buf.as_mut_ptr(), buf.len(), buf.capacity());
        // SAFETY: the memory belongs to the ExposedBuffer from here on, which frees it
        // only in `unexpose_owned`, after the registration closed, and leaks it
        // otherwise; it hands out no references to it.
        match unsafe { self.expose(base, len) } {
            Ok(exposure) => Ok(ExposedBuffer {
                exposure,
                base,
                len,
                capacity,
            }),
            Err(err) => {
                // SAFETY: nothing was registered; the parts are the Vec's own.
                drop(unsafe { Vec::from_raw_parts(base, len, capacity) });
                Err(err)
            }
        }
    }

    /// Closes the registration of `buf`, then gives the memory back.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `buf` was exposed by another messenger (it is
    /// then leaked, since that messenger may still expose it).
    pub fn unexpose_owned(&mut self, buf: ExposedBuffer) -> Result<Vec<u8>> {
        let ExposedBuffer {
            exposure,
            base,
            len,
            capacity,
        } = buf;
        self.unexpose(exposure)?;
        // SAFETY: base/len/capacity are the parts of the Vec given to `expose_owned`,
        // whose registration is now closed: nothing else refers to the memory.
        Ok(unsafe { Vec::from_raw_parts(base, len, capacity) })
    }

    /// Writes `data` into `peer`'s region at `offset`, returning when `data` may be
    /// reused (remote completion is not implied; follow with a message).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] out of range; [`Error::PeerUnreachable`].
    pub fn rma_write(
        &mut self,
        peer: PeerId,
        data: &[u8],
        remote: &RemoteRegion,
        offset: u64,
    ) -> Result<()> {
        self.write_to(peer, data, remote, offset, false)
    }

    /// Writes `data` into `peer`'s region at `offset`, returning when the data is in
    /// the peer's memory (`FI_DELIVERY_COMPLETE`): a later message of any kind finds
    /// it there.
    ///
    /// # Errors
    /// As [`rma_write`](Self::rma_write).
    pub fn rma_write_delivered(
        &mut self,
        peer: PeerId,
        data: &[u8],
        remote: &RemoteRegion,
        offset: u64,
    ) -> Result<()> {
        self.write_to(peer, data, remote, offset, true)
    }

    fn write_to(
        &mut self,
        peer: PeerId,
        data: &[u8],
        remote: &RemoteRegion,
        offset: u64,
        delivered: bool,
    ) -> Result<()> {
        // SAFETY: `data` is borrowed until the request is waited for, here.
        match unsafe { self.start_write(peer, data, remote, offset, delivered) }? {
            Some(request) => self.wait_blocking(request).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Starts [`rma_write_delivered`](Self::rma_write_delivered) without waiting for
    /// it; `None` when there is nothing to write. Finish the request with
    /// [`test`](Self::test) (until it returns `Some` or an error),
    /// [`wait`](Self::wait) or [`cancel`](Self::cancel). A caller that waits with
    /// `test` keeps doing its own work (a runtime's heartbeats) meanwhile.
    ///
    /// # Errors
    /// As [`rma_write`](Self::rma_write).
    ///
    /// # Safety
    /// The NIC reads `data` until the request has finished: the memory must stay valid
    /// and unchanged until `test` returned `Some` or an error, or `wait` or `cancel`
    /// returned (a leaked request keeps it in use for good).
    pub unsafe fn start_rma_write_delivered(
        &mut self,
        peer: PeerId,
        data: &[u8],
        remote: &RemoteRegion,
        offset: u64,
    ) -> Result<Option<Request>> {
        // SAFETY: forwarded to the caller.
        unsafe { self.start_write(peer, data, remote, offset, true) }
    }

    /// Posts a write; see [`start_rma_write_delivered`](Self::start_rma_write_delivered).
    ///
    /// # Safety
    /// As `start_rma_write_delivered`.
    unsafe fn start_write(
        &mut self,
        peer: PeerId,
        data: &[u8],
        remote: &RemoteRegion,
        offset: u64,
        delivered: bool,
    ) -> Result<Option<Request>> {
        remote.check_range(offset, data.len())?;
        if data.is_empty() {
            return Ok(None);
        }
        let dest = self.peer_addr(peer)?;
        let index = self.slots.take(Op::Rma, Some(peer))?;
        self.start_rma(
            index,
            data.as_ptr().cast_mut(),
            data.len(),
            |m, buf, len, desc, ctx| {
                let at = remote.addr + offset;
                // SAFETY: the caller keeps `data` until the request finishes.
                unsafe {
                    if delivered {
                        m.endpoint
                            .post_write_delivered(buf, len, desc, dest, at, remote.key, ctx)
                    } else {
                        m.endpoint
                            .post_write(buf, len, desc, dest, at, remote.key, ctx)
                    }
                }
            },
        )
        .map(Some)
    }

    /// Reads `buf.len()` bytes of `peer`'s region at `offset` into `buf`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] out of range; [`Error::PeerUnreachable`].
    pub fn rma_read(
        &mut self,
        peer: PeerId,
        buf: &mut [u8],
        remote: &RemoteRegion,
        offset: u64,
    ) -> Result<()> {
        // SAFETY: `buf` is borrowed until the request is waited for, here.
        match unsafe { self.start_rma_read(peer, buf, remote, offset) }? {
            Some(request) => self.wait_blocking(request).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Starts [`rma_read`](Self::rma_read) without waiting for it; `None` when there is
    /// nothing to read. Finish the request as
    /// [`start_rma_write_delivered`](Self::start_rma_write_delivered) says.
    ///
    /// # Errors
    /// As [`rma_read`](Self::rma_read).
    ///
    /// # Safety
    /// The NIC writes `buf` until the request has finished: the memory must stay valid
    /// and untouched until `test` returned `Some` or an error, or `wait` or `cancel`
    /// returned (a leaked request keeps it in use for good).
    pub unsafe fn start_rma_read(
        &mut self,
        peer: PeerId,
        buf: &mut [u8],
        remote: &RemoteRegion,
        offset: u64,
    ) -> Result<Option<Request>> {
        remote.check_range(offset, buf.len())?;
        if buf.is_empty() {
            return Ok(None);
        }
        let src = self.peer_addr(peer)?;
        let index = self.slots.take(Op::Rma, Some(peer))?;
        self.start_rma(
            index,
            buf.as_mut_ptr(),
            buf.len(),
            |m, ptr, len, desc, ctx| {
                // SAFETY: the caller keeps `buf` until the request finishes.
                unsafe {
                    m.endpoint
                        .post_read(ptr, len, desc, src, remote.addr + offset, remote.key, ctx)
                }
            },
        )
        .map(Some)
    }

    /// Posts an RMA operation from a taken slot and waits for it.
    fn post_rma(
        &mut self,
        index: u32,
        buf: *mut u8,
        len: usize,
        post: impl FnMut(
            &mut Self,
            *mut u8,
            usize,
            *mut std::ffi::c_void,
            *mut std::ffi::c_void,
        ) -> Result<crate::Posted>,
    ) -> Result<Completion> {
        let request = self.start_rma(index, buf, len, post)?;
        self.wait_blocking(request)
    }

    /// Posts an RMA operation from a taken slot (released again on an error).
    fn start_rma(
        &mut self,
        index: u32,
        buf: *mut u8,
        len: usize,
        mut post: impl FnMut(
            &mut Self,
            *mut u8,
            usize,
            *mut std::ffi::c_void,
            *mut std::ffi::c_void,
        ) -> Result<crate::Posted>,
    ) -> Result<Request> {
        let peer = self.slots.get(index).peer;
        let slot = self.slots.get_mut(index);
        slot.buf = buf;
        slot.len = len;
        let (desc, mr) = match self.local_desc(buf, len) {
            Ok(d) => d,
            Err(e) => {
                self.slots.release(index);
                return Err(e);
            }
        };
        self.slots.get_mut(index).mr = mr;
        let ctx = self.slots.context(index);
        if let Err(e) = self.retry_post(peer, |m| post(m, buf, len, desc, ctx)) {
            if let Some(mr) = self.slots.get_mut(index).mr.take() {
                self.cache.release(mr);
            }
            self.slots.release(index);
            return Err(e);
        }
        self.slots.get_mut(index).posted = true;
        Ok(self.request(index))
    }

    fn check_atomic(&self, op: sys::fi_op, flags: u64, what: &str) -> Result<()> {
        let _ = (op, flags);
        if !self.info.has_atomics() {
            return Err(Error::Unsupported {
                provider: self.info.provider_name(),
                what: what.into(),
            });
        }
        Ok(())
    }

    /// Turns a provider's refusal of an atomic (`EOPNOTSUPP`, `ENOSYS`) into
    /// [`Error::Unsupported`].
    fn unsupported_if_refused(&self, result: Result<Completion>) -> Result<Completion> {
        match result {
            Err(Error::Fabric { code, message, .. })
                if code == sys::FI_EOPNOTSUPP || code == sys::FI_ENOSYS =>
            {
                Err(Error::Unsupported {
                    provider: self.info.provider_name(),
                    what: format!("u64 atomic ({message})"),
                })
            }
            other => other,
        }
    }

    fn check_atomic_target(remote: &RemoteRegion, offset: u64) -> Result<()> {
        remote.check_range(offset, 8)?;
        if (remote.addr + offset) % 8 != 0 && offset % 8 != 0 {
            return Err(Error::InvalidArgument(format!(
                "atomic target at offset {offset} is not 8-byte aligned"
            )));
        }
        Ok(())
    }

    /// Atomically adds `value` to the u64 at `offset` of `peer`'s region and returns the
    /// previous value.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the provider has no u64 fetch-add;
    /// [`Error::InvalidArgument`] for a misaligned or out-of-range target.
    pub fn fetch_add_u64(
        &mut self,
        peer: PeerId,
        remote: &RemoteRegion,
        offset: u64,
        value: u64,
    ) -> Result<u64> {
        self.check_atomic(sys::FI_SUM, sys::FI_FETCH_ATOMIC, "fetch-add on u64")?;
        Self::check_atomic_target(remote, offset)?;
        let dest = self.peer_addr(peer)?;
        let index = self.slots.take(Op::Rma, Some(peer))?;
        self.slots.get_mut(index).atomic = [value, 0, 0];
        let desc = self.bounce_desc();
        let completion = self.post_rma(index, std::ptr::null_mut(), 0, |m, _, _, _, ctx| {
            let atomic = m.slots.get_mut(index).atomic.as_mut_ptr();
            // SAFETY: operand and result live in the slot, which stays taken until the
            // completion is read; desc covers the slot table when registration is needed.
            unsafe {
                m.endpoint.post_fetch_atomic_u64(
                    atomic,
                    desc,
                    atomic.add(2),
                    desc,
                    dest,
                    remote.addr + offset,
                    remote.key,
                    sys::FI_SUM,
                    ctx,
                )
            }
        });
        self.unsupported_if_refused(completion).map(|c| c.value)
    }

    /// Atomically replaces the u64 at `offset` of `peer`'s region with `new` if it
    /// equals `expected`; returns the value found.
    ///
    /// # Errors
    /// As [`fetch_add_u64`](Self::fetch_add_u64).
    pub fn compare_swap_u64(
        &mut self,
        peer: PeerId,
        remote: &RemoteRegion,
        offset: u64,
        expected: u64,
        new: u64,
    ) -> Result<u64> {
        self.check_atomic(
            sys::FI_CSWAP,
            sys::FI_COMPARE_ATOMIC,
            "compare-and-swap on u64",
        )?;
        Self::check_atomic_target(remote, offset)?;
        let dest = self.peer_addr(peer)?;
        let index = self.slots.take(Op::Rma, Some(peer))?;
        self.slots.get_mut(index).atomic = [new, expected, 0];
        let desc = self.bounce_desc();
        let completion = self.post_rma(index, std::ptr::null_mut(), 0, |m, _, _, _, ctx| {
            let atomic = m.slots.get_mut(index).atomic.as_mut_ptr();
            // SAFETY: as in fetch_add_u64, for all three values.
            unsafe {
                m.endpoint.post_compare_swap_u64(
                    atomic,
                    desc,
                    atomic.add(1),
                    desc,
                    atomic.add(2),
                    desc,
                    dest,
                    remote.addr + offset,
                    remote.key,
                    ctx,
                )
            }
        });
        self.unsupported_if_refused(completion).map(|c| c.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_region_round_trip_and_range() {
        let r = RemoteRegion {
            addr: 0x1000,
            key: 9,
            len: 64,
        };
        assert_eq!(RemoteRegion::from_bytes(&r.to_bytes()).unwrap(), r);
        assert!(RemoteRegion::from_bytes(&[0; 23]).is_err());
        assert!(r.check_range(0, 64).is_ok());
        assert!(r.check_range(1, 64).is_err());
        assert!(r.check_range(u64::MAX, 1).is_err());
    }
}
