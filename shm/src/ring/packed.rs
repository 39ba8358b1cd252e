//! Packed cells: small records, one per 32-byte slot of a cell (see the module
//! documentation of `ring`).

use super::{Cell, Consumer, Corrupted, Producer, CELL_WORDS};
use crate::sync::Ordering;

/// Words in a slot of a packed cell (its mark, then three data words).
pub const SLOT_WORDS: usize = 4;
/// Slots in a packed cell.
pub const SLOTS: usize = CELL_WORDS / SLOT_WORDS;
/// Data words of a slot.
pub const SLOT_DATA_WORDS: usize = SLOT_WORDS - 1;
/// Bit 63 of a cell's stamp: the cell is packed (see [`Producer::try_push_small`]).
pub(super) const PACKED: u64 = 1 << 63;

/// The mark of slot `slot` (>= 1) of the packed cell at position `pos`: published, or
/// closed (the producer moved on to the next cell). Never 0, and never a mark of the
/// same slot in another lap.
#[inline]
pub(super) fn slot_mark(pos: u64, slot: usize, closed: bool) -> u64 {
    (pos.wrapping_add(1) << 4) | ((slot as u64) << 1) | u64::from(!closed)
}

/// What the mark of the slot a consumer waits for says.
pub(super) enum SlotState {
    /// Not written yet.
    Empty,
    /// Published.
    Ready,
    /// The producer closed the cell here.
    Closed,
}

impl Producer<'_> {
    /// Closes the open packed cell, if any: its next slot gets the closing mark, and
    /// the consumer, once there, frees the cell and goes on to the next one.
    #[inline]
    pub(super) fn close_packed(&mut self) {
        if self.open != 0 {
            let slot = usize::from(self.open);
            let pos = self.head.wrapping_sub(1);
            let cell = &self.cells[(pos & self.mask) as usize];
            // ORDERING: Release, as every mark is published; the consumer reads no data
            // after a closing mark, so only its value matters.
            cell.words[slot * SLOT_WORDS].store(slot_mark(pos, slot, true), Ordering::Release);
            self.open = 0;
        }
    }

    /// Pushes a small record: into the next slot of the open packed cell, or into slot
    /// 0 of a new packed cell; `false` when a new cell is needed and the ring is full
    /// (nothing written). `fill(cell, base)` writes the record into data words `base`
    /// to `base + SLOT_DATA_WORDS - 1` of `cell` and no others (the slot's mark lies
    /// just before them).
    #[inline]
    pub fn try_push_small(&mut self, fill: impl FnOnce(&Cell, usize)) -> bool {
        if self.open != 0 {
            let slot = usize::from(self.open);
            let pos = self.head.wrapping_sub(1);
            let cell = &self.cells[(pos & self.mask) as usize];
            fill(cell, slot * SLOT_WORDS);
            if slot + 1 < SLOTS {
                // ORDERING: Relaxed; published by the Release store of this slot's mark
                // below, after which the consumer reads the next mark.
                cell.words[(slot + 1) * SLOT_WORDS].store(0, Ordering::Relaxed);
                self.open += 1;
            } else {
                self.open = 0;
            }
            // ORDERING: Release; pairs with the Acquire load of the mark in
            // `slot_state`, publishing the slot's words and the next mark's zero.
            cell.words[slot * SLOT_WORDS].store(slot_mark(pos, slot, false), Ordering::Release);
            return true;
        }
        let opened = self.push_cell(
            |cell| {
                fill(cell, 0);
                // ORDERING: Relaxed; published by the Release store of the cell's
                // stamp in `push_cell`.
                cell.words[SLOT_WORDS].store(0, Ordering::Relaxed);
            },
            PACKED,
        );
        if opened {
            self.open = 1;
        }
        opened
    }
}

impl Consumer<'_> {
    /// The mark of the slot this consumer waits for inside the packed cell at `tail`.
    #[inline]
    pub(super) fn slot_state(&self) -> Result<SlotState, Corrupted> {
        let slot = usize::from(self.slot);
        let cell = &self.cells[(self.tail & self.mask) as usize];
        // ORDERING: Acquire; pairs with the Release store of the mark in
        // `try_push_small` (or `close_packed`), making the slot's words visible.
        let mark = cell.words[slot * SLOT_WORDS].load(Ordering::Acquire);
        if mark == 0 {
            Ok(SlotState::Empty)
        } else if mark == slot_mark(self.tail, slot, false) {
            Ok(SlotState::Ready)
        } else if mark == slot_mark(self.tail, slot, true) {
            Ok(SlotState::Closed)
        } else {
            Err(Corrupted {
                head: mark,
                tail: self.tail,
                capacity: self.mask + 1,
            })
        }
    }

    /// Reads the oldest record with `read(cell, base)`: a whole cell (`base` 0), or
    /// one slot of a packed cell, whose data words start at `base` (slot 0's at 0, so
    /// a record's layout is the same in both). A plain cell is freed at once, a packed
    /// one after its last slot or its closing mark. `Ok(None)` when empty.
    ///
    /// # Errors
    /// [`Corrupted`] when a stamp or mark is impossible: the ring is not touched
    /// further.
    #[inline]
    pub fn try_pop_slot<R>(
        &mut self,
        read: impl FnOnce(&Cell, usize) -> R,
    ) -> Result<Option<R>, Corrupted> {
        if self.slot != 0 {
            match self.slot_state()? {
                SlotState::Empty => return Ok(None),
                SlotState::Ready => {
                    let slot = usize::from(self.slot);
                    let r = read(
                        &self.cells[(self.tail & self.mask) as usize],
                        slot * SLOT_WORDS,
                    );
                    if slot + 1 < SLOTS {
                        self.slot += 1;
                    } else {
                        self.free_cell();
                    }
                    return Ok(Some(r));
                }
                SlotState::Closed => self.free_cell(),
            }
        }
        let Some(packed) = self.ready_at(self.tail)? else {
            return Ok(None);
        };
        crate::prefetch::cell(&self.cells[(self.tail.wrapping_add(1) & self.mask) as usize]);
        let r = read(&self.cells[(self.tail & self.mask) as usize], 0);
        if packed {
            self.slot = 1;
        } else {
            self.free_cell();
        }
        Ok(Some(r))
    }
}
