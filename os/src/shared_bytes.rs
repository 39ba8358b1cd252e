//! Copies into and out of memory that other threads may copy into and out of at the
//! same time (a one-sided window's own bytes, reached by every thread holding the
//! window): byte by byte with relaxed atomic loads and stores, so that concurrent
//! copies are never a data race. What a copy sees of a concurrent one is unspecified
//! byte by byte, as MPI leaves conflicting accesses to a window; each byte is one of the
//! values written to it.
//!
//! Only byte-sized atomics are used: mixed-size atomic accesses to overlapping memory
//! are not allowed to race, and two copies at different offsets would overlap with
//! words of different alignment.
//!
//! # Example
//!
//! ```
//! use steadfast_os::shared_bytes;
//!
//! let mut memory = vec![0u8; 8];
//! let base = memory.as_mut_ptr();
//! // SAFETY: `base` points to 8 bytes that stay valid, reached only by these copies.
//! unsafe { shared_bytes::store(base.wrapping_add(2), b"abc") };
//! let mut out = [0u8; 3];
//! // SAFETY: as above.
//! unsafe { shared_bytes::load(base.wrapping_add(2), &mut out) };
//! assert_eq!(&out, b"abc");
//! ```

use std::sync::atomic::{AtomicU8, Ordering};

/// Copies `data` to `dst` with relaxed byte stores.
///
/// # Safety
/// `dst..dst + data.len()` is valid for writes and aligned (bytes always are), for the
/// whole call; every other access to it during the call is atomic (another of these
/// copies) or made outside this process's memory model (a peer process, the kernel, a
/// NIC). `data` does not overlap it.
pub unsafe fn store(dst: *mut u8, data: &[u8]) {
    for (i, &b) in data.iter().enumerate() {
        // SAFETY: in range and valid by the contract; AtomicU8 has u8's size and
        // alignment.
        let cell = unsafe { AtomicU8::from_ptr(dst.add(i)) };
        // ORDERING: Relaxed; each byte only needs to be free of data races; whoever
        // needs to see the copy synchronizes by other means (a barrier, a message).
        cell.store(b, Ordering::Relaxed);
    }
}

/// Copies `out.len()` bytes from `src` into `out` with relaxed byte loads.
///
/// # Safety
/// `src..src + out.len()` is valid for reads for the whole call; every concurrent write
/// to it is atomic or made outside this process's memory model (as for [`store`]).
/// `out` does not overlap it.
pub unsafe fn load(src: *const u8, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        // SAFETY: in range and valid by the contract; AtomicU8 has u8's size and
        // alignment; only loads go through this shared reference.
        let cell = unsafe { AtomicU8::from_ptr(src.add(i).cast_mut()) };
        // ORDERING: Relaxed, as in `store`.
        *b = cell.load(Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw pointer the test threads share (the copies are what make that sound).
    #[derive(Clone, Copy)]
    struct Base(*mut u8);
    // SAFETY: only used through `store`/`load`, whose accesses are atomic.
    unsafe impl Send for Base {}

    #[test]
    fn copies_round_trip_at_any_offset() {
        let mut memory = vec![0u8; 64];
        let base = memory.as_mut_ptr();
        let data: Vec<u8> = (1..=13).collect();
        for offset in [0, 1, 7, 8, 51] {
            // SAFETY: offset + 13 <= 64, the vector outlives the copies.
            unsafe { store(base.add(offset), &data) };
            let mut out = [0u8; 13];
            // SAFETY: as above.
            unsafe { load(base.add(offset), &mut out) };
            assert_eq!(&out[..], &data[..]);
        }
    }

    /// Two threads storing into overlapping ranges while a third loads: no data race
    /// (Miri checks), and every byte read is one of the values written.
    #[test]
    fn concurrent_overlapping_copies_are_not_a_race() {
        let mut memory = vec![0u8; 32];
        let base = Base(memory.as_mut_ptr());
        let rounds = if cfg!(miri) { 3 } else { 1000 };
        std::thread::scope(|s| {
            for (value, offset) in [(1u8, 0usize), (2, 5)] {
                s.spawn(move || {
                    let b = base;
                    let data = [value; 20];
                    for _ in 0..rounds {
                        // SAFETY: offset + 20 <= 32; the vector outlives the scope.
                        unsafe { store(b.0.add(offset), &data) };
                    }
                });
            }
            s.spawn(move || {
                let b = base;
                let mut out = [0u8; 32];
                for _ in 0..rounds {
                    // SAFETY: 32 bytes, valid for the scope.
                    unsafe { load(b.0, &mut out) };
                    assert!(out.iter().all(|&x| x <= 2), "{out:?}");
                }
            });
        });
        assert!(memory.iter().all(|&x| x <= 2));
        assert!(memory[..5].iter().all(|&x| x == 1));
        assert!(memory[20..25].iter().all(|&x| x == 2));
    }
}
