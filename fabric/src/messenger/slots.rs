//! Preallocated request slots: each is the libfabric context of one operation.
//!
//! The table is allocated once, so slot addresses never move while libfabric holds
//! them; a context pointer maps back to its slot by address arithmetic. A free list of
//! indices (with its capacity reserved up front) hands slots out without allocating.

use std::ffi::c_void;

use steadfast_fabric_sys as sys;

use crate::error::Error;
use crate::mr::CacheSlot;
use crate::PeerId;

use super::wire::Rts;

/// Bytes of in-slot buffer: receives of fewer bytes land here first, and RTS headers and
/// control messages are sent from here.
pub(crate) const BOUNCE_LEN: usize = 64;

/// What a slot is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Free,
    /// A user send of the payload itself.
    EagerSend,
    /// A user send by rendezvous: RTS posted, waiting for its completion and the FIN.
    RndvSend,
    /// A user receive.
    Recv,
    /// One RMA read of a rendezvous receive (`parent` is the receive).
    ReadChunk,
    /// An internal control message being sent.
    ControlSend,
    /// A posted receive for control messages.
    ControlRecv,
    /// A user RMA read or write, or an atomic.
    Rma,
    /// A receive that drains what a replaced incarnation of `peer` left (see
    /// `incarnation.rs`): re-posted at each message, cancelled at the next replacement.
    Drain,
    /// A receive of the software-matching pool (`arrivals.rs`): posted again once its
    /// message was handed out.
    Pool,
}

/// Where a user receive is posted.
///
/// A receive smaller than the eager limit is never handed to the provider as is: a
/// provider that truncates a message (net and rxm in libfabric 1.17) stops delivering
/// later messages of that connection. It lands in a staging buffer at least as large
/// as any eager message, and truncation is detected here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Staging {
    /// Straight into the user's buffer.
    Direct,
    /// Into the slot's 64-byte bounce buffer.
    Inline,
    /// Into staging buffer `n` of the messenger's pool.
    Pool(u16),
}

/// Result of a finished operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// The sender (receives).
    pub source: PeerId,
    /// The user tag of the message (receives).
    pub tag: u64,
    /// Bytes transferred.
    pub len: usize,
    /// The value fetched (atomics).
    pub value: u64,
}

pub(crate) enum Outcome {
    Pending,
    Done(Completion),
    Failed(Error),
}

/// One request slot. `ctx` comes first so that the context pointer given to libfabric
/// is the slot's own address.
#[repr(C, align(64))]
pub(crate) struct Slot {
    pub ctx: sys::fi_context2,
    pub bounce: [u8; BOUNCE_LEN],
    pub generation: u32,
    pub op: Op,
    /// Peer of the operation; `None` for a wildcard receive.
    pub peer: Option<PeerId>,
    /// The user buffer.
    pub buf: *mut u8,
    pub len: usize,
    /// Where a receive lands before being copied to `buf` (see [`Staging`]).
    pub staging: Staging,
    /// A registration held until the operation ends.
    pub mr: Option<CacheSlot>,
    /// Whether a libfabric operation with this slot as context is still outstanding.
    pub posted: bool,
    /// Rendezvous send: FIN received with this status.
    pub fin: Option<super::wire::FinStatus>,
    /// Rendezvous receive: what is being read, how far, and chunks in flight.
    pub rts: Option<Rts>,
    pub next_offset: usize,
    pub chunks_in_flight: u32,
    /// Read chunk: the receive it belongs to.
    pub parent: u32,
    /// Receive: who sent it and with which user tag (known once matched).
    pub matched: Completion,
    /// Receive: the wire (tag, ignore) it was posted with (to re-post it when a dead
    /// incarnation's message matched it).
    pub posted_match: (u64, u64),
    /// An error decided before the libfabric operation ended (peer death, timeout);
    /// reported once the operation is no longer outstanding.
    pub pending_error: Option<Error>,
    /// The user does not wait for this slot (internal or abandoned): free it at the end.
    pub detached: bool,
    pub outcome: Outcome,
    /// Scratch for atomics: operand, compare, result.
    pub atomic: [u64; 3],
}

impl Slot {
    fn empty() -> Self {
        Slot {
            ctx: sys::fi_context2::default(),
            bounce: [0; BOUNCE_LEN],
            generation: 0,
            op: Op::Free,
            peer: None,
            buf: std::ptr::null_mut(),
            len: 0,
            staging: Staging::Direct,
            mr: None,
            posted: false,
            fin: None,
            rts: None,
            next_offset: 0,
            chunks_in_flight: 0,
            parent: 0,
            matched: Completion::default(),
            posted_match: (0, 0),
            pending_error: None,
            detached: false,
            outcome: Outcome::Pending,
            atomic: [0; 3],
        }
    }
}

/// The slot table and its free list.
pub(crate) struct SlotTable {
    slots: Box<[Slot]>,
    free: Vec<u32>,
}

impl SlotTable {
    pub(crate) fn new(count: usize) -> Self {
        let slots: Box<[Slot]> = (0..count).map(|_| Slot::empty()).collect();
        let free: Vec<u32> = (0..count as u32).rev().collect();
        SlotTable { slots, free }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Start and length of the table's memory (to register it once when the provider
    /// needs local buffers registered).
    pub(crate) fn memory(&self) -> (*const u8, usize) {
        (
            self.slots.as_ptr().cast(),
            std::mem::size_of_val(&*self.slots),
        )
    }

    /// Takes a free slot for `op`.
    pub(crate) fn take(&mut self, op: Op, peer: Option<PeerId>) -> Result<u32, Error> {
        let index = self
            .free
            .pop()
            .ok_or(Error::TooManyRequests(self.slots.len()))?;
        let slot = &mut self.slots[index as usize];
        let generation = slot.generation.wrapping_add(1);
        *slot = Slot::empty();
        slot.generation = generation;
        slot.op = op;
        slot.peer = peer;
        Ok(index)
    }

    /// Returns a slot to the free list.
    pub(crate) fn release(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        debug_assert!(slot.op != Op::Free && !slot.posted);
        slot.op = Op::Free;
        slot.pending_error = None;
        slot.outcome = Outcome::Pending;
        self.free.push(index);
    }

    pub(crate) fn get(&self, index: u32) -> &Slot {
        &self.slots[index as usize]
    }

    pub(crate) fn get_mut(&mut self, index: u32) -> &mut Slot {
        &mut self.slots[index as usize]
    }

    /// The context pointer for a slot.
    pub(crate) fn context(&mut self, index: u32) -> *mut c_void {
        (&mut self.slots[index as usize].ctx as *mut sys::fi_context2).cast()
    }

    /// The slot a context pointer designates, if it is one of ours.
    pub(crate) fn index_of(&self, context: *mut c_void) -> Option<u32> {
        let base = self.slots.as_ptr() as usize;
        let offset = (context as usize).checked_sub(base)?;
        let size = std::mem::size_of::<Slot>();
        (offset % size == 0 && offset / size < self.slots.len()).then_some((offset / size) as u32)
    }

    /// The slot a token (generation << 32 | index) designates, if still current.
    pub(crate) fn index_of_token(&self, token: u64) -> Option<u32> {
        let index = token as u32;
        let slot = self.slots.get(index as usize)?;
        (slot.generation == (token >> 32) as u32 && slot.op != Op::Free).then_some(index)
    }

    pub(crate) fn token(&self, index: u32) -> u64 {
        (u64::from(self.slots[index as usize].generation) << 32) | u64::from(index)
    }

    /// Indices of slots in use.
    pub(crate) fn active(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.op != Op::Free)
            .map(|(i, _)| i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_map_back_and_tokens_expire() {
        let mut table = SlotTable::new(4);
        let a = table.take(Op::Recv, None).unwrap();
        let ctx = table.context(a);
        assert_eq!(table.index_of(ctx), Some(a));
        assert_eq!(table.index_of((ctx as usize + 1) as *mut c_void), None);
        assert_eq!(table.index_of(std::ptr::null_mut()), None);
        let token = table.token(a);
        assert_eq!(table.index_of_token(token), Some(a));
        table.release(a);
        assert_eq!(table.index_of_token(token), None);
        let b = table.take(Op::Recv, None).unwrap();
        assert_eq!(b, a, "LIFO reuse");
        assert_eq!(table.index_of_token(token), None, "new generation");
    }

    #[test]
    fn exhaustion_is_an_error() {
        let mut table = SlotTable::new(2);
        table.take(Op::Recv, None).unwrap();
        table.take(Op::Recv, None).unwrap();
        assert!(matches!(
            table.take(Op::Recv, None),
            Err(Error::TooManyRequests(2))
        ));
    }
}
