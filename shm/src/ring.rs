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
//! **Packed cells** carry up to [`SLOTS`] small records, one per 32-byte slot, so two
//! small messages share a cache line where a cell each would cost the receiver a line
//! transfer apiece ([`Producer::try_push_small`]). The producer opens one with a stamp
//! flagged packed (bit 63; slot 0 is its first record) and fills the following slots while
//! it sends only small records; each slot is published by its own mark (word 0 of the
//! slot) with Release, after the producer zeroed the next slot's mark, so the consumer,
//! which polls only the mark of the slot after the last it read, sees 0 or a mark of
//! this lap, never a stale word of an older lap (payload of a plain cell included). Any
//! other push first *closes* the open cell (a closing mark in its next slot); the
//! consumer frees a packed cell when it read its last slot or its closing mark.
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
use packed::{SlotState, PACKED};
pub use packed::{SLOTS, SLOT_DATA_WORDS, SLOT_WORDS};

mod packed;

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
            // ORDERING: as above.
            words[words.len() - 1].store(partial_word(rest), Ordering::Relaxed);
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

/// The little-endian word of 1 to 7 bytes, zero padded, assembled in registers: copying
/// them into a stack array and loading it whole would wait for those byte stores to
/// leave the store buffer (no forwarding from narrower stores), behind the cell stores
/// just before, whose lines the receiver holds (1-4 B one-way 0.39 -> 0.30 µs in the
/// host's slow state, with packed cells).
#[inline(always)]
fn partial_word(rest: &[u8]) -> u64 {
    let n = rest.len();
    debug_assert!((1..8).contains(&n));
    let at = |i: usize| u64::from(rest[i]);
    let u16_at = |i: usize| u64::from(u16::from_le_bytes([rest[i], rest[i + 1]]));
    if n >= 4 {
        let lo = u64::from(u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]));
        let hi = u64::from(u32::from_le_bytes([
            rest[n - 4],
            rest[n - 3],
            rest[n - 2],
            rest[n - 1],
        ]));
        lo | hi << (8 * (n - 4))
    } else if n >= 2 {
        u16_at(0) | at(n - 1) << (8 * (n - 1))
    } else {
        at(0)
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
    open: u8,
}

/// A consumer's private position, kept while its ring is not borrowed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConsumerPos {
    tail: u64,
    slot: u8,
}

/// The sending end of a ring (one per ring, in the sender's process).
#[derive(Debug)]
pub struct Producer<'a> {
    header: &'a RingHeader,
    cells: &'a [Cell],
    mask: u64,
    head: u64,
    cached_tail: u64,
    /// The next slot of the packed cell at `head - 1`, 0 when no packed cell is open.
    open: u8,
}

/// The receiving end of a ring (one per ring, in the receiver's process).
#[derive(Debug)]
pub struct Consumer<'a> {
    header: &'a RingHeader,
    cells: &'a [Cell],
    mask: u64,
    tail: u64,
    /// The next slot of the packed cell at `tail`, 0 when not inside one.
    slot: u8,
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
            open: 0,
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
            open: pos.open,
        }
    }

    /// The position to resume from later.
    pub fn pos(&self) -> ProducerPos {
        ProducerPos {
            head: self.head,
            cached_tail: self.cached_tail,
            open: self.open,
        }
    }

    /// Fills the next free cell with `fill` and publishes it; `false` when the ring is
    /// full (nothing was written).
    #[inline]
    pub fn try_push(&mut self, fill: impl FnOnce(&Cell)) -> bool {
        self.close_packed();
        self.push_cell(fill, 0)
    }

    /// Fills the next free cell with `fill` and publishes it with its stamp ORed with
    /// `flag` (0, or `PACKED`); `false` when the ring is full (nothing was written).
    #[inline]
    fn push_cell(&mut self, fill: impl FnOnce(&Cell), flag: u64) -> bool {
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
        cell.words[0].store(self.head | flag, Ordering::Release);
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
        self.close_packed();
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
        self.close_packed();
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

    /// Whether this ring has been written all the way round at least once (every cell
    /// written before).
    #[inline]
    pub fn lapped(&self) -> bool {
        self.head > self.mask
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
            slot: 0,
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
            slot: pos.slot,
        }
    }

    /// The position to resume from later.
    pub fn pos(&self) -> ConsumerPos {
        ConsumerPos {
            tail: self.tail,
            slot: self.slot,
        }
    }

    /// Whether the cell at position `at` is published: `Ok(None)` when it still holds
    /// the previous lap's stamp (or none yet), else whether it is packed.
    #[inline]
    fn ready_at(&self, at: u64) -> Result<Option<bool>, Corrupted> {
        let cell = &self.cells[(at & self.mask) as usize];
        // ORDERING: Acquire; pairs with the Release store of the stamp in `try_push`
        // (and the other pushes), making the cell's words visible.
        let stamp = cell.words[0].load(Ordering::Acquire);
        let want = at.wrapping_add(1);
        if stamp & !PACKED == want {
            return Ok(Some(stamp & PACKED != 0));
        }
        let capacity = self.mask + 1;
        let previous_lap = want.wrapping_sub(capacity);
        if stamp & !PACKED == previous_lap || (stamp == 0 && at < capacity) {
            return Ok(None);
        }
        Err(Corrupted {
            head: stamp,
            tail: at,
            capacity,
        })
    }

    /// Whether the next cell is published, as [`ready_at`](Self::ready_at); a consumer
    /// inside a packed cell must ask [`slot_state`](Self::slot_state) first.
    #[inline]
    fn ready(&self) -> Result<bool, Corrupted> {
        Ok(self.ready_at(self.tail)?.is_some())
    }

    /// Frees the cell at `tail` (after its reads).
    #[inline]
    fn free_cell(&mut self) {
        self.tail = self.tail.wrapping_add(1);
        self.slot = 0;
        // ORDERING: Release; pairs with the Acquire load of `tail` in `try_push`: the
        // producer reuses the cell only after our reads of it.
        self.header.tail.store(self.tail, Ordering::Release);
    }

    /// Reads the oldest cell with `read` and frees it; `Ok(None)` when empty. For rings
    /// into which nothing is pushed by [`Producer::try_push_small`]; the others are read
    /// by [`try_pop_slot`](Self::try_pop_slot).
    ///
    /// # Errors
    /// [`Corrupted`] when the cell's stamp is impossible (neither this lap's nor the
    /// previous one's): the ring is not touched further.
    #[inline]
    pub fn try_pop<R>(&mut self, read: impl FnOnce(&Cell) -> R) -> Result<Option<R>, Corrupted> {
        self.try_pop_slot(|cell, _| read(cell))
    }

    /// Pops up to `n` consecutive cells while each is there, reading cell `i` of the
    /// run with `read(i, cell)`, and frees them together (one store of the counter,
    /// one look-ahead hint): for a reader that knows the cells belong together, such
    /// as an eager message's batch. Returns how many were popped (0: the next is not
    /// there yet).
    ///
    /// # Errors
    /// [`Corrupted`] when a cell's stamp is impossible; the cells popped before it
    /// stay popped (and freed), the ring is not touched further.
    pub fn try_pop_run(
        &mut self,
        n: usize,
        mut read: impl FnMut(usize, &Cell),
    ) -> Result<usize, Corrupted> {
        let mut popped = 0;
        let mut failed = None;
        while popped < n {
            // A run is of plain cells: a packed cell here is a peer's garbage.
            match self.ready_at(self.tail) {
                Ok(Some(false)) if self.slot == 0 => {}
                Ok(None) if self.slot == 0 => break,
                Ok(_) => {
                    failed = Some(Corrupted {
                        head: PACKED,
                        tail: self.tail,
                        capacity: self.mask + 1,
                    });
                    break;
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
            read(popped, &self.cells[(self.tail & self.mask) as usize]);
            self.tail = self.tail.wrapping_add(1);
            popped += 1;
        }
        if popped > 0 {
            crate::prefetch::cell(&self.cells[(self.tail & self.mask) as usize]);
            // ORDERING: Release; pairs with the Acquire load of `tail` in `try_push`,
            // as in `try_pop`: the producer reuses these cells only after our reads.
            self.header.tail.store(self.tail, Ordering::Release);
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(popped),
        }
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
            if cell.words[0].load(Ordering::Acquire) & !PACKED != pos.wrapping_add(1) {
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
            if cell.words[0].load(Ordering::Relaxed) & !PACKED == q.wrapping_add(1) {
                let previous = if q < capacity { 0 } else { q + 1 - capacity };
                cell.words[0].store(previous, Ordering::Relaxed);
            }
        }
        self.tail = pos;
        self.slot = 0;
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
        if self.slot != 0 {
            match self.slot_state() {
                Ok(SlotState::Ready) => return false,
                Ok(SlotState::Closed) => {
                    return !matches!(self.ready_at(self.tail.wrapping_add(1)), Ok(Some(_)))
                }
                Ok(SlotState::Empty) | Err(_) => return true,
            }
        }
        !matches!(self.ready(), Ok(true))
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
