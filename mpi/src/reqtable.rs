//! The request table: a slab indexed by the handle, so that `MPI_Isend`/`Irecv` and the
//! `MPI_Wait`/`Test` that frees the request each cost an array access, not a hash
//! table's insert, probe and removal. A request handle carries its slot's index and the
//! slot's generation (bumped at each removal), so a freed request's handle is an
//! error (`MPI_ERR_REQUEST`) even once its slot holds another request, and a tag bit
//! the other handles never reach (they come from a counter from `FIRST_HANDLE`): no
//! two live handles of any kinds are equal.

use crate::consts::Handle;
use crate::request::Req;

// The layout below needs 64-bit handles (the MPI ABI's pointer-sized ones on the
// 64-bit systems this library is built for).
const _: () = assert!(Handle::BITS == 64);

/// Set in every request handle.
const TAG: Handle = 1 << 62;
/// A generation's bits (30: 2^30 reuses of one slot before a stale handle could match).
const GEN_MASK: u32 = (1 << 30) - 1;
/// Slots at most (the index's 32 bits).
const MAX_SLOTS: usize = u32::MAX as usize;

struct Slot {
    generation: u32,
    req: Option<Req>,
}

/// The live requests by handle.
#[derive(Default)]
pub(crate) struct Requests {
    slots: Vec<Slot>,
    /// Indices of empty slots, the last freed on top (warm in the cache).
    free: Vec<u32>,
}

fn handle(index: u32, generation: u32) -> Handle {
    TAG | ((generation as Handle) << 32) | index as Handle
}

impl Requests {
    /// Keeps `req`; its new handle, `None` only when `u32::MAX` requests are live.
    pub fn insert(&mut self, req: Req) -> Option<Handle> {
        let index = match self.free.pop() {
            Some(i) => i,
            None if self.slots.len() < MAX_SLOTS => {
                self.slots.push(Slot {
                    generation: 0,
                    req: None,
                });
                (self.slots.len() - 1) as u32
            }
            None => return None,
        };
        let slot = &mut self.slots[index as usize];
        slot.req = Some(req);
        Some(handle(index, slot.generation))
    }

    /// The slot of live request `h`.
    #[inline]
    fn slot(&mut self, h: Handle) -> Option<&mut Slot> {
        // Bits 63 and 62: 01 in every request handle.
        if h >> 62 != 1 {
            return None;
        }
        let generation = (h >> 32) as u32 & GEN_MASK;
        let slot = self.slots.get_mut(h & u32::MAX as Handle)?;
        (slot.generation == generation && slot.req.is_some()).then_some(slot)
    }

    /// Request `h`, if live.
    #[inline]
    pub fn get_mut(&mut self, h: &Handle) -> Option<&mut Req> {
        self.slot(*h)?.req.as_mut()
    }

    /// The handle of slot `index` as it stands (live or not): `MPI_Request_f2c`'s
    /// answer for the Fortran integer naming that slot.
    pub fn handle_at(&self, index: u32) -> Handle {
        let generation = self
            .slots
            .get(index as usize)
            .map_or(GEN_MASK, |s| s.generation);
        handle(index, generation)
    }

    /// The slot index of request handle `h`, `None` for another kind of handle.
    pub fn index_of(h: Handle) -> Option<u32> {
        (h >> 62 == 1).then_some((h & u32::MAX as Handle) as u32)
    }

    /// Takes request `h` out, if live; its handle is stale from now on.
    #[inline]
    pub fn remove(&mut self, h: &Handle) -> Option<Req> {
        let slot = self.slot(*h)?;
        let req = slot.req.take();
        slot.generation = slot.generation.wrapping_add(1) & GEN_MASK;
        self.free.push((*h & u32::MAX as Handle) as u32);
        req
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consts::*;
    use crate::request::Outcome;

    fn req() -> Req {
        Req::finished(MPI_COMM_WORLD, Outcome::empty())
    }

    #[test]
    fn a_freed_handle_is_stale_even_once_its_slot_is_reused() {
        let mut t = Requests::default();
        let a = t.insert(req()).expect("room");
        assert!(t.get_mut(&a).is_some());
        assert!(t.remove(&a).is_some());
        assert!(t.get_mut(&a).is_none());
        assert!(t.remove(&a).is_none());
        let b = t.insert(req()).expect("room");
        assert_ne!(a, b, "the slot is reused with a new generation");
        assert!(t.get_mut(&a).is_none());
        assert!(t.get_mut(&b).is_some());
    }

    #[test]
    fn other_handles_are_never_requests() {
        let mut t = Requests::default();
        let a = t.insert(req()).expect("room");
        for h in [
            MPI_REQUEST_NULL,
            MPI_COMM_WORLD,
            FIRST_HANDLE,
            FIRST_HANDLE + 1,
            a & !TAG,
            a | 1 << 63,
            a + 1,
            usize::MAX,
        ] {
            assert!(t.get_mut(&h).is_none(), "{h:#x}");
            assert!(t.remove(&h).is_none(), "{h:#x}");
        }
        assert!(t.get_mut(&a).is_some());
        assert!(a >= FIRST_HANDLE && a != MPI_REQUEST_NULL);
    }

    #[test]
    fn many_live_requests_keep_their_own_handles() {
        let mut t = Requests::default();
        let hs: Vec<Handle> = (0..100).map(|_| t.insert(req()).expect("room")).collect();
        for (i, h) in hs.iter().enumerate() {
            if i % 2 == 0 {
                assert!(t.remove(h).is_some());
            }
        }
        for (i, h) in hs.iter().enumerate() {
            assert_eq!(t.get_mut(h).is_some(), i % 2 == 1, "{i}");
        }
        let again: Vec<Handle> = (0..50).map(|_| t.insert(req()).expect("room")).collect();
        for h in &again {
            assert!(!hs.contains(h));
            assert!(t.get_mut(h).is_some());
        }
    }
}
