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

/// The most operations one lane holds.
const MAX_LANE: usize = 1 << 20;

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
    /// Operations pushed and not yet popped, counted by `push` before it publishes the
    /// slot and uncounted by `pop` after it took it: [`PostQueue::maybe_pending`].
    pending: AtomicUsize,
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
    /// at least 1; `per_lane` is rounded up to a power of two, at most 2^20, so slot
    /// indices stay contiguous when a lane's counters wrap).
    pub fn new(lanes: usize, per_lane: usize) -> Self {
        let per_lane = per_lane.clamp(1, MAX_LANE).next_power_of_two();
        PostQueue {
            lanes: (0..lanes.max(1)).map(|_| Lane::new(per_lane)).collect(),
            draining: AtomicBool::new(false),
            pending: AtomicUsize::new(0),
        }
    }

    /// Whether operations may be waiting: one Relaxed load, for a progress owner to
    /// skip draining when there is nothing (the uncontended path).
    ///
    /// `false` is exact for the operations the calling thread pushed itself: each is
    /// counted before its push returns (a thread sees its own stores) and uncounted
    /// only after a drainer popped it, so a thread that sees 0 after pushing knows its
    /// operations were taken (the decrements it sees follow their pops). Another
    /// thread's fresh push may be seen late (`false` while it is there): the caller
    /// must look again later.
    #[inline]
    pub fn maybe_pending(&self) -> bool {
        // ORDERING: Relaxed; a hint: the slots' contents are published by `tail`'s
        // Release/Acquire pair, not through this count (see the doc comment for what
        // a reader may conclude from 0, which per-location coherence gives).
        self.pending.load(Ordering::Relaxed) != 0
    }

    /// Operations one lane holds.
    pub fn lane_capacity(&self) -> usize {
        self.lanes[0].slots.len()
    }

    /// Takes a free lane for the calling thread, or `None` if every lane is taken (more
    /// posting threads than lanes: such a thread makes progress itself instead).
    pub fn poster(&self) -> Option<Poster<'_, T>> {
        self.lanes.iter().enumerate().find_map(|(index, lane)| {
            // ORDERING: Acquire on success; pairs with the Release in `Poster::drop`, so
            // this poster sees the previous owner's `tail`.
            lane.claimed
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .ok()
                .map(|_| Poster {
                    lane,
                    pending: &self.pending,
                    index,
                    _not_sync: PhantomData,
                })
        })
    }

    /// The poster of a lane claimed earlier and kept by [`Poster::into_lane`], or `None`
    /// if `lane` is not one of this queue's lanes.
    ///
    /// # Safety
    /// `lane` comes from [`Poster::into_lane`] of a poster of this queue, and no other
    /// poster of that lane exists: the caller resumes a lane it kept, once at a time,
    /// on the thread that keeps it (one producer per lane).
    pub unsafe fn resume(&self, lane: usize) -> Option<Poster<'_, T>> {
        Some(Poster {
            lane: self.lanes.get(lane)?,
            pending: &self.pending,
            index: lane,
            _not_sync: PhantomData,
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

/// One thread's lane: push operations in order. Neither `Send` nor `Sync` (one producer
/// per lane); dropping it frees the lane for another thread (operations already pushed
/// stay queued).
///
/// A poster cannot be handed to another thread:
///
/// ```compile_fail
/// use steadfast_matching::PostQueue;
/// let q: PostQueue<u32> = PostQueue::new(2, 4);
/// std::thread::scope(|s| {
///     let p = q.poster().unwrap();
///     s.spawn(move || drop(p)); // error: `Poster` is not `Send`
/// });
/// ```
///
/// while each thread may take its own:
///
/// ```
/// use steadfast_matching::PostQueue;
/// let q: PostQueue<u32> = PostQueue::new(2, 4);
/// std::thread::scope(|s| {
///     s.spawn(|| q.poster().unwrap().push(1).unwrap());
/// });
/// assert_eq!(q.drainer().unwrap().pop(), Some(1));
/// ```
pub struct Poster<'q, T> {
    lane: &'q Lane<T>,
    /// The queue's count of pushed, not yet popped operations.
    pending: &'q AtomicUsize,
    /// The lane's index in its queue ([`Poster::into_lane`]).
    index: usize,
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
        // Counted before the slot is published, so the pop that takes it (and its
        // decrement) comes after this increment in the count's modification order:
        // the count never drops below the operations in the lanes.
        // ORDERING: Relaxed; the Release on `tail` below orders it before the pop
        // (which reads `tail` with Acquire); see `maybe_pending`.
        self.pending.fetch_add(1, Ordering::Relaxed);
        // SAFETY: slot `t` is outside head..tail, so the drainer does not read it, and
        // this poster is the lane's only writer.
        lane.slots[t % cap].with_mut(|p| unsafe { (*p).write(op) });
        // ORDERING: Release; publishes the slot's contents to the Acquire in `pop`.
        lane.tail.store(t.wrapping_add(1), Ordering::Release);
        Ok(())
    }
}

impl<'q, T> Poster<'q, T> {
    /// Keeps the lane claimed but gives up the borrow: the lane's index, to be turned
    /// back into a poster by [`PostQueue::resume`] on the same thread. For a thread
    /// that keeps one lane across calls (a thread-local claim) without holding a
    /// borrow of the queue; the lane stays claimed until the poster is resumed and
    /// dropped.
    pub fn into_lane(self) -> usize {
        let index = self.index;
        // Not dropped: the claim stays.
        std::mem::forget(self);
        index
    }

    /// Whether every operation pushed on this lane has been taken by the drainer (as
    /// far as this thread sees: a stale answer is `false`).
    pub fn is_drained(&self) -> bool {
        // ORDERING: Relaxed; nothing is read through it: a stale `head` answers false,
        // which only keeps a lane claimed longer (slots are reused only after `push`'s
        // own Acquire load).
        let h = self.lane.head.load(Ordering::Relaxed);
        // ORDERING: Relaxed; only this poster stores `tail`.
        h == self.lane.tail.load(Ordering::Relaxed)
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
    fn pop_lane(queue: &PostQueue<T>, lane: &Lane<T>) -> Option<T> {
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
        // ORDERING: Relaxed; uncounted after the pop (see `push` and `maybe_pending`).
        queue.pending.fetch_sub(1, Ordering::Relaxed);
        Some(op)
    }

    /// Takes one operation, visiting lanes round robin.
    pub fn pop(&mut self) -> Option<T> {
        let n = self.queue.lanes.len();
        for i in 0..n {
            let lane = (self.next_lane + i) % n;
            if let Some(op) = Self::pop_lane(self.queue, &self.queue.lanes[lane]) {
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn lanes_are_fifo_bounded_and_reusable() {
        let q: PostQueue<u32> = PostQueue::new(2, 2);
        let mut a = q.poster().unwrap();
        let mut b = q.poster().unwrap();
        assert!(q.poster().is_none(), "two lanes, two posters");
        a.push(1).unwrap();
        a.push(2).unwrap();
        assert_eq!(a.push(3), Err(Full { op: 3, capacity: 2 }));
        b.push(10).unwrap();
        drop(b);
        let mut c = q.poster().expect("b's lane is free again");
        c.push(11).unwrap();
        let mut d = q.drainer().unwrap();
        assert!(q.drainer().is_none(), "one drainer");
        let mut got = Vec::new();
        assert_eq!(d.drain(usize::MAX, |op| got.push(op)), 4);
        let lane_a: Vec<u32> = got.iter().copied().filter(|x| *x < 10).collect();
        let lane_b: Vec<u32> = got.iter().copied().filter(|x| *x >= 10).collect();
        assert_eq!(
            (lane_a.as_slice(), lane_b.as_slice()),
            (&[1, 2][..], &[10, 11][..])
        );
        a.push(3).unwrap();
        assert_eq!(d.pop(), Some(3));
        assert_eq!(d.pop(), None);
    }

    #[test]
    fn a_kept_lane_resumes_and_the_count_follows_pushes_and_pops() {
        let q: PostQueue<u32> = PostQueue::new(2, 2);
        assert!(!q.maybe_pending());
        let mut p = q.poster().unwrap();
        p.push(1).unwrap();
        assert!(!p.is_drained());
        let lane = p.into_lane();
        assert!(q.maybe_pending());
        // Kept: one lane is still claimed, so only one is free.
        let other = q.poster().unwrap();
        assert!(q.poster().is_none());
        drop(other);
        // SAFETY: the lane kept above, resumed once on this thread.
        let mut p = unsafe { q.resume(lane) }.unwrap();
        p.push(2).unwrap();
        assert_eq!(p.push(3), Err(Full { op: 3, capacity: 2 }));
        // SAFETY: as above (a lane index outside the queue is refused).
        assert!(unsafe { q.resume(7) }.is_none());
        let mut d = q.drainer().unwrap();
        assert_eq!(d.pop(), Some(1));
        assert!(q.maybe_pending());
        assert_eq!(d.pop(), Some(2));
        assert!(!q.maybe_pending());
        assert!(p.is_drained());
        drop(p);
        assert!(
            q.poster().is_some(),
            "the resumed poster's drop freed the lane"
        );
    }

    #[test]
    fn lane_capacity_is_a_power_of_two() {
        assert_eq!(PostQueue::<u8>::new(1, 3).lane_capacity(), 4);
        assert_eq!(PostQueue::<u8>::new(0, 0).lane_capacity(), 1);
        // A lane of the largest size holds a million slots: too slow to build under
        // Miri, which interprets each slot's initialisation.
        if !cfg!(miri) {
            assert_eq!(
                PostQueue::<u8>::new(1, usize::MAX).lane_capacity(),
                MAX_LANE
            );
        }
    }

    #[test]
    fn undrained_operations_are_dropped_with_the_queue() {
        let token = std::sync::Arc::new(());
        let q = PostQueue::new(1, 4);
        let mut p = q.poster().unwrap();
        p.push(token.clone()).unwrap();
        p.push(token.clone()).unwrap();
        drop(p);
        assert_eq!(std::sync::Arc::strong_count(&token), 3);
        drop(q);
        assert_eq!(std::sync::Arc::strong_count(&token), 1);
    }

    #[test]
    fn many_threads_post_and_nothing_is_lost_or_reordered() {
        const THREADS: u64 = 4;
        // Miri interprets every step: a few hundred operations still race the lanes.
        const EACH: u64 = if cfg!(miri) { 200 } else { 20_000 };
        let q: PostQueue<(u64, u64)> = PostQueue::new(THREADS as usize, 64);
        let mut last = [None::<u64>; THREADS as usize];
        let mut count = 0;
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let q = &q;
                s.spawn(move || {
                    let mut p = q.poster().unwrap();
                    for i in 0..EACH {
                        let mut op = (t, i);
                        while let Err(Full { op: back, .. }) = p.push(op) {
                            op = back;
                            std::thread::yield_now();
                        }
                    }
                });
            }
            let mut d = q.drainer().unwrap();
            while count < THREADS * EACH {
                match d.pop() {
                    Some((t, i)) => {
                        let prev = last[t as usize].replace(i);
                        assert_eq!(prev.map_or(0, |p| p + 1), i, "lane {t} out of order");
                        count += 1;
                    }
                    None => std::thread::yield_now(),
                }
            }
        });
        assert_eq!(count, THREADS * EACH);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Two posters and the drainer at once: every operation arrives exactly once, each
    /// lane in order, and a full lane hands the operation back.
    #[test]
    fn posts_race_the_drainer_without_loss_or_reorder() {
        loom::model(|| {
            let q: Arc<PostQueue<(u8, u8)>> = Arc::new(PostQueue::new(2, 2));
            let producers: Vec<_> = (0..2u8)
                .map(|t| {
                    let q = q.clone();
                    loom::thread::spawn(move || {
                        let mut p = q.poster().expect("a lane each");
                        let mut sent = 0;
                        for i in 0..2u8 {
                            if p.push((t, i)).is_ok() {
                                sent += 1;
                            } else {
                                break;
                            }
                        }
                        sent
                    })
                })
                .collect();
            let mut got = Vec::new();
            {
                let mut d = q.drainer().unwrap();
                d.drain(usize::MAX, |op| got.push(op));
            }
            let sent: u32 = producers.into_iter().map(|h| h.join().unwrap()).sum();
            let mut d = q.drainer().unwrap();
            d.drain(usize::MAX, |op| got.push(op));
            assert_eq!(got.len() as u32, sent);
            for t in 0..2u8 {
                let lane: Vec<u8> = got.iter().filter(|o| o.0 == t).map(|o| o.1).collect();
                assert!(
                    lane.iter().enumerate().all(|(i, v)| *v as usize == i),
                    "{got:?}"
                );
            }
        });
    }

    /// The drainer reads whole what a poster wrote, and the poster reuses a slot only
    /// after the drainer has read it (one slot, two operations). Fails under loom if
    /// `push`'s Release or Acquire, or `pop`'s Acquire or Release, is weakened.
    #[test]
    fn a_slot_is_written_read_and_reused_in_order() {
        loom::model(|| {
            let q: Arc<PostQueue<Arc<u8>>> = Arc::new(PostQueue::new(1, 1));
            let q1 = q.clone();
            let t = loom::thread::spawn(move || {
                let mut p = q1.poster().unwrap();
                for v in [5, 6] {
                    let mut op = Arc::new(v);
                    while let Err(Full { op: back, .. }) = p.push(op) {
                        op = back;
                        loom::thread::yield_now();
                    }
                }
            });
            let mut d = q.drainer().unwrap();
            for want in [5, 6] {
                let got = loop {
                    if let Some(v) = d.pop() {
                        break v;
                    }
                    loom::thread::yield_now();
                };
                assert_eq!(*got, want);
            }
            t.join().unwrap();
        });
    }

    /// A lane kept across calls (`into_lane`, `resume`: a thread-local claim) stays one
    /// producer's while another thread waits for a lane, and passes to it only when
    /// dropped: every operation arrives once, the keeper's in order before the other's.
    /// Fails under loom if the Release in `Poster::drop` is weakened (the next claimer
    /// reads a stale `tail` and overwrites the keeper's slot: checked).
    #[test]
    fn a_kept_lane_stays_one_producers() {
        loom::model(|| {
            let q: Arc<PostQueue<u8>> = Arc::new(PostQueue::new(1, 4));
            let q1 = q.clone();
            let keeper = loom::thread::spawn(move || {
                let mut p = loop {
                    if let Some(p) = q1.poster() {
                        break p;
                    }
                    loom::thread::yield_now();
                };
                p.push(1).unwrap();
                let lane = p.into_lane();
                // SAFETY: the lane this thread kept, resumed once.
                let mut p = unsafe { q1.resume(lane) }.unwrap();
                p.push(2).unwrap();
                // Dropped: the lane is free again.
            });
            let q2 = q.clone();
            let other = loom::thread::spawn(move || loop {
                if let Some(mut p) = q2.poster() {
                    p.push(3).unwrap();
                    break;
                }
                loom::thread::yield_now();
            });
            keeper.join().unwrap();
            other.join().unwrap();
            let mut d = q.drainer().unwrap();
            let mut got = Vec::new();
            d.drain(usize::MAX, |op| got.push(op));
            assert!(got == [1, 2, 3] || got == [3, 1, 2], "{got:?}");
            assert!(!q.maybe_pending());
        });
    }

    /// The posting protocol of the runtime (`src/world/posts.rs`), on a model token: a
    /// poster queues operation 1, then posts operation 2 "directly" if it gets the
    /// token, applying what is pending first; another thread takes the token and
    /// drains meanwhile. Operation 1 is applied before operation 2 in every
    /// interleaving, each exactly once: a thread always sees its own push counted
    /// (`maybe_pending`; coherence alone, so the count is Relaxed and there is no
    /// weaker ordering to try). Fails under loom if `push` does not count (the direct
    /// post skips the drain and overtakes: checked), and if both the model token's
    /// Release and `Drainer::drop`'s Release are weakened (the log races: checked;
    /// either one alone orders it).
    #[test]
    fn a_queued_post_is_applied_before_the_same_threads_direct_post() {
        use loom::cell::UnsafeCell as Cell;
        use loom::sync::atomic::AtomicBool as Flag;

        struct Model {
            q: PostQueue<u8>,
            token: Flag,
            log: Cell<Vec<u8>>,
        }
        // SAFETY: `log` is only touched by the thread holding `token` (Acquire on
        // taking, Release on letting go), which loom checks.
        unsafe impl Sync for Model {}

        impl Model {
            fn take(&self) -> bool {
                // ORDERING: Acquire; pairs with `give`'s Release: the log's last writer.
                self.token
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            }
            fn give(&self) {
                // ORDERING: Release; publishes the log to the next taker.
                self.token.store(false, Ordering::Release);
            }
            /// With the token: apply what is pending, then `direct`.
            fn apply(&self, direct: Option<u8>) {
                let mut d = self.q.drainer().expect("only the token holder drains");
                self.log.with_mut(|log| {
                    // SAFETY: the token holder is the log's only user.
                    let log = unsafe { &mut *log };
                    if self.q.maybe_pending() {
                        d.drain(usize::MAX, |op| log.push(op));
                    }
                    log.extend(direct);
                });
            }
        }

        loom::model(|| {
            let m = Arc::new(Model {
                q: PostQueue::new(2, 2),
                token: Flag::new(false),
                log: Cell::new(Vec::new()),
            });
            let m1 = m.clone();
            let poster = loom::thread::spawn(move || {
                // Operation 1: as if the token were taken.
                let mut p = m1.q.poster().unwrap();
                p.push(1).unwrap();
                drop(p);
                // Operation 2: directly if the token is free, else queued too.
                if m1.take() {
                    m1.apply(Some(2));
                    m1.give();
                } else {
                    m1.q.poster().unwrap().push(2).unwrap();
                }
            });
            let m2 = m.clone();
            let holder = loom::thread::spawn(move || {
                if m2.take() {
                    m2.apply(None);
                    m2.give();
                }
            });
            poster.join().unwrap();
            holder.join().unwrap();
            assert!(m.take());
            m.apply(None);
            let log = m.log.with(|log| {
                // SAFETY: every thread joined; the token is held.
                unsafe { (*log).clone() }
            });
            assert_eq!(log, [1, 2]);
        });
    }

    /// A lane freed by one thread and taken by another continues where the first left
    /// off (the claim's Acquire sees the previous poster's `tail`). Fails under loom if
    /// the Release in `Poster::drop` is weakened.
    #[test]
    fn a_lane_passes_between_threads() {
        loom::model(|| {
            let q: Arc<PostQueue<u8>> = Arc::new(PostQueue::new(1, 2));
            let post = |q: Arc<PostQueue<u8>>, op: u8| {
                move || loop {
                    if let Some(mut p) = q.poster() {
                        p.push(op).unwrap();
                        break;
                    }
                    loom::thread::yield_now();
                }
            };
            let first = loom::thread::spawn(post(q.clone(), 1));
            let second = loom::thread::spawn(post(q.clone(), 2));
            first.join().unwrap();
            second.join().unwrap();
            let mut d = q.drainer().unwrap();
            let mut got = Vec::new();
            d.drain(usize::MAX, |op| got.push(op));
            got.sort_unstable();
            assert_eq!(got, [1, 2]);
        });
    }
}
