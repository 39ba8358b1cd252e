//! One-sided operations: exposing memory, RMA read/write into a peer's exposed region,
//! and u64 atomics (fetch-add, compare-and-swap) where the provider has them.

use crate::error::{Error, Result};
use crate::mr::{Access, MemoryRegion};
use crate::PeerId;

use steadfast_fabric_sys as sys;

use super::slots::{Completion, Op};
use super::Messenger;

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

/// Memory exposed to peers for RMA and atomics, borrowed for as long as it is exposed.
///
/// Peers may write it at any time while it exists: read it through
/// [`as_slice`](Self::as_slice) only after the peers said (by a message) that they are
/// done, as with an MPI window.
pub struct ExposedRegion<'a> {
    region: MemoryRegion,
    buf: &'a mut [u8],
    remote: RemoteRegion,
}

impl ExposedRegion<'_> {
    /// The descriptor to send to peers.
    pub fn remote(&self) -> RemoteRegion {
        self.remote
    }

    /// The memory.
    pub fn as_slice(&self) -> &[u8] {
        self.buf
    }

    /// The memory, for local writes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.buf
    }

    /// The registration.
    pub fn region(&self) -> &MemoryRegion {
        &self.region
    }
}

impl Messenger {
    /// Registers `buf` for remote reads, writes and atomics.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty buffer; [`Error::Fabric`] when
    /// registration fails.
    pub fn expose<'a>(&mut self, buf: &'a mut [u8]) -> Result<ExposedRegion<'a>> {
        if buf.is_empty() {
            return Err(Error::InvalidArgument(
                "cannot expose an empty buffer".into(),
            ));
        }
        let key = 0x5f00_0000 + u64::from(self.config.local_id) * 0x1_0000 + self.exposed_count;
        self.exposed_count += 1;
        // SAFETY: the region borrows buf for 'a, so the memory stays mapped while the
        // region (dropped with the ExposedRegion) is open.
        let region = unsafe {
            MemoryRegion::register(
                &self.domain,
                &self.endpoint,
                self.mr_mode,
                buf.as_ptr(),
                buf.len(),
                Access::ALL,
                key,
            )?
        };
        let remote = RemoteRegion {
            addr: region.remote_address(self.mr_mode, buf.as_ptr() as usize),
            key: region.key(),
            len: buf.len() as u64,
        };
        Ok(ExposedRegion {
            region,
            buf,
            remote,
        })
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
        remote.check_range(offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let dest = self.peer_addr(peer)?;
        let index = self.slots.take(Op::Rma, Some(peer))?;
        let result = self.post_rma(
            index,
            data.as_ptr().cast_mut(),
            data.len(),
            |m, buf, len, desc, ctx| {
                let at = remote.addr + offset;
                // SAFETY: data outlives the operation: post_rma waits for completion.
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
        );
        result.map(|_| ())
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
        remote.check_range(offset, buf.len())?;
        if buf.is_empty() {
            return Ok(());
        }
        let src = self.peer_addr(peer)?;
        let index = self.slots.take(Op::Rma, Some(peer))?;
        let result = self.post_rma(
            index,
            buf.as_mut_ptr(),
            buf.len(),
            |m, ptr, len, desc, ctx| {
                // SAFETY: buf outlives the operation: post_rma waits for completion.
                unsafe {
                    m.endpoint
                        .post_read(ptr, len, desc, src, remote.addr + offset, remote.key, ctx)
                }
            },
        );
        result.map(|_| ())
    }

    /// Posts an RMA operation from a taken slot and waits for it.
    fn post_rma(
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
    ) -> Result<Completion> {
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
        let request = self.request(index);
        self.wait_blocking(request)
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
