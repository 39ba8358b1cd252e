//! The fastbox: a single-producer/single-consumer ring of cache-line-aligned cells.
//!
//! Lives in shared memory (see `segment`), one per (sender, receiver) pair, inside the
//! receiver's segment. Only the sender pushes, only the receiver pops. No locks: the
//! producer publishes a filled cell by writing the cell's stamp (word 0: its position
//! plus one) with Release, the consumer polls the stamp of the next cell with Acquire
//! and frees the cell by advancing `tail` with Release; the producer reads `tail` with
//! Acquire only when its cached copy says the ring is full. The consumer never reads a
//! shared counter to find a message, so a small message costs the receiver one cache
//! line transfer (the cell's first line: stamp, header and payload), not two (a counter,
//! then the cell). `head` is still advanced, for a process that resumes a ring.
//! A full ring refuses the push (the caller waits or reports `WouldBlock`): nothing is
//! ever overwritten or dropped.
//!
//! Cells hold atomic words, written and read with Relaxed ordering and published by the
//! counters. On x86-64 these are plain moves, as fast as a memcpy of a small message;
//! in exchange a peer that misbehaves or dies mid-write cannot cause a data race (which
//! would be undefined behaviour), only garbage that the decoder refuses, and loom can
//! check the whole protocol, payload included.
//!
//! ```
//! use steadfast_shm::ring::{Cell, Consumer, Producer, RingHeader};
//!
//! // In process memory here; in a segment between two processes normally.
//! let header = RingHeader::new();
//! let cells: Vec<Cell> = (0..4).map(|_| Cell::new()).collect();
//! let mut tx = Producer::new(&header, &cells);
//! let mut rx = Consumer::new(&header, &cells);
//! assert!(tx.try_push(|cell| cell.set(1, 42)));
//! assert_eq!(rx.try_pop(|cell| cell.get(1)), Ok(Some(42)));
//! assert_eq!(rx.try_pop(|cell| cell.get(1)), Ok(None), "empty");
//! ```

use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// Words in a cell: 256 bytes, four cache lines.
pub const CELL_WORDS: usize = 32;
/// Bytes in a cell.
pub const CELL_BYTES: usize = CELL_WORDS * 8;
/// Words of a cell the protocol layer uses (word 0 is the ring's stamp).
pub const DATA_WORDS: usize = CELL_WORDS - 1;

/// One slot of a ring: the ring's stamp (word 0), then [`DATA_WORDS`] words for the
/// protocol layer, which [`Cell::get`] and [`Cell::set`] index from 0.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Cell {
    /// Word 0: the stamp; words 1..: the content, interpreted by the protocol layer.
    pub words: [AtomicU64; CELL_WORDS],
}

impl Cell {
    /// An empty cell (for rings built in ordinary memory).
    pub fn new() -> Self {
        Cell {
            words: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Reads data word `i` (< [`DATA_WORDS`]).
    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        // ORDERING: Relaxed; the cell is published by the Release store of its stamp (or
        // freed by that of `tail`), whose Acquire load precedes this read.
        self.words[i + 1].load(Ordering::Relaxed)
    }

    /// Writes data word `i` (< [`DATA_WORDS`]).
    #[inline]
    pub fn set(&self, i: usize, v: u64) {
        // ORDERING: Relaxed; published by the Release store of the stamp in `try_push`.
        self.words[i + 1].store(v, Ordering::Relaxed)
    }

    /// Copies `bytes` into the data words from `first_word` on (little-endian, zero
    /// padded).
    ///
    /// # Panics
    /// If the bytes do not fit in the data words from `first_word` on.
    #[inline]
    pub fn write_bytes(&self, first_word: usize, bytes: &[u8]) {
        // One bounds check for the whole copy, then one string move (`crate::bulk`), or
        // one store per word where there is none (a per-word index and an 8-byte
        // staging array cost about 1.6 ns per byte here).
        let words = &self.words[first_word + 1..first_word + 1 + bytes.len().div_ceil(8)];
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        if bytes.len() >= 16 {
            // SAFETY: `words` spans at least `bytes.len()` (>= 16) bytes of this cell (the
            // slice above is bounds-checked), whose atomics make it writable through a
            // shared reference; a process's own buffer never overlaps the segment.
            unsafe { crate::bulk::copy(words.as_ptr() as *mut u8, bytes.as_ptr(), bytes.len()) };
            return;
        }
        let mut chunks = bytes.chunks_exact(8);
        for (word, chunk) in words.iter().zip(&mut chunks) {
            let v = u64::from_le_bytes(chunk.try_into().expect("chunks of 8 bytes"));
            // ORDERING: Relaxed; published by the Release store of the stamp in
            // `try_push`.
            word.store(v, Ordering::Relaxed);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            // ORDERING: as above.
            words[words.len() - 1].store(u64::from_le_bytes(last), Ordering::Relaxed);
        }
    }

    /// Copies `out.len()` bytes from the data words from `first_word` on.
    ///
    /// # Panics
    /// If `out` is longer than the data words from `first_word` on.
    #[inline]
    pub fn read_bytes(&self, first_word: usize, out: &mut [u8]) {
        let words = &self.words[first_word + 1..first_word + 1 + out.len().div_ceil(8)];
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        if out.len() >= 16 {
            // SAFETY: `words` spans at least `out.len()` (>= 16) bytes of this cell
            // (bounds-checked above); `out` is exclusively ours and never inside the
            // shared segment.
            unsafe { crate::bulk::copy(out.as_mut_ptr(), words.as_ptr() as *const u8, out.len()) };
            return;
        }
        let mut chunks = out.chunks_exact_mut(8);
        for (word, chunk) in words.iter().zip(&mut chunks) {
            // ORDERING: Relaxed; the cell is published by the Release store of its
            // stamp, whose Acquire load precedes this read.
            chunk.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            // ORDERING: as above.
            let last = words[words.len() - 1].load(Ordering::Relaxed).to_le_bytes();
            let n = rest.len();
            rest.copy_from_slice(&last[..n]);
        }
    }
}

impl Default for Cell {
    fn default() -> Self {
        Cell::new()
    }
}

/// The shared counters of a ring, each on its own cache lines.
#[repr(C)]
#[derive(Debug, Default)]
pub struct RingHeader {
    /// Cells ever pushed; written by the producer only (read when a ring is resumed).
    head: CachePadded<AtomicU64>,
    /// Cells ever popped; written by the consumer only.
    tail: CachePadded<AtomicU64>,
    /// Which incarnation of the producer may push: 0 for whichever is current (the
    /// ring was created after its producers started), `g + 1` for incarnation `g`
    /// only, written by the consumer when it admits a restarted producer
    /// ([`Consumer::admit`]); a restarted producer pushes only once it reads its own.
    admitted: CachePadded<AtomicU64>,
}

impl RingHeader {
    /// A ring with nothing pushed.
    pub fn new() -> Self {
        RingHeader {
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
            admitted: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// Lets incarnation `generation` of the producer push into a ring nothing was
    /// pushed into (a restarted process's new segment, before it joins): no cell of an
    /// older incarnation can be in it, so nothing is dropped, unlike
    /// [`Consumer::admit`].
    pub fn admit_into_new(&self, generation: u32) {
        // ORDERING: Release; pairs with the Acquire load in `admits`: the producer that
        // reads it sees the ring's initial counters.
        self.admitted
            .store(u64::from(generation) + 1, Ordering::Release);
    }

    /// Whether the consumer has admitted incarnation `generation` of the producer.
    pub fn admits(&self, generation: u32) -> bool {
        // ORDERING: Acquire; pairs with the Release store in `Consumer::admit`: the
        // producer made after this sees the counters the consumer reset.
        self.admitted.load(Ordering::Acquire) == u64::from(generation) + 1
    }
}

/// The ring's counters are inconsistent: the peer wrote garbage or is corrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("ring corrupted: stamp {head} at position {tail}, capacity {capacity}")]
pub struct Corrupted {
    /// The stamp read (the position the producer claims to have written, plus one).
    pub head: u64,
    /// Tail read.
    pub tail: u64,
    /// Ring capacity.
    pub capacity: u64,
}

/// A producer's private position, kept while its ring is not borrowed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerPos {
    head: u64,
    cached_tail: u64,
}

/// A consumer's private position, kept while its ring is not borrowed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConsumerPos {
    tail: u64,
}

/// The sending end of a ring (one per ring, in the sender's process).
#[derive(Debug)]
pub struct Producer<'a> {
    header: &'a RingHeader,
    cells: &'a [Cell],
    mask: u64,
    head: u64,
    cached_tail: u64,
}

/// The receiving end of a ring (one per ring, in the receiver's process).
#[derive(Debug)]
pub struct Consumer<'a> {
    header: &'a RingHeader,
    cells: &'a [Cell],
    mask: u64,
    tail: u64,
}

fn check_capacity(cells: &[Cell]) -> u64 {
    assert!(
        cells.len().is_power_of_two(),
        "ring capacity must be a power of two, got {}",
        cells.len()
    );
    cells.len() as u64 - 1
}

impl<'a> Producer<'a> {
    /// The producer of the ring made of `header` and `cells` (a power-of-two count),
    /// continuing from the counters' current values. Exactly one producer may exist
    /// per ring at a time (the segment layer hands out one per sender).
    ///
    /// # Panics
    /// If the cell count is not a power of two.
    pub fn new(header: &'a RingHeader, cells: &'a [Cell]) -> Self {
        // ORDERING: Acquire on both: we continue after whatever the previous producer
        // (a restarted process) and the consumer last published.
        let pos = ProducerPos {
            head: header.head.load(Ordering::Acquire),
            cached_tail: header.tail.load(Ordering::Acquire),
        };
        Producer::resume(header, cells, pos)
    }

    /// Capacity in cells.
    pub fn capacity(&self) -> usize {
        self.cells.len()
    }

    /// Resumes a producer from a position saved by [`Producer::pos`] on the same ring.
    ///
    /// # Panics
    /// If the cell count is not a power of two.
    pub fn resume(header: &'a RingHeader, cells: &'a [Cell], pos: ProducerPos) -> Self {
        let mask = check_capacity(cells);
        Producer {
            header,
            cells,
            mask,
            head: pos.head,
            cached_tail: pos.cached_tail,
        }
    }

    /// The position to resume from later.
    pub fn pos(&self) -> ProducerPos {
        ProducerPos {
            head: self.head,
            cached_tail: self.cached_tail,
        }
    }

    /// Fills the next free cell with `fill` and publishes it; `false` when the ring is
    /// full (nothing was written).
    #[inline]
    pub fn try_push(&mut self, fill: impl FnOnce(&Cell)) -> bool {
        let capacity = self.mask + 1;
        if self.head.wrapping_sub(self.cached_tail) >= capacity {
            // ORDERING: Acquire; pairs with the Release store of `tail` in `try_pop`:
            // the consumer has finished reading every cell it freed.
            self.cached_tail = self.header.tail.load(Ordering::Acquire);
            if self.head.wrapping_sub(self.cached_tail) >= capacity {
                return false;
            }
        }
        let cell = &self.cells[(self.head & self.mask) as usize];
        fill(cell);
        self.head = self.head.wrapping_add(1);
        // ORDERING: Release; pairs with the Acquire load of the stamp in `try_pop`,
        // publishing the cell's words written above.
        cell.words[0].store(self.head, Ordering::Release);
        // ORDERING: Relaxed; `head` is read only to resume a ring (after a rendezvous
        // through the segment that orders it), never to find a message.
        self.header.head.store(self.head, Ordering::Relaxed);
        true
    }

    /// Fills `n` consecutive free cells (`min <= n <= max`, as many as are free) with
    /// `fill(i, cell)`, `i` from 0, and publishes them together: the stamps of cells
    /// `1..n` first, that of cell 0 last, so a consumer that finds cell 0 finds the
    /// others published too (it reads a multi-cell message at once, never catching up
    /// with the producer inside it, and never polls a line being written). Returns `n`,
    /// or 0 (nothing written) when fewer than `min` cells are free.
    #[inline]
    pub fn try_push_cells(
        &mut self,
        min: usize,
        max: usize,
        mut fill: impl FnMut(usize, &Cell),
    ) -> usize {
        let capacity = self.mask + 1;
        let (min, max) = (min.max(1) as u64, max as u64);
        if max < min || min > capacity {
            return 0;
        }
        let mut free = capacity - self.head.wrapping_sub(self.cached_tail).min(capacity);
        if free < max {
            // ORDERING: Acquire; pairs with the Release store of `tail` in `try_pop`:
            // the consumer has finished reading every cell it freed.
            self.cached_tail = self.header.tail.load(Ordering::Acquire);
            free = capacity - self.head.wrapping_sub(self.cached_tail).min(capacity);
            if free < min {
                return 0;
            }
        }
        let n = free.min(max);
        for i in 0..n {
            let pos = self.head.wrapping_add(i);
            fill(i as usize, &self.cells[(pos & self.mask) as usize]);
        }
        for i in (1..n).chain(std::iter::once(0)) {
            let pos = self.head.wrapping_add(i);
            // ORDERING: Release; pairs with the Acquire load of the stamp in `try_pop`,
            // publishing the cell's words. Cell 0's store comes last in program order,
            // so its Acquire load also makes every later cell's stamp visible.
            self.cells[(pos & self.mask) as usize].words[0]
                .store(pos.wrapping_add(1), Ordering::Release);
        }
        self.head = self.head.wrapping_add(n);
        // ORDERING: Relaxed, as in `try_push`.
        self.header.head.store(self.head, Ordering::Relaxed);
        n as usize
    }

    /// Fills and publishes `n` consecutive cells when all `n` are free (else writes
    /// nothing and returns `false`), publishing them `batch` at a time as each batch is
    /// written (each batch as [`try_push_cells`](Self::try_push_cells) publishes its
    /// cells: the first one's stamp last). The room is taken for the whole message
    /// before the first batch, so once a consumer sees the first cell the producer
    /// never waits for the consumer before the last: a consumer may follow it batch by
    /// batch, copying one while the next is written.
    #[inline]
    pub fn try_push_reserved(
        &mut self,
        n: usize,
        batch: usize,
        mut fill: impl FnMut(usize, &Cell),
    ) -> bool {
        let capacity = self.mask + 1;
        let want = n as u64;
        if want == 0 || want > capacity {
            return false;
        }
        if capacity - self.head.wrapping_sub(self.cached_tail).min(capacity) < want {
            // ORDERING: Acquire; pairs with the Release store of `tail` in `try_pop`:
            // the consumer has finished reading every cell it freed.
            self.cached_tail = self.header.tail.load(Ordering::Acquire);
            if capacity - self.head.wrapping_sub(self.cached_tail).min(capacity) < want {
                return false;
            }
        }
        let batch = batch.max(1) as u64;
        let mut done = 0u64;
        while done < want {
            let k = batch.min(want - done);
            for i in 0..k {
                let pos = self.head.wrapping_add(i);
                crate::prefetch::cell_for_write(&self.cells[(pos & self.mask) as usize]);
            }
            for i in 0..k {
                let pos = self.head.wrapping_add(i);
                fill((done + i) as usize, &self.cells[(pos & self.mask) as usize]);
            }
            for i in (1..k).chain(std::iter::once(0)) {
                let pos = self.head.wrapping_add(i);
                // ORDERING: Release; pairs with the Acquire load of the stamp in
                // `try_pop`, publishing the cell's words (the batch's first cell last,
                // as in `try_push_cells`).
                self.cells[(pos & self.mask) as usize].words[0]
                    .store(pos.wrapping_add(1), Ordering::Release);
            }
            self.head = self.head.wrapping_add(k);
            done += k;
        }
        // ORDERING: Relaxed, as in `try_push`.
        self.header.head.store(self.head, Ordering::Relaxed);
        true
    }

    /// Cells pushed and not yet popped, as last seen.
    pub fn in_flight(&self) -> u64 {
        self.head.wrapping_sub(self.cached_tail)
    }
}

impl<'a> Consumer<'a> {
    /// The consumer of the ring made of `header` and `cells`; exactly one per ring.
    ///
    /// # Panics
    /// If the cell count is not a power of two.
    pub fn new(header: &'a RingHeader, cells: &'a [Cell]) -> Self {
        // ORDERING: Acquire, as in `Producer::new`.
        let pos = ConsumerPos {
            tail: header.tail.load(Ordering::Acquire),
        };
        Consumer::resume(header, cells, pos)
    }

    /// Resumes a consumer from a position saved by [`Consumer::pos`] on the same ring.
    ///
    /// # Panics
    /// If the cell count is not a power of two.
    pub fn resume(header: &'a RingHeader, cells: &'a [Cell], pos: ConsumerPos) -> Self {
        let mask = check_capacity(cells);
        Consumer {
            header,
            cells,
            mask,
            tail: pos.tail,
        }
    }

    /// The position to resume from later.
    pub fn pos(&self) -> ConsumerPos {
        ConsumerPos { tail: self.tail }
    }

    /// Whether the cell at the consumer's position is published: `Ok(false)` when it
    /// still holds the previous lap's stamp (or none yet).
    #[inline]
    fn ready(&self) -> Result<bool, Corrupted> {
        let cell = &self.cells[(self.tail & self.mask) as usize];
        // ORDERING: Acquire; pairs with the Release store of the stamp in `try_push`,
        // making the cell's words visible.
        let stamp = cell.words[0].load(Ordering::Acquire);
        let want = self.tail.wrapping_add(1);
        if stamp == want {
            return Ok(true);
        }
        let capacity = self.mask + 1;
        let previous_lap = want.wrapping_sub(capacity);
        if stamp == previous_lap || (stamp == 0 && self.tail < capacity) {
            return Ok(false);
        }
        Err(Corrupted {
            head: stamp,
            tail: self.tail,
            capacity,
        })
    }

    /// Reads the oldest cell with `read` and frees it; `Ok(None)` when empty.
    ///
    /// # Errors
    /// [`Corrupted`] when the cell's stamp is impossible (neither this lap's nor the
    /// previous one's): the ring is not touched further.
    #[inline]
    pub fn try_pop<R>(&mut self, read: impl FnOnce(&Cell) -> R) -> Result<Option<R>, Corrupted> {
        if !self.ready()? {
            return Ok(None);
        }
        crate::prefetch::cell(&self.cells[(self.tail.wrapping_add(1) & self.mask) as usize]);
        let r = read(&self.cells[(self.tail & self.mask) as usize]);
        self.tail = self.tail.wrapping_add(1);
        // ORDERING: Release; pairs with the Acquire load of `tail` in `try_push`: the
        // producer reuses the cell only after our reads above.
        self.header.tail.store(self.tail, Ordering::Release);
        Ok(Some(r))
    }

    /// Asks the processor for the cells `from..to` places past the next one to pop
    /// (a hint: never faults, never waits). A consumer that knows a message's cells are
    /// published (a batch of `Producer::try_push_reserved` is, once its first cell is)
    /// fetches their lines together instead of one cell ahead at a time.
    #[inline]
    pub fn prefetch(&self, from: u64, to: u64) {
        for k in from..to.min(self.mask + 1) {
            crate::prefetch::cell(&self.cells[(self.tail.wrapping_add(k) & self.mask) as usize]);
        }
    }

    /// Admits incarnation `generation` of this ring's producer, whose previous
    /// incarnation is dead: every cell the dead one published and was not popped, and
    /// any it was writing, is dropped (fencing: nothing of a dead incarnation reaches a
    /// receive after its restart), both counters are set past them, and the new
    /// incarnation may push from there. Call only once the old producer has exited.
    pub fn admit(&mut self, generation: u32) {
        let capacity = self.mask + 1;
        // ORDERING: Acquire; the dead producer's last counter (it stores `head` after
        // each stamp, so it may lag the last published cell by one: the scan below
        // also skips published cells past it).
        let mut pos = self.header.head.load(Ordering::Acquire).max(self.tail);
        for _ in 0..capacity {
            let cell = &self.cells[(pos & self.mask) as usize];
            // ORDERING: Acquire, as in `ready`; only the stamp is read.
            if cell.words[0].load(Ordering::Acquire) != pos.wrapping_add(1) {
                break;
            }
            pos = pos.wrapping_add(1);
        }
        // A producer that pushes several cells at once (`try_push_cells`) stamps the
        // first last: one that died while stamping left later cells of this lap stamped
        // past `pos`. Turn them back into the previous lap's, or the consumer would pop
        // them after the new incarnation's first cells.
        for k in 1..capacity {
            let q = pos.wrapping_add(k);
            let cell = &self.cells[(q & self.mask) as usize];
            // ORDERING: Relaxed load and store: the dead producer has exited (the
            // caller's contract), this process is the only reader, and the new
            // producer writes the cell only after the Release store of `admitted`.
            if cell.words[0].load(Ordering::Relaxed) == q.wrapping_add(1) {
                let previous = if q < capacity { 0 } else { q + 1 - capacity };
                cell.words[0].store(previous, Ordering::Relaxed);
            }
        }
        self.tail = pos;
        // ORDERING: Relaxed on both counters: published by the Release store of
        // `admitted` below, which the new producer reads with Acquire before it reads
        // them (`RingHeader::admits`, then `Producer::new`).
        self.header.tail.store(pos, Ordering::Relaxed);
        self.header.head.store(pos, Ordering::Relaxed);
        // ORDERING: Release; pairs with the Acquire load in `RingHeader::admits`.
        self.header
            .admitted
            .store(u64::from(generation) + 1, Ordering::Release);
    }

    /// Whether no cell is waiting (one Acquire load of the next cell's stamp; a
    /// corrupted ring counts as empty, `try_pop` reports it).
    pub fn is_empty(&mut self) -> bool {
        !matches!(self.ready(), Ok(true))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ring(n: usize) -> (RingHeader, Vec<Cell>) {
        (RingHeader::new(), (0..n).map(|_| Cell::new()).collect())
    }

    #[test]
    fn fifo_wraps_and_refuses_when_full() {
        let (h, cells) = ring(4);
        let mut p = Producer::new(&h, &cells);
        let mut c = Consumer::new(&h, &cells);
        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(None));
        let mut next_out = 0u64;
        for round in 0..10u64 {
            for k in 0..4 {
                assert!(p.try_push(|cell| cell.set(0, round * 4 + k)));
            }
            assert!(!p.try_push(|_| panic!("must not fill a full ring")));
            for _ in 0..4 {
                assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(next_out)));
                next_out += 1;
            }
            assert!(c.is_empty());
        }
    }

    #[test]
    fn admitting_a_restarted_producer_drops_the_dead_ones_cells() {
        for (pushed, popped, lagging_head) in [(3, 1, false), (5, 2, true), (4, 4, false)] {
            let (h, cells) = ring(4);
            let mut c = Consumer::new(&h, &cells);
            {
                let mut dead = Producer::new(&h, &cells);
                for k in 0..pushed {
                    assert!(dead.try_push(|cell| cell.set(0, 100 + k)));
                    if c.pos().tail < popped {
                        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(100 + k)));
                    }
                }
                if lagging_head {
                    // Died between the stamp and the counter.
                    h.head.store(pushed - 1, Ordering::Relaxed);
                }
                // ... and in the middle of filling the next cell.
                cells[(pushed % 4) as usize].set(0, 666);
            }
            assert!(!h.admits(1));
            c.admit(1);
            assert!(h.admits(1) && !h.admits(2));
            assert_eq!(
                c.try_pop(|cell| cell.get(0)),
                Ok(None),
                "nothing of the dead one"
            );
            let mut new = Producer::new(&h, &cells);
            for k in 0..6 {
                assert!(new.try_push(|cell| cell.set(0, k)));
                assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(k)));
            }
        }
    }

    #[test]
    fn a_reserved_message_goes_whole_or_not_at_all_batch_by_batch() {
        let (h, cells) = ring(8);
        let mut tx = Producer::new(&h, &cells);
        let mut rx = Consumer::new(&h, &cells);
        assert!(tx.try_push(|c| c.set(0, 99)));
        assert!(!tx.try_push_reserved(8, 3, |_, _| panic!("no room: nothing written")));
        assert!(!tx.try_push_reserved(0, 3, |_, _| panic!("nothing to push")));
        assert_eq!(rx.try_pop(|c| c.get(0)), Ok(Some(99)));
        let mut order = Vec::new();
        assert!(tx.try_push_reserved(7, 3, |i, c| {
            order.push(i);
            c.set(0, 10 + i as u64)
        }));
        assert_eq!(order, (0..7).collect::<Vec<_>>(), "filled in order");
        for i in 0..7 {
            assert_eq!(rx.try_pop(|c| c.get(0)), Ok(Some(10 + i)));
        }
        assert_eq!(rx.try_pop(|c| c.get(0)), Ok(None));
        assert!(
            tx.try_push_reserved(8, 8, |i, c| c.set(0, i as u64)),
            "a full ring's worth"
        );
        assert!(!tx.try_push(|_| ()), "full");
    }

    #[test]
    fn cells_pushed_together_all_or_as_many_as_free() {
        let (h, cells) = ring(8);
        let mut p = Producer::new(&h, &cells);
        let mut c = Consumer::new(&h, &cells);
        assert_eq!(
            p.try_push_cells(3, 3, |i, cell| cell.set(0, 10 + i as u64)),
            3
        );
        assert_eq!(
            p.try_push_cells(6, 6, |_, _| panic!("5 free: none written")),
            0
        );
        assert_eq!(
            p.try_push_cells(9, 9, |_, _| panic!("more than the ring")),
            0
        );
        assert_eq!(
            p.try_push_cells(1, 9, |i, cell| cell.set(0, 13 + i as u64)),
            5
        );
        assert_eq!(p.try_push_cells(1, 1, |_, _| panic!("full")), 0);
        for k in 0..8 {
            assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(10 + k)));
        }
        // Wraps around the end, and mixes with single pushes.
        assert!(p.try_push(|cell| cell.set(0, 1)));
        assert_eq!(
            p.try_push_cells(7, 7, |i, cell| cell.set(0, 2 + i as u64)),
            7
        );
        for k in 1..9 {
            assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(k)));
        }
        assert!(c.is_empty());
    }

    #[test]
    fn a_producer_dead_while_stamping_cells_leaves_none_of_them() {
        // It stamped the later cells of a batch, not the first: the consumer sees
        // nothing, and after admitting a new incarnation, only the new one's cells.
        for start in [0u64, 6] {
            let (h, cells) = ring(8);
            let mut c = Consumer::new(&h, &cells);
            let mut dead = Producer::new(&h, &cells);
            for k in 0..start {
                assert!(dead.try_push(|cell| cell.set(0, k)));
                assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(k)));
            }
            for q in start + 1..start + 4 {
                let cell = &cells[(q % 8) as usize];
                cell.set(0, 666);
                // ORDERING: Release, as `try_push_cells` stamps a cell.
                cell.words[0].store(q + 1, Ordering::Release);
            }
            assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(None));
            c.admit(1);
            let mut new = Producer::new(&h, &cells);
            for k in 0..10 {
                assert!(new.try_push(|cell| cell.set(0, k)));
                assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(k)), "start {start}");
                assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(None), "start {start}");
            }
        }
    }

    #[test]
    fn bytes_round_trip_through_words() {
        let cell = Cell::new();
        let msg: Vec<u8> = (0..37).collect();
        cell.write_bytes(3, &msg);
        let mut back = vec![0u8; 37];
        cell.read_bytes(3, &mut back);
        assert_eq!(back, msg);
    }

    #[test]
    fn impossible_stamps_are_reported() {
        let (h, cells) = ring(4);
        let mut c = Consumer::new(&h, &cells);
        // ORDERING: Release, as the producer publishes a stamp (here: an impossible one).
        cells[0].words[0].store(99, Ordering::Release);
        assert!(c.try_pop(|_| ()).is_err());
        // The previous lap's stamp is "not yet": push a lap, pop it, look again.
        let (h, cells) = ring(2);
        let mut p = Producer::new(&h, &cells);
        let mut c = Consumer::new(&h, &cells);
        for i in 0..2 {
            assert!(p.try_push(|cell| cell.set(0, i)));
            assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(i)));
        }
        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(None));
        assert!(c.is_empty());
    }

    #[test]
    fn a_resumed_consumer_continues_where_the_last_stopped() {
        let (h, cells) = ring(4);
        let mut p = Producer::new(&h, &cells);
        for i in 0..3 {
            assert!(p.try_push(|cell| cell.set(0, i)));
        }
        let mut c = Consumer::new(&h, &cells);
        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(0)));
        let saved = c.pos();
        let mut c = Consumer::resume(&h, &cells, saved);
        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(1)));
        // A new producer (a restarted sender) continues from head.
        let mut p = Producer::new(&h, &cells);
        assert!(p.try_push(|cell| cell.set(0, 3)));
        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(2)));
        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(3)));
        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(None));
    }

    #[test]
    fn threads_stream_a_million_cells_in_order() {
        // Miri interprets every access: a few thousand cells still wrap the ring many
        // times and let it check the producer/consumer hand-off for data races.
        const CELLS: u64 = if cfg!(miri) { 2_000 } else { 1_000_000 };
        let (h, cells) = ring(64);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut p = Producer::new(&h, &cells);
                for i in 0..CELLS {
                    while !p.try_push(|cell| {
                        cell.set(0, i);
                        cell.set(DATA_WORDS - 1, !i);
                    }) {
                        std::hint::spin_loop();
                    }
                }
            });
            let mut c = Consumer::new(&h, &cells);
            let mut expect = 0u64;
            while expect < CELLS {
                if let Some((a, b)) = c
                    .try_pop(|cell| (cell.get(0), cell.get(DATA_WORDS - 1)))
                    .unwrap()
                {
                    assert_eq!((a, b), (expect, !expect));
                    expect += 1;
                }
            }
        });
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Three messages through a ring of two cells (full, wrap-around, empty all
    /// reached): the consumer sees every payload word exactly as written, in order.
    /// Weakening the Release of the stamp fails this test. Loom does not model a read
    /// reordered after a later write (load buffering), so the Release of `tail` (the
    /// consumer's reads happen before the producer rewrites the cell) rests on the
    /// argument at that store, not on this test.
    /// A ring of two cells: `produce` runs on a second thread with its producer,
    /// `consume` on this one with its consumer; then the ring must be empty.
    fn two_cells(
        produce: impl FnOnce(&mut Producer<'_>) + Send + 'static,
        consume: impl FnOnce(&mut Consumer<'_>),
    ) {
        let shared = Arc::new((RingHeader::new(), [Cell::new(), Cell::new()]));
        let producer = {
            let shared = shared.clone();
            loom::thread::spawn(move || produce(&mut Producer::new(&shared.0, &shared.1)))
        };
        let mut c = Consumer::new(&shared.0, &shared.1);
        consume(&mut c);
        producer.join().unwrap();
        assert!(c.is_empty());
    }

    #[test]
    fn payload_published_in_order_through_wrap() {
        loom::model(|| {
            two_cells(
                |p| {
                    for i in 1..=3u64 {
                        while !p.try_push(|cell| {
                            cell.set(0, i);
                            cell.set(5, i * 10);
                        }) {
                            loom::thread::yield_now();
                        }
                    }
                },
                |c| {
                    let mut next = 1u64;
                    while next <= 3 {
                        match c.try_pop(|cell| (cell.get(0), cell.get(5))).unwrap() {
                            Some((a, b)) => {
                                assert_eq!((a, b), (next, next * 10));
                                next += 1;
                            }
                            None => loom::thread::yield_now(),
                        }
                    }
                },
            );
        });
    }

    /// Two batches of two cells through a ring of two (the second waits for the whole
    /// ring to be free): whenever the consumer finds a batch's first cell, its second
    /// is published too, payload included. Stamping the first cell before the second
    /// fails this test.
    /// A reserved push of 2 cells in batches of 1 on the 2-cell ring: the consumer
    /// follows batch by batch and reads each payload as written. Fails (loom finds a
    /// stale payload) with the stamps stored Relaxed in `try_push_reserved`.
    #[test]
    fn a_reserved_message_is_read_batch_by_batch_as_written() {
        loom::model(|| {
            two_cells(
                |p| {
                    while !p.try_push_reserved(2, 1, |i, cell| cell.set(0, 5 + i as u64)) {
                        loom::thread::yield_now();
                    }
                },
                |c| {
                    let mut next = 5u64;
                    while next < 7 {
                        match c.try_pop(|cell| cell.get(0)).unwrap() {
                            Some(v) => {
                                assert_eq!(v, next);
                                next += 1;
                            }
                            None => loom::thread::yield_now(),
                        }
                    }
                },
            );
        });
    }

    #[test]
    fn a_batch_is_visible_whole_once_its_first_cell_is() {
        loom::model(|| {
            two_cells(
                |p| {
                    for batch in 0..2u64 {
                        while p.try_push_cells(2, 2, |i, cell| cell.set(0, batch * 2 + i as u64))
                            == 0
                        {
                            loom::thread::yield_now();
                        }
                    }
                },
                |c| {
                    let mut next = 0u64;
                    while next < 4 {
                        match c.try_pop(|cell| cell.get(0)).unwrap() {
                            Some(v) => {
                                assert_eq!(v, next);
                                next += 1;
                                if next % 2 == 1 {
                                    let second = c.try_pop(|cell| cell.get(0)).unwrap();
                                    assert_eq!(second, Some(next), "second cell of the batch");
                                    next += 1;
                                }
                            }
                            None => loom::thread::yield_now(),
                        }
                    }
                },
            );
        });
    }
}
