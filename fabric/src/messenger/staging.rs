//! Staging buffers: the messenger's own memory for eager messages that are copied
//! (small sends on providers that need registered buffers), and the control receives
//! kept posted for RTS/FIN traffic.

use crate::error::Result;
use crate::mr::{Access, MemoryRegion};

use super::slots::{Op, Staging, BOUNCE_LEN};
use super::Messenger;

impl Messenger {
    /// Allocates (and registers, if needed) the staging buffers for receives smaller
    /// than the eager limit.
    pub(super) fn allocate_staging(&mut self) -> Result<()> {
        if self.eager_limit <= BOUNCE_LEN || self.eager_limit > (1 << 20) {
            return Ok(());
        }
        for _ in 0..Self::STAGING_BUFFERS {
            let i = self.add_staging_buffer(self.eager_limit)?;
            self.staging_free.push(i);
        }
        Ok(())
    }

    /// Allocates (and registers, if needed) one staging buffer of `len` bytes, kept
    /// until the messenger is dropped; its index in the pool (not on the free list).
    pub(super) fn add_staging_buffer(&mut self, len: usize) -> Result<u16> {
        let buffer = vec![0u8; len].into_boxed_slice();
        if self.mr_mode.local() {
            // SAFETY: the buffer is heap memory kept until the messenger is dropped,
            // after this region (field order).
            let mr = unsafe {
                MemoryRegion::register(
                    &self.domain,
                    &self.endpoint,
                    self.mr_mode,
                    buffer.as_ptr(),
                    buffer.len(),
                    Access::ALL,
                    0,
                )?
            };
            self.staging_mrs.push(mr);
        }
        self.staging.push(buffer);
        Ok((self.staging.len() - 1) as u16)
    }

    /// Where a receive of `len` bytes lands first.
    pub(super) fn choose_staging(&mut self, len: usize) -> Staging {
        if len < self.eager_limit {
            if let Some(n) = self.staging_free.pop() {
                return Staging::Pool(n);
            }
        }
        if len < BOUNCE_LEN {
            Staging::Inline
        } else {
            Staging::Direct
        }
    }

    /// Pointer, capacity and descriptor of a staging area.
    pub(super) fn staging_area(
        &mut self,
        index: u32,
    ) -> Option<(*mut u8, usize, *mut std::ffi::c_void)> {
        match self.slots.get(index).staging {
            Staging::Direct => None,
            Staging::Inline => Some((
                self.slots.get_mut(index).bounce.as_mut_ptr(),
                BOUNCE_LEN,
                self.bounce_desc(),
            )),
            Staging::Pool(n) => {
                let desc = self
                    .staging_mrs
                    .get(n as usize)
                    .map_or(std::ptr::null_mut(), |mr| mr.desc());
                let buffer = &mut self.staging[n as usize];
                Some((buffer.as_mut_ptr(), buffer.len(), desc))
            }
        }
    }

    /// Returns a slot's staging buffer to the pool.
    pub(super) fn release_staging(&mut self, index: u32) {
        if let Staging::Pool(n) =
            std::mem::replace(&mut self.slots.get_mut(index).staging, Staging::Direct)
        {
            self.staging_free.push(n);
        }
    }

    /// Posts control receives until `count` are posted.
    pub(super) fn ensure_control_receives(&mut self, count: usize) -> Result<()> {
        while self.control_receives < count {
            let index = self.slots.take(Op::ControlRecv, None)?;
            self.slots.get_mut(index).detached = true;
            if let Err(e) = self.post_control_recv(index) {
                self.slots.release(index);
                return Err(e);
            }
            self.control_receives += 1;
        }
        Ok(())
    }
}
