//! Posting without waiting: operations from many threads into the one progress owner.
//!
//! A [`PostQueue`] is a fixed set of *lanes*, each a bounded single-producer,
//! single-consumer ring. A posting thread takes a lane ([`PostQueue::poster`]) and keeps
//! it; the progress owner ([`PostQueue::drainer`]) takes operations out of every lane.
//!
//! Why lanes and not one shared multi-producer queue: in a shared array queue (Vyukov's,
//! crossbeam's `ArrayQueue`) a producer descheduled between claiming a slot and filling it
//! hides every later slot from the consumer, so one sleeping thread stalls the others'
//! posts. Here a producer touches only its own lane: posting is wait-free (two atomic
//! loads, one store), and no thread can delay another's post. MPI asks for order only
//! among the operations of one thread (MPI 4.1 §3.5: operations of distinct threads are
//! not ordered), which a lane keeps (FIFO).
//!
//! Bounded twice: lanes (threads that may post at once) and slots per lane; a full lane
//! hands the operation back ([`Full`]) and the poster makes progress itself (it may take
//! the progress token) or reports back-pressure.
//!
//! ```
//! use steadfast_matching::PostQueue;
//! let q: PostQueue<u32> = PostQueue::new(4, 8);
//! let mut p = q.poster().expect("a free lane");
//! p.push(1).unwrap();
//! p.push(2).unwrap();
//! let mut d = q.drainer().expect("the only drainer");
//! let mut got = Vec::new();
//! d.drain(usize::MAX, |op| got.push(op));
//! assert_eq!(got, [1, 2]);
//! ```

use std::marker::PhantomData;
use std::mem::MaybeUninit;

use crate::sync::{AtomicBool, AtomicUsize, Ordering, UnsafeCell};

/// A lane was full: the operation comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the posting lane is full ({capacity} operations wait for the progress owner)")]
pub struct Full<T> {
    /// The operation that was not posted.
    pub op: T,
    /// The lane's capacity.
    pub capacity: usize,
}

struct Lane<T> {
    /// A `Poster` owns this lane.
    claimed: AtomicBool,
    /// Next slot the consumer reads (only the drainer stores it).
    head: AtomicUsize,
    /// Next slot the producer writes (only the lane's poster stores it).
    tail: AtomicUsize,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

impl<T> Lane<T> {
    fn new(capacity: usize) -> Self {
        Lane {
            claimed: AtomicBool::new(false),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            slots: (0..capacity)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
        }
    }
}

/// Lanes of operations from posting threads to the progress owner (see the module docs).
pub struct PostQueue<T> {
    lanes: Box<[Lane<T>]>,
    /// A `Drainer` exists.
    draining: AtomicBool,
}

// SAFETY: the lanes move `T` values between threads (so `T: Send`); every slot is written
// only by its lane's single `Poster` and read only by the single `Drainer`, with the
// index protocol below ordering the two (see `push` and `pop`).
unsafe impl<T: Send> Sync for PostQueue<T> {}
// SAFETY: as above; the queue owns its `T`s.
unsafe impl<T: Send> Send for PostQueue<T> {}

impl<T> std::fmt::Debug for PostQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostQueue")
            .field("lanes", &self.lanes.len())
            .field("lane_capacity", &self.lane_capacity())
            .finish()
    }
}

impl<T> PostQueue<T> {
    /// `lanes` lanes (threads that may post at once) of `per_lane` operations each (both
    /// at least 1).
    pub fn new(lanes: usize, per_lane: usize) -> Self {
        PostQueue {
            lanes: (0..lanes.max(1)).map(|_| Lane::new(per_lane.max(1))).collect(),
            draining: AtomicBool::new(false),
        }
    }

    /// Operations one lane holds.
    pub fn lane_capacity(&self) -> usize {
        self.lanes[0].slots.len()
    }

    /// Takes a free lane for the calling thread, or `None` if every lane is taken (more
    /// posting threads than lanes: such a thread makes progress itself instead).
    pub fn poster(&self) -> Option<Poster<'_, T>> {
        self.lanes.iter().find_map(|lane| {
            // ORDERING: Acquire on success; pairs with the Release in `Poster::drop`, so
            // this poster sees the previous owner's `tail`.
            lane.claimed
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .ok()
                .map(|_| Poster {
                    lane,
                    _not_sync: PhantomData,
                })
        })
    }

    /// Becomes the one consumer (the progress owner), or `None` if another thread is.
    pub fn drainer(&self) -> Option<Drainer<'_, T>> {
        // ORDERING: Acquire on success; pairs with the Release in `Drainer::drop`, so
        // this drainer sees the previous one's `head` stores.
        self.draining
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Drainer {
                queue: self,
                next_lane: 0,
            })
    }
}

impl<T> Drop for PostQueue<T> {
    fn drop(&mut self) {
        for lane in self.lanes.iter() {
            // ORDERING: Relaxed; `&mut self` means no other thread holds the queue.
            let (mut h, t) = (
                lane.head.load(Ordering::Relaxed),
                lane.tail.load(Ordering::Relaxed),
            );
            while h != t {
                let slot = &lane.slots[h % lane.slots.len()];
                // SAFETY: slots in head..tail were written by `push` and not read yet.
                slot.with_mut(|p| unsafe { (*p).assume_init_drop() });
                h = h.wrapping_add(1);
            }
        }
    }
}

/// One thread's lane: push operations in order. Not `Sync` (one producer per lane);
/// dropping it frees the lane for another thread (operations already pushed stay queued).
pub struct Poster<'q, T> {
    lane: &'q Lane<T>,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

impl<T> std::fmt::Debug for Poster<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Poster").finish_non_exhaustive()
    }
}

impl<T> Poster<'_, T> {
    /// Appends `op` to this lane; wait-free.
    ///
    /// # Errors
    /// [`Full`] with `op` if the progress owner has not taken the lane's earlier
    /// operations yet.
    pub fn push(&mut self, op: T) -> Result<(), Full<T>> {
        let lane = self.lane;
        let cap = lane.slots.len();
        // ORDERING: Relaxed; only this poster stores `tail` (and the claim's Acquire
        // ordered us after the previous poster's last store).
        let t = lane.tail.load(Ordering::Relaxed);
        // ORDERING: Acquire; pairs with the Release in `Drainer::pop`, so the drainer has
        // finished reading the slot we are about to overwrite.
        let h = lane.head.load(Ordering::Acquire);
        if t.wrapping_sub(h) >= cap {
            return Err(Full { op, capacity: cap });
        }
        // SAFETY: slot `t` is outside head..tail, so the drainer does not read it, and
        // this poster is the lane's only writer.
        lane.slots[t % cap].with_mut(|p| unsafe { (*p).write(op) });
        // ORDERING: Release; publishes the slot's contents to the Acquire in `pop`.
        lane.tail.store(t.wrapping_add(1), Ordering::Release);
        Ok(())
    }
}

impl<T> Drop for Poster<'_, T> {
    fn drop(&mut self) {
        // ORDERING: Release; pairs with the Acquire of the next claim in `poster`.
        self.lane.claimed.store(false, Ordering::Release);
    }
}

/// The one consumer of a [`PostQueue`] (the progress owner); dropping it lets another
/// thread become the drainer.
pub struct Drainer<'q, T> {
    queue: &'q PostQueue<T>,
    /// Lane to look at first next time (round robin, so a busy lane cannot starve others).
    next_lane: usize,
}

impl<T> std::fmt::Debug for Drainer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drainer").finish_non_exhaustive()
    }
}

impl<T> Drainer<'_, T> {
    fn pop_lane(lane: &Lane<T>) -> Option<T> {
        // ORDERING: Relaxed; only the drainer stores `head` (and the drainer claim's
        // Acquire ordered us after the previous drainer's stores).
        let h = lane.head.load(Ordering::Relaxed);
        // ORDERING: Acquire; pairs with the Release in `push`, making the slot's contents
        // visible.
        let t = lane.tail.load(Ordering::Acquire);
        if h == t {
            return None;
        }
        let cap = lane.slots.len();
        // SAFETY: slot `h` is in head..tail: written by `push` (published by the Acquire
        // above) and not read before; only the drainer reads.
        let op = lane.slots[h % cap].with(|p| unsafe { (*p).assume_init_read() });
        // ORDERING: Release; pairs with the Acquire in `push`: the slot is free to reuse
        // only after our read.
        lane.head.store(h.wrapping_add(1), Ordering::Release);
        Some(op)
    }

    /// Takes one operation, visiting lanes round robin.
    pub fn pop(&mut self) -> Option<T> {
        let n = self.queue.lanes.len();
        for i in 0..n {
            let lane = (self.next_lane + i) % n;
            if let Some(op) = Self::pop_lane(&self.queue.lanes[lane]) {
                self.next_lane = (lane + 1) % n;
                return Some(op);
            }
        }
        None
    }

    /// Hands up to `max` operations to `f` (each lane's in its posting order); returns how
    /// many.
    pub fn drain(&mut self, max: usize, mut f: impl FnMut(T)) -> usize {
        let mut n = 0;
        while n < max {
            match self.pop() {
                Some(op) => {
                    f(op);
                    n += 1;
                }
                None => break,
            }
        }
        n
    }
}

impl<T> Drop for Drainer<'_, T> {
    fn drop(&mut self) {
        // ORDERING: Release; pairs with the Acquire of the next claim in `drainer`.
        self.queue.draining.store(false, Ordering::Release);
    }
}
