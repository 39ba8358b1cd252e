//! Split copy: a large message's single copy shared by both sides. The receiver reads
//! chunks out of the sender's buffer (`process_vm_readv`) while the sender, waiting for
//! the send to complete, writes other chunks into the receiver's buffer
//! (`process_vm_writev`): two cores copy instead of one.
//!
//! The coordination lives in a [`SplitSlot`] of the sender's segment. The sender resets
//! the slot and names it in the RTS; the receiver publishes its buffer address
//! (`state` = 1, Release); from then on each side claims chunk indices from `next`
//! (fetch-add) and counts each finished chunk in `done`; a chunk the sender fails to
//! write is marked in `failed` and read again by the receiver. The receiver waits until
//! `done` covers every chunk, then sends the FIN that frees the slot and completes the
//! send. A sender that never comes back to help leaves every chunk to the receiver: no
//! side ever waits for the other to start.

use std::io;
use std::sync::atomic::Ordering;

use crate::cma;
use crate::segment::SplitSlot;

/// Smallest message whose copy is shared.
pub const SPLIT_MIN: usize = 128 << 10;
/// Smallest chunk (a chunk is one system call on either side).
const CHUNK_MIN: usize = 128 << 10;
/// Most chunks per message (the width of the `failed` bitmap).
const CHUNKS_MAX: usize = 64;

/// The chunk size for a message of `len` bytes: 128 KiB (one system call on either side
/// per chunk), or half the message when that is smaller (two chunks, one per side), at
/// most 64 chunks (the width of the `failed` bitmap), a multiple of 4 KiB. (At 128 KiB
/// two chunks of 64 KiB took the one-way latency from 11.5 to 7.3 µs; at 256 KiB and
/// above, chunks under 128 KiB were slower.)
///
/// ```
/// use steadfast_shm::split::chunk_size;
/// assert_eq!(chunk_size(128 << 10), 64 << 10);
/// assert_eq!(chunk_size(1 << 20), 128 << 10);
/// assert_eq!(chunk_size(64 << 20), 1 << 20);
/// ```
pub fn chunk_size(len: usize) -> usize {
    let half = len.div_ceil(2).next_multiple_of(4096);
    CHUNK_MIN
        .min(half)
        .max(len.div_ceil(CHUNKS_MAX).next_multiple_of(4096))
}

/// Chunks of a message of `len` bytes.
pub fn chunks(len: usize) -> u64 {
    len.div_ceil(chunk_size(len)) as u64
}

/// The byte range of chunk `c` of a message of `len` bytes.
fn range(c: u64, len: usize) -> std::ops::Range<usize> {
    let cs = chunk_size(len);
    let start = c as usize * cs;
    start..(start + cs).min(len)
}

/// The sender clears the slot before naming it in an RTS (the ring's Release publishes
/// these stores to the receiver).
pub fn reset(slot: &SplitSlot) {
    // ORDERING: Relaxed; published by the Release stamp of the RTS cell, which the
    // receiver Acquires before it touches the slot.
    slot.state.store(0, Ordering::Relaxed);
    slot.dst.store(0, Ordering::Relaxed);
    slot.next.store(0, Ordering::Relaxed);
    slot.done.store(0, Ordering::Relaxed);
    slot.failed.store(0, Ordering::Relaxed);
}

/// The sender's part: if the receiver has published its buffer, write unclaimed chunks
/// of `src` into it (process `receiver_pid`). Returns the chunks written here.
///
/// # Safety
/// `src` must be the buffer the RTS named, valid until the send completes (the caller
/// is inside the wait for that send), and `receiver_pid` the receiving process (never
/// this one) that published its buffer in `slot`.
pub unsafe fn sender_help(slot: &SplitSlot, receiver_pid: u32, src: &[u8]) -> u64 {
    // ORDERING: Acquire; pairs with the Release store of `state` in `receiver_copy`:
    // `dst` is visible once state reads 1.
    if slot.state.load(Ordering::Acquire) != 1 {
        return 0;
    }
    let dst = slot.dst.load(Ordering::Relaxed);
    let n = chunks(src.len());
    let mut mine = 0;
    loop {
        // ORDERING: AcqRel; the claim counter only hands out distinct indices.
        let c = slot.next.fetch_add(1, Ordering::AcqRel);
        if c >= n {
            return mine;
        }
        let r = range(c, src.len());
        // SAFETY: `receiver_pid` is another process that published `dst` for this
        // message (this function's contract).
        if unsafe { cma::write_to(receiver_pid, dst + r.start as u64, &src[r]) }.is_err() {
            // ORDERING: Release; ordered before the `done` increment below.
            slot.failed.fetch_or(1 << c, Ordering::Release);
        } else {
            mine += 1;
        }
        // ORDERING: Release; pairs with the Acquire load of `done` in `receiver_copy`:
        // the chunk's bytes (written by the kernel before the system call returned)
        // and the `failed` bit are visible to a receiver that sees the count.
        slot.done.fetch_add(1, Ordering::Release);
    }
}

/// What the receiver's part came to.
#[derive(Debug)]
pub enum Outcome {
    /// Every chunk is in `buf`; `by_sender` of them were written by the sender.
    Copied {
        /// Chunks the sender wrote.
        by_sender: u64,
    },
    /// A read failed (the first error); every chunk is finished, none is in flight.
    ReadFailed(io::Error),
    /// The sender died before finishing a chunk it claimed.
    SenderDead,
}

/// The receiver's part: publish `buf`, copy unclaimed chunks of the sender's buffer at
/// `src` (process `sender_pid`), wait until every chunk is done, and read again those
/// the sender failed to write. `dead` is polled while waiting for the sender.
pub fn receiver_copy(
    slot: &SplitSlot,
    sender_pid: u32,
    src: u64,
    buf: &mut [u8],
    mut dead: impl FnMut() -> bool,
) -> Outcome {
    let len = buf.len();
    let n = chunks(len);
    // ORDERING: Relaxed then Release; pairs with the Acquire load of `state` in
    // `sender_help`.
    slot.dst.store(buf.as_mut_ptr() as u64, Ordering::Relaxed);
    slot.state.store(1, Ordering::Release);
    let mut error = None;
    let mut mine = 0;
    loop {
        // ORDERING: AcqRel, as in `sender_help`.
        let c = slot.next.fetch_add(1, Ordering::AcqRel);
        if c >= n {
            break;
        }
        let r = range(c, len);
        if let Err(e) = cma::read_from(sender_pid, src + r.start as u64, &mut buf[r]) {
            error.get_or_insert(e);
        }
        mine += 1;
        // ORDERING: Release; keeps the count consistent for a later reader.
        slot.done.fetch_add(1, Ordering::Release);
    }
    let mut spins = 0u32;
    // ORDERING: Acquire; pairs with the sender's Release increments: its chunks are in
    // `buf` once the count covers them.
    while slot.done.load(Ordering::Acquire) < n {
        spins = spins.wrapping_add(1);
        if spins % 1024 == 0 && dead() {
            return Outcome::SenderDead;
        }
        std::hint::spin_loop();
    }
    // ORDERING: Acquire; the bits were set before the increments seen above.
    let failed = slot.failed.load(Ordering::Acquire);
    for c in (0..n).filter(|c| failed & (1 << c) != 0) {
        let r = range(c, len);
        if let Err(e) = cma::read_from(sender_pid, src + r.start as u64, &mut buf[r]) {
            error.get_or_insert(e);
        }
    }
    match error {
        Some(e) => Outcome::ReadFailed(e),
        None => Outcome::Copied {
            by_sender: n - mine,
        },
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    fn slot() -> Box<SplitSlot> {
        // SAFETY: SplitSlot is only atomics, for which all-zero bytes are valid.
        Box::new(unsafe { std::mem::zeroed() })
    }

    #[test]
    fn chunking_covers_every_byte_in_at_most_64_chunks() {
        for len in [SPLIT_MIN, SPLIT_MIN + 1, 1 << 20, (4 << 20) + 3, 64 << 20] {
            let n = chunks(len);
            assert!(n as usize <= CHUNKS_MAX, "{len}");
            assert_eq!(range(0, len).start, 0);
            assert_eq!(range(n - 1, len).end, len);
            for c in 1..n {
                assert_eq!(range(c - 1, len).end, range(c, len).start);
            }
        }
    }

    #[test]
    fn two_threads_share_the_copy_and_every_byte_arrives() {
        // Both sides in one process (CMA to ourselves): the sender helps from a thread.
        let len = (3 << 20) + 12345;
        let src: Vec<u8> = (0..len).map(|i| (i * 7 + i / 4096) as u8).collect();
        let mut dst = vec![0u8; len];
        let s = slot();
        reset(&s);
        let pid = std::process::id();
        let stop = AtomicU64::new(0);
        let by_sender = std::thread::scope(|scope| {
            let helper = scope.spawn(|| {
                let mut written = 0;
                // ORDERING: Relaxed; a flag to end the test's loop.
                while stop.load(Ordering::Relaxed) == 0 {
                    // SAFETY: src outlives the scope.
                    written += unsafe { sender_help(&s, pid, &src) };
                }
                written
            });
            let out = receiver_copy(&s, pid, src.as_ptr() as u64, &mut dst, || false);
            stop.store(1, Ordering::Relaxed);
            let helped = helper.join().unwrap();
            match out {
                Outcome::Copied { by_sender } => assert_eq!(by_sender, helped),
                other => panic!("{other:?}"),
            }
            helped
        });
        // The kernel wrote parts of dst: read it through a volatile view.
        let seen: Vec<u8> = (0..len)
            // SAFETY: in bounds of dst, alive.
            .map(|i| unsafe { std::ptr::read_volatile(dst.as_ptr().add(i)) })
            .collect();
        assert!(seen == src, "content (sender wrote {by_sender} chunks)");
    }

    #[test]
    fn a_receiver_alone_copies_everything_and_failed_chunks_are_read_again() {
        let len = 1 << 20;
        let src: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mut dst = vec![0u8; len];
        let s = slot();
        reset(&s);
        // A sender that claimed chunk 2 and failed to write it.
        s.next.store(3, Ordering::Relaxed);
        s.done.store(1, Ordering::Relaxed);
        s.failed.store(1 << 2, Ordering::Relaxed);
        // Chunks 0 and 1 were "written" by the sender: copy them by hand.
        let cs = chunk_size(len);
        dst[..2 * cs].copy_from_slice(&src[..2 * cs]);
        s.done.store(3, Ordering::Relaxed);
        let pid = std::process::id();
        match receiver_copy(&s, pid, src.as_ptr() as u64, &mut dst, || false) {
            Outcome::Copied { by_sender } => assert_eq!(by_sender, 3),
            other => panic!("{other:?}"),
        }
        assert!(dst == src);
    }
}
