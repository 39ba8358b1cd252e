//! A buffer backed by one explicit huge page (`MAP_HUGETLB`), for the registration
//! test: NICs that register pages one by one (Aries, verbs) behave differently on huge
//! pages, which sites enable (`craype-hugepages2M`, `vm.nr_hugepages`).

/// One mapping of huge pages; unmapped on drop.
pub struct HugeBuffer {
    ptr: *mut u8,
    len: usize,
}

impl HugeBuffer {
    /// Maps `len` bytes (a multiple of the huge page size) of huge pages.
    ///
    /// # Errors
    /// The `mmap` error (`ENOMEM` when the pool has no free page).
    pub fn map(len: usize) -> std::io::Result<HugeBuffer> {
        // SAFETY: an anonymous private mapping at an address the kernel chooses; no
        // existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(HugeBuffer { ptr: p.cast(), len })
    }

    /// The mapping as bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr..ptr+len is a live read-write mapping owned by self, and the
        // &mut self borrow makes this the only view of it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for HugeBuffer {
    fn drop(&mut self) {
        // SAFETY: the mapping came from mmap with this length and no slice of it
        // outlives self (slices borrow self).
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}
