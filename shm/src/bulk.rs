//! Bulk copies into and out of ring cells with the processor's string move.
//!
//! A cell's bytes are shared with another process. Copying them word by word through
//! `AtomicU64` keeps a misbehaving peer from causing a data race the compiler could
//! exploit, but it moves 8 bytes per instruction: a 2 KiB eager message is 256 stores,
//! and the store buffer holds fewer cache lines in flight than with wider moves.
//!
//! On x86-64 the copy is a loop of 16-byte moves in inline assembly (16 bytes or more;
//! shorter ones stay word by word). The assembly is opaque to
//! the compiler, so its accesses are not Rust accesses it could reason about: a peer
//! writing the same bytes at the same time (only a misbehaving one: cells are published
//! by the ring's Release/Acquire stamps) yields garbage bytes, which the decoder and the
//! length checks already tolerate, never undefined behaviour. Elsewhere, and under loom
//! or Miri (which cannot run the assembly), the word-by-word copy stays.

#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
mod imp {
    /// Copies `len` (at least 16) bytes from `src` to `dst` in 16-byte moves (SSE2,
    /// which every x86-64 has), the last one overlapping the one before when `len` is
    /// not a multiple of 16. (`rep movsb` moved 8-64 KiB messages as fast but cost
    /// 10-20% at 64 B-1 KiB: its start-up is paid per cell.)
    ///
    /// # Safety
    /// `len >= 16`; `src` is valid for reads and `dst` for writes of `len` bytes, and
    /// the two ranges do not overlap.
    #[inline(always)]
    pub(crate) unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) {
        debug_assert!(len >= 16);
        // SAFETY: the caller's contract: every access lies in `src[..len]` or
        // `dst[..len]` (offsets below `len - 16`, then `len - 16` itself); unaligned
        // 16-byte moves need no alignment; no flags or stack are used.
        unsafe {
            core::arch::asm!(
                "xor {i}, {i}",
                "2:",
                "movups {x}, xmmword ptr [{src} + {i}]",
                "movups xmmword ptr [{dst} + {i}], {x}",
                "add {i}, 16",
                "cmp {i}, {last}",
                "jb 2b",
                "movups {x}, xmmword ptr [{src} + {last}]",
                "movups xmmword ptr [{dst} + {last}], {x}",
                src = in(reg) src,
                dst = in(reg) dst,
                last = in(reg) len - 16,
                i = out(reg) _,
                x = out(xmm_reg) _,
                options(nostack)
            );
        }
    }
}

#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
pub(crate) use imp::copy;
